//! The block-scaled and group-quantized layout profiles `zt.mx/1` and
//! `zt.quant_group/1` (notes §3.4, §3.5). Neither has data rules: every
//! rule is metadata, checked at open, and gives `LayoutRule`.
//!
//! Where the profile text leaves a gap (notes §3.4 "Gaps"), the cases take
//! its equations as written: `group_size = 0` gives `groups = shape[axis]`,
//! one scale per code, which is what `quant-int8-per-channel` stores.

use super::super::builder::Fields;
use super::layout::{byte_ramp, f16_ramp, f32_ramp, le, Spec};
use super::{reject, valid, Case};

pub fn cases() -> Vec<Case> {
    [mx(), quant_group()].into_iter().flatten().collect()
}

const MX: &str = "zt.mx/1";
const QUANT: &str = "zt.quant_group/1";

/// An MX object `[2, 32]`, block 32 along the last axis (the default), so
/// 2 blocks and 2 scale bytes; `data` holds the elements as `dtype`/`ty`.
fn mx_with(dtype: &'static str, ty: Option<&'static str>, data: Vec<u8>) -> Spec {
    let s = Spec::new(MX, &[2, 32])
        .attr("block_size", 32u64)
        .attr("scale_form", "e8m0_exponent")
        .part("data", dtype, data)
        .part("scales", "u8", vec![127, 130])
        .typed("scales", "f8_e8m0");
    match ty {
        Some(ty) => s.typed("data", ty),
        None => s,
    }
}

/// MXFP4: 64 elements packed two per byte.
fn mxfp4() -> Spec {
    mx_with("u8", Some("f4_e2m1"), byte_ramp(32))
}

fn mx() -> Vec<Case> {
    let fp8 = |ty| mx_with("u8", Some(ty), byte_ramp(64));
    vec![
        valid("mx-fp4", mxfp4().bytes()),
        valid("mx-fp8-e4m3fn", fp8("f8_e4m3fn").bytes()),
        valid("mx-fp8-e5m2", fp8("f8_e5m2").bytes()),
        valid("mx-int8", mx_with("i8", None, byte_ramp(64)).bytes()),
        // Blocks run down the columns: 32 rows, 2 columns, 2 blocks.
        valid(
            "mx-axis-0",
            fp8("f8_e4m3fn").shape(&[32, 2]).attr("axis", 0u64).bytes(),
        ),
        reject(
            "mx-part-missing",
            "LayoutRule",
            mxfp4().without("scales").bytes(),
        ),
        reject(
            "mx-scales-type-wrong",
            "LayoutRule",
            mxfp4().typed("scales", "f8_e4m3fn").bytes(),
        ),
        reject(
            "mx-scales-untyped",
            "LayoutRule",
            mxfp4()
                .without("scales")
                .part("scales", "u8", vec![127, 130])
                .bytes(),
        ),
        // 64 f16 elements, 128 bytes: the size holds, the element type is
        // not one MX defines. Notes §3.5: "any other element type must be
        // refused for decoding", not rejected: the file is valid and the
        // parts readable; only the dequantized view is withheld.
        valid(
            "mx-data-type-f16",
            mx_with("f16", None, f16_ramp(64)).bytes(),
        ),
        reject(
            "mx-block-size-missing",
            "LayoutRule",
            mxfp4().without_attr("block_size").bytes(),
        ),
        // Would divide by zero.
        reject(
            "mx-block-size-0",
            "LayoutRule",
            mxfp4().attr("block_size", 0u64).bytes(),
        ),
        // 64 blocks of 1, 64 scale bytes: only the minimum of 2 is broken.
        reject(
            "mx-block-size-1",
            "LayoutRule",
            mxfp4()
                .attr("block_size", 1u64)
                .data("scales", vec![127; 64])
                .bytes(),
        ),
        // 32 does not divide 48, although it divides the 96 elements (3
        // blocks, 3 scale bytes): the blocks would straddle rows.
        reject(
            "mx-block-size-not-dividing-axis",
            "LayoutRule",
            mxfp4()
                .shape(&[2, 48])
                .data("data", byte_ramp(48))
                .data("scales", vec![127; 3])
                .bytes(),
        ),
        reject(
            "mx-axis-out-of-range",
            "LayoutRule",
            mxfp4().attr("axis", 2u64).bytes(),
        ),
        reject(
            "mx-scale-form-missing",
            "LayoutRule",
            mxfp4().without_attr("scale_form").bytes(),
        ),
        reject(
            "mx-scale-form-wrong",
            "LayoutRule",
            mxfp4().attr("scale_form", "f32_factors").bytes(),
        ),
        reject(
            "mx-scales-size-wrong",
            "LayoutRule",
            mxfp4().data("scales", vec![127; 3]).bytes(),
        ),
        reject(
            "mx-data-size-wrong",
            "LayoutRule",
            mxfp4().data("data", byte_ramp(33)).bytes(),
        ),
    ]
}

/// `{word, order, per_word}`.
fn packing(word: &str, order: &str, per_word: u64) -> Fields {
    Fields::new()
        .set("word", word)
        .set("order", order)
        .set("per_word", per_word)
}

/// `{form: "tensor", packing}`.
fn zeros_tensor(packing: &str) -> Fields {
    Fields::new().set("form", "tensor").set("packing", packing)
}

/// AWQ-like int4, kept tiny: `[4, 16]`, groups of 8 along axis 1 (2 groups
/// × 4 lanes = 8 scales), 8 codes per u32 least significant first (64 codes,
/// 8 words), f16 factors, zero points packed like the data (8 zeros, one
/// word).
fn awq() -> Spec {
    Spec::new(QUANT, &[4, 16])
        .attr("bits", 4u64)
        .attr("group_size", 8u64)
        .attr("axis", 1u64)
        .attr("packing", packing("u32", "lsb_first", 8))
        .attr("scale_form", "f16_factors")
        .attr("zero_point", zeros_tensor("same_as_data"))
        .part("data", "u32", byte_ramp(32))
        .part("scales", "f16", f16_ramp(8))
        .part("zeros", "u32", le(4, &[0x8888_8888]))
}

/// Bias-8 int4: the zero point is the constant 8, two codes per u8, f32
/// factors.
fn bias8() -> Spec {
    Spec::new(QUANT, &[4, 16])
        .attr("bits", 4u64)
        .attr("group_size", 8u64)
        .attr("axis", 1u64)
        .attr("packing", packing("u8", "lsb_first", 2))
        .attr("scale_form", "f32_factors")
        .attr(
            "zero_point",
            Fields::new().set("form", "implied").set("value", 8u64),
        )
        .part("data", "u8", byte_ramp(32))
        .part("scales", "f32", f32_ramp(8))
}

fn quant_group() -> Vec<Case> {
    // One code per i8 byte (the signed counterpart of the word), no zero
    // point, group_size 0: 16 groups along axis 1 × 4 lanes = 64 scales.
    let per_channel = Spec::new(QUANT, &[4, 16])
        .attr("bits", 8u64)
        .attr("group_size", 0u64)
        .attr("axis", 1u64)
        .attr("packing", packing("u8", "lsb_first", 1))
        .attr("scale_form", "f32_factors")
        .attr("zero_point", Fields::new().set("form", "none"))
        .part("data", "i8", byte_ramp(64))
        .part("scales", "f32", f32_ramp(64));
    // GPTQ-like: most significant first, 4 codes per u16, plain f16 zeros.
    let gptq = awq()
        .attr("packing", packing("u16", "msb_first", 4))
        .attr("zero_point", zeros_tensor("plain"))
        .part("data", "u16", byte_ramp(32))
        .part("zeros", "f16", f16_ramp(8));
    // 2-bit codes, 32 per u64 (2 words); one group of 16 per row, so 4
    // exponent scales.
    let e8m0 = awq()
        .attr("bits", 2u64)
        .attr("group_size", 16u64)
        .attr("packing", packing("u64", "lsb_first", 32))
        .attr("scale_form", "e8m0_exponent")
        .attr("zero_point", Fields::new().set("form", "none"))
        .without("zeros")
        .part("data", "u64", byte_ramp(16))
        .part("scales", "u8", vec![126, 127, 128, 129])
        .typed("scales", "f8_e8m0");
    vec![
        valid("quant-awq-int4", awq().bytes()),
        valid("quant-bias8-implied-zero", bias8().bytes()),
        valid("quant-int8-per-channel", per_channel.bytes()),
        valid("quant-gptq-msb-first-plain-zeros", gptq.bytes()),
        valid("quant-e8m0-scales", e8m0.bytes()),
        // Groups of 8 down the 16 rows of [16, 4]: the same counts as AWQ.
        valid(
            "quant-axis-0",
            awq().shape(&[16, 4]).attr("axis", 0u64).bytes(),
        ),
        reject(
            "quant-bits-missing",
            "LayoutRule",
            awq().without_attr("bits").bytes(),
        ),
        // 3 does not divide 32: no per_word fits (10 codes use 30 bits), so
        // the sizes cannot hold either; every reading is LayoutRule.
        reject(
            "quant-bits-3",
            "LayoutRule",
            awq()
                .attr("bits", 3u64)
                .attr("packing", packing("u32", "lsb_first", 10))
                .data("data", byte_ramp(28))
                .bytes(),
        ),
        // 4 per u32 where 4-bit codes give 8; the sizes follow the declared
        // per_word (16 data words, 2 zero words).
        reject(
            "quant-per-word-wrong",
            "LayoutRule",
            awq()
                .attr("packing", packing("u32", "lsb_first", 4))
                .data("data", byte_ramp(64))
                .data("zeros", le(4, &[0x8888_8888, 0x8888_8888]))
                .bytes(),
        ),
        reject(
            "quant-order-unknown",
            "LayoutRule",
            awq()
                .attr("packing", packing("u32", "middle_first", 8))
                .bytes(),
        ),
        // u16 where the word is u32 (i32 would be allowed).
        reject(
            "quant-data-dtype-not-word",
            "LayoutRule",
            awq().dtype("data", "u16").bytes(),
        ),
        // 6 does not divide 16 (2 whole groups would keep the sizes).
        reject(
            "quant-group-size-not-dividing",
            "LayoutRule",
            awq().attr("group_size", 6u64).bytes(),
        ),
        reject(
            "quant-axis-out-of-range",
            "LayoutRule",
            awq().attr("axis", 2u64).bytes(),
        ),
        reject(
            "quant-zeros-with-form-none",
            "LayoutRule",
            awq()
                .attr("zero_point", Fields::new().set("form", "none"))
                .bytes(),
        ),
        reject(
            "quant-zeros-missing-form-tensor",
            "LayoutRule",
            awq().without("zeros").bytes(),
        ),
        reject(
            "quant-implied-value-missing",
            "LayoutRule",
            bias8()
                .attr("zero_point", Fields::new().set("form", "implied"))
                .bytes(),
        ),
        // e8m0 exponents must be u8 of type f8_e8m0; these are 8 f32.
        reject(
            "quant-e8m0-on-f32-scales",
            "LayoutRule",
            awq()
                .attr("scale_form", "e8m0_exponent")
                .part("scales", "f32", f32_ramp(8))
                .bytes(),
        ),
        reject(
            "quant-data-size-wrong",
            "LayoutRule",
            awq().data("data", byte_ramp(36)).bytes(),
        ),
        reject(
            "quant-scales-size-wrong",
            "LayoutRule",
            awq().data("scales", f16_ramp(9)).bytes(),
        ),
        reject(
            "quant-zeros-size-wrong",
            "LayoutRule",
            awq()
                .data("zeros", le(4, &[0x8888_8888, 0x8888_8888]))
                .bytes(),
        ),
    ]
}
