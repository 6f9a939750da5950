//! A view ready to be read by range: [`Prepared`] holds the checked parts
//! and the indexes a range needs, and [`Prepared::read_into`] computes the
//! bytes of one range and nothing else.

use super::dequant::{MxParts, QuantParts};
use super::sparse::{CooIndex, CsrParts};
use super::{internal_error, Loaded};
use crate::error::Result;

/// The view of one object, prepared by [`super::prepare`]: its parts,
/// decoded and checked against the profile's data rules, and for COO its
/// cells sorted. Immutable, `Send` and `Sync`, so a cache can share one
/// behind an `Arc` and serve concurrent reads.
pub struct Prepared {
    name: String,
    size: u64,
    body: Body,
}

enum Body {
    Csr(CsrParts),
    Coo(CooIndex),
    Mx(MxParts),
    Quant(QuantParts),
    Ggml(crate::decode::dequant::values::Values, Vec<u8>),
}

impl Prepared {
    /// Indexes checked parts; `None` on a broken invariant.
    pub(super) fn new(name: &str, size: u64, parts: Loaded) -> Option<Prepared> {
        let body = match parts {
            Loaded::Csr(c) => Body::Csr(c),
            Loaded::Coo(c) => Body::Coo(CooIndex::new(c)?),
            Loaded::Mx(m) => Body::Mx(m),
            Loaded::Quant(q) => Body::Quant(q),
            Loaded::Ggml(v, data) => Body::Ggml(v, data),
        };
        Some(Prepared {
            name: name.to_string(),
            size,
            body,
        })
    }

    /// The view's size in bytes: what [`super::view`] announces.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The heap memory this holds, in bytes, for a cache's budget: the
    /// parts (by their allocations' capacity) and the COO cell index.
    pub fn heap_bytes(&self) -> u64 {
        let vecs = match &self.body {
            Body::Csr(c) => c.values.capacity() + c.indices.capacity() + c.indptr.capacity(),
            Body::Coo(c) => return c.heap_bytes() + self.name.capacity() as u64,
            Body::Mx(m) => m.data.capacity() + m.scales.capacity(),
            Body::Quant(q) => q.data.capacity() + q.scales.capacity() + q.zeros.capacity(),
            Body::Ggml(_, data) => data.capacity(),
        };
        (vecs + self.name.capacity()) as u64
    }

    /// Writes the view's bytes from `offset` into the front of `out`, as
    /// many as fit and the view has (none at or past its end), and returns
    /// how many: `out[..n]` is then `render(o)[offset..offset + n]`.
    ///
    /// Computes only the elements overlapping the range (cost in proportion
    /// to `out.len()`, plus a binary search per sparse row touched) and
    /// allocates nothing. Offsets and lengths need no alignment to the
    /// element size. The error is an internal one: the parts turned out
    /// inconsistent with what `prepare` checked, a bug rather than bad data.
    pub fn read_into(&self, offset: u64, out: &mut [u8]) -> Result<usize> {
        let start = offset.min(self.size);
        let n = usize::try_from(self.size - start).map_or(out.len(), |left| left.min(out.len()));
        let mut w = Window {
            start,
            out: &mut out[..n],
        };
        let done = match &self.body {
            Body::Csr(c) => {
                w.out.fill(0);
                c.read(&mut w)
            }
            Body::Coo(c) => {
                w.out.fill(0);
                c.read(&mut w)
            }
            Body::Mx(m) => m.read(&mut w),
            Body::Quant(q) => q.read(&mut w),
            Body::Ggml(v, data) => v.read_into(&data.as_slice(), start, w.out).ok(),
        };
        done.ok_or_else(|| internal_error(&self.name))?;
        Ok(n)
    }

    /// [`Self::read_into`] a new buffer of `len` bytes, clipped at the end
    /// of the view: `render(o)[offset..offset + len]`, or empty past the end.
    /// Allocates the clipped length, so the caller bounds `len` (a FUSE read
    /// asks for at most the mount's `max_read`).
    pub fn read_range(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let left = self.size - offset.min(self.size);
        let n = usize::try_from(left).map_or(len, |left| left.min(len));
        let mut out = vec![0u8; n];
        self.read_into(offset, &mut out)?;
        Ok(out)
    }
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.body {
            Body::Csr(_) => "csr",
            Body::Coo(_) => "coo",
            Body::Mx(_) => "mx",
            Body::Quant(_) => "quant_group",
            Body::Ggml(..) => "ggml",
        };
        f.debug_struct("Prepared")
            .field("object", &self.name)
            .field("kind", &kind)
            .field("size", &self.size)
            .field("heap_bytes", &self.heap_bytes())
            .finish()
    }
}

/// The bytes `[start, start + out.len())` of a view, being written.
pub(super) struct Window<'a> {
    start: u64,
    out: &'a mut [u8],
}

impl<'a> Window<'a> {
    /// The bytes of a view from `start` into `out`.
    pub(super) fn new(start: u64, out: &'a mut [u8]) -> Window<'a> {
        Window { start, out }
    }

    /// The view offset of the window's first byte.
    pub(super) fn start(&self) -> u64 {
        self.start
    }

    /// The view offset just past the window.
    pub(super) fn end(&self) -> u64 {
        self.start + self.out.len() as u64
    }

    /// Writes the part of `bytes`, which sit at view offset `at`, that
    /// falls in the window; `None` only on offset overflow.
    pub(super) fn put(&mut self, at: u64, bytes: &[u8]) -> Option<()> {
        let lo = at.max(self.start);
        let hi = at.checked_add(bytes.len() as u64)?.min(self.end());
        if lo < hi {
            // All four below out.len() or bytes.len(), so they fit usize.
            let dst = (lo - self.start) as usize..(hi - self.start) as usize;
            let src = (lo - at) as usize..(hi - at) as usize;
            self.out.get_mut(dst)?.copy_from_slice(bytes.get(src)?);
        }
        Some(())
    }

    /// ORs nibble `p` (two per byte, low first) into the window when its
    /// byte falls there.
    pub(super) fn or_nibble(&mut self, p: u64, nibble: u8) -> Option<()> {
        let byte = p / 2;
        if (self.start..self.end()).contains(&byte) {
            *self.out.get_mut((byte - self.start) as usize)? |= (nibble & 0xF) << (4 * (p % 2));
        }
        Some(())
    }
}
