//! ONNX element types (`TensorProto.DataType`) as zTensor's: a storage
//! type and, where zTensor registers one, a logical type; the bytes a
//! tensor of them takes in `raw_data` or an external file; and the types
//! this reader does not serve, each with why (its callers leave those
//! tensors out, saying so). The numbers are onnx.proto's, 0 to 28.

use crate::format::types::{DType, LogicalType};

/// zTensor's type for ONNX data type `t`: its storage type and logical
/// type; or why it has none.
pub fn ztensor_type(t: i32) -> Result<(DType, Option<LogicalType>), String> {
    let logical = |l: LogicalType| Ok((l.dtype(), Some(l)));
    let plain = |d: DType| Ok((d, None));
    match t {
        1 => plain(DType::F32),
        2 => plain(DType::U8),
        3 => plain(DType::I8),
        4 => plain(DType::U16),
        5 => plain(DType::I16),
        6 => plain(DType::I32),
        7 => plain(DType::I64),
        9 => logical(LogicalType::Bool),
        10 => plain(DType::F16),
        11 => plain(DType::F64),
        12 => plain(DType::U32),
        13 => plain(DType::U64),
        14 => logical(LogicalType::Complex64),
        15 => logical(LogicalType::Complex128),
        16 => plain(DType::BF16),
        17 => logical(LogicalType::F8E4M3Fn),
        18 => logical(LogicalType::F8E4M3Fnuz),
        19 => logical(LogicalType::F8E5M2),
        20 => logical(LogicalType::F8E5M2Fnuz),
        23 => logical(LogicalType::F4E2M1),
        24 => logical(LogicalType::F8E8M0),
        8 => Err("a string tensor: its elements have no fixed width".into()),
        21 | 22 => Err(
            "4-bit integers (UINT4, INT4), two to a byte: zTensor registers no such type".into(),
        ),
        25 | 26 => Err(
            "2-bit integers (UINT2, INT2), four to a byte: zTensor registers no such type".into(),
        ),
        27 | 28 => Err(
            "6-bit floats (FLOAT6E2M3, FLOAT6E3M2), four to three bytes: zTensor registers no such type"
                .into(),
        ),
        0 => Err("data type UNDEFINED".into()),
        t => Err(format!("data type {t}, which ONNX does not define")),
    }
}

/// The bytes `count` elements of ONNX data type `t` take in `raw_data`:
/// `None` for a type with no fixed width or a count that overflows.
pub fn byte_len(t: i32, count: u64) -> Option<u64> {
    match t {
        21 | 22 => Some(count.div_ceil(2)),
        25 | 26 => Some(count.div_ceil(4)),
        27 | 28 => Some(count.checked_mul(6)?.div_ceil(8)),
        _ => {
            let (d, l) = ztensor_type(t).ok()?;
            match l {
                Some(l) => l.size(count),
                None => count.checked_mul(d.width()),
            }
        }
    }
}

/// Checks an external data `location` as onnx.proto defines it: a POSIX
/// path relative to the model's folder. Refused: empty, absolute, a `..`
/// component, a NUL. (Whether it leads out of the folder through a
/// symlink is the opener's to check, with the folder's own rules.)
pub fn check_location(location: &str) -> Result<(), String> {
    if location.is_empty() {
        return Err("an empty external data location".into());
    }
    if location.starts_with('/') {
        return Err(format!("external data location {location:?} is absolute"));
    }
    if location.contains('\0') {
        return Err(format!("external data location {location:?} holds a NUL"));
    }
    if location.split('/').any(|c| c == "..") {
        return Err(format!(
            "external data location {location:?} leads out of the model's folder"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_defined_type_is_served_or_refused_with_a_reason() {
        for t in 0..=29 {
            match ztensor_type(t) {
                Ok((d, l)) => {
                    let one = byte_len(t, 1).unwrap();
                    assert!(one >= 1, "{t}");
                    assert_eq!(l.map_or(d, |l| l.dtype()), d);
                }
                Err(why) => assert!(!why.is_empty()),
            }
        }
        assert_eq!(ztensor_type(1), Ok((DType::F32, None)));
        assert_eq!(ztensor_type(9), Ok((DType::U8, Some(LogicalType::Bool))));
        assert_eq!(byte_len(1, 3), Some(12));
        assert_eq!(byte_len(14, 3), Some(24));
        assert_eq!(byte_len(23, 3), Some(2));
        assert_eq!(byte_len(22, 5), Some(3));
        assert_eq!(byte_len(26, 5), Some(2));
        assert_eq!(byte_len(8, 5), None);
        assert_eq!(byte_len(11, u64::MAX), None);
    }

    #[test]
    fn locations_stay_in_the_folder() {
        for ok in ["model.onnx_data", "weights/a.bin", "./a", "a..b"] {
            assert!(check_location(ok).is_ok(), "{ok}");
        }
        for bad in ["", "/etc/passwd", "../secret", "a/../../b", "a\0b"] {
            assert!(check_location(bad).is_err(), "{bad:?}");
        }
    }
}
