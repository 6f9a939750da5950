//! The IQ types: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M
//! (256 values a block, quants that index a grid of 8 or 4 values),
//! IQ4_NL (32 values) and IQ4_XS (256), which index a 16-value table.
//!
//! gguf-py multiplies in this order, each step an f32 rounding: the block
//! scale `db` (f16 `d` times the sub-scale expression, left to right), then
//! `db × grid`, then `× ±1` (exact); IQ1 adds its ±1/8 delta to the grid
//! value first. Every grid index is masked to its table's size (a power of
//! two), so no byte can index past a table.

use super::grids::{IQ1S, IQ2S, IQ2XS, IQ2XXS, IQ3S, IQ3XXS, KSIGNS};
use super::{f16, le16, le32};

/// Grid values of the IQ2 types (index 3 never occurs in their grids).
const MAP2: [f32; 4] = [8.0, 25.0, 43.0, 0.0];
/// Grid values of IQ3_XXS.
const MAP3XXS: [f32; 8] = [4.0, 12.0, 20.0, 28.0, 36.0, 44.0, 52.0, 62.0];
/// Grid values of IQ3_S.
const MAP3S: [f32; 8] = [1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0];
/// Grid values of IQ1_S and IQ1_M (index 3 never occurs).
const MAP1: [f32; 4] = [-1.0, 0.0, 1.0, 0.0];
/// The non-linear 4-bit values of IQ4_NL and IQ4_XS.
const KVALUES: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];
/// IQ1's offset of every grid value, its sign from a high bit.
const IQ1_DELTA: f32 = 0.125;

/// The 8 values of a packed 2-bit grid row.
fn row8(row: u16, map: &[f32; 4]) -> [f32; 8] {
    let mut g = [0f32; 8];
    for (j, x) in g.iter_mut().enumerate() {
        *x = map[usize::from(row >> (2 * j)) & 3];
    }
    g
}

/// The 4 values of a packed 4-bit grid row (3 bits used).
fn row4(row: u16, map: &[f32; 8]) -> [f32; 4] {
    let mut g = [0f32; 4];
    for (j, x) in g.iter_mut().enumerate() {
        *x = map[usize::from(row >> (4 * j)) & 7];
    }
    g
}

/// `x × −1` as numpy computes it. For a number that is `-x`; a NaN comes
/// back unchanged, sign included (the x86 multiply returns its NaN
/// operand), where `-x` flips its sign. A plain `x * -1.0` is no help: the
/// optimizer turns it into `-x`, so the NaN case is spelled out.
fn negated(x: f32) -> f32 {
    if x.is_nan() {
        x
    } else {
        -x
    }
}

/// Writes `db × grid × ±1` for 8 values, bit `j` of `signs` set making
/// value `j` negative.
fn signed8(out: &mut [f32], db: f32, grid: [f32; 8], signs: u8) {
    for (j, o) in out.iter_mut().take(8).enumerate() {
        let x = db * grid[j];
        *o = if (signs >> j) & 1 == 0 { x } else { negated(x) };
    }
}

/// The IQ2_XS and IQ2_S scale of 16 values `i`: nibble `i % 2` of byte
/// `i / 2`, as `d × (0.5 + s) × 0.25`.
fn iq2_scales(d: f32, scales: &[u8]) -> [f32; 16] {
    let mut db = [0f32; 16];
    for (i, x) in db.iter_mut().enumerate() {
        let s = scales.get(i / 2).map_or(0, |b| (b >> (4 * (i % 2))) & 0x0F);
        *x = d * (0.5 + f32::from(s)) * 0.25;
    }
    db
}

/// IQ2_XXS: f16 `d`, then per 32 values a u32 of four grid indices and a
/// u32 of four 7-bit sign indices under a 4-bit scale.
pub fn iq2_xxs(b: &[u8; 66], out: &mut [f32; 256]) {
    let d = f16(le16(b, 0));
    for (ib, out) in out.chunks_exact_mut(32).enumerate() {
        let (grid, aux) = (le32(b, 2 + 8 * ib), le32(b, 6 + 8 * ib));
        let db = d * (0.5 + (aux >> 28) as f32) * 0.25;
        for (k, out) in out.chunks_exact_mut(8).enumerate() {
            let row = IQ2XXS[((grid >> (8 * k)) & 0xFF) as usize];
            let signs = KSIGNS[((aux >> (7 * k)) & 0x7F) as usize];
            signed8(out, db, row8(row, &MAP2), signs);
        }
    }
}

/// IQ2_XS: f16 `d`, 32 u16 (a 9-bit grid index, a 7-bit sign index) per
/// 8 values, 8 bytes of 4-bit scales per 16 values.
pub fn iq2_xs(b: &[u8; 74], out: &mut [f32; 256]) {
    let db = iq2_scales(f16(le16(b, 0)), &b[66..]);
    for (i, out) in out.chunks_exact_mut(8).enumerate() {
        let q = le16(b, 2 + 2 * i);
        let row = IQ2XS[usize::from(q & 511)];
        let signs = KSIGNS[usize::from(q >> 9) & 0x7F];
        signed8(out, db[i / 2], row8(row, &MAP2), signs);
    }
}

/// IQ2_S: f16 `d`, 32 grid index bytes, 32 sign bytes, 8 bytes of the
/// indices' top 2 bits, 8 bytes of 4-bit scales per 16 values.
pub fn iq2_s(b: &[u8; 82], out: &mut [f32; 256]) {
    let db = iq2_scales(f16(le16(b, 0)), &b[74..]);
    for (i, out) in out.chunks_exact_mut(8).enumerate() {
        let high = (b[66 + i / 4] >> (2 * (i % 4))) & 3;
        let index = usize::from(b[2 + i]) | usize::from(high) << 8;
        signed8(out, db[i / 2], row8(IQ2S[index & 1023], &MAP2), b[34 + i]);
    }
}

/// IQ3_XXS: f16 `d`, 64 grid index bytes (4 values each), then per 32
/// values a u32 of four 7-bit sign indices under a 4-bit scale.
pub fn iq3_xxs(b: &[u8; 98], out: &mut [f32; 256]) {
    let d = f16(le16(b, 0));
    for (ib, out) in out.chunks_exact_mut(32).enumerate() {
        let aux = le32(b, 66 + 4 * ib);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
        for (k, out) in out.chunks_exact_mut(8).enumerate() {
            let signs = KSIGNS[((aux >> (7 * k)) & 0x7F) as usize];
            let e = 2 + 8 * ib + 2 * k;
            let (lo, hi) = (IQ3XXS[usize::from(b[e])], IQ3XXS[usize::from(b[e + 1])]);
            let (lo, hi) = (row4(lo, &MAP3XXS), row4(hi, &MAP3XXS));
            let grid = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
            signed8(out, db, grid, signs);
        }
    }
}

/// IQ3_S: f16 `d`, 64 grid index bytes, 8 bytes of the indices' ninth
/// bits, 32 sign bytes, 4 bytes of 4-bit scales per 32 values, as
/// `d × (1 + 2s)` (the factor an integer).
pub fn iq3_s(b: &[u8; 110], out: &mut [f32; 256]) {
    let d = f16(le16(b, 0));
    for (ib, out) in out.chunks_exact_mut(32).enumerate() {
        let s = (b[106 + ib / 2] >> (4 * (ib % 2))) & 0x0F;
        let db = d * f32::from(1 + 2 * s);
        for (k, out) in out.chunks_exact_mut(8).enumerate() {
            let mut grid = [0f32; 8];
            for (h, g) in grid.chunks_exact_mut(4).enumerate() {
                let e = 8 * ib + 2 * k + h;
                let high = (b[66 + e / 8] >> (e % 8)) & 1;
                let index = usize::from(b[2 + e]) | usize::from(high) << 8;
                g.copy_from_slice(&row4(IQ3S[index & 511], &MAP3S));
            }
            signed8(out, db, grid, b[74 + 4 * ib + k]);
        }
    }
}

/// Writes `dl × (grid + delta)` for 8 values of IQ1_S or IQ1_M.
fn iq1_8(out: &mut [f32], dl: f32, index: usize, delta: f32) {
    let grid = row8(IQ1S[index & 2047], &MAP1);
    for (o, g) in out.iter_mut().zip(grid) {
        *o = dl * (g + delta);
    }
}

/// IQ1_S: f16 `d`, 32 grid index bytes, then per 32 values a u16 holding
/// four 3-bit index tops, a 3-bit scale and the delta's sign.
pub fn iq1_s(b: &[u8; 50], out: &mut [f32; 256]) {
    let d = f16(le16(b, 0));
    for (ib, out) in out.chunks_exact_mut(32).enumerate() {
        let h = le16(b, 34 + 2 * ib);
        let dl = d * f32::from(2 * ((h >> 12) & 7) + 1);
        let delta = if h & 0x8000 == 0 {
            IQ1_DELTA
        } else {
            -IQ1_DELTA
        };
        for (k, out) in out.chunks_exact_mut(8).enumerate() {
            let top = usize::from(h >> (3 * k)) & 7;
            iq1_8(out, dl, usize::from(b[2 + 4 * ib + k]) | top << 8, delta);
        }
    }
}

/// IQ1_M: 32 grid index bytes, 16 bytes of nibbles (3 index bits and the
/// delta's sign per 8 values), four u16 of 3-bit scales per 16 values
/// whose top nibbles together are the f16 `d`.
pub fn iq1_m(b: &[u8; 56], out: &mut [f32; 256]) {
    let sc = [le16(b, 48), le16(b, 50), le16(b, 52), le16(b, 54)];
    let d = f16((sc[0] & 0xF000) >> 12
        | (sc[1] & 0xF000) >> 8
        | (sc[2] & 0xF000) >> 4
        | sc[3] & 0xF000);
    for (i, out) in out.chunks_exact_mut(8).enumerate() {
        // Scale i/2 is bits 3(s % 4) of u16 s / 4; an integer factor.
        let s = i / 2;
        let dl = d * f32::from(2 * ((sc[s / 4] >> (3 * (s % 4))) & 7) + 1);
        let e = b[32 + i / 2] >> (4 * (i % 2));
        let delta = if e & 0x08 == 0 { IQ1_DELTA } else { -IQ1_DELTA };
        iq1_8(out, dl, usize::from(b[i]) | usize::from(e & 7) << 8, delta);
    }
}

/// The IQ4 value of nibble `n` as an f32.
fn kvalue(n: u8) -> f32 {
    f32::from(KVALUES[usize::from(n & 0x0F)])
}

/// IQ4_NL: f16 `d`, 16 bytes of nibbles (low nibbles are values 0..16).
pub fn iq4_nl(b: &[u8; 18], out: &mut [f32; 32]) {
    let d = f16(le16(b, 0));
    for l in 0..16 {
        out[l] = d * kvalue(b[2 + l]);
        out[16 + l] = d * kvalue(b[2 + l] >> 4);
    }
}

/// IQ4_XS: f16 `d`, a u16 of the scales' top 2 bits, 4 bytes of their low
/// nibbles (6-bit signed scales per 32 values), 128 bytes of nibbles.
pub fn iq4_xs(b: &[u8; 136], out: &mut [f32; 256]) {
    let (d, high) = (f16(le16(b, 0)), le16(b, 2));
    for (ib, out) in out.chunks_exact_mut(32).enumerate() {
        let low = (b[4 + ib / 2] >> (4 * (ib % 2))) & 0x0F;
        let top = ((high >> (2 * ib)) & 3) as u8;
        let dl = d * f32::from((low | top << 4) as i8 - 32);
        for l in 0..16 {
            let x = b[8 + 16 * ib + l];
            out[l] = dl * kvalue(x);
            out[16 + l] = dl * kvalue(x >> 4);
        }
    }
}
