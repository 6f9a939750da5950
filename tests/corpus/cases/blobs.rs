//! Shapes (§3.3) and blob references within one file (§2.4): alignment,
//! bounds, identical-or-disjoint, zero-length blobs.

use super::super::builder::{
    dense, padded_to, part, root, self_referencing, BlobRef, CborItem, Fields, FileBuilder, Footer,
};
use super::{
    file, reject, structural, valid, w_object, with_object, with_root, Case, DATA, W_BLOB,
};

pub fn cases() -> Vec<Case> {
    [shapes(), placement(), overlap(), zero_length()]
        .into_iter()
        .flatten()
        .collect()
}

fn shapes() -> Vec<Case> {
    let big = 1u64 << 32;
    let overflow = |layout_known: bool| {
        let parts = Fields::new().set("data", part("u8", W_BLOB));
        let object = if layout_known {
            dense(&[big, big], part("u8", W_BLOB))
        } else {
            structural(&[big, big], parts)
        };
        with_root(move |r| r.set("objects", Fields::new().set("w", object)).sorted())
    };
    let u64_max = structural(&[u64::MAX], Fields::new().set("data", part("u8", W_BLOB)));
    vec![
        valid("shape-rank-64", one_byte_of_rank(64)),
        reject("shape-rank-65", "Shape", one_byte_of_rank(65)),
        // 2^32 · 2^32 = 2^64. (The dense size cannot match either; the shape
        // is checked before the layout.)
        reject("shape-product-overflow", "Shape", overflow(true)),
        // The same under a layout the reader does not interpret: the shape
        // rules hold for every object.
        reject(
            "shape-product-overflow-unknown-layout",
            "Shape",
            overflow(false),
        ),
        // 2^64 - 1 elements do not overflow.
        valid(
            "shape-product-u64-max-unknown-layout",
            with_root(|r| r.set("objects", Fields::new().set("w", u64_max)).sorted()),
        ),
        valid(
            "shape-scalar",
            file(&[&1.5f32.to_le_bytes()], |b| {
                one_object(dense(&[], part("f32", b[0])))
            }),
        ),
        // An empty tensor placed as the public writer places it: on the
        // offset of the next non-empty blob.
        valid(
            "shape-zero-dim",
            file(&[&[], DATA], |b| {
                let objects = Fields::new()
                    .set("empty", dense(&[4, 0], part("f32", b[0])))
                    .set("w", w_object(b[1]));
                root(objects).sorted()
            }),
        ),
        // The blob is [4096, 0] and the manifest starts at 4096.
        valid(
            "zero-size-tensor",
            file(&[&[]], |b| one_object(dense(&[0], part("f32", b[0])))),
        ),
    ]
}

/// `{"objects": {"w": object}}`, sorted.
fn one_object(object: Fields) -> CborItem {
    root(Fields::new().set("w", object)).sorted()
}

/// A dense u8 object of one element whose shape has `rank` ones.
fn one_byte_of_rank(rank: usize) -> Vec<u8> {
    file(&[&[7]], |b| {
        one_object(dense(&vec![1; rank], part("u8", b[0])))
    })
}

/// The usual object over a reference that need not point at its data.
fn w_at(blob: BlobRef) -> Vec<u8> {
    with_object(|o| {
        o.set("shape", vec![CborItem::Uint(blob.length)])
            .set("parts", Fields::new().set("data", part("u8", blob)))
    })
}

fn placement() -> Vec<Case> {
    vec![
        reject("blob-misaligned", "BlobAlignment", misaligned()),
        // Also overlaps the magic; alignment comes first.
        reject(
            "blob-offset-zero",
            "BlobAlignment",
            w_at(BlobRef::new(0, 8)),
        ),
        reject(
            "blob-past-data-region",
            "BlobBounds",
            w_at(BlobRef::new(1 << 20, 16)),
        ),
        // Aligned, and offset + length wraps around u64.
        reject(
            "blob-offset-overflow",
            "BlobBounds",
            w_at(BlobRef::new(u64::MAX - 4095, 8192)),
        ),
        // The data blob after the manifest, ending one byte into the footer.
        reject(
            "blob-overlaps-footer",
            "BlobBounds",
            blob_after_manifest(17),
        ),
        // The data blob after the manifest, ending where the footer starts.
        valid("blob-after-manifest", blob_after_manifest(16)),
    ]
}

/// The usual data stored at 4100 and referenced there.
fn misaligned() -> Vec<u8> {
    let mut f = FileBuilder::new();
    let b = f.blob_at(4100, DATA);
    f.finish(&root(Fields::new().set("w", w_object(b))).sorted().encode())
}

/// The manifest at 4096, then the usual data at 8192 and the footer; the
/// part claims `length` bytes at 8192.
fn blob_after_manifest(length: u64) -> Vec<u8> {
    let blob = BlobRef::new(8192, length);
    let object = dense(&[length], part("u8", blob));
    let manifest = root(Fields::new().set("w", object)).sorted().encode();
    let mut f = FileBuilder::new();
    let m = f.blob(&manifest);
    assert_eq!(f.blob(DATA).offset, 8192);
    f.finish_footer(&Footer::for_manifest(m, &manifest))
}

/// Objects `a` and `b`, dense u8, over `a` and `b` in a file whose data is
/// 12 KiB at 4096.
fn two_refs(a: BlobRef, b: BlobRef) -> Vec<u8> {
    let data: Vec<u8> = (0..12288u32).map(|i| (i % 253) as u8).collect();
    file(&[&data], |_| {
        let objects = Fields::new()
            .set("a", dense(&[a.length], part("u8", a)))
            .set("b", dense(&[b.length], part("u8", b)));
        root(objects).sorted()
    })
}

fn overlap() -> Vec<Case> {
    vec![
        reject(
            "blob-partial-overlap",
            "BlobOverlap",
            two_refs(BlobRef::new(4096, 8192), BlobRef::new(8192, 8192)),
        ),
        reject(
            "blob-contained",
            "BlobOverlap",
            two_refs(BlobRef::new(4096, 8192), BlobRef::new(8192, 16)),
        ),
        reject(
            "blob-same-offset-different-length",
            "BlobOverlap",
            two_refs(BlobRef::new(4096, 16), BlobRef::new(4096, 8)),
        ),
        // The first 8 bytes of the manifest blob, at 8192.
        reject(
            "blob-overlaps-manifest",
            "BlobOverlap",
            two_objects(BlobRef::new(8192, 8)),
        ),
        // Weight tying: two objects, one blob.
        valid("blob-identical-refs", two_objects(W_BLOB)),
        valid("blob-aliases-manifest", aliases_manifest()),
    ]
}

/// The usual object `w` and an object `v` over `blob`.
fn two_objects(blob: BlobRef) -> Vec<u8> {
    let v = dense(&[blob.length], part("u8", blob));
    with_root(|r| {
        r.set(
            "objects",
            Fields::new().set("w", w_object(W_BLOB)).set("v", v),
        )
        .sorted()
    })
}

/// Object `m`, a part whose blob is exactly the manifest's own.
fn aliases_manifest() -> Vec<u8> {
    let mut f = FileBuilder::new();
    f.blob(DATA);
    let manifest = self_referencing(f.next_offset(), |m| {
        let objects = Fields::new()
            .set("w", w_object(W_BLOB))
            .set("m", dense(&[m.length], part("u8", m)));
        root(objects).sorted()
    });
    f.finish(&manifest)
}

fn zero_length() -> Vec<Case> {
    vec![
        // Inside object a's blob [4096, 8192).
        valid(
            "zero-len-inside-blob",
            two_refs(BlobRef::new(4096, 8192), BlobRef::new(8192, 0)),
        ),
        reject("zero-len-at-0", "BlobAlignment", w_at(BlobRef::new(0, 0))),
        reject(
            "zero-len-misaligned",
            "BlobAlignment",
            w_at(BlobRef::new(4100, 0)),
        ),
        reject(
            "zero-len-past-end",
            "BlobBounds",
            w_at(BlobRef::new(1 << 20, 0)),
        ),
        valid("zero-len-at-region-end", zero_len_at_region_end()),
    ]
}

/// A manifest of exactly 4096 bytes at 4096, so the data region ends at
/// 8192, and a zero-length blob at 8192: `offset + 0 <= size - 40` holds.
fn zero_len_at_region_end() -> Vec<u8> {
    let manifest = padded_to(4096, |n| {
        root(Fields::new().set("empty", dense(&[0], part("u8", BlobRef::new(8192, 0)))))
            .set("padding", CborItem::Bytes(vec![0; n]))
            .sorted()
    });
    let f = FileBuilder::new();
    let bytes = f.finish(&manifest);
    assert_eq!(bytes.len(), 8192 + 40);
    bytes
}
