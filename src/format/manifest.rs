//! The manifest schema (§3.2–§3.4, §7.1): CBOR value in, typed manifest out.
//!
//! This is the schema mapping only: field presence and types, names (§3.5),
//! digest string shape, encoding iff decoded_length. Rules that relate fields
//! to each other or to the file (shapes, blobs, shards, layouts) are in
//! [`super::validate`]. Unknown keys are ignored at every level (§3.1).

use std::fmt;
use std::sync::Arc;

use super::cbor::{self, Value};
use super::text::{Text, Texts};
use super::types::{DType, ElementType};
use super::{check_name, check_shard_name};
use crate::error::{Error, Result, Rule};

/// A reference to a blob: `[offset, length]` in this file or in a shard.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlobRef {
    /// Absolute offset in the target file.
    pub offset: u64,
    /// Stored length in bytes.
    pub length: u64,
    /// The shard holding the blob; `None` for the containing file.
    pub shard: Option<Text>,
}

/// One part of an object: a blob and how to read it (§3.4).
///
/// Kept for the life of a mount, one per part, so it is compact: the texts
/// that recur from part to part (role names, types, encodings, shard
/// names) are shared, one allocation per distinct value in a manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The part's role name, e.g. `data`.
    pub name: Text,
    /// Storage and logical type.
    pub ty: ElementType,
    /// Where the stored bytes are.
    pub blob: BlobRef,
    /// The encoding profile id; `None` for raw.
    pub encoding: Option<Text>,
    /// Decoded size when encoded (`decoded_length`, present iff
    /// `encoding` is: so kept as a plain number, read through
    /// [`Part::decoded_length`]); 0 for a raw part.
    pub decoded: u64,
    /// `algo:hex` over the decoded bytes.
    pub digest: Option<Digest>,
}

/// A part's digest, `algo:hex`, kept in fewer bytes than its text (a mount
/// holds one per part): an xxh3 or sha256 digest of its algorithm's length
/// as its value, anything else as written. [`fmt::Display`] gives the text
/// exactly as written: the hex was checked to be lowercase, and a value is
/// kept only when its hex has the algorithm's fixed length.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Digest {
    /// `xxh3:` and 16 hex digits.
    Xxh3(u64),
    /// `sha256:` and 64 hex digits.
    Sha256(Box<[u8; 32]>),
    /// Any other digest (an algorithm this reader does not know, or a hex
    /// of the wrong length), as written.
    Other(Box<String>),
}

impl Digest {
    /// The digest of text `d`, which passed [`check_digest_syntax`].
    pub fn parse(d: &str) -> Digest {
        let hex_byte = |h: &[u8]| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok();
        match d.split_once(':') {
            Some(("xxh3", hex)) if hex.len() == 16 => {
                if let Ok(v) = u64::from_str_radix(hex, 16) {
                    return Digest::Xxh3(v);
                }
            }
            Some(("sha256", hex)) if hex.len() == 64 => {
                let mut v = [0u8; 32];
                let pairs = hex.as_bytes().chunks(2).map(hex_byte);
                if v.iter_mut()
                    .zip(pairs)
                    .all(|(b, p)| p.map(|p| *b = p).is_some())
                {
                    return Digest::Sha256(Box::new(v));
                }
            }
            _ => {}
        }
        Digest::Other(Box::new(d.to_string()))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Digest::Xxh3(v) => write!(f, "xxh3:{v:016x}"),
            Digest::Sha256(v) => {
                f.write_str("sha256:")?;
                v.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
            Digest::Other(d) => f.write_str(d),
        }
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

impl Part {
    /// A raw part of an unsharded file, its stored bytes `[offset, offset +
    /// length)` of it, with no encoding and no digest: how the readers of
    /// other formats (Hurray, safetensors, GGUF) map a tensor's bytes.
    pub fn raw(name: Text, ty: ElementType, offset: u64, length: u64) -> Part {
        Part {
            name,
            ty,
            blob: BlobRef {
                offset,
                length,
                shard: None,
            },
            encoding: None,
            decoded: 0,
            digest: None,
        }
    }

    /// `decoded_length`: present iff the part is encoded.
    pub fn decoded_length(&self) -> Option<u64> {
        self.encoding.as_ref().map(|_| self.decoded)
    }

    /// The decoded size: `decoded_length` if encoded, else the blob length.
    pub fn decoded_size(&self) -> u64 {
        self.decoded_length().unwrap_or(self.blob.length)
    }
}

/// A shape, shared between the objects that have it: one pointer (an
/// `Arc<[u64]>` is two), as every object holds one and a manifest has
/// few distinct shapes.
pub type Shape = Arc<Box<[u64]>>;

/// Attributes as an object keeps them.
pub fn boxed_attributes(cbor: Vec<u8>) -> Box<Box<[u8]>> {
    Box::new(cbor.into_boxed_slice())
}

/// A shape of its own (not shared).
pub fn shape(dims: impl Into<Box<[u64]>>) -> Shape {
    Arc::new(dims.into())
}

/// One object: a named tensor (§3.3).
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// The object's name as written (unique, so not shared).
    pub name: Box<str>,
    /// Logical dimensions (shared between objects of the same shape).
    pub shape: Shape,
    /// `dense` or a profile id (shared between objects).
    pub layout: Text,
    /// The attributes map as deterministic CBOR, if present (behind a
    /// second box: one pointer, where most objects have none).
    pub attributes: Option<Box<Box<[u8]>>>,
    /// Parts in manifest order.
    pub parts: Parts,
}

/// An object's parts: inline when there is one, as for nearly every object.
pub type Parts = smallvec::SmallVec<[Part; 1]>;

impl Object {
    /// Element count: the product of the shape, `None` on overflow.
    pub fn num_elements(&self) -> Option<u64> {
        self.shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }

    /// The attributes map as deterministic CBOR, if present.
    pub fn attributes(&self) -> Option<&[u8]> {
        self.attributes.as_deref().map(|a| &a[..])
    }

    /// The part named `name`.
    pub fn part(&self, name: &str) -> Option<&Part> {
        self.parts.iter().find(|p| p.name == name)
    }
}

/// A shard table entry (§7.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// The shard's label.
    pub name: String,
    /// Exact file size in bytes.
    pub size: u64,
    /// Whole-file digest.
    pub digest: String,
}

/// A root manifest.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Manifest {
    /// Objects in manifest order.
    pub objects: Vec<Object>,
    /// The shard table; `None` when absent.
    pub shards: Option<Vec<Shard>>,
    /// File attributes as deterministic CBOR, if present.
    pub attributes: Option<Vec<u8>>,
}

/// Objects mapped while the manifest was decoded, and the first error.
type Streamed = (Vec<Object>, Option<Error>);

impl Manifest {
    /// Decodes and maps manifest bytes, mapping each object as it is decoded
    /// so the manifest is never held whole as a CBOR tree: peak memory is the
    /// typed manifest plus one object's tree. Reports the same rule as
    /// `from_cbor(&cbor::parse(bytes)?)`: every CBOR error first, then schema
    /// errors in the same order.
    pub fn parse(bytes: &[u8]) -> Result<Manifest> {
        let (mut objects, mut first_err) = (Vec::new(), None);
        let mut texts = Texts::default();
        let (root, streamed) = cbor::parse_streaming(bytes, "objects", &mut |n, k, v| {
            if first_err.is_none() {
                objects.reserve_exact(n.saturating_sub(objects.len()));
                match parse_object(k, v, &mut texts) {
                    Ok(o) => objects.push(o),
                    Err(e) => first_err = Some(e),
                }
            }
            Ok(())
        })?;
        Manifest::assemble(&root, streamed.then_some((objects, first_err)))
    }

    /// Maps a parsed manifest onto the schema.
    pub fn from_cbor(root: &Value<'_>) -> Result<Manifest> {
        Manifest::assemble(root, None)
    }

    /// The schema mapping, with the objects already mapped when streamed.
    fn assemble(root: &Value<'_>, streamed: Option<Streamed>) -> Result<Manifest> {
        let entries = root.as_map().ok_or_else(|| {
            schema(format!(
                "manifest root is a {}, not a map",
                root.type_name()
            ))
        })?;
        let mut m = Manifest::default();
        let mut objects = None;
        for (k, v) in entries {
            // Non-text keys at the root are unknown fields, ignored (notes §1).
            match k.as_text() {
                Some("objects") => objects = Some(v),
                Some("shards") => m.shards = Some(parse_shards(v)?),
                Some("attributes") => m.attributes = Some(parse_attributes(v, "file")?),
                _ => {}
            }
        }
        let objects = objects.ok_or_else(|| schema("manifest has no \"objects\" map"))?;
        let map = objects.as_map().ok_or_else(|| {
            schema(format!(
                "\"objects\" is a {}, not a map",
                objects.type_name()
            ))
        })?;
        m.objects = match streamed {
            Some((_, Some(e))) => return Err(e),
            Some((objects, None)) => objects,
            None => {
                let mut texts = Texts::default();
                exact_vec(map, |k, v| parse_object(k, v, &mut texts))?
            }
        };
        Ok(m)
    }

    /// Finds an object by name.
    pub fn object(&self, name: &str) -> Option<&Object> {
        self.objects.iter().find(|o| *o.name == *name)
    }

    /// The shard entry named `name`.
    pub fn shard(&self, name: &str) -> Option<&Shard> {
        self.shards.as_ref()?.iter().find(|s| s.name == name)
    }
}

/// Maps every entry of a CBOR map into a Vec of exactly its length:
/// collecting a `Result` iterator would start small and double, leaving up
/// to half of each Vec unused (4 slots for the usual single part).
fn exact_vec<T>(
    map: &[(Value<'_>, Value<'_>)],
    mut f: impl FnMut(&Value<'_>, &Value<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(map.len());
    for (k, v) in map {
        out.push(f(k, v)?);
    }
    Ok(out)
}

fn schema(detail: impl Into<String>) -> Error {
    Error::reject(Rule::Schema, detail)
}

fn key_text<'a>(k: &Value<'a>, what: &str) -> Result<&'a str> {
    k.as_text().ok_or_else(|| {
        schema(format!(
            "{what} name must be text, found a {}",
            k.type_name()
        ))
    })
}

fn parse_object(k: &Value<'_>, v: &Value<'_>, texts: &mut Texts) -> Result<Object> {
    let name = key_text(k, "object")?;
    check_name(name, "object")?;
    let entries = v
        .as_map()
        .ok_or_else(|| schema(format!("object {name:?} is a {}, not a map", v.type_name())))?;
    let (mut shape, mut layout, mut parts, mut attributes) = (None, None, None, None);
    for (k, v) in entries {
        match k.as_text() {
            Some("shape") => shape = Some(v),
            Some("layout") => layout = Some(v),
            Some("parts") => parts = Some(v),
            Some("attributes") => attributes = Some(v),
            _ => {}
        }
    }
    let missing = |field: &str| schema(format!("object {name:?} has no {field:?}"));
    let shape = shape.ok_or_else(|| missing("shape"))?;
    let dims = shape.as_array().ok_or_else(|| {
        schema(format!(
            "object {name:?}: shape is a {}, not an array",
            shape.type_name()
        ))
    })?;
    let shape = dims
        .iter()
        .map(|d| {
            d.as_uint().ok_or_else(|| {
                schema(format!(
                    "object {name:?}: shape entry is a {}, not an unsigned integer",
                    d.type_name()
                ))
            })
        })
        .collect::<Result<Vec<u64>>>()?;
    let shape = texts.shape(&shape);
    let layout = layout.ok_or_else(|| missing("layout"))?;
    let layout = layout.as_text().ok_or_else(|| {
        schema(format!(
            "object {name:?}: layout is a {}, not text",
            layout.type_name()
        ))
    })?;
    let layout = texts.get(layout);
    let attributes = attributes
        .map(|a| parse_attributes(a, &format!("object {name:?}")))
        .transpose()?;
    let parts = parts.ok_or_else(|| missing("parts"))?;
    let map = parts.as_map().ok_or_else(|| {
        schema(format!(
            "object {name:?}: parts is a {}, not a map",
            parts.type_name()
        ))
    })?;
    if map.is_empty() {
        return Err(schema(format!("object {name:?} has an empty parts map")));
    }
    let parts = exact_vec(map, |k, v| parse_part(name, k, v, texts))?;
    Ok(Object {
        name: name.into(),
        shape,
        layout,
        attributes: attributes.map(crate::format::manifest::boxed_attributes),
        // Built at its exact length, so one part moves inline.
        parts: parts.into(),
    })
}

fn parse_part<'a>(object: &str, k: &Value<'a>, v: &Value<'a>, texts: &mut Texts) -> Result<Part> {
    let name = key_text(k, "part")?;
    check_name(name, "part")?;
    let at = || format!("{object:?}/{name:?}");
    let entries = v
        .as_map()
        .ok_or_else(|| schema(format!("part {} is a {}, not a map", at(), v.type_name())))?;
    let (mut dtype, mut ty, mut blob, mut shard, mut encoding, mut decoded, mut digest) =
        (None, None, None, None, None, None, None);
    for (k, v) in entries {
        match k.as_text() {
            Some("dtype") => dtype = Some(v),
            Some("type") => ty = Some(v),
            Some("blob") => blob = Some(v),
            Some("shard") => shard = Some(v),
            Some("encoding") => encoding = Some(v),
            Some("decoded_length") => decoded = Some(v),
            Some("digest") => digest = Some(v),
            _ => {}
        }
    }
    let text = |v: &Value<'a>, field: &str| -> Result<&'a str> {
        v.as_text().ok_or_else(|| {
            schema(format!(
                "part {}: {field} is a {}, not text",
                at(),
                v.type_name()
            ))
        })
    };
    let dtype = dtype.ok_or_else(|| schema(format!("part {} has no \"dtype\"", at())))?;
    let dtype_name = text(dtype, "dtype")?;
    let dtype = DType::parse(dtype_name).ok_or_else(|| {
        schema(format!(
            "part {}: dtype {dtype_name:?} is not one of the 12 storage types",
            at()
        ))
    })?;
    let logical = ty
        .map(|t| text(t, "type"))
        .transpose()?
        .map(|t| texts.get(t));
    let blob = blob.ok_or_else(|| schema(format!("part {} has no \"blob\"", at())))?;
    let pair = blob.as_array().ok_or_else(|| {
        schema(format!(
            "part {}: blob is a {}, not an array",
            at(),
            blob.type_name()
        ))
    })?;
    let [offset, length] = pair else {
        return Err(schema(format!(
            "part {}: blob has {} elements, not 2",
            at(),
            pair.len()
        )));
    };
    let uint = |v: &Value<'_>, field: &str| {
        v.as_uint().ok_or_else(|| {
            schema(format!(
                "part {}: {field} is a {}, not an unsigned integer",
                at(),
                v.type_name()
            ))
        })
    };
    let (offset, length) = (uint(offset, "blob offset")?, uint(length, "blob length")?);
    let shard = shard
        .map(|s| text(s, "shard"))
        .transpose()?
        .map(|s| texts.get(s));
    let encoding = encoding
        .map(|e| text(e, "encoding"))
        .transpose()?
        .map(|e| texts.get(e));
    let decoded_length = decoded.map(|d| uint(d, "decoded_length")).transpose()?;
    if encoding.is_some() != decoded_length.is_some() {
        return Err(schema(format!(
            "part {}: encoding and decoded_length must be present together (encoding {:?}, decoded_length {:?})",
            at(),
            encoding,
            decoded_length
        )));
    }
    let digest = digest.map(|d| text(d, "digest")).transpose()?;
    if let Some(d) = &digest {
        check_digest_syntax(d).map_err(|e| schema(format!("part {}: {e}", at())))?;
    }
    Ok(Part {
        name: texts.get(name),
        ty: ElementType { dtype, logical },
        blob: BlobRef {
            offset,
            length,
            shard,
        },
        encoding,
        decoded: decoded_length.unwrap_or(0),
        digest: digest.map(Digest::parse),
    })
}

fn parse_shards(v: &Value<'_>) -> Result<Vec<Shard>> {
    let map = v
        .as_map()
        .ok_or_else(|| schema(format!("\"shards\" is a {}, not a map", v.type_name())))?;
    let mut out = Vec::new();
    for (k, entry) in map {
        let name = k.as_text().ok_or_else(|| {
            schema(format!(
                "shard name must be text, found a {}",
                k.type_name()
            ))
        })?;
        check_shard_name(name)?;
        let size = entry
            .get("size")
            .and_then(Value::as_uint)
            .ok_or_else(|| schema(format!("shard {name:?} has no unsigned integer \"size\"")))?;
        let digest = entry
            .get("digest")
            .and_then(Value::as_text)
            .ok_or_else(|| schema(format!("shard {name:?} has no text \"digest\"")))?;
        check_digest_syntax(digest).map_err(|e| schema(format!("shard {name:?}: {e}")))?;
        if size < super::MIN_FILE_LEN {
            return Err(schema(format!(
                "shard {name:?} size {size} is smaller than the smallest container ({})",
                super::MIN_FILE_LEN
            )));
        }
        out.push(Shard {
            name: name.to_string(),
            size,
            digest: digest.to_string(),
        });
    }
    Ok(out)
}

/// Checks an attributes map: text keys obeying §3.5 at the first level.
/// Values are already tag-free and depth-bounded by the CBOR decoder; nested
/// maps may have any keys (notes §1). Returns the map re-encoded, which is
/// byte-identical to the input since the input is deterministic.
fn parse_attributes(v: &Value<'_>, owner: &str) -> Result<Vec<u8>> {
    let map = v.as_map().ok_or_else(|| {
        schema(format!(
            "{owner} attributes is a {}, not a map",
            v.type_name()
        ))
    })?;
    for (k, _) in map {
        let key = k.as_text().ok_or_else(|| {
            schema(format!(
                "{owner} attribute key must be text, found a {}",
                k.type_name()
            ))
        })?;
        check_name(key, "attribute")?;
    }
    let mut out = Vec::new();
    cbor::encode(v, &mut out);
    out.shrink_to_fit();
    Ok(out)
}

/// Checks the shape of a digest string, `algo:hex` with `algo` in `[a-z0-9]+`
/// and `hex` in `[0-9a-f]+`. The hex length is checked only on verify
/// (notes §1), where a wrong length is a mismatch.
pub fn check_digest_syntax(d: &str) -> std::result::Result<(), String> {
    let ok = match d.split_once(':') {
        Some((algo, hex)) => {
            !algo.is_empty()
                && algo
                    .bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && !hex.is_empty()
                && hex
                    .bytes()
                    .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
        }
        None => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("digest {d:?} is not \"algo:lowercase-hex\""))
    }
}

#[cfg(test)]
mod tests {
    use super::Digest;

    /// A digest's text comes back exactly as written, however it is kept.
    #[test]
    fn digest_text_round_trips() {
        let sha = format!("sha256:{}", "0123456789abcdef".repeat(4));
        for d in [
            "xxh3:0000000000000000",
            "xxh3:00ff00ff00ff00ff",
            "xxh3:ffffffffffffffff",
            "xxh3:abc",
            "xxh3:0123456789abcdef0",
            &sha,
            "sha256:00",
            "md5:d41d8cd98f00b204e9800998ecf8427e",
        ] {
            assert_eq!(Digest::parse(d).to_string(), d);
            assert_eq!(format!("{:?}", Digest::parse(d)), format!("{d:?}"));
        }
        assert!(matches!(
            Digest::parse("xxh3:00ff00ff00ff00ff"),
            Digest::Xxh3(_)
        ));
        assert!(matches!(Digest::parse(&sha), Digest::Sha256(_)));
        assert!(matches!(Digest::parse("xxh3:abc"), Digest::Other(_)));
    }
}
