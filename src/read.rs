//! Whole-part operations over an opened model: stream a part's decoded or
//! stored bytes, and verify a part (decode, content rules, digest).
//!
//! These are what `ztfs cat` and `ztfs check --verify` do, and what the
//! mount's `--verify` does on first open.

use crate::decode::{check_interpretable, ContentCheck, Encoding};
use crate::digest::{self, Algo, Hasher};
use crate::error::Result;
use crate::format::types::Interpretation;
use crate::format::{Object, Part};
use crate::model::Model;

/// What verifying a part established.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verified {
    /// Decoded, content rules hold, digest matches.
    Digest,
    /// Decoded and content rules hold, but there is no digest to check.
    NoDigest,
}

/// Streams the decoded bytes of a part to `sink`, after refusing what this
/// reader must not interpret. Content rules are checked over the whole part
/// before the first byte reaches `sink`, so a refused part yields nothing.
pub fn decoded(
    model: &Model,
    object: &Object,
    part: &Part,
    sink: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    // A GGUF file's block arrays are served as their bytes.
    if model.gguf().is_none() {
        check_interpretable(object, part)?;
    }
    let stored = model.blob(part)?;
    let enc = Encoding::of_from(part, &stored)?;
    let mut rules = ContentCheck::new(object, part);
    if rules.applies() {
        enc.stream_from(&stored, &mut |c| rules.update(c))?;
        rules.finish()?;
    }
    enc.stream_from(&stored, sink)
}

/// Largest part decoded whole into memory (for layout data rules and
/// views), in bytes: a few hundred bytes of zstd can declare and produce
/// gigabytes, so the amplification is capped per part (§8.1).
pub const MAX_PART_IN_MEMORY: u64 = 1 << 30;

/// A part's decoded bytes in memory, for the object-level data rules and
/// views of layout profiles (whose parts are index arrays and values).
/// Refused above [`MAX_PART_IN_MEMORY`]; allocated once, at the size the
/// part decodes to.
pub fn decoded_vec(model: &Model, object: &Object, part_name: &str) -> Result<Vec<u8>> {
    decoded_vec_with(model, object, part_name, &mut |_| Ok(()))
}

/// [`decoded_vec`], telling `progress` of each decoded chunk; an error
/// from `progress` (work abandoned) stops the decode and is returned.
pub fn decoded_vec_with(
    model: &Model,
    object: &Object,
    part_name: &str,
    progress: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<Vec<u8>> {
    let part = object.part(part_name).ok_or_else(|| {
        crate::error::Error::NotFound(format!("part {part_name:?} of object {:?}", object.name))
    })?;
    let size = part.decoded_size();
    if size > MAX_PART_IN_MEMORY {
        return Err(crate::error::Error::Unsupported(format!(
            "part {:?}/{:?} decodes to {size} bytes, more than the {MAX_PART_IN_MEMORY} this reader holds in memory to check its layout's data rules or build a view",
            object.name, part.name
        )));
    }
    let mut out = Vec::with_capacity(size as usize);
    decoded(model, object, part, &mut |c| {
        progress(c.len() as u64)?;
        out.extend_from_slice(c);
        Ok(())
    })?;
    Ok(out)
}

/// Checks an object's layout data rules (sparse indices, ...) over its
/// decoded parts; nothing to do for dense and unknown layouts.
pub fn verify_object(model: &Model, object: &Object) -> Result<()> {
    verify_object_with(model, object, &|_| Ok(()))
}

/// [`verify_object`], telling `progress` of each decoded chunk; an error
/// from `progress` (work abandoned) stops the check and is returned.
pub fn verify_object_with(
    model: &Model,
    object: &Object,
    progress: &dyn Fn(u64) -> Result<()>,
) -> Result<()> {
    crate::decode::views::check_data(object, &|name| {
        decoded_vec_with(model, object, name, &mut |n| progress(n))
    })
}

/// True when the object's layout has data rules over its decoded parts
/// (so [`verify_object`] loads them).
pub fn has_data_rules(object: &Object) -> bool {
    use crate::format::profiles::Layout;
    matches!(
        Layout::of(&object.layout),
        Layout::SparseCsr | Layout::SparseCoo | Layout::Mx
    )
}

/// Streams the stored bytes of a part: structural access, no interpretation.
pub fn stored(model: &Model, part: &Part, sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
    Encoding::Raw.stream_from(&model.blob(part)?, sink)
}

/// Verifies one part: decodes it, applies its content rules and checks its
/// digest. `progress` receives the count of decoded bytes as they pass; an
/// error from it (work abandoned) stops verifying and is returned.
///
/// An unknown encoding, logical type or digest algorithm is a refusal: the
/// part cannot be decoded or its digest cannot be checked (§4.2). A part of
/// an unknown layout is still verified, since verifying a part does not
/// interpret the object; content rules apply only under layouts this reader
/// interprets.
pub fn verify(
    model: &Model,
    object: &Object,
    part: &Part,
    progress: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<Verified> {
    if let Interpretation::Unknown = part.ty.interpretation() {
        return Err(crate::error::Error::Unsupported(format!(
            "part {:?}/{:?} has logical type {:?}, which this reader does not know, so it cannot be decoded or verified",
            object.name,
            part.name,
            part.ty.type_name()
        )));
    }
    let stored_digest = part.digest.as_ref().map(ToString::to_string);
    let algo = stored_digest.as_deref().map(Algo::of).transpose()?;
    let stored = model.blob(part)?;
    let enc = Encoding::of_from(part, &stored)?;
    let mut hasher = algo.map(Hasher::new);
    let mut rules = ContentCheck::new(object, part);
    let check_rules = object.layout == "dense" && rules.applies();
    let mut n = 0u64;
    enc.stream_from(&stored, &mut |chunk| {
        if check_rules {
            rules.update(chunk)?;
        }
        if let Some(h) = hasher.as_mut() {
            h.update(chunk);
        }
        n += chunk.len() as u64;
        progress(chunk.len() as u64)
    })?;
    if check_rules {
        rules.finish()?;
    }
    let what = format!("part {:?}/{:?}", object.name, part.name);
    if n != part.decoded_size() {
        // The encodings check this themselves; this guards a new one.
        return Err(crate::error::Error::reject(
            crate::error::Rule::Encoding,
            format!(
                "{what} decodes to {n} bytes, decoded_length is {}",
                part.decoded_size()
            ),
        ));
    }
    match (hasher, &stored_digest) {
        (Some(h), Some(stored)) => {
            digest::check(stored, &h.finish(), &what)?;
            Ok(Verified::Digest)
        }
        _ => Ok(Verified::NoDigest),
    }
}
