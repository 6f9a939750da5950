//! The sparse layout profiles `zt.sparse_csr/1` and `zt.sparse_coo/1`
//! (notes §3.2, §3.3).
//!
//! Metadata rules (parts, their types, sizes) are checked at open and give
//! `LayoutRule`; CSR's `(R + 1) · w` overflowing u64 gives `Shape`. Data
//! rules (pointers, indices, coordinates) need the decoded parts, so those
//! files open and fail `--verify` with `LayoutData`.

use super::super::Outcome;
use super::layout::{f32_ramp, le, Spec};
use super::{reject, valid, valid_then, Case};

pub fn cases() -> Vec<Case> {
    [csr(), coo()].into_iter().flatten().collect()
}

const CSR: &str = "zt.sparse_csr/1";
const COO: &str = "zt.sparse_coo/1";

/// A CSR object `[3, 5]` with `index` (u32 or u64) pointers and indices
/// and f32 values.
fn csr_with(index: &'static str, indptr: &[u64], indices: &[u64]) -> Spec {
    let w = if index == "u64" { 8 } else { 4 };
    Spec::new(CSR, &[3, 5])
        .part("indices", index, le(w, indices))
        .part("indptr", index, le(w, indptr))
        .part("values", "f32", f32_ramp(indices.len()))
}

/// Row 0 holds columns 1 and 3, row 1 nothing, row 2 columns 0, 2 and 4.
fn csr_base(index: &'static str) -> Spec {
    csr_with(index, &[0, 2, 2, 5], &[1, 3, 0, 2, 4])
}

/// The u32 base with `indptr` and `indices` replaced (5 values stay).
fn csr_data(indptr: &[u64], indices: &[u64]) -> Vec<u8> {
    let base = csr_base("u32");
    base.data("indptr", le(4, indptr))
        .data("indices", le(4, indices))
        .bytes()
}

fn csr() -> Vec<Case> {
    let base = || csr_base("u32");
    let data = Outcome::Reject("LayoutData");
    vec![
        valid("csr-u32", base().bytes()),
        valid("csr-u64", csr_base("u64").bytes()),
        // No stored element: indices and values are zero-length blobs.
        valid(
            "csr-empty",
            csr_with("u32", &[0, 0, 0, 0], &[]).shape(&[3, 4]).bytes(),
        ),
        reject(
            "csr-part-missing",
            "LayoutRule",
            base().without("indptr").bytes(),
        ),
        reject(
            "csr-part-extra",
            "LayoutRule",
            base().part("data", "u8", vec![0; 4]).bytes(),
        ),
        // Both index parts i32, so that only the index dtype is wrong.
        reject(
            "csr-indices-dtype-i32",
            "LayoutRule",
            base()
                .dtype("indices", "i32")
                .dtype("indptr", "i32")
                .bytes(),
        ),
        // A type the reader does not know, so no dtype pin applies first.
        reject(
            "csr-indices-typed",
            "LayoutRule",
            base().typed("indices", "acme.index").bytes(),
        ),
        // i32 has the width of u32, so the sizes hold under either dtype.
        reject(
            "csr-indptr-dtype-differs",
            "LayoutRule",
            base().dtype("indptr", "i32").bytes(),
        ),
        reject("csr-rank-1", "LayoutRule", base().shape(&[15]).bytes()),
        // 5 indices and 2 bytes.
        reject(
            "csr-indices-size-not-multiple",
            "LayoutRule",
            base()
                .data("indices", [le(4, &[1, 3, 0, 2, 4]), vec![0, 0]].concat())
                .bytes(),
        ),
        // R pointers instead of R + 1.
        reject(
            "csr-indptr-size-wrong",
            "LayoutRule",
            base().data("indptr", le(4, &[0, 2, 2])).bytes(),
        ),
        reject(
            "csr-values-size-wrong",
            "LayoutRule",
            base().data("values", f32_ramp(4)).bytes(),
        ),
        // R = 2^62 rows: (R + 1) · 4 overflows u64, though R · C does not.
        reject(
            "csr-indptr-size-overflow",
            "Shape",
            base().shape(&[1 << 62, 1]).bytes(),
        ),
        valid_then(
            "csr-indptr-first-nonzero",
            data,
            csr_data(&[1, 2, 2, 5], &[1, 3, 0, 2, 4]),
        ),
        // Row 1 would be [3, 2); rows 0 and 2 are in order on their own.
        valid_then(
            "csr-indptr-decreasing",
            data,
            csr_data(&[0, 3, 2, 5], &[0, 1, 2, 3, 4]),
        ),
        valid_then(
            "csr-indptr-last-below-nnz",
            data,
            csr_data(&[0, 2, 2, 4], &[1, 3, 0, 2, 4]),
        ),
        // Row 2 would be [2, 6), past the 5 indices there are.
        valid_then(
            "csr-indptr-last-past-nnz",
            data,
            csr_data(&[0, 2, 2, 6], &[1, 3, 0, 2, 4]),
        ),
        valid_then(
            "csr-indices-unsorted-in-row",
            data,
            csr_data(&[0, 2, 2, 5], &[1, 3, 0, 4, 2]),
        ),
        valid_then(
            "csr-indices-duplicate-in-row",
            data,
            csr_data(&[0, 2, 2, 5], &[1, 3, 0, 2, 2]),
        ),
        // Column 5 of 5.
        valid_then(
            "csr-index-out-of-range",
            data,
            csr_data(&[0, 2, 2, 5], &[1, 3, 0, 2, 5]),
        ),
    ]
}

/// A COO object of `shape` whose coordinates are `coords` (structure of
/// arrays: dimension 0 of every element, then dimension 1, ...) in `index`
/// words, with one f32 value per element.
fn coo_with(index: &'static str, shape: &[u64], coords: &[u64]) -> Spec {
    let w = if index == "u64" { 8 } else { 4 };
    let nnz = coords.len() / shape.len().max(1);
    Spec::new(COO, shape)
        .part("coords", index, le(w, coords))
        .part("values", "f32", f32_ramp(nnz))
}

/// `[3, 4]` with elements at (0, 1), (2, 3) and (1, 0).
fn coo_base() -> Spec {
    coo_with("u32", &[3, 4], &[0, 2, 1, 1, 3, 0])
}

fn coo() -> Vec<Case> {
    let data = Outcome::Reject("LayoutData");
    vec![
        valid("coo-u32", coo_base().bytes()),
        valid("coo-u64-rank-1", coo_with("u64", &[10], &[7, 0, 9]).bytes()),
        reject(
            "coo-part-missing",
            "LayoutRule",
            coo_base().without("values").bytes(),
        ),
        reject(
            "coo-coords-dtype-i32",
            "LayoutRule",
            coo_base().dtype("coords", "i32").bytes(),
        ),
        reject(
            "coo-coords-typed",
            "LayoutRule",
            coo_base().typed("coords", "acme.index").bytes(),
        ),
        // 7 words: not a whole number of 2-dimensional coordinates.
        reject(
            "coo-coords-size-not-divisible",
            "LayoutRule",
            coo_base()
                .data("coords", le(4, &[0, 2, 1, 1, 3, 0, 0]))
                .bytes(),
        ),
        reject(
            "coo-values-size-wrong",
            "LayoutRule",
            coo_base().data("values", f32_ramp(2)).bytes(),
        ),
        // ndim = 0: the divisor w · ndim is zero.
        reject("coo-rank-0", "LayoutRule", coo_base().shape(&[]).bytes()),
        // (2, 4) in a [3, 4] tensor.
        valid_then(
            "coo-coord-out-of-range",
            data,
            coo_base()
                .data("coords", le(4, &[0, 2, 1, 1, 4, 0]))
                .bytes(),
        ),
        // (0, 1) twice.
        valid_then(
            "coo-duplicate-cell",
            data,
            coo_base()
                .data("coords", le(4, &[0, 2, 0, 1, 3, 1]))
                .bytes(),
        ),
    ]
}
