//! The writer's half of the container: a manifest encoded in deterministic
//! CBOR (§3.1) and the footer (§2.3), as bytes. Placing blobs, padding
//! and files are the caller's business (`crate::pack`).
//!
//! Every map is written with its keys in deterministic order (by encoded
//! length, then bytes), so the same manifest gives the same bytes.
//! Attributes are kept as the deterministic CBOR they were read or built
//! as, and spliced in unchanged.

use super::cbor::{self, text_key_cmp, Value};
use super::manifest::{Manifest, Object, Part, Shard};
use super::{FOOTER_LEN, MAGIC, VERSION};

/// The manifest's deterministic CBOR.
pub fn manifest_bytes(m: &Manifest) -> Vec<u8> {
    let mut out = Vec::new();
    // "shards" < "objects" < "attributes" (shorter keys first).
    let n = 1 + u64::from(m.shards.is_some()) + u64::from(m.attributes.is_some());
    cbor::encode_head(5, n, &mut out);
    if let Some(shards) = &m.shards {
        text("shards", &mut out);
        encode_shards(shards, &mut out);
    }
    text("objects", &mut out);
    let mut objects: Vec<&Object> = m.objects.iter().collect();
    objects.sort_by(|a, b| text_key_cmp(&a.name, &b.name));
    cbor::encode_head(5, objects.len() as u64, &mut out);
    for o in objects {
        text(&o.name, &mut out);
        encode_object(o, &mut out);
    }
    if let Some(a) = &m.attributes {
        text("attributes", &mut out);
        out.extend_from_slice(a);
    }
    out
}

/// The 40-byte footer of a file whose manifest is `[offset, +len)` with
/// XXH3-64 `hash`; all three are 0 for a data shard (§7.2).
pub fn footer(offset: u64, len: u64, hash: u64) -> [u8; FOOTER_LEN as usize] {
    let mut f = [0u8; FOOTER_LEN as usize];
    f[0..8].copy_from_slice(&offset.to_le_bytes());
    f[8..16].copy_from_slice(&len.to_le_bytes());
    f[16..24].copy_from_slice(&hash.to_le_bytes());
    f[24..28].copy_from_slice(&VERSION.to_le_bytes());
    // 28..32: reserved, 0.
    f[32..40].copy_from_slice(&MAGIC);
    f
}

fn text(s: &str, out: &mut Vec<u8>) {
    cbor::encode(&Value::Text(s), out);
}

fn uint(n: u64, out: &mut Vec<u8>) {
    cbor::encode_head(0, n, out);
}

fn encode_shards(shards: &[Shard], out: &mut Vec<u8>) {
    let mut sorted: Vec<&Shard> = shards.iter().collect();
    sorted.sort_by(|a, b| text_key_cmp(&a.name, &b.name));
    cbor::encode_head(5, sorted.len() as u64, out);
    for s in sorted {
        text(&s.name, out);
        // "size" < "digest".
        cbor::encode_head(5, 2, out);
        text("size", out);
        uint(s.size, out);
        text("digest", out);
        text(&s.digest, out);
    }
}

fn encode_object(o: &Object, out: &mut Vec<u8>) {
    // "parts" < "shape" < "layout" < "attributes".
    cbor::encode_head(5, 3 + u64::from(o.attributes.is_some()), out);
    text("parts", out);
    let mut parts: Vec<&Part> = o.parts.iter().collect();
    parts.sort_by(|a, b| text_key_cmp(&a.name, &b.name));
    cbor::encode_head(5, parts.len() as u64, out);
    for p in parts {
        text(&p.name, out);
        encode_part(p, out);
    }
    text("shape", out);
    cbor::encode_head(4, o.shape.len() as u64, out);
    o.shape.iter().for_each(|&d| uint(d, out));
    text("layout", out);
    text(&o.layout, out);
    if let Some(a) = &o.attributes {
        text("attributes", out);
        out.extend_from_slice(a);
    }
}

/// A part's fields, sorted as deterministic CBOR sorts their keys.
fn encode_part(p: &Part, out: &mut Vec<u8>) {
    let digest = p.digest.as_ref().map(ToString::to_string);
    let mut fields: Vec<(&str, Field)> = vec![
        ("dtype", Field::Text(p.ty.dtype.name())),
        ("blob", Field::Blob(p.blob.offset, p.blob.length)),
    ];
    if let Some(t) = &p.ty.logical {
        fields.push(("type", Field::Text(t)));
    }
    if let Some(s) = &p.blob.shard {
        fields.push(("shard", Field::Text(s)));
    }
    if let Some(e) = &p.encoding {
        fields.push(("encoding", Field::Text(e)));
    }
    if let Some(n) = p.decoded_length() {
        fields.push(("decoded_length", Field::Uint(n)));
    }
    if let Some(d) = &digest {
        fields.push(("digest", Field::Text(d)));
    }
    fields.sort_by(|a, b| text_key_cmp(a.0, b.0));
    cbor::encode_head(5, fields.len() as u64, out);
    for (k, v) in fields {
        text(k, out);
        match v {
            Field::Text(s) => text(s, out),
            Field::Uint(n) => uint(n, out),
            Field::Blob(off, len) => {
                cbor::encode_head(4, 2, out);
                uint(off, out);
                uint(len, out);
            }
        }
    }
}

enum Field<'a> {
    Text(&'a str),
    Uint(u64),
    Blob(u64, u64),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::manifest::BlobRef;
    use crate::format::text::Texts;
    use crate::format::types::{DType, ElementType};
    use crate::format::{read_container, Container};

    fn model() -> Manifest {
        let mut texts = Texts::default();
        let mut part = Part::raw(
            texts.get("data"),
            ElementType {
                dtype: DType::U8,
                logical: Some(texts.get("bool")),
            },
            4096,
            3,
        );
        part.digest = Some(crate::format::manifest::Digest::parse(
            "xxh3:0123456789abcdef",
        ));
        part.blob = BlobRef {
            shard: Some(texts.get("00001")),
            ..part.blob
        };
        let mut attrs = Vec::new();
        cbor::encode(
            &Value::Map(vec![(Value::Text("k"), Value::Float(0.5))]),
            &mut attrs,
        );
        Manifest {
            objects: vec![Object {
                name: "b".into(),
                shape: texts.shape(&[3]),
                layout: texts.get("dense"),
                attributes: Some(crate::format::manifest::boxed_attributes(attrs.clone())),
                parts: smallvec::smallvec![part],
            }],
            shards: Some(vec![Shard {
                name: "00001".into(),
                size: 8192,
                digest: "xxh3:0000000000000000".into(),
            }]),
            attributes: Some(attrs),
        }
    }

    #[test]
    fn a_written_manifest_reads_back_the_same() {
        let m = model();
        let bytes = manifest_bytes(&m);
        assert_eq!(Manifest::parse(&bytes).unwrap(), m);
    }

    #[test]
    fn a_file_of_a_manifest_and_footer_is_a_valid_container() {
        let m = Manifest {
            objects: Vec::new(),
            shards: None,
            attributes: None,
        };
        let bytes = manifest_bytes(&m);
        let mut file = MAGIC.to_vec();
        file.resize(4096, 0);
        file.extend_from_slice(&bytes);
        let hash = xxhash_rust::xxh3::xxh3_64(&bytes);
        file.extend_from_slice(&footer(4096, bytes.len() as u64, hash));
        assert!(matches!(read_container(&file), Ok(Container::Model(_))));
    }
}
