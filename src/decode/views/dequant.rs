//! The dequantized views of `zt.mx/1` and `zt.quant_group/1` (notes §3.4,
//! §3.5): one f32, little-endian, per logical element, row-major.
//!
//! Each value is computed in f64, where every factor is exact, and rounded
//! once to f32 (round to nearest even; beyond the f32 range that gives ±inf,
//! and a NaN scale or element gives NaN).
//!
//! Both profiles group elements along `axis`. With `shape = outer × along ×
//! inner` around that axis, element `(o, a, n)` has the flat row-major index
//! `(o·along + a)·inner + n`; its lane is `o·inner + n`.
//!
//! # `zt.mx/1`
//!
//! `value = 2^(scale − 127) · elem`. The profile's flat `b = i /
//! block_size` is right only when `axis` is the last dim, so the block is
//! derived from the position along `axis` instead: block `a / block_size`
//! of lane `(o, n)`, and the scales are read as a row-major tensor of the
//! object's shape with `shape[axis]` replaced by `shape[axis] / block_size`,
//! i.e. scale index `(o·(along/block_size) + a/block_size)·inner + n`. For
//! the last axis (`inner = 1`) that is exactly `i / block_size`. Elements
//! decode per OCP (see [`super::elements`]); MXINT8 (`i8`) carries the OCP
//! implicit scale 2^−6.
//!
//! # `zt.quant_group/1`
//!
//! `value = (q − zero) · scale`, where code `q` is the unsigned `bits`-wide
//! field of flat index `i` (word `i / per_word`, slot `i % per_word`, read
//! as a little-endian word; `lsb_first` shifts by `slot·bits`, `msb_first`
//! by `(per_word − 1 − slot)·bits`). Scale and zero are those of cell `lane ·
//! groups + a / group_size`, i.e. `[lanes][groups]` row-major; zeros packed
//! `same_as_data` unpack exactly as codes do, at that cell index; plain
//! zeros are read as numbers of their dtype; an e8m0 scale byte `b` is
//! `2^(b − 127)` (0xFF is NaN). `group_size` 0 has no view (`super::plan`
//! refuses it): the profile's size equation and its "per channel" contradict
//! each other.
//!
//! # Ranges
//!
//! Every view byte belongs to one f32, and each f32 is computed from its
//! flat index alone ([`MxParts::value`], [`QuantParts::value`]), so a range
//! computes just the elements it overlaps, then clips their bytes to it.

use super::check_content;
use super::elements::{self, number};
use super::prepared::Window;
use crate::error::Result;
use crate::format::manifest::Object;
use crate::format::profiles::{
    Mx, MxElement, Order, QuantGroup, ScaleForm, ZeroPacking, ZeroPoint,
};
use crate::format::Ranges;
use std::borrow::Cow;

/// `(outer, along, inner)`: the products of the dims before, at and after
/// `axis`. Saturating: a product can overflow only when another dim is 0,
/// and then there is no element.
pub(super) fn split(shape: &[u64], axis: usize) -> (u64, u64, u64) {
    let prod = |dims: &[u64]| dims.iter().fold(1u64, |acc, &d| acc.saturating_mul(d));
    (prod(&shape[..axis]), shape[axis], prod(&shape[axis + 1..]))
}

/// Where an element sits: its flat row-major index and its position
/// `(o, a, n)` around the axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct At {
    pub i: u64,
    pub o: u64,
    pub a: u64,
    pub n: u64,
}

impl At {
    /// The position of flat index `i` among `(outer, along, inner)` dims
    /// with `along` and `inner` nonzero.
    fn of(i: u64, along: u64, inner: u64) -> At {
        let (rest, n) = (i / inner, i % inner);
        At {
            i,
            o: rest / along,
            a: rest % along,
            n,
        }
    }
}

/// Checks the one data rule of mx: f4 data of an odd element count leaves
/// the final high nibble zero (Appendix A).
pub(super) fn check_mx(o: &Object, m: &Mx, data: &[u8]) -> Result<()> {
    match (m.element, o.part("data")) {
        (Some(MxElement::F4E2M1), Some(p)) => check_content(o, "data", &p.ty, data, m.elements),
        _ => Ok(()),
    }
}

/// A part's bytes as a view reads them: held in memory (a prepared view)
/// or read by range from the file ([`FilePart`]).
pub(super) trait PartBytes {
    /// `len` bytes at `at`, or `None` past the part's end.
    fn at(&self, at: u64, len: u64) -> Option<Cow<'_, [u8]>>;
}

impl PartBytes for Vec<u8> {
    fn at(&self, at: u64, len: u64) -> Option<Cow<'_, [u8]>> {
        let start = usize::try_from(at).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.get(start..end).map(Cow::Borrowed)
    }
}

/// A part stored as it is at `start` of a file read by range.
pub(super) struct FilePart<'a> {
    pub file: &'a dyn Ranges,
    pub start: u64,
    pub len: u64,
}

impl PartBytes for FilePart<'_> {
    fn at(&self, at: u64, len: u64) -> Option<Cow<'_, [u8]>> {
        if at.checked_add(len)? > self.len {
            return None;
        }
        // From a map, `get` borrows: no copy.
        self.file.get(self.start.checked_add(at)?, len).ok()
    }
}

/// One byte of a part.
fn byte_at<B: PartBytes>(b: &B, at: u64) -> Option<u8> {
    b.at(at, 1)?.first().copied()
}

/// An mx object's parts and what it takes to dequantize them.
pub(super) struct MxParts<B = Vec<u8>> {
    pub e: MxElement,
    pub block_size: u64,
    /// `(outer, along, inner)` around the blocked axis.
    pub dims: (u64, u64, u64),
    pub data: B,
    pub scales: B,
}

impl<B: PartBytes> MxParts<B> {
    /// The value of one element, unrounded; `None` when a part is shorter
    /// than the metadata says (a broken invariant).
    pub(super) fn value(&self, at: At) -> Option<f64> {
        let (_, along, inner) = self.dims;
        let per_lane = along / self.block_size;
        let b = (at.o * per_lane + at.a / self.block_size) * inner + at.n;
        let scale = elements::e8m0(byte_at(&self.scales, b)?);
        let i = at.i;
        let x = match self.e {
            MxElement::F4E2M1 => elements::f4_e2m1(byte_at(&self.data, i / 2)? >> (4 * (i % 2))),
            MxElement::F8E4M3Fn => elements::f8_e4m3fn(byte_at(&self.data, i)?),
            MxElement::F8E5M2 => elements::f8_e5m2(byte_at(&self.data, i)?),
            MxElement::Int8 => elements::mx_int8(byte_at(&self.data, i)?),
        };
        Some(scale * x)
    }

    /// Fills the window with the elements it overlaps.
    pub(super) fn read(&self, w: &mut Window<'_>) -> Option<()> {
        read_f32s(w, self.dims, |at| self.value(at))
    }
}

/// A quant_group object's parts and parameters (`group_size` nonzero).
pub(super) struct QuantParts<B = Vec<u8>> {
    pub q: QuantGroup,
    /// `(outer, along, inner)` around the grouped axis.
    pub dims: (u64, u64, u64),
    pub data: B,
    pub scales: B,
    /// Empty unless the zero point is a tensor.
    pub zeros: B,
}

impl<B: PartBytes> QuantParts<B> {
    /// The value of one element, unrounded; `None` when a part is shorter
    /// than the metadata says or `group_size` is 0 (broken invariants).
    pub(super) fn value(&self, at: At) -> Option<f64> {
        let q = &self.q;
        if q.group_size == 0 {
            return None;
        }
        let (_, _, inner) = self.dims;
        let lane = at.o * inner + at.n;
        let cell = lane
            .checked_mul(q.groups)?
            .checked_add(at.a / q.group_size)?;
        let code = unpack(&self.data, q, at.i)? as f64;
        Some((code - self.zero(cell)?) * self.scale(cell)?)
    }

    fn scale(&self, cell: u64) -> Option<f64> {
        match self.q.scale_form {
            ScaleForm::E8m0Exponent => Some(elements::e8m0(byte_at(&self.scales, cell)?)),
            ScaleForm::F32Factors | ScaleForm::F16Factors => {
                number_at(&self.scales, self.q.scales, cell)
            }
        }
    }

    fn zero(&self, cell: u64) -> Option<f64> {
        match (self.q.zero_point, self.q.zeros) {
            (ZeroPoint::None, _) => Some(0.0),
            (ZeroPoint::Implied(v), _) => Some(v as f64),
            (ZeroPoint::Tensor(ZeroPacking::Plain), Some(d)) => number_at(&self.zeros, d, cell),
            (ZeroPoint::Tensor(ZeroPacking::SameAsData), _) => {
                Some(unpack(&self.zeros, &self.q, cell)? as f64)
            }
            (ZeroPoint::Tensor(ZeroPacking::Plain), None) => None,
        }
    }

    /// Fills the window with the elements it overlaps.
    pub(super) fn read(&self, w: &mut Window<'_>) -> Option<()> {
        read_f32s(w, self.dims, |at| self.value(at))
    }
}

/// Computes the f32 elements overlapping the window, each rounded once
/// from its f64 value, and writes the bytes of theirs that fall in it.
fn read_f32s(
    w: &mut Window<'_>,
    (_, along, inner): (u64, u64, u64),
    value: impl Fn(At) -> Option<f64>,
) -> Option<()> {
    let (lo, hi) = (w.start() / 4, w.end().div_ceil(4));
    if lo >= hi {
        return Some(());
    }
    // A nonempty view has every dim nonzero.
    if along == 0 || inner == 0 {
        return None;
    }
    for i in lo..hi {
        let v = value(At::of(i, along, inner))? as f32;
        w.put(i.checked_mul(4)?, &v.to_le_bytes())?;
    }
    Some(())
}

/// Number `k` of dtype `d` in a part.
fn number_at<B: PartBytes>(b: &B, d: crate::format::types::DType, k: u64) -> Option<f64> {
    let w = d.width();
    number(&b.at(k.checked_mul(w)?, w)?, d, 0)
}

/// Reads the unsigned code (or packed zero) at index `i` of a packed array.
fn unpack<B: PartBytes>(bytes: &B, q: &QuantGroup, i: u64) -> Option<u64> {
    let w = q.word.width() as usize;
    let start = (i / q.per_word).checked_mul(w as u64)?;
    let mut le = [0u8; 8];
    le[..w].copy_from_slice(&bytes.at(start, w as u64)?);
    let word = u64::from_le_bytes(le);
    let slot = i % q.per_word;
    let shift = match q.order {
        Order::LsbFirst => slot * u64::from(q.bits),
        Order::MsbFirst => (q.per_word - 1 - slot) * u64::from(q.bits),
    };
    Some((word >> shift) & ((1u64 << q.bits) - 1))
}
