//! What a pack reads: a model ztfs opens (zTensor, safetensors, GGUF;
//! local or by URL), with its objects, their parts' decoded bytes and the
//! file attributes its format carries.
//!
//! A Hurray file's tensors become dense objects of their row-major data
//! ([`super::hurray`]).
//!
//! File attributes: a zTensor model's own; a safetensors file's
//! `__metadata__` (text values); a GGUF file's key-values, typed (as the
//! public implementation's converter keeps them).

use crate::decode::{ContentCheck, Encoding};
use crate::digest::{Algo, Hasher};
use crate::error::{Error, Result};
use crate::format::types::Interpretation;
use crate::format::{gguf, safetensors, Object, Part};
use crate::model::Model;

/// A model to pack.
pub struct Source {
    model: Model,
    /// A Hurray file's tensors as dense objects.
    hurray: Option<super::hurray::Objects>,
}

/// Bytes of a computed view read at once.
const VIEW_CHUNK: u64 = 8 << 20;

impl Source {
    /// The model to pack.
    pub fn of_model(model: Model) -> Result<Source> {
        if model.manifest().is_none() {
            return Err(Error::Usage(
                "a data shard has no objects to pack: give its model's root file".into(),
            ));
        }
        let hurray = model.hurray().map(super::hurray::objects).transpose()?;
        Ok(Source { model, hurray })
    }

    /// Objects by the bytewise order of their names (§6.3 rule 3).
    pub fn objects_in_canonical_order(&self) -> Vec<&Object> {
        let all = match &self.hurray {
            Some(h) => &h.objects,
            None => &self.model.manifest().expect("checked at open").objects,
        };
        let mut objects: Vec<&Object> = all.iter().collect();
        objects.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        objects
    }

    /// An object's parts by the bytewise order of their names.
    pub fn parts_in_canonical_order<'a>(&self, object: &'a Object) -> Vec<&'a Part> {
        let mut parts: Vec<&Part> = object.parts.iter().collect();
        parts.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        parts
    }

    /// The sum of the decoded sizes of every part.
    pub fn decoded_bytes(&self) -> u64 {
        let objects = self.objects_in_canonical_order();
        objects
            .iter()
            .flat_map(|o| o.parts.iter())
            .map(Part::decoded_size)
            .fold(0, u64::saturating_add)
    }

    /// Streams a part's decoded bytes to `sink`, checking them on the way:
    /// the encoding (frame checksums, lengths), the content rules of a
    /// dense object's logical type, and the part's digest when it has one.
    /// A part of an unknown encoding, logical type or digest algorithm is
    /// refused, as `check --verify` refuses it.
    pub fn stream(
        &self,
        object: &Object,
        part: &Part,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let what = format!("part {:?}/{:?}", object.name, part.name);
        if let Interpretation::Unknown = part.ty.interpretation() {
            return Err(Error::Unsupported(format!(
                "{what} has logical type {:?}, which ztfs does not know: it cannot be decoded",
                part.ty.type_name()
            )));
        }
        let view = self.hurray.as_ref().and_then(|h| h.views.get(&object.name));
        let stored = self.model.blob(part)?;
        let enc = Encoding::of_from(part, &stored)?;
        let mut rules = ContentCheck::new(object, part);
        let check_rules = object.layout == "dense" && rules.applies();
        let expected = part.digest.as_ref().map(ToString::to_string);
        // A digest that cannot be checked is refused, as `check --verify`
        // refuses it: the pack would otherwise replace it unchecked.
        let algo = expected.as_deref().map(Algo::of).transpose()?;
        let mut hasher = algo.map(Hasher::new);
        let mut each = |c: &[u8]| {
            if check_rules {
                rules.update(c)?;
            }
            if let Some(h) = hasher.as_mut() {
                h.update(c);
            }
            sink(c)
        };
        match view {
            Some(v) => self.stream_view(v, &what, &mut each)?,
            None => enc.stream_from(&stored, &mut each)?,
        }
        if check_rules {
            rules.finish()?;
        }
        if let (Some(h), Some(expected)) = (hasher, expected) {
            crate::digest::check(&expected, &h.finish(), &what)?;
        }
        Ok(())
    }

    /// A computed view's bytes, a chunk at a time.
    fn stream_view(
        &self,
        view: &crate::decode::hurray::View,
        what: &str,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut buf = vec![0u8; view.len().min(VIEW_CHUNK) as usize];
        let mut off = 0;
        while off < view.len() {
            let n = (view.len() - off).min(VIEW_CHUNK) as usize;
            view.read_into(self.model.root(), off, &mut buf[..n])
                .map_err(|e| Error::Unsupported(format!("{what}: {e}")))?;
            sink(&buf[..n])?;
            off += n as u64;
        }
        Ok(())
    }

    /// Checks an object's layout data rules (sparse indices, MX scales)
    /// over its decoded parts, as `check --verify` does: a pack writes
    /// nothing that check would reject.
    pub fn check_object(&self, object: &Object) -> Result<()> {
        match crate::read::has_data_rules(object) {
            true => crate::read::verify_object(&self.model, object),
            false => Ok(()),
        }
    }

    /// The file attributes to write, as deterministic CBOR.
    pub fn attributes(&self) -> Result<Option<Vec<u8>>> {
        let m = &self.model;
        if let Some(file) = m.gguf() {
            return gguf::attributes(file);
        }
        if m.safetensors().is_some() {
            let header = safetensors::read_header_from(m.root())?;
            return Ok(safetensors::objects::attributes(&header));
        }
        Ok(m.manifest().and_then(|m| m.attributes.clone()))
    }
}
