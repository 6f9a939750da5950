//! `zt.sparse_csr/1` and `zt.sparse_coo/1`: metadata rules (notes §3.2,
//! §3.3).
//!
//! CSR: rank 2 `[R, C]`; parts exactly `values`, `indices`, `indptr`;
//! `indices` plain `u32`/`u64`, `indptr` the same dtype, neither with a
//! logical type; `decoded(indices) % w == 0` with `nnz = decoded(indices)/w`;
//! `decoded(indptr) == (R+1)·w`, an overflow being `Shape` (as in the public
//! implementation); `decoded(values) == size_T(nnz)`, skipped when the values
//! type is unregistered.
//!
//! COO: rank ≥ 1; parts exactly `values`, `coords`; `coords` plain
//! `u32`/`u64`; `decoded(coords)` divisible by `w·ndim` with
//! `nnz = decoded(coords)/w/ndim`; `decoded(values) == size_T(nnz)`, skipped
//! like CSR's for an unregistered values type (the COO text does not say;
//! the same reason applies: the size function is unknown).
//!
//! `values` may have any dtype and type. Neither profile defines an
//! attribute; attributes present are ignored.

use super::{check_size, exact_parts, index_dtype, type_desc, violation};
use crate::error::{Error, Result, Rule};
use crate::format::manifest::{Object, Part};
use crate::format::types::{DType, ElementType, Interpretation};

/// A `zt.sparse_csr/1` object's metadata, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Csr {
    /// `shape[0]`.
    pub rows: u64,
    /// `shape[1]`.
    pub cols: u64,
    /// The dtype of `indices` and `indptr`: u32 or u64.
    pub index: DType,
    /// Stored elements: `decoded(indices) / width`.
    pub nnz: u64,
    /// The element type of `values`.
    pub values: ElementType,
}

/// A `zt.sparse_coo/1` object's metadata, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Coo {
    /// The dtype of `coords`: u32 or u64.
    pub index: DType,
    /// Stored elements: `decoded(coords) / width / ndim`.
    pub nnz: u64,
    /// The element type of `values`.
    pub values: ElementType,
}

/// Checks a CSR object's metadata and returns it.
pub fn parse_csr(o: &Object) -> Result<Csr> {
    let &[rows, cols] = &o.shape[..] else {
        return Err(violation(
            o,
            format!(
                "shape {:?} has rank {}, the profile needs rank 2 [rows, cols]",
                o.shape,
                o.shape.len()
            ),
        ));
    };
    let [values, indices, indptr] = exact_parts(o, ["values", "indices", "indptr"])?;
    let index = index_dtype(o, indices)?;
    if indptr.ty.dtype != index || indptr.ty.logical.is_some() {
        return Err(violation(
            o,
            format!(
                "part \"indptr\" is {}, must be {index} with no type, like \"indices\"",
                type_desc(indptr)
            ),
        ));
    }
    let w = index.width();
    if indices.decoded_size() % w != 0 {
        return Err(violation(
            o,
            format!(
                "part \"indices\" decodes to {} bytes, not a multiple of the {w}-byte {index} index",
                indices.decoded_size()
            ),
        ));
    }
    let nnz = indices.decoded_size() / w;
    let want = rows.checked_add(1).and_then(|n| n.checked_mul(w));
    let Some(want) = want else {
        return Err(Error::reject(
            Rule::Shape,
            format!(
                "object {:?} ({}): indptr of {rows}+1 {index} entries overflows u64 bytes",
                o.name, o.layout
            ),
        ));
    };
    check_size(
        o,
        indptr,
        Some(want),
        &format!("(rows + 1) · {w} = ({rows} + 1) · {w}"),
    )?;
    check_values(o, values, nnz)?;
    Ok(Csr {
        rows,
        cols,
        index,
        nnz,
        values: values.ty.clone(),
    })
}

/// Checks a COO object's metadata and returns it.
pub fn parse_coo(o: &Object) -> Result<Coo> {
    let ndim = o.shape.len() as u64;
    if ndim == 0 {
        return Err(violation(
            o,
            "shape [] has rank 0, the profile needs rank ≥ 1",
        ));
    }
    let [values, coords] = exact_parts(o, ["values", "coords"])?;
    let index = index_dtype(o, coords)?;
    // ndim ≤ 64 (validate checks the rank first) and w ≤ 8: no overflow.
    let per_element = index.width() * ndim;
    if coords.decoded_size() % per_element != 0 {
        return Err(violation(
            o,
            format!(
                "part \"coords\" decodes to {} bytes, not a multiple of width · ndim = {} · {ndim}",
                coords.decoded_size(),
                index.width()
            ),
        ));
    }
    let nnz = coords.decoded_size() / per_element;
    check_values(o, values, nnz)?;
    Ok(Coo {
        index,
        nnz,
        values: values.ty.clone(),
    })
}

fn check_values(o: &Object, values: &Part, nnz: u64) -> Result<()> {
    let ty = &values.ty;
    if matches!(ty.interpretation(), Interpretation::Unknown) {
        return Ok(());
    }
    let why = format!("size_{}(nnz = {nnz})", ty.type_name());
    check_size(o, values, ty.size(nnz), &why)
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::{check_metadata, SPARSE_COO, SPARSE_CSR};
    use super::*;

    fn csr(
        shape: &[u64],
        values: (&str, u64),
        indices: (&str, u64),
        indptr: (&str, u64),
    ) -> Object {
        let parts = vec![
            part("values", values.0, values.1),
            part("indices", indices.0, indices.1),
            part("indptr", indptr.0, indptr.1),
        ];
        object(SPARSE_CSR, shape, parts, None)
    }

    #[test]
    fn csr_accepts_consistent_sizes() {
        // 3×4, 5 stored f32 values, u32 indices: 20, 20, 16 bytes.
        let o = csr(&[3, 4], ("f32", 20), ("u32", 20), ("u32", 16));
        let c = parse_csr(&o).unwrap();
        assert_eq!((c.rows, c.cols, c.index, c.nnz), (3, 4, DType::U32, 5));
        // u64 indices, f4 values: ⌈5/2⌉ = 3 bytes.
        let o = csr(&[3, 4], ("u8:f4_e2m1", 3), ("u64", 40), ("u64", 32));
        assert!(check_metadata(&o).is_ok());
        // Empty: 0×0 with no stored values.
        let o = csr(&[0, 0], ("f64", 0), ("u32", 0), ("u32", 4));
        assert!(check_metadata(&o).is_ok());
    }

    #[test]
    fn csr_needs_rank_2() {
        for shape in [&[][..], &[4], &[2, 2, 2]] {
            let o = csr(shape, ("f32", 0), ("u32", 0), ("u32", 4));
            assert_eq!(
                rule_of(check_metadata(&o)),
                Some(Rule::LayoutRule),
                "{shape:?}"
            );
        }
    }

    #[test]
    fn csr_needs_exactly_its_three_parts() {
        let mut o = csr(&[1, 1], ("f32", 0), ("u32", 0), ("u32", 8));
        o.parts.push(part("data", "u8", 0));
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
        o.parts.truncate(2);
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
        o.parts.push(part("indptrs", "u32", 8));
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
    }

    #[test]
    fn csr_index_types() {
        let bad = [
            csr(&[1, 1], ("f32", 0), ("i32", 0), ("i32", 8)),
            csr(&[1, 1], ("f32", 0), ("u16", 0), ("u16", 4)),
            csr(&[1, 1], ("f32", 0), ("u32:idx", 0), ("u32", 8)),
            csr(&[1, 1], ("f32", 0), ("u32", 0), ("u64", 16)),
            csr(&[1, 1], ("f32", 0), ("u32", 0), ("u32:idx", 8)),
        ];
        for o in bad {
            assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule), "{o:?}");
        }
    }

    #[test]
    fn csr_sizes() {
        // indices not a whole number of words
        let o = csr(&[1, 4], ("f32", 4), ("u32", 6), ("u32", 8));
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
        // indptr not (R+1)·w
        let o = csr(&[2, 4], ("f32", 4), ("u32", 4), ("u32", 8));
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
        // values not size_T(nnz)
        let o = csr(&[1, 4], ("f32", 8), ("u32", 4), ("u32", 8));
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
        let o = csr(&[1, 4], ("u8:f4_e2m1", 2), ("u32", 12), ("u32", 8));
        assert!(check_metadata(&o).is_ok());
        let o = csr(&[1, 4], ("u8:f4_e2m1", 1), ("u32", 12), ("u32", 8));
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
    }

    #[test]
    fn csr_indptr_overflow_is_shape() {
        let o = csr(&[u64::MAX, 1], ("f32", 0), ("u32", 0), ("u32", 0));
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::Shape));
        let o = csr(&[u64::MAX / 8, 1], ("f32", 0), ("u64", 0), ("u64", 0));
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::Shape));
    }

    #[test]
    fn csr_values_of_an_unregistered_type_skip_the_size_check() {
        let o = csr(&[1, 4], ("u8:nf4", 1000), ("u32", 8), ("u32", 8));
        assert!(check_metadata(&o).is_ok());
    }

    fn coo(shape: &[u64], values: (&str, u64), coords: (&str, u64)) -> Object {
        let parts = vec![
            part("values", values.0, values.1),
            part("coords", coords.0, coords.1),
        ];
        object(SPARSE_COO, shape, parts, None)
    }

    #[test]
    fn coo_accepts_consistent_sizes() {
        // 3 elements in a 2×3×4 tensor, u32 coords: 3·3·4 = 36 bytes.
        let o = coo(&[2, 3, 4], ("i16", 6), ("u32", 36));
        assert_eq!(parse_coo(&o).unwrap().nnz, 3);
        let o = coo(&[5], ("f64", 0), ("u64", 0));
        assert!(check_metadata(&o).is_ok());
        let o = coo(&[5, 0], ("f64", 0), ("u64", 0));
        assert!(check_metadata(&o).is_ok());
    }

    #[test]
    fn coo_rules() {
        let bad = [
            coo(&[], ("f32", 4), ("u32", 0)),         // rank 0
            coo(&[4], ("f32", 4), ("i64", 8)),        // signed coords
            coo(&[4], ("f32", 4), ("u64:c", 8)),      // typed coords
            coo(&[4, 4], ("f32", 4), ("u32", 12)),    // 12 % (4·2) != 0
            coo(&[4, 4], ("f32", 8), ("u32", 8)),     // nnz 1, 8 bytes of f32
            coo(&[4, 4], ("u8:bool", 2), ("u32", 8)), // nnz 1, 2 bools
        ];
        for o in bad {
            assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule), "{o:?}");
        }
        let mut o = coo(&[4], ("f32", 4), ("u32", 4));
        o.parts.push(part("extra", "u8", 0));
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
        let o = coo(&[4], ("f32", 4), ("u32", 4));
        let o = Object {
            parts: smallvec::smallvec![o.parts[0].clone()],
            ..o
        };
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
    }

    #[test]
    fn sparse_ignores_attributes() {
        let a = attrs(&[("sorted", crate::format::cbor::Value::Bool(true))]);
        let mut o = coo(&[4], ("f32", 4), ("u32", 4));
        o.attributes = Some(crate::format::manifest::boxed_attributes(a));
        assert!(check_metadata(&o).is_ok());
    }
}
