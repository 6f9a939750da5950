//! CSF level arrays, block-paged tables and pools, and the quantization of
//! sparse and block-paged tensors (layouts/csf.md, layouts/block-paged.md,
//! quantization/).
//!
//! Every case here breaks a rule of one descriptor, which the reader checks
//! before it places any buffer, so the buffers are declared but not written
//! ([`declared`]): a CSF tensor's seven buffers would otherwise take seven
//! 4 KiB alignment slots per case. The missing bytes would be HurrayBounds,
//! a later check.

use super::valid::{blocked, per_block, per_channel, quant};
use super::writer::{
    dense, f32s, u32s, u64s, Descriptor, HAS_QUANTIZATION, HAS_SHARD, HAS_STATISTICS,
};
use super::{one, reject, Case, F16, F32, I8, U8};

const BUFFER: &str = "HurrayBuffer";
const QUANT: &str = "HurrayQuant";

pub fn cases() -> Vec<Case> {
    let example = || csf(3, &EXAMPLE);
    let shape_past = csf(
        3,
        &[
            &[0, 3],
            &[0, 1, 2],
            &[0, 1, 2, 3],
            &[0, 1, 2],
            &[0, 1, 2, 3],
            &[0, 1, 2],
        ],
    );
    vec![
        reject(
            "csf-pos0-three-entries",
            BUFFER,
            declared(csf(3, &with_level(0, &[0, 2, 2]))),
        ),
        reject(
            "csf-leaf-crd-not-nnz",
            BUFFER,
            declared(csf(3, &with_level(5, &[3, 0, 2, 1]))),
        ),
        reject(
            "csf-pos-not-parents-plus-one",
            BUFFER,
            declared(csf(3, &with_level(2, &[0, 2, 3, 3]))),
        ),
        reject(
            "csf-crd-not-whole-u64",
            BUFFER,
            declared(with_buffer_size(example(), 2, 12)),
        ),
        reject(
            "csf-empty-with-a-node",
            BUFFER,
            declared(csf(0, &[&[0, 1], &[0], &[0, 0], &[], &[0], &[]])),
        ),
        reject(
            "csf-level-without-nodes",
            BUFFER,
            declared(csf(1, &[&[0, 1], &[0], &[0, 0], &[], &[0], &[1]])),
        ),
        // Three distinct children of the root along shape[0] = 2.
        reject("csf-level-past-shape", BUFFER, declared(shape_past)),
        reject(
            "csf-shard",
            "HurrayShard",
            declared(example().section(HAS_SHARD, u64s(&[2, 3, 4, 0, 0, 0]))),
        ),
        reject(
            "sparse-stats-nnz-mismatch",
            "HurrayStats",
            declared(example().section(HAS_STATISTICS, nnz_stats(4))),
        ),
        reject(
            "sparse-quant-scale-size",
            QUANT,
            declared(quantized_csf(f32s(&[0.5, 0.25, 1.0]))),
        ),
        reject(
            "block-paged-table-without-sequences",
            BUFFER,
            declared(paged(U8, 0, 0, u32s(&[1]))),
        ),
        reject(
            "block-paged-table-short",
            BUFFER,
            declared(paged(U8, 5, 1, u32s(&[1]))),
        ),
        reject(
            "block-paged-u32-table-past-2e32-pages",
            "HurrayLayout",
            declared(paged_pages(1 << 32)),
        ),
        reject(
            "block-paged-per-block-axis-1",
            QUANT,
            declared(paged_quant(per_block(1, 4), 8)),
        ),
        reject(
            "block-paged-per-block-not-page-size",
            QUANT,
            declared(paged_quant(per_block(0, 2), 8)),
        ),
        // The logical formula, ceil(5 / 4) * 2 * 4 = 16 scales, not the 8
        // page slots.
        reject(
            "block-paged-per-block-scales-logical",
            QUANT,
            declared(paged_quant(per_block(0, 4), 16)),
        ),
        reject(
            "block-paged-per-channel-axis-0",
            QUANT,
            declared(paged_quant(per_channel(0), 5)),
        ),
        reject(
            "block-paged-mxfp-axis-0",
            QUANT,
            declared(
                paged(0x40, 16, 1, u32s(&[0, 1, 0, 1]))
                    .with_buffer(vec![127; 32])
                    .section(HAS_QUANTIZATION, scales_in(blocked(0x05, 0, 16), 3)),
            ),
        ),
    ]
}

/// `d` with its buffers declared but not written.
fn declared(mut d: Descriptor) -> Vec<u8> {
    for b in &mut d.buffers {
        b.data.clear();
    }
    one(d)
}

fn with_buffer_size(mut d: Descriptor, i: usize, size: u64) -> Descriptor {
    d.buffers[i].size = size;
    d
}

/// csf.md § Example with 3 leaves: `(pos, crd)` of levels 0, 1, 2.
const EXAMPLE: [&[u64]; 6] = [
    &[0, 2],
    &[0, 1],
    &[0, 2, 3],
    &[0, 2, 1],
    &[0, 1, 2, 3],
    &[3, 0, 2],
];

/// [`EXAMPLE`] with array `k` (0 = `pos_0`) replaced.
fn with_level(k: usize, array: &'static [u64]) -> [&'static [u64]; 6] {
    let mut a = EXAMPLE;
    a[k] = array;
    a
}

/// CSF fields: `nnz`, identity mode order, reserved.
fn csf_fields(nnz: u64) -> Vec<u8> {
    [nnz.to_le_bytes().to_vec(), u32s(&[0, 1, 2]), vec![0; 8]].concat()
}

/// f32 CSF `[2, 3, 4]` of `nnz` leaves over `arrays` (pos_0, crd_0, ...).
fn csf(nnz: u64, arrays: &[&[u64]; 6]) -> Descriptor {
    let values = f32s(&vec![1.0; nnz as usize]);
    let mut d = dense(F32, &[2, 3, 4], values).layout(0x09, csf_fields(nnz));
    for a in arrays {
        d = d.with_buffer(u64s(a));
    }
    d
}

/// A statistics section marking only `nnz` valid.
fn nnz_stats(nnz: u64) -> Vec<u8> {
    let mut s = 1u32.to_le_bytes().to_vec();
    s.extend([0; 4]);
    s.extend(nnz.to_le_bytes());
    s.extend([0; 56]);
    s
}

/// i8 CSF per-channel along axis 0 (shape 2): two scales needed.
fn quantized_csf(scales: Vec<u8>) -> Descriptor {
    let mut d = csf(3, &EXAMPLE);
    d.type_tag = I8;
    d.buffers[0] = super::writer::buffer(vec![1, 2, 3]);
    let mut q = vec![0x02, 0x01, 1, 0];
    q.extend(u32s(&[0, 7, u32::MAX]));
    q.extend([0x03, 0, 0, 0]);
    d.with_buffer(scales).section(HAS_QUANTIZATION, quant(&q))
}

/// `[tokens, 2, 4]` of `elem` over 2 pages of 4 tokens (4 for f8), `seqs`
/// sequences, the u32 block table `table`.
fn paged(elem: u8, tokens: u64, seqs: u32, table: Vec<u8>) -> Descriptor {
    let pages: u64 = if elem == 0x40 { 4 } else { 2 };
    let mut f = 4u32.to_le_bytes().to_vec(); // page_size
    f.extend(pages.to_le_bytes());
    f.extend(u32s(&[0, seqs])); // paged_axis, num_seqs
    f.push(1); // kv_role: value
    f.extend(u32::MAX.to_le_bytes()); // not layer-scoped
    f.extend([0; 7]); // uint32 index type, reserved
    let width = if elem == F16 { 2 } else { 1 };
    let seq_ptr: Vec<u32> = (0..=seqs).map(|s| s * (table.len() as u32 / 4)).collect();
    dense(
        elem,
        &[tokens, 2, 4],
        vec![0; (pages * 4 * 8 * width) as usize],
    )
    .layout(0x0A, f)
    .with_buffer(table)
    .with_buffer(u32s(&seq_ptr))
}

/// f16 `[5, 2, 4]` claiming `pages` pages with a uint32 block table.
fn paged_pages(pages: u64) -> Descriptor {
    let mut d = paged(F16, 5, 1, u32s(&[1, 0]));
    d.layout[4..12].copy_from_slice(&pages.to_le_bytes());
    d
}

/// u8 `[5, 2, 4]` in 2 pages, quantized by `section` with `scales` f32
/// scales in buffer 3 (per-block: 8 page slots; per-channel axis 0: 5).
fn paged_quant(section: Vec<u8>, scales: usize) -> Descriptor {
    paged(U8, 5, 1, u32s(&[1, 0]))
        .with_buffer(f32s(&vec![0.5; scales]))
        .section(HAS_QUANTIZATION, scales_in(section, 3))
}

/// A quantization section (length prefix first) whose scheme named scale
/// buffer 1 (as `valid`'s builders do), naming `index` instead.
fn scales_in(mut section: Vec<u8>, index: u32) -> Vec<u8> {
    // scale_buffer_index: scheme offset 8 for per-channel, 12 otherwise.
    let at = 4 + if section[4] == 0x02 { 8 } else { 12 };
    section[at..at + 4].copy_from_slice(&index.to_le_bytes());
    section
}
