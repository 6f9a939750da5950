//! Metadata rules of `zt.quant_group/1` and `zt.mx/1`: one accepted object
//! per worked example, and one rejection per rule.

use super::super::testing::*;
use super::super::{check_metadata, MX, QUANT_GROUP};
use super::*;
use crate::error::Rule;

type Entries<'a> = Vec<(&'a str, Value<'a>)>;

fn packing<'a>(word: &'a str, order: &'a str, per_word: u64) -> Value<'a> {
    map(&[
        ("word", Value::Text(word)),
        ("order", Value::Text(order)),
        ("per_word", Value::Uint(per_word)),
    ])
}

/// AWQ int4 as the profile gives it: u32 lsb_first, 8 per word, f16
/// factors, tensor zeros packed same_as_data, group 128, axis 0.
fn awq<'a>() -> Entries<'a> {
    vec![
        ("bits", Value::Uint(4)),
        ("group_size", Value::Uint(128)),
        ("axis", Value::Uint(0)),
        ("packing", packing("u32", "lsb_first", 8)),
        ("scale_form", Value::Text("f16_factors")),
        (
            "zero_point",
            map(&[
                ("form", Value::Text("tensor")),
                ("packing", Value::Text("same_as_data")),
            ]),
        ),
    ]
}

/// An AWQ-like [256, 16] object: 4096 codes in 512 u32 words, 2 groups ×
/// 16 lanes = 32 f16 scales and 32 zeros in 4 words.
fn awq_object(entries: &Entries<'_>) -> Object {
    let parts = vec![
        part("data", "i32", 2048),
        part("scales", "f16", 64),
        part("zeros", "u32", 16),
    ];
    object(QUANT_GROUP, &[256, 16], parts, Some(attrs(entries)))
}

fn set<'a>(entries: &mut Entries<'a>, key: &'a str, v: Option<Value<'a>>) {
    entries.retain(|(k, _)| *k != key);
    if let Some(v) = v {
        entries.push((key, v));
    }
}

#[test]
fn awq_is_accepted_with_its_derived_quantities() {
    let q = parse_quant_group(&awq_object(&awq())).unwrap();
    assert_eq!(
        (q.bits, q.per_word, q.word, q.order),
        (4, 8, DType::U32, Order::LsbFirst)
    );
    assert_eq!((q.along, q.groups, q.lanes, q.codes), (256, 2, 16, 4096));
    assert_eq!(q.zero_point, ZeroPoint::Tensor(ZeroPacking::SameAsData));
    assert_eq!((q.scales, q.zeros), (DType::F16, Some(DType::U32)));
}

#[test]
fn gptq_mlx_bias8_and_int8_examples_are_accepted() {
    let mut gptq = awq();
    set(&mut gptq, "packing", Some(packing("u32", "msb_first", 8)));
    assert!(check_metadata(&awq_object(&gptq)).is_ok());

    // MLX affine-u4: group 64, axis 1, plain (f16) zeros; shape [2, 128].
    let mut mlx = awq();
    set(&mut mlx, "group_size", Some(Value::Uint(64)));
    set(&mut mlx, "axis", Some(Value::Uint(1)));
    let zp = map(&[
        ("form", Value::Text("tensor")),
        ("packing", Value::Text("plain")),
    ]);
    set(&mut mlx, "zero_point", Some(zp));
    let parts = vec![
        part("data", "u32", 128),
        part("scales", "bf16", 8),
        part("zeros", "f16", 8),
    ];
    let o = object(QUANT_GROUP, &[2, 128], parts, Some(attrs(&mlx)));
    assert!(check_metadata(&o).is_ok(), "{:?}", check_metadata(&o));

    // bias-8 int4: implied zero 8, f32 factors, group 32; u8 words.
    let o = bias8_object(&bias8());
    assert_eq!(
        parse_quant_group(&o).unwrap().zero_point,
        ZeroPoint::Implied(8)
    );

    // Symmetric int8 "per channel": group 0 takes the size equation as
    // written, one scale per code.
    let o = int8_object(&[2, 3], 6 * 4);
    assert_eq!(parse_quant_group(&o).unwrap().groups, 3);
}

fn bias8<'a>() -> Entries<'a> {
    vec![
        ("bits", Value::Uint(4)),
        ("group_size", Value::Uint(32)),
        ("axis", Value::Uint(1)),
        ("packing", packing("u8", "lsb_first", 2)),
        ("scale_form", Value::Text("f32_factors")),
        (
            "zero_point",
            map(&[("form", Value::Text("implied")), ("value", Value::Uint(8))]),
        ),
    ]
}

/// [1, 64] codes: 32 bytes, 2 f32 scales.
fn bias8_object(entries: &Entries<'_>) -> Object {
    let parts = vec![part("data", "u8", 32), part("scales", "f32", 8)];
    object(QUANT_GROUP, &[1, 64], parts, Some(attrs(entries)))
}

fn int8_object(shape: &[u64], scales_len: u64) -> Object {
    let entries = vec![
        ("bits", Value::Uint(8)),
        ("group_size", Value::Uint(0)),
        ("axis", Value::Uint(1)),
        ("packing", packing("u8", "lsb_first", 1)),
        ("scale_form", Value::Text("f32_factors")),
        ("zero_point", map(&[("form", Value::Text("none"))])),
    ];
    let n: u64 = shape.iter().product();
    let parts = vec![part("data", "i8", n), part("scales", "f32", scales_len)];
    object(QUANT_GROUP, shape, parts, Some(attrs(&entries)))
}

#[test]
fn per_channel_scales_break_the_size_equation_as_written() {
    // One scale per row (2), as "per channel" suggests, is rejected.
    let o = int8_object(&[2, 3], 2 * 4);
    assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
}

#[test]
fn bits_3_5_6_are_unrepresentable() {
    for (bits, word, per_word) in [(3, "u32", 10), (5, "u8", 1), (6, "u64", 10), (3, "u8", 2)] {
        let mut e = awq();
        set(&mut e, "bits", Some(Value::Uint(bits)));
        set(
            &mut e,
            "packing",
            Some(packing(word, "lsb_first", per_word)),
        );
        // per_word is ⌊8·width/bits⌋, what a writer would compute; the
        // divisibility rule is checked first
        let r = check_metadata(&awq_object(&e));
        assert_eq!(rule_of(r), Some(Rule::LayoutRule), "{bits} in {word}");
    }
    for bits in [0, 1, 7, 16] {
        let mut e = awq();
        set(&mut e, "bits", Some(Value::Uint(bits)));
        assert_eq!(
            rule_of(check_metadata(&awq_object(&e))),
            Some(Rule::LayoutRule)
        );
    }
}

#[test]
fn each_attribute_rule_rejects() {
    let cases: Vec<(&str, Option<Value<'_>>)> = vec![
        ("bits", None),
        ("bits", Some(Value::Text("4"))),
        ("group_size", None),
        ("group_size", Some(Value::Uint(100))), // 256 % 100
        ("axis", None),
        ("axis", Some(Value::Uint(2))),
        ("packing", None),
        ("packing", Some(Value::Text("u32"))),
        ("packing", Some(packing("u128", "lsb_first", 8))),
        ("packing", Some(packing("u32", "little", 8))),
        ("packing", Some(packing("u32", "lsb_first", 4))),
        ("packing", Some(packing("u32", "lsb_first", 0))),
        ("scale_form", None),
        ("scale_form", Some(Value::Text("f8_factors"))),
        ("zero_point", None),
        ("zero_point", Some(map(&[("form", Value::Text("affine"))]))),
        // value iff implied, packing iff tensor
        ("zero_point", Some(map(&[("form", Value::Text("tensor"))]))),
        (
            "zero_point",
            Some(map(&[
                ("form", Value::Text("tensor")),
                ("packing", Value::Text("same_as_data")),
                ("value", Value::Uint(1)),
            ])),
        ),
        (
            "zero_point",
            Some(map(&[
                ("form", Value::Text("tensor")),
                ("packing", Value::Text("packed")),
            ])),
        ),
    ];
    for (key, v) in cases {
        let mut e = awq();
        set(&mut e, key, v.clone());
        let r = check_metadata(&awq_object(&e));
        assert_eq!(rule_of(r), Some(Rule::LayoutRule), "{key} = {v:?}");
    }
    let mut o = awq_object(&awq());
    o.attributes = None;
    assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
}

#[test]
fn implied_zero_needs_an_integer_value_and_allows_a_negative_one() {
    let mut e = bias8();
    let zp = |v| map(&[("form", Value::Text("implied")), ("value", v)]);
    set(&mut e, "zero_point", Some(zp(Value::Nint(2))));
    assert_eq!(
        parse_quant_group(&bias8_object(&e)).unwrap().zero_point,
        ZeroPoint::Implied(-3)
    );
    set(&mut e, "zero_point", Some(zp(Value::Float(8.0))));
    assert_eq!(
        rule_of(check_metadata(&bias8_object(&e))),
        Some(Rule::LayoutRule)
    );
    set(
        &mut e,
        "zero_point",
        Some(map(&[("form", Value::Text("implied"))])),
    );
    assert_eq!(
        rule_of(check_metadata(&bias8_object(&e))),
        Some(Rule::LayoutRule)
    );
    let none_with_value = map(&[("form", Value::Text("none")), ("value", Value::Uint(0))]);
    set(&mut e, "zero_point", Some(none_with_value));
    assert_eq!(
        rule_of(check_metadata(&bias8_object(&e))),
        Some(Rule::LayoutRule)
    );
}

#[test]
fn parts_follow_the_zero_point_form() {
    // tensor form without zeros
    let mut o = awq_object(&awq());
    o.parts.pop();
    assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
    // implied form with zeros
    let mut o = bias8_object(&bias8());
    o.parts.push(part("zeros", "u8", 1));
    assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
}

#[test]
fn part_types_are_checked() {
    let cases = [
        (0, part("data", "u16", 2048)),    // not the word
        (0, part("data", "u32:q4", 2048)), // typed codes
        (1, part("scales", "f32", 128)),   // f16_factors needs f16/bf16
        (1, part("scales", "u16", 64)),
        (2, part("zeros", "u8", 16)), // same_as_data needs the word
    ];
    for (i, p) in cases {
        let mut o = awq_object(&awq());
        o.parts[i] = p;
        assert_eq!(
            rule_of(check_metadata(&o)),
            Some(Rule::LayoutRule),
            "{:?}",
            o.parts[i]
        );
    }
    // f32_factors takes any float dtype, e8m0_exponent only u8:f8_e8m0.
    let mut e = bias8();
    for (form, scales, ok) in [
        ("f32_factors", part("scales", "f64", 16), true),
        ("f32_factors", part("scales", "bf16", 4), true),
        ("f32_factors", part("scales", "i32", 8), false),
        ("e8m0_exponent", part("scales", "u8:f8_e8m0", 2), true),
        ("e8m0_exponent", part("scales", "u8", 2), false),
        ("e8m0_exponent", part("scales", "u8:f8_e4m3fn", 2), false),
    ] {
        set(&mut e, "scale_form", Some(Value::Text(form)));
        let mut o = bias8_object(&e);
        o.parts[1] = scales;
        assert_eq!(check_metadata(&o).is_ok(), ok, "{form} {:?}", o.parts[1]);
    }
}

#[test]
fn sizes_are_checked() {
    for (i, len) in [(0, 2044), (1, 62), (2, 20)] {
        let mut o = awq_object(&awq());
        o.parts[i].blob.length = len;
        assert_eq!(
            rule_of(check_metadata(&o)),
            Some(Rule::LayoutRule),
            "{i} {len}"
        );
    }
}

#[test]
fn codes_must_fill_whole_words() {
    // [1, 3] codes, 2 per u8 word.
    let mut e = bias8();
    set(&mut e, "group_size", Some(Value::Uint(3)));
    let parts = vec![part("data", "u8", 1), part("scales", "f32", 4)];
    let o = object(QUANT_GROUP, &[1, 3], parts, Some(attrs(&e)));
    // data is 3/2·1 = 1 byte by the size equation: only divisibility fails
    assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
}

#[test]
fn packed_zeros_must_fill_whole_words() {
    // [128, 3]: 3 lanes × 1 group = 3 zeros, not a multiple of 8.
    let parts = vec![
        part("data", "u32", 192),
        part("scales", "f16", 6),
        part("zeros", "u32", 0),
    ];
    let o = object(QUANT_GROUP, &[128, 3], parts, Some(attrs(&awq())));
    // zeros are 3/8·4 = 0 bytes by the size equation: only divisibility fails
    assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
}

#[test]
fn degenerate_shapes_do_not_panic() {
    let mut e = awq();
    // rank 0: no axis can be valid
    let o = object(
        QUANT_GROUP,
        &[],
        vec![part("data", "u32", 0)],
        Some(attrs(&e)),
    );
    assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
    // a zero dim along the axis: groups 0, everything empty
    let parts = vec![
        part("data", "u32", 0),
        part("scales", "f16", 0),
        part("zeros", "u32", 0),
    ];
    let o = object(QUANT_GROUP, &[0, 16], parts.clone(), Some(attrs(&e)));
    assert!(check_metadata(&o).is_ok(), "{:?}", check_metadata(&o));
    // group 0 and a zero dim elsewhere
    set(&mut e, "group_size", Some(Value::Uint(0)));
    let o = object(QUANT_GROUP, &[8, 0], parts, Some(attrs(&e)));
    assert!(check_metadata(&o).is_ok(), "{:?}", check_metadata(&o));
}

// ---- zt.mx/1 ----

fn mx_object(shape: &[u64], data: Part, scales_len: u64, entries: &Entries<'_>) -> Object {
    let parts = vec![data, part("scales", "u8:f8_e8m0", scales_len)];
    object(MX, shape, parts, Some(attrs(entries)))
}

fn mx_attrs<'a>(block: u64) -> Entries<'a> {
    vec![
        ("block_size", Value::Uint(block)),
        ("scale_form", Value::Text("e8m0_exponent")),
    ]
}

#[test]
fn mx_accepts_each_element_type() {
    let cases = [
        (part("data", "u8:f4_e2m1", 32), MxElement::F4E2M1),
        (part("data", "u8:f8_e4m3fn", 64), MxElement::F8E4M3Fn),
        (part("data", "u8:f8_e5m2", 64), MxElement::F8E5M2),
        (part("data", "i8", 64), MxElement::Int8),
    ];
    for (data, element) in cases {
        let m = parse_mx(&mx_object(&[2, 32], data, 2, &mx_attrs(32))).unwrap();
        assert_eq!(m.element, Some(element));
        assert_eq!((m.axis, m.elements, m.blocks), (1, 64, 2));
    }
}

#[test]
fn mx_other_element_types_open_but_are_not_decodable() {
    for data in [
        part("data", "u8", 64),
        part("data", "u8:f8_e4m3fnuz", 64),
        part("data", "f16", 128),
        part("data", "u8:f6_e2m3", 48), // unregistered: size skipped
    ] {
        let m = parse_mx(&mx_object(&[2, 32], data, 2, &mx_attrs(32))).unwrap();
        assert_eq!(m.element, None);
    }
    // a known size function is still checked
    let o = mx_object(&[2, 32], part("data", "f16", 64), 2, &mx_attrs(32));
    assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
}

#[test]
fn mx_axis_defaults_to_the_last_and_may_be_another() {
    let mut e = mx_attrs(4);
    set(&mut e, "axis", Some(Value::Uint(0)));
    let m = parse_mx(&mx_object(&[8, 3], part("data", "i8", 24), 6, &e)).unwrap();
    assert_eq!((m.axis, m.blocks), (0, 6));
    // [8, 3] with the default axis 1: 3 % 4 != 0
    let o = mx_object(&[8, 3], part("data", "i8", 24), 6, &mx_attrs(4));
    assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
}

#[test]
fn mx_rejects_each_rule() {
    let good = || mx_object(&[2, 32], part("data", "u8:f8_e4m3fn", 64), 2, &mx_attrs(32));
    assert!(check_metadata(&good()).is_ok());
    let mut cases: Vec<Object> = Vec::new();
    for (key, v) in [
        ("block_size", None),
        ("block_size", Some(Value::Uint(1))),
        ("block_size", Some(Value::Uint(0))),
        ("block_size", Some(Value::Uint(5))),
        ("block_size", Some(Value::Nint(0))),
        ("axis", Some(Value::Uint(2))),
        ("scale_form", None),
        ("scale_form", Some(Value::Text("f32_factors"))),
    ] {
        let mut e = mx_attrs(32);
        set(&mut e, key, v);
        let mut o = good();
        o.attributes = Some(crate::format::manifest::boxed_attributes(attrs(&e)));
        cases.push(o);
    }
    let mut o = good();
    o.attributes = None;
    cases.push(o);
    let mut o = good();
    o.parts[1] = part("scales", "u8", 2);
    cases.push(o);
    let mut o = good();
    o.parts[1] = part("scales", "u8:f8_e8m0", 3);
    cases.push(o);
    let mut o = good();
    o.parts[0].blob.length = 63;
    cases.push(o);
    let mut o = good();
    o.parts.push(part("zeros", "u8", 0));
    cases.push(o);
    let mut o = good();
    o.parts[0].name = "codes".into();
    cases.push(o);
    // rank 0: no axis to default to
    cases.push(mx_object(&[], part("data", "i8", 1), 0, &mx_attrs(2)));
    for o in cases {
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule), "{o:?}");
    }
}

#[test]
fn mx_odd_f4_count_packs_to_ceil() {
    // [3] with block 3: 2 bytes of f4, one scale.
    let o = mx_object(&[3], part("data", "u8:f4_e2m1", 2), 1, &mx_attrs(3));
    assert!(check_metadata(&o).is_ok());
    // [0, 4]: empty
    let o = mx_object(&[0, 4], part("data", "u8:f4_e2m1", 0), 0, &mx_attrs(2));
    assert!(check_metadata(&o).is_ok());
}
