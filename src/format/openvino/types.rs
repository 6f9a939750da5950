//! OpenVINO element types (`ov::element::Type`, as a Const's
//! `element_type` names them) as zTensor's: a storage type and, where
//! zTensor registers one, a logical type; the bytes a tensor of them takes
//! in the `.bin`; and the types this reader does not serve, each with why.
//!
//! The names and widths are OpenVINO's own table
//! (src/core/src/type/element_type.cpp), the byte counts its
//! `ov::util::get_memory_size` (src/core/src/memory_util.cpp), the packing
//! of sub-byte types its element iterator (element_iterator.hpp and its
//! tests): 4-bit types two to a byte, the first element in the low
//! nibble; `u1` and `u2` eight and four to a byte, the first element in the
//! high bits; `u3` and `u6` split over groups of three bytes.

use crate::format::types::{DType, LogicalType};

/// Every element type name a Const's `element_type` may hold, as
/// OpenVINO's serializer writes them (lower case). OpenVINO also reads
/// some upper-case spellings (`BF16`, `I8`); its serializer never writes
/// them, and this reader refuses them. `dynamic` (alias `undefined`) is an
/// element type but no Const's, so it is not here.
pub const ELEMENT_TYPES: [&str; 25] = [
    "boolean", "bf16", "f16", "f32", "f64", "i4", "i8", "i16", "i32", "i64", "u1", "u2", "u3",
    "u4", "u6", "u8", "u16", "u32", "u64", "nf4", "f8e4m3", "f8e5m2", "string", "f4e2m1", "f8e8m0",
];

/// How the elements of a type lie in the `.bin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// Each element this many bits, packed back to back: whole bytes from
    /// 8 bits up; below, `8 / bits` elements to a byte.
    Bits(u64),
    /// `u3` and `u6`: each element this many bits, split over groups of
    /// three bytes (eight `u3` or four `u6` to a group).
    Split(u64),
    /// `string`: a packed table of lengths and bytes, with no width per
    /// element (its size is not a function of the shape).
    Strings,
}

impl Width {
    /// The bytes `count` elements take: `ceil(count * bits / 8)`, as
    /// OpenVINO's `get_memory_size` computes it (in two steps, so that
    /// the product cannot overflow first); `None` for strings or on
    /// overflow.
    pub fn byte_len(self, count: u64) -> Option<u64> {
        let bits = match self {
            Width::Bits(b) | Width::Split(b) => b,
            Width::Strings => return None,
        };
        let whole = (count / 8).checked_mul(bits)?;
        whole.checked_add(((count % 8) * bits).div_ceil(8))
    }

    /// The bytes `count` elements of a split type took in the OpenVINO
    /// releases that rounded them up to whole three-byte groups (the
    /// first ones with `u3` and `u6`; later ones count bits as for other
    /// types); `None` for other types or on overflow. A Const of either
    /// size is taken.
    pub fn group_byte_len(self, count: u64) -> Option<u64> {
        match self {
            Width::Split(bits) => count.div_ceil(24 / bits).checked_mul(3),
            _ => None,
        }
    }
}

/// How elements of OpenVINO type `t` lie in the `.bin`; `None` for a
/// name OpenVINO does not define (or spells otherwise).
pub fn element_width(t: &str) -> Option<Width> {
    let bits = match t {
        "boolean" | "i8" | "u8" | "f8e4m3" | "f8e5m2" | "f8e8m0" => 8,
        "bf16" | "f16" | "i16" | "u16" => 16,
        "f32" | "i32" | "u32" => 32,
        "f64" | "i64" | "u64" => 64,
        "i4" | "u4" | "nf4" | "f4e2m1" => 4,
        "u1" => 1,
        "u2" => 2,
        "u3" => return Some(Width::Split(3)),
        "u6" => return Some(Width::Split(6)),
        "string" => return Some(Width::Strings),
        _ => return None,
    };
    Some(Width::Bits(bits))
}

/// The bytes `count` elements of type `t` take in the `.bin`: `None` for
/// an unknown type, strings, or a count that overflows.
pub fn byte_len(t: &str, count: u64) -> Option<u64> {
    element_width(t)?.byte_len(count)
}

/// zTensor's type for OpenVINO element type `t`: its storage type and
/// logical type; or why it has none.
pub fn ztensor_type(t: &str) -> Result<(DType, Option<LogicalType>), String> {
    let logical = |l: LogicalType| Ok((l.dtype(), Some(l)));
    let plain = |d: DType| Ok((d, None));
    match t {
        "f32" => plain(DType::F32),
        "f16" => plain(DType::F16),
        "bf16" => plain(DType::BF16),
        "f64" => plain(DType::F64),
        "i8" => plain(DType::I8),
        "u8" => plain(DType::U8),
        "i16" => plain(DType::I16),
        "u16" => plain(DType::U16),
        "i32" => plain(DType::I32),
        "u32" => plain(DType::U32),
        "i64" => plain(DType::I64),
        "u64" => plain(DType::U64),
        // One byte an element; zTensor's own rule (0 or 1) is checked
        // when the values are read.
        "boolean" => logical(LogicalType::Bool),
        // OpenVINO's f8e4m3 has no infinity and one NaN (S.1111.111), the
        // "fn" variant (float8_e4m3.cpp: 448 is its largest value).
        "f8e4m3" => logical(LogicalType::F8E4M3Fn),
        "f8e5m2" => logical(LogicalType::F8E5M2),
        "f8e8m0" => logical(LogicalType::F8E8M0),
        // Two a byte, the first in the low nibble: zTensor's packing too.
        "f4e2m1" => logical(LogicalType::F4E2M1),
        "string" => Err("a string tensor: its elements have no fixed width".into()),
        "i4" | "u4" => Err(format!(
            "4-bit integers ({t}), two to a byte: zTensor registers no such type"
        )),
        "nf4" => Err(
            "NF4 codes, two to a byte, each an index into a fixed table of 16 values: \
             zTensor registers no such type"
                .into(),
        ),
        "u1" => Err("1-bit values, eight to a byte: zTensor registers no such type".into()),
        "u2" => Err("2-bit integers, four to a byte: zTensor registers no such type".into()),
        "u3" | "u6" => Err(format!(
            "{}-bit integers ({t}) split over three-byte groups: zTensor registers no such type",
            &t[1..]
        )),
        t => Err(format!(
            "element type {t:?}, which OpenVINO does not define"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_is_served_or_refused_with_a_reason() {
        for t in ELEMENT_TYPES {
            let w = element_width(t).unwrap();
            match ztensor_type(t) {
                Ok((d, l)) => {
                    assert_eq!(l.map_or(d, |l| l.dtype()), d, "{t}");
                    // A served type's bytes are zTensor's for the same count.
                    let n = 7;
                    let want = match l {
                        Some(l) => l.size(n).unwrap(),
                        None => n * d.width(),
                    };
                    assert_eq!(w.byte_len(n), Some(want), "{t}");
                }
                Err(why) => assert!(!why.is_empty()),
            }
        }
        assert!(element_width("F32").is_none());
        assert!(element_width("dynamic").is_none());
        assert!(ztensor_type("FP32").is_err());
    }

    #[test]
    fn sub_byte_types_round_up_as_openvino_does() {
        assert_eq!(byte_len("f32", 6), Some(24));
        assert_eq!(byte_len("u4", 5), Some(3));
        assert_eq!(byte_len("u1", 9), Some(2));
        assert_eq!(byte_len("u2", 5), Some(2));
        assert_eq!(byte_len("u3", 8), Some(3));
        assert_eq!(byte_len("u6", 4), Some(3));
        assert_eq!(byte_len("u3", 1), Some(1));
        assert_eq!(Width::Split(3).group_byte_len(1), Some(3));
        assert_eq!(Width::Split(6).group_byte_len(5), Some(6));
        assert_eq!(Width::Bits(4).group_byte_len(5), None);
        assert_eq!(byte_len("string", 1), None);
        assert_eq!(byte_len("f64", u64::MAX), None);
        assert_eq!(byte_len("u1", u64::MAX), Some(u64::MAX / 8 + 1));
        assert_eq!(byte_len("nope", 1), None);
    }
}
