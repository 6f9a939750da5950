//! Buffer handles (buffer-protocol.md § Buffer Handle) and the sizes each
//! layout requires of its buffers.
//!
//! Sizes are checked exactly where the spec gives a formula that depends
//! only on the descriptor (row-/column-major, Morton, Hilbert, COO, CSR,
//! CSC, block-paged pool and sequence pointers) and as a minimum where it
//! gives only a minimum (strided: every addressed element; tiled: full
//! boundary tiles). CSF level arrays are checked against each other
//! ([`check_csf_levels`]): their lengths are node counts that live in the
//! data, but each `pos_L` is one entry longer than `crd_{L-1}`. Not
//! checked: tiles ordered by strides, private layouts, and extension
//! types whose width is not a whole number of bytes or a packing of 1, 2
//! or 4 bits (no formula exists).

use super::descriptor::extent;
use super::layout::{paged_fields, strided_span, Extent};
use super::{quant, BufferHandle, Descriptor, ElemType, Layout};
use crate::error::{Error, Result, Rule};

fn bad(detail: String) -> Error {
    Error::reject(Rule::HurrayBuffer, detail)
}

fn overflow() -> Error {
    Error::reject(Rule::HurrayShape, "a buffer size overflows u64")
}

/// Is `(device, memory_class)` a pair buffer-protocol.md § Per-Device
/// Validity lists as valid?
fn pair_valid(device: u8, class: u8) -> bool {
    let private_class = (0xF0..=0xFE).contains(&class);
    match device {
        0xF0..=0xFE => class == 0 || private_class,
        _ if private_class || class > 3 => false,
        0x00 | 0x03 | 0x06 | 0x08 => class <= 2,
        0x05 => class == 0,
        0x01 | 0x02 | 0x04 | 0x07 => true,
        _ => false,
    }
}

/// Checks every handle on its own, then that all share one device and
/// memory class.
pub(crate) fn check_handles(handles: &[BufferHandle]) -> Result<()> {
    for (i, h) in handles.iter().enumerate() {
        if !h.alignment.is_power_of_two() || (h.size > 0 && h.alignment < 64) {
            return Err(bad(format!(
                "buffer {i} alignment {} is not a power of two >= 64 (size {})",
                h.alignment, h.size
            )));
        }
        if h.device == 0xFF || (0x09..=0xEF).contains(&h.device) {
            return Err(bad(format!(
                "buffer {i} device_tag {:#04x} is reserved or invalid",
                h.device
            )));
        }
        if h.sync_mode > 2 {
            return Err(bad(format!(
                "buffer {i} sync_mode {:#04x} is reserved or invalid",
                h.sync_mode
            )));
        }
        if h.device == 0 && h.sync_mode != 0 {
            return Err(bad(format!(
                "buffer {i} is on the CPU with sync_mode {:#04x}, not 0",
                h.sync_mode
            )));
        }
        if !pair_valid(h.device, h.memory_class) {
            return Err(bad(format!(
                "buffer {i} memory_class {:#04x} is not valid on device {:#04x}",
                h.memory_class, h.device
            )));
        }
    }
    if let Some(first) = handles.first() {
        if let Some(i) = handles
            .iter()
            .position(|h| h.device != first.device || h.memory_class != first.memory_class)
        {
            return Err(bad(format!(
                "buffer {i} is on device {:#04x} class {:#04x}, buffer 0 on {:#04x} class {:#04x}",
                handles[i].device, handles[i].memory_class, first.device, first.memory_class
            )));
        }
    }
    Ok(())
}

/// Bytes for `n` elements of the tensor's type; `Ok(None)` when no formula
/// exists (an extension width such as 12 bits).
fn bytes_for(d: &Descriptor, n: u64) -> Result<Option<u64>> {
    match d.elem.buffer_size(n, d.extension_type.as_deref()) {
        Some(b) => Ok(Some(b)),
        None if matches!(d.elem, ElemType::Extension(_)) && n.checked_mul(128).is_some() => {
            Ok(None)
        }
        None => Err(overflow()),
    }
}

fn exact(d: &Descriptor, i: usize, want: u64, what: &str) -> Result<()> {
    let got = d.buffers[i].size;
    if got != want {
        return Err(bad(format!(
            "buffer {i} ({what}) holds {got} bytes, the layout needs exactly {want}"
        )));
    }
    Ok(())
}

/// Checks buffer sizes against the layout, for a static shape of `count`
/// elements.
pub(crate) fn check_sizes(d: &Descriptor, count: u64) -> Result<()> {
    let rank = d.shape.len() as u64;
    let u64s = |n: u64| n.checked_mul(8).ok_or_else(overflow);
    match &d.layout {
        Layout::Strided(strides) => check_strided(d, strides, count),
        Layout::RowMajor
        | Layout::ColumnMajor
        | Layout::Morton(_)
        | Layout::Hilbert { .. }
        | Layout::Tiled(_) => {
            let shape = match (&d.quantization, &d.layout) {
                (Some(q), Layout::RowMajor | Layout::ColumnMajor) => {
                    quant::storage_shape(d, q).ok_or_else(overflow)?
                }
                _ => d.shape.clone(),
            };
            let count = super::descriptor::element_count(&shape)?;
            let (n, is_exact) = match extent(d, &shape, count)? {
                Extent::Exact(n) => (n, true),
                Extent::AtLeast(n) => (n, false),
                Extent::Unknown => return Ok(()),
            };
            let Some(bytes) = bytes_for(d, n)? else {
                return Ok(());
            };
            let want = bytes.checked_add(d.byte_offset).ok_or_else(overflow)?;
            let got = d.buffers[0].size;
            if (is_exact && got != want) || (!is_exact && got < want) {
                return Err(bad(format!(
                    "buffer 0 holds {got} bytes; byte_offset {} + {n} elements of {} need {}{want}",
                    d.byte_offset,
                    d.elem.name(),
                    if is_exact { "exactly " } else { "at least " }
                )));
            }
            Ok(())
        }
        Layout::Coo { nnz, .. } => {
            if let Some(v) = bytes_for(d, *nnz)? {
                exact(d, 0, v, "values")?;
            }
            exact(
                d,
                1,
                u64s(nnz.checked_mul(rank).ok_or_else(overflow)?)?,
                "indices",
            )
        }
        Layout::Csr { nnz } | Layout::Csc { nnz } => {
            if let Some(v) = bytes_for(d, *nnz)? {
                exact(d, 0, v, "values")?;
            }
            exact(d, 1, u64s(*nnz)?, "indices")?;
            let dim = if matches!(d.layout, Layout::Csr { .. }) {
                d.shape[0]
            } else {
                d.shape[1]
            };
            exact(
                d,
                2,
                u64s(dim.checked_add(1).ok_or_else(overflow)?)?,
                "pointers",
            )
        }
        Layout::Csf { nnz, .. } => match bytes_for(d, *nnz)? {
            Some(v) => exact(d, 0, v, "values"),
            None => Ok(()),
        },
        Layout::BlockPaged(bp) => {
            let p = paged_fields(bp);
            let pool = p
                .num_pages
                .checked_mul(u64::from(p.page_size))
                .and_then(|n| n.checked_mul(d.shape[1]))
                .and_then(|n| n.checked_mul(d.shape[2]))
                .ok_or_else(overflow)?;
            if let Some(v) = bytes_for(d, pool)? {
                exact(d, 0, v, "page_pool")?;
            }
            let table = d.buffers[1].size;
            if !table.is_multiple_of(p.index_width) {
                return Err(bad(format!(
                    "buffer 1 (block_table) holds {table} bytes, not a multiple of {}",
                    p.index_width
                )));
            }
            // Its length, seq_ptr[num_seqs], is data; but no sequence means
            // no page (seq_ptr[0] = 0), and every one of the shape[0] tokens
            // lies in a slot of some logical page.
            let pages = table / p.index_width;
            let need = d.shape[0].div_ceil(u64::from(p.page_size));
            if p.num_seqs == 0 && pages != 0 {
                return Err(bad(format!(
                    "buffer 1 (block_table) holds {pages} pages with num_seqs 0, not none"
                )));
            }
            if pages < need {
                return Err(bad(format!(
                    "buffer 1 (block_table) holds {pages} pages; shape[0] {} tokens in pages of {} need at least {need}",
                    d.shape[0], p.page_size
                )));
            }
            let seq = u64::from(p.num_seqs) + 1;
            exact(
                d,
                2,
                seq.checked_mul(p.index_width).ok_or_else(overflow)?,
                "seq_ptr",
            )
        }
        Layout::Composite(_) | Layout::Private { .. } => Ok(()),
    }
}

/// A strided buffer 0 must hold every element the strides address, counted
/// in bits so that sub-byte types are covered too (a minimum: the buffer
/// may be a larger allocation).
fn check_strided(d: &Descriptor, strides: &[i64], count: u64) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    let bits = match (d.elem, &d.extension_type) {
        (ElemType::Extension(_), Some(e)) => e.bit_width,
        (ElemType::Extension(_), None) => return Ok(()),
        (t, _) => t.bits(),
    };
    let (lo, hi) = strided_span(strides, &d.shape).ok_or_else(overflow)?;
    let bits = i128::from(bits);
    let start = i128::from(d.byte_offset) * 8;
    let size = i128::from(d.buffers[0].size) * 8;
    let first = lo.checked_mul(bits).and_then(|x| x.checked_add(start));
    let end = hi
        .checked_add(1)
        .and_then(|x| x.checked_mul(bits))
        .and_then(|x| x.checked_add(start));
    match (first, end) {
        (Some(f), Some(e)) if f >= 0 && e <= size => Ok(()),
        (Some(_), Some(_)) => Err(bad(format!(
            "strides {strides:?} over shape {:?} from byte_offset {} address elements {lo}..={hi}, outside buffer 0 ({} bytes)",
            d.shape, d.byte_offset, d.buffers[0].size
        ))),
        _ => Err(overflow()),
    }
}

/// CSF level arrays (layouts/csf.md § Buffer Table, § Buffer Size, §
/// Storage Invariants). With `n_L = crd_L / 8` the number of nodes at level
/// `L` and `n_{-1} = 1`: every array holds whole `uint64`s, `pos_L` holds
/// `n_{L-1} + 1` of them (so `pos_0` is 16 bytes), the leaf `crd` holds
/// `nnz`; an empty tensor has every `crd_L` empty. Invariants 4 and 5
/// (strictly increasing coordinates below `shape[mode_order[L]]` in each
/// parent) bound `n_L` by `n_{L-1} * shape[mode_order[L]]`, and a leaf
/// needs an ancestor at every level, so `nnz > 0` makes every `n_L >= 1`.
/// The counts themselves are data; only their agreement is checked.
pub(crate) fn check_csf_levels(d: &Descriptor, nnz: u64, mode_order: &[u32]) -> Result<()> {
    let rank = mode_order.len();
    let level = |i: usize| {
        let size = d.buffers[i].size;
        let name = if i % 2 == 1 { "pos" } else { "crd" };
        if !size.is_multiple_of(8) {
            return Err(bad(format!(
                "CSF buffer {i} ({name}_{}) holds {size} bytes, not a whole number of uint64",
                (i - 1) / 2
            )));
        }
        Ok(size / 8)
    };
    let mut parents = 1u64; // n_{L-1}, the virtual root first
    for (l, &mode) in mode_order.iter().enumerate() {
        let (pos, crd) = (level(2 * l + 1)?, level(2 * l + 2)?);
        if Some(pos) != parents.checked_add(1) {
            return Err(bad(format!(
                "CSF buffer {} (pos_{l}) holds {pos} entries; level {l} has {parents} parents, so it needs {}",
                2 * l + 1,
                parents.saturating_add(1)
            )));
        }
        let leaf = l + 1 == rank;
        if leaf && crd != nnz {
            return Err(bad(format!(
                "CSF buffer {} (crd_{l}, the leaf level) holds {crd} entries, not nnz {nnz}",
                2 * l + 2
            )));
        }
        if (nnz == 0) != (crd == 0) {
            return Err(bad(format!(
                "CSF buffer {} (crd_{l}) holds {crd} entries with nnz {nnz}: a tensor has nodes at every level iff it has non-zeros",
                2 * l + 2
            )));
        }
        let bound = d.shape[mode as usize];
        if bound != u64::MAX && parents.checked_mul(bound).is_some_and(|max| crd > max) {
            return Err(bad(format!(
                "CSF buffer {} (crd_{l}) holds {crd} entries; {parents} parents with at most shape[{}] {bound} distinct children each allow {}",
                2 * l + 2,
                mode,
                parents * bound
            )));
        }
        parents = crd;
    }
    Ok(())
}
