//! Which reader opens a file: one table of magics and name patterns, and
//! the near-miss rule, in one place.
//!
//! A file goes to the reader of the format it plainly is, and is then
//! accepted or refused by that format's rules, so a broken safetensors file
//! is told what is wrong with it as safetensors, not as zTensor. In order:
//!
//! 1. a format's magic, exactly;
//! 2. a near miss of a magic (one byte off: `HRRYFILX`, `GGUG`), which is
//!    that format's file with a broken magic, refused by its magic rule;
//! 3. a foreign magic (a Hurray stream, `.npy`, zip, HDF5, zTensor v1):
//!    zTensor's reader, whose refusal [`foreign`] turns into what the file
//!    is;
//! 4. the shape of an index (`{` after JSON whitespace or a byte order
//!    mark, no control bytes) or of a safetensors file (8 bytes of header
//!    length, then the same), whatever the length says: a length of 2^32
//!    or more, a BOM or a file too short for zTensor is refused by
//!    safetensors' rules;
//! 5. a name pattern (`.safetensors`, `.gguf`, `.hrry`, `.index.json`), for
//!    a file too short or too broken to show its shape; `.onnx`, since
//!    protobuf has no magic, and `.xml` (an OpenVINO IR's graph);
//! 6. else zTensor.

use super::{gguf, hurray};

/// The reader a file goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Zt,
    Hurray,
    Gguf,
    Safetensors,
    SafetensorsIndex,
    /// A zip archive: a PyTorch checkpoint (or something else in a zip,
    /// told apart by its members).
    Zip,
    /// An ONNX model (`ModelProto`): protobuf has no magic, so by name.
    Onnx,
    /// An OpenVINO IR's `model.xml`, by name.
    OpenVino,
}

/// Each format with a magic, and the magic.
const MAGICS: [(Format, &[u8]); 4] = [
    (Format::Zt, &super::MAGIC),
    (Format::Zip, super::zip::MAGIC),
    (Format::Hurray, &hurray::FILE_MAGIC),
    (Format::Gguf, &gguf::MAGIC),
];

/// Magics of formats ztfs does not read, and what to call such a file.
const FOREIGN: [(&[u8], &str); 12] = [
    (b"PK\x05\x06", "an empty zip archive"),
    (
        &hurray::MAGIC,
        "a Hurray stream (a tensor descriptor and its data, no container)",
    ),
    (b"ZTEN", "an older zTensor (v1) file"),
    (
        super::npy::MAGIC,
        "a NumPy .npy file (`ztfs pack FILE.npy -o model.zt` makes a zTensor file of it)",
    ),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file"),
    (b"\x1f\x8b", "a gzip file (decompress it first: gunzip)"),
    (
        b"\x28\xb5\x2f\xfd",
        "a zstd-compressed file (decompress it first: zstd -d)",
    ),
    (
        b"\xfd7zXZ\x00",
        "an xz-compressed file (decompress it first: xz -d)",
    ),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (
        b"\x7fELF",
        "an ELF binary (a program or a library, not a model)",
    ),
    (b"%PDF-", "a PDF document"),
    (
        b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19",
        "a PyTorch checkpoint of the legacy format (torch.save with _use_new_zipfile_serialization=False, before torch 1.6): a bare pickle, which ztfs does not read; save it again with a torch of 1.6 or later",
    ),
];

/// File name endings, for files that show no magic or shape. The index's
/// comes before safetensors' (`model.safetensors.index.json`).
const NAMES: [(&str, Format); 7] = [
    (".index.json", Format::SafetensorsIndex),
    (".safetensors", Format::Safetensors),
    (".gguf", Format::Gguf),
    (".hrry", Format::Hurray),
    (".zt", Format::Zt),
    (".onnx", Format::Onnx),
    (".xml", Format::OpenVino),
];

const BOM: &[u8] = b"\xef\xbb\xbf";

/// The reader for a file whose first bytes are `head` (64 are enough) and
/// whose name (the last path component, a URL's without its query) is
/// `name`.
pub fn sniff(head: &[u8], name: &str) -> Format {
    if let Some(&(f, _)) = MAGICS.iter().find(|(_, m)| head.starts_with(m)) {
        return f;
    }
    let near = |m: &[u8]| {
        head.get(..m.len())
            .is_some_and(|h| h.iter().zip(m).filter(|(a, b)| a != b).count() == 1)
    };
    if let Some(&(f, _)) = MAGICS.iter().find(|(_, m)| near(m)) {
        return f;
    }
    if foreign_magic(head) {
        return Format::Zt;
    }
    // An index first: its first 8 bytes are text, a header length's are
    // not (below 2^56 its last byte is 0).
    if opens_json(head) && head.iter().all(|b| *b >= 0x20 || is_json_space(*b)) {
        return Format::SafetensorsIndex;
    }
    if head.len() > 8 && opens_json(&head[8..]) {
        return Format::Safetensors;
    }
    let by_name = NAMES.iter().find(|(end, _)| name.ends_with(end));
    by_name.map_or(Format::Zt, |&(_, f)| f)
}

/// Says what a file of a format ztfs does not read is, from its first
/// bytes `head`, when it is recognisable.
pub fn foreign(head: &[u8]) -> Option<String> {
    let known = FOREIGN.iter().find(|(m, _)| head.starts_with(m));
    let what = known.map(|(_, what)| *what).or_else(|| looks_like(head))?;
    Some(foreign_named(what))
}

/// The message for a file that is `what`, of a format ztfs does not read.
pub fn foreign_named(what: &str) -> String {
    format!(
        "this is {what}; ztfs reads zTensor v2 (.zt) files, \
         Hurray HRRYFILE containers, safetensors and GGUF files, \
         PyTorch checkpoints (torch.save's zip) and NumPy .npz archives"
    )
}

/// What a file with no magic of [`FOREIGN`] looks like from its first
/// bytes (up to [`HEAD`]): a tar archive, bzip2, an HTML page, an ONNX
/// model, JSON, text; `None` when it looks like none of them.
fn looks_like(head: &[u8]) -> Option<&'static str> {
    if head.get(257..262) == Some(b"ustar") {
        return Some("a tar archive (unpack it first: tar xf)");
    }
    if head.len() >= 4 && head.starts_with(b"BZh") && (b'1'..=b'9').contains(&head[3]) {
        return Some("a bzip2-compressed file (decompress it first: bunzip2)");
    }
    // ONNX's ModelProto starts with its ir_version (field 1, a small
    // varint), then a string field: what protobuf writes first.
    if head.len() >= 3 && head[0] == 0x08 && head[1] < 0x20 && head[2] & 0x07 == 2 {
        return Some("an ONNX model (protobuf)");
    }
    let text = head.strip_prefix(BOM).unwrap_or(head);
    // A text whose last character may be cut by the head's end.
    let valid = match std::str::from_utf8(text) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&text[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    let printable = valid
        .chars()
        .all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'));
    if !printable || valid.trim().is_empty() {
        return None;
    }
    let start = valid.trim_start().to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        return Some("an HTML page (a web page saved in place of the model? check its URL)");
    }
    if start.starts_with('{') || start.starts_with('[') {
        return Some("a JSON file");
    }
    Some("a text file")
}

/// Bytes of a file's beginning that [`sniff`] and [`foreign`] look at
/// (a tar archive's magic is at 257).
pub const HEAD: u64 = 512;

/// True when `head` starts with a magic of [`FOREIGN`]: one of fewer than
/// 4 bytes (gzip's) only where the file does not have a safetensors
/// file's shape, whose header length may begin with the same bytes.
fn foreign_magic(head: &[u8]) -> bool {
    let shaped = head.len() > 8 && opens_json(&head[8..]);
    FOREIGN
        .iter()
        .any(|(m, _)| head.starts_with(m) && (m.len() >= 4 || !shaped))
}

/// True when `text` begins, after an optional byte order mark and JSON
/// whitespace, with `{`.
fn opens_json(text: &[u8]) -> bool {
    let text = text.strip_prefix(BOM).unwrap_or(text);
    text.iter().find(|b| !is_json_space(**b)) == Some(&b'{')
}

fn is_json_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

#[cfg(test)]
mod tests;
