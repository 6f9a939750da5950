//! The dense layout (§5.1) and unknown layouts (§5.2), storage and logical
//! types (§4, Appendix A), and digests (§3.4).

use super::super::builder::{dense, part, root, sha256_digest, xxh3_digest, CborItem, Fields, Lcg};
use super::super::Outcome;
use super::{
    file, reject, structural, valid, valid_then, with_object, with_part, Case, DATA, W_BLOB,
};
use xxhash_rust::xxh3::xxh3_64;

pub fn cases() -> Vec<Case> {
    [layouts(), types(), digests()]
        .into_iter()
        .flatten()
        .collect()
}

fn layouts() -> Vec<Case> {
    let parts = |p: Fields| with_object(|o| o.set("parts", p));
    let both = Fields::new()
        .set("data", part("u8", W_BLOB))
        .set("extra", part("u8", W_BLOB));
    vec![
        reject(
            "dense-part-not-data",
            "LayoutRule",
            parts(Fields::new().set("weight", part("u8", W_BLOB))),
        ),
        reject("dense-two-parts", "LayoutRule", parts(both)),
        // f32 [5] is 20 bytes; the blob holds 16.
        reject(
            "dense-size-mismatch",
            "DenseSize",
            with_object(|o| {
                o.set("shape", vec![CborItem::Uint(5)])
                    .set("parts", Fields::new().set("data", part("f32", W_BLOB)))
            }),
        ),
        // 2^62 elements fit u64 (no Shape rule), but 2^62 f32 are 2^64
        // bytes, which does not: no decoded size can match (§5.1). The
        // public implementation wraps the product and accepts it.
        reject(
            "dense-size-overflow",
            "DenseSize",
            with_object(|o| {
                o.set("shape", vec![CborItem::Uint(1 << 62)])
                    .set("parts", Fields::new().set("data", part("f32", W_BLOB)))
            }),
        ),
        valid("unknown-layout-structural", unknown_layout()),
    ]
}

/// An object under `acme.thing/1` whose parts fit no rule a reader knows.
fn unknown_layout() -> Vec<u8> {
    let codes = b"thirteen byte";
    let scale = 0.5f32.to_le_bytes();
    file(&[codes, &scale], |b| {
        let parts = Fields::new()
            .set("codes", part("u8", b[0]).set("digest", xxh3_digest(codes)))
            .set("scale", part("f32", b[1]));
        let object = structural(&[7, 3], parts).set("attributes", Fields::new().set("bits", 3u64));
        root(Fields::new().set("w", object)).sorted()
    })
}

/// One dense object per entry, each over its own blob with its xxh3 digest.
struct Tensor {
    name: &'static str,
    shape: Vec<u64>,
    dtype: &'static str,
    ty: Option<&'static str>,
    data: Vec<u8>,
}

fn tensor(
    name: &'static str,
    shape: &[u64],
    dtype: &'static str,
    ty: Option<&'static str>,
    data: Vec<u8>,
) -> Tensor {
    Tensor {
        name,
        shape: shape.to_vec(),
        dtype,
        ty,
        data,
    }
}

fn tensors_file(tensors: &[Tensor]) -> Vec<u8> {
    let blobs: Vec<&[u8]> = tensors.iter().map(|t| t.data.as_slice()).collect();
    file(&blobs, |refs| {
        let objects = tensors.iter().zip(refs).fold(Fields::new(), |acc, (t, b)| {
            let mut p = part(t.dtype, *b).set("digest", xxh3_digest(&t.data));
            if let Some(ty) = t.ty {
                p = p.set("type", ty);
            }
            acc.set(t.name, dense(&t.shape, p))
        });
        root(objects).sorted()
    })
}

fn every_dtype() -> Vec<Tensor> {
    let mut rng = Lcg::new(0x5A54_0001);
    [
        ("f64", 8),
        ("f32", 4),
        ("f16", 2),
        ("bf16", 2),
        ("i64", 8),
        ("i32", 4),
        ("i16", 2),
        ("i8", 1),
        ("u64", 8),
        ("u32", 4),
        ("u16", 2),
        ("u8", 1),
    ]
    .into_iter()
    .map(|(dtype, width)| tensor(dtype, &[3], dtype, None, rng.bytes(3 * width)))
    .collect()
}

fn every_logical_type() -> Vec<Tensor> {
    let mut rng = Lcg::new(0x5A54_0002);
    let f32s: Vec<u8> = [1.0f32, -2.0, 0.5, 0.25, -1.5, 3.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let f64s: Vec<u8> = [1.0f64, -1.0, 0.125, 2.5]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    vec![
        tensor("bool", &[5], "u8", Some("bool"), vec![0, 1, 1, 0, 1]),
        tensor("f8_e4m3fn", &[4], "u8", Some("f8_e4m3fn"), rng.bytes(4)),
        tensor("f8_e5m2", &[4], "u8", Some("f8_e5m2"), rng.bytes(4)),
        tensor("f8_e4m3fnuz", &[4], "u8", Some("f8_e4m3fnuz"), rng.bytes(4)),
        tensor("f8_e5m2fnuz", &[4], "u8", Some("f8_e5m2fnuz"), rng.bytes(4)),
        // 0xFF is NaN and legal.
        tensor(
            "f8_e8m0",
            &[4],
            "u8",
            Some("f8_e8m0"),
            vec![127, 0, 254, 0xFF],
        ),
        // Five nibbles in three bytes, low nibble first, the last high nibble zero.
        tensor(
            "f4_e2m1",
            &[5],
            "u8",
            Some("f4_e2m1"),
            vec![0x21, 0x43, 0x05],
        ),
        tensor(
            "f4_e2m1.even",
            &[2, 2],
            "u8",
            Some("f4_e2m1"),
            vec![0xF1, 0x7A],
        ),
        tensor("complex64", &[3], "f32", Some("complex64"), f32s),
        tensor("complex128", &[2], "f64", Some("complex128"), f64s),
    ]
}

/// One dense object `w` of `shape` and `dtype`/`ty` over `data`, no digest.
fn typed(shape: &[u64], dtype: &str, ty: &str, data: &[u8]) -> Vec<u8> {
    file(&[data], |b| {
        let object = dense(shape, part(dtype, b[0]).set("type", ty));
        root(Fields::new().set("w", object)).sorted()
    })
}

fn types() -> Vec<Case> {
    let layout_data = Outcome::Reject("LayoutData");
    vec![
        valid("dtypes-all", tensors_file(&every_dtype())),
        valid("ltypes-all", tensors_file(&every_logical_type())),
        // size(5) = ceil(5/2) = 3, not 2 and not 5.
        reject(
            "f4-size-floor",
            "DenseSize",
            typed(&[5], "u8", "f4_e2m1", &[0x21, 0x43]),
        ),
        reject(
            "f4-size-plain",
            "DenseSize",
            typed(&[5], "u8", "f4_e2m1", &[0x21, 0x43, 0x05, 0, 0]),
        ),
        // size(3) = 8 · 3 = 24, not 4 · 3.
        reject(
            "complex64-size-plain",
            "DenseSize",
            typed(&[3], "f32", "complex64", &[0; 12]),
        ),
        // The last byte's high nibble is padding and must be zero.
        valid_then(
            "f4-packed-odd-count",
            layout_data,
            typed(&[5], "u8", "f4_e2m1", &[0x21, 0x43, 0x15]),
        ),
        valid_then(
            "bool-invalid-byte",
            layout_data,
            typed(&[4], "u8", "bool", &[0, 1, 2, 0]),
        ),
        // No size function, so no size rule: [999] over 8 bytes opens.
        valid_then(
            "unknown-ltype-structural",
            Outcome::Refused,
            typed(&[999], "u8", "acme.q3", &[0; 8]),
        ),
    ]
}

fn digests() -> Vec<Case> {
    let mut other = DATA.to_vec();
    other[15] ^= 1;
    let digest = |s: String| with_part(move |p| p.set("digest", s));
    let mismatch = Outcome::Reject("Digest");
    vec![
        valid("digest-xxh3", digest(xxh3_digest(DATA))),
        valid("digest-sha256", digest(sha256_digest(DATA))),
        valid_then(
            "digest-mismatch-xxh3",
            mismatch,
            digest(xxh3_digest(&other)),
        ),
        valid_then(
            "digest-mismatch-sha256",
            mismatch,
            digest(sha256_digest(&other)),
        ),
        valid("digest-xxh3-leading-zero", leading_zero_digest()),
    ]
}

/// Data whose XXH3-64 is below 2^60, so its digest starts with a zero
/// digit that an unpadded `{:x}` would drop.
fn leading_zero_digest() -> Vec<u8> {
    let data = (0u32..)
        .map(|i| format!("leading zero {i:04}").into_bytes())
        .find(|d| xxh3_64(d) < 1 << 60)
        .unwrap();
    assert!(xxh3_digest(&data).starts_with("xxh3:0"));
    tensors_file(&[tensor("w", &[data.len() as u64], "u8", None, data)])
}
