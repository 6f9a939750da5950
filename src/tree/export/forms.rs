//! What numpy and safetensors call the elements of a file of the tree, and
//! the shape each gives it: the descriptions behind `<part>.npy` and
//! `model.safetensors`. A file whose bytes have no lossless, unambiguous
//! form in one of them gets none there, and the reason says why.
//!
//! Facts (numpy 2.4, ml_dtypes 0.6, safetensors 0.8):
//! `../shared/notes/views-and-remote.md`.

use crate::format::hurray::ElemType;
use crate::format::types::{DType, LogicalType};
use crate::format::Object;

pub use crate::model::Elem;

/// How `.npy` headers name types numpy lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NpyDtypes {
    /// Void types of the element's width (`<V2` for bfloat16, `|V1` for
    /// the f8 types): loads anywhere, as `np.save` writes them.
    #[default]
    Numpy,
    /// The `ml_dtypes` names (`bfloat16`, `float8_e4m3fn`, ...): load
    /// after `import ml_dtypes`.
    Ml,
}

/// What shape a file's elements have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The object's shape: the file is the object's row-major tensor.
    Tensor,
    /// One dimension: the file is one part of a layout profile.
    Flat,
}

/// A `.npy` description: `descr` and shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Npy {
    /// The header's `descr`.
    pub descr: &'static str,
    /// The header's `shape`.
    pub shape: Vec<u64>,
}

/// The `.npy` form of a file of `len` bytes of `elem` elements, shaped as
/// `shape` says for object `o`.
pub fn npy(
    o: &Object,
    elem: Elem,
    shape: Shape,
    len: u64,
    dtypes: NpyDtypes,
) -> Result<Npy, String> {
    let ml = dtypes == NpyDtypes::Ml;
    let (descr, width) = npy_descr(elem, ml)?;
    if packed_f4(elem) {
        // Two elements a byte, low nibble first: numpy has no such type
        // (ml_dtypes' float4_e2m1fn takes a byte per element), so the
        // file is its bytes.
        return loadable(width, vec![len]).map(|shape| Npy { descr, shape });
    }
    let shape = match shape {
        Shape::Flat if len.is_multiple_of(width) => vec![len / width],
        Shape::Flat => {
            return Err(format!(
                "its {len} bytes are not a whole number of {width}-byte elements"
            ))
        }
        Shape::Tensor => o.shape.to_vec(),
    };
    let want = (shape.iter().try_fold(width, |a, &d| a.checked_mul(d)))
        .ok_or_else(|| "its element count overflows".to_string())?;
    if want != len {
        return Err(format!(
            "its {len} bytes are not the {want} its shape and type make"
        ));
    }
    loadable(width, shape).map(|shape| Npy { descr, shape })
}

/// Most dimensions `np.load` takes (numpy 2's `NPY_MAXDIMS`).
const NUMPY_MAX_RANK: usize = 64;

/// `shape`, if numpy can make an array of it with `width`-byte elements:
/// at most [`NUMPY_MAX_RANK`] dimensions, and the width times the product
/// of the nonzero dimensions at most `i64::MAX` (numpy's `intp` bytes;
/// it skips zeros, so `(0, 2**63 - 1)` of `|u1` loads, `(0, 2**63)` does not).
fn loadable(width: u64, shape: Vec<u64>) -> Result<Vec<u64>, String> {
    if shape.len() > NUMPY_MAX_RANK {
        return Err(format!(
            "rank {} is above numpy's {NUMPY_MAX_RANK}",
            shape.len()
        ));
    }
    let bytes = (shape.iter().filter(|&&d| d != 0))
        .try_fold(width, |a, &d| a.checked_mul(d))
        .filter(|&b| b <= i64::MAX as u64);
    if bytes.is_none() {
        return Err(format!(
            "shape {shape:?} of {width}-byte elements is above numpy's largest array (2^63 - 1 bytes, zeros aside)"
        ));
    }
    Ok(shape)
}

pub(in crate::tree) fn packed_f4(elem: Elem) -> bool {
    matches!(
        elem,
        Elem::Logical(LogicalType::F4E2M1) | Elem::Hurray(ElemType::F4E2M1)
    )
}

/// The numpy `descr` of `elem` and its width in bytes.
fn npy_descr(elem: Elem, ml: bool) -> Result<(&'static str, u64), String> {
    let plain = |d: DType| match d {
        DType::F64 => ("<f8", 8),
        DType::F32 => ("<f4", 4),
        DType::F16 => ("<f2", 2),
        DType::BF16 if ml => ("bfloat16", 2),
        DType::BF16 => ("<V2", 2),
        DType::I64 => ("<i8", 8),
        DType::I32 => ("<i4", 4),
        DType::I16 => ("<i2", 2),
        DType::I8 => ("|i1", 1),
        DType::U64 => ("<u8", 8),
        DType::U32 => ("<u4", 4),
        DType::U16 => ("<u2", 2),
        DType::U8 => ("|u1", 1),
    };
    let f8 = |name: &'static str| (if ml { name } else { "|V1" }, 1);
    Ok(match elem {
        Elem::Plain(d) => plain(d),
        Elem::Logical(t) => match t {
            LogicalType::Bool => ("|b1", 1),
            LogicalType::F8E4M3Fn => f8("float8_e4m3fn"),
            LogicalType::F8E5M2 => f8("float8_e5m2"),
            LogicalType::F8E4M3Fnuz => f8("float8_e4m3fnuz"),
            LogicalType::F8E5M2Fnuz => f8("float8_e5m2fnuz"),
            LogicalType::F8E8M0 => f8("float8_e8m0fnu"),
            LogicalType::F4E2M1 => ("|u1", 1),
            LogicalType::Complex64 => ("<c8", 8),
            LogicalType::Complex128 => ("<c16", 16),
        },
        Elem::Hurray(e) => match e {
            ElemType::F16 => plain(DType::F16),
            ElemType::BF16 => plain(DType::BF16),
            ElemType::F32 => plain(DType::F32),
            ElemType::F64 => plain(DType::F64),
            ElemType::I8 => plain(DType::I8),
            ElemType::U8 => plain(DType::U8),
            ElemType::I16 => plain(DType::I16),
            ElemType::U16 => plain(DType::U16),
            ElemType::I32 => plain(DType::I32),
            ElemType::U32 => plain(DType::U32),
            ElemType::I64 => plain(DType::I64),
            ElemType::U64 => plain(DType::U64),
            // OCP OFP8 E4M3: no infinities, NaN 0x7F/0xFF (element-types.md).
            ElemType::F8E4M3 => f8("float8_e4m3fn"),
            ElemType::F8E5M2 => f8("float8_e5m2"),
            ElemType::F8E8M0 => f8("float8_e8m0fnu"),
            ElemType::F4E2M1 => ("|u1", 1),
            // IEEE binary128: numpy's float128 is x87 extended precision,
            // so only its bytes are lossless.
            ElemType::F128 => ("|V16", 16),
            ElemType::C64 => ("<c8", 8),
            ElemType::C128 => ("<c16", 16),
            ElemType::Bool => {
                return Err(
                    "Hurray bool is bit-packed (8 a byte), which numpy has no type for".into(),
                )
            }
            ElemType::F6E2M3 | ElemType::F6E3M2 => {
                return Err(format!(
                    "{} is packed 4 elements in 3 bytes, which numpy has no type for",
                    e.name()
                ))
            }
            ElemType::I4 | ElemType::U4 | ElemType::I2 | ElemType::U2 => {
                return Err(format!(
                    "{} is packed several elements a byte, which numpy has no type for",
                    e.name()
                ))
            }
            ElemType::Extension(_) => return Err("an extension type has no agreed meaning".into()),
        },
    })
}

/// The safetensors dtype of a tensor file of `len` bytes of `elem`
/// elements with object `o`'s shape; the reason where safetensors cannot
/// express it.
pub fn safetensors(o: &Object, elem: Elem, len: u64) -> Result<&'static str, String> {
    // (name, bits per element)
    let (name, bits) = match elem {
        Elem::Plain(d) => (st_plain(d), d.width() * 8),
        Elem::Logical(t) => match t {
            LogicalType::Bool => ("BOOL", 8),
            LogicalType::F8E4M3Fn => ("F8_E4M3", 8),
            LogicalType::F8E5M2 => ("F8_E5M2", 8),
            LogicalType::F8E4M3Fnuz => ("F8_E4M3FNUZ", 8),
            LogicalType::F8E5M2Fnuz => ("F8_E5M2FNUZ", 8),
            LogicalType::F8E8M0 => ("F8_E8M0", 8),
            LogicalType::F4E2M1 => ("F4", 4),
            LogicalType::Complex64 => ("C64", 64),
            LogicalType::Complex128 => return Err("safetensors has no complex128 (C128)".into()),
        },
        Elem::Hurray(e) => match e {
            ElemType::F16 => ("F16", 16),
            ElemType::BF16 => ("BF16", 16),
            ElemType::F32 => ("F32", 32),
            ElemType::F64 => ("F64", 64),
            ElemType::I8 => ("I8", 8),
            ElemType::U8 => ("U8", 8),
            ElemType::I16 => ("I16", 16),
            ElemType::U16 => ("U16", 16),
            ElemType::I32 => ("I32", 32),
            ElemType::U32 => ("U32", 32),
            ElemType::I64 => ("I64", 64),
            ElemType::U64 => ("U64", 64),
            ElemType::F8E4M3 => ("F8_E4M3", 8),
            ElemType::F8E5M2 => ("F8_E5M2", 8),
            ElemType::F8E8M0 => ("F8_E8M0", 8),
            ElemType::F4E2M1 => ("F4", 4),
            ElemType::C64 => ("C64", 64),
            e => {
                return Err(format!(
                    "safetensors has no {} with the same bytes{}",
                    e.name(),
                    if e == ElemType::Bool {
                        " (Hurray bool is bit-packed; safetensors BOOL is a byte)"
                    } else {
                        ""
                    }
                ))
            }
        },
    };
    let n = (o.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)))
        .ok_or_else(|| "its element count overflows".to_string())?;
    if bits == 4 && n % 2 == 1 {
        return Err(format!(
            "safetensors F4 needs an even element count; it has {n}"
        ));
    }
    let want = n
        .checked_mul(bits)
        .map(|b| b / 8)
        .ok_or_else(|| "its byte size overflows".to_string())?;
    if want != len {
        return Err(format!(
            "its {len} bytes are not the {want} its shape and type make"
        ));
    }
    Ok(name)
}

fn st_plain(d: DType) -> &'static str {
    match d {
        DType::F64 => "F64",
        DType::F32 => "F32",
        DType::F16 => "F16",
        DType::BF16 => "BF16",
        DType::I64 => "I64",
        DType::I32 => "I32",
        DType::I16 => "I16",
        DType::I8 => "I8",
        DType::U64 => "U64",
        DType::U32 => "U32",
        DType::U16 => "U16",
        DType::U8 => "U8",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(shape: &[u64]) -> Object {
        Object {
            name: "t".into(),
            shape: crate::format::shape(shape),
            layout: crate::format::Text::from("dense"),
            attributes: None,
            parts: Default::default(),
        }
    }

    #[test]
    fn npy_forms() {
        let o = obj(&[2, 3]);
        let f = |e, len, d| npy(&o, e, Shape::Tensor, len, d);
        let plain = NpyDtypes::Numpy;
        assert_eq!(f(Elem::Plain(DType::F32), 24, plain).unwrap().descr, "<f4");
        assert_eq!(f(Elem::Plain(DType::F32), 24, plain).unwrap().shape, [2, 3]);
        assert_eq!(f(Elem::Plain(DType::BF16), 12, plain).unwrap().descr, "<V2");
        assert_eq!(
            f(Elem::Plain(DType::BF16), 12, NpyDtypes::Ml)
                .unwrap()
                .descr,
            "bfloat16"
        );
        let c = f(Elem::Logical(LogicalType::Complex64), 48, plain).unwrap();
        assert_eq!((c.descr, c.shape.as_slice()), ("<c8", &[2u64, 3][..]));
        let p = f(Elem::Logical(LogicalType::F4E2M1), 3, plain).unwrap();
        assert_eq!((p.descr, p.shape.as_slice()), ("|u1", &[3u64][..]));
        assert!(f(Elem::Plain(DType::F32), 20, plain).is_err());
        assert!(f(Elem::Hurray(ElemType::Bool), 1, plain).is_err());
        let flat = npy(&o, Elem::Plain(DType::I64), Shape::Flat, 40, plain).unwrap();
        assert_eq!(flat.shape, [5]);
        assert!(npy(&o, Elem::Plain(DType::I64), Shape::Flat, 41, plain).is_err());
        let scalar = npy(&obj(&[]), Elem::Plain(DType::U8), Shape::Tensor, 1, plain).unwrap();
        assert!(scalar.shape.is_empty());
    }

    #[test]
    fn safetensors_forms() {
        let o = obj(&[2, 3]);
        assert_eq!(safetensors(&o, Elem::Plain(DType::BF16), 12), Ok("BF16"));
        assert_eq!(
            safetensors(&o, Elem::Logical(LogicalType::F4E2M1), 3),
            Ok("F4")
        );
        assert!(safetensors(&obj(&[3]), Elem::Logical(LogicalType::F4E2M1), 2).is_err());
        assert!(safetensors(&o, Elem::Logical(LogicalType::Complex128), 96).is_err());
        assert_eq!(
            safetensors(&o, Elem::Logical(LogicalType::Complex64), 48),
            Ok("C64")
        );
        assert!(safetensors(&o, Elem::Hurray(ElemType::Bool), 1).is_err());
        assert!(safetensors(&o, Elem::Plain(DType::F32), 4).is_err());
    }
}
