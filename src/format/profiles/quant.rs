//! `zt.quant_group/1` and `zt.mx/1`: metadata rules (notes §3.4, §3.5).
//!
//! # `zt.quant_group/1`
//!
//! Required attributes `bits`, `group_size`, `axis`, `packing {word, order,
//! per_word}`, `scale_form`, `zero_point {form, value?, packing?}`, with the
//! profile's constraints and size equations. Where the text is open or
//! contradicts itself, this reader settles it as follows (none of it is
//! tested anywhere else, notes §3.4):
//!
//! 1. `bits` must be one of 2, 3, 4, 5, 6, 8 *and* divide `8·width(word)`,
//!    both as written. Since every word is 8, 16, 32 or 64 bits, 3, 5 and 6
//!    can never be valid; they are rejected (`LayoutRule`) with a message
//!    saying so, rather than accepted with some invented padding.
//! 2. `group_size == 0` ("per channel"): validation applies the size
//!    equation as written, `groups = group_size == 0 ? along : along /
//!    group_size`, which gives one scale per code. That is what two
//!    implementations working from the text agree on. It contradicts "per
//!    channel" (one scale per lane, `groups = 1`), so a file written with
//!    one scale per lane is rejected, and a file that satisfies the
//!    equation is valid but has no unambiguous decoder: the view is refused
//!    (`crate::decode::views`).
//! 3. `lanes = product(shape) / along` is computed as the product of the
//!    other dims, which is the same number and needs no division by a zero
//!    `along`.
//! 4. `scales` and `zeros` are ordered `[lanes][groups]`, row-major, lanes in
//!    row-major order of the non-axis dims. This is the notes' "natural
//!    reading"; it is not what AWQ/GPTQ store natively for axis 0
//!    (`[groups][lanes]`), so a writer must transpose.
//! 5. Codes are unsigned `bits`-bit fields even when `data.dtype` is the
//!    signed counterpart of the word: the dtype only says how wide a word
//!    is, and a signed code would need a sign-extension rule the text lacks.
//! 6. Codes are packed by their flat row-major index, so `product(shape)`
//!    must be a multiple of `per_word` (else `LayoutRule`: the size equation
//!    `codes/per_word` would silently drop the tail). Zeros packed
//!    `same_as_data` likewise need `groups·lanes` to be a multiple of
//!    `per_word`.
//! 7. Dtypes: `data` is the word or its signed counterpart with no logical
//!    type (it holds packed codes, which a logical type would reinterpret);
//!    `scales` is any float dtype for `f32_factors`, `f16` or `bf16` for
//!    `f16_factors`, `u8` with type `f8_e8m0` for `e8m0_exponent`, and has no
//!    logical type otherwise; `zeros` is the word or its signed counterpart
//!    for `same_as_data`, and any dtype with no logical type for `plain`.
//! 8. `zero_point.value` is any CBOR integer (negative allowed); it must be
//!    present iff the form is `implied`, and `zero_point.packing` iff the form
//!    is `tensor`.
//!
//! # `zt.mx/1`
//!
//! Parts exactly `data` and `scales`; `scales` is `u8` with type `f8_e8m0`;
//! `block_size ≥ 2` divides `shape[axis]`; `axis` defaults to `rank − 1` and
//! must be below the rank (so rank 0 is rejected); `scale_form` is
//! `"e8m0_exponent"`; `decoded(data) = size_T(product(shape))` and
//! `decoded(scales) = product(shape) / block_size`.
//!
//! An element type other than `f4_e2m1`, `f8_e4m3fn`, `f8_e5m2` (on `u8`) or
//! plain `i8` is valid at open and refused for decoding, as the profile says
//! ("any other element type must be refused for decoding"): that is how an
//! MXFP6 file, whose 6-bit type is not registered, stays readable
//! structurally. Its size equation is checked when its size function is
//! known (plain or registered), and skipped otherwise, as for dense.

use super::{
    attributes, axis_attr, check_size, choice_attr, exact_parts, lanes, map_attr, required, show,
    type_desc, uint_attr, violation,
};
use crate::error::Result;
use crate::format::cbor::Value;
use crate::format::manifest::{Object, Part};
use crate::format::types::{DType, Interpretation};

/// How codes sit in a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Code `s` of a word is bits `[s·bits, (s+1)·bits)`.
    LsbFirst,
    /// Code `s` of a word is at shift `(per_word − 1 − s)·bits`.
    MsbFirst,
}

/// What a scale element means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaleForm {
    /// A float factor, any float dtype.
    F32Factors,
    /// A float factor, `f16` or `bf16`.
    F16Factors,
    /// An `f8_e8m0` byte `b`, meaning `2^(b − 127)`.
    E8m0Exponent,
}

impl ScaleForm {
    /// The attribute value that names this form.
    pub fn name(self) -> &'static str {
        match self {
            ScaleForm::F32Factors => "f32_factors",
            ScaleForm::F16Factors => "f16_factors",
            ScaleForm::E8m0Exponent => "e8m0_exponent",
        }
    }
}

/// How a `zeros` part is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZeroPacking {
    /// Packed codes, like `data`.
    SameAsData,
    /// One element of its own dtype per (lane, group).
    Plain,
}

/// The zero point subtracted from each code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZeroPoint {
    /// Zero.
    None,
    /// One constant for the whole tensor.
    Implied(i128),
    /// One per (lane, group), from the `zeros` part.
    Tensor(ZeroPacking),
}

/// A `zt.quant_group/1` object's parameters, checked, with its derived
/// quantities.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantGroup {
    /// Bits per code: 2, 4 or 8 (see the module doc).
    pub bits: u32,
    /// Codes per group along `axis`; 0 as written in the profile.
    pub group_size: u64,
    /// The grouped dimension.
    pub axis: usize,
    /// The packing word, an unsigned dtype.
    pub word: DType,
    /// Code order within a word.
    pub order: Order,
    /// Codes per word: `8·width(word) / bits`.
    pub per_word: u64,
    /// What a scale element means.
    pub scale_form: ScaleForm,
    /// The scales part's dtype.
    pub scales: DType,
    /// The zero point.
    pub zero_point: ZeroPoint,
    /// The zeros part's dtype, when the zero point is `tensor`.
    pub zeros: Option<DType>,
    /// `shape[axis]`.
    pub along: u64,
    /// Groups per lane: `group_size == 0 ? along : along / group_size`.
    pub groups: u64,
    /// Product of the non-axis dims.
    pub lanes: u64,
    /// `product(shape)`.
    pub codes: u64,
}

/// Checks a quant_group object's metadata and returns its parameters.
pub fn parse_quant_group(o: &Object) -> Result<QuantGroup> {
    let attrs = attributes(o)?;
    let a = attrs.as_ref().ok_or_else(|| {
        violation(
            o,
            "no attributes, the profile requires bits, group_size, axis, packing, scale_form and zero_point",
        )
    })?;
    let bits = uint_attr(o, "bits", required(o, "bits", a.get("bits"))?)?;
    if ![2, 3, 4, 5, 6, 8].contains(&bits) {
        return Err(violation(
            o,
            format!("attribute \"bits\" is {bits}, must be one of [2, 3, 4, 5, 6, 8]"),
        ));
    }
    let packing = map_attr(o, "packing", required(o, "packing", a.get("packing"))?)?;
    let (word, order, per_word) = parse_packing(o, packing, bits)?;
    let group_size = uint_attr(
        o,
        "group_size",
        required(o, "group_size", a.get("group_size"))?,
    )?;
    let axis = axis_attr(o, a.get("axis"), false)?;
    let along = o.shape[axis];
    if group_size != 0 && !along.is_multiple_of(group_size) {
        return Err(violation(
            o,
            format!(
                "attribute \"group_size\" is {group_size}, which does not divide shape[{axis}] = {along}"
            ),
        ));
    }
    let sf = required(o, "scale_form", a.get("scale_form"))?;
    let scale_form = [
        ScaleForm::F32Factors,
        ScaleForm::F16Factors,
        ScaleForm::E8m0Exponent,
    ][choice_attr(
        o,
        "scale_form",
        sf,
        &["f32_factors", "f16_factors", "e8m0_exponent"],
    )?];
    let zp = map_attr(
        o,
        "zero_point",
        required(o, "zero_point", a.get("zero_point"))?,
    )?;
    let zero_point = parse_zero_point(o, zp)?;
    let codes = o
        .num_elements()
        .ok_or_else(|| violation(o, format!("shape {:?} overflows u64", o.shape)))?;
    // As written: group_size 0 gives one group per code along the axis.
    let groups = along.checked_div(group_size).unwrap_or(along);
    let mut q = QuantGroup {
        bits: bits as u32,
        group_size,
        axis,
        word,
        order,
        per_word,
        scale_form,
        scales: DType::U8,
        zero_point,
        zeros: None,
        along,
        groups,
        lanes: lanes(&o.shape, axis),
        codes,
    };
    check_quant_parts(o, &mut q)?;
    Ok(q)
}

fn parse_packing(o: &Object, p: &Value<'_>, bits: u64) -> Result<(DType, Order, u64)> {
    let words = [DType::U8, DType::U16, DType::U32, DType::U64];
    let w = required(o, "packing.word", p.get("word"))?;
    let word = words[choice_attr(o, "packing.word", w, &["u8", "u16", "u32", "u64"])?];
    let word_bits = 8 * word.width();
    if !word_bits.is_multiple_of(bits) {
        return Err(violation(
            o,
            format!(
                "attribute \"bits\" is {bits}, which does not divide the {word_bits} bits of a {word} word; \
                 the profile requires bits to divide 8·width(word), so only 2, 4 and 8 can ever be valid"
            ),
        ));
    }
    let ord = required(o, "packing.order", p.get("order"))?;
    let order = [Order::LsbFirst, Order::MsbFirst]
        [choice_attr(o, "packing.order", ord, &["lsb_first", "msb_first"])?];
    let per_word = uint_attr(
        o,
        "packing.per_word",
        required(o, "packing.per_word", p.get("per_word"))?,
    )?;
    let want = word_bits / bits;
    if per_word != want {
        return Err(violation(
            o,
            format!(
                "attribute \"packing.per_word\" is {per_word}, must be 8·width(word)/bits = {word_bits}/{bits} = {want}"
            ),
        ));
    }
    Ok((word, order, per_word))
}

fn parse_zero_point(o: &Object, zp: &Value<'_>) -> Result<ZeroPoint> {
    let f = required(o, "zero_point.form", zp.get("form"))?;
    let form = choice_attr(o, "zero_point.form", f, &["none", "implied", "tensor"])?;
    let (value, packing) = (zp.get("value"), zp.get("packing"));
    let present = |field: &str, v: Option<&Value<'_>>, want: bool, when: &str| {
        match (v, want) {
        (Some(v), false) => Err(violation(
            o,
            format!("attribute \"zero_point.{field}\" is {}, but it is allowed only when the form is {when:?}", show(v)),
        )),
        (None, true) => Err(violation(
            o,
            format!("attribute \"zero_point.{field}\" is missing, the form {when:?} requires it"),
        )),
        _ => Ok(()),
    }
    };
    present("value", value, form == 1, "implied")?;
    present("packing", packing, form == 2, "tensor")?;
    match (form, value, packing) {
        (1, Some(v), _) => match *v {
            Value::Uint(n) => Ok(ZeroPoint::Implied(i128::from(n))),
            Value::Nint(n) => Ok(ZeroPoint::Implied(-1 - i128::from(n))),
            _ => Err(violation(
                o,
                format!(
                    "attribute \"zero_point.value\" is {}, must be an integer",
                    show(v)
                ),
            )),
        },
        (2, _, Some(p)) => {
            let allowed = ["same_as_data", "plain"];
            let i = choice_attr(o, "zero_point.packing", p, &allowed)?;
            Ok(ZeroPoint::Tensor(
                [ZeroPacking::SameAsData, ZeroPacking::Plain][i],
            ))
        }
        _ => Ok(ZeroPoint::None),
    }
}

/// The signed dtype of the same width as an unsigned word.
fn signed(word: DType) -> DType {
    match word {
        DType::U8 => DType::I8,
        DType::U16 => DType::I16,
        DType::U32 => DType::I32,
        _ => DType::I64,
    }
}

fn check_word_part(o: &Object, p: &Part, word: DType) -> Result<()> {
    if (p.ty.dtype == word || p.ty.dtype == signed(word)) && p.ty.logical.is_none() {
        return Ok(());
    }
    Err(violation(
        o,
        format!(
            "part {:?} is {}, must be the packing word {word} or {} with no type",
            p.name,
            type_desc(p),
            signed(word)
        ),
    ))
}

fn check_scales_type(o: &Object, p: &Part, form: ScaleForm) -> Result<()> {
    let float = matches!(
        p.ty.dtype,
        DType::F64 | DType::F32 | DType::F16 | DType::BF16
    );
    let ok = match form {
        ScaleForm::F32Factors => float && p.ty.logical.is_none(),
        ScaleForm::F16Factors => {
            matches!(p.ty.dtype, DType::F16 | DType::BF16) && p.ty.logical.is_none()
        }
        ScaleForm::E8m0Exponent => {
            p.ty.dtype == DType::U8 && p.ty.logical.as_deref() == Some("f8_e8m0")
        }
    };
    if ok {
        return Ok(());
    }
    let allowed = match form {
        ScaleForm::F32Factors => "f64, f32, f16 or bf16 with no type",
        ScaleForm::F16Factors => "f16 or bf16 with no type",
        ScaleForm::E8m0Exponent => "u8 with type \"f8_e8m0\"",
    };
    Err(violation(
        o,
        format!(
            "part \"scales\" is {}, scale_form {:?} needs {allowed}",
            type_desc(p),
            form.name()
        ),
    ))
}

fn check_quant_parts(o: &Object, q: &mut QuantGroup) -> Result<()> {
    let (data, scales, zeros) = match q.zero_point {
        ZeroPoint::Tensor(_) => {
            let [d, s, z] = exact_parts(o, ["data", "scales", "zeros"])?;
            (d, s, Some(z))
        }
        _ => {
            let [d, s] = exact_parts(o, ["data", "scales"])?;
            (d, s, None)
        }
    };
    check_word_part(o, data, q.word)?;
    check_scales_type(o, scales, q.scale_form)?;
    q.scales = scales.ty.dtype;
    let w = q.word.width();
    if !q.codes.is_multiple_of(q.per_word) {
        return Err(violation(
            o,
            format!(
                "shape {:?} has {} codes, not a whole number of {}-code {} words",
                o.shape, q.codes, q.per_word, q.word
            ),
        ));
    }
    let why = format!(
        "codes/per_word · width(word) = {}/{} · {w}",
        q.codes, q.per_word
    );
    check_size(o, data, Some(q.codes / q.per_word * w), &why)?;
    let cells = q.groups.checked_mul(q.lanes);
    let why = format!(
        "groups · lanes · width = {} · {} · {}",
        q.groups,
        q.lanes,
        scales.ty.dtype.width()
    );
    check_size(
        o,
        scales,
        cells.and_then(|n| n.checked_mul(scales.ty.dtype.width())),
        &why,
    )?;
    if let (Some(z), ZeroPoint::Tensor(packing)) = (zeros, q.zero_point) {
        check_zeros(o, q, z, packing)?;
        q.zeros = Some(z.ty.dtype);
    }
    Ok(())
}

fn check_zeros(o: &Object, q: &QuantGroup, z: &Part, packing: ZeroPacking) -> Result<()> {
    let cells = q.groups.checked_mul(q.lanes);
    match packing {
        ZeroPacking::Plain => {
            if z.ty.logical.is_some() {
                return Err(violation(
                    o,
                    format!(
                        "part \"zeros\" is {}, plain zeros must have no type",
                        type_desc(z)
                    ),
                ));
            }
            let wz = z.ty.dtype.width();
            let why = format!("groups · lanes · width = {} · {} · {wz}", q.groups, q.lanes);
            check_size(o, z, cells.and_then(|n| n.checked_mul(wz)), &why)
        }
        ZeroPacking::SameAsData => {
            check_word_part(o, z, q.word)?;
            let cells = cells.unwrap_or(u64::MAX);
            if !cells.is_multiple_of(q.per_word) {
                return Err(violation(
                    o,
                    format!(
                        "{} zero points (groups · lanes) are not a whole number of {}-code {} words",
                        cells, q.per_word, q.word
                    ),
                ));
            }
            let w = q.word.width();
            let why = format!(
                "groups · lanes / per_word · width(word) = {cells}/{} · {w}",
                q.per_word
            );
            check_size(o, z, Some(cells / q.per_word * w), &why)
        }
    }
}

/// An element type `zt.mx/1` decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MxElement {
    /// `u8` with type `f4_e2m1` (MXFP4), two per byte, low nibble first.
    F4E2M1,
    /// `u8` with type `f8_e4m3fn` (MXFP8).
    F8E4M3Fn,
    /// `u8` with type `f8_e5m2` (MXFP8).
    F8E5M2,
    /// `i8` with no type (MXINT8).
    Int8,
}

/// A `zt.mx/1` object's parameters, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Mx {
    /// Elements per block along `axis`, ≥ 2.
    pub block_size: u64,
    /// The blocked dimension.
    pub axis: usize,
    /// The element type, `None` when it is one the profile does not decode
    /// (valid at open, refused for decoding).
    pub element: Option<MxElement>,
    /// `product(shape)`.
    pub elements: u64,
    /// `elements / block_size`, the scale count.
    pub blocks: u64,
}

/// Checks an mx object's metadata and returns its parameters.
pub fn parse_mx(o: &Object) -> Result<Mx> {
    let attrs = attributes(o)?;
    let a = attrs.as_ref().ok_or_else(|| {
        violation(
            o,
            "no attributes, the profile requires block_size and scale_form",
        )
    })?;
    let block_size = uint_attr(
        o,
        "block_size",
        required(o, "block_size", a.get("block_size"))?,
    )?;
    if block_size < 2 {
        return Err(violation(
            o,
            format!("attribute \"block_size\" is {block_size}, must be at least 2"),
        ));
    }
    let axis = axis_attr(o, a.get("axis"), true)?;
    let along = o.shape[axis];
    if !along.is_multiple_of(block_size) {
        return Err(violation(
            o,
            format!("attribute \"block_size\" is {block_size}, which does not divide shape[{axis}] = {along}"),
        ));
    }
    let sf = required(o, "scale_form", a.get("scale_form"))?;
    choice_attr(o, "scale_form", sf, &["e8m0_exponent"])?;
    let [data, scales] = exact_parts(o, ["data", "scales"])?;
    if scales.ty.dtype != DType::U8 || scales.ty.logical.as_deref() != Some("f8_e8m0") {
        return Err(violation(
            o,
            format!(
                "part \"scales\" is {}, must be u8 with type \"f8_e8m0\"",
                type_desc(scales)
            ),
        ));
    }
    let elements = o
        .num_elements()
        .ok_or_else(|| violation(o, format!("shape {:?} overflows u64", o.shape)))?;
    let blocks = elements / block_size;
    if !matches!(data.ty.interpretation(), Interpretation::Unknown) {
        let why = format!("size_{}(elements = {elements})", data.ty.type_name());
        check_size(o, data, data.ty.size(elements), &why)?;
    }
    let why = format!("one f8_e8m0 byte per block, {elements}/{block_size}");
    check_size(o, scales, Some(blocks), &why)?;
    Ok(Mx {
        block_size,
        axis,
        element: mx_element(data),
        elements,
        blocks,
    })
}

fn mx_element(data: &Part) -> Option<MxElement> {
    match (data.ty.dtype, data.ty.logical.as_deref()) {
        (DType::U8, Some("f4_e2m1")) => Some(MxElement::F4E2M1),
        (DType::U8, Some("f8_e4m3fn")) => Some(MxElement::F8E4M3Fn),
        (DType::U8, Some("f8_e5m2")) => Some(MxElement::F8E5M2),
        (DType::I8, None) => Some(MxElement::Int8),
        _ => None,
    }
}

#[cfg(test)]
#[path = "quant_tests.rs"]
mod tests;
