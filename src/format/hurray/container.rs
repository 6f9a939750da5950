//! The container layer (file-format.md): header, trailer, index, and the
//! placement walk that accounts for every byte between header and trailer.

use super::bytes::Cursor;
use super::{Header, Trailer, FILE_MAGIC, HEADER_LEN, MAGIC, TRAILER_LEN};
use crate::error::{Error, Result, Rule};
use crate::format::Ranges;

/// File flag bit 0.
pub const HAS_KV_METADATA: u32 = 1;
/// File flag bit 1.
pub const SORTED_INDEX: u32 = 2;
/// File flag bit 2.
pub const HAS_INDEX_CRC32C: u32 = 4;
const MIN_ALIGNMENT: u32 = 4096;
const MAX_ALIGNMENT: u32 = 2 * 1024 * 1024;

/// CRC-32C, slice-by-16 tables built at compile time.
const CRC32C: crc::Crc<u32, crc::Table<16>> =
    crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);

fn rej(rule: Rule, detail: String) -> Error {
    Error::reject(rule, detail)
}

/// The 64-byte header, after the file-size check.
pub(crate) fn parse_header(file: &dyn Ranges) -> Result<Header> {
    let min = HEADER_LEN + TRAILER_LEN;
    if file.size() < min {
        return Err(rej(
            Rule::HurrayTooSmall,
            format!(
                "{} bytes is shorter than a header and a trailer ({min})",
                file.size()
            ),
        ));
    }
    let head = file.get(0, HEADER_LEN)?;
    let mut c = Cursor::new(&head, 0, Rule::HurrayHeader);
    let magic: [u8; 8] = c.array("magic")?;
    if magic != FILE_MAGIC {
        return Err(rej(
            Rule::HurrayHeader,
            format!("magic {magic:?} is not \"HRRYFILE\""),
        ));
    }
    let version_major = c.u8("container_version_major")?;
    let version_minor = c.u8("container_version_minor")?;
    if version_major != 1 {
        return Err(rej(
            Rule::HurrayVersion,
            format!("container major version {version_major} is not 1"),
        ));
    }
    let reserved: [u8; 2] = c.array("reserved")?;
    let flags = c.u32("file_flags")?;
    let data_buffer_alignment = c.u32("data_buffer_alignment")?;
    let first_descriptor_offset = c.u64("first_descriptor_offset")?;
    let tensor_count_hint = c.u64("tensor_count_hint")?;
    let reserved_tail: [u8; 28] = c.array("reserved_header")?;
    if reserved != [0, 0] || reserved_tail.iter().any(|&b| b != 0) {
        return Err(rej(
            Rule::HurrayHeader,
            "header reserved bytes are not zero".into(),
        ));
    }
    if flags >> 3 != 0 {
        return Err(rej(
            Rule::HurrayHeader,
            format!("file_flags {flags:#x} set reserved bits 3..31"),
        ));
    }
    let a = data_buffer_alignment;
    if !a.is_power_of_two() || !(MIN_ALIGNMENT..=MAX_ALIGNMENT).contains(&a) {
        return Err(rej(
            Rule::HurrayHeader,
            format!("data_buffer_alignment {a} is not a power of two in 4096..=2097152"),
        ));
    }
    let fdo = first_descriptor_offset;
    if fdo < HEADER_LEN || fdo % 8 != 0 {
        return Err(rej(
            Rule::HurrayHeader,
            format!("first_descriptor_offset {fdo} is below 64 or not a multiple of 8"),
        ));
    }
    Ok(Header {
        version_major,
        version_minor,
        flags,
        data_buffer_alignment,
        first_descriptor_offset,
        tensor_count_hint,
    })
}

/// The 40-byte trailer: magic first, then reserved bytes, then the index
/// bounds. The file is at least a header and a trailer long
/// ([`parse_header`] checked).
pub(crate) fn parse_trailer(file: &dyn Ranges) -> Result<Trailer> {
    let len = file.size();
    let start = len - TRAILER_LEN;
    let tail = file.get(start, TRAILER_LEN)?;
    let mut c = Cursor::new(&tail, start, Rule::HurrayTrailer);
    let index_offset = c.u64("index_offset")?;
    let index_length = c.u64("index_length")?;
    let kv_offset = c.u64("kv_offset")?;
    let kv_length = c.u32("kv_length")?;
    let index_crc32c = c.u32("index_crc32c")?;
    let reserved: [u8; 4] = c.array("reserved")?;
    let magic: [u8; 4] = c.array("trailer_magic")?;
    if magic != MAGIC {
        return Err(rej(
            Rule::HurrayTrailer,
            format!("trailer magic {magic:?} at {} is not \"HRRY\"", len - 4),
        ));
    }
    if reserved != [0; 4] {
        return Err(rej(
            Rule::HurrayTrailer,
            format!("trailer reserved bytes {reserved:?} are not zero"),
        ));
    }
    if index_offset
        .checked_add(index_length)
        .is_none_or(|e| e > start)
    {
        return Err(rej(
            Rule::HurrayBounds,
            format!("index [{index_offset}, +{index_length}) runs into the trailer at {start}"),
        ));
    }
    Ok(Trailer {
        index_offset,
        index_length,
        kv_offset,
        kv_length,
        index_crc32c,
    })
}

/// Checks the index CRC-32C (Castagnoli) against the flag.
pub(crate) fn check_crc(header: &Header, trailer: &Trailer, index: &[u8]) -> Result<()> {
    if header.flags & HAS_INDEX_CRC32C == 0 {
        if trailer.index_crc32c != 0 {
            return Err(rej(
                Rule::HurrayIndexCrc,
                format!(
                    "index_crc32c {:#010x} is set without HAS_INDEX_CRC32C",
                    trailer.index_crc32c
                ),
            ));
        }
        return Ok(());
    }
    let crc = CRC32C.checksum(index);
    if crc != trailer.index_crc32c {
        return Err(rej(
            Rule::HurrayIndexCrc,
            format!(
                "index CRC-32C is {crc:#010x}, the trailer says {:#010x}",
                trailer.index_crc32c
            ),
        ));
    }
    Ok(())
}

/// One index entry as written.
pub(crate) struct Entry<'a> {
    pub name: &'a str,
    pub descriptor_offset: u64,
    pub descriptor_length: u32,
    pub data_offset: u64,
    pub data_length: u64,
}

/// Parses the index's exact bytes (starting at absolute `offset`): entries
/// filling it exactly, names valid, unique and (with SORTED_INDEX) strictly
/// increasing.
pub(crate) fn parse_index<'a>(index: &'a [u8], offset: u64, flags: u32) -> Result<Vec<Entry<'a>>> {
    let mut c = Cursor::new(index, offset, Rule::HurrayIndex);
    let count = c.u64("index_entry_count")?;
    // A count beyond the bytes runs out of them below (each entry reads at
    // least 34); what is reserved follows what is read.
    let mut entries = Vec::with_capacity(crate::format::reserve_ahead(count));
    for i in 0..count {
        let at = c.offset();
        let n = c.u16("name_length")?;
        if n == 0 {
            return Err(rej(
                Rule::HurrayName,
                format!("index entry {i} at {at}: name_length is 0"),
            ));
        }
        let name = std::str::from_utf8(c.take(usize::from(n), "name")?).map_err(|_| {
            rej(
                Rule::HurrayName,
                format!("index entry {i} at {at}: name is not UTF-8"),
            )
        })?;
        let e = Entry {
            name,
            descriptor_offset: c.u64("descriptor_offset")?,
            descriptor_length: c.u32("descriptor_length")?,
            data_offset: c.u64("data_offset")?,
            data_length: c.u64("data_length")?,
        };
        let f = c.u32("flags")?;
        if f != 0 {
            return Err(rej(
                Rule::HurrayIndex,
                format!("index entry {name:?} at {at}: flags {f:#x} are not 0"),
            ));
        }
        entries.push(e);
    }
    if c.remaining() != 0 {
        return Err(rej(
            Rule::HurrayIndex,
            format!(
                "{} bytes after the last index entry, at {}",
                c.remaining(),
                c.offset()
            ),
        ));
    }
    check_names(&entries, flags)?;
    Ok(entries)
}

/// Names are unique, and strictly increasing under SORTED_INDEX. A
/// repeated name is HurrayName even when the order is also wrong. Names
/// already in strictly increasing order (a sorted index) are unique with
/// no further work; otherwise references are sorted, O(n log n), with no
/// hashing an adversary could make collide.
fn check_names(entries: &[Entry<'_>], flags: u32) -> Result<()> {
    let increasing = entries
        .windows(2)
        .all(|w| w[0].name.as_bytes() < w[1].name.as_bytes());
    if increasing {
        return Ok(());
    }
    let mut names: Vec<&str> = entries.iter().map(|e| e.name).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(rej(
            Rule::HurrayName,
            format!("tensor name {:?} is repeated in the index", w[0]),
        ));
    }
    if flags & SORTED_INDEX != 0 {
        let w = entries
            .windows(2)
            .find(|w| w[0].name.as_bytes() >= w[1].name.as_bytes());
        if let Some(w) = w {
            return Err(rej(
                Rule::HurraySorted,
                format!(
                    "SORTED_INDEX is set but {:?} comes before {:?}",
                    w[0].name, w[1].name
                ),
            ));
        }
    }
    Ok(())
}
