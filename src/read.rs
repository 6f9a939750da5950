//! Whole-part operations over an opened model: stream a part's decoded or
//! stored bytes, and verify a part (decode, content rules, digest).
//!
//! These are what `ztfs cat` and `ztfs check --verify` do, and what the
//! mount's `--verify` does on first open.

use crate::decode::{check_interpretable, ContentCheck, Encoding};
use crate::digest::{self, Algo, Hasher};
use crate::error::Result;
use crate::format::types::Interpretation;
use crate::format::{hurray, npz, Object, Part};
use crate::model::{Input, Model};

mod verify;

pub use verify::{
    verify_model, verify_object_all, PartOutcome, Place, Report, Verdict, Watch, NO_DIGEST_NAMES,
};

/// Checks the format's own rules on tensor bytes, beyond its parts' (a
/// Hurray file's MXFP scale bytes, a `.npz` archive's stored members'
/// CRC-32), telling `progress` of each chunk.
pub fn verify_format_rules(
    model: &Model,
    progress: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<()> {
    let n = model.manifest().map_or(0, |m| m.objects.len());
    (0..n).try_for_each(|i| verify_object_format_rules(model, i, progress))
}

/// [`verify_format_rules`] of object `i` alone (a mount's `--verify`, on
/// the first open of one of its files).
pub fn verify_object_format_rules(
    model: &Model,
    i: usize,
    progress: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<()> {
    match model.input() {
        Input::Hurray(f) => hurray::data_rules::check_tensor_data(f, i, model.root(), progress),
        Input::Npz(f) => npz::check_stored_crc(f, i, model.root(), progress),
        Input::Zt(_)
        | Input::Safetensors(_)
        | Input::Gguf(_)
        | Input::Torch(_)
        | Input::Onnx(_)
        | Input::OpenVino(_) => Ok(()),
    }
}

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
    if model.input().refuses_uninterpreted() {
        check_interpretable(object, part)?;
    }
    decoded_unchecked(model, object, part, sink)
}

/// [`decoded`] without the check that the layout is one this reader
/// interprets: for the views and data rules of a layout, which know it.
fn decoded_unchecked(
    model: &Model,
    object: &Object,
    part: &Part,
    sink: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
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
    // A `.zt`'s ggml blocks (`gguf.<type>/1`, served raw) are decoded for
    // their values' view; every other layout as `decoded` allows.
    if !object.layout.starts_with("gguf.") && model.input().refuses_uninterpreted() {
        check_interpretable(object, part)?;
    }
    let mut out = Vec::with_capacity(size as usize);
    decoded_unchecked(model, object, part, &mut |c| {
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
    let mut check = PartCheck::new(object, part)?;
    let stored = model.blob(part)?;
    let enc = Encoding::of_from(part, &stored)?;
    enc.stream_from(&stored, &mut |chunk| {
        check.update(chunk)?;
        progress(chunk.len() as u64)
    })?;
    check.finish()
}

/// The checks of one part's decoded bytes, fed as they pass, as
/// [`verify()`] applies them (and `ztfs pack` to what it copies): the
/// content rules of a dense object's logical type, the decoded length,
/// and the digest when the part has one. A part of an unknown logical
/// type or digest algorithm is refused when the check is made.
pub struct PartCheck<'a> {
    what: String,
    rules: Option<ContentCheck<'a>>,
    hasher: Option<Hasher>,
    expected: Option<String>,
    seen: u64,
    decoded_len: u64,
}

impl<'a> PartCheck<'a> {
    /// The checks of `part` of `object`.
    pub fn new(object: &'a Object, part: &'a Part) -> Result<PartCheck<'a>> {
        let what = format!("part {:?}/{:?}", object.name, part.name);
        if let Interpretation::Unknown = part.ty.interpretation() {
            return Err(crate::error::Error::Unsupported(format!(
                "{what} has logical type {:?}, which this reader does not know, so it cannot be decoded or verified",
                part.ty.type_name()
            )));
        }
        let expected = part.digest.as_ref().map(ToString::to_string);
        let algo = expected.as_deref().map(Algo::of).transpose()?;
        let rules = ContentCheck::new(object, part);
        let check_rules = object.layout == "dense" && rules.applies();
        Ok(PartCheck {
            what,
            rules: check_rules.then_some(rules),
            hasher: algo.map(Hasher::new),
            expected,
            seen: 0,
            decoded_len: part.decoded_size(),
        })
    }

    /// The part, for messages: `part "OBJECT"/"PART"`.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// Checks the next decoded bytes.
    pub fn update(&mut self, c: &[u8]) -> Result<()> {
        if let Some(r) = self.rules.as_mut() {
            r.update(c)?;
        }
        if let Some(h) = self.hasher.as_mut() {
            h.update(c);
        }
        self.seen += c.len() as u64;
        Ok(())
    }

    /// Checks what only the end shows: a final nibble, the length, the
    /// digest.
    pub fn finish(self) -> Result<Verified> {
        if let Some(r) = &self.rules {
            r.finish()?;
        }
        if self.seen != self.decoded_len {
            // The encodings check this themselves; this guards a new one.
            return Err(crate::error::Error::reject(
                crate::error::Rule::Encoding,
                format!(
                    "{} decodes to {} bytes, decoded_length is {}",
                    self.what, self.seen, self.decoded_len
                ),
            ));
        }
        match (self.hasher, &self.expected) {
            (Some(h), Some(expected)) => {
                digest::check(expected, &h.finish(), &self.what)?;
                Ok(Verified::Digest)
            }
            _ => Ok(Verified::NoDigest),
        }
    }
}

/// Streams bytes `[0, len)` of a source read by range (a computed view,
/// a quantized tensor's values) to `sink`, `chunk` bytes at a time in
/// one reused buffer: `read(at, buf)` fills `buf` with the bytes at `at`.
pub fn in_chunks(
    len: u64,
    chunk: u64,
    read: &mut dyn FnMut(u64, &mut [u8]) -> Result<()>,
    sink: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let mut buf = vec![0u8; len.min(chunk) as usize];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(chunk) as usize;
        read(at, &mut buf[..n])?;
        sink(&buf[..n])?;
        at += n as u64;
    }
    Ok(())
}
