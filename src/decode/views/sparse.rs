//! Sparse data rules and the dense view (notes §3.2, §3.3).
//!
//! CSR rules, in the order checked: `indptr[0] == 0`; `indptr`
//! non-decreasing; `indptr[R] == nnz`; then, row by row, indices strictly
//! increasing and each `< C`. COO rules: every `coords[d·nnz + i] <
//! shape[d]`, then no two elements naming one cell, found by sorting the
//! row-major linear index of each element (16 bytes per element). Then the
//! values' content rules. Index words are little-endian; u32 widens to u64.
//!
//! Rendering starts from zeros of the values' type (all-zero bytes, which
//! is +0 for every float and zero for every integer and registered type)
//! and writes `values[k]` at its cell, row-major. Cells are distinct once
//! the rules hold, so f4 nibbles can be OR-ed in.

use super::{check_content, data_violation, Elem};
use crate::error::Result;
use crate::format::manifest::Object;
use crate::format::profiles::{Coo, Csr};
use crate::format::types::DType;

/// Index word `k` of a little-endian u32/u64 array. Callers index below the
/// length they checked; past it reads as `u64::MAX`, which every rule
/// rejects.
fn at(bytes: &[u8], index: DType, k: u64) -> u64 {
    let w = index.width() as usize;
    let word = usize::try_from(k)
        .ok()
        .and_then(|k| k.checked_mul(w))
        .and_then(|s| bytes.get(s..s.checked_add(w)?));
    match word {
        Some(b) if w == 4 => u64::from(u32::from_le_bytes(b.try_into().unwrap_or([0xFF; 4]))),
        Some(b) => u64::from_le_bytes(b.try_into().unwrap_or([0xFF; 8])),
        None => u64::MAX,
    }
}

/// Checks the CSR data rules and the values' content rules.
pub(super) fn check_csr(
    o: &Object,
    c: &Csr,
    values: &[u8],
    indices: &[u8],
    indptr: &[u8],
) -> Result<()> {
    let ptr = |r: u64| at(indptr, c.index, r);
    let first = ptr(0);
    if first != 0 {
        return Err(data_violation(
            o,
            format!("indptr[0] is {first}, must be 0"),
        ));
    }
    for r in 0..c.rows {
        let (a, b) = (ptr(r), ptr(r + 1));
        if b < a {
            return Err(data_violation(
                o,
                format!(
                    "indptr[{}] is {b}, below indptr[{r}] = {a}; indptr must be non-decreasing",
                    r + 1
                ),
            ));
        }
    }
    let last = ptr(c.rows);
    if last != c.nnz {
        return Err(data_violation(
            o,
            format!("indptr[{}] is {last}, must be nnz = {}", c.rows, c.nnz),
        ));
    }
    for r in 0..c.rows {
        let mut prev = None;
        for k in ptr(r)..ptr(r + 1) {
            let j = at(indices, c.index, k);
            if j >= c.cols {
                return Err(data_violation(
                    o,
                    format!(
                        "indices[{k}] (row {r}) is {j}, not below the {} columns",
                        c.cols
                    ),
                ));
            }
            if let Some(p) = prev.filter(|&p| p >= j) {
                return Err(data_violation(
                    o,
                    format!(
                        "indices[{k}] (row {r}) is {j}, after {p}; indices must increase strictly within a row"
                    ),
                ));
            }
            prev = Some(j);
        }
    }
    check_content(o, "values", &c.values, values, c.nnz)
}

/// Checks the COO data rules and the values' content rules; returns each
/// element's `(linear cell, element index)`, sorted by cell.
pub(super) fn check_coo(
    o: &Object,
    c: &Coo,
    values: &[u8],
    coords: &[u8],
) -> Result<Vec<(u64, u64)>> {
    // The coords part holds nnz·ndim words, so nnz fits in memory.
    let mut cells: Vec<(u64, u64)> = (0..c.nnz).map(|i| (0, i)).collect();
    for (d, &n) in o.shape.iter().enumerate() {
        let base = d as u64 * c.nnz;
        for (i, cell) in cells.iter_mut().enumerate() {
            let x = at(coords, c.index, base + i as u64);
            if x >= n {
                return Err(data_violation(
                    o,
                    format!(
                        "coords[{d}·nnz + {i}] (element {i}, dim {d}) is {x}, not below shape[{d}] = {n}"
                    ),
                ));
            }
            // Below the product of the dims so far, which fits in u64 for a
            // validated shape; checked all the same.
            cell.0 = cell
                .0
                .checked_mul(n)
                .and_then(|c| c.checked_add(x))
                .ok_or_else(|| {
                    data_violation(
                        o,
                        format!(
                            "the cell of element {i} overflows u64 in shape {:?}",
                            o.shape
                        ),
                    )
                })?;
        }
    }
    cells.sort_unstable();
    if let Some(w) = cells.windows(2).find(|w| w[0].0 == w[1].0) {
        let (a, b) = (w[0].1.min(w[1].1), w[0].1.max(w[1].1));
        return Err(data_violation(
            o,
            format!(
                "elements {a} and {b} both name cell {:?}; each cell may be stored once",
                unravel(w[0].0, &o.shape)
            ),
        ));
    }
    check_content(o, "values", &c.values, values, c.nnz)?;
    Ok(cells)
}

/// The coordinate tuple of a row-major linear index.
fn unravel(mut lin: u64, shape: &[u64]) -> Vec<u64> {
    let mut out = vec![0; shape.len()];
    for (slot, &n) in out.iter_mut().zip(shape).rev() {
        if n > 0 {
            *slot = lin % n;
            lin /= n;
        }
    }
    out
}

/// Copies element `k` of `values` to cell `p` of `out`; `None` when either
/// is out of range (a broken invariant).
fn put(out: &mut [u8], values: &[u8], e: Elem, k: u64, p: u64) -> Option<()> {
    let (k, p) = (usize::try_from(k).ok()?, usize::try_from(p).ok()?);
    match e {
        Elem::Bytes(w) => {
            let src = values.get(k.checked_mul(w)?..k.checked_mul(w)?.checked_add(w)?)?;
            let dst = out.get_mut(p.checked_mul(w)?..p.checked_mul(w)?.checked_add(w)?)?;
            dst.copy_from_slice(src);
        }
        Elem::Nibble => {
            let nibble = (values.get(k / 2)? >> (4 * (k % 2))) & 0xF;
            *out.get_mut(p / 2)? |= nibble << (4 * (p % 2));
        }
    }
    Some(())
}

/// The dense view of a CSR object whose rules hold.
pub(super) fn render_csr(
    c: &Csr,
    e: Elem,
    size: u64,
    values: &[u8],
    indices: &[u8],
    indptr: &[u8],
) -> Option<Vec<u8>> {
    let mut out = vec![0u8; usize::try_from(size).ok()?];
    for r in 0..c.rows {
        for k in at(indptr, c.index, r)..at(indptr, c.index, r + 1) {
            let p = r
                .checked_mul(c.cols)?
                .checked_add(at(indices, c.index, k))?;
            put(&mut out, values, e, k, p)?;
        }
    }
    Some(out)
}

/// The dense view of a COO object whose rules hold, from its cells.
pub(super) fn render_coo(
    e: Elem,
    size: u64,
    values: &[u8],
    cells: &[(u64, u64)],
) -> Option<Vec<u8>> {
    let mut out = vec![0u8; usize::try_from(size).ok()?];
    for &(p, k) in cells {
        put(&mut out, values, e, k, p)?;
    }
    Some(out)
}
