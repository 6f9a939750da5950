//! A zip archive's members, where their bytes are: the directory read by
//! the `rawzip` crate through [`Ranges`], so a file by URL reads only its
//! end, its directory and the local headers: those as small reads
//! ([`Ranges::get_small`]: the header's fixed thirty bytes and the name,
//! not the block around them), up to
//! [`AT_ONCE`](crate::format::prefetch::AT_ONCE) at a time where the file
//! is not in memory (each is a round trip by URL).
//!
//! rawzip allocates nothing by a number from the file: it reads the
//! directory through a buffer of ours ([`BUFFER`]); the members are
//! collected here, at most [`MAX_MEMBERS`]. Each member's data range comes
//! from its local header (whose extra field may differ from the
//! directory's: `torch.save` pads it there to align the data) and is
//! checked to lie inside the file, before the next member's header: one
//! archive, as every reader sees it.

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

/// A member of an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its path in the archive, as bytes (UTF-8 or not).
    pub name: Vec<u8>,
    /// Where its local header starts in the file.
    pub header: u64,
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
    /// The directory's flag bit 11: its name is UTF-8; without it, code
    /// page 437 (APPNOTE 4.4.4, as Python's zipfile reads it).
    pub utf8: bool,
}

/// Code page 437's characters for bytes 0x80 to 0xFF (0x00 to 0x7F are
/// ASCII's), as Python's `cp437` codec decodes them.
const CP437_HIGH: &str = "ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u{a0}";

impl Member {
    /// Its name as text (lossy), for messages and names.
    pub fn name(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.name)
    }

    /// Its name as Python's zipfile (and so numpy) reads it: UTF-8 when
    /// the directory flags it so (an error if it is not), code page 437
    /// otherwise (every byte is a character).
    pub fn text_name(&self) -> Option<String> {
        if self.utf8 {
            return String::from_utf8(self.name.clone()).ok();
        }
        let high: Vec<char> = CP437_HIGH.chars().collect();
        Some(
            (self.name.iter())
                .map(|&b| match b {
                    0..0x80 => char::from(b),
                    _ => high[usize::from(b - 0x80)],
                })
                .collect(),
        )
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
        let bytes = self
            .0
            .get(offset, n)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
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
        found.push(Member {
            name: e.file_path().as_bytes().to_vec(),
            header: e.local_header_offset(),
            offset: 0,
            len: e.compressed_size_hint(),
            size: e.uncompressed_size_hint(),
            method: e.compression_method().as_u16(),
            encrypted: e.flags().is_encrypted(),
            crc32: e.crc32(),
            utf8: e.flags().is_utf8(),
        });
    }
    let starts: Vec<Result<u64>> = match file.in_memory() {
        Some(_) => found.iter().map(|m| data_start(file, m)).collect(),
        None => at_once(found.len(), &|i| data_start(file, &found[i])),
    };
    for (m, start) in found.iter_mut().zip(starts) {
        m.offset = start?;
        if m.offset
            .checked_add(m.len)
            .is_none_or(|end| end > file.size())
        {
            return Err(bad(format!(
                "member {:?} at [{}, +{}) ends past the end of the file ({})",
                m.name(),
                m.offset,
                m.len,
                file.size()
            )));
        }
    }
    check_apart(&found, archive.directory_offset())?;
    Ok(found)
}

/// Where member `m`'s stored bytes start: past its local header, which
/// must name it as the directory does (Python's zipfile, which numpy
/// reads `.npz` with, refuses a header naming another member; readers
/// trusting one or the other would see different archives). The header's
/// extra field may differ from the directory's: `torch.save` pads it
/// there to align the data.
fn data_start(file: &(dyn Ranges + Sync), m: &Member) -> Result<u64> {
    let fixed = 30u64;
    let want = fixed + m.name.len() as u64;
    let short = || {
        bad(format!(
            "member {:?}: its local header at {} is cut short by the end of the file",
            m.name(),
            m.header
        ))
    };
    if m.header.checked_add(want).is_none_or(|e| e > file.size()) {
        return Err(short());
    }
    let h = file.get_small(m.header, want)?;
    if &h[..4] != MAGIC {
        return Err(bad(format!(
            "member {:?}: no local header at {} (found {:02x?})",
            m.name(),
            m.header,
            &h[..4]
        )));
    }
    let name_len = u64::from(u16::from_le_bytes([h[26], h[27]]));
    let extra_len = u64::from(u16::from_le_bytes([h[28], h[29]]));
    if name_len != m.name.len() as u64 || h[30..] != m.name[..] {
        let local = &h[30..(30 + name_len.min(m.name.len() as u64)) as usize];
        return Err(bad(format!(
            "member {:?}: its local header names it {:?}",
            m.name(),
            String::from_utf8_lossy(local)
        )));
    }
    Ok(m.header + fixed + name_len + extra_len)
}

/// Members must not overlap: each member's stored bytes end before the
/// next local header (in file order) and the last's before the directory,
/// as Python's zipfile requires (since 3.12: "Overlapped entries", the
/// overlapping zip bomb); two directory entries of one local header are
/// refused so too.
fn check_apart(members: &[Member], directory: u64) -> Result<()> {
    let mut order: Vec<&Member> = members.iter().collect();
    order.sort_by_key(|m| m.header);
    for (i, m) in order.iter().enumerate() {
        let limit = order.get(i + 1).map_or(directory, |n| n.header);
        if m.offset + m.len > limit {
            return Err(bad(format!(
                "member {:?} at [{}, +{}) overlaps {}",
                m.name(),
                m.offset,
                m.len,
                match order.get(i + 1) {
                    Some(n) => format!("member {:?} (its local header at {limit})", n.name()),
                    None => format!("the directory at {limit}"),
                }
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod name_tests {
    use super::*;

    fn member(name: &[u8], utf8: bool) -> Member {
        Member {
            name: name.to_vec(),
            header: 0,
            offset: 0,
            len: 0,
            size: 0,
            method: 0,
            encrypted: false,
            crc32: 0,
            utf8,
        }
    }

    /// Names read as Python's zipfile reads them: code page 437 without
    /// the UTF-8 flag (Python's `b"\x82t\xe0".decode("cp437")` is "étα"),
    /// UTF-8 with it.
    #[test]
    fn names_decode_as_pythons_zipfile_decodes_them() {
        assert_eq!(CP437_HIGH.chars().count(), 128);
        let m = member(b"\x82t\xe0.npy", false);
        assert_eq!(m.text_name().as_deref(), Some("\u{e9}t\u{3b1}.npy"));
        let m = member("\u{e9}t.npy".as_bytes(), false);
        assert_eq!(m.text_name().as_deref(), Some("\u{251c}\u{2310}t.npy"));
        let m = member("\u{e9}t.npy".as_bytes(), true);
        assert_eq!(m.text_name().as_deref(), Some("\u{e9}t.npy"));
        assert_eq!(member(b"\xff.npy", true).text_name(), None);
        assert_eq!(
            member(b"\xff", false).text_name().as_deref(),
            Some("\u{a0}")
        );
    }
}
