//! A quantized tensor's values as a file: little-endian f32, one per
//! element in row-major order, computed by range from its blocks.
//!
//! The blocks lie in one range of a file, in the order of the values they
//! hold (ggml's blocks run along a row, and rows follow one another), so
//! bytes `[a, b)` of the values are values `[a / 4, ⌈b / 4⌉)`, which are
//! in blocks `[v0 / n, ⌈v1 / n⌉)` of `n` values each: a read fetches and
//! dequantizes only those blocks. A large read is split over threads.

use super::{dequantize, Block};
use crate::format::Ranges;

/// Blocks dequantized at once into one scratch buffer (at most 256 values
/// each: 64 KiB of f32, within a core's cache from the dequantization to
/// the copy out; 1 MiB made `ztfs stats` of a Q4_K tensor 5% slower).
const BLOCKS_AT_ONCE: u64 = 64;

/// A read of at least this many bytes is split over the machine's cores.
const PARALLEL_BYTES: usize = 8 << 20;

/// The values of one quantized tensor, from blocks stored at `start`.
#[derive(Debug, Clone)]
pub struct Values {
    start: u64,
    count: u64,
    block: Block,
}

impl Values {
    /// The values of `count` elements of ggml type `ty` held by the `stored`
    /// bytes at `start` of a file; an error when `ty` is not a block type
    /// this reader dequantizes or the bytes are not exactly the blocks of
    /// `count` values.
    pub fn new(ty: &str, start: u64, stored: u64, count: u64) -> Result<Values, String> {
        let block =
            super::block(ty).ok_or_else(|| format!("ztfs does not dequantize ggml type {ty}"))?;
        let (n, bytes) = (block.values as u64, block.bytes as u64);
        if !count.is_multiple_of(n) {
            return Err(format!("{count} values are not whole blocks of {n} ({ty})"));
        }
        if (count / n).checked_mul(bytes) != Some(stored) {
            return Err(format!(
                "{stored} bytes are not the {} blocks of {bytes} bytes that {count} values of {ty} take",
                count / n
            ));
        }
        if count.checked_mul(4).is_none_or(|l| l > i64::MAX as u64) {
            return Err(format!("{count} values are too many for one file"));
        }
        Ok(Values {
            start,
            count,
            block,
        })
    }

    /// The ggml type the values are dequantized from.
    pub fn ty(&self) -> &'static str {
        self.block.name
    }

    /// Bytes of the values (4 a value).
    pub fn len(&self) -> u64 {
        self.count * 4
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of blocks the values are computed from.
    pub fn stored(&self) -> u64 {
        self.count / self.block.values as u64 * self.block.bytes as u64
    }

    /// Fills `out` with the values' bytes from `offset` (within
    /// [`Values::len`]), dequantizing the blocks under the range, read
    /// from `file`, on this thread.
    pub fn read_into(&self, file: &dyn Ranges, offset: u64, out: &mut [u8]) -> Result<(), String> {
        self.check(file, offset, out.len())?;
        self.read_run(file, offset, out)
    }

    /// [`Values::read_into`], a large range split over the machine's cores
    /// (whole blocks a thread, so no block is dequantized twice).
    pub fn read_parallel(
        &self,
        file: &(dyn Ranges + Sync),
        offset: u64,
        out: &mut [u8],
    ) -> Result<(), String> {
        self.check(file, offset, out.len())?;
        let threads = crate::sys::cores();
        if out.len() < PARALLEL_BYTES || threads < 2 {
            return self.read_run(file, offset, out);
        }
        let per_block = self.block.values * 4;
        let share = out.len().div_ceil(threads).next_multiple_of(per_block);
        let first = (per_block - (offset % per_block as u64) as usize) % per_block;
        let (head, rest) = out.split_at_mut(first.min(out.len()));
        std::thread::scope(|s| {
            let mut jobs = Vec::new();
            let mut at = offset + head.len() as u64;
            for piece in rest.chunks_mut(share) {
                let len = piece.len() as u64;
                jobs.push(s.spawn(move || self.read_run(file, at, piece)));
                at += len;
            }
            let mut r = self.read_run(file, offset, head);
            for j in jobs {
                let done =
                    (j.join()).unwrap_or_else(|_| Err("a dequantizing thread failed".into()));
                r = r.and(done);
            }
            r
        })
    }

    /// Refuses a range past the values, or blocks past the file's end.
    fn check(&self, file: &dyn Ranges, offset: u64, len: usize) -> Result<(), String> {
        if offset
            .checked_add(len as u64)
            .is_none_or(|e| e > self.len())
        {
            return Err(format!("range past the values' {} bytes", self.len()));
        }
        if self
            .start
            .checked_add(self.stored())
            .is_none_or(|e| e > file.size())
        {
            return Err(format!(
                "the blocks at [{}, +{}) are past the file's end",
                self.start,
                self.stored()
            ));
        }
        Ok(())
    }

    /// [`Values::read_into`] on this thread.
    fn read_run(&self, file: &dyn Ranges, offset: u64, out: &mut [u8]) -> Result<(), String> {
        if out.is_empty() {
            return Ok(());
        }
        let (n, bytes) = (self.block.values as u64, self.block.bytes as u64);
        let first_value = offset / 4;
        let end_value = (offset + out.len() as u64).div_ceil(4);
        let mut block = first_value / n;
        let end_block = end_value.div_ceil(n);
        let mut scratch = vec![0f32; (BLOCKS_AT_ONCE.min(end_block - block) * n) as usize];
        let mut done = 0usize;
        while block < end_block {
            let k = BLOCKS_AT_ONCE.min(end_block - block);
            let at = self.start + block * bytes;
            let blocks = file.get(at, k * bytes).map_err(|e| e.to_string())?;
            let values = &mut scratch[..(k * n) as usize];
            if !dequantize(self.block, &blocks, values) {
                return Err(format!("{}: a block is cut", self.block.name));
            }
            // The bytes of these values that the range wants.
            let base = block * n * 4;
            let from = (offset + done as u64 - base) as usize;
            let to = ((k * n * 4) as usize).min(from + out.len() - done);
            let dst = &mut out[done..done + (to - from)];
            copy_le(values, from, dst);
            done += to - from;
            block += k;
        }
        Ok(())
    }
}

/// Bytes `[from, from + dst.len())` of `values` as little-endian f32.
pub(super) fn copy_le(values: &[f32], from: usize, dst: &mut [u8]) {
    if from.is_multiple_of(4) && dst.len().is_multiple_of(4) {
        for (d, v) in dst.chunks_exact_mut(4).zip(&values[from / 4..]) {
            d.copy_from_slice(&v.to_le_bytes());
        }
        return;
    }
    let mut at = from;
    let mut i = 0;
    while i < dst.len() {
        let v = values[at / 4].to_le_bytes();
        let (s, n) = (at % 4, (4 - at % 4).min(dst.len() - i));
        dst[i..i + n].copy_from_slice(&v[s..s + n]);
        i += n;
        at += n;
    }
}
