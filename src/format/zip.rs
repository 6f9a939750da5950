//! A zip archive's members, where their bytes are: the directory read by
//! the `rawzip` crate through [`Ranges`], so a file by URL reads only its
//! end, its directory and the local headers: those as small reads
//! ([`Ranges::get_small`]: thirty bytes, not the block around them), up
//! to [`AT_ONCE`](crate::format::prefetch::AT_ONCE) at a time where the
//! file is not in memory (each is a round trip by URL).
//!
//! rawzip allocates nothing by a number from the file: it reads the
//! directory through a buffer of ours ([`BUFFER`]); the members are
//! collected here, at most [`MAX_MEMBERS`]. Each member's data range comes
//! from its local header (whose extra field may differ from the
//! directory's: `torch.save` pads it there to align the data) and is
//! checked to lie inside the file.

use crate::error::{Error, Result, Rule};
use crate::format::prefetch::at_once;
use crate::format::Ranges;

/// A zip's first bytes: a member's local header.
pub const MAGIC: &[u8; 4] = b"PK\x03\x04";

/// Most members an archive may have.
pub const MAX_MEMBERS: usize = 1 << 20;
/// The buffer the directory is read through (rawzip's recommended size;
/// a name and its extra field, at most 2 × 65535 bytes, must fit).
pub const BUFFER: usize = 1 << 17;
/// Reads of at most this many bytes are small ([`Ranges::get_small`]):
/// rawzip reads a local header's fixed 30 bytes alone.
const SMALL: usize = 64;

/// A member of an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its path in the archive, as bytes (UTF-8 or not).
    pub name: Vec<u8>,
    /// Where its stored bytes start in the file.
    pub offset: u64,
    /// Its stored (compressed) length.
    pub len: u64,
    /// Its length once decompressed, as the directory says.
    pub size: u64,
    /// Its compression method (0 stored, 8 deflated).
    pub method: u16,
    pub encrypted: bool,
    pub crc32: u32,
}

impl Member {
    /// Its name as text (lossy), for messages and names.
    pub fn name(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.name)
    }

    /// True when its bytes are the member's, as stored (no compression,
    /// no encryption).
    pub fn is_stored(&self) -> bool {
        self.method == 0 && !self.encrypted && self.len == self.size
    }
}

struct At<'a>(&'a (dyn Ranges + Sync));

impl rawzip::ReaderAt for At<'_> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let size = self.0.size();
        if offset >= size {
            return Ok(0);
        }
        let n = (buf.len() as u64).min(size - offset);
        let bytes = match buf.len() <= SMALL {
            true => self.0.get_small(offset, n),
            false => self.0.get(offset, n),
        };
        let bytes = bytes.map_err(|e| std::io::Error::other(e.to_string()))?;
        buf[..n as usize].copy_from_slice(&bytes);
        Ok(n as usize)
    }
}

fn bad(what: impl std::fmt::Display) -> Error {
    Error::reject(Rule::Zip, what.to_string())
}

/// The members of the archive `file`, in directory order.
pub fn members(file: &(dyn Ranges + Sync)) -> Result<Vec<Member>> {
    let mut buffer = vec![0u8; BUFFER];
    let archive = rawzip::ZipLocator::new()
        .locate_in_reader(At(file), &mut buffer, file.size())
        .map_err(|(_, e)| bad(format!("not a readable zip archive: {e}")))?;
    let mut found = Vec::new();
    let mut entries = archive.entries(&mut buffer);
    while let Some(e) = entries
        .next_entry()
        .map_err(|e| bad(format!("zip directory: {e}")))?
    {
        if found.len() >= MAX_MEMBERS {
            return Err(bad(format!("more than {MAX_MEMBERS} members")));
        }
        found.push((
            e.file_path().as_bytes().to_vec(),
            e.wayfinder(),
            e.compression_method().as_u16(),
            e.flags().is_encrypted(),
            e.crc32(),
        ));
    }
    let size = file.size();
    // Each member's data range, from its local header.
    let range = |i: usize| -> Result<(u64, u64)> {
        let (name, way) = (&found[i].0, found[i].1);
        let shown = || String::from_utf8_lossy(name).into_owned();
        let entry =
            (archive.get_entry(way)).map_err(|e| bad(format!("member {:?}: {e}", shown())))?;
        let (start, end) = entry.compressed_data_range();
        if end > size || start > end {
            return Err(bad(format!(
                "member {:?} at [{start}, {end}) ends past the end of the file ({size})",
                shown()
            )));
        }
        Ok((start, end))
    };
    let ranges: Vec<Result<(u64, u64)>> = match file.in_memory() {
        Some(_) => (0..found.len()).map(range).collect(),
        None => at_once(found.len(), &range),
    };
    let mut out = Vec::with_capacity(found.len());
    for ((name, way, method, encrypted, crc32), r) in found.into_iter().zip(ranges) {
        let (start, end) = r?;
        out.push(Member {
            name,
            offset: start,
            len: end - start,
            size: way.uncompressed_size_hint(),
            method,
            encrypted,
            crc32,
        });
    }
    Ok(out)
}
