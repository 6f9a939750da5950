//! The quantization section (quantization.md and quantization/*.md): the
//! scheme header, each scheme's fields, and the parameter buffers a scheme
//! adds to the buffer table.
//!
//! Checked here: scheme tag and version, flags, reserved bytes, storage
//! type, axis, block size, inline scale and zero point, the parameter
//! buffer indices, how a scheme composes with block-paged, and, without
//! dynamic dimensions, the exact parameter buffer sizes of every layout
//! but private ones (and NF4/MXFP on block-paged, which the spec does not
//! size). Not checked: the values inside parameter buffers (finite
//! non-zero scales, zero-point ranges, MXFP scale bytes 0x00/0xFF), which
//! are data, not structure.

use super::layout::paged_fields;
use super::{Descriptor, ElemType, Layout, Quantization};
use crate::error::{Error, Result, Rule};

fn bad(detail: String) -> Error {
    Error::reject(Rule::HurrayQuant, detail)
}

/// A scheme's decoded fields.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scheme {
    PerTensor,
    PerChannel {
        axis: u32,
        scale: u32,
        zero_point: Option<u32>,
    },
    PerBlock {
        axis: u32,
        block: u32,
        scale: u32,
        zero_point: Option<u32>,
        scale_bytes: u64,
    },
    Nf4 {
        axis: u32,
        block: u32,
        scale: u32,
    },
    Mxfp {
        axis: u32,
        block: u32,
        scale: u32,
    },
}

fn u32_at(q: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([q[i], q[i + 1], q[i + 2], q[i + 3]])
}

/// Decodes a quantization descriptor (header included) for a tensor of
/// `elem` and `rank`.
pub(crate) fn decode(q: &[u8], elem: ElemType) -> Result<Scheme> {
    if q.len() < 4 {
        return Err(bad(format!(
            "quantization_length {} is shorter than the 4-byte scheme header",
            q.len()
        )));
    }
    let (tag, version) = (q[0], q[1]);
    let flags = u16::from_le_bytes([q[2], q[3]]);
    let need = match tag {
        0x01 | 0x04 | 0x05 => 16,
        0x02 => 20,
        0x03 => 24,
        _ => {
            return Err(bad(format!(
                "scheme tag {tag:#04x} is not one of 0x01..=0x05"
            )))
        }
    };
    if version != 1 {
        return Err(bad(format!("scheme {tag:#04x} version {version} is not 1")));
    }
    if q.len() < need {
        return Err(bad(format!(
            "scheme {tag:#04x} needs {need} bytes, quantization_length is {}",
            q.len()
        )));
    }
    let storage = |ok: &[ElemType]| {
        if ok.contains(&elem) {
            Ok(())
        } else {
            Err(bad(format!(
                "scheme {tag:#04x} cannot store {} elements",
                elem.name()
            )))
        }
    };
    use ElemType::*;
    let ints = [I8, U8, I16, U16, I32, U32, I4, U4, I2, U2];
    let allowed_flags: u16 = if matches!(tag, 0x02 | 0x03) { 1 } else { 0 };
    if flags & !allowed_flags != 0 {
        return Err(bad(format!(
            "scheme {tag:#04x} flags {flags:#06x} set reserved bits"
        )));
    }
    let symmetric = flags & 1 != 0;
    Ok(match tag {
        0x01 => {
            storage(&ints)?;
            let scale = f32::from_le_bytes([q[4], q[5], q[6], q[7]]);
            if !scale.is_finite() || scale == 0.0 {
                return Err(bad(format!(
                    "per-tensor scale {scale:?} is not finite and non-zero"
                )));
            }
            let zp = i64::from(u32_at(q, 8) as i32);
            let (lo, hi) = int_range(elem);
            if zp < lo || zp > hi {
                return Err(bad(format!(
                    "per-tensor zero_point {zp} is outside {}'s range {lo}..={hi}",
                    elem.name()
                )));
            }
            reserved(&q[12..16])?;
            Scheme::PerTensor
        }
        0x02 => {
            storage(&ints)?;
            if q[16] != 0x03 {
                return Err(bad(format!(
                    "per-channel scale_type_tag {:#04x} is not 0x03",
                    q[16]
                )));
            }
            reserved(&q[17..20])?;
            Scheme::PerChannel {
                axis: u32_at(q, 4),
                scale: u32_at(q, 8),
                zero_point: zero_point(symmetric, u32_at(q, 12), true)?,
            }
        }
        0x03 => {
            storage(&[I8, U8, I4, U4, I2, U2])?;
            let scale_bytes = match q[20] {
                0x01 | 0x02 => 2,
                0x03 => 4,
                t => {
                    return Err(bad(format!(
                        "per-block scale_type_tag {t:#04x} is not 0x01..=0x03"
                    )))
                }
            };
            reserved(&q[21..24])?;
            let block = u32_at(q, 8);
            if !block.is_power_of_two() || block < 2 {
                return Err(bad(format!(
                    "per-block block_size {block} is not a power of two >= 2"
                )));
            }
            Scheme::PerBlock {
                axis: u32_at(q, 4),
                block,
                scale: u32_at(q, 12),
                // DECISION: with SYMMETRIC set the field text says the index
                // is "ignored" (writers SHOULD write 0xFFFFFFFF) while the
                // flag table says MUST: ignoring it cannot mislead.
                zero_point: zero_point(symmetric, u32_at(q, 16), false)?,
                scale_bytes,
            }
        }
        0x04 => {
            storage(&[U4])?;
            let block = u32_at(q, 8);
            if !block.is_power_of_two() || block < 8 {
                return Err(bad(format!(
                    "NF4 block_size {block} is not a power of two >= 8"
                )));
            }
            Scheme::Nf4 {
                axis: u32_at(q, 4),
                block,
                scale: u32_at(q, 12),
            }
        }
        _ => {
            storage(&[F8E4M3, F8E5M2, F4E2M1, F6E2M3, F6E3M2, I8, I4])?;
            let block = u32_at(q, 8);
            if !block.is_power_of_two() || !(16..=2048).contains(&block) {
                return Err(bad(format!(
                    "MXFP block_size {block} is not a power of two in 16..=2048"
                )));
            }
            Scheme::Mxfp {
                axis: u32_at(q, 4),
                block,
                scale: u32_at(q, 12),
            }
        }
    })
}

fn zero_point(symmetric: bool, index: u32, strict: bool) -> Result<Option<u32>> {
    match (symmetric, index) {
        (false, i) => Ok(Some(i)),
        (true, u32::MAX) => Ok(None),
        (true, _) if !strict => Ok(None),
        (true, i) => Err(bad(format!(
            "SYMMETRIC is set but zero_point_buffer_index is {i}, not 0xFFFFFFFF"
        ))),
    }
}

fn reserved(b: &[u8]) -> Result<()> {
    if b.iter().any(|&x| x != 0) {
        return Err(bad(format!("reserved bytes {b:?} are not zero")));
    }
    Ok(())
}

/// The range of a zero point for a storage type.
pub(crate) fn int_range(e: ElemType) -> (i64, i64) {
    match e {
        ElemType::I8 => (-128, 127),
        ElemType::U8 => (0, 255),
        ElemType::I16 => (-32768, 32767),
        ElemType::U16 => (0, 65535),
        ElemType::U32 => (0, i64::from(i32::MAX)),
        ElemType::I4 => (-8, 7),
        ElemType::U4 => (0, 15),
        ElemType::I2 => (-2, 1),
        ElemType::U2 => (0, 3),
        _ => (i64::from(i32::MIN), i64::from(i32::MAX)),
    }
}

/// The parameter buffer indices of a scheme (distinct, in first-use order).
pub(crate) fn parameter_indices(s: &Scheme) -> Vec<u32> {
    let (a, b) = match *s {
        Scheme::PerTensor => return vec![],
        Scheme::PerChannel {
            scale, zero_point, ..
        }
        | Scheme::PerBlock {
            scale, zero_point, ..
        } => (scale, zero_point),
        Scheme::Nf4 { scale, .. } | Scheme::Mxfp { scale, .. } => (scale, None),
    };
    match b {
        Some(b) if b != a => vec![a, b],
        _ => vec![a],
    }
}

/// Decodes a section into its public form.
pub(crate) fn parse(q: &[u8], elem: ElemType) -> Result<Quantization> {
    let s = decode(q, elem)?;
    Ok(Quantization {
        scheme: q[0],
        scheme_version: q[1],
        bytes: q.to_vec(),
        parameter_buffers: parameter_indices(&s).len() as u8,
    })
}

/// Checks a scheme against its tensor: axis and block size against the
/// shape, parameter buffer indices against the layout's `baseline` buffers
/// and the table, block-paged composition, and (static shape, not a
/// private layout) parameter buffer sizes: over the logical shape
/// (quantization/*.md § Referenced Buffers, for dense and sparse layouts
/// alike, whose schemes decorate the stored values), per page slot for
/// block-paged (layouts/block-paged.md § Scale-buffer size).
pub(crate) fn check(d: &Descriptor, q: &Quantization, baseline: usize) -> Result<()> {
    let s = decode(&q.bytes, d.elem)?;
    // The page slots of a block-paged tensor, which its per-block
    // parameters cover ("num_pages * page_size entries").
    let paged = match &d.layout {
        Layout::BlockPaged(bp) => {
            let p = paged_fields(bp);
            check_paged(&s, p.page_size)?;
            Some(
                p.num_pages
                    .checked_mul(u64::from(p.page_size))
                    .ok_or_else(|| {
                        Error::reject(Rule::HurrayShape, "num_pages * page_size overflows u64")
                    })?,
            )
        }
        _ => None,
    };
    let rank = d.shape.len();
    let axis = match s {
        Scheme::PerTensor => None,
        Scheme::PerChannel { axis, .. }
        | Scheme::PerBlock { axis, .. }
        | Scheme::Nf4 { axis, .. }
        | Scheme::Mxfp { axis, .. } => Some(axis),
    };
    let mut along = 0;
    if let Some(axis) = axis {
        along = *d
            .shape
            .get(axis as usize)
            .ok_or_else(|| bad(format!("axis {axis} is not below the rank {rank}")))?;
        if along == u64::MAX {
            return Err(bad(format!(
                "shape[{axis}] on the quantized axis is dynamic"
            )));
        }
    }
    match s {
        // On block-paged, block_size is page_size (check_paged), which a
        // batch shorter than one page does not reach.
        Scheme::PerBlock { .. } if paged.is_some() => {}
        Scheme::PerBlock { block, .. } | Scheme::Nf4 { block, .. }
            if along > 0 && u64::from(block) > along =>
        {
            return Err(bad(format!(
                "block_size {block} exceeds shape[axis] {along}"
            )));
        }
        Scheme::Mxfp { block, .. } if along == 0 || along % u64::from(block) != 0 => {
            return Err(bad(format!(
                "MXFP shape[axis] {along} is not a positive multiple of block_size {block}"
            )));
        }
        _ => {}
    }
    let indices = parameter_indices(&s);
    for &i in &indices {
        if (i as usize) < baseline || i as usize >= d.buffers.len() {
            return Err(bad(format!(
                "parameter buffer index {i} is not in {baseline}..{} (after the layout's buffers)",
                d.buffers.len()
            )));
        }
    }
    if matches!(d.layout, Layout::Private { .. }) || d.shape.contains(&u64::MAX) {
        return Ok(());
    }
    let others = d
        .shape
        .iter()
        .enumerate()
        .filter(|&(k, _)| Some(k as u32) != axis)
        .try_fold(1u64, |a, (_, &x)| a.checked_mul(x));
    let blocks = |block: u32, exact: bool| -> Option<u64> {
        let per_axis = if exact {
            along / u64::from(block)
        } else {
            along.div_ceil(u64::from(block))
        };
        others?.checked_mul(per_axis)
    };
    let overflow = || Error::reject(Rule::HurrayShape, "parameter buffer size overflows u64");
    // (buffer index, bytes) of every parameter array.
    let arrays: Vec<(u32, u64)> = match s {
        Scheme::PerTensor => vec![],
        Scheme::PerChannel {
            scale, zero_point, ..
        } => {
            let n = along.checked_mul(4).ok_or_else(overflow)?;
            std::iter::once((scale, n))
                .chain(zero_point.map(|z| (z, n)))
                .collect()
        }
        Scheme::PerBlock {
            block,
            scale,
            zero_point,
            scale_bytes,
            ..
        } => {
            let n = match paged {
                Some(slots) => slots,
                None => blocks(block, false).ok_or_else(overflow)?,
            };
            let sb = n.checked_mul(scale_bytes).ok_or_else(overflow)?;
            let zb = n.checked_mul(4).ok_or_else(overflow)?;
            std::iter::once((scale, sb))
                .chain(zero_point.map(|z| (z, zb)))
                .collect()
        }
        // block-paged.md composes only per-tensor, per-channel and
        // per-block with pages; NF4 and MXFP off the paged axis have no
        // defined parameter size there.
        Scheme::Nf4 { .. } | Scheme::Mxfp { .. } if paged.is_some() => return Ok(()),
        Scheme::Nf4 { block, scale, .. } => {
            let n = blocks(block, false).ok_or_else(overflow)?;
            vec![(scale, n.checked_mul(4).ok_or_else(overflow)?)]
        }
        Scheme::Mxfp { block, scale, .. } => {
            vec![(scale, blocks(block, true).ok_or_else(overflow)?)]
        }
    };
    for &i in &indices {
        // Two arrays in one buffer lie end to end (quantization.md rule 3).
        let want = arrays
            .iter()
            .filter(|(b, _)| *b == i)
            .try_fold(0u64, |a, (_, n)| a.checked_add(*n))
            .ok_or_else(overflow)?;
        let got = d.buffers[i as usize].size;
        if got != want {
            return Err(bad(format!(
                "parameter buffer {i} holds {got} bytes, the scheme needs exactly {want}"
            )));
        }
    }
    Ok(())
}

/// The rules tying a scheme to a block-paged tensor (layouts/block-paged.md
/// § Per-scheme composition): per-block only along the paged axis (0) in
/// blocks of `page_size`; per-channel, NF4 and MXFP never along it
/// ("paged-axis quantization MUST use per-block-affine").
fn check_paged(s: &Scheme, page_size: u32) -> Result<()> {
    match *s {
        Scheme::PerBlock { axis, .. } if axis != 0 => Err(bad(format!(
            "block-paged per-block axis {axis} is not 0, the paged axis"
        ))),
        Scheme::PerBlock { block, .. } if block != page_size => Err(bad(format!(
            "block-paged per-block block_size {block} is not page_size {page_size}"
        ))),
        Scheme::PerChannel { axis: 0, .. } => Err(bad(
            "block-paged per-channel axis 0 quantizes the paged axis (only per-block may)".into(),
        )),
        Scheme::Nf4 { axis: 0, .. } | Scheme::Mxfp { axis: 0, .. } => Err(bad(
            "block-paged NF4/MXFP axis 0 quantizes the paged axis (only per-block may)".into(),
        )),
        _ => Ok(()),
    }
}

/// For per-block and NF4 the data buffer stores full trailing blocks: the
/// shape buffer 0 is sized for (quantization.md § Partial Block Policy).
pub(crate) fn storage_shape(d: &Descriptor, q: &Quantization) -> Option<Vec<u64>> {
    let s = decode(&q.bytes, d.elem).ok()?;
    let (axis, block) = match s {
        Scheme::PerBlock { axis, block, .. } | Scheme::Nf4 { axis, block, .. } => (axis, block),
        _ => return Some(d.shape.clone()),
    };
    let mut shape = d.shape.clone();
    let k = u64::from(block);
    let slot = shape.get_mut(axis as usize)?;
    *slot = slot.div_ceil(k).checked_mul(k)?;
    Some(shape)
}
