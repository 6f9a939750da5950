//! The `gguf.<type>/1` family: opaque ggml block arrays (notes §3.6).
//!
//! The payload is preserved verbatim and never interpreted; only the size
//! constants it carries are checked: exactly one part `data`, `u8` with no
//! logical type; attributes `elems_per_block ≥ 1` dividing `product(shape)`
//! and `block_bytes ≥ 1`; `decoded(data) == product/elems_per_block ·
//! block_bytes`; and the projection rule, the last (fastest) dim divisible
//! by `elems_per_block`. A rank-0 shape has no last dim, so the projection
//! rule cannot hold and it is rejected (GGUF tensors always have a dim).
//!
//! The ids are those of the quantized ggml types in [`GGML_TYPES`]; any
//! other `gguf.` id is an unknown layout. The block table of
//! [`gguf_block`] is informative: an object whose attributes differ from it
//! is still valid (the attributes are authoritative for sizes), and
//! [`gguf_table_mismatch`] describes the difference for reports.

use super::{attributes, exact_parts, required, type_desc, uint_attr, violation, Layout};
use crate::error::Result;
use crate::format::manifest::Object;
use crate::format::types::DType;

/// The informative (elems_per_block, block_bytes) of each type in
/// [`GGML_TYPES`], in the same order.
const TABLE: [(&str, u64, u64); 22] = [
    ("q4_0", 32, 18),
    ("q4_1", 32, 20),
    ("q5_0", 32, 22),
    ("q5_1", 32, 24),
    ("q8_0", 32, 34),
    ("q8_1", 32, 36),
    ("q2_k", 256, 84),
    ("q3_k", 256, 110),
    ("q4_k", 256, 144),
    ("q5_k", 256, 176),
    ("q6_k", 256, 210),
    ("q8_k", 256, 292),
    ("iq2_xxs", 256, 66),
    ("iq2_xs", 256, 74),
    ("iq3_xxs", 256, 98),
    ("iq1_s", 256, 50),
    ("iq4_nl", 32, 18),
    ("iq3_s", 256, 110),
    ("iq2_s", 256, 82),
    ("iq4_xs", 256, 136),
    ("iq1_m", 256, 56),
    ("mxfp4", 32, 17),
];

/// The quantized ggml type names a `gguf.<type>/1` id may carry.
pub const GGML_TYPES: [&str; 22] = [
    "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k",
    "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq2_s", "iq4_xs", "iq1_m",
    "mxfp4",
];

/// A `gguf.<type>/1` object's constants, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gguf {
    /// The lowercase ggml type name.
    pub ggml_type: String,
    /// Logical elements per block.
    pub elems_per_block: u64,
    /// Bytes per block.
    pub block_bytes: u64,
    /// `product(shape) / elems_per_block`.
    pub blocks: u64,
}

/// The informative (elems_per_block, block_bytes) of a quantized ggml type,
/// from the compat crate's table; `None` for a type not in it.
pub fn gguf_block(ggml_type: &str) -> Option<(u64, u64)> {
    TABLE
        .iter()
        .find(|(t, _, _)| *t == ggml_type)
        .map(|&(_, e, b)| (e, b))
}

/// Checks a gguf object's metadata and returns its constants.
pub fn parse_gguf(o: &Object) -> Result<Gguf> {
    let Layout::Gguf { ggml_type } = Layout::of(&o.layout) else {
        return Err(violation(o, "not a gguf layout id"));
    };
    let [data] = exact_parts(o, ["data"])?;
    if data.ty.dtype != DType::U8 || data.ty.logical.is_some() {
        return Err(violation(
            o,
            format!(
                "part \"data\" is {}, must be u8 with no type",
                type_desc(data)
            ),
        ));
    }
    let attrs = attributes(o)?;
    let a = attrs.as_ref().ok_or_else(|| {
        violation(
            o,
            "no attributes, the profile requires elems_per_block and block_bytes",
        )
    })?;
    let epb = uint_attr(
        o,
        "elems_per_block",
        required(o, "elems_per_block", a.get("elems_per_block"))?,
    )?;
    let block_bytes = uint_attr(
        o,
        "block_bytes",
        required(o, "block_bytes", a.get("block_bytes"))?,
    )?;
    for (key, v) in [("elems_per_block", epb), ("block_bytes", block_bytes)] {
        if v == 0 {
            return Err(violation(
                o,
                format!("attribute {key:?} is 0, must be at least 1"),
            ));
        }
    }
    let n = o
        .num_elements()
        .ok_or_else(|| violation(o, format!("shape {:?} overflows u64", o.shape)))?;
    if n % epb != 0 {
        return Err(violation(
            o,
            format!("attribute \"elems_per_block\" is {epb}, which does not divide the {n} elements of shape {:?}", o.shape),
        ));
    }
    let Some(&last) = o.shape.last() else {
        return Err(violation(
            o,
            "shape [] has rank 0, a gguf projection needs a last dim",
        ));
    };
    if last % epb != 0 {
        return Err(violation(
            o,
            format!("attribute \"elems_per_block\" is {epb}, which does not divide the last dim {last} of shape {:?}", o.shape),
        ));
    }
    let blocks = n / epb;
    let want = blocks.checked_mul(block_bytes);
    let why = format!("product/elems_per_block · block_bytes = {n}/{epb} · {block_bytes}");
    super::check_size(o, data, want, &why)?;
    Ok(Gguf {
        ggml_type,
        elems_per_block: epb,
        block_bytes,
        blocks,
    })
}

/// Describes how a gguf object's block constants differ from the
/// informative table, or `None` when they agree (or it is not gguf, or its
/// attributes are unreadable). Not an error: the attributes are what sizes
/// are checked against.
pub fn gguf_table_mismatch(o: &Object) -> Option<String> {
    let g = parse_gguf(o).ok()?;
    let (e, b) = gguf_block(&g.ggml_type)?;
    if (e, b) == (g.elems_per_block, g.block_bytes) {
        return None;
    }
    Some(format!(
        "{} declares elems_per_block {} and block_bytes {}, the informative ggml table has {e} and {b}",
        g.ggml_type, g.elems_per_block, g.block_bytes
    ))
}

#[cfg(test)]
mod tests {
    use super::super::check_metadata;
    use super::super::testing::*;
    use super::*;
    use crate::error::Rule;
    use crate::format::cbor::Value;

    fn q4_0(shape: &[u64], len: u64, epb: u64, bb: u64) -> Object {
        let a = attrs(&[
            ("elems_per_block", Value::Uint(epb)),
            ("block_bytes", Value::Uint(bb)),
        ]);
        object("gguf.q4_0/1", shape, vec![part("data", "u8", len)], Some(a))
    }

    #[test]
    fn every_listed_type_has_a_table_entry() {
        let names: Vec<&str> = TABLE.iter().map(|e| e.0).collect();
        assert_eq!(names, GGML_TYPES);
        assert_eq!(gguf_block("q4_k"), Some((256, 144)));
        assert_eq!(gguf_block("mxfp4"), Some((32, 17)));
        assert_eq!(gguf_block("f16"), None);
        assert_eq!(gguf_block(""), None);
    }

    #[test]
    fn accepts_the_size_equation() {
        // 2 rows of 64: 4 blocks of 18 bytes.
        let o = q4_0(&[2, 64], 72, 32, 18);
        let g = parse_gguf(&o).unwrap();
        assert_eq!((g.ggml_type.as_str(), g.blocks), ("q4_0", 4));
        assert!(check_metadata(&o).is_ok());
        assert_eq!(gguf_table_mismatch(&o), None);
        let o = q4_0(&[0, 64], 0, 32, 18);
        assert!(check_metadata(&o).is_ok());
    }

    #[test]
    fn a_table_mismatch_is_reported_not_rejected() {
        let o = q4_0(&[64], 40, 32, 20);
        assert!(check_metadata(&o).is_ok());
        assert!(gguf_table_mismatch(&o).is_some());
    }

    #[test]
    fn rejects_each_rule() {
        let bad = [
            q4_0(&[2, 64], 71, 32, 18), // size
            q4_0(&[2, 64], 0, 0, 18),   // epb 0
            q4_0(&[2, 64], 0, 32, 0),   // block_bytes 0
            q4_0(&[3, 10], 36, 15, 18), // 30 % 15 == 0 but 10 % 15 != 0
            q4_0(&[5], 18, 32, 18),     // 5 % 32
            q4_0(&[], 18, 1, 18),       // rank 0
            q4_0(&[u64::MAX], 0, 1, 2), // size overflow
        ];
        for o in bad {
            assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule), "{o:?}");
        }
    }

    #[test]
    fn data_part_must_be_plain_u8_and_alone() {
        let mut o = q4_0(&[32], 18, 32, 18);
        o.parts[0] = part("data", "i8", 18);
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
        o.parts[0] = part("data", "u8:f8_e4m3fn", 18);
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
        o.parts[0] = part("blocks", "u8", 18);
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
        o.parts = smallvec::smallvec![part("data", "u8", 18), part("extra", "u8", 0)];
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
    }

    #[test]
    fn attributes_are_required_and_typed() {
        let mut o = q4_0(&[32], 18, 32, 18);
        o.attributes = None;
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
        o.attributes = Some(crate::format::manifest::boxed_attributes(attrs(&[(
            "elems_per_block",
            Value::Uint(32),
        )])));
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
        o.attributes = Some(crate::format::manifest::boxed_attributes(attrs(&[
            ("elems_per_block", Value::Text("32")),
            ("block_bytes", Value::Uint(18)),
        ])));
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
    }

    #[test]
    fn an_unlisted_gguf_type_is_an_unknown_layout() {
        let mut o = q4_0(&[32], 1, 32, 18);
        o.layout = "gguf.q4_2/1".into();
        assert!(check_metadata(&o).is_ok());
    }
}
