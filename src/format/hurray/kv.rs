//! The KV metadata section (file-format.md § KV Metadata Section).
//!
//! Private value tags (`0xF0..=0xFE`) are refused: their payload has no
//! length the spec defines, so a reader that does not know the private
//! encoding cannot even find where the next entry starts.

use std::collections::HashSet;

use super::bytes::Cursor;
use super::container::HAS_KV_METADATA;
use super::{Header, KvEntry, KvValue, Trailer, TRAILER_LEN};
use crate::error::{Error, Result, Rule};
use crate::format::Ranges;

/// Parses the section's exact bytes, which start at absolute `offset`.
pub(crate) fn parse_kv(section: &[u8], offset: u64) -> Result<Vec<KvEntry>> {
    let mut c = Cursor::new(section, offset, Rule::HurrayKv);
    let count = c.u32("kv_count")?;
    // A larger count runs out of bytes below (every entry reads at least
    // four); what is reserved follows what is read.
    let cap = crate::format::reserve_ahead(u64::from(count));
    let mut entries = Vec::with_capacity(cap);
    let mut seen = HashSet::with_capacity(cap);
    for i in 0..count {
        let at = c.offset();
        let key_len = c.u16("key_length")?;
        if key_len == 0 {
            return Err(Error::reject(
                Rule::HurrayKv,
                format!("KV entry {i} at {at}: key_length is 0"),
            ));
        }
        let key = std::str::from_utf8(c.take(usize::from(key_len), "key")?).map_err(|_| {
            Error::reject(
                Rule::HurrayKv,
                format!("KV entry {i} at {at}: key is not UTF-8"),
            )
        })?;
        let tag = c.u8("value_tag")?;
        let value = parse_value(&mut c, tag, &format!("KV entry {key:?} at {at}"))?;
        if !seen.insert(key) {
            return Err(Error::reject(
                Rule::HurrayKvDuplicate,
                format!("KV key {key:?} at {at} is repeated"),
            ));
        }
        entries.push(KvEntry {
            key: key.into(),
            value,
        });
    }
    if c.remaining() != 0 {
        return Err(Error::reject(
            Rule::HurrayKv,
            format!(
                "{} bytes after the last KV entry, at {}",
                c.remaining(),
                c.offset()
            ),
        ));
    }
    Ok(entries)
}

/// DECISION: the reference writer never sets HAS_KV_METADATA, yet writes a
/// KV section and locates it in the trailer; the trailer decides, so the
/// section is read whenever `kv_length` is non-zero. The flag set with no
/// section is refused.
pub(crate) fn read_kv(file: &dyn Ranges, header: &Header, t: &Trailer) -> Result<Vec<KvEntry>> {
    if header.flags & HAS_KV_METADATA != 0 && t.kv_length == 0 {
        return Err(Error::reject(
            Rule::HurrayKv,
            "HAS_KV_METADATA is set but kv_length is 0",
        ));
    }
    if (t.kv_offset == 0) != (t.kv_length == 0) {
        return Err(Error::reject(
            Rule::HurrayKv,
            format!(
                "kv_offset {} and kv_length {} must be both zero or both non-zero",
                t.kv_offset, t.kv_length
            ),
        ));
    }
    if t.kv_length == 0 {
        return Ok(Vec::new());
    }
    let trailer_start = file.size() - TRAILER_LEN;
    let end = t.kv_offset.checked_add(u64::from(t.kv_length));
    if end.is_none_or(|e| e > trailer_start) {
        return Err(Error::reject(
            Rule::HurrayBounds,
            format!(
                "KV section [{}, +{}) runs into the trailer at {trailer_start}",
                t.kv_offset, t.kv_length
            ),
        ));
    }
    let section = file.get(t.kv_offset, u64::from(t.kv_length))?;
    parse_kv(&section, t.kv_offset)
}

fn parse_value(c: &mut Cursor<'_>, tag: u8, at: &str) -> Result<KvValue> {
    Ok(match tag {
        0x01 => KvValue::Str(string(c, at)?),
        0x02 => KvValue::I64(c.i64("int64 value")?),
        0x03 => KvValue::U64(c.u64("uint64 value")?),
        0x04 => KvValue::F64(c.f64("float64 value")?),
        0x05 => KvValue::Bool(boolean(c, at)?),
        0x06 => {
            let n = c.u32("bytes length")?;
            KvValue::Bytes(c.take(n as usize, "bytes value")?.to_vec())
        }
        0x07 => {
            let elem = c.u8("array element tag")?;
            if !(0x01..=0x06).contains(&elem) {
                return Err(Error::reject(
                    Rule::HurrayKv,
                    format!("{at}: array element tag {elem:#04x} is not 0x01..=0x06"),
                ));
            }
            let count = c.u32("array count")?;
            // A count past the bytes runs out of them below.
            let mut items = Vec::with_capacity(crate::format::reserve_ahead(u64::from(count)));
            for _ in 0..count {
                items.push(parse_value(c, elem, at)?);
            }
            KvValue::Array(items)
        }
        0xF0..=0xFE => {
            return Err(Error::reject(
                Rule::HurrayKv,
                format!("{at}: private value tag {tag:#04x} cannot be read (its payload length is not defined)"),
            ))
        }
        0xFF => {
            return Err(Error::reject(
                Rule::HurrayKv,
                format!("{at}: value tag 0xff is invalid"),
            ))
        }
        _ => {
            return Err(Error::reject(
                Rule::HurrayKv,
                format!("{at}: value tag {tag:#04x} is reserved"),
            ))
        }
    })
}

fn string(c: &mut Cursor<'_>, at: &str) -> Result<String> {
    let n = c.u32("string length")?;
    let bytes = c.take(n as usize, "string value")?;
    std::str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|_| Error::reject(Rule::HurrayKv, format!("{at}: string is not UTF-8")))
}

fn boolean(c: &mut Cursor<'_>, at: &str) -> Result<bool> {
    match c.u8("bool value")? {
        0 => Ok(false),
        1 => Ok(true),
        b => Err(Error::reject(
            Rule::HurrayKv,
            format!("{at}: bool byte {b:#04x} is not 0 or 1"),
        )),
    }
}
