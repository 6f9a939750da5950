//! Views and data rules over tiny objects written out byte by byte, with
//! the expected dense bytes and dequantized values computed by hand.

use super::*;
use crate::format::cbor::Value;
use crate::format::profiles::testing::{attrs, map, object, part};
use crate::format::profiles::{MX, QUANT_GROUP, SPARSE_COO, SPARSE_CSR};

/// An object whose parts hold `bytes`, with the given types, and the part
/// function that serves them.
struct Fixture {
    object: Object,
    bytes: Vec<(&'static str, Vec<u8>)>,
}

impl Fixture {
    fn new(
        layout: &str,
        shape: &[u64],
        parts: &[(&'static str, &str, &[u8])],
        a: Option<Vec<u8>>,
    ) -> Fixture {
        let ps = parts
            .iter()
            .map(|(n, t, b)| part(n, t, b.len() as u64))
            .collect();
        Fixture {
            object: object(layout, shape, ps, a),
            bytes: parts.iter().map(|(n, _, b)| (*n, b.to_vec())).collect(),
        }
    }

    fn get(&self, name: &str) -> Result<Vec<u8>> {
        let found = self.bytes.iter().find(|(n, _)| *n == name);
        found
            .map(|(_, b)| b.clone())
            .ok_or_else(|| Error::NotFound(name.to_string()))
    }

    fn check(&self) -> Result<()> {
        crate::format::profiles::check_metadata(&self.object)?;
        check_data(&self.object, &|n| self.get(n))
    }

    /// Renders the view, and checks on the way that [`prepare`] fails
    /// exactly as [`render`] does or reads back the same bytes whole.
    fn render(&self) -> Result<Vec<u8>> {
        crate::format::profiles::check_metadata(&self.object)?;
        let get = |n: &str| self.get(n);
        let prepared = prepare(&self.object, &get);
        let out = same_outcome(render(&self.object, &get), prepared.as_ref())?;
        let (_, size) = view(&self.object).expect("a rendered object has a view");
        assert_eq!(
            out.len() as u64,
            size,
            "render length is the announced size"
        );
        let p = prepared.expect("prepared when rendered");
        assert_eq!(p.size(), size, "prepared size is the announced size");
        assert_eq!(p.read_range(0, usize::MAX).unwrap(), out, "whole read");
        Ok(out)
    }

    fn set(&mut self, name: &str, bytes: &[u8]) {
        for (n, b) in &mut self.bytes {
            if *n == name {
                *b = bytes.to_vec();
            }
        }
    }
}

/// Asserts that `prepare` succeeded where `render` did and failed where it
/// did with the same error (rule tag and detail); returns `render`'s result.
fn same_outcome(rendered: Result<Vec<u8>>, prepared: Result<&Prepared, &Error>) -> Result<Vec<u8>> {
    match (&rendered, prepared) {
        (Ok(_), Ok(_)) => {}
        (Err(a), Err(b)) => {
            assert_eq!(a.rule(), b.rule(), "{a} / {b}");
            assert_eq!(a.to_string(), b.to_string());
            assert_eq!(
                matches!(a, Error::Unsupported(_)),
                matches!(b, Error::Unsupported(_)),
                "{a} / {b}"
            );
        }
        (r, p) => panic!(
            "render gave {:?}, prepare {:?}",
            r.as_ref().map(Vec::len),
            p.map(Prepared::size)
        ),
    }
    rendered
}

fn rule(r: Result<impl std::fmt::Debug>) -> Option<Rule> {
    r.expect_err("expected an error").rule()
}

/// Asserts a refusal (`Unsupported`), which has no rule tag to compare.
fn refused(r: Result<impl std::fmt::Debug>) {
    match r {
        Err(Error::Unsupported(_)) => {}
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

// ---- zt.sparse_csr/1 ----

/// [[0, 10, 0, 20], [0, 0, 0, 0], [30, 0, 0, 40]] as i16.
fn csr() -> Fixture {
    Fixture::new(
        SPARSE_CSR,
        &[3, 4],
        &[
            (
                "values",
                "i16",
                &[0x0A, 0x00, 0x14, 0x00, 0x1E, 0x00, 0x28, 0x00],
            ),
            (
                "indices",
                "u32",
                &[1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0],
            ),
            (
                "indptr",
                "u32",
                &[0, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0],
            ),
        ],
        None,
    )
}

#[test]
fn csr_renders_to_exact_dense_bytes() {
    let f = csr();
    assert!(f.check().is_ok());
    assert_eq!(view(&f.object), Some(("dense", 24)));
    #[rustfmt::skip]
    let want = [
        0x00, 0x00, 0x0A, 0x00, 0x00, 0x00, 0x14, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x1E, 0x00, 0x00, 0x00, 0x00, 0x00, 0x28, 0x00,
    ];
    assert_eq!(f.render().unwrap(), want);
}

#[test]
fn csr_with_u64_indices_renders_the_same() {
    let mut f = csr();
    let widen = |b: &[u8]| -> Vec<u8> {
        b.chunks(4)
            .flat_map(|c| u64::from(u32::from_le_bytes(c.try_into().unwrap())).to_le_bytes())
            .collect()
    };
    for name in ["indices", "indptr"] {
        let b = widen(&f.get(name).unwrap());
        f.set(name, &b);
        let p = f.object.parts.iter_mut().find(|p| p.name == name).unwrap();
        *p = part(name, "u64", b.len() as u64);
    }
    assert_eq!(f.render().unwrap(), csr().render().unwrap());
}

/// [`csr`] with one index rule broken each.
fn csr_broken() -> Vec<Fixture> {
    let cases: [(&str, &[u8]); 6] = [
        // indptr[0] != 0
        ("indptr", &[1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0]),
        // decreasing
        ("indptr", &[0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0]),
        // indptr[R] != nnz
        ("indptr", &[0, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]),
        // not strictly increasing within row 0 (3, 3)
        ("indices", &[3, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0]),
        // decreasing within row 2 (3, 0)
        ("indices", &[1, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]),
        // column 4 of 4
        ("indices", &[1, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0]),
    ];
    cases
        .into_iter()
        .map(|(name, bytes)| {
            let mut f = csr();
            f.set(name, bytes);
            f
        })
        .collect()
}

#[test]
fn csr_data_rules_reject() {
    for f in csr_broken() {
        assert_eq!(rule(f.check()), Some(Rule::LayoutData), "{:?}", f.bytes);
        assert_eq!(
            rule(f.render()),
            Some(Rule::LayoutData),
            "render checks too"
        );
    }
}

#[test]
fn csr_indices_may_repeat_across_rows() {
    let mut f = csr();
    f.set("indices", &[0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0]);
    assert!(f.check().is_ok());
}

#[test]
fn csr_of_f4_values_places_nibbles() {
    // 1×3 with 0.5 at column 0 and 6.0 at column 2.
    let f = Fixture::new(
        SPARSE_CSR,
        &[1, 3],
        &[
            ("values", "u8:f4_e2m1", &[0x71]),
            ("indices", "u32", &[0, 0, 0, 0, 2, 0, 0, 0]),
            ("indptr", "u32", &[0, 0, 0, 0, 2, 0, 0, 0]),
        ],
        None,
    );
    assert_eq!(view(&f.object), Some(("dense", 2)));
    assert_eq!(f.render().unwrap(), [0x01, 0x07]);
}

#[test]
fn sparse_value_content_rules() {
    // bool values must be 0 or 1
    let mut f = Fixture::new(
        SPARSE_CSR,
        &[1, 2],
        &[
            ("values", "u8:bool", &[1, 2]),
            ("indices", "u32", &[0, 0, 0, 0, 1, 0, 0, 0]),
            ("indptr", "u32", &[0, 0, 0, 0, 2, 0, 0, 0]),
        ],
        None,
    );
    assert_eq!(rule(f.check()), Some(Rule::LayoutData));
    f.set("values", &[1, 0]);
    assert!(f.check().is_ok());
    // an odd count of f4 leaves the final high nibble zero
    let mut f = Fixture::new(
        SPARSE_COO,
        &[4],
        &[
            ("values", "u8:f4_e2m1", &[0x21]),
            ("coords", "u32", &[3, 0, 0, 0]),
        ],
        None,
    );
    assert_eq!(rule(f.check()), Some(Rule::LayoutData));
    f.set("values", &[0x01]);
    assert!(f.check().is_ok());
    assert_eq!(f.render().unwrap(), [0x00, 0x10]);
}

// ---- zt.sparse_coo/1 ----

/// 2×3 u8 with 9 at (0,0), 5 at (1,0), 7 at (1,2), stored out of order.
fn coo() -> Fixture {
    Fixture::new(
        SPARSE_COO,
        &[2, 3],
        &[
            ("values", "u8", &[7, 9, 5]),
            // dim 0: [1, 0, 1], then dim 1: [2, 0, 0]
            (
                "coords",
                "u32",
                &[
                    1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                ],
            ),
        ],
        None,
    )
}

#[test]
fn coo_renders_to_exact_dense_bytes() {
    let f = coo();
    assert!(f.check().is_ok());
    assert_eq!(view(&f.object), Some(("dense", 6)));
    assert_eq!(f.render().unwrap(), [9, 0, 0, 5, 0, 7]);
}

/// [`coo`] with one coordinate rule broken each.
fn coo_broken() -> Vec<Fixture> {
    let cases: [&[u8]; 3] = [
        // dim 0 coordinate 2 of 2
        &[
            2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ],
        // dim 1 coordinate 3 of 3
        &[
            1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ],
        // elements 1 and 2 both at (1, 0)... make element 1 (1, 0) too
        &[
            1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ],
    ];
    cases
        .into_iter()
        .map(|bytes| {
            let mut f = coo();
            f.set("coords", bytes);
            f
        })
        .collect()
}

#[test]
fn coo_data_rules_reject() {
    for f in coo_broken() {
        assert_eq!(rule(f.check()), Some(Rule::LayoutData), "{:?}", f.bytes);
        assert_eq!(rule(f.render()), Some(Rule::LayoutData));
    }
}

#[test]
fn coo_of_rank_3_and_empty() {
    // 2×2×2 f32: 1.0 at (1,0,1), −2.0 at (0,1,0); u64 coords.
    let mut coords = Vec::new();
    for c in [1u64, 0, 0, 1, 1, 0] {
        coords.extend_from_slice(&c.to_le_bytes());
    }
    let f = Fixture::new(
        SPARSE_COO,
        &[2, 2, 2],
        &[
            (
                "values",
                "f32",
                &[0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0xC0],
            ),
            ("coords", "u64", &coords),
        ],
        None,
    );
    let out = f32s(&f.render().unwrap());
    assert_eq!(out, [0.0, 0.0, -2.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    // no stored elements in a tensor with a zero dim
    let f = Fixture::new(
        SPARSE_COO,
        &[3, 0],
        &[("values", "f32", &[]), ("coords", "u32", &[])],
        None,
    );
    assert!(f.check().is_ok());
    assert_eq!(f.render().unwrap(), Vec::<u8>::new());
}

// ---- zt.mx/1 ----

fn mx_attrs(block: u64, axis: Option<u64>) -> Vec<u8> {
    let mut e = vec![
        ("block_size", Value::Uint(block)),
        ("scale_form", Value::Text("e8m0_exponent")),
    ];
    if let Some(a) = axis {
        e.push(("axis", Value::Uint(a)));
    }
    attrs(&e)
}

fn mx(shape: &[u64], data: (&str, &[u8]), scales: &[u8], block: u64, axis: Option<u64>) -> Fixture {
    Fixture::new(
        MX,
        shape,
        &[("data", data.0, data.1), ("scales", "u8:f8_e8m0", scales)],
        Some(mx_attrs(block, axis)),
    )
}

#[test]
fn mx_fp8_e4m3_along_the_last_axis() {
    // 1.0, 2.0 | 1.5, −1.0 with scales 2 and 0.5
    let f = mx(
        &[1, 4],
        ("u8:f8_e4m3fn", &[0x38, 0x40, 0x3C, 0xB8]),
        &[128, 126],
        2,
        None,
    );
    assert_eq!(view(&f.object), Some(("dequantized", 16)));
    assert_eq!(f32s(&f.render().unwrap()), [2.0, 4.0, 0.75, -0.5]);
}

#[test]
fn mx_blocks_along_a_non_last_axis_follow_the_axis_not_the_flat_index() {
    // [4, 2] MXINT8 blocked along axis 0 in pairs of rows; scales are a
    // [2, 2] tensor: scale[a/2][n] = [[1, 2], [4, 0.5]].
    let data = [0x40, 0x20, 0x40, 0x20, 0xC0, 0x10, 0x40, 0x08];
    let f = mx(&[4, 2], ("i8", &data), &[127, 128, 129, 126], 2, Some(0));
    // elements: [[1, .5], [1, .5], [-1, .25], [1, .125]] (int8 / 64)
    let want = [1.0, 1.0, 1.0, 1.0, -4.0, 0.125, 4.0, 0.0625];
    assert_eq!(f32s(&f.render().unwrap()), want);
}

#[test]
fn mx_fp4_and_fp8_e5m2_and_nan_scales() {
    // f4 nibbles 0x1, 0x7 | 0xF, 0x2 = 0.5, 6 | −6, 1 with scales 1 and 4
    let f = mx(&[4], ("u8:f4_e2m1", &[0x71, 0x2F]), &[127, 129], 2, None);
    assert_eq!(f32s(&f.render().unwrap()), [0.5, 6.0, -24.0, 4.0]);
    let f = mx(&[2], ("u8:f8_e5m2", &[0x7B, 0x7C]), &[127], 2, None);
    assert_eq!(f32s(&f.render().unwrap()), [57344.0, f32::INFINITY]);
    let f = mx(&[2], ("u8:f8_e5m2", &[0x3C, 0x00]), &[0xFF], 2, None);
    assert!(f32s(&f.render().unwrap()).iter().all(|v| v.is_nan()));
}

#[test]
fn mx_results_round_once_to_f32() {
    // 448 · 2^127 overflows f32 to +inf; 0.5 · 2^−127 is an f32 subnormal.
    let f = mx(
        &[2, 2],
        ("u8:f8_e4m3fn", &[0x7E, 0x7E, 0x30, 0x30]),
        &[254, 0],
        2,
        None,
    );
    let out = f32s(&f.render().unwrap());
    assert_eq!(out[0], f32::INFINITY);
    assert_eq!(out[2], f32::from_bits(1 << 21), "2^-128");
}

#[test]
fn mx_odd_f4_count_needs_a_zero_final_nibble() {
    let mut f = mx(&[3], ("u8:f4_e2m1", &[0x21, 0x10]), &[127], 3, None);
    assert_eq!(rule(f.check()), Some(Rule::LayoutData));
    assert_eq!(rule(f.render()), Some(Rule::LayoutData));
    f.set("data", &[0x21, 0x03]);
    assert!(f.check().is_ok());
    assert_eq!(f32s(&f.render().unwrap()), [0.5, 1.0, 1.5]);
}

#[test]
fn mx_element_types_the_profile_does_not_decode_have_no_view() {
    let f = mx(&[2], ("u8:f8_e4m3fnuz", &[0, 0]), &[127], 2, None);
    assert!(f.check().is_ok(), "valid at open, no data rules");
    assert_eq!(view(&f.object), None);
    refused(f.render());
}

// ---- zt.quant_group/1 ----

fn packing<'a>(word: &'a str, order: &'a str, per_word: u64) -> Value<'a> {
    map(&[
        ("word", Value::Text(word)),
        ("order", Value::Text(order)),
        ("per_word", Value::Uint(per_word)),
    ])
}

/// AWQ-like: 4-bit codes in i32 words, f16 factors, tensor zeros packed
/// like the data; [2, 8] grouped by 2 along axis 1, so 2 lanes × 4 groups.
fn awq(order: &str) -> Fixture {
    let a = attrs(&[
        ("bits", Value::Uint(4)),
        ("group_size", Value::Uint(2)),
        ("axis", Value::Uint(1)),
        ("packing", packing("u32", order, 8)),
        ("scale_form", Value::Text("f16_factors")),
        (
            "zero_point",
            map(&[
                ("form", Value::Text("tensor")),
                ("packing", Value::Text("same_as_data")),
            ]),
        ),
    ]);
    #[rustfmt::skip]
    let parts: [(&str, &str, &[u8]); 3] = [
        // lsb_first: row 0 codes 0..=7 (0x76543210), row 1 codes 15..=8 (0x89abcdef)
        ("data", "i32", &[0x10, 0x32, 0x54, 0x76, 0xEF, 0xCD, 0xAB, 0x89]),
        // [lanes][groups]: [[1, 2, 0.5, −1], [0.25, 1, 3, 2]]
        ("scales", "f16", &[0x00, 0x3C, 0x00, 0x40, 0x00, 0x38, 0x00, 0xBC,
                            0x00, 0x34, 0x00, 0x3C, 0x00, 0x42, 0x00, 0x40]),
        // lsb_first: [[0, 1, 2, 8], [8, 8, 8, 8]] (0x88888210)
        ("zeros", "u32", &[0x10, 0x82, 0x88, 0x88]),
    ];
    Fixture::new(QUANT_GROUP, &[2, 8], &parts, Some(a))
}

#[test]
fn quant_group_awq_like_lsb_first_with_packed_zeros() {
    let f = awq("lsb_first");
    assert!(f.check().is_ok());
    assert_eq!(view(&f.object), Some(("dequantized", 64)));
    // row 0: (q − z)·s per pair; row 1 likewise with zero 8
    let want = [
        0.0, 1.0, 2.0, 4.0, 1.0, 1.5, 2.0, 1.0, //
        1.75, 1.5, 5.0, 4.0, 9.0, 6.0, 2.0, 0.0,
    ];
    assert_eq!(f32s(&f.render().unwrap()), want);
}

#[test]
fn quant_group_msb_first_reverses_the_slots() {
    // Same bytes: row 0 codes 7..=0, row 1 codes 8..=15; zeros
    // [[8, 8, 8, 8], [8, 2, 1, 0]].
    let f = awq("msb_first");
    let want = [
        -1.0, -2.0, -6.0, -8.0, -2.5, -3.0, 7.0, 8.0, //
        0.0, 0.25, 8.0, 9.0, 33.0, 36.0, 28.0, 30.0,
    ];
    assert_eq!(f32s(&f.render().unwrap()), want);
}

#[test]
fn quant_group_bias_8_implied_zero() {
    let a = attrs(&[
        ("bits", Value::Uint(4)),
        ("group_size", Value::Uint(2)),
        ("axis", Value::Uint(1)),
        ("packing", packing("u8", "lsb_first", 2)),
        ("scale_form", Value::Text("f32_factors")),
        (
            "zero_point",
            map(&[("form", Value::Text("implied")), ("value", Value::Uint(8))]),
        ),
    ]);
    // codes 8, 9 | 0, 15 with scales 0.5 and 2.0
    let f = Fixture::new(
        QUANT_GROUP,
        &[1, 4],
        &[
            ("data", "u8", &[0x98, 0xF0]),
            (
                "scales",
                "f32",
                &[0x00, 0x00, 0x00, 0x3F, 0x00, 0x00, 0x00, 0x40],
            ),
        ],
        Some(a),
    );
    assert_eq!(f32s(&f.render().unwrap()), [0.0, 0.5, -16.0, 14.0]);
}

#[test]
fn quant_group_along_axis_0_orders_scales_lanes_then_groups() {
    let a = attrs(&[
        ("bits", Value::Uint(8)),
        ("group_size", Value::Uint(2)),
        ("axis", Value::Uint(0)),
        ("packing", packing("u8", "lsb_first", 1)),
        ("scale_form", Value::Text("f32_factors")),
        ("zero_point", map(&[("form", Value::Text("none"))])),
    ]);
    // [4, 2]: lane n = column, group = row / 2; scales [[1, 10], [100, 1000]]
    #[rustfmt::skip]
    let f = Fixture::new(
        QUANT_GROUP,
        &[4, 2],
        &[
            ("data", "u8", &[1, 2, 3, 4, 5, 6, 7, 8]),
            ("scales", "f32", &[0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x20, 0x41,
                                0x00, 0x00, 0xC8, 0x42, 0x00, 0x00, 0x7A, 0x44]),
        ],
        Some(a),
    );
    let want = [1.0, 200.0, 3.0, 400.0, 50.0, 6000.0, 70.0, 8000.0];
    assert_eq!(f32s(&f.render().unwrap()), want);
}

#[test]
fn quant_group_e8m0_scales_and_plain_signed_zeros() {
    let a = attrs(&[
        ("bits", Value::Uint(8)),
        ("group_size", Value::Uint(2)),
        ("axis", Value::Uint(1)),
        ("packing", packing("u8", "msb_first", 1)),
        ("scale_form", Value::Text("e8m0_exponent")),
        (
            "zero_point",
            map(&[
                ("form", Value::Text("tensor")),
                ("packing", Value::Text("plain")),
            ]),
        ),
    ]);
    // codes 1, 2 | 3, 4; scales 2, NaN; zeros −1, 0 as i16
    let f = Fixture::new(
        QUANT_GROUP,
        &[1, 4],
        &[
            ("data", "i8", &[1, 2, 3, 4]),
            ("scales", "u8:f8_e8m0", &[128, 0xFF]),
            ("zeros", "i16", &[0xFF, 0xFF, 0x00, 0x00]),
        ],
        Some(a),
    );
    let out = f32s(&f.render().unwrap());
    assert_eq!(out[..2], [4.0, 6.0]);
    assert!(out[2].is_nan() && out[3].is_nan());
}

/// `group_size` 0 with the size equation as written: one scale per code.
fn quant_per_channel() -> Fixture {
    let a = attrs(&[
        ("bits", Value::Uint(8)),
        ("group_size", Value::Uint(0)),
        ("axis", Value::Uint(1)),
        ("packing", packing("u8", "lsb_first", 1)),
        ("scale_form", Value::Text("f32_factors")),
        ("zero_point", map(&[("form", Value::Text("none"))])),
    ]);
    Fixture::new(
        QUANT_GROUP,
        &[1, 2],
        &[("data", "i8", &[0x01, 0xFF]), ("scales", "f32", &[0; 8])],
        Some(a),
    )
}

#[test]
fn quant_group_symmetric_int8_per_channel_is_refused() {
    let f = quant_per_channel();
    assert!(f.check().is_ok(), "valid: the equation as written holds");
    assert_eq!(view(&f.object), None);
    refused(f.render());
}

// ---- what has no view ----

#[test]
fn dense_gguf_and_unknown_layouts_have_no_view_and_no_data_rules() {
    let gguf_attrs = attrs(&[
        ("elems_per_block", Value::Uint(32)),
        ("block_bytes", Value::Uint(18)),
    ]);
    let cases = [
        Fixture::new("dense", &[2], &[("data", "u8", &[1, 2])], None),
        Fixture::new(
            "gguf.q4_0/1",
            &[32],
            &[("data", "u8", &[0; 18])],
            Some(gguf_attrs),
        ),
        Fixture::new("vendor.x/1", &[2], &[("blob", "u8", &[9])], None),
    ];
    for f in cases {
        assert!(f.check().is_ok());
        assert_eq!(view(&f.object), None, "{}", f.object.layout);
        refused(f.render());
    }
}

#[test]
fn sparse_values_of_an_unregistered_type_have_no_view() {
    let f = Fixture::new(
        SPARSE_COO,
        &[4],
        &[
            ("values", "u8:nf4", &[0xAB]),
            ("coords", "u32", &[1, 0, 0, 0]),
        ],
        None,
    );
    assert!(f.check().is_ok(), "index rules still hold");
    assert_eq!(view(&f.object), None);
    refused(f.render());
}

#[test]
fn views_above_the_cap_are_refused_before_any_part_is_read() {
    // 2^31 × 2^30 f32 is 2^63 bytes dense, one past i64::MAX; indptr is
    // declared, never read.
    let mut o = object(
        SPARSE_CSR,
        &[1 << 31, 1 << 30],
        vec![
            part("values", "f32", 0),
            part("indices", "u32", 0),
            part("indptr", "u32", ((1 << 31) + 1) * 4),
        ],
        None,
    );
    assert!(crate::format::profiles::check_metadata(&o).is_ok());
    assert_eq!(view(&o), None);
    let never = |_: &str| -> Result<Vec<u8>> { panic!("a part was read") };
    refused(render(&o, &never));
    refused(prepare(&o, &never).map(|p| p.size()));
    o.shape = crate::format::shape(vec![1 << 31, (1 << 30) - 1]);
    assert_eq!(view(&o), Some(("dense", MAX_VIEW_BYTES + 1 - (8 << 30))));
}

#[test]
fn a_part_that_decodes_to_another_length_is_an_encoding_error() {
    let f = csr();
    let short = |n: &str| -> Result<Vec<u8>> {
        let mut b = f.get(n)?;
        b.pop();
        Ok(b)
    };
    assert_eq!(rule(check_data(&f.object, &short)), Some(Rule::Encoding));
    assert_eq!(rule(render(&f.object, &short)), Some(Rule::Encoding));
    let prepared = prepare(&f.object, &short);
    same_outcome(render(&f.object, &short), prepared.as_ref()).unwrap_err();
}

#[test]
fn part_errors_pass_through() {
    let f = coo();
    let failing = |_: &str| -> Result<Vec<u8>> { Err(Error::Unsupported("encoding x".into())) };
    refused(check_data(&f.object, &failing));
    let prepared = prepare(&f.object, &failing);
    refused(same_outcome(render(&f.object, &failing), prepared.as_ref()));
}

// ---- edge cases and naive oracles ----

#[test]
fn degenerate_shapes_render_without_panicking() {
    let huge = 1u64 << 40;
    // A zero dim first, so the shape is valid while the other dims'
    // product overflows u64.
    let f = mx(&[0, huge, huge], ("i8", &[]), &[], 2, Some(0));
    assert!(f.check().is_ok());
    assert_eq!(f.render().unwrap(), Vec::<u8>::new());
    let f = mx(&[0, huge, huge], ("i8", &[]), &[], 2, Some(2));
    assert_eq!(f.render().unwrap(), Vec::<u8>::new());
    let f = Fixture::new(
        SPARSE_COO,
        &[0, huge, huge],
        &[("values", "f32", &[]), ("coords", "u32", &[])],
        None,
    );
    assert_eq!(f.render().unwrap(), Vec::<u8>::new());
    let f = Fixture::new(
        SPARSE_CSR,
        &[0, huge],
        &[
            ("values", "f32", &[]),
            ("indices", "u32", &[]),
            ("indptr", "u32", &[0; 4]),
        ],
        None,
    );
    assert_eq!(f.render().unwrap(), Vec::<u8>::new());
    // Rank 0 is no valid mx/quant/sparse object: no view, and no panic.
    for layout in [MX, QUANT_GROUP, SPARSE_COO, SPARSE_CSR] {
        let o = object(
            layout,
            &[],
            vec![part("data", "u8", 1)],
            Some(mx_attrs(2, None)),
        );
        assert_eq!(view(&o), None);
        let one = |_: &str| Ok(vec![0]);
        let prepared = prepare(&o, &one);
        assert!(same_outcome(render(&o, &one), prepared.as_ref()).is_err());
        let _ = check_data(&o, &|_| Ok(vec![0]));
    }
}

mod prop;
mod range;
