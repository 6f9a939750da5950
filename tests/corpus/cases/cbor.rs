//! Strict deterministic CBOR (§3.1 and implementer notes §1): heads, lengths,
//! forbidden items, key order, duplicates, floats and depth.
//!
//! Spliced items sit in the root attributes (`with_attr`), which are the
//! last item of the manifest, or in a field of the usual object.

use super::super::builder::{float, head, CborItem, Fields};
use super::{
    raw, reject, valid, w_object, w_root, with_attr, with_manifest, with_object, with_part,
    with_root, Case, W_BLOB,
};

pub fn cases() -> Vec<Case> {
    [heads(), forbidden(), key_order(), floats(), depth()]
        .into_iter()
        .flatten()
        .collect()
}

fn heads() -> Vec<Case> {
    vec![
        // The shape [16] with 16 in a 1-byte argument.
        reject(
            "cbor-nonshortest-uint",
            "CborDeterminism",
            with_object(|o| o.set("shape", raw(&[0x81, 0x18, 0x10]))),
        ),
        // The blob offset 4096 in an 8-byte argument.
        reject(
            "cbor-nonshortest-uint-8byte",
            "CborDeterminism",
            with_part(|p| {
                p.set(
                    "blob",
                    raw(&[0x82, 0x1B, 0, 0, 0, 0, 0, 0, 0x10, 0x00, 0x10]),
                )
            }),
        ),
        // -1 in a 1-byte argument.
        reject(
            "cbor-nonshortest-negative",
            "CborDeterminism",
            with_attr(raw(&[0x38, 0x00])),
        ),
        // "dense" with its length in a 1-byte argument.
        reject(
            "cbor-nonshortest-length",
            "CborDeterminism",
            with_object(|o| o.set("layout", raw(b"\x78\x05dense"))),
        ),
        // A one-entry map with its count in a 1-byte argument.
        reject(
            "cbor-nonshortest-map-length",
            "CborDeterminism",
            with_attr(raw(b"\xB8\x01\x61k\x01")),
        ),
    ]
}

fn forbidden() -> Vec<Case> {
    let self_describe = [&[0xD9, 0xD9, 0xF7][..], &w_root().sorted().encode()].concat();
    vec![
        reject(
            "cbor-indefinite-array",
            "CborSyntax",
            with_object(|o| o.set("shape", raw(&[0x9F, 0x10, 0xFF]))),
        ),
        reject(
            "cbor-indefinite-map",
            "CborSyntax",
            with_attr(raw(b"\xBF\x61k\x01\xFF")),
        ),
        reject(
            "cbor-indefinite-text",
            "CborSyntax",
            with_object(|o| o.set("layout", raw(b"\x7F\x65dense\xFF"))),
        ),
        reject(
            "cbor-indefinite-bytes",
            "CborSyntax",
            with_attr(raw(&[0x5F, 0x41, 0x00, 0xFF])),
        ),
        // Additional information 28 is reserved.
        reject(
            "cbor-reserved-additional-info",
            "CborSyntax",
            with_attr(raw(&[0x1C])),
        ),
        // Tag 1 (epoch time) on an attribute value.
        reject(
            "cbor-tag-in-attributes",
            "CborSyntax",
            with_attr(raw(&[0xC1, 0x00])),
        ),
        // Tag 2 (bignum) on a shape entry: tags are refused outside attributes too.
        reject(
            "cbor-tag-in-shape",
            "CborSyntax",
            with_object(|o| o.set("shape", raw(&[0x81, 0xC2, 0x41, 0x10]))),
        ),
        // The self-describe tag 55799 around the root, as some encoders emit.
        reject(
            "cbor-tag-self-describe-root",
            "CborSyntax",
            with_manifest(|_| self_describe),
        ),
        reject("cbor-undefined", "CborSyntax", with_attr(raw(&[0xF7]))),
        // Simple value 32 (two-byte form): only false, true and null are allowed.
        reject(
            "cbor-simple-value",
            "CborSyntax",
            with_attr(raw(&[0xF8, 0x20])),
        ),
        reject(
            "cbor-break-outside-indefinite",
            "CborSyntax",
            with_attr(raw(&[0xFF])),
        ),
        reject(
            "cbor-trailing-bytes",
            "CborSyntax",
            with_manifest(|m| [m, vec![0x00]].concat()),
        ),
        reject(
            "cbor-truncated",
            "CborSyntax",
            with_manifest(|m| m[..m.len() - 3].to_vec()),
        ),
        // A continuation byte without its lead.
        reject(
            "cbor-invalid-utf8",
            "CborSyntax",
            with_attr(raw(&[0x62, 0xC3, 0x28])),
        ),
        // An object name that is a CESU-style encoded surrogate.
        reject(
            "cbor-invalid-utf8-surrogate",
            "CborSyntax",
            with_object_key(&[0x63, 0xED, 0xA0, 0x80]),
        ),
        // An object name that is an overlong encoding of "/".
        reject(
            "cbor-invalid-utf8-overlong-slash",
            "CborSyntax",
            with_object_key(&[0x62, 0xC0, 0xAF]),
        ),
        // A text that claims 100 bytes where 5 remain.
        reject(
            "cbor-length-too-long",
            "CborSyntax",
            with_attr(raw(b"\x78\x64short")),
        ),
        // A text that claims 2^64 - 1 bytes: must fail before allocating.
        reject(
            "cbor-length-huge",
            "CborSyntax",
            with_attr(raw(&[0x7B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])),
        ),
        // An array that claims 2^32 items.
        reject(
            "cbor-array-count-huge",
            "CborSyntax",
            with_attr(raw(&[0x9B, 0, 0, 0, 1, 0, 0, 0, 0])),
        ),
        // A map that claims 2^32 - 1 entries.
        reject(
            "cbor-map-count-huge",
            "CborSyntax",
            with_attr(raw(&[0xBA, 0xFF, 0xFF, 0xFF, 0xFF])),
        ),
    ]
}

/// The usual file with object `w` under a hand-encoded key.
fn with_object_key(key: &[u8]) -> Vec<u8> {
    let objects = Fields::new().set(raw(key), w_object(W_BLOB));
    with_root(|r| r.set("objects", objects).sorted())
}

fn key_order() -> Vec<Case> {
    let b_aa = Fields::new().set("b", 1u64).set("aa", 2u64);
    let aa_b = Fields::new().set("aa", 2u64).set("b", 1u64);
    vec![
        // "objects" before "attributes", "b" before "aa": encoded-bytes order,
        // which puts shorter text keys first.
        valid(
            "cbor-keys-length-first",
            with_root(|r| r.set("attributes", b_aa).sorted()),
        ),
        // The same maps sorted as strings instead of as encoded bytes.
        reject(
            "cbor-keys-lexical-root",
            "CborDeterminism",
            with_root(|r| {
                Fields::new()
                    .set("attributes", Fields::new())
                    .set("objects", r.0[0].1.clone())
                    .in_order()
            }),
        ),
        reject(
            "cbor-keys-aa-before-b",
            "CborDeterminism",
            with_attr(aa_b.in_order()),
        ),
        // The object's fields in the order the spec lists them.
        reject(
            "cbor-keys-unsorted",
            "CborDeterminism",
            with_object_in_order(&["shape", "layout", "parts"]),
        ),
        // Integer keys sort before text keys (major type 0 < 3).
        reject(
            "cbor-keys-int-after-text",
            "CborDeterminism",
            with_root(|r| r.push(1u64, "x").in_order()),
        ),
        reject(
            "cbor-duplicate-key",
            "CborDuplicateKey",
            with_attr(Fields::new().push("a", 1u64).push("a", 2u64).sorted()),
        ),
        reject(
            "cbor-duplicate-key-objects",
            "CborDuplicateKey",
            with_root(|r| {
                let objects = r.0[0].1.clone();
                r.push("objects", objects).in_order()
            }),
        ),
        // Nested attribute maps escape the name rules but not the CBOR rules.
        reject(
            "cbor-duplicate-key-nested",
            "CborDuplicateKey",
            with_attr(Fields::new().push(1u64, 0u64).push(1u64, 0u64).in_order()),
        ),
    ]
}

/// The usual file with object `w`'s fields written in `order`.
fn with_object_in_order(order: &[&str]) -> Vec<u8> {
    let full = w_object(W_BLOB);
    let object = order.iter().fold(Fields::new(), |acc, key| {
        let value = full
            .0
            .iter()
            .find(|(k, _)| *k == CborItem::from(*key))
            .unwrap();
        acc.push(*key, value.1.clone())
    });
    let objects = Fields::new().set("w", object.in_order());
    with_root(|r| r.set("objects", objects).sorted())
}

fn floats() -> Vec<Case> {
    let specials = [0x7E00, 0x7C00, 0xFC00, 0x8000, 0x0001, 0x03FF, 0x7BFF];
    let specials: Vec<CborItem> = specials.into_iter().map(CborItem::F16).collect();
    let shortest = vec![
        float(0.1f32 as f64),
        float(65536.0),
        float(0.1),
        float(1e300),
        float(-2.5),
    ];
    vec![
        reject(
            "cbor-float-nan-f32",
            "CborDeterminism",
            with_attr(CborItem::F32(0x7FC0_0000)),
        ),
        reject(
            "cbor-float-nan-f64",
            "CborDeterminism",
            with_attr(CborItem::F64(0x7FF8_0000_0000_0000)),
        ),
        reject(
            "cbor-float-nan-payload-f16",
            "CborDeterminism",
            with_attr(CborItem::F16(0x7E01)),
        ),
        reject(
            "cbor-float-nan-negative-f16",
            "CborDeterminism",
            with_attr(CborItem::F16(0xFE00)),
        ),
        // 1.0 as f32.
        reject(
            "cbor-float-f32-fits-f16",
            "CborDeterminism",
            with_attr(CborItem::F32(0x3F80_0000)),
        ),
        // 2^-24, the smallest f16 subnormal, as f32.
        reject(
            "cbor-float-f32-fits-f16-subnormal",
            "CborDeterminism",
            with_attr(CborItem::F32(0x3380_0000)),
        ),
        // +inf as f32.
        reject(
            "cbor-float-inf-f32",
            "CborDeterminism",
            with_attr(CborItem::F32(0x7F80_0000)),
        ),
        // 65536.0 as f64: too big for f16, exact in f32.
        reject(
            "cbor-float-f64-fits-f32",
            "CborDeterminism",
            with_attr(CborItem::F64(0x40F0_0000_0000_0000)),
        ),
        // 1.5 as f64.
        reject(
            "cbor-float-f64-fits-f16",
            "CborDeterminism",
            with_attr(CborItem::F64(0x3FF8_0000_0000_0000)),
        ),
        // NaN, +inf, -inf, -0, the smallest and largest subnormal, the largest finite.
        valid(
            "cbor-floats-f16-special",
            with_attr(CborItem::Array(specials)),
        ),
        valid("cbor-floats-shortest", with_attr(CborItem::Array(shortest))),
    ]
}

/// Attributes `{"a": [[...[0]...]]}` with `arrays` nested arrays: the root
/// is depth 0, the attributes map 1, the outer array 2, so the innermost 0
/// is at depth `arrays + 2`.
fn nested_arrays(arrays: usize) -> CborItem {
    let bytes = [vec![0x81; arrays], vec![0x00]].concat();
    Fields::new().set("a", CborItem::Raw(bytes)).sorted()
}

fn depth() -> Vec<Case> {
    let root_40 = [vec![0x81; 40], head(0, 0)].concat();
    vec![
        valid(
            "cbor-depth-32",
            with_root(|r| r.set("attributes", nested_arrays(30)).sorted()),
        ),
        reject(
            "cbor-depth-33",
            "CborDepth",
            with_root(|r| r.set("attributes", nested_arrays(31)).sorted()),
        ),
        // 40 nested arrays as the root: too deep before it is found not to be a map.
        reject(
            "cbor-depth-root-40",
            "CborDepth",
            with_manifest(|_| root_40),
        ),
    ]
}
