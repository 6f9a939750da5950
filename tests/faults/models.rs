//! The model files the fault tests mount, built in code with the corpus
//! writer (`tests/corpus/builder.rs`), each with the bytes a reader must see.
//!
//! Each builder returns the file's bytes and what is needed to check reads
//! of it; the tests write them into their own temporary directories.

use crate::builder::{
    dense, object, part, root, sha256_digest, xxh3_digest, zstd_frame, BlobRef, Fields,
    FileBuilder, Footer, Lcg, SeekEntry, ALIGN,
};

/// The encoding profile of compressed parts.
pub const ZSTD: &str = "zt.zstd-seekable/1";
/// The largest frame the profile allows, in decoded bytes.
pub const FRAME_LEN: u64 = 16 << 20;

/// A model whose one object `blob` is a dense u8 vector of random bytes,
/// none of them zero, so a zero read back is always a wrong byte.
pub struct RawModel {
    pub bytes: Vec<u8>,
    /// The part's bytes.
    pub data: Vec<u8>,
    /// Where the part lies in the file.
    pub blob: BlobRef,
}

/// [`RawModel`] of `len` bytes, from `seed`.
pub fn raw_model(len: usize, seed: u64) -> RawModel {
    let mut rng = Lcg::new(seed);
    let data: Vec<u8> = (0..len).map(|_| 1 + (rng.next_u32() % 255) as u8).collect();
    let mut f = FileBuilder::new();
    let blob = f.blob(&data);
    let p = part("u8", blob).set("digest", xxh3_digest(&data));
    let manifest = root(Fields::new().set("blob", dense(&[len as u64], p)))
        .sorted()
        .encode();
    RawModel {
        bytes: f.finish(&manifest),
        data,
        blob,
    }
}

/// `n` f32 values 0.5, 1.0, 1.5, ... as little-endian bytes.
pub fn f32_ramp(n: usize) -> Vec<u8> {
    (1..=n)
        .flat_map(|i| (i as f32 * 0.5).to_le_bytes())
        .collect()
}

/// A model whose object `slow` is a `bool` vector stored as
/// `zt.zstd-seekable/1` in `frames` frames of [`FRAME_LEN`] zero bytes
/// (each compresses to a few hundred bytes), beside a small dense f32
/// object `small` (its bytes are [`f32_ramp`]`(256)`). A reader that checks
/// the bool content rule over the whole part before the first byte decodes
/// `frames` × 16 MiB; the file stays a few hundred bytes per frame.
pub fn slow_bool_model(frames: u32) -> Vec<u8> {
    let frame = zstd_frame(&vec![0u8; FRAME_LEN as usize]);
    let entry = SeekEntry {
        compressed: frame.len() as u32,
        decompressed: FRAME_LEN as u32,
        checksum: 0,
    };
    let mut stored = Vec::with_capacity(frame.len() * frames as usize + 8 * frames as usize + 17);
    for _ in 0..frames {
        stored.extend_from_slice(&frame);
    }
    stored.extend_from_slice(&crate::builder::seek_table_with(
        &vec![entry; frames as usize],
        0,
    ));
    let decoded = u64::from(frames) * FRAME_LEN;
    let small = f32_ramp(256);
    let mut f = FileBuilder::new();
    let (s, b) = (f.blob(&small), f.blob(&stored));
    let slow = part("u8", b)
        .set("type", "bool")
        .set("encoding", ZSTD)
        .set("decoded_length", decoded);
    let small_part = part("f32", s).set("digest", xxh3_digest(&small));
    let objects = Fields::new()
        .set("slow", dense(&[decoded], slow))
        .set("small", dense(&[256], small_part));
    f.finish(&root(objects).sorted().encode())
}

/// A `zt.sparse_csr/1` object `w` of f32 with a large dense view and few
/// stored elements: `per_row` values in each row, at columns that move
/// with the row so that they touch many pages of the view.
pub struct SparseModel {
    pub bytes: Vec<u8>,
    pub rows: u64,
    pub cols: u64,
    pub per_row: u64,
}

/// Bytes per element of the view (f32).
const F32: u64 = 4;

impl SparseModel {
    /// A CSR model of `rows` × `cols` with `per_row` values a row.
    pub fn new(rows: u64, cols: u64, per_row: u64) -> SparseModel {
        let mut m = SparseModel {
            bytes: Vec::new(),
            rows,
            cols,
            per_row,
        };
        let (mut indices, mut values, mut indptr) = (Vec::new(), Vec::new(), vec![0u32]);
        for r in 0..rows {
            for k in 0..per_row {
                indices.extend_from_slice(&(m.column(r, k) as u32).to_le_bytes());
                values.extend_from_slice(&m.value(r, k).to_le_bytes());
            }
            indptr.push(((r + 1) * per_row) as u32);
        }
        let indptr: Vec<u8> = indptr.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut f = FileBuilder::new();
        let blobs = [&indices, &indptr, &values].map(|b| f.blob(b));
        let parts = [("indices", "u32"), ("indptr", "u32"), ("values", "f32")]
            .into_iter()
            .zip(blobs.iter().zip([&indices, &indptr, &values]))
            .fold(Fields::new(), |acc, ((name, dtype), (blob, data))| {
                acc.set(name, part(dtype, *blob).set("digest", xxh3_digest(data)))
            });
        let w = object(&[rows, cols], "zt.sparse_csr/1", parts);
        m.bytes = f.finish(&root(Fields::new().set("w", w)).sorted().encode());
        m
    }

    /// Size of the dense view in bytes.
    pub fn view_len(&self) -> u64 {
        self.rows * self.cols * F32
    }

    /// The column of the `k`-th value of row `r`: strictly increasing in
    /// `k`, spread over the row, shifted by the row.
    fn column(&self, r: u64, k: u64) -> u64 {
        let stride = self.cols / self.per_row;
        k * stride + (r * 7) % (stride / 2)
    }

    /// The `k`-th value of row `r`: distinct, exact and never zero.
    fn value(&self, r: u64, k: u64) -> f32 {
        (r * self.per_row + k + 1) as f32
    }

    /// The view's bytes in `[offset, offset + len)`, clipped to the view.
    pub fn expected(&self, offset: u64, len: u64) -> Vec<u8> {
        let end = (offset + len).min(self.view_len());
        let offset = offset.min(end);
        let mut out = vec![0u8; (end - offset) as usize];
        let row_len = self.cols * F32;
        for r in offset / row_len..end.div_ceil(row_len) {
            for k in 0..self.per_row {
                let at = r * row_len + self.column(r, k) * F32;
                let bytes = self.value(r, k).to_le_bytes();
                for (i, b) in bytes.iter().enumerate() {
                    let pos = at + i as u64;
                    if (offset..end).contains(&pos) {
                        out[(pos - offset) as usize] = *b;
                    }
                }
            }
        }
        out
    }
}

/// A root `model.zt` with a local f32 vector `norm` and an f32 vector
/// `layers.0.weight` in data shard `00001` (declared by size and sha256),
/// the true shard, and an impostor: a valid data shard of exactly the same
/// size whose blob holds other bytes.
pub struct Family {
    pub root: Vec<u8>,
    pub shard: Vec<u8>,
    pub impostor: Vec<u8>,
    /// The bytes of `norm`.
    pub local: Vec<u8>,
    /// The bytes of `layers.0.weight` in the true shard.
    pub foreign: Vec<u8>,
    /// The bytes at the same place in the impostor.
    pub impostor_foreign: Vec<u8>,
}

/// The object served from the shard.
pub const FOREIGN: &str = "layers.0.weight";
/// The object stored in the root.
pub const LOCAL: &str = "norm";
/// The shard's name in the root's table.
pub const SHARD: &str = "00001";

/// A data shard holding `data` in its one blob.
fn data_shard(data: &[u8]) -> (Vec<u8>, BlobRef) {
    let mut f = FileBuilder::new();
    let blob = f.blob(data);
    (f.finish_footer(&Footer::data_shard()), blob)
}

/// The [`Family`], from `seed`.
pub fn family(seed: u64) -> Family {
    let mut rng = Lcg::new(seed);
    let mut f32s = |n: usize| -> Vec<u8> {
        (0..n)
            .flat_map(|_| ((rng.next_u32() % 2001) as f32 / 1000.0 - 1.0).to_le_bytes())
            .collect()
    };
    let (foreign, impostor_foreign, local) = (f32s(256), f32s(256), f32s(16));
    let (shard, blob) = data_shard(&foreign);
    let (impostor, other) = data_shard(&impostor_foreign);
    assert_eq!((shard.len(), blob), (impostor.len(), other), "twin shards");
    assert_eq!(blob.offset, ALIGN);
    let remote = part("f32", blob)
        .set("digest", xxh3_digest(&foreign))
        .set("shard", SHARD);
    let mut f = FileBuilder::new();
    let here = f.blob(&local);
    let objects = Fields::new().set(FOREIGN, dense(&[256], remote)).set(
        LOCAL,
        dense(&[16], part("f32", here).set("digest", xxh3_digest(&local))),
    );
    let table = Fields::new().set(
        SHARD,
        Fields::new()
            .set("size", shard.len() as u64)
            .set("digest", sha256_digest(&shard)),
    );
    let root = f.finish(&root(objects).set("shards", table).sorted().encode());
    assert_ne!(root.len(), shard.len(), "a root the size of its shard");
    Family {
        root,
        shard,
        impostor,
        local,
        foreign,
        impostor_foreign,
    }
}
