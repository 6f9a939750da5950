//! The fast path against a naive oracle written from the spec text: every
//! element's offset by the layout's own formula, every value extracted and
//! packed by the element-types tables, the whole view rendered at once.

use super::*;
use proptest::collection::vec;
use proptest::prelude::*;

// ---- the oracle -----------------------------------------------------------

fn rm_strides(shape: &[u64]) -> Vec<i128> {
    let mut s = vec![1i128; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = shape[i + 1] as i128 * s[i + 1];
    }
    s
}

fn cm_strides(shape: &[u64]) -> Vec<i128> {
    let mut s = vec![1i128; shape.len()];
    for i in 1..shape.len() {
        s[i] = shape[i - 1] as i128 * s[i - 1];
    }
    s
}

fn dot(idx: &[u64], strides: &[i128]) -> i128 {
    idx.iter().zip(strides).map(|(&i, &s)| i as i128 * s).sum()
}

fn simple_offset(order: &Simple, idx: &[u64], space: &[u64]) -> i128 {
    match order {
        Simple::RowMajor => dot(idx, &rm_strides(space)),
        Simple::ColumnMajor => dot(idx, &cm_strides(space)),
        Simple::Strided(s) => dot(idx, &s.iter().map(|&v| v as i128).collect::<Vec<_>>()),
    }
}

/// `layouts/tiled.md` § Element Address, steps 1–5, recursively.
fn tiled_offset(t: &Tiling, idx: &[u64], dims: &[u64]) -> i128 {
    let tile_idx: Vec<u64> = idx.iter().zip(&t.tile).map(|(&i, &s)| i / s).collect();
    let intra: Vec<u64> = idx.iter().zip(&t.tile).map(|(&i, &s)| i % s).collect();
    let grid: Vec<u64> = dims
        .iter()
        .zip(&t.tile)
        .map(|(&d, &s)| d.div_ceil(s))
        .collect();
    let tile_elems: i128 = t.tile.iter().map(|&s| s as i128).product();
    let start = simple_offset(&t.outer, &tile_idx, &grid) * tile_elems;
    let inner = match &t.inner {
        Inner::Simple(o) => simple_offset(o, &intra, &t.tile),
        Inner::Tiled(next) => tiled_offset(next, &intra, &t.tile),
    };
    start + inner
}

/// `layouts/morton.md` § Morton Index Computation, as written.
fn morton_code(idx: &[u64], bits: &[u32]) -> i128 {
    let rank = idx.len() as u32;
    let mut code = 0i128;
    for b in 0..*bits.iter().max().unwrap() {
        for d in 0..rank {
            if b < bits[d as usize] {
                code |= (((idx[d as usize] >> b) & 1) as i128) << (b * rank + d);
            }
        }
    }
    code
}

/// `layouts/hilbert.md` § HilbertToCoords, as written.
#[allow(clippy::needless_range_loop)] // the spec's pseudocode, line for line
fn hilbert_to_coords(h: u64, r: usize, p: u32) -> Vec<u64> {
    let mut x = vec![0u64; r];
    for b in 0..p as usize {
        for d in 0..r {
            x[d] |= ((h >> (b * r + (r - 1 - d))) & 1) << b;
        }
    }
    let t = x[r - 1] >> 1;
    for i in (1..r).rev() {
        x[i] ^= x[i - 1];
    }
    x[0] ^= t;
    let mut q = 2u64;
    while q != 1 << p {
        let pm = q - 1;
        for i in (0..r).rev() {
            if x[i] & q != 0 {
                x[0] ^= pm;
            } else {
                let t = (x[0] ^ x[i]) & pm;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
        q <<= 1;
    }
    x
}

fn naive_offset(order: &Order, shape: &[u64], idx: &[u64]) -> i128 {
    match order {
        Order::RowMajor => dot(idx, &rm_strides(shape)),
        Order::ColumnMajor => dot(idx, &cm_strides(shape)),
        Order::Strided(s) => simple_offset(&Simple::Strided(s.clone()), idx, shape),
        Order::Tiled(t) => tiled_offset(t, idx, shape),
        Order::Morton(b) => morton_code(idx, b),
        Order::Hilbert { order } => {
            // Invert HilbertToCoords by search: an oracle independent of
            // the forward transform under test.
            let r = shape.len();
            (0..1u64 << (r as u32 * order))
                .find(|&h| hilbert_to_coords(h, r, *order) == idx)
                .unwrap() as i128
        }
    }
}

/// The index space the buffer must hold: padded tiles, the Morton box.
fn naive_domain(order: &Order, shape: &[u64]) -> Vec<u64> {
    match order {
        Order::Tiled(t) => shape
            .iter()
            .zip(&t.tile)
            .map(|(&s, &t)| s.div_ceil(t) * t)
            .collect(),
        Order::Morton(b) => b.iter().map(|&b| 1u64 << b).collect(),
        _ => shape.to_vec(),
    }
}

fn indices(dims: &[u64]) -> Vec<Vec<u64>> {
    let n: u64 = dims.iter().product();
    (0..n)
        .map(|mut e| {
            let mut idx = vec![0; dims.len()];
            for k in (0..dims.len()).rev() {
                idx[k] = e % dims[k];
                e /= dims[k];
            }
            idx
        })
        .collect()
}

/// First byte and byte count of the unit holding element `o`
/// (`memory-layout.md` § Element Address Computation).
fn naive_unit(o: i128, bits: u32, byte_offset: u64) -> (i128, i128) {
    let b = byte_offset as i128;
    match bits {
        6 => (b + 3 * o.div_euclid(4), 3),
        1 | 2 | 4 => (b + o.div_euclid(8 / bits as i128), 1),
        _ => (b + o * (bits / 8) as i128, (bits / 8) as i128),
    }
}

/// The element at offset `o`, as bytes (whole) or as a small value.
fn naive_value(stored: &[u8], o: i128, bits: u32, byte_offset: u64) -> Vec<u8> {
    let (start, n) = naive_unit(o, bits, byte_offset);
    let unit = &stored[start as usize..(start + n) as usize];
    match bits {
        6 => {
            let (b0, b1, b2) = (unit[0], unit[1], unit[2]);
            // element-types.md § 6-bit packing, the table.
            vec![match o.rem_euclid(4) {
                0 => b0 & 0x3F,
                1 => (b0 >> 6) | (b1 & 0x0F) << 2,
                2 => (b1 >> 4) | (b2 & 0x03) << 4,
                _ => b2 >> 2,
            }]
        }
        1 | 2 | 4 => {
            let p = 8 / bits as i128;
            let shift = (o.rem_euclid(p) * bits as i128) as u32;
            vec![(unit[0] >> shift) & ((1u16 << bits) - 1) as u8]
        }
        _ => unit.to_vec(),
    }
}

fn naive_pack(values: &[Vec<u8>], bits: u32) -> Vec<u8> {
    match bits {
        6 => {
            let mut out = vec![0u8; values.len().div_ceil(4) * 3];
            for (e, v) in values.iter().enumerate() {
                let (g, v) = (e / 4 * 3, v[0]);
                match e % 4 {
                    0 => out[g] |= v,
                    1 => {
                        out[g] |= v << 6;
                        out[g + 1] |= v >> 2;
                    }
                    2 => {
                        out[g + 1] |= v << 4;
                        out[g + 2] |= v >> 4;
                    }
                    _ => out[g + 2] |= v << 2,
                }
            }
            out
        }
        1 | 2 | 4 => {
            let p = 8 / bits as usize;
            let mut out = vec![0u8; values.len().div_ceil(p)];
            for (e, v) in values.iter().enumerate() {
                out[e / p] |= v[0] << ((e % p) * bits as usize);
            }
            out
        }
        _ => values.concat(),
    }
}

struct Naive {
    view: Vec<u8>,
    extent: u64,
    /// The least `byte_offset` keeping every unit at or after byte 0.
    need: u64,
}

fn naive(shape: &[u64], bits: u32, order: &Order, byte_offset: u64, stored: &[u8]) -> Naive {
    let count: u64 = shape.iter().product();
    let (mut lo, mut hi) = (i128::MAX, byte_offset as i128);
    if count > 0 {
        for idx in indices(&naive_domain(order, shape)) {
            let o = naive_offset(order, shape, &idx);
            let (start, n) = naive_unit(o, bits, byte_offset);
            lo = lo.min(start);
            hi = hi.max(start + n);
        }
    }
    let need = if lo == i128::MAX || lo >= byte_offset as i128 {
        0
    } else {
        (byte_offset as i128 - lo) as u64
    };
    let view = if (stored.len() as i128) < hi || lo < 0 {
        Vec::new()
    } else {
        let values: Vec<Vec<u8>> = indices(shape)
            .iter()
            .map(|idx| naive_value(stored, naive_offset(order, shape, idx), bits, byte_offset))
            .collect();
        naive_pack(&values, bits)
    };
    Naive {
        view,
        extent: hi as u64,
        need,
    }
}

fn bytes(n: u64, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn whole(r: &Relayout, stored: &[u8]) -> Vec<u8> {
    let mut out = vec![0xAA; r.len() as usize];
    r.read_into(stored, 0, &mut out).unwrap();
    out
}

// ---- spec examples ----------------------------------------------------------

/// A view of byte-wide elements whose stored value is their position.
fn positions(shape: &[u64], order: Order, byte_offset: u64) -> Vec<u8> {
    let r = Relayout::new(shape, 8, order, byte_offset).unwrap();
    let stored: Vec<u8> = (0..r.stored_extent()).map(|i| i as u8).collect();
    whole(&r, &stored)
        .iter()
        .map(|&b| b.wrapping_sub(byte_offset as u8))
        .collect()
}

#[test]
fn row_major_example_element_1_2_is_at_6() {
    assert_eq!(positions(&[3, 4], Order::RowMajor, 0)[4 + 2], 6);
}

#[test]
fn column_major_example_element_1_2_is_at_7() {
    assert_eq!(positions(&[3, 4], Order::ColumnMajor, 0)[4 + 2], 7);
}

#[test]
fn strided_example_reversed_rows() {
    let view = positions(&[3, 4], Order::Strided(vec![-4, 1]), 8);
    assert_eq!(view[2 * 4 + 3] as i8, -5);
    // Offsets -8 ..= 3: twelve elements, eight of them before byte_offset.
    let r = Relayout::new(&[3, 4], 8, Order::Strided(vec![-4, 1]), 8).unwrap();
    assert_eq!(r.stored_extent(), 12);
    assert!(Relayout::new(&[3, 4], 8, Order::Strided(vec![-4, 1]), 7).is_err());
}

#[test]
fn strided_zero_stride_broadcasts() {
    let view = positions(&[5, 4], Order::Strided(vec![0, 1]), 0);
    assert_eq!(view[3 * 4 + 2], 2);
    assert_eq!(view[2], 2);
    let r = Relayout::new(&[5, 4], 8, Order::Strided(vec![0, 1]), 0).unwrap();
    assert_eq!(r.stored_extent(), 4);
}

fn tiling(tile: &[u64], outer: Simple, inner: Inner) -> Tiling {
    Tiling {
        tile: tile.to_vec(),
        outer,
        inner,
    }
}

#[test]
fn tiled_example_element_3_5_is_at_29() {
    let t = tiling(&[2, 4], Simple::RowMajor, Inner::Simple(Simple::RowMajor));
    assert_eq!(positions(&[6, 8], Order::Tiled(t), 0)[3 * 8 + 5], 29);
}

#[test]
fn tiled_strided_outer_and_inner() {
    let outer = tiling(
        &[2, 2],
        Simple::Strided(vec![1, 2]),
        Inner::Simple(Simple::RowMajor),
    );
    assert_eq!(positions(&[4, 4], Order::Tiled(outer), 0)[2 * 4 + 3], 13);
    let inner = tiling(
        &[2, 2],
        Simple::RowMajor,
        Inner::Simple(Simple::Strided(vec![1, 2])),
    );
    assert_eq!(positions(&[4, 4], Order::Tiled(inner), 0)[2 * 4 + 3], 14);
}

#[test]
fn tiled_partial_edge_tiles_are_stored_padded() {
    // [5, 3] in [2, 2] tiles: a 3 × 2 grid of 4-element tiles.
    let t = tiling(&[2, 2], Simple::RowMajor, Inner::Simple(Simple::RowMajor));
    let r = Relayout::new(&[5, 3], 8, Order::Tiled(t.clone()), 0).unwrap();
    assert_eq!(r.stored_extent(), 24);
    assert_eq!(r.len(), 15);
    // Element [4, 2]: tile [2, 1] = 5, intra [0, 0].
    assert_eq!(positions(&[5, 3], Order::Tiled(t), 0)[4 * 3 + 2], 20);
}

#[test]
fn morton_example_element_2_3_is_at_14() {
    let view = positions(&[4, 4], Order::Morton(vec![2, 2]), 0);
    assert_eq!(view[2 * 4 + 3], 14);
    let table = [0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15];
    assert_eq!(view, table);
}

#[test]
fn morton_padding_to_a_power_of_two() {
    let r = Relayout::new(&[3, 3], 8, Order::Morton(vec![2, 2]), 0).unwrap();
    assert_eq!(r.stored_extent(), 16);
}

#[test]
fn hilbert_conformance_table() {
    let table: [(u64, [u64; 2]); 16] = [
        (0, [0, 0]),
        (1, [1, 0]),
        (2, [1, 1]),
        (3, [0, 1]),
        (4, [0, 2]),
        (5, [0, 3]),
        (6, [1, 3]),
        (7, [1, 2]),
        (8, [2, 2]),
        (9, [2, 3]),
        (10, [3, 3]),
        (11, [3, 2]),
        (12, [3, 1]),
        (13, [2, 1]),
        (14, [2, 0]),
        (15, [3, 0]),
    ];
    let view = positions(&[4, 4], Order::Hilbert { order: 2 }, 0);
    for (h, [x0, x1]) in table {
        assert_eq!(view[(x0 * 4 + x1) as usize], h as u8, "X = [{x0}, {x1}]");
        assert_eq!(hilbert_to_coords(h, 2, 2), [x0, x1]);
    }
}

#[test]
fn hilbert_forward_inverts_the_spec_inverse() {
    for r in 2..=4usize {
        for p in 1..=3u32 {
            for h in 0..1u64 << (r as u32 * p) {
                let mut x = hilbert_to_coords(h, r, p);
                assert_eq!(coords_to_hilbert(&mut x, p), h, "r {r} p {p}");
            }
        }
    }
}

#[test]
fn hilbert_steps_are_unit() {
    let (r, p) = (3usize, 3u32);
    for h in 1..1u64 << (r as u32 * p) {
        let (a, b) = (hilbert_to_coords(h - 1, r, p), hilbert_to_coords(h, r, p));
        let d: u64 = a.iter().zip(&b).map(|(x, y)| x.abs_diff(*y)).sum();
        assert_eq!(d, 1, "h {h}");
    }
}

#[test]
fn six_bit_worked_example() {
    let group = [0x81, 0x40, 0x20];
    let r = Relayout::new(&[4], 6, Order::RowMajor, 0).unwrap();
    assert_eq!(whole(&r, &group), group);
    // Column-major [2, 2] stores [a00, a10, a01, a11] = 1, 2, 4, 8; the
    // view holds 1, 4, 2, 8.
    let r = Relayout::new(&[2, 2], 6, Order::ColumnMajor, 0).unwrap();
    assert_eq!(whole(&r, &group), [0x01, 0x21, 0x20]);
}

#[test]
fn six_bit_buffers_are_whole_groups() {
    let r = Relayout::new(&[1], 6, Order::RowMajor, 0).unwrap();
    assert_eq!((r.len(), r.stored_extent()), (3, 3));
    assert_eq!(whole(&r, &[0xFF, 0xFF, 0xFF]), [0x3F, 0, 0]);
}

#[test]
fn odd_count_sub_byte_views_have_zero_high_bits() {
    // uint4 [5, 12, 3] stored reversed, with garbage in the spare nibble.
    let r = Relayout::new(&[3], 4, Order::Strided(vec![-1]), 1).unwrap();
    assert_eq!(r.stored_extent(), 2);
    assert_eq!(whole(&r, &[0xC3, 0xF5]), [0xC5, 0x03]);
    // uint2 [3, 1, 2] from example.
    let r = Relayout::new(&[3], 2, Order::ColumnMajor, 0).unwrap();
    assert_eq!(whole(&r, &[0xE7]), [0x27]);
    let r = Relayout::new(&[3], 1, Order::Strided(vec![2]), 0).unwrap();
    assert_eq!(whole(&r, &[0b1111_0001]), [0b0000_0101]);
}

#[test]
fn scalar_is_row_major_only() {
    let r = Relayout::new(&[], 32, Order::RowMajor, 4).unwrap();
    assert_eq!((r.len(), r.stored_extent()), (4, 8));
    assert_eq!(whole(&r, &[0, 0, 0, 0, 1, 2, 3, 4]), [1, 2, 3, 4]);
    for order in [
        Order::ColumnMajor,
        Order::Strided(vec![]),
        Order::Morton(vec![]),
    ] {
        assert!(Relayout::new(&[], 32, order, 0).is_err());
    }
}

#[test]
fn empty_tensor_reads_nothing() {
    let r = Relayout::new(&[3, 0], 32, Order::Strided(vec![-1, -5]), 8).unwrap();
    assert_eq!((r.len(), r.stored_extent()), (0, 8));
    r.read_into(&[0; 8], 0, &mut []).unwrap();
}

#[test]
fn refusals() {
    let t = |tile: &[u64], inner| Order::Tiled(tiling(tile, Simple::RowMajor, inner));
    let rm = || Inner::Simple(Simple::RowMajor);
    let bad: Vec<(&[u64], u32, Order)> = vec![
        (&[4], 3, Order::RowMajor),
        (&[4], 12, Order::RowMajor),
        (&[u64::MAX], 8, Order::RowMajor),
        (&[1 << 32, 1 << 32], 8, Order::RowMajor),
        (&[1 << 62], 16, Order::RowMajor),
        (&[4, 4], 8, Order::Strided(vec![1])),
        (&[4, 4], 8, Order::Strided(vec![i64::MAX, 1])),
        (&[4, 4], 8, t(&[2], rm())),
        (&[4, 4], 8, t(&[0, 2], rm())),
        (
            &[4, 4],
            8,
            t(
                &[4, 4],
                Inner::Tiled(Box::new(tiling(&[3, 2], Simple::RowMajor, rm()))),
            ),
        ),
        (&[5, 4], 8, Order::Morton(vec![2, 2])),
        (&[4, 4], 8, Order::Morton(vec![0, 2])),
        (&[4, 4], 8, Order::Morton(vec![33, 32])),
        (&[4], 8, Order::Hilbert { order: 2 }),
        (&[4, 2], 8, Order::Hilbert { order: 2 }),
        (&[4, 4], 8, Order::Hilbert { order: 0 }),
    ];
    for (shape, bits, order) in bad {
        let what = format!("{shape:?} {bits} {order:?}");
        assert!(Relayout::new(shape, bits, order, 0).is_err(), "{what}");
    }
}

#[test]
fn tiling_depth_is_capped() {
    let mut t = tiling(&[1, 1], Simple::RowMajor, Inner::Simple(Simple::RowMajor));
    for depth in 1..=MAX_TILING_DEPTH + 1 {
        let ok = Relayout::new(&[4, 4], 8, Order::Tiled(t.clone()), 0).is_ok();
        assert_eq!(ok, depth <= MAX_TILING_DEPTH, "depth {depth}");
        t = tiling(&[1, 1], Simple::RowMajor, Inner::Tiled(Box::new(t)));
    }
}

#[test]
fn read_past_the_view_or_short_buffer_errs() {
    let r = Relayout::new(&[4, 4], 32, Order::ColumnMajor, 0).unwrap();
    let stored = vec![0u8; 64];
    assert!(r.read_into(&stored, 60, &mut [0; 5]).is_err());
    assert!(r.read_into(&stored, u64::MAX, &mut [0; 2]).is_err());
    assert!(r.read_into(&stored[..63], 0, &mut [0; 1]).is_err());
    r.read_into(&stored, 64, &mut []).unwrap();
}

// ---- properties -------------------------------------------------------------

#[derive(Debug, Clone)]
struct Case {
    shape: Vec<u64>,
    bits: u32,
    order: Order,
    extra_offset: u64,
    slack: u64,
    seed: u64,
    range: (u64, u64),
}

fn arb_simple(rank: usize, lim: i64) -> impl Strategy<Value = Simple> {
    prop_oneof![
        Just(Simple::RowMajor),
        Just(Simple::ColumnMajor),
        vec(-lim..=lim, rank).prop_map(Simple::Strided),
    ]
}

fn divisor(t: u64, pick: u64) -> u64 {
    let divs: Vec<u64> = (1..=t).filter(|&d| t.is_multiple_of(d)).collect();
    divs[(pick % divs.len() as u64) as usize]
}

fn arb_tiling(rank: usize) -> impl Strategy<Value = Tiling> {
    (
        vec(1u64..=4, rank),
        arb_simple(rank, 3),
        arb_simple(rank, 4),
        any::<bool>(),
        vec(any::<u64>(), rank),
        arb_simple(rank, 3),
    )
        .prop_map(|(tile, outer, inner, nest, picks, inner2)| {
            let inner = if nest {
                let sub: Vec<u64> = tile
                    .iter()
                    .zip(&picks)
                    .map(|(&t, &p)| divisor(t, p))
                    .collect();
                Inner::Tiled(Box::new(Tiling {
                    tile: sub,
                    outer: inner,
                    inner: Inner::Simple(inner2),
                }))
            } else {
                Inner::Simple(inner)
            };
            Tiling { tile, outer, inner }
        })
}

fn arb_order(shape: Vec<u64>) -> BoxedStrategy<Order> {
    let rank = shape.len();
    if rank == 0 {
        return Just(Order::RowMajor).boxed();
    }
    let morton = vec(0u32..=1, rank).prop_map(move |extra| {
        let bits = shape
            .iter()
            .zip(extra)
            .map(|(&s, e)| (64 - s.saturating_sub(1).leading_zeros()).max(1) + e)
            .collect();
        Order::Morton(bits)
    });
    prop_oneof![
        Just(Order::RowMajor),
        Just(Order::ColumnMajor),
        vec(-7i64..=7, rank).prop_map(Order::Strided),
        arb_tiling(rank).prop_map(Order::Tiled),
        morton,
    ]
    .boxed()
}

fn arb_shape_order() -> impl Strategy<Value = (Vec<u64>, Order)> {
    let general =
        vec(0u64..=5, 0..=3).prop_flat_map(|shape| (Just(shape.clone()), arb_order(shape)));
    let hilbert = (2usize..=3, 1u32..=2)
        .prop_map(|(rank, order)| (vec![1u64 << order; rank], Order::Hilbert { order }));
    prop_oneof![4 => general, 1 => hilbert]
}

fn arb_case() -> impl Strategy<Value = Case> {
    (
        arb_shape_order(),
        proptest::sample::select(ELEM_BITS.to_vec()),
        0u64..=3,
        0u64..=3,
        any::<u64>(),
        any::<(u64, u64)>(),
    )
        .prop_map(
            |((shape, order), bits, extra_offset, slack, seed, range)| Case {
                shape,
                bits,
                order,
                extra_offset,
                slack,
                seed,
                range,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_range_equals_the_naive_whole_render(c in arb_case()) {
        let probe = naive(&c.shape, c.bits, &c.order, 0, &[]);
        let byte_offset = probe.need + c.extra_offset;
        if probe.need > 0 {
            prop_assert!(Relayout::new(&c.shape, c.bits, c.order.clone(), probe.need - 1).is_err());
        }
        let r = Relayout::new(&c.shape, c.bits, c.order.clone(), byte_offset).unwrap();
        let extent = naive(&c.shape, c.bits, &c.order, byte_offset, &[]).extent;
        prop_assert_eq!(r.stored_extent(), extent);
        let stored = bytes(extent + c.slack, c.seed);
        let n = naive(&c.shape, c.bits, &c.order, byte_offset, &stored);
        prop_assert_eq!(r.len(), n.view.len() as u64);
        prop_assert_eq!(&whole(&r, &stored), &n.view);

        let off = c.range.0 % (r.len() + 1);
        let len = c.range.1 % (r.len() - off + 1);
        let mut out = vec![0x5Au8; len as usize];
        r.read_into(&stored, off, &mut out).unwrap();
        prop_assert_eq!(&out[..], &n.view[off as usize..(off + len) as usize]);

        if extent > 0 && !r.is_empty() {
            let short = &stored[..extent as usize - 1];
            prop_assert!(r.read_into(short, 0, &mut [0u8; 1]).is_err());
        }
    }
}

// ---- timing -------------------------------------------------------------------

/// `cargo test --release --lib relayout -- --ignored --nocapture`
#[test]
#[ignore = "timing; run in release with --nocapture"]
fn time_one_mib_reads() {
    let nest = Tiling {
        tile: vec![32, 32],
        outer: Simple::RowMajor,
        inner: Inner::Tiled(Box::new(tiling(
            &[8, 8],
            Simple::ColumnMajor,
            Inner::Simple(Simple::RowMajor),
        ))),
    };
    let cases: Vec<(&str, u32, Order, u64)> = vec![
        ("row-major f32", 32, Order::RowMajor, 0),
        ("column-major f32", 32, Order::ColumnMajor, 0),
        (
            "strided [-1024, 1] f32",
            32,
            Order::Strided(vec![-1024, 1]),
            4 << 20,
        ),
        ("tiled 32x32/8x8 f32", 32, Order::Tiled(nest), 0),
        ("morton f32", 32, Order::Morton(vec![10, 10]), 0),
        ("hilbert f32", 32, Order::Hilbert { order: 10 }, 0),
        ("column-major int4", 4, Order::ColumnMajor, 0),
        ("morton f6", 6, Order::Morton(vec![10, 10]), 0),
    ];
    for (name, bits, order, byte_offset) in cases {
        let r = Relayout::new(&[1024, 1024], bits, order, byte_offset).unwrap();
        let stored = bytes(r.stored_extent(), 7);
        let n = (1usize << 20).min(r.len() as usize - 3);
        let mut out = vec![0u8; n];
        let start = std::time::Instant::now();
        r.read_into(&stored, 3, &mut out).unwrap();
        println!("{name}: {} bytes in {:?}", n, start.elapsed());
    }
}
