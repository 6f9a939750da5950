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
use super::layout::{self, Extent};
use super::{
    quant, BufferHandle, CompositeMember, Descriptor, ElemType, ExtensionType, Layout,
    ShardSection, Stats, MAGIC,
};
use crate::error::{Error, Result, Rule};

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
        Some(quant::parse(
            c.take(n as usize, "quantization descriptor")?,
            elem,
        )?)
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
        Some(ShardSection {
            parent_shape,
            offset,
        })
    } else {
        None
    };
    let stats = if flags & HAS_STATISTICS != 0 {
        Some(read_stats(&mut c)?)
    } else {
        None
    };
    let extension_type = if flags & HAS_EXTENSION_TYPE != 0 {
        Some(read_extension(&mut c)?)
    } else {
        None
    };
    let composite_member = if flags & HAS_COMPOSITE_MEMBER != 0 {
        Some(read_member(&mut c)?)
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

fn read_stats(c: &mut Cursor<'_>) -> Result<Stats> {
    let computed_mask = c.u32("computed_mask")?;
    let reserved = c.u32("statistics reserved")?;
    let s = Stats {
        computed_mask,
        nnz: c.u64("nnz")?,
        sparsity_ratio: c.f64("sparsity_ratio")?,
        value_min: c.f64("value_min")?,
        value_max: c.f64("value_max")?,
        value_abs_max: c.f64("value_abs_max")?,
        value_mean: c.f64("value_mean")?,
        value_stddev: c.f64("value_stddev")?,
        nm_n: c.u8("nm_n")?,
        nm_m: c.u8("nm_m")?,
        has_nan: c.u8("has_nan")?,
        has_inf: c.u8("has_inf")?,
    };
    let reserved2 = c.u32("statistics reserved2")?;
    let bad = |m: String| Err(rej(Rule::HurrayStats, m));
    if computed_mask >> 6 != 0 {
        return bad(format!(
            "computed_mask {computed_mask:#x} sets reserved bits 6..31"
        ));
    }
    if reserved != 0 || reserved2 != 0 {
        return bad("statistics reserved bytes are not zero".into());
    }
    let valid = |bit: u32| computed_mask & (1 << bit) != 0;
    if valid(1) && !(0.0..=1.0).contains(&s.sparsity_ratio) {
        return bad(format!(
            "sparsity_ratio {:?} is outside [0, 1]",
            s.sparsity_ratio
        ));
    }
    // NaN fails too.
    if valid(3) && s.value_stddev.partial_cmp(&0.0).is_none_or(|o| o.is_lt()) {
        return bad(format!("value_stddev {:?} is not >= 0", s.value_stddev));
    }
    if valid(4) && s.nm_n > s.nm_m {
        return bad(format!("nm_n {} exceeds nm_m {}", s.nm_n, s.nm_m));
    }
    if valid(5) && (s.has_nan > 1 || s.has_inf > 1) {
        return bad(format!(
            "has_nan {} / has_inf {} are not 0 or 1",
            s.has_nan, s.has_inf
        ));
    }
    Ok(s)
}

fn read_extension(c: &mut Cursor<'_>) -> Result<ExtensionType> {
    let b: [u8; 20] = c.array("extension type section")?;
    let bit_width = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let packing_factor = b[4];
    let bad = |m: String| Err(rej(Rule::HurrayType, format!("extension type: {m}")));
    if bit_width == 0 {
        return bad("bit_width is 0".into());
    }
    let packing_ok = match bit_width {
        1 | 2 | 4 => u32::from(packing_factor) == 8 / bit_width,
        w if w >= 8 => packing_factor == 1,
        _ => false,
    };
    if !packing_ok {
        return bad(format!(
            "bit_width {bit_width} with packing_factor {packing_factor} is not allowed"
        ));
    }
    let flag = |v: u8, what: &str| {
        if v > 1 {
            Err(rej(
                Rule::HurrayType,
                format!("extension type: {what} {v} is not 0 or 1"),
            ))
        } else {
            Ok(v == 1)
        }
    };
    let is_float = flag(b[5], "is_float")?;
    let is_signed = flag(b[6], "is_signed")?;
    let has_nan = flag(b[16], "has_nan")?;
    let has_inf = flag(b[17], "has_inf")?;
    let exponent_bias = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
    if b[10] != 0 || b[11] != 0 || b[18] != 0 || b[19] != 0 {
        return bad("reserved bytes are not zero".into());
    }
    if is_float && (is_signed || b[7] > 1) {
        return bad(format!(
            "a float type has is_signed {} and sign_bits {}",
            b[6], b[7]
        ));
    }
    if !is_float && (b[7] != 0 || b[8] != 0 || b[9] != 0 || exponent_bias != 0) {
        return bad("an integer type has sign, exponent, mantissa bits or bias".into());
    }
    Ok(ExtensionType {
        bit_width,
        packing_factor,
        is_float,
        is_signed,
        sign_bits: b[7],
        exponent_bits: b[8],
        mantissa_bits: b[9],
        exponent_bias,
        has_nan,
        has_inf,
    })
}

fn read_member(c: &mut Cursor<'_>) -> Result<CompositeMember> {
    let b: [u8; 16] = c.array("composite member section")?;
    if b[0] > 1 {
        return Err(rej(
            Rule::HurrayComposite,
            format!("member_role {:#04x} is not 0 or 1", b[0]),
        ));
    }
    if b[1..].iter().any(|&x| x != 0) {
        return Err(rej(
            Rule::HurrayComposite,
            "composite member reserved bytes are not zero".into(),
        ));
    }
    Ok(CompositeMember { role: b[0] })
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
            quant::check(d, q, baseline, is_dense(&d.layout))?;
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

fn check_shard(d: &Descriptor, s: &ShardSection) -> Result<()> {
    if matches!(d.layout, Layout::BlockPaged(_)) {
        return Err(rej(
            Rule::HurrayShard,
            "a block-paged tensor carries a shard section".into(),
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
