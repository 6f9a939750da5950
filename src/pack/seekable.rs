//! Writing the encoding `zt.zstd-seekable/1` (notes §3.1) as a stream:
//! decoded bytes in, zstd frames of a fixed decoded size out, then the
//! seek table. Like the public writer: every frame carries its content
//! checksum and no content size, and the table has no checksum column
//! (descriptor 0).

use crate::decode::zstd_seekable::MAX_FRAME_LEN;
use crate::error::{Error, Result};

const SKIPPABLE_MAGIC: u32 = 0x184D_2A5E;
const SEEKABLE_MAGIC: u32 = 0x8F92_EAB1;

/// The public writer's frame size: 1 MiB of decoded bytes.
pub const DEFAULT_FRAME_LEN: u64 = 1 << 20;

/// An encoder of one part.
pub struct Encoder {
    compressor: zstd::bulk::Compressor<'static>,
    frame_len: usize,
    pending: Vec<u8>,
    /// Per frame: stored and decoded sizes.
    entries: Vec<(u32, u32)>,
}

impl Encoder {
    /// An encoder at zstd `level` with frames of `frame_len` decoded bytes
    /// (at most the profile's 16 MiB).
    pub fn new(level: i32, frame_len: u64) -> Result<Encoder> {
        assert!(frame_len > 0 && frame_len <= MAX_FRAME_LEN);
        let zstd_err = |e: std::io::Error| Error::io("zstd", e);
        let mut compressor = zstd::bulk::Compressor::new(level).map_err(zstd_err)?;
        compressor.include_checksum(true).map_err(zstd_err)?;
        compressor.include_contentsize(false).map_err(zstd_err)?;
        Ok(Encoder {
            compressor,
            frame_len: frame_len as usize,
            pending: Vec::with_capacity(frame_len as usize),
            entries: Vec::new(),
        })
    }

    /// Takes decoded bytes; every full frame goes to `emit`.
    pub fn push(
        &mut self,
        mut bytes: &[u8],
        emit: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        while !bytes.is_empty() {
            let take = (self.frame_len - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() == self.frame_len {
                self.flush(emit)?;
            }
        }
        Ok(())
    }

    /// Emits the last frame and the seek table.
    pub fn finish(mut self, emit: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        if !self.pending.is_empty() {
            self.flush(emit)?;
        }
        emit(&seek_table(&self.entries))
    }

    fn flush(&mut self, emit: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let frame = (self.compressor)
            .compress(&self.pending)
            .map_err(|e| Error::io("zstd", e))?;
        // Both fit: a frame decodes to at most 16 MiB, and zstd's bound on
        // the compressed size of 16 MiB is a little more than that.
        self.entries
            .push((frame.len() as u32, self.pending.len() as u32));
        self.pending.clear();
        emit(&frame)
    }
}

/// The seek table for frames of (stored, decoded) sizes.
fn seek_table(entries: &[(u32, u32)]) -> Vec<u8> {
    let n = entries.len() as u32;
    let mut t = Vec::with_capacity(17 + 8 * entries.len());
    t.extend_from_slice(&SKIPPABLE_MAGIC.to_le_bytes());
    t.extend_from_slice(&(n * 8 + 9).to_le_bytes());
    for (stored, decoded) in entries {
        t.extend_from_slice(&stored.to_le_bytes());
        t.extend_from_slice(&decoded.to_le_bytes());
    }
    t.extend_from_slice(&n.to_le_bytes());
    t.push(0);
    t.extend_from_slice(&SEEKABLE_MAGIC.to_le_bytes());
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::zstd_seekable::SeekTable;

    fn encode(data: &[u8], frame_len: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let mut e = Encoder::new(3, frame_len).unwrap();
        let mut emit = |b: &[u8]| {
            out.extend_from_slice(b);
            Ok(())
        };
        data.chunks(7)
            .try_for_each(|c| e.push(c, &mut emit))
            .unwrap();
        e.finish(&mut emit).unwrap();
        out
    }

    #[test]
    fn what_is_written_decodes_back_through_the_reader() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for frame_len in [1, 4096, 65536, 1 << 20] {
            let stored = encode(&data, frame_len);
            let table = SeekTable::parse(&stored, data.len() as u64).unwrap();
            let mut back = Vec::new();
            for i in 0..table.len() {
                back.extend(table.decode_frame(&stored, i).unwrap());
            }
            assert_eq!(back, data, "frame length {frame_len}");
        }
    }

    #[test]
    fn an_empty_part_is_the_bare_table() {
        let stored = encode(&[], DEFAULT_FRAME_LEN);
        assert_eq!(stored.len(), 17);
        assert!(SeekTable::parse(&stored, 0).unwrap().is_empty());
    }
}
