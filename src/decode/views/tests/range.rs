//! Range reads against the whole view: for every view kind, `read_range`
//! and `read_into` at random ranges (unaligned, straddling rows and blocks,
//! running past the end, starting past it) give exactly the slice of
//! `render`, and `prepare` fails exactly where `render` does.

use super::*;
use proptest::prelude::*;

/// `render(o)[offset..offset + len]`, clipped at the end.
fn slice(whole: &[u8], offset: u64, len: usize) -> &[u8] {
    let start = offset.min(whole.len() as u64) as usize;
    &whole[start..whole.len().min(start.saturating_add(len))]
}

/// Reads the fixture's view at every range and compares with `render`:
/// each `(a, b)` in `ranges` is mapped to an offset and a length up to 8
/// bytes past the end; small views are also read at every offset with a
/// few lengths.
fn check_ranges(f: &Fixture, ranges: &[(u64, u64)]) -> Result<(), TestCaseError> {
    let whole = f.render().expect("a valid case");
    let p = prepare(&f.object, &|n| f.get(n)).expect("prepared");
    let size = whole.len() as u64;
    prop_assert_eq!(p.size(), size);
    let mut reads: Vec<(u64, usize)> = ranges
        .iter()
        .map(|&(a, b)| (a % (size + 9), (b % (size + 9)) as usize))
        .collect();
    reads.extend([(size, 4), (size + 1, 4), (u64::MAX, 4), (u64::MAX, 0)]);
    if size <= 256 {
        for offset in 0..=size {
            reads.extend([0, 1, 2, 3, 5, 7, 9].map(|len| (offset, len)));
        }
    }
    let mut buf = vec![0u8; size as usize + 16];
    for (offset, len) in reads {
        let want = slice(&whole, offset, len);
        prop_assert_eq!(
            p.read_range(offset, len).unwrap(),
            want,
            "at {} +{}",
            offset,
            len
        );
        buf.fill(0xA5);
        let n = p.read_into(offset, &mut buf[..len.min(size as usize + 16)]);
        prop_assert_eq!(n.unwrap(), want.len());
        prop_assert_eq!(&buf[..want.len()], want, "read_into at {} +{}", offset, len);
        prop_assert!(buf[want.len()..].iter().all(|&b| b == 0xA5), "wrote past n");
    }
    Ok(())
}

fn ranges() -> impl Strategy<Value = Vec<(u64, u64)>> {
    proptest::collection::vec((any::<u64>(), any::<u64>()), 1..12)
}

// ---- sparse ----

/// Value types of sparse objects, with their bytes per element (0 for
/// f4's nibbles): every element layout the dense view has.
const SPARSE_TYPES: [(&str, usize); 8] = [
    ("u8", 1),
    ("i16", 2),
    ("f32", 4),
    ("f64", 8),
    ("f32:complex64", 8),
    ("u8:bool", 1),
    ("u8:f8_e5m2", 1),
    ("u8:f4_e2m1", 0),
];

/// The values part of `n` stored elements of a type from [`SPARSE_TYPES`],
/// from random bytes (at least `8·n` of them).
fn values_of((ty, width): (&str, usize), seed: &[u8], n: usize) -> Vec<u8> {
    match ty {
        "u8:f4_e2m1" => (0..n.div_ceil(2))
            .map(|b| {
                let hi = if 2 * b + 1 < n {
                    seed[2 * b + 1] << 4
                } else {
                    0
                };
                (seed[2 * b] & 0xF) | hi
            })
            .collect(),
        "u8:bool" => seed[..n].iter().map(|b| b & 1).collect(),
        _ => seed[..n * width].to_vec(),
    }
}

/// A shape and a shuffled set of distinct cells of it.
fn cells_of(
    shape: impl Strategy<Value = Vec<u64>>,
) -> impl Strategy<Value = (Vec<u64>, Vec<usize>)> {
    shape.prop_flat_map(|shape| {
        let n = shape.iter().product::<u64>() as usize;
        let cells = proptest::sample::subsequence((0..n).collect::<Vec<_>>(), 0..=n);
        (Just(shape), cells.prop_shuffle())
    })
}

fn sparse_type() -> impl Strategy<Value = (&'static str, usize)> {
    proptest::sample::select(SPARSE_TYPES.to_vec())
}

fn seed(len: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), len..=len)
}

fn index_words(xs: impl IntoIterator<Item = u64>, wide: bool) -> (&'static str, Vec<u8>) {
    let bytes = xs
        .into_iter()
        .flat_map(|x| match wide {
            true => x.to_le_bytes().to_vec(),
            false => (x as u32).to_le_bytes().to_vec(),
        })
        .collect();
    (if wide { "u64" } else { "u32" }, bytes)
}

fn coo_fixture(
    shape: &[u64],
    cells: &[usize],
    ty: (&str, usize),
    seed: &[u8],
    wide: bool,
) -> Fixture {
    let nnz = cells.len();
    let mut coords = vec![0u64; nnz * shape.len()];
    for (i, &c) in cells.iter().enumerate() {
        let mut rest = c as u64;
        for d in (0..shape.len()).rev() {
            coords[d * nnz + i] = rest % shape[d];
            rest /= shape[d];
        }
    }
    let (index, coords) = index_words(coords, wide);
    let values = values_of(ty, seed, nnz);
    Fixture::new(
        SPARSE_COO,
        shape,
        &[("values", ty.0, &values), ("coords", index, &coords)],
        None,
    )
}

fn csr_fixture(
    shape: &[u64],
    cells: &[usize],
    ty: (&str, usize),
    seed: &[u8],
    wide: bool,
) -> Fixture {
    let (rows, cols) = (shape[0] as usize, shape[1] as usize);
    let mut cells = cells.to_vec();
    cells.sort_unstable();
    let (index, indices) = index_words(cells.iter().map(|&c| (c % cols) as u64), wide);
    let per_row = (0..=rows).map(|r| cells.iter().filter(|&&c| c < r * cols).count() as u64);
    let (_, indptr) = index_words(per_row, wide);
    let values = values_of(ty, seed, cells.len());
    Fixture::new(
        SPARSE_CSR,
        shape,
        &[
            ("values", ty.0, &values),
            ("indices", index, &indices),
            ("indptr", index, &indptr),
        ],
        None,
    )
}

proptest! {
    #[test]
    fn coo_ranges_match_the_rendered_view(
        (shape, cells) in cells_of(proptest::collection::vec(0u64..=6, 1..=3)),
        ty in sparse_type(), seed in seed(8 * 216), wide in any::<bool>(), ranges in ranges(),
    ) {
        check_ranges(&coo_fixture(&shape, &cells, ty, &seed, wide), &ranges)?;
    }

    #[test]
    fn csr_ranges_match_the_rendered_view(
        (shape, cells) in cells_of(proptest::collection::vec(0u64..=12, 2..=2)),
        ty in sparse_type(), seed in seed(8 * 144), wide in any::<bool>(), ranges in ranges(),
    ) {
        check_ranges(&csr_fixture(&shape, &cells, ty, &seed, wide), &ranges)?;
    }
}

// ---- dequantized ----

/// A rank 1..=3 shape and an axis: the axis dim is `k` times 1 or 2, the
/// last dim (when not the axis) `last_factor` times 1 or 2, other dims
/// 0..=3.
fn grouped_shape(k: u64, last_factor: u64) -> impl Strategy<Value = (Vec<u64>, usize)> {
    (1usize..=3)
        .prop_flat_map(|rank| {
            (
                Just(rank),
                0..rank,
                proptest::collection::vec(0u64..=3, rank),
            )
        })
        .prop_map(move |(rank, axis, dims)| {
            let shape = (0..rank)
                .map(|d| match d {
                    _ if d == axis => k * (dims[d] % 2 + 1),
                    _ if d == rank - 1 => last_factor * (dims[d] % 2 + 1),
                    _ => dims[d],
                })
                .collect();
            (shape, axis)
        })
}

const MX_TYPES: [&str; 4] = ["u8:f4_e2m1", "u8:f8_e4m3fn", "u8:f8_e5m2", "i8"];

proptest! {
    #[test]
    fn mx_ranges_match_the_rendered_view(
        (block, (shape, axis)) in (2u64..=4).prop_flat_map(|b| (Just(b), grouped_shape(b, 1))),
        ty in proptest::sample::select(MX_TYPES.to_vec()),
        seed in seed(2 * 216), ranges in ranges(),
    ) {
        let n = shape.iter().product::<u64>() as usize;
        let data = match ty {
            "u8:f4_e2m1" => values_of((ty, 0), &seed, n),
            _ => seed[..n].to_vec(),
        };
        let scales = &seed[n..n + n / block as usize];
        let f = mx(&shape, (ty, &data), scales, block, Some(axis as u64));
        check_ranges(&f, &ranges)?;
    }
}

/// The scale forms and a dtype each allows.
const SCALES: [(&str, &str, usize); 5] = [
    ("f32_factors", "f32", 4),
    ("f32_factors", "f64", 8),
    ("f16_factors", "f16", 2),
    ("f16_factors", "bf16", 2),
    ("e8m0_exponent", "u8:f8_e8m0", 1),
];

/// The zero points: none, implied, tensor packed like the data, tensor of
/// plain i16 or f32.
const ZEROS: [&str; 5] = ["none", "implied", "same_as_data", "i16", "f32"];

/// A quant_group object from its parameters, its parts cut from `seed`.
fn quant_fixture(
    (bits, word, order): (u64, (&str, u64), &str),
    (shape, axis, group): (&[u64], usize, u64),
    (form, scale_ty, scale_width): (&str, &str, usize),
    zero: &str,
    seed: &[u8],
) -> Fixture {
    let per_word = word.1 / bits;
    let zp = match zero {
        "none" => map(&[("form", Value::Text("none"))]),
        "implied" => map(&[("form", Value::Text("implied")), ("value", Value::Nint(2))]),
        "same_as_data" => map(&[
            ("form", Value::Text("tensor")),
            ("packing", Value::Text("same_as_data")),
        ]),
        _ => map(&[
            ("form", Value::Text("tensor")),
            ("packing", Value::Text("plain")),
        ]),
    };
    let a = attrs(&[
        ("bits", Value::Uint(bits)),
        ("group_size", Value::Uint(group)),
        ("axis", Value::Uint(axis as u64)),
        ("packing", packing(word.0, order, per_word)),
        ("scale_form", Value::Text(form)),
        ("zero_point", zp),
    ]);
    let codes = shape.iter().product::<u64>();
    let cells = codes / group;
    let w = word.1 as usize / 8;
    let mut cut = seed;
    let mut take = |n: usize| -> Vec<u8> {
        let (head, rest) = cut.split_at(n);
        cut = rest;
        head.to_vec()
    };
    let data = take((codes / per_word) as usize * w);
    let scales = take(cells as usize * scale_width);
    let zeros = match zero {
        "same_as_data" => Some((word.0, take((cells / per_word) as usize * w))),
        "i16" => Some(("i16", take(cells as usize * 2))),
        "f32" => Some(("f32", take(cells as usize * 4))),
        _ => None,
    };
    let mut parts = vec![
        ("data", word.0, data.as_slice()),
        ("scales", scale_ty, &scales),
    ];
    if let Some((ty, z)) = &zeros {
        parts.push(("zeros", ty, z));
    }
    Fixture::new(QUANT_GROUP, shape, &parts, Some(a))
}

proptest! {
    #[test]
    fn quant_group_ranges_match_the_rendered_view(
        (bits, word, order, group, (shape, axis)) in (
            prop_oneof![Just(2u64), Just(4), Just(8)],
            prop_oneof![Just(("u8", 8u64)), Just(("u16", 16)), Just(("u32", 32))],
            prop_oneof![Just("lsb_first"), Just("msb_first")],
            1u64..=3,
        ).prop_flat_map(|(bits, word, order, group)| {
            let per_word = word.1 / bits;
            // The axis dim carries per_word when it is the last one, so
            // that groups·lanes is a multiple of it for packed zeros.
            (Just(bits), Just(word), Just(order), Just(group), grouped_shape(group, per_word))
                .prop_map(move |(b, w, o, g, (mut shape, axis))| {
                    if axis == shape.len() - 1 {
                        shape[axis] *= per_word;
                    }
                    (b, w, o, g, (shape, axis))
                })
        }),
        scales in proptest::sample::select(SCALES.to_vec()),
        zero in proptest::sample::select(ZEROS.to_vec()),
        seed in seed(8192), ranges in ranges(),
    ) {
        let f = quant_fixture((bits, word, order), (&shape, axis, group), scales, zero, &seed);
        check_ranges(&f, &ranges)?;
    }
}

// ---- beyond the random cases ----

/// Every negative case of the hand-written tests: `prepare` refuses or
/// rejects exactly what `render` does, with the same error.
#[test]
fn prepare_fails_exactly_as_render_does() {
    let mut cases = csr_broken();
    cases.extend(coo_broken());
    cases.extend([
        mx(&[3], ("u8:f4_e2m1", &[0x21, 0x10]), &[127], 3, None),
        mx(&[2], ("u8:f8_e4m3fnuz", &[0, 0]), &[127], 2, None),
        quant_per_channel(),
        Fixture::new(
            SPARSE_CSR,
            &[1, 2],
            &[
                ("values", "u8:bool", &[1, 2]),
                ("indices", "u32", &[0, 0, 0, 0, 1, 0, 0, 0]),
                ("indptr", "u32", &[0, 0, 0, 0, 2, 0, 0, 0]),
            ],
            None,
        ),
        Fixture::new(
            SPARSE_COO,
            &[4],
            &[
                ("values", "u8:nf4", &[0xAB]),
                ("coords", "u32", &[1, 0, 0, 0]),
            ],
            None,
        ),
        Fixture::new("dense", &[2], &[("data", "u8", &[1, 2])], None),
        Fixture::new("vendor.x/1", &[2], &[("blob", "u8", &[9])], None),
    ]);
    for f in &cases {
        let get = |n: &str| f.get(n);
        let prepared = prepare(&f.object, &get);
        let rendered = render(&f.object, &get);
        assert!(rendered.is_err(), "{:?}", f.object);
        let _ = same_outcome(rendered, prepared.as_ref());
    }
}

#[test]
fn render_refuses_views_above_its_cap_before_any_part_is_read() {
    // 32768 × 32769 f32 is just over 4 GiB: offered, prepared, not rendered.
    let o = object(
        SPARSE_COO,
        &[32768, 32769],
        vec![part("values", "f32", 0), part("coords", "u32", 0)],
        None,
    );
    assert_eq!(view(&o), Some(("dense", 32768 * 32769 * 4)));
    let never = |_: &str| -> Result<Vec<u8>> { panic!("a part was read") };
    refused(render(&o, &never));
    let empty = |_: &str| Ok(Vec::new());
    assert_eq!(prepare(&o, &empty).unwrap().size(), 32768 * 32769 * 4);
}

#[test]
fn a_huge_sparse_view_is_read_by_range_with_memory_for_its_parts_only() {
    // 2^31 × 2^30 u8 (2 EiB dense) with one stored byte at the last cell.
    let (rows, cols) = (1u64 << 31, 1u64 << 30);
    let coords: Vec<u8> = [rows - 1, cols - 1]
        .iter()
        .flat_map(|c| c.to_le_bytes())
        .collect();
    let f = Fixture::new(
        SPARSE_COO,
        &[rows, cols],
        &[("values", "u8", &[0x5A]), ("coords", "u64", &coords)],
        None,
    );
    let size = rows * cols;
    assert_eq!(view(&f.object), Some(("dense", size)));
    let p = prepare(&f.object, &|n| f.get(n)).unwrap();
    assert_eq!(p.size(), size);
    assert!(p.heap_bytes() < 1024, "{}", p.heap_bytes());
    assert_eq!(p.read_range(size - 3, 10).unwrap(), [0, 0, 0x5A]);
    assert_eq!(p.read_range(size / 2, 4).unwrap(), [0; 4]);
    assert_eq!(p.read_range(size, 4).unwrap(), [0u8; 0]);
    assert_eq!(p.read_range(u64::MAX, 4).unwrap(), [0u8; 0]);
}

#[test]
fn heap_bytes_counts_the_parts_and_the_coo_index() {
    let f = coo();
    let p = prepare(&f.object, &|n| f.get(n)).unwrap();
    // 3 values, 3 sorted cells of 8 bytes, the name "t"
    assert_eq!(p.heap_bytes(), 3 + 3 * 8 + 1);
    let f = csr();
    let p = prepare(&f.object, &|n| f.get(n)).unwrap();
    assert_eq!(p.heap_bytes(), 8 + 16 + 16 + 1);
}

#[test]
fn prepared_views_can_be_shared_across_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Prepared>();
}
