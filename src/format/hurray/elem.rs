//! Element types (`element-types.md`): tags, names, bit widths and the
//! buffer size function.

use super::{ElemType, ExtensionType};

/// Every built-in element type, in tag order.
pub const BUILTIN: [ElemType; 26] = [
    ElemType::F16,
    ElemType::BF16,
    ElemType::F32,
    ElemType::F64,
    ElemType::I8,
    ElemType::U8,
    ElemType::I16,
    ElemType::U16,
    ElemType::I32,
    ElemType::U32,
    ElemType::I64,
    ElemType::U64,
    ElemType::Bool,
    ElemType::F8E4M3,
    ElemType::F8E5M2,
    ElemType::F8E8M0,
    ElemType::F4E2M1,
    ElemType::F6E2M3,
    ElemType::F6E3M2,
    ElemType::F128,
    ElemType::I4,
    ElemType::U4,
    ElemType::I2,
    ElemType::U2,
    ElemType::C64,
    ElemType::C128,
];

impl ElemType {
    /// The type a tag names: a built-in tag of the table in
    /// element-types.md § Type Properties Summary, or `0xF0..=0xFE`
    /// (extension). `None` for `0x00`, `0x47`, `0xFF`, the reserved
    /// `0x80..=0xEF` and every unassigned tag of tiers 1 and 2.
    pub fn from_tag(tag: u8) -> Option<ElemType> {
        if (0xF0..=0xFE).contains(&tag) {
            return Some(ElemType::Extension(tag));
        }
        BUILTIN.iter().copied().find(|t| t.tag() == tag)
    }

    /// The wire tag.
    pub fn tag(self) -> u8 {
        match self {
            ElemType::F16 => 0x01,
            ElemType::BF16 => 0x02,
            ElemType::F32 => 0x03,
            ElemType::F64 => 0x04,
            ElemType::I8 => 0x10,
            ElemType::U8 => 0x11,
            ElemType::I16 => 0x12,
            ElemType::U16 => 0x13,
            ElemType::I32 => 0x14,
            ElemType::U32 => 0x15,
            ElemType::I64 => 0x16,
            ElemType::U64 => 0x17,
            ElemType::Bool => 0x20,
            ElemType::F8E4M3 => 0x40,
            ElemType::F8E5M2 => 0x41,
            ElemType::F8E8M0 => 0x42,
            ElemType::F4E2M1 => 0x43,
            ElemType::F6E2M3 => 0x44,
            ElemType::F6E3M2 => 0x45,
            ElemType::F128 => 0x46,
            ElemType::I4 => 0x48,
            ElemType::U4 => 0x49,
            ElemType::I2 => 0x4A,
            ElemType::U2 => 0x4B,
            ElemType::C64 => 0x50,
            ElemType::C128 => 0x51,
            ElemType::Extension(t) => t,
        }
    }

    /// The spec's name (`float16`, `bfloat16`, `int4`, `complex64`, ...);
    /// `extension` for `0xF0..=0xFE`.
    pub fn name(self) -> &'static str {
        match self {
            ElemType::F16 => "float16",
            ElemType::BF16 => "bfloat16",
            ElemType::F32 => "float32",
            ElemType::F64 => "float64",
            ElemType::I8 => "int8",
            ElemType::U8 => "uint8",
            ElemType::I16 => "int16",
            ElemType::U16 => "uint16",
            ElemType::I32 => "int32",
            ElemType::U32 => "uint32",
            ElemType::I64 => "int64",
            ElemType::U64 => "uint64",
            ElemType::Bool => "bool",
            ElemType::F8E4M3 => "float8_e4m3",
            ElemType::F8E5M2 => "float8_e5m2",
            ElemType::F8E8M0 => "float8_e8m0",
            ElemType::F4E2M1 => "float4_e2m1",
            ElemType::F6E2M3 => "float6_e2m3",
            ElemType::F6E3M2 => "float6_e3m2",
            ElemType::F128 => "float128",
            ElemType::I4 => "int4",
            ElemType::U4 => "uint4",
            ElemType::I2 => "int2",
            ElemType::U2 => "uint2",
            ElemType::C64 => "complex64",
            ElemType::C128 => "complex128",
            ElemType::Extension(_) => "extension",
        }
    }

    /// Bits per element; 0 for an extension type (its width is in its
    /// extension type section).
    pub fn bits(self) -> u32 {
        match self {
            ElemType::Bool => 1,
            ElemType::I2 | ElemType::U2 => 2,
            ElemType::F4E2M1 | ElemType::I4 | ElemType::U4 => 4,
            ElemType::F6E2M3 | ElemType::F6E3M2 => 6,
            ElemType::I8 | ElemType::U8 => 8,
            ElemType::F8E4M3 | ElemType::F8E5M2 | ElemType::F8E8M0 => 8,
            ElemType::F16 | ElemType::BF16 | ElemType::I16 | ElemType::U16 => 16,
            ElemType::F32 | ElemType::I32 | ElemType::U32 => 32,
            ElemType::F64 | ElemType::I64 | ElemType::U64 | ElemType::C64 => 64,
            ElemType::F128 | ElemType::C128 => 128,
            ElemType::Extension(_) => 0,
        }
    }

    /// Bytes for `count` contiguous elements (element-types.md § Buffer Size
    /// Calculation): `count * bits / 8` for whole-byte widths,
    /// `ceil(count * bits / 8)` for 1, 2 and 4 bits, `ceil(count / 4) * 3`
    /// for the 6-bit floats, and for an extension type `count * bit_width / 8`
    /// or `ceil(count / packing_factor)` from its section. `None` on overflow,
    /// for an extension type without its section, or for an extension width
    /// that is not a whole number of bytes (no formula exists for it).
    pub fn buffer_size(self, count: u64, ext: Option<&ExtensionType>) -> Option<u64> {
        let bits = match self {
            ElemType::Extension(_) => {
                let e = ext?;
                if e.bit_width >= 8 {
                    if e.bit_width % 8 != 0 {
                        return None;
                    }
                    return count.checked_mul(u64::from(e.bit_width / 8));
                }
                if e.packing_factor == 0 {
                    return None;
                }
                return Some(count.div_ceil(u64::from(e.packing_factor)));
            }
            t => t.bits(),
        };
        match bits {
            6 => count.div_ceil(4).checked_mul(3),
            1 | 2 | 4 => Some(count.div_ceil(u64::from(8 / bits))),
            b => count.checked_mul(u64::from(b / 8)),
        }
    }

    /// True for the packed types whose elements do not start on bytes.
    pub fn is_sub_byte(self, ext: Option<&ExtensionType>) -> bool {
        match self {
            ElemType::Extension(_) => ext.is_some_and(|e| e.bit_width < 8),
            t => t.bits() < 8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip_and_gaps_are_refused() {
        for t in BUILTIN {
            assert_eq!(ElemType::from_tag(t.tag()), Some(t), "{}", t.name());
        }
        for bad in [0x00, 0x05, 0x18, 0x21, 0x47, 0x4C, 0x52, 0x80, 0xEF, 0xFF] {
            assert_eq!(ElemType::from_tag(bad), None, "{bad:#x}");
        }
        assert_eq!(ElemType::from_tag(0xF0), Some(ElemType::Extension(0xF0)));
        assert_eq!(ElemType::from_tag(0xFE), Some(ElemType::Extension(0xFE)));
    }

    #[test]
    fn buffer_sizes_follow_the_packing_rules() {
        assert_eq!(ElemType::F32.buffer_size(12, None), Some(48));
        assert_eq!(ElemType::Bool.buffer_size(10, None), Some(2));
        assert_eq!(ElemType::I4.buffer_size(5, None), Some(3));
        assert_eq!(ElemType::U2.buffer_size(5, None), Some(2));
        assert_eq!(ElemType::F6E2M3.buffer_size(1, None), Some(3));
        assert_eq!(ElemType::F6E3M2.buffer_size(5, None), Some(6));
        assert_eq!(ElemType::C128.buffer_size(2, None), Some(32));
        assert_eq!(ElemType::F64.buffer_size(u64::MAX, None), None);
        assert_eq!(ElemType::Extension(0xF0).buffer_size(3, None), None);
        let mut e = ExtensionType {
            bit_width: 4,
            packing_factor: 2,
            is_float: false,
            is_signed: false,
            sign_bits: 0,
            exponent_bits: 0,
            mantissa_bits: 0,
            exponent_bias: 0,
            has_nan: false,
            has_inf: false,
        };
        assert_eq!(ElemType::Extension(0xF0).buffer_size(3, Some(&e)), Some(2));
        e.bit_width = 24;
        e.packing_factor = 1;
        assert_eq!(ElemType::Extension(0xF0).buffer_size(3, Some(&e)), Some(9));
    }
}
