//! The placement walk (file-format.md § Tensor Region, § Alignment and
//! Padding Summary): every byte between the header and the trailer belongs
//! to a structure or is a 0x00 padding byte in a gap the layout allows.
//! O(n log n) in the tensor count (one sort), O(file) in bytes scanned.
//!
//! It reads only the gaps (every structure was read and bounded before),
//! each by range and at most [`GAP_CHUNK`] bytes at a time: a file read by
//! range requests costs what its gaps cost, never a buffer's bytes.

use super::bytes::align_up;
use super::{Header, Tensor, Trailer, HEADER_LEN, TRAILER_LEN};
use crate::error::{Error, Result, Rule};
use crate::format::Ranges;

/// Most gap bytes read at once, in bytes. A gap is below the buffer
/// alignment (2 MiB at most), except before the first descriptor, whose
/// offset the header sets anywhere in the file.
const GAP_CHUNK: u64 = 1 << 20;

fn rej(rule: Rule, detail: String) -> Error {
    Error::reject(rule, detail)
}

/// Checks that bytes `[from, to)` of `file` are all 0x00. Callers only
/// pass ranges inside the file.
fn zeros(file: &dyn Ranges, from: u64, to: u64, what: &str) -> Result<()> {
    let mut at = from;
    while at < to {
        let n = (to - at).min(GAP_CHUNK);
        let gap = file.get(at, n)?;
        if let Some(i) = gap.iter().position(|&b| b != 0) {
            return Err(rej(
                Rule::HurrayPadding,
                format!(
                    "padding byte at {} {what} is {:#04x}, not 0x00",
                    at + i as u64,
                    gap[i]
                ),
            ));
        }
        at += n;
    }
    Ok(())
}

/// Where the next structure may start after `end`: the next 8-byte
/// boundary (the spec) or the next buffer-alignment boundary (what the
/// reference writer does after a last buffer or a composite head).
fn allowed(end: u64, a: u64) -> [Option<u64>; 2] {
    [align_up(end, 8), align_up(end, a)]
}

/// Walks the file in order (header, tensors by descriptor offset, KV,
/// index, trailer), fills each tensor's buffer offsets, and checks
/// positions, padding bytes, bounds and the index's data fields.
pub(crate) fn walk(
    file: &dyn Ranges,
    header: &Header,
    trailer: &Trailer,
    tensors: &mut [Tensor],
) -> Result<()> {
    let trailer_start = file.size() - TRAILER_LEN;
    let a = u64::from(header.data_buffer_alignment);
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    order.sort_by_key(|&i| tensors[i].descriptor_offset);
    let mut pos = HEADER_LEN;
    for (n, &i) in order.iter().enumerate() {
        let t = &mut tensors[i];
        let ctx = || {
            format!(
                "tensor {:?} (descriptor at {})",
                &*t.name, t.descriptor_offset
            )
        };
        let d_off = t.descriptor_offset;
        let ok = if n == 0 {
            d_off == header.first_descriptor_offset
        } else {
            allowed(pos, a).contains(&Some(d_off))
        };
        if !ok {
            return Err(rej(
                Rule::HurrayPlacement,
                format!(
                    "{}: the previous structure ends at {pos}; a descriptor may start at {:?}",
                    ctx(),
                    if n == 0 {
                        vec![header.first_descriptor_offset]
                    } else {
                        allowed(pos, a).iter().flatten().copied().collect()
                    }
                ),
            ));
        }
        zeros(file, pos, d_off, "before a descriptor")?;
        let desc_end = d_off + u64::from(t.descriptor_length);
        pos = desc_end;
        let mut offsets = Vec::with_capacity(t.descriptor.buffers.len());
        for (k, b) in t.descriptor.buffers.iter().enumerate() {
            let off = align_up(pos, a).filter(|&o| o <= trailer_start);
            let end = off
                .and_then(|o| o.checked_add(b.size))
                .filter(|&e| e <= trailer_start);
            let (Some(off), Some(end)) = (off, end) else {
                return Err(rej(Rule::HurrayBounds, format!("{}: buffer {k} ({} bytes after {pos}) runs past the trailer at {trailer_start}", ctx(), b.size)));
            };
            if b.size > 0 && off % u64::from(b.alignment) != 0 {
                return Err(rej(
                    Rule::HurrayBuffer,
                    format!(
                        "{}: buffer {k} at {off} is not aligned to its declared {}",
                        ctx(),
                        b.alignment
                    ),
                ));
            }
            zeros(file, pos, off, "before a buffer")?;
            offsets.push(off);
            pos = end;
        }
        let (want_off, want_len) = match offsets.first() {
            Some(&first) => (first, pos - first),
            // DECISION: a tensor without buffers (a composite head) has no
            // data region; its index entry records where the next item may
            // start, length 0: the next 8-byte boundary after its descriptor
            // (the spec's placement) or the next alignment boundary (what
            // the reference writer pads to after a head).
            None => {
                let spec = align_up(desc_end, 8).unwrap_or(u64::MAX);
                let padded = align_up(desc_end, a).unwrap_or(u64::MAX);
                let off = if t.data_offset == padded {
                    padded
                } else {
                    spec
                };
                (off, 0)
            }
        };
        if t.data_offset != want_off {
            let what = if offsets.is_empty() {
                format!(
                    "a tensor without buffers ends at {desc_end}, so its data_offset is {want_off}"
                )
            } else {
                format!("buffer 0 must start at {want_off}, the first data_buffer_alignment boundary after the descriptor's end {desc_end}")
            };
            return Err(rej(
                Rule::HurrayPlacement,
                format!("{}: index data_offset {}: {what}", ctx(), t.data_offset),
            ));
        }
        if t.data_length != want_len {
            return Err(rej(Rule::HurrayIndex, format!("{}: index data_length {} is not the {want_len} bytes from buffer 0's start to the last buffer's end", ctx(), t.data_length)));
        }
        t.buffer_offsets = offsets;
    }
    let section = |what: &str, off: u64, len: u64, pos: &mut u64, first: bool| -> Result<()> {
        let mut ok = allowed(*pos, a).contains(&Some(off));
        // With no tensor, the region before the sections may still be
        // padded to first_descriptor_offset.
        ok |= first && off == header.first_descriptor_offset;
        if !ok {
            return Err(rej(Rule::HurrayPlacement, format!("the {what} at {off} does not start at the 8-byte or buffer-alignment boundary after {}", *pos)));
        }
        zeros(file, *pos, off, "before a section")?;
        *pos = off + len;
        Ok(())
    };
    let none = tensors.is_empty();
    if trailer.kv_length > 0 {
        section(
            "KV section",
            trailer.kv_offset,
            u64::from(trailer.kv_length),
            &mut pos,
            none,
        )?;
    }
    section(
        "index",
        trailer.index_offset,
        trailer.index_length,
        &mut pos,
        none && trailer.kv_length == 0,
    )?;
    // DECISION: the reference writer puts the trailer right after the
    // index; an 8-byte-aligned trailer is accepted as well.
    if trailer_start != pos && Some(trailer_start) != align_up(pos, 8) {
        return Err(rej(
            Rule::HurrayPlacement,
            format!("the index ends at {pos} but the trailer starts at {trailer_start}"),
        ));
    }
    zeros(file, pos, trailer_start, "before the trailer")
}
