//! The safetensors format (huggingface/safetensors, README "Format"): pure
//! bytes in, a validated header out.
//!
//! A file is `N` (8 bytes, little-endian u64), `N` bytes of a JSON header,
//! then the byte buffer. [`read_header_from`] reads the two ranges it needs
//! through [`Ranges`] (so a file by URL opens with two requests) and
//! returns every tensor, or the first rule the file breaks
//! (`Rule::Safetensors*`), in the order the `safetensors` crate (0.8) checks
//! them: the header length against the 100,000,000-byte limit, then against
//! the file; UTF-8; JSON; the entries, `__metadata__` and dtype names; then,
//! tensor by tensor in offset order, the offsets and the size their shape
//! and dtype give; last, that the tensors end where the file ends.
//!
//! A Hugging Face sharded checkpoint's index, which names several such
//! files, is parsed by [`index`].
//!
//! Every number from the file goes through checked arithmetic; nothing is
//! allocated by a count read from the file (the header text is `N` bytes,
//! and `N` was checked against the file's length first).
//!
//! # Decisions
//!
//! The reference accepts exactly what this reader accepts (the property
//! test in `tests/prop.rs` holds the two against each other), except:
//!
//! - **The header begins with `{`**, as the format says it MUST; the crate
//!   lets JSON whitespace come first.
//! - **Repeated keys** are refused anywhere in the header (the format's
//!   README: "Duplicate keys are disallowed"); the crate keeps the last
//!   tensor or metadata entry of a name.
//! - **An entry is a JSON object** and a dtype a JSON string: the crate's
//!   serde derive also takes an entry written as an array
//!   `["F32", [2], [0, 8]]` and a dtype written as `{"F32": null}`.
//! - **A tensor name is not empty**: a mount has no path component for it.
//!
//! Where the format is silent, this reader does what the crate does:
//! unknown fields of an entry are ignored (they stay in `manifest.json`),
//! `"__metadata__": null` means no metadata, zero-length tensors may share
//! an offset, and any JSON whitespace may pad the header.

pub mod index;
pub mod json;
pub mod objects;
pub mod pretty;

#[cfg(test)]
mod tests;

use crate::error::{Error, Result, Rule};
use crate::format::json::Sink;
use crate::format::Ranges;
use json::Json;

/// The largest header, in bytes (the crate's `MAX_HEADER_SIZE`).
pub const MAX_HEADER_LEN: u64 = 100_000_000;
/// The length of `N`, in bytes.
pub const LEN_BYTES: u64 = 8;
/// The key of the free-form string-to-string map.
pub const METADATA_KEY: &str = "__metadata__";

/// A dtype name of the format, as the `safetensors` crate 0.8 lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum Dtype {
    BOOL,
    F4,
    F6_E2M3,
    F6_E3M2,
    U8,
    I8,
    F8_E5M2,
    F8_E4M3,
    F8_E8M0,
    F8_E4M3FNUZ,
    F8_E5M2FNUZ,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
}

impl Dtype {
    /// Every dtype, in the crate's order.
    pub const ALL: [Dtype; 22] = [
        Dtype::BOOL,
        Dtype::F4,
        Dtype::F6_E2M3,
        Dtype::F6_E3M2,
        Dtype::U8,
        Dtype::I8,
        Dtype::F8_E5M2,
        Dtype::F8_E4M3,
        Dtype::F8_E8M0,
        Dtype::F8_E4M3FNUZ,
        Dtype::F8_E5M2FNUZ,
        Dtype::I16,
        Dtype::U16,
        Dtype::F16,
        Dtype::BF16,
        Dtype::I32,
        Dtype::U32,
        Dtype::F32,
        Dtype::C64,
        Dtype::F64,
        Dtype::I64,
        Dtype::U64,
    ];

    /// The name as written in a header.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::BOOL => "BOOL",
            Dtype::F4 => "F4",
            Dtype::F6_E2M3 => "F6_E2M3",
            Dtype::F6_E3M2 => "F6_E3M2",
            Dtype::U8 => "U8",
            Dtype::I8 => "I8",
            Dtype::F8_E5M2 => "F8_E5M2",
            Dtype::F8_E4M3 => "F8_E4M3",
            Dtype::F8_E8M0 => "F8_E8M0",
            Dtype::F8_E4M3FNUZ => "F8_E4M3FNUZ",
            Dtype::F8_E5M2FNUZ => "F8_E5M2FNUZ",
            Dtype::I16 => "I16",
            Dtype::U16 => "U16",
            Dtype::F16 => "F16",
            Dtype::BF16 => "BF16",
            Dtype::I32 => "I32",
            Dtype::U32 => "U32",
            Dtype::F32 => "F32",
            Dtype::C64 => "C64",
            Dtype::F64 => "F64",
            Dtype::I64 => "I64",
            Dtype::U64 => "U64",
        }
    }

    /// Parses a dtype name (exact, case-sensitive).
    pub fn parse(s: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name() == s)
    }

    /// Bits per element (the crate's `bitsize`).
    pub fn bits(self) -> u64 {
        match self {
            Dtype::F4 => 4,
            Dtype::F6_E2M3 | Dtype::F6_E3M2 => 6,
            Dtype::BOOL
            | Dtype::U8
            | Dtype::I8
            | Dtype::F8_E5M2
            | Dtype::F8_E4M3
            | Dtype::F8_E8M0
            | Dtype::F8_E4M3FNUZ
            | Dtype::F8_E5M2FNUZ => 8,
            Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::BF16 => 16,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 32,
            Dtype::C64 | Dtype::F64 | Dtype::I64 | Dtype::U64 => 64,
        }
    }
}

/// One tensor entry of a valid header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    /// The entry's key.
    pub name: String,
    pub dtype: Dtype,
    /// Dimensions, row-major; `[]` for a scalar.
    pub shape: Vec<u64>,
    /// `data_offsets`: relative to the byte buffer, `start <= end`.
    pub start: u64,
    pub end: u64,
}

/// A valid file's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// `N`: the header's length in bytes.
    pub len: u64,
    /// Tensors in header order.
    pub tensors: Vec<Tensor>,
    /// `__metadata__` in header order; `None` when absent or `null`.
    pub metadata: Option<Vec<(String, String)>>,
}

impl Header {
    /// Where the byte buffer starts in the file: `8 + N`.
    pub fn data_start(&self) -> u64 {
        LEN_BYTES + self.len
    }

    /// The absolute file range of tensor `t`'s bytes (validated: inside the
    /// file).
    pub fn file_range(&self, t: &Tensor) -> (u64, u64) {
        (self.data_start() + t.start, t.end - t.start)
    }
}

fn reject(rule: Rule, detail: impl Into<String>) -> Error {
    Error::reject(rule, detail)
}

/// Reads `N` and checks it: against the limit, then against the file.
pub fn header_len(file: &dyn Ranges) -> Result<u64> {
    let size = file.size();
    if size < LEN_BYTES {
        return Err(reject(
            Rule::SafetensorsHeaderBounds,
            format!("the file ({size} bytes) is shorter than the 8-byte header length"),
        ));
    }
    let head = file.get(0, LEN_BYTES)?;
    let n = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
    if n > MAX_HEADER_LEN {
        return Err(reject(
            Rule::SafetensorsHeaderTooLarge,
            format!("header length {n} is over the format's limit of {MAX_HEADER_LEN} bytes"),
        ));
    }
    // n <= MAX_HEADER_LEN: no overflow.
    if LEN_BYTES + n > size {
        return Err(reject(
            Rule::SafetensorsHeaderBounds,
            format!("header [8, +{n}) ends past the end of the file ({size} bytes)"),
        ));
    }
    Ok(n)
}

/// The header text, checked for length and UTF-8.
pub fn header_text(file: &dyn Ranges) -> Result<String> {
    let n = header_len(file)?;
    // Read once, by its own range: a remote file's header past what its
    // open read costs its bytes, not the blocks around them (kept in the
    // cache, a megabyte each for every file of a checkpoint).
    let bytes = file.get_small(LEN_BYTES, n)?.into_owned();
    String::from_utf8(bytes).map_err(|e| {
        reject(
            Rule::SafetensorsUtf8,
            format!(
                "the header is not UTF-8: invalid byte at header offset {}",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Parses the header text as JSON: `{` first, valid JSON, no repeated key.
pub fn parse_json(text: &str) -> Result<Json> {
    refuse_bom(text, "header", Rule::SafetensorsJson)?;
    if !text.starts_with('{') {
        let first = text.chars().next();
        return Err(reject(
            Rule::SafetensorsJson,
            format!("the header does not begin with '{{' but with {first:?}"),
        ));
    }
    json_of(
        text,
        "header",
        Rule::SafetensorsJson,
        Rule::SafetensorsDuplicateKey,
    )
}

/// Parses `text` (the `what`: header or index) as JSON, refusing invalid
/// JSON under `syntax` and a repeated key in one object under `repeated`.
pub(super) fn json_of(text: &str, what: &str, syntax: Rule, repeated: Rule) -> Result<Json> {
    refuse_bom(text, what, syntax)?;
    let json = Json::parse(text)
        .map_err(|e| reject(syntax, format!("the {what} is not valid JSON: {e}")))?;
    if let Some(k) = json.repeated_key() {
        return Err(reject(
            repeated,
            format!(
                "key {:?} occurs twice in one object of the {what}",
                truncate(k)
            ),
        ));
    }
    Ok(json)
}

/// A byte order mark is not JSON (RFC 8259 §8.1): the `safetensors` crate
/// (serde_json) and Python's `json.load` refuse one, so ztfs does too.
fn refuse_bom(text: &str, what: &str, syntax: Rule) -> Result<()> {
    if text.starts_with('\u{feff}') {
        return Err(reject(
            syntax,
            format!("the {what} begins with a UTF-8 byte order mark, which JSON text must not"),
        ));
    }
    Ok(())
}

/// Validates a whole file held in memory.
pub fn read_header(file: &[u8]) -> Result<Header> {
    read_header_from(&file)
}

/// Validates a file read by range: the header's two ranges are read, the
/// byte buffer is not (only its length matters).
pub fn read_header_from(file: &dyn Ranges) -> Result<Header> {
    let text = header_text(file)?;
    let len = text.len() as u64;
    let json = parse_json(&text)?;
    drop(text);
    let Json::Object(entries) = json else {
        // parse_json saw '{' first, so this is an object; kept for safety.
        return Err(reject(
            Rule::SafetensorsJson,
            "the header is not a JSON object",
        ));
    };
    // `__metadata__` first, wherever it is: the crate reads it while it
    // reads the map and checks the tensor entries afterwards.
    let (meta, entries): (Vec<_>, Vec<_>) =
        entries.into_iter().partition(|(k, _)| k == METADATA_KEY);
    let metadata = match meta.into_iter().next() {
        Some((_, value)) => parse_metadata(value)?,
        None => None,
    };
    let tensors = (entries.into_iter())
        .map(|(name, value)| parse_entry(name, value))
        .collect::<Result<Vec<_>>>()?;
    let data_len = check_offsets(&tensors)?;
    check_coverage(LEN_BYTES + len, data_len, file.size())?;
    Ok(Header {
        len,
        tensors,
        metadata,
    })
}

/// The tensors, `data_len` bytes from `data_start`, end where the file
/// (`size` bytes) ends.
fn check_coverage(data_start: u64, data_len: u64, size: u64) -> Result<()> {
    let end = data_len.checked_add(data_start);
    if end == Some(size) {
        return Ok(());
    }
    let what = if end.is_some_and(|e| e < size) {
        "the file has bytes after the last tensor"
    } else {
        "the tensors run past the end of the file"
    };
    Err(reject(
        Rule::SafetensorsCoverage,
        format!(
            "{what}: the byte buffer starts at {data_start} and the tensors cover {data_len} bytes of it, but the file is {size} bytes"
        ),
    ))
}

/// `__metadata__`: an object of strings, or `null` (no metadata).
fn parse_metadata(value: Json) -> Result<Option<Vec<(String, String)>>> {
    let entries = match value {
        Json::Null => return Ok(None),
        Json::Object(e) => e,
        other => {
            return Err(reject(
                Rule::SafetensorsMetadata,
                format!(
                    "{METADATA_KEY} is {}, not an object of strings",
                    other.type_name()
                ),
            ))
        }
    };
    entries
        .into_iter()
        .map(|(k, v)| match v {
            Json::String(s) => Ok((k, s)),
            other => Err(reject(
                Rule::SafetensorsMetadata,
                format!(
                    "{METADATA_KEY} entry {:?} is {}, not a string",
                    truncate(&k),
                    other.type_name()
                ),
            )),
        })
        .collect::<Result<_>>()
        .map(Some)
}

/// One tensor entry: an object with `dtype` (a known name), `shape` (an
/// array of u64) and `data_offsets` (two u64); other fields are ignored.
fn parse_entry(name: String, value: Json) -> Result<Tensor> {
    let shown = truncate(&name);
    let Json::Object(fields) = value else {
        return Err(bad_entry(
            shown,
            format!(
                "the entry is {}, not an object of dtype, shape and data_offsets",
                value.type_name()
            ),
        ));
    };
    let field = |key: &str| -> Result<&Json> {
        (fields.iter().find(|(k, _)| k == key).map(|(_, v)| v))
            .ok_or_else(|| bad_entry(shown, format!("missing field {key:?}")))
    };
    let dtype = field("dtype")?;
    let shape = u64_array(shown, "shape", field("shape")?)?;
    let offsets = u64_array(shown, "data_offsets", field("data_offsets")?)?;
    let [start, end] = offsets[..] else {
        let n = offsets.len();
        return Err(bad_entry(
            shown,
            format!("data_offsets has {n} items, not 2"),
        ));
    };
    let dtype = parse_dtype(shown, dtype)?;
    Ok(Tensor {
        name,
        dtype,
        shape,
        start,
        end,
    })
}

fn bad_entry(tensor: &str, what: String) -> Error {
    reject(Rule::SafetensorsEntry, format!("tensor {tensor:?}: {what}"))
}

/// A JSON array of integers in 0..2^64 (`key` of `tensor`'s entry).
fn u64_array(tensor: &str, key: &str, v: &Json) -> Result<Vec<u64>> {
    let Json::Array(items) = v else {
        return Err(bad_entry(
            tensor,
            format!("{key} is {}, not an array", v.type_name()),
        ));
    };
    let as_u64 = |i: &Json| match i {
        Json::Number(n) => n.as_u64(),
        _ => None,
    };
    (items.iter())
        .map(|i| {
            as_u64(i).ok_or_else(|| {
                let what = format!(
                    "{key} holds {} {}, not an integer in 0..2^64",
                    i.type_name(),
                    compact(i)
                );
                bad_entry(tensor, what)
            })
        })
        .collect()
}

/// A dtype: a JSON string that names one of [`Dtype::ALL`].
fn parse_dtype(tensor: &str, v: &Json) -> Result<Dtype> {
    let Json::String(name) = v else {
        return Err(bad_entry(
            tensor,
            format!("dtype is {}, not a string", v.type_name()),
        ));
    };
    Dtype::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Dtype::ALL.iter().map(|d| d.name()).collect();
        reject(
            Rule::SafetensorsDtype,
            format!(
                "tensor {tensor:?}: dtype {:?} is not one of {}",
                truncate(name),
                names.join(" ")
            ),
        )
    })
}

/// Walks the tensors in offset order: each starts where the previous one
/// ended (the first at 0), ends at or after its start, and is as long as
/// its shape and dtype say. Returns the byte buffer's length they cover.
fn check_offsets(tensors: &[Tensor]) -> Result<u64> {
    let mut order: Vec<&Tensor> = tensors.iter().collect();
    order.sort_by_key(|t| (t.start, t.end));
    let mut next = 0u64;
    for t in order {
        if t.start != next || t.end < t.start {
            let why = if t.end < t.start {
                "ends before it starts".to_string()
            } else if t.start > next {
                format!("leaves a gap: the bytes before it end at {next}")
            } else {
                format!("overlaps the bytes before it, which end at {next}")
            };
            return Err(reject(
                Rule::SafetensorsOffsets,
                format!(
                    "tensor {:?}: data_offsets [{}, {}] {why}",
                    truncate(&t.name),
                    t.start,
                    t.end
                ),
            ));
        }
        next = t.end;
        check_size(t)?;
    }
    Ok(next)
}

/// The element count times the dtype's bits is whole bytes, and as many as
/// the data offsets span.
fn check_size(t: &Tensor) -> Result<()> {
    let name = truncate(&t.name);
    let bits = (t.shape.iter())
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .and_then(|n| n.checked_mul(t.dtype.bits()));
    let Some(bits) = bits else {
        return Err(reject(
            Rule::SafetensorsSize,
            format!(
                "tensor {name:?}: shape {:?} of {} overflows 64 bits",
                t.shape,
                t.dtype.name()
            ),
        ));
    };
    if bits % 8 != 0 {
        return Err(reject(
            Rule::SafetensorsSize,
            format!(
                "tensor {name:?}: shape {:?} of {} is {bits} bits, not whole bytes",
                t.shape,
                t.dtype.name()
            ),
        ));
    }
    let len = t.end - t.start;
    if bits / 8 != len {
        return Err(reject(
            Rule::SafetensorsSize,
            format!(
                "tensor {name:?}: shape {:?} of {} is {} bytes, but data_offsets [{}, {}] span {len}",
                t.shape,
                t.dtype.name(),
                bits / 8,
                t.start,
                t.end
            ),
        ));
    }
    Ok(())
}

/// A name cut for a message.
fn truncate(s: &str) -> &str {
    crate::format::truncate(s, 80)
}

/// A short JSON rendering of a value, for a message.
fn compact(v: &Json) -> String {
    let mut s = String::new();
    crate::format::json::to_json(&v.to_value(), &mut s);
    if s.len() > 40 {
        format!("{}...", crate::format::truncate(&s, 40))
    } else {
        s
    }
}

/// Writes `manifest.json` of a safetensors file: its header as pretty
/// JSON through the lossless mapping every `manifest.json` uses, keys in
/// header order, `__metadata__` included, and a final newline. `text` is a
/// validated header; the same for an index (`index::manifest`).
pub fn write_manifest(text: &str, out: &mut dyn Sink) -> Result<()> {
    refuse_bom(text, "header", Rule::SafetensorsJson)?;
    pretty::write_pretty(text, out).map_err(|e| {
        reject(
            Rule::SafetensorsJson,
            format!("the header is not valid JSON: {e}"),
        )
    })?;
    out.push('\n');
    Ok(())
}
