//! The whole view, built the obvious way: a buffer of the view's size,
//! then every stored element written at its cell (sparse) or every element
//! pushed in row-major order (dequantized). This is what [`super::render`]
//! returns and the oracle the range reads of [`super::Prepared`] are
//! tested against, so it shares with them only the element decoders, not
//! the arithmetic that finds which elements a range needs.

use super::dequant::At;
use super::sparse::{at, CooParts, CsrParts};
use super::{Elem, Loaded};

/// The whole view of checked parts; `None` when an invariant the checks
/// established turns out broken.
pub(super) fn render(parts: &Loaded, size: u64) -> Option<Vec<u8>> {
    match parts {
        Loaded::Csr(c) => render_csr(c, size),
        Loaded::Coo(c) => render_coo(c, size),
        Loaded::Mx(m) => render_f32s(size, m.dims, |at| m.value(at)),
        Loaded::Quant(q) => render_f32s(size, q.dims, |at| q.value(at)),
        // Every block dequantized at once (the block decoders have their
        // own oracle: gguf-py, decode/dequant/tests.rs).
        Loaded::Ggml(v, data) => {
            let mut out = vec![0u8; usize::try_from(size).ok()?];
            v.read_into(&data.as_slice(), 0, &mut out).ok()?;
            Some(out)
        }
    }
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

fn render_csr(c: &CsrParts, size: u64) -> Option<Vec<u8>> {
    let mut out = vec![0u8; usize::try_from(size).ok()?];
    for r in 0..c.rows {
        for k in at(&c.indptr, c.index, r)..at(&c.indptr, c.index, r + 1) {
            let p = r
                .checked_mul(c.cols)?
                .checked_add(at(&c.indices, c.index, k))?;
            put(&mut out, &c.values, c.e, k, p)?;
        }
    }
    Some(out)
}

fn render_coo(c: &CooParts, size: u64) -> Option<Vec<u8>> {
    let mut out = vec![0u8; usize::try_from(size).ok()?];
    for &(p, k) in &c.cells {
        put(&mut out, &c.values, c.e, k, p)?;
    }
    Some(out)
}

/// Every element in row-major order, each rounded once to f32.
fn render_f32s(
    size: u64,
    (outer, along, inner): (u64, u64, u64),
    value: impl Fn(At) -> Option<f64>,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(usize::try_from(size).ok()?);
    let mut i = 0u64;
    for o in 0..outer {
        for a in 0..along {
            for n in 0..inner {
                let v = value(At { i, o, a, n })? as f32;
                out.extend_from_slice(&v.to_le_bytes());
                i += 1;
            }
        }
    }
    Some(out)
}
