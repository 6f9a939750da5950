//! The address maps of the orders: strides of the simple orders, and the
//! per-axis maps of tiled and Morton layouts and Hilbert's whole-index
//! map, made once when a [`Relayout`](super::Relayout) is built (see the
//! parent module for the spec readings they follow).

use super::*;

/// Row-major strides of `shape`, in elements.
pub(super) fn row_major(shape: &[u64]) -> Result<Vec<i64>, String> {
    let mut strides = vec![0i64; shape.len()];
    let mut s = 1i128;
    for k in (0..shape.len()).rev() {
        strides[k] = to_i64(s, "stride")?;
        s = s.saturating_mul(i128::from(shape[k]));
    }
    Ok(strides)
}

/// Column-major strides of `shape`, in elements.
pub(super) fn column_major(shape: &[u64]) -> Result<Vec<i64>, String> {
    let mut strides = vec![0i64; shape.len()];
    let mut s = 1i128;
    for k in 0..shape.len() {
        strides[k] = to_i64(s, "stride")?;
        s = s.saturating_mul(i128::from(shape[k]));
    }
    Ok(strides)
}

fn simple_strides(order: &Simple, space: &[u64]) -> Result<Vec<i64>, String> {
    match order {
        Simple::RowMajor => row_major(space),
        Simple::ColumnMajor => column_major(space),
        Simple::Strided(s) => {
            check_rank("strides", s.len(), space.len())?;
            Ok(s.clone())
        }
    }
}

pub(super) fn affine(strides: &[i64]) -> Vec<Axis> {
    strides
        .iter()
        .map(|&stride| Axis::Affine { stride })
        .collect()
}

/// The axes of a tiling, and the padded domain ("storage for full tiles").
pub(super) fn tiled_axes(shape: &[u64], top: &Tiling) -> Result<(Vec<Axis>, Vec<u64>), String> {
    let rank = shape.len();
    let mut levels: Vec<Vec<(u64, i64)>> = vec![Vec::new(); rank];
    let mut domain = Vec::with_capacity(rank);
    let mut space = shape.to_vec();
    let mut tiling = top;
    for depth in 0.. {
        if depth == MAX_TILING_DEPTH {
            return Err(format!(
                "tiling nests deeper than {MAX_TILING_DEPTH} levels"
            ));
        }
        let tile = &tiling.tile;
        check_rank("tile dimensions", tile.len(), rank)?;
        if let Some(k) = tile.iter().position(|&t| t == 0) {
            return Err(format!("tile shape {tile:?} has a zero at dimension {k}"));
        }
        let grid: Vec<u64> = if depth == 0 {
            space
                .iter()
                .zip(tile)
                .map(|(&s, &t)| s.div_ceil(t))
                .collect()
        } else {
            if let Some(k) = (0..rank).find(|&k| !space[k].is_multiple_of(tile[k])) {
                return Err(format!(
                    "nested tile shape {tile:?} does not divide the tile {space:?} it tiles (dimension {k})"
                ));
            }
            space.iter().zip(tile).map(|(&s, &t)| s / t).collect()
        };
        if depth == 0 {
            domain = grid.iter().zip(tile).map(|(&g, &t)| g * t).collect();
        }
        let tile_elems = tile
            .iter()
            .try_fold(1i128, |a, &t| a.checked_mul(i128::from(t)))
            .filter(|&n| n <= i128::from(i64::MAX))
            .ok_or_else(|| format!("tile shape {tile:?} overflows"))?;
        let outer = simple_strides(&tiling.outer, &grid)?;
        for k in 0..rank {
            let w = to_i64(i128::from(outer[k]) * tile_elems, "tile weight")?;
            levels[k].push((tile[k], w));
        }
        space = tile.clone();
        match &tiling.inner {
            Inner::Tiled(next) => tiling = next,
            Inner::Simple(order) => {
                let inner = simple_strides(order, &space)?;
                let axes = levels
                    .into_iter()
                    .zip(inner)
                    .map(|(levels, stride)| Axis::Tiled { levels, stride })
                    .collect();
                return Ok((axes, domain));
            }
        }
    }
    unreachable!("the loop returns or errs by MAX_TILING_DEPTH")
}

/// The axes of a Morton order, and the padded domain `2^morton_bits[k]`.
pub(super) fn morton_axes(shape: &[u64], bits: &[u32]) -> Result<(Vec<Axis>, Vec<u64>), String> {
    let rank = shape.len();
    check_rank("morton_bits", bits.len(), rank)?;
    let mut axes = Vec::with_capacity(rank);
    let mut domain = Vec::with_capacity(rank);
    for (d, (&s, &b)) in shape.iter().zip(bits).enumerate() {
        // The highest code bit is (b - 1)·rank + d, which must fit a u64.
        let top = (u64::from(b).saturating_sub(1)) * rank as u64 + d as u64;
        if b == 0 || b > 63 || top > 63 {
            return Err(format!(
                "morton_bits {bits:?} at dimension {d} give a code wider than 64 bits (or are 0)"
            ));
        }
        if s > 1u64 << b {
            return Err(format!(
                "dimension {d} of shape {shape:?} exceeds 2^{b} (morton_bits {bits:?})"
            ));
        }
        let mut table = Box::new([0u64; 256]);
        for (v, slot) in table.iter_mut().enumerate() {
            for bit in 0..8.min(b) {
                if v >> bit & 1 == 1 {
                    let at = u64::from(bit) * rank as u64 + d as u64;
                    *slot |= 1u64.checked_shl(at as u32).unwrap_or(0);
                }
            }
        }
        axes.push(Axis::Morton {
            table,
            byte_shift: 8 * rank as u32,
            step: 1 << d,
        });
        domain.push(1u64 << b);
    }
    Ok((axes, domain))
}

pub(super) fn hilbert_map(shape: &[u64], order: u32) -> Result<Map, String> {
    let rank = shape.len();
    if rank < 2 {
        return Err(format!("a Hilbert curve needs rank >= 2, not {rank}"));
    }
    if order == 0 || rank as u64 * u64::from(order) > 63 {
        return Err(format!(
            "hilbert_order {order} at rank {rank} is 0 or gives an index wider than 63 bits"
        ));
    }
    if let Some(k) = shape.iter().position(|&s| s != 1u64 << order) {
        return Err(format!(
            "dimension {k} of shape {shape:?} is not 2^{order} (hilbert_order)"
        ));
    }
    Ok(Map::Hilbert { rank, order })
}

/// The least and greatest offset of `axis` over `0..d`.
pub(super) fn axis_range(axis: &Axis, d: u64) -> (i128, i128) {
    if d == 0 {
        return (0, 0);
    }
    let span = |n: u64, w: i64| {
        let v = i128::from(n - 1) * i128::from(w);
        (v.min(0), v.max(0))
    };
    match axis {
        Axis::Affine { stride } => span(d, *stride),
        Axis::Tiled { levels, stride } => {
            let (mut lo, mut hi) = (0, 0);
            let mut space = d;
            for &(tile, weight) in levels {
                let (l, h) = span(space.div_ceil(tile), weight);
                lo += l;
                hi += h;
                space = tile;
            }
            let (l, h) = span(space, *stride);
            (lo + l, hi + h)
        }
        Axis::Morton { .. } => (0, i128::from(axis.offset(d - 1) as u64)),
    }
}

/// Drops size-1 dimensions (their index is always 0, their offset 0) and
/// merges affine neighbours that step as one, so row-major storage becomes
/// a single run.
pub(super) fn separable(shape: &[u64], axes: Vec<Axis>) -> Map {
    let mut dims: Vec<u64> = Vec::new();
    let mut kept: Vec<Axis> = Vec::new();
    for (&d, axis) in shape.iter().zip(axes) {
        if d == 1 {
            continue;
        }
        if let (Some(last_d), Some(Axis::Affine { stride: outer })) = (dims.last_mut(), kept.last())
        {
            if let Axis::Affine { stride } = axis {
                if i128::from(*outer) == i128::from(stride) * i128::from(d) {
                    *last_d *= d;
                    *kept.last_mut().expect("checked above") = Axis::Affine { stride };
                    continue;
                }
            }
        }
        dims.push(d);
        kept.push(axis);
    }
    Map::Separable { dims, axes: kept }
}
