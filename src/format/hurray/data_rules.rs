//! The one MUST of the Hurray spec on tensor bytes rather than metadata:
//! an MXFP scale buffer holds no `0x00` or `0xFF` byte (quantization/
//! mxfp.md § Referenced Buffer: "A reader encountering 0x00 or 0xFF in the
//! scale buffer MUST treat the descriptor as invalid"). It reads the
//! buffer, a byte per 16 to 2048 elements, so it runs under `--verify`
//! (`check --verify`, and a mount's `--verify` on a tensor's first open),
//! not at open.

use super::File;
use crate::error::{Error, Result, Rule};
use crate::format::Ranges;

/// MXFP's scheme tag.
const MXFP: u8 = 0x05;

/// The bytes of tensor `i` its data rules read: its MXFP scale buffer.
fn scale_buffer(file: &File, i: usize) -> Option<(usize, u64, u64)> {
    let t = &file.tensors[i];
    let q = t.descriptor.quantization.as_deref()?;
    if q.scheme != MXFP {
        return None;
    }
    // Validated at open: the field is there and names a buffer.
    let b = q.bytes.get(12..16)?;
    let k = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let size = t.descriptor.buffers.get(k)?.size;
    Some((k, *t.buffer_offsets.get(k)?, size))
}

/// How many bytes [`check_data`] reads, for progress.
pub fn data_bytes(file: &File) -> u64 {
    (0..file.tensors.len())
        .filter_map(|i| scale_buffer(file, i))
        .fold(0u64, |n, s| n.saturating_add(s.2))
}

/// Most scale bytes read at once.
const CHUNK: u64 = 1 << 20;

/// Checks the data rules of tensor `i` of `file`, whose bytes `bytes`
/// gives by range (a map, or a remote object: only the scale buffer is
/// read, a MiB at a time); `progress` hears of each chunk
/// checked and may stop the work by returning an error.
pub fn check_tensor_data(
    file: &File,
    i: usize,
    bytes: &dyn Ranges,
    progress: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<()> {
    let t = &file.tensors[i];
    let Some((k, start, size)) = scale_buffer(file, i) else {
        return Ok(());
    };
    let mut done = 0u64;
    while done < size {
        let n = (size - done).min(CHUNK);
        // In bounds for the file `file` was read from (checked at open).
        let chunk = bytes.get(start + done, n)?;
        if let Some(j) = chunk.iter().position(|&s| s == 0x00 || s == 0xFF) {
            let at = done + j as u64;
            return Err(Error::reject(
                Rule::HurrayQuant,
                format!(
                    "tensor {:?}: MXFP scale {at} (buffer {k}) is {:#04x}, a reserved float8_e8m0 pattern",
                    t.name, chunk[j]
                ),
            ));
        }
        progress(n)?;
        done += n;
    }
    Ok(())
}

/// [`check_tensor_data`] for every tensor, in index order.
pub fn check_data(
    file: &File,
    bytes: &dyn Ranges,
    progress: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<()> {
    (0..file.tensors.len()).try_for_each(|i| check_tensor_data(file, i, bytes, progress))
}
