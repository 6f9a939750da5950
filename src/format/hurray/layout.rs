//! Layout-specific fields (metadata.md § Layout-Specific Fields, layouts/)
//! and the extent each dense layout needs in buffer 0.

use super::bytes::Cursor;
use super::{BlockPaged, CompositeHead, Layout, TileInner, TileOrder, Tiled};
use crate::error::{Error, Result, Rule};

/// Deepest nesting of tiled layouts (metadata.md § Tiled, the RECOMMENDED 8).
pub const MAX_TILE_DEPTH: usize = 8;

fn bad(detail: String) -> Error {
    Error::reject(Rule::HurrayLayout, detail)
}

/// Reads the fields of layout `tag` for a tensor of `rank` dimensions.
/// Running out of descriptor bytes rejects under the cursor's rule
/// (HurrayDescriptor); a field that breaks its layout's rules under
/// HurrayLayout.
pub(crate) fn parse_layout(c: &mut Cursor<'_>, tag: u8, rank: u32) -> Result<Layout> {
    let r = u64::from(rank);
    Ok(match tag {
        0x01 => Layout::RowMajor,
        0x02 => Layout::ColumnMajor,
        0x03 => Layout::Strided(c.many(r, 8, "strides", |c| c.i64("stride"))?),
        0x04 => Layout::Tiled(Box::new(parse_tiled(c, rank, 1)?)),
        0x05 => {
            let bits = c.many(r, 4, "morton_bits", |c| c.u32("morton_bits"))?;
            if let Some(k) = bits.iter().position(|&b| b == 0) {
                return Err(bad(format!("morton_bits[{k}] is 0")));
            }
            Layout::Morton(bits)
        }
        0x06 => {
            let nnz = c.u64("nnz")?;
            let sorted = match c.u8("is_sorted")? {
                0 => false,
                1 => true,
                b => return Err(bad(format!("COO is_sorted {b:#04x} is not 0 or 1"))),
            };
            zeros(c.take(7, "COO reserved")?, "COO reserved bytes")?;
            Layout::Coo { nnz, sorted }
        }
        0x07 | 0x08 => {
            let nnz = c.u64("nnz")?;
            zeros(c.take(8, "reserved")?, "CSR/CSC reserved bytes")?;
            if tag == 0x07 {
                Layout::Csr { nnz }
            } else {
                Layout::Csc { nnz }
            }
        }
        0x09 => {
            let nnz = c.u64("nnz")?;
            let mode_order = c.many(r, 4, "mode_order", |c| c.u32("mode_order"))?;
            zeros(c.take(8, "CSF reserved")?, "CSF reserved bytes")?;
            Layout::Csf { nnz, mode_order }
        }
        0x0A => Layout::BlockPaged(BlockPaged {
            fields: c.array("block-paged fields")?,
        }),
        0x0B => {
            let rule = c.u8("composition_rule")?;
            let op = c.u8("combine_op")?;
            zeros(
                c.take(2, "composite reserved")?,
                "composite head reserved bytes",
            )?;
            let members = c.u32("member_count")?;
            Layout::Composite(CompositeHead { rule, op, members })
        }
        0x40 => {
            let order = c.u32("hilbert_order")?;
            let hilbert_rank = c.u32("hilbert_rank")?;
            if hilbert_rank != rank {
                return Err(bad(format!(
                    "hilbert_rank {hilbert_rank} is not the rank {rank}"
                )));
            }
            Layout::Hilbert { order }
        }
        0xF0..=0xFE => {
            let id = c.u64("extension_layout_id")?;
            let n = c.u32("extension_data_length")?;
            let data = c.take(n as usize, "extension_data")?.to_vec();
            Layout::Private { tag, id, data }
        }
        _ => return Err(bad(format!("layout tag {tag:#04x} is reserved or invalid"))),
    })
}

fn parse_tiled(c: &mut Cursor<'_>, rank: u32, depth: usize) -> Result<Tiled> {
    let r = u64::from(rank);
    let tile = c.many(r, 8, "tile_shape", |c| c.u64("tile_shape"))?;
    if let Some(k) = tile.iter().position(|&t| t == 0) {
        return Err(bad(format!("tile_shape[{k}] is 0 (tiling depth {depth})")));
    }
    let outer = c.u8("outer_layout")?;
    let inner = c.u8("inner_layout")?;
    zeros(c.take(2, "tiled reserved")?, "tiled reserved bytes")?;
    if !(0x01..=0x03).contains(&outer) {
        return Err(bad(format!(
            "tiled outer_layout {outer:#04x} is not 0x01..=0x03"
        )));
    }
    if !(0x01..=0x04).contains(&inner) {
        return Err(bad(format!(
            "tiled inner_layout {inner:#04x} is not 0x01..=0x04"
        )));
    }
    let order = |c: &mut Cursor<'_>, tag: u8, what: &str| -> Result<TileOrder> {
        Ok(match tag {
            0x01 => TileOrder::RowMajor,
            0x02 => TileOrder::ColumnMajor,
            _ => TileOrder::Strided(c.many(r, 8, what, |c| c.i64(what))?),
        })
    };
    let outer = order(c, outer, "outer_strides")?;
    let inner = if inner == 0x04 {
        if depth >= MAX_TILE_DEPTH {
            return Err(bad(format!(
                "tiled layouts nest deeper than {MAX_TILE_DEPTH} levels"
            )));
        }
        TileInner::Tiled(Box::new(parse_tiled(c, rank, depth + 1)?))
    } else {
        TileInner::Order(order(c, inner, "inner_strides")?)
    };
    Ok(Tiled { tile, outer, inner })
}

fn zeros(b: &[u8], what: &str) -> Result<()> {
    if b.iter().any(|&x| x != 0) {
        return Err(bad(format!("{what} {b:?} are not zero")));
    }
    Ok(())
}

/// Checks the rules of a layout that need the shape: rank restrictions,
/// Morton and Hilbert dimension limits, CSF mode order, block-paged
/// fields. Everything under HurrayLayout.
pub(crate) fn check_layout(layout: &Layout, shape: &[u64]) -> Result<()> {
    let rank = shape.len();
    let need_rank = |ok: bool, name: &str, want: &str| {
        if ok {
            Ok(())
        } else {
            Err(bad(format!("{name} needs rank {want}, not {rank}")))
        }
    };
    match layout {
        Layout::RowMajor => Ok(()),
        _ if rank == 0 => Err(bad(format!(
            "a scalar (rank 0) must be row-major, not {}",
            layout_name(layout)
        ))),
        Layout::Morton(bits) => {
            for (k, (&b, &s)) in bits.iter().zip(shape).enumerate() {
                if s != u64::MAX && b < 64 && s > 1u64 << b {
                    return Err(bad(format!(
                        "shape[{k}] {s} exceeds 2^morton_bits[{k}] = 2^{b}"
                    )));
                }
            }
            Ok(())
        }
        Layout::Csr { .. } | Layout::Csc { .. } => need_rank(rank == 2, "CSR/CSC", "2"),
        Layout::Csf { mode_order, .. } => {
            need_rank(rank >= 3, "CSF", ">= 3")?;
            let mut seen = vec![false; rank];
            for (l, &m) in mode_order.iter().enumerate() {
                let slot = seen.get_mut(m as usize).filter(|s| !**s);
                match slot {
                    Some(s) => *s = true,
                    None => {
                        return Err(bad(format!(
                            "CSF mode_order {mode_order:?} is not a permutation (level {l})"
                        )))
                    }
                }
            }
            Ok(())
        }
        Layout::BlockPaged(bp) => {
            need_rank(rank == 3, "block-paged", "3")?;
            check_block_paged(bp)
        }
        Layout::Hilbert { order } => {
            need_rank(rank >= 2, "Hilbert", ">= 2")?;
            if *order == 0 {
                return Err(bad("hilbert_order is 0".into()));
            }
            let side = 1u64.checked_shl(*order).filter(|_| *order < 64);
            if let Some(k) = shape.iter().position(|&s| Some(s) != side) {
                return Err(bad(format!(
                    "shape[{k}] {} is not 2^hilbert_order = 2^{order}",
                    shape[k]
                )));
            }
            Ok(())
        }
        Layout::Composite(h) => check_composite_head(h),
        _ => Ok(()),
    }
}

/// The block-paged fields (layouts/block-paged.md § Additional Descriptor
/// Fields), little-endian at fixed offsets in its 32 bytes.
pub(crate) struct PagedFields {
    pub page_size: u32,
    pub num_pages: u64,
    pub num_seqs: u32,
    /// Bytes per block-table entry: 4 or 8.
    pub index_width: u64,
}

pub(crate) fn paged_fields(bp: &BlockPaged) -> PagedFields {
    let f = &bp.fields;
    let u32_at = |i: usize| u32::from_le_bytes([f[i], f[i + 1], f[i + 2], f[i + 3]]);
    let mut n = [0u8; 8];
    n.copy_from_slice(&f[4..12]);
    PagedFields {
        page_size: u32_at(0),
        num_pages: u64::from_le_bytes(n),
        num_seqs: u32_at(16),
        index_width: if f[25] == 1 { 8 } else { 4 },
    }
}

fn check_block_paged(bp: &BlockPaged) -> Result<()> {
    let f = &bp.fields;
    let p = paged_fields(bp);
    let paged_axis = u32::from_le_bytes([f[12], f[13], f[14], f[15]]);
    if p.page_size == 0 {
        return Err(bad("block-paged page_size is 0".into()));
    }
    if paged_axis != 0 {
        return Err(bad(format!("block-paged paged_axis {paged_axis} is not 0")));
    }
    if f[20] > 2 {
        return Err(bad(format!(
            "block-paged kv_role {:#04x} is not 0..=2",
            f[20]
        )));
    }
    if f[25] > 1 {
        return Err(bad(format!(
            "block-paged block_table_index_type {:#04x} is not 0 or 1",
            f[25]
        )));
    }
    // § Additional Descriptor Fields: a uint32 block table addresses up to
    // 0xFFFFFFFF pages; "larger pools MUST use uint64".
    if p.index_width == 4 && p.num_pages > u64::from(u32::MAX) {
        return Err(bad(format!(
            "block-paged num_pages {} needs block_table_index_type 0x01 (uint64), not 0x00",
            p.num_pages
        )));
    }
    zeros(&f[26..32], "block-paged reserved bytes")
}

fn check_composite_head(h: &CompositeHead) -> Result<()> {
    match (h.rule, h.op) {
        (1 | 3, 0) | (2, 1 | 2) => Ok(()),
        (1 | 3, op) => Err(bad(format!(
            "composite rule {} needs combine_op 0, not {op:#04x}",
            h.rule
        ))),
        (2, op) => Err(bad(format!(
            "overlay combine_op {op:#04x} is not 0x01 or 0x02"
        ))),
        (rule, _) => Err(bad(format!(
            "composition_rule {rule:#04x} is reserved, private or invalid"
        ))),
    }
}

/// The layout's name, lowercase: in messages, in `hurray:<layout>` ids,
/// `meta.json` and `manifest.json`.
pub fn layout_name(l: &Layout) -> &'static str {
    match l {
        Layout::RowMajor => "row-major",
        Layout::ColumnMajor => "column-major",
        Layout::Strided(_) => "strided",
        Layout::Tiled(_) => "tiled",
        Layout::Morton(_) => "morton",
        Layout::Coo { .. } => "coo",
        Layout::Csr { .. } => "csr",
        Layout::Csc { .. } => "csc",
        Layout::Csf { .. } => "csf",
        Layout::BlockPaged(_) => "block-paged",
        Layout::Composite(_) => "composite",
        Layout::Hilbert { .. } => "hilbert",
        Layout::Private { .. } => "private",
    }
}

/// How many elements buffer 0 of a dense layout must hold.
pub(crate) enum Extent {
    /// Exactly this many (row-/column-major, Morton, Hilbert).
    Exact(u64),
    /// At least this many (tiled: "storage for full tiles").
    AtLeast(u64),
    /// Not computed here (strided is checked apart; tiles ordered by
    /// strides; non-dense layouts).
    Unknown,
}

/// The element extent of buffer 0 for `layout` over `shape` (no dynamic
/// dimensions), or `None` when it overflows u64.
pub(crate) fn dense_extent(layout: &Layout, shape: &[u64], count: u64) -> Option<Extent> {
    Some(match layout {
        Layout::RowMajor | Layout::ColumnMajor => Extent::Exact(count),
        Layout::Morton(bits) => {
            let sum = bits
                .iter()
                .try_fold(0u64, |a, &b| a.checked_add(u64::from(b)))?;
            Extent::Exact(
                1u64.checked_shl(u32::try_from(sum).ok()?)
                    .filter(|_| sum < 64)?,
            )
        }
        Layout::Hilbert { order } => {
            let bits = u64::from(*order).checked_mul(shape.len() as u64)?;
            Extent::Exact(
                1u64.checked_shl(u32::try_from(bits).ok()?)
                    .filter(|_| bits < 64)?,
            )
        }
        Layout::Tiled(t) => match tiled_elems(t, shape)? {
            Some(n) => Extent::AtLeast(n),
            None => Extent::Unknown,
        },
        _ => Extent::Unknown,
    })
}

/// Elements a tiled layout stores over `shape`, counting full boundary
/// tiles: `Some(None)` when strides order the tiles (not computed),
/// `None` on overflow.
fn tiled_elems(t: &Tiled, shape: &[u64]) -> Option<Option<u64>> {
    if matches!(t.outer, TileOrder::Strided(_)) {
        return Some(None);
    }
    let mut tiles = 1u64;
    for (&s, &k) in shape.iter().zip(&t.tile) {
        tiles = tiles.checked_mul(s.div_ceil(k))?;
    }
    let per_tile = match &t.inner {
        TileInner::Order(TileOrder::Strided(_)) => return Some(None),
        TileInner::Order(_) => t.tile.iter().try_fold(1u64, |a, &k| a.checked_mul(k))?,
        TileInner::Tiled(inner) => match tiled_elems(inner, &t.tile)? {
            Some(n) => n,
            None => return Some(None),
        },
    };
    Some(Some(tiles.checked_mul(per_tile)?))
}

/// The lowest and highest element offset a strided tensor addresses
/// relative to element `[0, ..., 0]` (layouts/strided.md § Buffer Size),
/// for a non-empty shape; `None` on i128 overflow.
pub(crate) fn strided_span(strides: &[i64], shape: &[u64]) -> Option<(i128, i128)> {
    let (mut lo, mut hi) = (0i128, 0i128);
    for (&st, &s) in strides.iter().zip(shape) {
        let reach = i128::from(st).checked_mul(i128::from(s) - 1)?;
        if reach < 0 {
            lo = lo.checked_add(reach)?;
        } else {
            hi = hi.checked_add(reach)?;
        }
    }
    Some((lo, hi))
}
