//! The ternary types, 256 values a block of −1, 0 or 1 times an f16 `d`:
//! TQ1_0 (five trits a byte, base 3) and TQ2_0 (2 bits a value).

use super::{f16, le16};

/// The powers of 3 that bring trit `k` of a TQ1_0 byte to its top.
const POW3: [u8; 5] = [1, 3, 9, 27, 81];

/// A TQ1_0 byte times 3^k (mod 256, as gguf-py's uint8 product wraps)
/// holds trit k in its top bits: ⌊3x/256⌋ − 1 is −1, 0 or 1.
fn trit(x: u8, k: usize) -> i8 {
    let x = x.wrapping_mul(POW3[k % 5]);
    ((u16::from(x) * 3) >> 8) as i8 - 1
}

/// TQ1_0: 48 bytes of five trits, 4 bytes of four trits, f16 `d`.
pub fn tq1_0(b: &[u8; 54], out: &mut [f32; 256]) {
    let d = f16(le16(b, 52));
    // Value 32k + l is trit k of byte l.
    for k in 0..5 {
        for l in 0..32 {
            out[32 * k + l] = d * f32::from(trit(b[l], k));
        }
    }
    // Value 160 + 16k + l is trit k of byte 32 + l.
    for k in 0..5 {
        for l in 0..16 {
            out[160 + 16 * k + l] = d * f32::from(trit(b[32 + l], k));
        }
    }
    // Value 240 + 4k + l is trit k of byte 48 + l.
    for k in 0..4 {
        for l in 0..4 {
            out[240 + 4 * k + l] = d * f32::from(trit(b[48 + l], k));
        }
    }
}

/// TQ2_0: 64 bytes of 2-bit values (stored plus one), f16 `d`.
pub fn tq2_0(b: &[u8; 66], out: &mut [f32; 256]) {
    let d = f16(le16(b, 64));
    // Value 128j + 32s + l is bits 2s of byte 32j + l.
    for j in 0..2 {
        for s in 0..4 {
            for l in 0..32 {
                let q = ((b[32 * j + l] >> (2 * s)) & 3) as i8 - 1;
                out[128 * j + 32 * s + l] = d * f32::from(q);
            }
        }
    }
}
