//! The encoding profile `zt.zstd-seekable/1` (notes §3.1): the Zstandard
//! seekable format, validated strictly and decoded frame by frame.
//!
//! Stricter than the public implementation, on purpose (the profile's
//! MUSTs): every frame must carry a content checksum, a seek-table entry must
//! hold exactly one zstd frame, and the optional checksum column is verified.
//! Following the profile text rather than the public implementation, only
//! descriptor bits 6..2 are reserved; bits 1..0 are ignored.

use crate::error::{Error, Result, Rule};
use crate::format::Ranges;

/// The profile id.
pub const ID: &str = "zt.zstd-seekable/1";
/// Largest decoded frame, in bytes.
pub const MAX_FRAME_LEN: u64 = 16 << 20;
const SKIPPABLE_MAGIC: u32 = 0x184D_2A5E;
const SEEKABLE_MAGIC: u32 = 0x8F92_EAB1;
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// Seek table size without entries: skippable header 8, count 4, descriptor 1, magic 4.
const TABLE_FIXED: u64 = 17;

thread_local! {
    /// One decoder context per thread, reused for every frame it decodes.
    static DECODER: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// One frame: where its stored bytes are and how much it decodes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Offset of the frame within the stored blob.
    pub stored_offset: u64,
    /// Stored (compressed) length.
    pub stored_len: u64,
    /// Offset of the frame's bytes within the decoded stream.
    pub decoded_offset: u64,
    /// Decoded length.
    pub decoded_len: u64,
    /// Low 32 bits of XXH64 of the decoded frame, when the table has them.
    pub checksum: Option<u32>,
}

/// A validated seek table, kept in at most the bytes of its entries (a
/// part's table is read from the file, so its size is the file's claim):
/// where each frame starts, and the two decoded sizes (every frame's but
/// the last, which are equal, and the last's); checksums when it has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeekTable {
    /// Stored offset of each frame, and the table's start after the last.
    starts: Vec<u64>,
    /// Decoded size of every frame but the last.
    first_len: u64,
    /// Decoded size of the last frame.
    last_len: u64,
    /// Per frame, when the table has the column.
    checksums: Option<Vec<u32>>,
}

fn bad(detail: String) -> Error {
    Error::reject(Rule::Encoding, detail)
}

fn u32_at(b: &[u8], at: u64) -> u32 {
    let at = at as usize;
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl SeekTable {
    /// Parses and validates the seek table of a stored blob whose decoded
    /// length must be `decoded_length`.
    pub fn parse(stored: &[u8], decoded_length: u64) -> Result<SeekTable> {
        SeekTable::parse_from(&stored, decoded_length)
    }

    /// [`SeekTable::parse`] of a blob read by range: its last 9 bytes,
    /// then the table they announce.
    pub fn parse_from(stored: &dyn Ranges, decoded_length: u64) -> Result<SeekTable> {
        let n = stored.size();
        if n < TABLE_FIXED {
            return Err(bad(format!(
                "stored blob of {n} bytes does not end with the seekable magic"
            )));
        }
        let end = stored.get(n - 9, 9)?;
        if u32_at(&end, 5) != SEEKABLE_MAGIC {
            return Err(bad(format!(
                "stored blob of {n} bytes does not end with the seekable magic"
            )));
        }
        let descriptor = end[4];
        if descriptor & 0x7C != 0 {
            return Err(bad(format!(
                "seek table descriptor {descriptor:#04x} sets reserved bits"
            )));
        }
        let entry_len: u64 = if descriptor & 0x80 != 0 { 12 } else { 8 };
        let count = u64::from(u32_at(&end, 0));
        // count * entry_len cannot overflow: count < 2^32, entry_len <= 12.
        let table_len = count * entry_len + TABLE_FIXED;
        let Some(table_start) = n.checked_sub(table_len) else {
            return Err(bad(format!(
                "seek table of {count} frames does not fit in {n} bytes"
            )));
        };
        // Within the blob, so its size bounds the read.
        let table = stored.get(table_start, table_len)?;
        if u32_at(&table, 0) != SKIPPABLE_MAGIC
            || u64::from(u32_at(&table, 4)) != count * entry_len + 9
        {
            return Err(bad(format!(
                "seek table of {count} frames has a bad skippable header at {table_start}"
            )));
        }
        let ahead = crate::format::reserve_ahead(count);
        let mut t = SeekTable {
            starts: Vec::with_capacity(ahead + 1),
            first_len: 0,
            last_len: 0,
            checksums: (entry_len == 12).then(|| Vec::with_capacity(ahead)),
        };
        let (mut c, mut d) = (0u64, 0u64);
        for i in 0..count {
            let at = 8 + i * entry_len;
            let (cs, ds) = (
                u64::from(u32_at(&table, at)),
                u64::from(u32_at(&table, at + 4)),
            );
            if let Some(sums) = &mut t.checksums {
                sums.push(u32_at(&table, at + 8));
            }
            if ds > MAX_FRAME_LEN {
                return Err(bad(format!(
                    "frame {i} decodes to {ds} bytes, above {MAX_FRAME_LEN}"
                )));
            }
            if i == 0 {
                t.first_len = ds;
            }
            if i + 1 < count && i > 0 && ds != t.first_len {
                return Err(bad(format!(
                    "frame {i} decodes to {ds} bytes; all frames but the last must match frame 0"
                )));
            }
            t.starts.push(c);
            t.last_len = ds;
            c += cs;
            d += ds;
        }
        t.starts.push(c);
        if c != table_start {
            return Err(bad(format!(
                "frames hold {c} stored bytes, the space before the seek table is {table_start}"
            )));
        }
        if d != decoded_length {
            return Err(bad(format!(
                "frames decode to {d} bytes, decoded_length is {decoded_length}"
            )));
        }
        Ok(t)
    }

    /// The number of frames.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// True when the stream has no frame.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frames in order.
    pub fn frames(&self) -> impl Iterator<Item = Frame> + '_ {
        (0..self.len()).map(|i| self.frame(i))
    }

    /// Frame `i` (below [`SeekTable::len`]).
    pub fn frame(&self, i: usize) -> Frame {
        let last = i + 1 == self.len();
        Frame {
            stored_offset: self.starts[i],
            stored_len: self.starts[i + 1] - self.starts[i],
            decoded_offset: i as u64 * self.first_len,
            decoded_len: if last { self.last_len } else { self.first_len },
            checksum: self.checksums.as_ref().map(|c| c[i]),
        }
    }

    /// Decodes frame `i` of `stored` into exactly its declared size,
    /// checking that it is one checksummed zstd frame.
    pub fn decode_frame(&self, stored: &[u8], i: usize) -> Result<Vec<u8>> {
        self.decode_frame_into(stored, i, Vec::new())
    }

    /// [`SeekTable::decode_frame`] into `out`, whose old contents are
    /// discarded and whose allocation is reused when large enough.
    pub fn decode_frame_into(&self, stored: &[u8], i: usize, out: Vec<u8>) -> Result<Vec<u8>> {
        self.decode_frame_from(&stored, i, out)
    }

    /// [`SeekTable::decode_frame_into`] of a blob read by range: only the
    /// frame's stored bytes are read.
    pub fn decode_frame_from(
        &self,
        stored: &dyn Ranges,
        i: usize,
        mut out: Vec<u8>,
    ) -> Result<Vec<u8>> {
        let f = self.frame(i);
        let src = stored.get(f.stored_offset, f.stored_len)?;
        let src = &src[..];
        let fail = |why: String| bad(format!("frame {i}: {why}"));
        if src.len() < 6 || src[..4] != ZSTD_MAGIC {
            return Err(fail("not a zstd frame".into()));
        }
        if src[4] & 0x04 == 0 {
            return Err(fail(
                "has no content checksum, which the profile requires".into(),
            ));
        }
        match zstd::zstd_safe::find_frame_compressed_size(src) {
            Ok(len) if len == src.len() => {}
            _ => {
                return Err(fail(format!(
                    "is not exactly one zstd frame of {} bytes",
                    src.len()
                )))
            }
        }
        // At most MAX_FRAME_LEN; filled by the decoder, so not zeroed first.
        // Exactly the declared capacity: zstd's outcome on a corrupt frame
        // can depend on the room it is given (found by fuzzing: a frame
        // that decodes into its declared size fails into a larger recycled
        // buffer), and a frame must decode the same whoever asks.
        out.clear();
        if out.capacity() != f.decoded_len as usize {
            out = Vec::with_capacity(f.decoded_len as usize);
        }
        let got = DECODER
            .with(|d| {
                let mut d = d.borrow_mut();
                if d.is_none() {
                    *d = Some(zstd::bulk::Decompressor::new()?);
                }
                let dctx = d.as_mut().expect("just made");
                dctx.decompress_to_buffer(src, &mut out)
            })
            .map_err(|e| fail(format!("does not decode: {e}")))?;
        if got as u64 != f.decoded_len {
            return Err(fail(format!(
                "decodes to {got} bytes, the seek table says {}",
                f.decoded_len
            )));
        }
        if let Some(want) = f.checksum {
            let have = xxhash_rust::xxh64::xxh64(&out, 0) as u32;
            if have != want {
                return Err(fail(format!(
                    "checksum {have:#010x}, the seek table says {want:#010x}"
                )));
            }
        }
        Ok(out)
    }

    /// The frame holding decoded byte `pos`: all frames but the last have the
    /// size of frame 0, and the last may be larger or smaller, so the index
    /// is clamped (notes §4 item 2).
    pub fn frame_at(&self, pos: u64) -> usize {
        let n = self.len();
        match self.first_len {
            f if f > 0 && n > 0 => ((pos / f) as usize).min(n - 1),
            _ => n.saturating_sub(1),
        }
    }

    /// Decodes the whole stream.
    pub fn decode_all(
        &self,
        stored: &[u8],
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        for i in 0..self.len() {
            sink(&self.decode_frame(stored, i)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::SeekTable;

    /// Regression test for a fuzz finding: zstd failed a malformed frame
    /// into a buffer larger than the frame's declared size that it decodes
    /// into exactly that size, so a frame's outcome depended on which
    /// buffer the mount's cache happened to recycle.
    #[test]
    fn a_frame_decodes_alike_whatever_buffer_it_is_given() {
        let stored =
            include_bytes!("../../fuzz/corpus/seek_table/reused-buffer-decodes-differently");
        let t = SeekTable::parse(stored, 10_000).unwrap();
        for i in 0..t.len() {
            let fresh = t.decode_frame(stored, i).map_err(|e| e.to_string());
            for cap in [0, 1808, 1809, 4096, 1 << 16] {
                let reused = t
                    .decode_frame_into(stored, i, Vec::with_capacity(cap))
                    .map_err(|e| e.to_string());
                assert_eq!(fresh, reused, "frame {i}, buffer of {cap}");
            }
        }
    }
}
