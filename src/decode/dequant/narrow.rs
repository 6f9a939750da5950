//! The float type a quantized tensor's values are given in where a user
//! asks for a narrower one (`--dequantize f16|bf16`), and the rounding
//! from the f32 values to it.
//!
//! Round to nearest, ties to even, as numpy's `astype(float16)` and
//! ml_dtypes' `bfloat16` do. NaNs as they do too (the two differ): numpy
//! keeps a NaN's sign and the top 10 bits of its payload, and sets the
//! lowest if none is left (`npy_floatbits_to_halfbits`); ml_dtypes
//! (Eigen's `float_to_bfloat16_rtne`) gives the quiet NaN `0x7FC0` with
//! the NaN's sign. `tests/data/dequant/narrow.*` holds both libraries'
//! answers for the cases that matter (ties, subnormals, overflow, NaNs).

/// The type of a quantized tensor's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Float {
    /// f32, as dequantized.
    F32,
    /// IEEE half.
    F16,
    /// bfloat16.
    Bf16,
}

impl Float {
    /// The type a command-line value names (`f32`, `f16`, `bf16`).
    pub fn parse(s: &str) -> Option<Float> {
        match s {
            "f32" | "float32" => Some(Float::F32),
            "f16" | "float16" => Some(Float::F16),
            "bf16" | "bfloat16" => Some(Float::Bf16),
            _ => None,
        }
    }

    /// Bytes a value takes.
    pub fn width(self) -> u64 {
        match self {
            Float::F32 => 4,
            Float::F16 | Float::Bf16 => 2,
        }
    }

    /// Its name as safetensors spells it.
    pub fn safetensors(self) -> &'static str {
        match self {
            Float::F32 => "F32",
            Float::F16 => "F16",
            Float::Bf16 => "BF16",
        }
    }

    /// Its zTensor dtype.
    pub fn dtype(self) -> crate::format::types::DType {
        use crate::format::types::DType;
        match self {
            Float::F32 => DType::F32,
            Float::F16 => DType::F16,
            Float::Bf16 => DType::BF16,
        }
    }

    /// Writes `f32le` (little-endian f32 values, whole) as this type's
    /// little-endian values into `out` (`width` bytes a value).
    pub fn narrow(self, f32le: &[u8], out: &mut [u8]) {
        let values = f32le
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        match self {
            Float::F32 => out.copy_from_slice(f32le),
            Float::F16 => {
                for (o, v) in out.chunks_exact_mut(2).zip(values) {
                    o.copy_from_slice(&f16_bits(v).to_le_bytes());
                }
            }
            Float::Bf16 => {
                for (o, v) in out.chunks_exact_mut(2).zip(values) {
                    o.copy_from_slice(&bf16_bits(v).to_le_bytes());
                }
            }
        }
    }
}

/// The IEEE half nearest `v` (ties to even), numpy's NaN rule.
pub fn f16_bits(v: f32) -> u16 {
    let x = v.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = (x >> 23) & 0xFF;
    let man = x & 0x7F_FFFF;
    if exp == 0xFF {
        if man == 0 {
            return sign | 0x7C00;
        }
        let nan = 0x7C00 | (man >> 13) as u16;
        return sign | if nan == 0x7C00 { 0x7C01 } else { nan };
    }
    // The value's exponent, unbiased.
    let e = exp as i32 - 127;
    if e >= 16 {
        return sign | 0x7C00;
    }
    if e < -25 {
        // Below half the smallest subnormal (2^-25 rounds to even: 0).
        return sign;
    }
    let full = man | 0x80_0000; // 24 significant bits
    if e < -14 {
        // A half subnormal: units of 2^-24.
        let shift = (-14 - e + 13) as u32; // 14..=24
        return sign | round_shift(full, shift) as u16;
    }
    // A normal half: 10 bits of mantissa; a carry out of the mantissa
    // bumps the exponent, up to infinity, as it should.
    let half = (((e + 15) as u32) << 10) + round_shift(man, 13);
    sign | half as u16
}

/// The bfloat16 nearest `v` (ties to even), ml_dtypes' NaN rule.
pub fn bf16_bits(v: f32) -> u16 {
    let x = v.to_bits();
    if v.is_nan() {
        return ((x >> 16) as u16 & 0x8000) | 0x7FC0;
    }
    let rounding = 0x7FFF + ((x >> 16) & 1);
    (x.wrapping_add(rounding) >> 16) as u16
}

/// `v >> shift`, rounded to nearest, ties to even.
fn round_shift(v: u32, shift: u32) -> u32 {
    let q = v >> shift;
    let rem = v & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    if rem > half || (rem == half && q & 1 == 1) {
        q + 1
    } else {
        q
    }
}
