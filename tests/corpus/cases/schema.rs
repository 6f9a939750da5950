//! The manifest schema (§3.2–§3.4, implementer notes §1): required fields,
//! types, digest strings, non-text keys, unknown keys, pinned logical types.

use super::super::builder::{part, root, xxh3_digest, CborItem, Fields};
use super::super::Outcome;
use super::{
    file, reject, structural, valid, valid_then, w_object, with_attr, with_object, with_part,
    with_root, Case, DATA, W_BLOB,
};

pub fn cases() -> Vec<Case> {
    [structure(), fields(), digests(), keys(), logical_types()]
        .into_iter()
        .flatten()
        .collect()
}

fn structure() -> Vec<Case> {
    vec![
        reject(
            "schema-root-not-map",
            "Schema",
            file(&[], |_| CborItem::Array(vec![])),
        ),
        reject(
            "schema-objects-missing",
            "Schema",
            file(&[], |_| Fields::new().sorted()),
        ),
        reject(
            "schema-objects-not-map",
            "Schema",
            file(&[], |_| {
                root(Fields::new())
                    .set("objects", CborItem::Array(vec![]))
                    .sorted()
            }),
        ),
        reject(
            "schema-object-not-map",
            "Schema",
            with_root(|r| r.set("objects", Fields::new().set("w", "dense")).sorted()),
        ),
        reject(
            "schema-object-missing-shape",
            "Schema",
            with_object(|o| o.remove("shape")),
        ),
        reject(
            "schema-object-missing-layout",
            "Schema",
            with_object(|o| o.remove("layout")),
        ),
        reject(
            "schema-object-missing-parts",
            "Schema",
            with_object(|o| o.remove("parts")),
        ),
        // An object with no bytes has no meaning, whatever its layout (§3.3).
        reject(
            "schema-parts-empty",
            "Schema",
            file(&[], |_| {
                root(Fields::new().set("w", structural(&[0], Fields::new()))).sorted()
            }),
        ),
        reject(
            "schema-parts-not-map",
            "Schema",
            with_object(|o| o.set("parts", CborItem::Array(vec![]))),
        ),
        reject(
            "schema-part-not-map",
            "Schema",
            with_object(|o| o.set("parts", Fields::new().set("data", W_BLOB.item()))),
        ),
        valid("empty-objects", file(&[], |_| root(Fields::new()).sorted())),
    ]
}

fn fields() -> Vec<Case> {
    vec![
        reject(
            "schema-shape-not-array",
            "Schema",
            with_object(|o| o.set("shape", 16u64)),
        ),
        reject(
            "schema-shape-negative",
            "Schema",
            with_object(|o| o.set("shape", vec![CborItem::Nint(0)])),
        ),
        reject(
            "schema-shape-not-int",
            "Schema",
            with_object(|o| o.set("shape", vec![CborItem::from("16")])),
        ),
        // 16.0 as f16.
        reject(
            "schema-shape-float",
            "Schema",
            with_object(|o| o.set("shape", vec![CborItem::F16(0x4C00)])),
        ),
        reject(
            "schema-layout-not-text",
            "Schema",
            with_object(|o| o.set("layout", 0u64)),
        ),
        reject(
            "schema-blob-one-element",
            "Schema",
            with_part(|p| p.set("blob", vec![4096u64.into()])),
        ),
        reject(
            "schema-blob-three-elements",
            "Schema",
            with_part(|p| p.set("blob", vec![4096u64.into(), 16u64.into(), 0u64.into()])),
        ),
        reject(
            "schema-blob-not-array",
            "Schema",
            with_part(|p| p.set("blob", 4096u64)),
        ),
        reject(
            "schema-blob-negative-length",
            "Schema",
            with_part(|p| p.set("blob", vec![4096u64.into(), CborItem::Nint(15)])),
        ),
        reject(
            "schema-dtype-unknown",
            "Schema",
            with_part(|p| p.set("dtype", "f8")),
        ),
        // bool is a logical type over u8, not a storage type (§4.1).
        reject(
            "schema-dtype-bool",
            "Schema",
            with_part(|p| p.set("dtype", "bool")),
        ),
        reject(
            "schema-dtype-missing",
            "Schema",
            with_part(|p| p.remove("dtype")),
        ),
        reject(
            "schema-type-not-text",
            "Schema",
            with_part(|p| p.set("type", 1u64)),
        ),
        reject(
            "schema-encoding-without-decoded-length",
            "Schema",
            with_part(|p| p.set("encoding", "zt.zstd-seekable/1")),
        ),
        reject(
            "schema-decoded-length-without-encoding",
            "Schema",
            with_part(|p| p.set("decoded_length", 16u64)),
        ),
        reject(
            "schema-attributes-not-map",
            "Schema",
            with_root(|r| r.set("attributes", CborItem::Array(vec![])).sorted()),
        ),
        reject(
            "schema-object-attributes-not-map",
            "Schema",
            with_object(|o| o.set("attributes", "none")),
        ),
    ]
}

fn digests() -> Vec<Case> {
    let hex = xxh3_digest(DATA)["xxh3:".len()..].to_string();
    let digest = |s: String| with_part(move |p| p.set("digest", s));
    vec![
        reject(
            "schema-digest-uppercase-hex",
            "Schema",
            digest(format!("xxh3:{}", hex.to_uppercase())),
        ),
        reject(
            "schema-digest-uppercase-algo",
            "Schema",
            digest(format!("XXH3:{hex}")),
        ),
        reject(
            "schema-digest-no-colon",
            "Schema",
            digest(format!("xxh3{hex}")),
        ),
        reject(
            "schema-digest-empty-hex",
            "Schema",
            digest("xxh3:".to_string()),
        ),
        reject(
            "schema-digest-empty-algo",
            "Schema",
            digest(format!(":{hex}")),
        ),
        reject(
            "schema-digest-non-hex",
            "Schema",
            digest("xxh3:xyz".to_string()),
        ),
        reject(
            "schema-digest-not-text",
            "Schema",
            with_part(|p| p.set("digest", CborItem::Bytes(vec![0xAB]))),
        ),
        // Well-formed, and an algorithm this reader does not know: verify refuses.
        valid_then(
            "digest-unknown-algorithm",
            Outcome::Refused,
            digest("blake3:00".to_string()),
        ),
        // Hex length is not checked at open; verify finds the mismatch.
        valid_then(
            "digest-short-hex",
            Outcome::Reject("Digest"),
            digest("xxh3:ab".to_string()),
        ),
    ]
}

fn keys() -> Vec<Case> {
    let nested = Fields::new()
        .set(1u64, "integer key")
        .set("", "empty key")
        .set("a\0b", "key with NUL")
        .set(CborItem::Bytes(vec![1]), "byte-string key");
    vec![
        reject(
            "schema-object-key-not-text",
            "Schema",
            with_root(|r| {
                r.set("objects", Fields::new().set(1u64, w_object(W_BLOB)))
                    .sorted()
            }),
        ),
        reject(
            "schema-part-key-not-text",
            "Schema",
            with_object(|o| o.set("parts", Fields::new().set(1u64, part("u8", W_BLOB)))),
        ),
        reject(
            "schema-attribute-key-not-text",
            "Schema",
            with_root(|r| r.set("attributes", Fields::new().set(1u64, 2u64)).sorted()),
        ),
        reject(
            "schema-object-attribute-key-not-text",
            "Schema",
            with_object(|o| {
                o.set(
                    "attributes",
                    Fields::new().set(CborItem::Bytes(b"k".to_vec()), 2u64),
                )
            }),
        ),
        // Non-text keys at the root are ignored like any unknown key.
        valid(
            "root-non-text-key-ignored",
            with_root(|r| r.set(1u64, "x").sorted()),
        ),
        valid("unknown-keys-everywhere", unknown_keys()),
        // The name rules apply to the first level of an attributes map only.
        valid(
            "nested-attribute-keys-unchecked",
            with_attr(nested.sorted()),
        ),
    ]
}

/// Unknown keys at the root, in an object and in a part, text and not.
fn unknown_keys() -> Vec<u8> {
    let future = Fields::new().set(1u64, 2u64).set("", CborItem::Null);
    let part = part("u8", W_BLOB)
        .set("future", future.clone())
        .set(7u64, "integer key in a part");
    let object = w_object(W_BLOB)
        .set("parts", Fields::new().set("data", part))
        .set("future", vec![CborItem::Bool(true)])
        .set(7u64, "integer key in an object");
    with_root(|r| {
        r.set("objects", Fields::new().set("w", object))
            .set("zz-future", future)
            .sorted()
    })
}

fn logical_types() -> Vec<Case> {
    let typed = |dtype: &str, ty: &str| part(dtype, W_BLOB).set("type", ty);
    vec![
        // bool pins u8. Shape [16] fits bool's size function, not plain
        // f32's; the pin is checked before any size rule.
        reject(
            "schema-ltype-bool-on-f32",
            "Schema",
            with_object(|o| o.set("parts", Fields::new().set("data", typed("f32", "bool")))),
        ),
        // complex64 pins f32. Shape [2] is 16 bytes either way (8n).
        reject(
            "schema-ltype-complex64-on-f64",
            "Schema",
            with_object(|o| {
                o.set("shape", vec![2u64.into()]).set(
                    "parts",
                    Fields::new().set("data", typed("f64", "complex64")),
                )
            }),
        ),
        // The pin holds under a layout the reader does not interpret.
        reject(
            "schema-ltype-pinned-unknown-layout",
            "Schema",
            with_root(|r| {
                let parts = Fields::new().set("codes", typed("f32", "bool"));
                r.set("objects", Fields::new().set("w", structural(&[4], parts)))
                    .sorted()
            }),
        ),
    ]
}
