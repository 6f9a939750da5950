//! The k-quants, 256 values a block: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
//!
//! Each block has an f16 super-scale (and an f16 super-min for Q2_K, Q4_K,
//! Q5_K) and small integer sub-scales for groups of 16 or 32 values. As in
//! gguf-py, the group's scale `d × sc` (and its min `dmin × m`) is rounded
//! to f32 first, then value = scale × q (− min), each step an f32 rounding.
//! The quant bit layouts follow gguf-py's reshapes; the comments give the
//! value index each loop writes.

use super::f16;
use super::le16;

/// Q2_K: 16 bytes of 4-bit scale and 4-bit min per 16 values, 64 bytes of
/// 2-bit quants, f16 `d`, f16 `dmin`.
pub fn q2_k(b: &[u8; 84], out: &mut [f32; 256]) {
    let (d, dmin) = (f16(le16(b, 80)), f16(le16(b, 82)));
    let mut dl = [0f32; 16];
    let mut ml = [0f32; 16];
    for g in 0..16 {
        dl[g] = d * f32::from(b[g] & 0x0F);
        ml[g] = dmin * f32::from(b[g] >> 4);
    }
    // Value j·128 + s·32 + l is bits 2s of quant byte 32j + l.
    for j in 0..2 {
        for s in 0..4 {
            for l in 0..32 {
                let v = j * 128 + s * 32 + l;
                let q = f32::from((b[16 + 32 * j + l] >> (2 * s)) & 3);
                out[v] = dl[v / 16] * q - ml[v / 16];
            }
        }
    }
}

/// Q3_K: 32 bytes of high bits, 64 bytes of 2-bit low quants, 12 bytes of
/// 6-bit signed scales per 16 values, f16 `d`.
pub fn q3_k(b: &[u8; 110], out: &mut [f32; 256]) {
    let d = f16(le16(b, 108));
    let sc = &b[96..108];
    let mut dl = [0f32; 16];
    for (i, x) in dl.iter_mut().enumerate() {
        // Low nibbles of bytes 0..8 then their high nibbles; the top two
        // bits from bytes 8..12, two bits at a time.
        let low = if i < 8 { sc[i] & 0x0F } else { sc[i - 8] >> 4 };
        let high = (sc[8 + i % 4] >> (2 * (i / 4))) & 3;
        *x = d * f32::from((low | high << 4) as i8 - 32);
    }
    // Value j·128 + s·32 + l: low bits 2s of byte 32j + l, high bit 4j + s
    // of mask byte l; a clear high bit subtracts 4.
    for j in 0..2 {
        for s in 0..4 {
            for l in 0..32 {
                let v = j * 128 + s * 32 + l;
                let low = ((b[32 + 32 * j + l] >> (2 * s)) & 3) as i8;
                let high = (b[l] >> (4 * j + s)) & 1;
                let q = low - if high == 0 { 4 } else { 0 };
                out[v] = dl[v / 16] * f32::from(q);
            }
        }
    }
}

/// The eight 6-bit scales and mins of Q4_K and Q5_K, packed in 12 bytes.
fn scale_min(s: &[u8]) -> ([u8; 8], [u8; 8]) {
    let (mut sc, mut mn) = ([0u8; 8], [0u8; 8]);
    if let Some(s) = s.get(..12) {
        for k in 0..4 {
            sc[k] = s[k] & 0x3F;
            mn[k] = s[4 + k] & 0x3F;
            sc[4 + k] = (s[8 + k] & 0x0F) | ((s[k] >> 2) & 0x30);
            mn[4 + k] = (s[8 + k] >> 4) | ((s[4 + k] >> 2) & 0x30);
        }
    }
    (sc, mn)
}

/// The scales `d × sc` and mins `dmin × m` of the eight groups of 32.
fn group_scales(b: &[u8]) -> ([f32; 8], [f32; 8]) {
    let (d, dmin) = (f16(le16(b, 0)), f16(le16(b, 2)));
    let (sc, mn) = scale_min(b.get(4..16).unwrap_or_default());
    let (mut ds, mut dm) = ([0f32; 8], [0f32; 8]);
    for g in 0..8 {
        ds[g] = d * f32::from(sc[g]);
        dm[g] = dmin * f32::from(mn[g]);
    }
    (ds, dm)
}

/// Q4_K: f16 `d`, f16 `dmin`, 12 bytes of scales and mins, 128 bytes of
/// nibbles.
pub fn q4_k(b: &[u8; 144], out: &mut [f32; 256]) {
    let (ds, dm) = group_scales(b);
    // Value j·64 + s·32 + l is nibble s of byte 32j + l, in group 2j + s.
    for j in 0..4 {
        for s in 0..2 {
            for l in 0..32 {
                let g = 2 * j + s;
                let q = f32::from((b[16 + 32 * j + l] >> (4 * s)) & 0x0F);
                out[32 * g + l] = ds[g] * q - dm[g];
            }
        }
    }
}

/// Q5_K: as Q4_K with 32 bytes of fifth bits before the nibbles.
pub fn q5_k(b: &[u8; 176], out: &mut [f32; 256]) {
    let (ds, dm) = group_scales(b);
    // Value g·32 + l: nibble of byte 48 + 32(g/2) + l, fifth bit g of
    // byte 16 + l.
    for j in 0..4 {
        for s in 0..2 {
            for l in 0..32 {
                let g = 2 * j + s;
                let low = (b[48 + 32 * j + l] >> (4 * s)) & 0x0F;
                let high = (b[16 + l] >> g) & 1;
                out[32 * g + l] = ds[g] * f32::from(low | high << 4) - dm[g];
            }
        }
    }
}

/// Q6_K: 128 bytes of low nibbles, 64 bytes of 2-bit high parts, 16 signed
/// scales per 16 values, f16 `d`; value = (d × sc) × (q − 32).
pub fn q6_k(b: &[u8; 210], out: &mut [f32; 256]) {
    let d = f16(le16(b, 208));
    let mut ds = [0f32; 16];
    for (g, x) in ds.iter_mut().enumerate() {
        *x = d * f32::from(b[192 + g] as i8);
    }
    // Value 128j + 32s + l: nibble s/2 of byte 64j + 32(s%2) + l, high
    // bits 2s of byte 128 + 32j + l (loops over l innermost vectorize).
    for j in 0..2 {
        for s in 0..4 {
            for l in 0..32 {
                let low = (b[64 * j + 32 * (s % 2) + l] >> (4 * (s / 2))) & 0x0F;
                let high = (b[128 + 32 * j + l] >> (2 * s)) & 3;
                let v = 128 * j + 32 * s + l;
                out[v] = ds[v / 16] * f32::from((low | high << 4) as i8 - 32);
            }
        }
    }
}

/// Q8_K (ggml's `block_q8_K`): f32 `d`, 256 signed bytes, 16 i16 sums of
/// 16 quants each (for dot products; not values); value = d × q, as
/// ggml's `dequantize_row_q8_K`. gguf-py has no dequantizer for it.
pub fn q8_k(b: &[u8; 292], out: &mut [f32; 256]) {
    let d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    for (o, &x) in out.iter_mut().zip(&b[4..260]) {
        *o = d * f32::from(x as i8);
    }
}
