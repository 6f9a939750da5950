//! The legacy block types, 32 values a block: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
//!
//! Quants are stored low nibbles first: byte `l` of the quants holds value
//! `l` in its low nibble and value `l + 16` in its high one. gguf-py
//! computes `d * q` (and `+ m` after it for the `_1` types) in f32, with
//! the quant made an f32 first; the kernels do the same two roundings,
//! never a fused multiply-add.

use super::{f16, le16, le32};

/// Q4_0: f16 `d`, 16 bytes of nibbles; value = d × (q − 8).
pub fn q4_0(b: &[u8; 18], out: &mut [f32; 32]) {
    let d = f16(le16(b, 0));
    for l in 0..16 {
        let x = b[2 + l];
        out[l] = d * f32::from((x & 0x0F) as i8 - 8);
        out[l + 16] = d * f32::from((x >> 4) as i8 - 8);
    }
}

/// Q4_1: f16 `d`, f16 `m`, 16 bytes of nibbles; value = d × q + m.
pub fn q4_1(b: &[u8; 20], out: &mut [f32; 32]) {
    let (d, m) = (f16(le16(b, 0)), f16(le16(b, 2)));
    for l in 0..16 {
        let x = b[4 + l];
        out[l] = d * f32::from(x & 0x0F) + m;
        out[l + 16] = d * f32::from(x >> 4) + m;
    }
}

/// Q5_0: f16 `d`, a u32 of fifth bits (bit `i` for value `i`), 16 bytes of
/// nibbles; value = d × (q − 16).
pub fn q5_0(b: &[u8; 22], out: &mut [f32; 32]) {
    let (d, qh) = (f16(le16(b, 0)), le32(b, 2));
    for l in 0..16 {
        let x = b[6 + l];
        let lo = (x & 0x0F) | (((qh >> l) & 1) as u8) << 4;
        let hi = (x >> 4) | (((qh >> (l + 16)) & 1) as u8) << 4;
        out[l] = d * f32::from(lo as i8 - 16);
        out[l + 16] = d * f32::from(hi as i8 - 16);
    }
}

/// Q5_1: f16 `d`, f16 `m`, a u32 of fifth bits, 16 bytes of nibbles;
/// value = d × q + m.
pub fn q5_1(b: &[u8; 24], out: &mut [f32; 32]) {
    let (d, m, qh) = (f16(le16(b, 0)), f16(le16(b, 2)), le32(b, 4));
    for l in 0..16 {
        let x = b[8 + l];
        let lo = (x & 0x0F) | (((qh >> l) & 1) as u8) << 4;
        let hi = (x >> 4) | (((qh >> (l + 16)) & 1) as u8) << 4;
        out[l] = d * f32::from(lo) + m;
        out[l + 16] = d * f32::from(hi) + m;
    }
}

/// Q8_0: f16 `d`, 32 signed bytes; value = q × d.
pub fn q8_0(b: &[u8; 34], out: &mut [f32; 32]) {
    let d = f16(le16(b, 0));
    for (o, &x) in out.iter_mut().zip(&b[2..]) {
        *o = f32::from(x as i8) * d;
    }
}

/// Q8_1 (ggml's `block_q8_1`): f16 `d`, f16 `s` (d × the sum of the quants,
/// for dot products; not a value), 32 signed bytes; value = q × d. gguf-py
/// has no dequantizer for it: this is ggml's definition of the block.
pub fn q8_1(b: &[u8; 36], out: &mut [f32; 32]) {
    let d = f16(le16(b, 0));
    for (o, &x) in out.iter_mut().zip(&b[4..]) {
        *o = f32::from(x as i8) * d;
    }
}
