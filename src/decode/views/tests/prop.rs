//! Property tests: sparse views against a naive dense construction, mx
//! against the profile's flat formula where it applies, and quant_group
//! over arbitrary part bytes.

use super::*;
use proptest::prelude::*;

/// The dense tensor a list of (cell, value) pairs denotes, built the
/// obvious way.
fn naive_dense(cells: usize, stored: &[(usize, u16)]) -> Vec<u8> {
    let mut out = vec![0u16; cells];
    for &(c, v) in stored {
        out[c] = v;
    }
    out.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn words(xs: impl IntoIterator<Item = u64>, u64s: bool) -> Vec<u8> {
    xs.into_iter()
        .flat_map(|x| match u64s {
            true => x.to_le_bytes().to_vec(),
            false => (x as u32).to_le_bytes().to_vec(),
        })
        .collect()
}

/// A shape of rank 1..=3 with dims 0..=5 and a random set of distinct
/// cells of it, each with a value.
fn sparse_case() -> impl Strategy<Value = (Vec<u64>, Vec<(usize, u16)>)> {
    proptest::collection::vec(0u64..=5, 1..=3).prop_flat_map(|shape| {
        let n = shape.iter().product::<u64>() as usize;
        let cells = proptest::sample::subsequence((0..n).collect::<Vec<_>>(), 0..=n);
        (
            Just(shape),
            cells,
            proptest::collection::vec(any::<u16>(), n..=n),
        )
            .prop_flat_map(|(shape, cells, vals)| {
                let stored: Vec<(usize, u16)> = cells.iter().map(|&c| (c, vals[c])).collect();
                (Just(shape), Just(stored.clone()).prop_shuffle())
            })
    })
}

fn unravel(mut c: usize, shape: &[u64]) -> Vec<u64> {
    let mut out = vec![0; shape.len()];
    for (slot, &n) in out.iter_mut().zip(shape).rev() {
        *slot = (c % n as usize) as u64;
        c /= n as usize;
    }
    out
}

proptest! {
    #[test]
    fn coo_renders_like_the_naive_dense((shape, stored) in sparse_case(), wide in any::<bool>()) {
        let nnz = stored.len();
        let mut coords = vec![0u64; nnz * shape.len()];
        for (i, &(c, _)) in stored.iter().enumerate() {
            for (d, x) in unravel(c, &shape).into_iter().enumerate() {
                coords[d * nnz + i] = x;
            }
        }
        let values: Vec<u8> = stored.iter().flat_map(|s| s.1.to_le_bytes()).collect();
        let coords = words(coords, wide);
        let index = if wide { "u64" } else { "u32" };
        let f = Fixture::new(SPARSE_COO, &shape, &[("values", "u16", &values), ("coords", index, &coords)], None);
        let cells = shape.iter().product::<u64>() as usize;
        prop_assert_eq!(f.render().unwrap(), naive_dense(cells, &stored));
    }

    #[test]
    fn csr_renders_like_the_naive_dense((shape, mut stored) in sparse_case(), wide in any::<bool>()) {
        prop_assume!(shape.len() == 2);
        let (rows, cols) = (shape[0] as usize, shape[1] as usize);
        stored.sort();
        let indices = words(stored.iter().map(|s| (s.0 % cols) as u64), wide);
        let indptr = words((0..=rows).map(|r| stored.iter().filter(|s| s.0 < r * cols).count() as u64), wide);
        let values: Vec<u8> = stored.iter().flat_map(|s| s.1.to_le_bytes()).collect();
        let index = if wide { "u64" } else { "u32" };
        let f = Fixture::new(
            SPARSE_CSR,
            &shape,
            &[("values", "u16", &values), ("indices", index, &indices), ("indptr", index, &indptr)],
            None,
        );
        prop_assert_eq!(f.render().unwrap(), naive_dense(rows * cols, &stored));
    }

    /// With the default (last) axis the block of element i is i / block,
    /// the profile's flat formula.
    #[test]
    fn mx_last_axis_matches_the_flat_formula(
        rows in 0u64..4, blocks in 1u64..4, block in 2u64..5,
        seed in proptest::collection::vec(any::<u8>(), 64 * 4),
    ) {
        let n = (rows * blocks * block) as usize;
        let data = &seed[..n];
        let scales = &seed[n..n + n / block as usize];
        let f = mx(&[rows, blocks * block], ("u8:f8_e4m3fn", data), scales, block, None);
        let out = f32s(&f.render().unwrap());
        for (i, v) in out.iter().enumerate() {
            let want = (elements::e8m0(scales[i / block as usize]) * elements::f8_e4m3fn(data[i])) as f32;
            prop_assert!(want.to_bits() == v.to_bits() || (want.is_nan() && v.is_nan()));
        }
    }

    /// Arbitrary bytes in the parts of a valid quant_group object give
    /// values, never a panic.
    #[test]
    fn quant_group_never_panics_on_any_bytes(
        order in prop_oneof![Just("lsb_first"), Just("msb_first")],
        bytes in proptest::collection::vec(any::<u8>(), 28..=28),
    ) {
        let mut f = awq(order);
        f.set("data", &bytes[..8]);
        f.set("scales", &bytes[8..24]);
        f.set("zeros", &bytes[24..]);
        prop_assert_eq!(f.render().unwrap().len(), 64);
    }

    /// Any small quant_group or mx parameter set with any part sizes opens
    /// or is rejected without a panic; when it opens, it renders at exactly
    /// its announced size or is refused.
    #[test]
    fn random_quant_objects_never_panic(
        mx_layout in any::<bool>(),
        bits in 0u64..10, group in 0u64..6, axis in 0u64..4, per_word in 0u64..40,
        word in prop_oneof![Just("u8"), Just("u16"), Just("u32"), Just("u64")],
        form in prop_oneof![Just("none"), Just("implied"), Just("tensor")],
        shape in proptest::collection::vec(0u64..6, 0..4),
        sizes in proptest::collection::vec(0u64..48, 3),
    ) {
        let (o, parts) = if mx_layout {
            let a = attrs(&[
                ("block_size", Value::Uint(group)),
                ("axis", Value::Uint(axis)),
                ("scale_form", Value::Text("e8m0_exponent")),
            ]);
            let parts = vec![part("data", "u8:f4_e2m1", sizes[0]), part("scales", "u8:f8_e8m0", sizes[1])];
            (MX, (parts, a))
        } else {
            let zp = match form {
                "implied" => map(&[("form", Value::Text(form)), ("value", Value::Nint(3))]),
                "tensor" => map(&[("form", Value::Text(form)), ("packing", Value::Text("same_as_data"))]),
                _ => map(&[("form", Value::Text(form))]),
            };
            let a = attrs(&[
                ("bits", Value::Uint(bits)),
                ("group_size", Value::Uint(group)),
                ("axis", Value::Uint(axis)),
                ("packing", packing(word, "msb_first", per_word)),
                ("scale_form", Value::Text("f16_factors")),
                ("zero_point", zp),
            ]);
            let mut parts = vec![part("data", word, sizes[0]), part("scales", "bf16", sizes[1])];
            if form == "tensor" {
                parts.push(part("zeros", word, sizes[2]));
            }
            (QUANT_GROUP, (parts, a))
        };
        let obj = object(o, &shape, parts.0, Some(parts.1));
        if crate::format::profiles::check_metadata(&obj).is_ok() {
            let bytes = |n: &str| Ok(vec![0x5A; obj.part(n).map_or(0, |p| p.decoded_size() as usize)]);
            match view(&obj) {
                Some((_, size)) => prop_assert_eq!(render(&obj, &bytes).unwrap().len() as u64, size),
                None => prop_assert!(matches!(render(&obj, &bytes), Err(Error::Unsupported(_)))),
            }
        }
    }
}
