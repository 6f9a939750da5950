//! One test (at least) per descriptor rule, plus the descriptor DECISIONs
//! of the module doc.

use super::builder::*;
use super::rules::{accepts, desc_rejects, one, rejects};
use crate::error::Rule;

#[test]
fn descriptor_header() {
    let mut f = one(D::f32x4());
    let p = f.desc(0, 0);
    f.bytes[p] = b'X';
    rejects(&f.bytes, Rule::HurrayDescriptor);
    let mut d = D::f32x4();
    d.major = 2;
    desc_rejects(d, Rule::HurrayDescriptor);
    let mut d = D::f32x4();
    d.flags = 1 << 5;
    desc_rejects(d, Rule::HurrayDescriptor);
    let d = D::dense(0x03, &[1; 65], 4);
    desc_rejects(d, Rule::HurrayDescriptor);
    let mut d = D::f32x4();
    d.trailing = vec![0; 8];
    desc_rejects(d, Rule::HurrayDescriptor);
    // Fields that run past the declared length.
    let mut d = D::f32x4();
    d.length = Some(40);
    let mut f = one(d);
    f.bytes.truncate(f.bytes.len()); // index says 40 too: the builder wrote enc.len()
    rejects(&f.bytes, Rule::HurrayIndex);
}

#[test]
fn decision_higher_descriptor_minor_skips_trailing_bytes() {
    let mut d = D::f32x4();
    d.minor = 1;
    d.trailing = vec![7; 8];
    accepts(&one(d).bytes);
}

#[test]
fn element_types() {
    for tag in [0x00, 0x05, 0x47, 0x80, 0xEF, 0xFF] {
        desc_rejects(D::dense(tag, &[2], 2), Rule::HurrayType);
    }
    // An extension tag needs its section, and only it may have one.
    desc_rejects(D::dense(0xF0, &[2], 2), Rule::HurrayType);
    let ext = |bits: u32, pack: u8| {
        let mut s = bits.to_le_bytes().to_vec();
        s.push(pack);
        s.extend_from_slice(&[0; 15]);
        s
    };
    let mut d = D::dense(0xF0, &[3], 2);
    d.flags = 4;
    d.sections = ext(4, 2);
    accepts(&one(d.clone()).bytes);
    d.sections = ext(3, 1);
    desc_rejects(d.clone(), Rule::HurrayType);
    d.sections = ext(16, 2);
    desc_rejects(d.clone(), Rule::HurrayType);
    let mut d = D::f32x4();
    d.flags = 4;
    d.sections = ext(32, 1);
    desc_rejects(d, Rule::HurrayType);
}

#[test]
fn layouts() {
    let mut d = D::f32x4();
    d.layout = 0x0C;
    desc_rejects(d, Rule::HurrayLayout);
    let mut d = D::dense(0x03, &[], 4);
    d.layout = 2;
    desc_rejects(d, Rule::HurrayLayout);
    // Morton bits, Hilbert shape, CSR rank, CSF permutation.
    let mut d = D::f32x4();
    d.layout = 5;
    d.layout_fields = u32s(&[1, 0]);
    desc_rejects(d, Rule::HurrayLayout);
    let mut d = D::dense(0x03, &[4, 2], 64);
    d.layout = 0x40;
    d.layout_fields = u32s(&[2, 2]);
    desc_rejects(d, Rule::HurrayLayout);
    let mut d = D::dense(0x03, &[2, 2, 2], 0);
    d.layout = 7;
    d.layout_fields = vec![0; 16];
    d.handles = vec![h(0), h(0), h(24)];
    desc_rejects(d, Rule::HurrayLayout);
    let mut d = D::dense(0x03, &[2, 2, 2], 0);
    d.layout = 9;
    d.layout_fields = [u64s(&[0]), u32s(&[0, 0, 2]), vec![0; 8]].concat();
    // An empty CSF: pos_0 = [0, 0], every other pos_L = [0] (csf.md).
    d.handles = [0, 16, 0, 8, 0, 8, 0].map(h).to_vec();
    desc_rejects(d.clone(), Rule::HurrayLayout);
    d.layout_fields = [u64s(&[0]), u32s(&[2, 0, 1]), vec![0; 8]].concat();
    accepts(&one(d).bytes);
    // Buffer count for the layout.
    let mut d = D::f32x4();
    d.handles.push(h(0));
    desc_rejects(d, Rule::HurrayLayout);
}

/// Tiled fields: tile shape, outer, inner, reserved, then nested levels.
fn tiled(levels: usize) -> Vec<u8> {
    let mut f = Vec::new();
    for l in 0..levels {
        f.extend(u64s(&[1, 1]));
        f.extend([1, if l + 1 < levels { 4 } else { 1 }, 0, 0]);
    }
    f
}

#[test]
fn tiled_nesting_is_limited_to_8() {
    let mut d = D::f32x4();
    d.layout = 4;
    d.layout_fields = tiled(8);
    accepts(&one(d.clone()).bytes);
    d.layout_fields = tiled(9);
    desc_rejects(d, Rule::HurrayLayout);
}

#[test]
fn buffer_handles() {
    let cases: Vec<fn(&mut H)> = vec![
        |h| h.align = 48,
        |h| h.align = 32,
        |h| h.device = 0xFF,
        |h| h.device = 0x09,
        |h| h.sync = 1,
        |h| h.class = 3,
        |h| h.class = 4,
        |h| h.class = 0xF0,
        |h| h.reserved = 1,
    ];
    for c in cases {
        let mut d = D::f32x4();
        c(&mut d.handles[0]);
        desc_rejects(d, Rule::HurrayBuffer);
    }
    // An empty buffer may declare any power of two.
    let mut d = D::dense(0x03, &[0], 0);
    d.handles[0].align = 1;
    accepts(&one(d).bytes);
    // Dense sizes and byte_offset.
    desc_rejects(D::dense(0x03, &[2, 2], 17), Rule::HurrayBuffer);
    desc_rejects(D::dense(0x48, &[5], 2), Rule::HurrayBuffer);
    accepts(&one(D::dense(0x48, &[5], 3)).bytes);
    accepts(&one(D::dense(0x44, &[5], 6)).bytes);
    let mut d = D::dense(0x03, &[2], 8);
    d.byte_offset = 9;
    desc_rejects(d, Rule::HurrayBuffer);
    let mut d = D::dense(0x03, &[2], 12);
    d.byte_offset = 4;
    accepts(&one(d).bytes);
}

#[test]
fn strided_extent_is_a_minimum() {
    let mut d = D::dense(0x03, &[3, 4], 48);
    d.layout = 3;
    d.layout_fields = u64s(&[4, 1]);
    accepts(&one(d.clone()).bytes);
    d.handles[0].size = 100;
    accepts(&one(d.clone()).bytes);
    d.handles[0].size = 44;
    desc_rejects(d.clone(), Rule::HurrayBuffer);
    // A negative stride needs byte_offset room before element 0.
    d.layout_fields = u64s(&[(-4i64) as u64, 1]);
    d.handles[0].size = 48;
    desc_rejects(d.clone(), Rule::HurrayBuffer);
    d.byte_offset = 32;
    accepts(&one(d).bytes);
}

/// A quantization section: length prefix and the descriptor bytes.
fn quant(bytes: &[u8]) -> Vec<u8> {
    let mut s = (bytes.len() as u32).to_le_bytes().to_vec();
    s.extend_from_slice(bytes);
    s
}

fn per_channel(axis: u32, scale: u32, zp: u32, flags: u16) -> Vec<u8> {
    let mut q = vec![2, 1];
    q.extend(flags.to_le_bytes());
    q.extend(u32s(&[axis, scale, zp]));
    q.extend([3, 0, 0, 0]);
    q
}

#[test]
fn quantization() {
    let mut d = D::dense(0x10, &[2, 3], 6);
    d.flags = 1;
    d.handles.push(h(8));
    d.sections = quant(&per_channel(0, 1, u32::MAX, 1));
    accepts(&one(d.clone()).bytes);
    for q in [
        per_channel(2, 1, u32::MAX, 1),
        per_channel(0, 0, u32::MAX, 1),
        per_channel(0, 2, u32::MAX, 1),
        per_channel(0, 1, 1, 1),
        per_channel(0, 1, u32::MAX, 3),
    ] {
        d.sections = quant(&q);
        desc_rejects(d.clone(), Rule::HurrayQuant);
    }
    d.handles[1].size = 12;
    d.sections = quant(&per_channel(0, 1, u32::MAX, 1));
    desc_rejects(d.clone(), Rule::HurrayQuant);
    // Scheme tag, version, storage type; MXFP block size.
    let mut d = D::dense(0x10, &[4], 4);
    d.flags = 1;
    d.sections = quant(&[6, 1, 0, 0]);
    desc_rejects(d.clone(), Rule::HurrayQuant);
    let mut pt = vec![1, 2, 0, 0];
    pt.extend(1.0f32.to_le_bytes());
    pt.extend([0; 8]);
    d.sections = quant(&pt);
    desc_rejects(d.clone(), Rule::HurrayQuant);
    pt[1] = 1;
    d.sections = quant(&pt);
    accepts(&one(d.clone()).bytes);
    pt[8] = 200; // zero point 200 outside int8
    d.sections = quant(&pt);
    desc_rejects(d.clone(), Rule::HurrayQuant);
    let mut mx = vec![5, 1, 0, 0];
    mx.extend(u32s(&[0, 8, 1]));
    let mut d = D::dense(0x40, &[32], 32);
    d.flags = 1;
    d.handles.push(h(2));
    d.sections = quant(&mx);
    desc_rejects(d.clone(), Rule::HurrayQuant);
    mx[8] = 16;
    d.sections = quant(&mx);
    accepts(&one(d).bytes);
}

#[test]
fn decision_per_block_symmetric_ignores_the_zero_point_index() {
    let mut q = vec![3, 1, 1, 0];
    q.extend(u32s(&[1, 16, 1, 7]));
    q.extend([3, 0, 0, 0]);
    let mut d = D::dense(0x49, &[2, 20], 32);
    d.flags = 1;
    d.handles.push(h(16));
    d.sections = quant(&q);
    accepts(&one(d).bytes);
}

#[test]
fn shard() {
    let mut d = D::f32x4();
    d.flags = 2;
    d.sections = u64s(&[4, 2, 2, 0]);
    accepts(&one(d.clone()).bytes);
    d.sections = u64s(&[4, 2, 3, 0]);
    desc_rejects(d.clone(), Rule::HurrayShard);
    d.sections = u64s(&[4, 2, u64::MAX, 0]);
    desc_rejects(d, Rule::HurrayShard);
}

fn stats(mask: u32, stddev: f64, nm: [u8; 2]) -> Vec<u8> {
    let mut s = u32s(&[mask, 0]);
    s.extend([0u8; 48]);
    s.extend(stddev.to_le_bytes());
    s.extend([nm[0], nm[1], 0, 0, 0, 0, 0, 0]);
    s
}

#[test]
fn statistics() {
    let mut d = D::f32x4();
    d.flags = 8;
    d.sections = stats(0b11_1111, 1.0, [2, 4]);
    accepts(&one(d.clone()).bytes);
    for s in [
        stats(1 << 6, 1.0, [2, 4]),
        stats(8, -1.0, [0, 0]),
        stats(8, f64::NAN, [0, 0]),
        stats(16, 0.0, [4, 2]),
    ] {
        d.sections = s;
        desc_rejects(d.clone(), Rule::HurrayStats);
    }
    // Fields whose bit is clear are not judged.
    d.sections = stats(0, -1.0, [4, 2]);
    accepts(&one(d).bytes);
}

#[test]
fn element_count_overflow() {
    desc_rejects(D::dense(0x03, &[1 << 32, 1 << 32], 0), Rule::HurrayShape);
    desc_rejects(D::dense(0x03, &[1 << 62], 0), Rule::HurrayShape);
    // A zero dimension makes any shape empty.
    accepts(&one(D::dense(0x03, &[0, u64::MAX - 1, 1 << 40], 0)).bytes);
    // A dynamic dimension is not computed.
    accepts(&one(D::dense(0x03, &[u64::MAX, 2], 8)).bytes);
}
