//! The Hurray (`HRRYFILE`) corpus: `hurray/valid/*.hrry` and
//! `hurray/reject/*.hrry`, built by [`writer`], which shares no code with
//! the reader. Rule names are those of `src/error.rs` (`Rule::Hurray*`);
//! where a case could be claimed by two rules, the comment says which the
//! checking order reaches first: header, trailer, index bounds, CRC, index,
//! KV, descriptors in index order, placement.
//!
//! Most reject cases are one edit away from one of two small files: the
//! usual tensor `w` (u8 `[16]`, descriptor at 64, data at 4096), or the
//! empty file (no tensor, no KV) when the edit does not need a tensor.

pub mod descriptors;
pub mod layouts;
pub mod reject;
pub mod sample;
pub mod sparse_paged;
pub mod valid;
pub mod writer;

use super::{Case, Dir, Outcome};
use writer::{dense, tensor, Descriptor, File, Tensor};

/// Every Hurray case.
pub fn all() -> Vec<Case> {
    [
        valid::cases(),
        layouts::cases(),
        reject::cases(),
        descriptors::cases(),
        sparse_paged::cases(),
    ]
    .into_iter()
    .flatten()
    .chain([sample::case()])
    .collect()
}

/// `name` with the `.hrry` extension the table and the file keep.
fn hrry(name: &str) -> &'static str {
    Box::leak(format!("{name}.hrry").into_boxed_str())
}

/// A case that opens and verifies.
fn valid(name: &str, bytes: Vec<u8>) -> Case {
    Case {
        name: hrry(name),
        dir: Dir::HurrayValid,
        bytes,
        open: Outcome::Valid,
        verify: Outcome::Valid,
    }
}

/// A case rejected at open under `rule`.
fn reject(name: &str, rule: &'static str, bytes: Vec<u8>) -> Case {
    Case {
        name: hrry(name),
        dir: Dir::HurrayReject,
        bytes,
        open: Outcome::Reject(rule),
        verify: Outcome::Reject(rule),
    }
}

/// The data of the usual tensor.
const DATA: &[u8] = b"0123456789abcdef";

/// Element type tags (element-types.md) and their widths in bits.
const TYPES: [(&str, u8, u32); 26] = [
    ("f16", 0x01, 16),
    ("bf16", 0x02, 16),
    ("f32", 0x03, 32),
    ("f64", 0x04, 64),
    ("i8", 0x10, 8),
    ("u8", 0x11, 8),
    ("i16", 0x12, 16),
    ("u16", 0x13, 16),
    ("i32", 0x14, 32),
    ("u32", 0x15, 32),
    ("i64", 0x16, 64),
    ("u64", 0x17, 64),
    ("bool", 0x20, 1),
    ("f8-e4m3", 0x40, 8),
    ("f8-e5m2", 0x41, 8),
    ("f8-e8m0", 0x42, 8),
    ("f4-e2m1", 0x43, 4),
    ("f6-e2m3", 0x44, 6),
    ("f6-e3m2", 0x45, 6),
    ("f128", 0x46, 128),
    ("i4", 0x48, 4),
    ("u4", 0x49, 4),
    ("i2", 0x4A, 2),
    ("u2", 0x4B, 2),
    ("c64", 0x50, 64),
    ("c128", 0x51, 128),
];

const F16: u8 = 0x01;
const BF16: u8 = 0x02;
const F32: u8 = 0x03;
const I8: u8 = 0x10;
const U8: u8 = 0x11;

/// The bytes `n` elements of `bits` take (element-types.md § Buffer Size):
/// 6-bit types pack four elements in three bytes.
fn byte_size(bits: u32, n: u64) -> u64 {
    match bits {
        6 => n.div_ceil(4) * 3,
        b if b < 8 => (n * u64::from(b)).div_ceil(8),
        b => n * u64::from(b) / 8,
    }
}

/// `n` elements of `bits` each, packed LSB first, element `i` holding a
/// small non-zero pattern; the unused high bits of the last byte stay zero.
fn packed(bits: u32, n: u64) -> Vec<u8> {
    let mut out = vec![0u8; byte_size(bits, n) as usize];
    let mask = (1u32 << bits) - 1;
    for i in 0..n as usize {
        let v = ((i as u32 * 5 + 1) & mask) << ((i * bits as usize) % 8);
        let at = i * bits as usize / 8;
        out[at] |= v as u8;
        if v > 0xFF {
            out[at + 1] |= (v >> 8) as u8;
        }
    }
    out
}

/// The usual tensor `w`: u8 `[16]`.
fn w() -> Tensor {
    tensor("w", dense(U8, &[16], DATA.to_vec()))
}

/// The usual file: `w` alone.
fn usual() -> File {
    File::new(vec![w()])
}

/// The usual file with `w`'s descriptor edited.
fn with_desc(edit: impl FnOnce(&mut Descriptor)) -> Vec<u8> {
    let mut f = usual();
    edit(&mut f.tensors[0].desc);
    f.bytes()
}

/// One tensor `w` with descriptor `d`.
fn one(d: Descriptor) -> Vec<u8> {
    File::new(vec![tensor("w", d)]).bytes()
}

/// An empty u8 tensor named `name`: its buffer takes no bytes, so a file
/// of such tensors stays about 4 KiB.
fn empty(name: impl AsRef<[u8]>) -> Tensor {
    tensor(name, dense(U8, &[0], Vec::new()))
}

/// `bytes` with `patch` written at `at`.
fn patched(mut bytes: Vec<u8>, at: usize, patch: &[u8]) -> Vec<u8> {
    bytes[at..at + patch.len()].copy_from_slice(patch);
    bytes
}
