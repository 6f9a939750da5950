//! Exact element decoders: the values the registered float encodings and
//! storage types denote, as f64, with no rounding (every one of these
//! formats is exactly representable in f64).
//!
//! The OCP formats follow the OCP Microscaling Formats (MX) v1.0
//! specification and the OCP 8-bit Floating Point specification:
//!
//! | type | bias | specials |
//! | --- | --- | --- |
//! | `f4_e2m1` | 1 | none: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives |
//! | `f8_e4m3fn` | 7 | `S.1111.111` is NaN; no infinities; max 448 |
//! | `f8_e5m2` | 15 | IEEE-like: exponent 31 is ±inf (mantissa 0) or NaN |
//! | `f8_e8m0` | 127 | unsigned exponent only, `2^(b − 127)`; 0xFF is NaN |
//! | MXINT8 (`i8`) | — | two's complement with an implicit scale of 2^−6 |

use crate::format::types::DType;

/// The eight magnitudes of `f4_e2m1` (exponent bias 1, one mantissa bit).
const F4_MAGNITUDES: [f64; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];

/// `2^e` for `e` in the normal range of f64, built from its bits so that no
/// rounding can creep in.
fn pow2(e: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// An `f4_e2m1` nibble (the low four bits of `n`).
pub fn f4_e2m1(n: u8) -> f64 {
    let m = F4_MAGNITUDES[usize::from(n & 7)];
    if n & 8 != 0 {
        -m
    } else {
        m
    }
}

/// An `f8_e4m3fn` byte.
pub fn f8_e4m3fn(b: u8) -> f64 {
    let (e, m) = (i32::from((b >> 3) & 0xF), f64::from(b & 7));
    let mag = match e {
        15 if b & 7 == 7 => f64::NAN,
        0 => m / 8.0 * pow2(-6),
        _ => (1.0 + m / 8.0) * pow2(e - 7),
    };
    signed(b & 0x80 != 0, mag)
}

/// An `f8_e5m2` byte.
pub fn f8_e5m2(b: u8) -> f64 {
    let (e, m) = (i32::from((b >> 2) & 0x1F), f64::from(b & 3));
    let mag = match e {
        31 if b & 3 == 0 => f64::INFINITY,
        31 => f64::NAN,
        0 => m / 4.0 * pow2(-14),
        _ => (1.0 + m / 4.0) * pow2(e - 15),
    };
    signed(b & 0x80 != 0, mag)
}

/// An `f8_e4m3fnuz` byte (ml_dtypes' `float8_e4m3fnuz`): bias 8, no
/// infinities, no negative zero; 0x80 alone is NaN.
pub fn f8_e4m3fnuz(b: u8) -> f64 {
    let (e, m) = (i32::from((b >> 3) & 0xF), f64::from(b & 7));
    let mag = match e {
        _ if b == 0x80 => f64::NAN,
        0 => m / 8.0 * pow2(-7),
        _ => (1.0 + m / 8.0) * pow2(e - 8),
    };
    signed(b & 0x80 != 0, mag)
}

/// An `f8_e5m2fnuz` byte (ml_dtypes' `float8_e5m2fnuz`): bias 16, no
/// infinities, no negative zero; 0x80 alone is NaN.
pub fn f8_e5m2fnuz(b: u8) -> f64 {
    let (e, m) = (i32::from((b >> 2) & 0x1F), f64::from(b & 3));
    let mag = match e {
        _ if b == 0x80 => f64::NAN,
        0 => m / 4.0 * pow2(-15),
        _ => (1.0 + m / 4.0) * pow2(e - 16),
    };
    signed(b & 0x80 != 0, mag)
}

/// An `f8_e8m0` byte: `2^(b − 127)`, or NaN for 0xFF.
pub fn e8m0(b: u8) -> f64 {
    match b {
        0xFF => f64::NAN,
        _ => pow2(i32::from(b) - 127),
    }
}

/// An MXINT8 element: the two's complement byte times 2^−6.
pub fn mx_int8(b: u8) -> f64 {
    f64::from(b as i8) / 64.0
}

/// An IEEE half-precision value from its bits.
pub fn f16(bits: u16) -> f64 {
    let (e, m) = (i32::from((bits >> 10) & 0x1F), f64::from(bits & 0x3FF));
    let mag = match e {
        31 if bits & 0x3FF == 0 => f64::INFINITY,
        31 => f64::NAN,
        0 => m * pow2(-24),
        _ => (1024.0 + m) * pow2(e - 25),
    };
    signed(bits & 0x8000 != 0, mag)
}

/// A bfloat16 value from its bits (the top half of an f32).
pub fn bf16(bits: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(bits) << 16))
}

fn signed(negative: bool, mag: f64) -> f64 {
    if negative {
        -mag
    } else {
        mag
    }
}

/// Element `k` of a little-endian array of `dtype` as f64: exact for the
/// floats and for integers up to 2^53 in magnitude, rounded to nearest
/// beyond. `None` when `k` is past the end of `bytes`.
pub fn number(bytes: &[u8], dtype: DType, k: usize) -> Option<f64> {
    let w = dtype.width() as usize;
    let b = bytes.get(k.checked_mul(w)?..k.checked_mul(w)?.checked_add(w)?)?;
    let mut le = [0u8; 8];
    le[..w].copy_from_slice(b);
    let u = u64::from_le_bytes(le);
    Some(match dtype {
        DType::F64 => f64::from_bits(u),
        DType::F32 => f64::from(f32::from_bits(u as u32)),
        DType::F16 => f16(u as u16),
        DType::BF16 => bf16(u as u16),
        DType::U64 | DType::U32 | DType::U16 | DType::U8 => u as f64,
        DType::I64 => u as i64 as f64,
        DType::I32 => f64::from(u as u32 as i32),
        DType::I16 => f64::from(u as u16 as i16),
        DType::I8 => f64::from(u as u8 as i8),
    })
}

/// A 256-entry table of a byte decoder, for the inner loops.
pub fn table(decode: fn(u8) -> f64) -> [f64; 256] {
    let mut t = [0.0; 256];
    for (b, slot) in t.iter_mut().enumerate() {
        *slot = decode(b as u8);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f4_e2m1_known_values() {
        let want = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
        for (n, w) in want.iter().enumerate() {
            assert_eq!(f4_e2m1(n as u8), *w);
            assert_eq!(f4_e2m1(n as u8 | 8), -*w);
        }
        assert_eq!(f4_e2m1(0x1), 0.5);
        assert_eq!(f4_e2m1(0x7), 6.0);
        assert_eq!(f4_e2m1(0xF), -6.0);
        assert!(f4_e2m1(0x8).is_sign_negative(), "0x8 is -0");
        assert_eq!(f4_e2m1(0xF7), 6.0, "only the low nibble counts");
    }

    #[test]
    fn fnuz_known_values() {
        assert!(f8_e4m3fnuz(0x80).is_nan() && f8_e5m2fnuz(0x80).is_nan());
        assert_eq!(f8_e4m3fnuz(0x7F), 240.0);
        assert_eq!(f8_e4m3fnuz(0x40), 1.0);
        assert_eq!(f8_e4m3fnuz(0x01), 2f64.powi(-10));
        assert_eq!(f8_e4m3fnuz(0xC0), -1.0);
        assert_eq!(f8_e5m2fnuz(0x7F), 57344.0);
        assert_eq!(f8_e5m2fnuz(0x40), 1.0);
        assert_eq!(f8_e5m2fnuz(0x01), 2f64.powi(-17));
    }

    #[test]
    fn f8_e4m3fn_known_values() {
        assert_eq!(f8_e4m3fn(0x00), 0.0);
        assert!(f8_e4m3fn(0x80).is_sign_negative());
        assert_eq!(f8_e4m3fn(0x01), 2f64.powi(-9), "smallest subnormal");
        assert_eq!(f8_e4m3fn(0x07), 0.875 * 2f64.powi(-6), "largest subnormal");
        assert_eq!(f8_e4m3fn(0x08), 2f64.powi(-6), "smallest normal");
        assert_eq!(f8_e4m3fn(0x38), 1.0);
        assert_eq!(f8_e4m3fn(0x3C), 1.5);
        assert_eq!(f8_e4m3fn(0x40), 2.0);
        assert_eq!(f8_e4m3fn(0x7E), 448.0);
        assert_eq!(f8_e4m3fn(0xFE), -448.0);
        assert_eq!(f8_e4m3fn(0x78), 256.0, "exponent 15 is finite in fn");
        assert!(f8_e4m3fn(0x7F).is_nan());
        assert!(f8_e4m3fn(0xFF).is_nan());
        let nans = (0..=255u8).filter(|&b| f8_e4m3fn(b).is_nan()).count();
        assert_eq!(nans, 2);
        assert!((0..=255u8).all(|b| f8_e4m3fn(b).is_finite() || f8_e4m3fn(b).is_nan()));
    }

    #[test]
    fn f8_e5m2_known_values() {
        assert_eq!(f8_e5m2(0x00), 0.0);
        assert_eq!(f8_e5m2(0x01), 2f64.powi(-16), "smallest subnormal");
        assert_eq!(f8_e5m2(0x04), 2f64.powi(-14), "smallest normal");
        assert_eq!(f8_e5m2(0x3C), 1.0);
        assert_eq!(f8_e5m2(0xBC), -1.0);
        assert_eq!(f8_e5m2(0x7B), 57344.0);
        assert_eq!(f8_e5m2(0x7C), f64::INFINITY);
        assert_eq!(f8_e5m2(0xFC), f64::NEG_INFINITY);
        for b in [0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF] {
            assert!(f8_e5m2(b).is_nan(), "{b:#x}");
        }
    }

    #[test]
    fn f8_e5m2_is_the_top_byte_of_an_f16() {
        for b in 0..=255u8 {
            let (x, y) = (f8_e5m2(b), f16(u16::from(b) << 8));
            assert!(x == y || (x.is_nan() && y.is_nan()), "{b:#x}: {x} vs {y}");
        }
    }

    #[test]
    fn e8m0_known_values() {
        assert_eq!(e8m0(127), 1.0);
        assert_eq!(e8m0(128), 2.0);
        assert_eq!(e8m0(126), 0.5);
        assert_eq!(e8m0(0), 2f64.powi(-127));
        assert_eq!(e8m0(254), 2f64.powi(127));
        assert!(e8m0(0xFF).is_nan());
    }

    #[test]
    fn mx_int8_has_an_implicit_scale_of_2_to_the_minus_6() {
        assert_eq!(mx_int8(0x40), 1.0);
        assert_eq!(mx_int8(0x7F), 127.0 / 64.0);
        assert_eq!(mx_int8(0x80), -2.0);
        assert_eq!(mx_int8(0xFF), -1.0 / 64.0);
    }

    #[test]
    fn f16_matches_known_bits() {
        assert_eq!(f16(0x3C00), 1.0);
        assert_eq!(f16(0xC000), -2.0);
        assert_eq!(f16(0x7BFF), 65504.0);
        assert_eq!(f16(0x0001), 2f64.powi(-24));
        assert_eq!(f16(0x0400), 2f64.powi(-14));
        assert_eq!(f16(0x3555), 0.333251953125);
        assert_eq!(f16(0x7C00), f64::INFINITY);
        assert!(f16(0x7E00).is_nan());
        assert!(f16(0x8000).is_sign_negative());
    }

    #[test]
    fn bf16_is_the_top_half_of_an_f32() {
        assert_eq!(bf16(0x3F80), 1.0);
        assert_eq!(bf16(0x4049), 3.140625);
        assert_eq!(bf16(0xFF80), f64::NEG_INFINITY);
        assert!(bf16(0x7FC0).is_nan());
    }

    #[test]
    fn number_reads_each_dtype_little_endian() {
        let b = [0x00, 0x00, 0x80, 0x3F, 0xFE, 0xFF, 0xFF, 0xFF];
        assert_eq!(number(&b, DType::F32, 0), Some(1.0));
        assert_eq!(number(&b, DType::I32, 1), Some(-2.0));
        assert_eq!(number(&b, DType::U32, 1), Some(4294967294.0));
        assert_eq!(number(&b, DType::I16, 3), Some(-1.0));
        assert_eq!(number(&b, DType::U16, 3), Some(65535.0));
        assert_eq!(number(&b, DType::I8, 4), Some(-2.0));
        assert_eq!(number(&b, DType::U8, 3), Some(63.0));
        assert_eq!(number(&b, DType::F16, 1), Some(1.875));
        assert_eq!(number(&b, DType::BF16, 1), Some(1.0));
        assert_eq!(number(&1.5f64.to_le_bytes(), DType::F64, 0), Some(1.5));
        assert_eq!(number(&(-3i64).to_le_bytes(), DType::I64, 0), Some(-3.0));
        assert_eq!(number(&7u64.to_le_bytes(), DType::U64, 0), Some(7.0));
        assert_eq!(number(&b, DType::F32, 2), None);
        assert_eq!(number(&b, DType::F64, usize::MAX), None);
    }
}
