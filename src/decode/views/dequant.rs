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

use super::check_content;
use super::elements::{self, number};
use crate::error::Result;
use crate::format::manifest::Object;
use crate::format::profiles::{
    Mx, MxElement, Order, QuantGroup, ScaleForm, ZeroPacking, ZeroPoint,
};

/// `(outer, along, inner)`: the products of the dims before, at and after
/// `axis`. Saturating: a product can overflow only when another dim is 0,
/// and then no element is visited.
fn split(shape: &[u64], axis: usize) -> (u64, u64, u64) {
    let prod = |dims: &[u64]| dims.iter().fold(1u64, |acc, &d| acc.saturating_mul(d));
    (prod(&shape[..axis]), shape[axis], prod(&shape[axis + 1..]))
}

/// Where an element sits: its flat row-major index and its position
/// `(o, a, n)` around the axis.
struct At {
    i: u64,
    o: u64,
    a: u64,
    n: u64,
}

/// Visits every element in row-major order.
fn for_each_element(shape: &[u64], axis: usize, mut f: impl FnMut(At) -> Option<()>) -> Option<()> {
    let (outer, along, inner) = split(shape, axis);
    let mut i = 0u64;
    for o in 0..outer {
        for a in 0..along {
            for n in 0..inner {
                f(At { i, o, a, n })?;
                i += 1;
            }
        }
    }
    Some(())
}

/// Checks the one data rule of mx: f4 data of an odd element count leaves
/// the final high nibble zero (Appendix A).
pub(super) fn check_mx(o: &Object, m: &Mx, data: &[u8]) -> Result<()> {
    match (m.element, o.part("data")) {
        (Some(MxElement::F4E2M1), Some(p)) => check_content(o, "data", &p.ty, data, m.elements),
        _ => Ok(()),
    }
}

fn push(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&(v as f32).to_le_bytes());
}

/// Renders the dequantized view of an mx object.
pub(super) fn render_mx(
    shape: &[u64],
    m: &Mx,
    e: MxElement,
    data: &[u8],
    scales: &[u8],
) -> Option<Vec<u8>> {
    let scale = elements::table(elements::e8m0);
    let byte_table = match e {
        MxElement::F8E4M3Fn => elements::table(elements::f8_e4m3fn),
        MxElement::F8E5M2 => elements::table(elements::f8_e5m2),
        MxElement::Int8 => elements::table(elements::mx_int8),
        MxElement::F4E2M1 => [0.0; 256],
    };
    let elem = |i: usize| -> Option<f64> {
        match e {
            MxElement::F4E2M1 => Some(elements::f4_e2m1(data.get(i / 2)? >> (4 * (i % 2)))),
            _ => Some(byte_table[usize::from(*data.get(i)?)]),
        }
    };
    let (_, along, inner) = split(shape, m.axis);
    let per_lane = along / m.block_size;
    let mut out = Vec::with_capacity(usize::try_from(m.elements.checked_mul(4)?).ok()?);
    for_each_element(shape, m.axis, |at| {
        let b = (at.o * per_lane + at.a / m.block_size) * inner + at.n;
        let s = scale[usize::from(*scales.get(usize::try_from(b).ok()?)?)];
        push(&mut out, s * elem(usize::try_from(at.i).ok()?)?);
        Some(())
    })?;
    Some(out)
}

/// Reads the unsigned code (or packed zero) at index `i` of a packed array.
fn unpack(bytes: &[u8], q: &QuantGroup, i: u64) -> Option<u64> {
    let w = q.word.width() as usize;
    let start = usize::try_from(i / q.per_word).ok()?.checked_mul(w)?;
    let mut le = [0u8; 8];
    le[..w].copy_from_slice(bytes.get(start..start.checked_add(w)?)?);
    let word = u64::from_le_bytes(le);
    let slot = i % q.per_word;
    let shift = match q.order {
        Order::LsbFirst => slot * u64::from(q.bits),
        Order::MsbFirst => (q.per_word - 1 - slot) * u64::from(q.bits),
    };
    Some((word >> shift) & ((1u64 << q.bits) - 1))
}

/// Renders the dequantized view of a quant_group object with a nonzero
/// group size.
pub(super) fn render_quant(
    shape: &[u64],
    q: &QuantGroup,
    data: &[u8],
    scales: &[u8],
    zeros: &[u8],
) -> Option<Vec<u8>> {
    if q.group_size == 0 {
        return None;
    }
    let e8m0 = elements::table(elements::e8m0);
    let scale = |cell: usize| -> Option<f64> {
        match q.scale_form {
            ScaleForm::E8m0Exponent => Some(e8m0[usize::from(*scales.get(cell)?)]),
            ScaleForm::F32Factors | ScaleForm::F16Factors => number(scales, q.scales, cell),
        }
    };
    let zero = |cell: usize| -> Option<f64> {
        match (q.zero_point, q.zeros) {
            (ZeroPoint::None, _) => Some(0.0),
            (ZeroPoint::Implied(v), _) => Some(v as f64),
            (ZeroPoint::Tensor(ZeroPacking::Plain), Some(d)) => number(zeros, d, cell),
            (ZeroPoint::Tensor(ZeroPacking::SameAsData), _) => {
                Some(unpack(zeros, q, cell as u64)? as f64)
            }
            (ZeroPoint::Tensor(ZeroPacking::Plain), None) => None,
        }
    };
    let mut out = Vec::with_capacity(usize::try_from(q.codes.checked_mul(4)?).ok()?);
    let (_, _, inner) = split(shape, q.axis);
    for_each_element(shape, q.axis, |at| {
        let lane = at.o * inner + at.n;
        let cell = usize::try_from(lane * q.groups + at.a / q.group_size).ok()?;
        let code = unpack(data, q, at.i)? as f64;
        push(&mut out, (code - zero(cell)?) * scale(cell)?);
        Some(())
    })?;
    Some(out)
}
