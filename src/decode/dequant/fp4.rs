//! The 4-bit float types: MXFP4 (32 e2m1 values under an e8m0 scale) and
//! NVFP4 (64 values, four groups of 16 under a ue4m3 scale).
//!
//! Both use ggml's doubled e2m1 table (integers, so the table is exact)
//! and halve the scale instead. The scales are decoded exactly (they are
//! powers of two, or a 3-bit mantissa times one) and value = scale × e2m1
//! is gguf-py's single f32 rounding. Neither scale is ever NaN here: an
//! e8m0 of 0xFF is 2^127 (not NaN, as in ggml), a ue4m3 of 0x7F is 0.

/// e2m1 values, doubled (ggml's `kvalues_mxfp4`).
const E2M1X2: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// Half the e8m0 scale `2^(e − 127)`, as ggml's `ggml_e8m0_to_fp32_half`:
/// 2^(e − 128), built from its bits (subnormal for e < 2).
fn e8m0_half(e: u8) -> f32 {
    f32::from_bits(match e {
        0 | 1 => 0x0020_0000 << e,
        _ => u32::from(e - 1) << 23,
    })
}

/// MXFP4: e8m0 scale byte, 16 bytes of e2m1 nibbles (low nibbles are
/// values 0..16, high nibbles 16..32).
pub fn mxfp4(b: &[u8; 17], out: &mut [f32; 32]) {
    let d = e8m0_half(b[0]);
    for l in 0..16 {
        let x = b[1 + l];
        out[l] = d * f32::from(E2M1X2[usize::from(x & 0x0F)]);
        out[16 + l] = d * f32::from(E2M1X2[usize::from(x >> 4)]);
    }
}

/// Half a ue4m3 scale as gguf-py's `NVFP4.ue4m3_to_fp32`: the top bit is
/// ignored, 0x00 and 0x7F (NaN in E4M3) are 0, exponent 0 is subnormal.
/// Every step is exact in f32, so the order does not matter.
fn ue4m3_half(x: u8) -> f32 {
    if x == 0 || x == 0x7F {
        return 0.0;
    }
    let (exp, man) = (u32::from(x >> 3) & 0xF, f32::from(x & 7));
    let raw = match exp {
        0 => man * f32::from_bits((127 - 9) << 23),
        _ => (1.0 + man / 8.0) * f32::from_bits((exp + 120) << 23),
    };
    raw * 0.5
}

/// NVFP4: four ue4m3 scales, then 8 bytes of e2m1 nibbles per group of
/// 16 (low nibbles first).
pub fn nvfp4(b: &[u8; 36], out: &mut [f32; 64]) {
    for s in 0..4 {
        let d = ue4m3_half(b[s]);
        for l in 0..8 {
            let x = b[4 + 8 * s + l];
            out[16 * s + l] = d * f32::from(E2M1X2[usize::from(x & 0x0F)]);
            out[16 * s + 8 + l] = d * f32::from(E2M1X2[usize::from(x >> 4)]);
        }
    }
}
