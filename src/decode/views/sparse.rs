//! Sparse data rules and the dense view (notes §3.2, §3.3).
//!
//! CSR rules, in the order checked: `indptr[0] == 0`; `indptr`
//! non-decreasing; `indptr[R] == nnz`; then, row by row, indices strictly
//! increasing and each `< C`. COO rules: every `coords[d·nnz + i] <
//! shape[d]`, then no two elements naming one cell, found by sorting the
//! row-major linear index of each element (16 bytes per element). Then the
//! values' content rules. Index words are little-endian; u32 widens to u64.
//!
//! The dense view starts from zeros of the values' type (all-zero bytes,
//! which is +0 for every float and zero for every integer and registered
//! type) and has `values[k]` at its cell, row-major. Cells are distinct once
//! the rules hold, so f4 nibbles can be OR-ed in.
//!
//! A range of the view is read from the cells it overlaps: CSR visits the
//! rows those cells lie in and, within each, binary-searches its sorted
//! columns for the first one in range; COO keeps its cells sorted, values
//! permuted to match ([`CooIndex`]), and binary-searches the first cell in
//! range. Either way the cost is the window plus a logarithm per row.

use super::prepared::Window;
use super::{check_content, data_violation, Elem};
use crate::error::Result;
use crate::format::manifest::Object;
use crate::format::profiles::{Coo, Csr};
use crate::format::types::DType;

/// A CSR object's parts, checked against its data rules.
pub(super) struct CsrParts {
    pub rows: u64,
    pub cols: u64,
    pub index: DType,
    pub e: Elem,
    pub values: Vec<u8>,
    pub indices: Vec<u8>,
    pub indptr: Vec<u8>,
}

/// A COO object's values as stored and each element's `(linear cell,
/// element index)`, sorted by cell: the checked form [`check_coo`] leaves.
pub(super) struct CooParts {
    pub e: Elem,
    pub values: Vec<u8>,
    pub cells: Vec<(u64, u64)>,
}

/// A COO object indexed for range reads: its cells in increasing order and
/// its values permuted to that order, so value `i` sits at `cells[i]`
/// (8 bytes per stored element beside the values).
pub(super) struct CooIndex {
    e: Elem,
    cells: Vec<u64>,
    values: Vec<u8>,
}

/// Index word `k` of a little-endian u32/u64 array. Callers index below the
/// length they checked; past it reads as `u64::MAX`, which every rule
/// rejects.
pub(super) fn at(bytes: &[u8], index: DType, k: u64) -> u64 {
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

/// The bytes of element `k` of `values`, or `None` past the end.
fn element(values: &[u8], w: usize, k: u64) -> Option<&[u8]> {
    let s = usize::try_from(k).ok()?.checked_mul(w)?;
    values.get(s..s.checked_add(w)?)
}

/// Nibble `k` of packed f4 values.
fn nibble(values: &[u8], k: u64) -> Option<u8> {
    let byte = values.get(usize::try_from(k / 2).ok()?)?;
    Some((byte >> (4 * (k % 2))) & 0xF)
}

/// Writes element `k` of `values`, whose cell is `p`, into the window
/// (the part of it that falls there).
fn put_cell(w: &mut Window<'_>, values: &[u8], e: Elem, k: u64, p: u64) -> Option<()> {
    match e {
        Elem::Bytes(width) => w.put(p.checked_mul(width as u64)?, element(values, width, k)?),
        Elem::Nibble => w.or_nibble(p, nibble(values, k)?),
    }
}

/// The cells `[lo, hi)` whose bytes overlap the window; `hi` may pass the
/// last cell by one (the pad nibble of an odd f4 count).
fn cell_span(e: Elem, w: &Window<'_>) -> Option<(u64, u64)> {
    let (start, end) = (w.start(), w.end());
    match e {
        Elem::Bytes(0) => Some((0, 0)),
        Elem::Bytes(width) => Some((start / width as u64, end.div_ceil(width as u64))),
        Elem::Nibble => Some((start.checked_mul(2)?, end.checked_mul(2)?)),
    }
}

/// The first `k` in `[a, b)` for which `below(k)` is false, assuming it is
/// true on a prefix and false after.
fn partition_point(mut a: u64, mut b: u64, below: impl Fn(u64) -> bool) -> u64 {
    while a < b {
        let mid = a + (b - a) / 2;
        if below(mid) {
            a = mid + 1;
        } else {
            b = mid;
        }
    }
    a
}

impl CsrParts {
    /// Fills the window (zeroed by the caller) from the rows it overlaps.
    pub(super) fn read(&self, w: &mut Window<'_>) -> Option<()> {
        let (lo, hi) = cell_span(self.e, w)?;
        if lo >= hi || self.cols == 0 || self.rows == 0 {
            return Some(());
        }
        let ptr = |r: u64| at(&self.indptr, self.index, r);
        let col = |k: u64| at(&self.indices, self.index, k);
        let last = ((hi - 1) / self.cols).min(self.rows - 1);
        for r in lo / self.cols..=last {
            let row = r.checked_mul(self.cols)?;
            // The columns of this row inside the window.
            let (from, to) = (lo.max(row) - row, hi.min(row + self.cols) - row);
            let (a, b) = (ptr(r), ptr(r + 1));
            for k in partition_point(a, b, |k| col(k) < from)..b {
                let j = col(k);
                if j >= to {
                    break;
                }
                put_cell(w, &self.values, self.e, k, row + j)?;
            }
        }
        Some(())
    }
}

impl CooIndex {
    /// Sorts the values into cell order; `None` when an element index is
    /// out of range (a broken invariant).
    pub(super) fn new(p: CooParts) -> Option<CooIndex> {
        let mut values = vec![0u8; p.values.len()];
        let mut cells = Vec::with_capacity(p.cells.len());
        for (i, &(cell, k)) in (0u64..).zip(&p.cells) {
            match p.e {
                Elem::Bytes(w) => {
                    let s = usize::try_from(i).ok()?.checked_mul(w)?;
                    let dst = values.get_mut(s..s.checked_add(w)?)?;
                    dst.copy_from_slice(element(&p.values, w, k)?);
                }
                Elem::Nibble => {
                    let b = values.get_mut(usize::try_from(i / 2).ok()?)?;
                    *b |= nibble(&p.values, k)? << (4 * (i % 2));
                }
            }
            cells.push(cell);
        }
        Some(CooIndex {
            e: p.e,
            cells,
            values,
        })
    }

    /// Heap bytes held: the permuted values and the sorted cells.
    pub(super) fn heap_bytes(&self) -> u64 {
        (self.values.capacity() + self.cells.capacity() * std::mem::size_of::<u64>()) as u64
    }

    /// Fills the window (zeroed by the caller) from the stored cells in it.
    pub(super) fn read(&self, w: &mut Window<'_>) -> Option<()> {
        let (lo, hi) = cell_span(self.e, w)?;
        let first = self.cells.partition_point(|&c| c < lo);
        let rest = self.cells.get(first..)?;
        for (k, &p) in (first as u64..).zip(rest).take_while(|(_, &p)| p < hi) {
            put_cell(w, &self.values, self.e, k, p)?;
        }
        Some(())
    }
}
