//! The tensor descriptor (metadata.md, with buffer-protocol.md's buffer
//! handle): the fixed header, shape, layout fields, buffer table and the
//! optional sections, then every rule that one descriptor can break on its
//! own. Cross-tensor rules (placement, composites) live elsewhere.
//!
//! At descriptor minor version 0 the fields must fill `descriptor_length`
//! exactly; at a higher minor the bytes after the fields this reader knows
//! are skipped (versioning.md: a reader at a lower minor uses the length
//! prefix to skip unknown trailing content).

use super::bytes::Cursor;
use super::container::Entry;
use super::layout::{self, Extent};
use super::sections;
use super::{
    context, quant, BufferHandle, Descriptor, ElemType, Layout, ShardSection, Tensor, MAGIC,
    TRAILER_LEN,
};
use crate::error::{Error, Result, Rule};
use crate::format::Ranges;

/// Fixed header length.
pub const FIXED_LEN: usize = 20;
/// Highest rank (data-model.md, ADR-008).
pub const MAX_RANK: u32 = 64;
const KNOWN_FLAGS: u32 = 0x1F;
const HAS_QUANTIZATION: u32 = 1;
const HAS_SHARD: u32 = 2;
const HAS_EXTENSION_TYPE: u32 = 4;
const HAS_STATISTICS: u32 = 8;
const HAS_COMPOSITE_MEMBER: u32 = 16;

fn rej(rule: Rule, detail: String) -> Error {
    Error::reject(rule, detail)
}

/// Parses and checks the descriptor held in exactly `d` (its declared
/// length), which starts at absolute offset `base`. Errors carry no
/// tensor context; the caller adds it.
pub(crate) fn parse(d: &[u8], base: u64) -> Result<Descriptor> {
    let mut c = Cursor::new(d, base, Rule::HurrayDescriptor);
    let magic: [u8; 4] = c.array("magic")?;
    if magic != MAGIC {
        return Err(rej(
            Rule::HurrayDescriptor,
            format!("magic {magic:?} is not \"HRRY\""),
        ));
    }
    let version_major = c.u8("version_major")?;
    let version_minor = c.u8("version_minor")?;
    if version_major != 1 {
        return Err(rej(
            Rule::HurrayDescriptor,
            format!("version_major {version_major} is not 1"),
        ));
    }
    let length = c.u32("descriptor_length")?;
    if (length as usize) < FIXED_LEN || length as usize != d.len() {
        return Err(rej(
            Rule::HurrayDescriptor,
            format!(
                "descriptor_length {length} is below 20 or not the {} bytes given",
                d.len()
            ),
        ));
    }
    let flags = c.u32("flags")?;
    if flags & !KNOWN_FLAGS != 0 {
        return Err(rej(
            Rule::HurrayDescriptor,
            format!("flags {flags:#x} set reserved bits 5..31"),
        ));
    }
    let type_tag = c.u8("type_tag")?;
    let layout_tag = c.u8("layout_tag")?;
    let rank = c.u32("rank")?;
    if rank > MAX_RANK {
        return Err(rej(
            Rule::HurrayDescriptor,
            format!("rank {rank} exceeds {MAX_RANK}"),
        ));
    }
    let elem = ElemType::from_tag(type_tag).ok_or_else(|| {
        rej(
            Rule::HurrayType,
            format!("element type tag {type_tag:#04x} is reserved or invalid"),
        )
    })?;
    let shape = c.many(u64::from(rank), 8, "shape", |c| c.u64("shape"))?;
    let byte_offset = c.u64("byte_offset")?;
    let layout = layout::parse_layout(&mut c, layout_tag, rank)?;
    let count = c.u8("buffer_count")?;
    let buffers = c.many(u64::from(count), 16, "buffer table", read_handle)?;
    let quantization = if flags & HAS_QUANTIZATION != 0 {
        let n = c.u32("quantization_length")?;
        Some(Box::new(quant::parse(
            c.take(n as usize, "quantization descriptor")?,
            elem,
        )?))
    } else {
        None
    };
    let shard = if flags & HAS_SHARD != 0 {
        let parent_shape = c.many(u64::from(rank), 8, "parent_shape", |c| {
            c.u64("parent_shape")
        })?;
        let offset = c.many(u64::from(rank), 8, "shard_offset", |c| {
            c.u64("shard_offset")
        })?;
        Some(Box::new(ShardSection {
            parent_shape,
            offset,
        }))
    } else {
        None
    };
    let stats = if flags & HAS_STATISTICS != 0 {
        Some(Box::new(sections::read_stats(&mut c)?))
    } else {
        None
    };
    let extension_type = if flags & HAS_EXTENSION_TYPE != 0 {
        Some(Box::new(sections::read_extension(&mut c)?))
    } else {
        None
    };
    let composite_member = if flags & HAS_COMPOSITE_MEMBER != 0 {
        Some(sections::read_member(&mut c)?)
    } else {
        None
    };
    if version_minor == 0 && c.remaining() != 0 {
        return Err(rej(
            Rule::HurrayDescriptor,
            format!(
                "{} bytes after the last field, inside descriptor_length {length}",
                c.remaining()
            ),
        ));
    }
    let desc = Descriptor {
        version_major,
        version_minor,
        length,
        flags,
        elem,
        shape,
        byte_offset,
        layout,
        buffers,
        quantization,
        shard,
        stats,
        extension_type,
        composite_member,
    };
    check(&desc)?;
    Ok(desc)
}

fn read_handle(c: &mut Cursor<'_>) -> Result<BufferHandle> {
    let h = BufferHandle {
        size: c.u64("byte_size")?,
        alignment: c.u32("alignment")?,
        device: c.u8("device_tag")?,
        sync_mode: c.u8("sync_mode")?,
        memory_class: c.u8("memory_class")?,
    };
    let reserved = c.u8("buffer handle reserved")?;
    if reserved != 0 {
        return Err(rej(
            Rule::HurrayBuffer,
            format!("buffer handle reserved byte is {reserved:#04x}"),
        ));
    }
    Ok(h)
}

/// The buffers a layout owns before any quantization parameter buffer,
/// and whether the count is exact (`false`: at least).
fn layout_buffers(l: &Layout, rank: usize) -> (usize, bool) {
    match l {
        Layout::Coo { .. } => (2, true),
        Layout::Csr { .. } | Layout::Csc { .. } => (3, true),
        Layout::Csf { .. } => (2 * rank + 1, true),
        Layout::BlockPaged(_) => (3, true),
        Layout::Composite(_) => (0, true),
        // A private layout defines its own table; at least one buffer.
        Layout::Private { .. } => (1, false),
        _ => (1, true),
    }
}

fn is_dense(l: &Layout) -> bool {
    matches!(
        l,
        Layout::RowMajor
            | Layout::ColumnMajor
            | Layout::Strided(_)
            | Layout::Tiled(_)
            | Layout::Morton(_)
            | Layout::Hilbert { .. }
    )
}

/// Every rule one descriptor can break on its own, in a fixed order.
fn check(d: &Descriptor) -> Result<()> {
    let is_ext = matches!(d.elem, ElemType::Extension(_));
    if is_ext != d.extension_type.is_some() {
        return Err(rej(
            Rule::HurrayType,
            format!("type {:#04x} with HAS_EXTENSION_TYPE {}: the section must be present iff the tag is 0xf0..=0xfe", d.elem.tag(), d.extension_type.is_some()),
        ));
    }
    layout::check_layout(&d.layout, &d.shape)?;
    super::buffers::check_handles(&d.buffers)?;
    let rank = d.shape.len();
    let (baseline, exact) = layout_buffers(&d.layout, rank);
    let params = match &d.quantization {
        Some(q) => {
            if matches!(d.layout, Layout::Composite(_)) {
                return Err(rej(
                    Rule::HurrayComposite,
                    "a composite head carries a quantization section".into(),
                ));
            }
            quant::check(d, q, baseline)?;
            usize::from(q.parameter_buffers)
        }
        None => 0,
    };
    let want = baseline + params;
    let n = d.buffers.len();
    if (exact && n != want) || (!exact && n < want) {
        return Err(rej(
            Rule::HurrayLayout,
            format!(
                "{} layout with {params} parameter buffers has {n} buffers, not {want}",
                layout::layout_name(&d.layout)
            ),
        ));
    }
    if let Layout::Composite(h) = &d.layout {
        if h.members == u32::MAX {
            return Err(rej(
                Rule::HurrayComposite,
                "member_count 0xFFFFFFFF (an open composite) is reserved".into(),
            ));
        }
        if d.composite_member.is_some() {
            return Err(rej(
                Rule::HurrayComposite,
                "a composite head carries a composite member section".into(),
            ));
        }
    }
    let dynamic = d.shape.contains(&u64::MAX);
    let count = if dynamic {
        None
    } else {
        Some(element_count(&d.shape)?)
    };
    if !is_dense(&d.layout) && !matches!(d.layout, Layout::Private { .. }) && d.byte_offset != 0 {
        return Err(rej(
            Rule::HurrayLayout,
            format!(
                "byte_offset {} is not 0 for a {} layout",
                d.byte_offset,
                layout::layout_name(&d.layout)
            ),
        ));
    }
    if let Some(b0) = d.buffers.first() {
        if d.byte_offset > b0.size {
            return Err(rej(
                Rule::HurrayBuffer,
                format!(
                    "byte_offset {} lies beyond buffer 0 ({} bytes)",
                    d.byte_offset, b0.size
                ),
            ));
        }
    }
    if let Some(count) = count {
        super::buffers::check_sizes(d, count)?;
    }
    if let Layout::Csf { nnz, mode_order } = &d.layout {
        super::buffers::check_csf_levels(d, *nnz, mode_order)?;
    }
    check_stats_nnz(d)?;
    if let Some(s) = &d.shard {
        check_shard(d, s)?;
    }
    Ok(())
}

/// The product of a static shape; HurrayShape when it overflows u64.
pub(crate) fn element_count(shape: &[u64]) -> Result<u64> {
    if shape.contains(&0) {
        return Ok(0);
    }
    shape
        .iter()
        .try_fold(1u64, |a, &s| a.checked_mul(s))
        .ok_or_else(|| {
            rej(
                Rule::HurrayShape,
                format!("the element count of shape {shape:?} overflows u64"),
            )
        })
}

/// A sparse layout's `nnz` is authoritative: a statistics section that
/// marks its own `nnz` valid must agree (layouts/coo.md, csr.md, csc.md,
/// csf.md § Interaction with Statistics Section).
fn check_stats_nnz(d: &Descriptor) -> Result<()> {
    let nnz = match d.layout {
        Layout::Coo { nnz, .. }
        | Layout::Csr { nnz }
        | Layout::Csc { nnz }
        | Layout::Csf { nnz, .. } => nnz,
        _ => return Ok(()),
    };
    match &d.stats {
        Some(s) if s.computed_mask & 1 != 0 && s.nnz != nnz => Err(rej(
            Rule::HurrayStats,
            format!(
                "statistics nnz {} is not the {} layout's nnz {nnz}",
                s.nnz,
                layout::layout_name(&d.layout)
            ),
        )),
        _ => Ok(()),
    }
}

fn check_shard(d: &Descriptor, s: &ShardSection) -> Result<()> {
    // block-paged.md § Sharding, csf.md § Sharding: deferred to a later
    // revision, so refused.
    if matches!(d.layout, Layout::BlockPaged(_) | Layout::Csf { .. }) {
        return Err(rej(
            Rule::HurrayShard,
            format!(
                "a {} tensor carries a shard section",
                layout::layout_name(&d.layout)
            ),
        ));
    }
    for k in 0..d.shape.len() {
        let (o, n, p) = (s.offset[k], d.shape[k], s.parent_shape[k]);
        if n == u64::MAX || p == u64::MAX {
            continue; // a dynamic dimension: nothing to compare yet
        }
        if o.checked_add(n).is_none_or(|end| end > p) {
            return Err(rej(
                Rule::HurrayShard,
                format!("dimension {k}: shard_offset {o} + shape {n} exceeds parent_shape {p}"),
            ));
        }
    }
    Ok(())
}

/// The extent buffer 0 must have, for the size check in `buffers`.
pub(crate) fn extent(d: &Descriptor, shape: &[u64], count: u64) -> Result<Extent> {
    layout::dense_extent(&d.layout, shape, count).ok_or_else(|| {
        rej(
            Rule::HurrayShape,
            format!("the storage extent of shape {shape:?} overflows u64"),
        )
    })
}

/// The descriptor an index entry names: fixed header in bounds, magic and
/// major version, its own length against the index's, then the whole
/// descriptor in bounds and parsed. Reads the fixed header, then the
/// descriptor's own length once it is known to lie before the trailer.
pub(crate) fn read_tensor(file: &dyn Ranges, e: Entry<'_>) -> Result<Tensor> {
    let off = e.descriptor_offset;
    let ctx = || format!("tensor {:?} (descriptor at {off})", e.name);
    let trailer_start = file.size() - TRAILER_LEN;
    let fits = |len: u64| off.checked_add(len).is_some_and(|end| end <= trailer_start);
    if !fits(FIXED_LEN as u64) {
        return Err(Error::reject(
            Rule::HurrayBounds,
            format!(
                "{}: the descriptor's fixed header runs past the trailer at {trailer_start}",
                ctx()
            ),
        ));
    }
    let head = file.get(off, FIXED_LEN as u64)?;
    if head[..4] != MAGIC || head[4] != 1 {
        return Err(Error::reject(
            Rule::HurrayDescriptor,
            format!(
                "{}: magic {:?} / major version {} are not \"HRRY\" / 1",
                ctx(),
                &head[..4],
                head[4]
            ),
        ));
    }
    let own = u32::from_le_bytes([head[6], head[7], head[8], head[9]]);
    if (own as usize) < FIXED_LEN {
        return Err(Error::reject(
            Rule::HurrayDescriptor,
            format!("{}: descriptor_length {own} is below 20", ctx()),
        ));
    }
    if own != e.descriptor_length {
        return Err(Error::reject(
            Rule::HurrayIndex,
            format!(
                "{}: index descriptor_length {} is not the descriptor's {own}",
                ctx(),
                e.descriptor_length
            ),
        ));
    }
    if !fits(u64::from(own)) {
        return Err(Error::reject(
            Rule::HurrayBounds,
            format!(
                "{}: the descriptor ({own} bytes) runs past the trailer at {trailer_start}",
                ctx()
            ),
        ));
    }
    let bytes = file.get(off, u64::from(own))?;
    let descriptor = parse(&bytes, off).map_err(|err| context(err, &ctx()))?;
    Ok(Tensor {
        name: e.name.into(),
        descriptor_offset: off,
        descriptor_length: own,
        data_offset: e.data_offset,
        data_length: e.data_length,
        descriptor,
        buffer_offsets: Vec::new(),
    })
}
