//! The ggml tensor types a GGUF file may name (ggml.h `enum ggml_type`,
//! read at ggml-org/ggml `d99724f`): each id's name, its block of elements
//! and bytes, and for the unquantized ones the zTensor dtype holding the
//! same little-endian elements.
//!
//! The quantized types of the `gguf.<type>/1` profile take their block
//! from its table ([`gguf_block`]); the types ggml added after it (`tq1_0`,
//! `tq2_0`, `nvfp4`, `q1_0`, `q2_0`) carry theirs here. Removed ids (4, 5,
//! 31..=33, 36..=38) and ids past the last are unknown.

use crate::format::profiles::gguf_block;
use crate::format::types::DType;

/// One ggml type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GgmlType {
    /// The id in the file.
    pub id: u32,
    /// Lowercase name, as in a `gguf.<type>/1` layout id.
    pub name: &'static str,
    /// Elements per block (1 for unquantized types).
    pub block_elems: u64,
    /// Bytes per block.
    pub block_bytes: u64,
    /// The dtype of an unquantized type; `None` for a block type.
    pub dense: Option<DType>,
}

impl GgmlType {
    /// True for a block (quantized) type.
    pub fn is_quantized(&self) -> bool {
        self.dense.is_none()
    }
}

/// Unquantized types: (id, name, dtype).
const DENSE: [(u32, &str, DType); 8] = [
    (0, "f32", DType::F32),
    (1, "f16", DType::F16),
    (24, "i8", DType::I8),
    (25, "i16", DType::I16),
    (26, "i32", DType::I32),
    (27, "i64", DType::I64),
    (28, "f64", DType::F64),
    (30, "bf16", DType::BF16),
];

/// Quantized types of the profile's table, by id.
const PROFILE: [(u32, &str); 22] = [
    (2, "q4_0"),
    (3, "q4_1"),
    (6, "q5_0"),
    (7, "q5_1"),
    (8, "q8_0"),
    (9, "q8_1"),
    (10, "q2_k"),
    (11, "q3_k"),
    (12, "q4_k"),
    (13, "q5_k"),
    (14, "q6_k"),
    (15, "q8_k"),
    (16, "iq2_xxs"),
    (17, "iq2_xs"),
    (18, "iq3_xxs"),
    (19, "iq1_s"),
    (20, "iq4_nl"),
    (21, "iq3_s"),
    (22, "iq2_s"),
    (23, "iq4_xs"),
    (29, "iq1_m"),
    (39, "mxfp4"),
];

/// Quantized types newer than the profile's table: (id, name, elements
/// per block, bytes per block), from ggml-common.h.
const NEWER: [(u32, &str, u64, u64); 5] = [
    (34, "tq1_0", 256, 54),
    (35, "tq2_0", 256, 66),
    (40, "nvfp4", 64, 36),
    (41, "q1_0", 128, 18),
    (42, "q2_0", 64, 18),
];

/// The ggml type of id `id`, or `None` for an unknown or removed id.
pub fn ggml_type(id: u32) -> Option<GgmlType> {
    if let Some(&(_, name, dtype)) = DENSE.iter().find(|e| e.0 == id) {
        return Some(GgmlType {
            id,
            name,
            block_elems: 1,
            block_bytes: dtype.width(),
            dense: Some(dtype),
        });
    }
    if let Some(&(_, name)) = PROFILE.iter().find(|e| e.0 == id) {
        let (block_elems, block_bytes) = gguf_block(name)?;
        return Some(GgmlType {
            id,
            name,
            block_elems,
            block_bytes,
            dense: None,
        });
    }
    NEWER
        .iter()
        .find(|e| e.0 == id)
        .map(|&(id, name, block_elems, block_bytes)| GgmlType {
            id,
            name,
            block_elems,
            block_bytes,
            dense: None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_matches_ggml() {
        // (id, block elements, block bytes) from gguf-py's GGML_QUANT_SIZES.
        for (id, e, b) in [
            (0, 1, 4),
            (1, 1, 2),
            (2, 32, 18),
            (8, 32, 34),
            (12, 256, 144),
            (14, 256, 210),
            (24, 1, 1),
            (27, 1, 8),
            (28, 1, 8),
            (29, 256, 56),
            (30, 1, 2),
            (34, 256, 54),
            (35, 256, 66),
            (39, 32, 17),
            (40, 64, 36),
            (41, 128, 18),
        ] {
            let t = ggml_type(id).unwrap();
            assert_eq!((t.block_elems, t.block_bytes), (e, b), "{}", t.name);
        }
        for id in [4, 5, 31, 32, 33, 36, 37, 38, 43, u32::MAX] {
            assert_eq!(ggml_type(id), None, "{id}");
        }
        let known = (0..64).filter(|&i| ggml_type(i).is_some()).count();
        assert_eq!(known, 8 + 22 + 5);
    }
}
