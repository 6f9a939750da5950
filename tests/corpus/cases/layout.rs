//! One object `w` under a layout profile, described by its shape,
//! attributes and named parts, so that a profile's cases are its valid
//! object with one edit each.
//!
//! Every part carries the xxh3 digest of its bytes: a case that fails
//! `--verify` fails on the rule it is named for, never on a digest, and a
//! reader that verifies only what has a digest still decodes every part.

use super::super::builder::{object, part, root, xxh3_digest, CborItem, Fields};
use super::file;

/// A part's storage type, logical type and bytes.
#[derive(Clone)]
pub struct Part {
    pub dtype: &'static str,
    pub ty: Option<&'static str>,
    pub data: Vec<u8>,
}

/// An object under a layout, edited by the builder methods and written by
/// [`Spec::bytes`]. Parts are placed in the order they were first added.
#[derive(Clone)]
pub struct Spec {
    layout: &'static str,
    shape: Vec<u64>,
    attributes: Option<Fields>,
    parts: Vec<(&'static str, Part)>,
}

impl Spec {
    /// An object of `layout` and `shape` with no parts or attributes yet.
    pub fn new(layout: &'static str, shape: &[u64]) -> Spec {
        Spec {
            layout,
            shape: shape.to_vec(),
            attributes: None,
            parts: Vec::new(),
        }
    }

    pub fn shape(mut self, shape: &[u64]) -> Spec {
        self.shape = shape.to_vec();
        self
    }

    /// Sets attribute `key`.
    pub fn attr(mut self, key: &str, value: impl Into<CborItem>) -> Spec {
        let attrs = self.attributes.take().unwrap_or_default();
        self.attributes = Some(attrs.set(key, value));
        self
    }

    /// Removes attribute `key`.
    pub fn without_attr(mut self, key: &str) -> Spec {
        self.attributes = self.attributes.map(|a| a.remove(key));
        self
    }

    /// Adds part `name`, or replaces it in place.
    pub fn part(mut self, name: &'static str, dtype: &'static str, data: Vec<u8>) -> Spec {
        let p = Part {
            dtype,
            ty: None,
            data,
        };
        match self.parts.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = p,
            None => self.parts.push((name, p)),
        }
        self
    }

    /// Gives part `name` the logical type `ty`.
    pub fn typed(self, name: &str, ty: &'static str) -> Spec {
        self.edit(name, |p| p.ty = Some(ty))
    }

    /// Changes the dtype of part `name`, keeping its bytes.
    pub fn dtype(self, name: &str, dtype: &'static str) -> Spec {
        self.edit(name, |p| p.dtype = dtype)
    }

    /// Replaces the bytes of part `name`, keeping its types.
    pub fn data(self, name: &str, data: Vec<u8>) -> Spec {
        self.edit(name, |p| p.data = data)
    }

    /// Removes part `name`.
    pub fn without(mut self, name: &str) -> Spec {
        self.parts.retain(|(n, _)| *n != name);
        self
    }

    fn edit(mut self, name: &str, f: impl FnOnce(&mut Part)) -> Spec {
        let (_, p) = self
            .parts
            .iter_mut()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no part {name:?} to edit"));
        f(p);
        self
    }

    /// The file: the parts' blobs in order, then the manifest with `w`.
    pub fn bytes(&self) -> Vec<u8> {
        let blobs: Vec<&[u8]> = self.parts.iter().map(|(_, p)| p.data.as_slice()).collect();
        file(&blobs, |refs| {
            let parts =
                self.parts
                    .iter()
                    .zip(refs)
                    .fold(Fields::new(), |acc, ((name, p), blob)| {
                        let mut f = part(p.dtype, *blob).set("digest", xxh3_digest(&p.data));
                        if let Some(ty) = p.ty {
                            f = f.set("type", ty);
                        }
                        acc.set(*name, f)
                    });
            let mut o = object(&self.shape, self.layout, parts);
            if let Some(a) = &self.attributes {
                o = o.set("attributes", a.clone());
            }
            root(Fields::new().set("w", o)).sorted()
        })
    }
}

/// Each of `values` as `width` little-endian bytes (the low ones).
pub fn le(width: usize, values: &[u64]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes()[..width].to_vec())
        .collect()
}

/// `values` as little-endian f32.
pub fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `n` little-endian f32 values 0.5, 1.0, 1.5, ...
pub fn f32_ramp(n: usize) -> Vec<u8> {
    f32s(&(1..=n).map(|i| i as f32 * 0.5).collect::<Vec<_>>())
}

/// `n` little-endian f16 values 1.0, 1.0 + 2^-10, ... (bit patterns from
/// 0x3C00 up).
pub fn f16_ramp(n: usize) -> Vec<u8> {
    (0..n as u16)
        .flat_map(|i| (0x3C00 + i).to_le_bytes())
        .collect()
}

/// `n` bytes 0, 1, 2, ... wrapping at 256.
pub fn byte_ramp(n: usize) -> Vec<u8> {
    (0..n).map(|i| i as u8).collect()
}
