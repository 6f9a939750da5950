//! CSF level arrays, block-paged tables and pools, and the quantization of
//! sparse and block-paged tensors: one test per rule, plus the DECISION on
//! per-block block-paged batches shorter than a page.

use super::builder::*;
use super::rules::{accepts, desc_rejects, one};
use crate::error::Rule;

/// A quantization section: length prefix, then the scheme's bytes.
fn quant(scheme: Vec<u8>) -> Vec<u8> {
    [(scheme.len() as u32).to_le_bytes().to_vec(), scheme].concat()
}

/// Per-channel affine, symmetric, f32 scales in buffer `scale`.
fn per_channel(axis: u32, scale: u32) -> Vec<u8> {
    let mut s = vec![0x02, 0x01, 1, 0];
    s.extend(u32s(&[axis, scale, u32::MAX]));
    s.extend([0x03, 0, 0, 0]);
    quant(s)
}

/// Per-block affine, f32 scales in buffer `scale`; asymmetric with int32
/// zero points in buffer `zp` unless it is `u32::MAX`.
fn per_block(axis: u32, block: u32, scale: u32, zp: u32) -> Vec<u8> {
    let mut s = vec![0x03, 0x01, u8::from(zp == u32::MAX), 0];
    s.extend(u32s(&[axis, block, scale, zp]));
    s.extend([0x03, 0, 0, 0]);
    quant(s)
}

/// NF4 (0x04) or MXFP (0x05), scales in buffer `scale`.
fn blocked(tag: u8, axis: u32, block: u32, scale: u32) -> Vec<u8> {
    let mut s = vec![tag, 0x01, 0, 0];
    s.extend(u32s(&[axis, block, scale]));
    quant(s)
}

fn quantized(mut d: D, section: Vec<u8>, params: &[u64]) -> D {
    d.flags |= 1;
    d.sections = section;
    d.handles.extend(params.iter().map(|&n| h(n)));
    d
}

/// f32 CSF `[2, 3, 4]` in `mode_order`, `nnz` values, then the `pos`/`crd`
/// byte sizes of each level. csf.md § Example's arrays (with 3 leaves) are
/// `[2, 2, 3, 3, 4, 3]` entries.
fn csf(nnz: u64, order: [u32; 3], levels: [u64; 6]) -> D {
    let mut d = D::dense(0x03, &[2, 3, 4], nnz * 4);
    d.layout = 0x09;
    d.layout_fields = [u64s(&[nnz]), u32s(&order), vec![0; 8]].concat();
    d.handles.extend(levels.iter().map(|&n| h(n * 8)));
    d
}

const EXAMPLE: [u64; 6] = [2, 2, 3, 3, 4, 3];

#[test]
fn csf_level_arrays_agree_with_nnz_and_each_other() {
    accepts(&one(csf(3, [0, 1, 2], EXAMPLE)).bytes);
    // Empty: pos_0 = [0, 0], pos_1 = pos_2 = [0], no crd.
    accepts(&one(csf(0, [0, 1, 2], [2, 0, 1, 0, 1, 0])).bytes);
    // A dynamic dimension does not hide the levels.
    let mut d = csf(3, [0, 1, 2], [2, 2, 3, 3, 4, 4]);
    d.shape[1] = u64::MAX;
    desc_rejects(d, Rule::HurrayBuffer);
    for (why, nnz, levels) in [
        ("pos_0 is not 2 entries", 3, [3, 2, 3, 3, 4, 3]),
        ("leaf crd is not nnz", 3, [2, 2, 3, 3, 4, 4]),
        ("pos_1 is not crd_0 + 1", 3, [2, 2, 4, 3, 4, 3]),
        ("pos_2 is not crd_1 + 1", 3, [2, 2, 3, 3, 3, 3]),
        ("nnz 0 with a node at level 0", 0, [2, 1, 2, 0, 1, 0]),
        ("nnz > 0 with no node at level 1", 1, [2, 1, 2, 0, 1, 1]),
        (
            "3 children of the root along shape[0] 2",
            3,
            [2, 3, 4, 3, 4, 3],
        ),
        (
            "7 children of 2 parents along shape[1] 3",
            7,
            [2, 2, 3, 7, 8, 7],
        ),
    ] {
        let d = csf(nnz, [0, 1, 2], levels);
        let r = crate::format::hurray::read_file(&one(d).bytes);
        assert_eq!(
            r.err().and_then(|e| e.rule()),
            Some(Rule::HurrayBuffer),
            "{why}"
        );
    }
    // Not whole uint64s.
    let mut d = csf(3, [0, 1, 2], EXAMPLE);
    d.handles[2].size = 12;
    desc_rejects(d, Rule::HurrayBuffer);
    // The bound follows mode_order: level 0 is dimension 2 (4 wide).
    accepts(&one(csf(4, [2, 0, 1], [2, 3, 4, 3, 4, 4])).bytes);
    desc_rejects(csf(5, [2, 0, 1], [2, 5, 6, 5, 6, 5]), Rule::HurrayBuffer);
}

#[test]
fn csf_carries_no_shard() {
    let mut d = csf(3, [0, 1, 2], EXAMPLE);
    d.flags |= 2;
    d.sections = [u64s(&[2, 3, 4]), u64s(&[0, 0, 0])].concat();
    desc_rejects(d, Rule::HurrayShard);
}

/// A statistics section with `mask` and `nnz`, every other field zero.
fn stats(mask: u32, nnz: u64) -> Vec<u8> {
    let mut s = mask.to_le_bytes().to_vec();
    s.extend([0; 4]);
    s.extend(nnz.to_le_bytes());
    s.extend([0; 56]);
    s
}

#[test]
fn sparse_statistics_nnz_matches_the_layout() {
    let with = |mask: u32, nnz: u64| {
        let mut d = csf(3, [0, 1, 2], EXAMPLE);
        d.flags |= 8;
        d.sections = stats(mask, nnz);
        d
    };
    accepts(&one(with(1, 3)).bytes);
    // NNZ_VALID clear: the field is unknown, whatever it says.
    accepts(&one(with(0, 9)).bytes);
    desc_rejects(with(1, 2), Rule::HurrayStats);
    let mut coo = D::dense(0x03, &[3, 4], 12);
    coo.layout = 0x06;
    coo.layout_fields = [u64s(&[3]), vec![0; 8]].concat();
    coo.handles.push(h(48));
    coo.flags |= 8;
    coo.sections = stats(1, 4);
    desc_rejects(coo, Rule::HurrayStats);
}

/// `elem` `[tokens, 2, 4]` (element `bytes` wide) over `pages` pages of 4
/// tokens, `seqs` sequences, a u32 block table of `table` entries.
fn paged(elem: u8, bytes: u64, tokens: u64, pages: u64, seqs: u32, table: u64) -> D {
    let mut f = 4u32.to_le_bytes().to_vec(); // page_size
    f.extend(pages.to_le_bytes());
    f.extend(u32s(&[0, seqs])); // paged_axis, num_seqs
    f.push(0); // kv_role
    f.extend(u32::MAX.to_le_bytes()); // layer_index
    f.extend([0; 7]); // uint32 index type, reserved
    let mut d = D::dense(elem, &[tokens, 2, 4], pages * 4 * 2 * 4 * bytes);
    d.layout = 0x0A;
    d.layout_fields = f;
    d.handles.push(h(table * 4));
    d.handles.push(h((u64::from(seqs) + 1) * 4));
    d
}

#[test]
fn block_paged_table_and_pool_width() {
    accepts(&one(paged(0x01, 2, 5, 2, 1, 2)).bytes);
    accepts(&one(paged(0x01, 2, 0, 2, 0, 0)).bytes);
    // No sequence, yet a page in the table.
    desc_rejects(paged(0x01, 2, 0, 2, 0, 1), Rule::HurrayBuffer);
    // 5 tokens in pages of 4 need 2 logical pages.
    desc_rejects(paged(0x01, 2, 5, 2, 1, 1), Rule::HurrayBuffer);
    // 2^32 pages need a uint64 block table.
    let mut d = paged(0x01, 2, 5, 1, 1, 2);
    d.layout_fields[4..12].copy_from_slice(&(1u64 << 32).to_le_bytes());
    desc_rejects(d, Rule::HurrayLayout);
}

#[test]
fn block_paged_quantization() {
    let u8_pool = || paged(0x11, 1, 5, 2, 1, 2);
    // Per-block along the pages: one f32 scale (and int32 zero point) per
    // page slot, num_pages * page_size = 8.
    accepts(&one(quantized(u8_pool(), per_block(0, 4, 3, u32::MAX), &[32])).bytes);
    accepts(&one(quantized(u8_pool(), per_block(0, 4, 3, 4), &[32, 32])).bytes);
    let q = Rule::HurrayQuant;
    // The logical formula (ceil(5 / 4) * 2 * 4 = 16 scales) does not apply.
    desc_rejects(quantized(u8_pool(), per_block(0, 4, 3, u32::MAX), &[64]), q);
    desc_rejects(quantized(u8_pool(), per_block(0, 4, 3, 4), &[32, 16]), q);
    desc_rejects(quantized(u8_pool(), per_block(1, 2, 3, u32::MAX), &[32]), q);
    desc_rejects(quantized(u8_pool(), per_block(0, 2, 3, u32::MAX), &[32]), q);
    // Per-channel off the paged axis, sized by its channels.
    accepts(&one(quantized(u8_pool(), per_channel(2, 3), &[16])).bytes);
    desc_rejects(quantized(u8_pool(), per_channel(2, 3), &[32]), q);
    desc_rejects(quantized(u8_pool(), per_channel(0, 3), &[20]), q);
    // NF4 and MXFP never along the paged axis.
    let u4_pool = paged(0x49, 1, 16, 4, 1, 4);
    let mut u4_pool = u4_pool;
    u4_pool.handles[0].size = 4 * 4 * 2 * 4 / 2;
    desc_rejects(quantized(u4_pool, blocked(0x04, 0, 8, 3), &[8]), q);
    let f8_pool = paged(0x40, 1, 16, 4, 1, 4);
    desc_rejects(quantized(f8_pool, blocked(0x05, 0, 16, 3), &[1]), q);
}

#[test]
fn decision_block_paged_per_block_may_exceed_a_short_batch() {
    // 3 tokens in one page of 4: block_size is page_size, past shape[0].
    let d = paged(0x11, 1, 3, 1, 1, 1);
    accepts(&one(quantized(d, per_block(0, 4, 3, u32::MAX), &[16])).bytes);
}

#[test]
fn sparse_quantization_parameters_follow_the_logical_shape() {
    // u8 COO [3, 4], 3 non-zeros: per-channel along axis 1 has 4 scales.
    let mut coo = D::dense(0x11, &[3, 4], 3);
    coo.layout = 0x06;
    coo.layout_fields = [u64s(&[3]), vec![0; 8]].concat();
    coo.handles.push(h(48));
    accepts(&one(quantized(coo.clone(), per_channel(1, 2), &[16])).bytes);
    desc_rejects(
        quantized(coo.clone(), per_channel(1, 2), &[12]),
        Rule::HurrayQuant,
    );
    // Per-block along axis 1 in blocks of 2: 3 * 2 blocks.
    accepts(&one(quantized(coo.clone(), per_block(1, 2, 2, 3), &[24, 24])).bytes);
    desc_rejects(
        quantized(coo, per_block(1, 2, 2, u32::MAX), &[12]),
        Rule::HurrayQuant,
    );
    // CSF: parameters after the 2 * rank + 1 layout buffers.
    let mut d = csf(3, [0, 1, 2], EXAMPLE);
    d.elem = 0x10;
    d.handles[0].size = 3;
    accepts(&one(quantized(d.clone(), per_channel(0, 7), &[8])).bytes);
    desc_rejects(quantized(d, per_channel(0, 7), &[12]), Rule::HurrayQuant);
}
