//! The format layer: pure bytes in, typed values out. No files, no mmap.
//!
//! [`read_container`] takes the bytes of a whole `.zt` file and either returns
//! what they mean or the first rule they break, in the order the public
//! implementation checks them (IMPLEMENTER-NOTES §1), so two readers report
//! the same rule for the same file. Everything here is pure: it can be called
//! from a test with a byte literal or from a fuzz target.

pub mod cbor;
pub mod footer;
pub mod gguf;
pub mod hurray;
pub mod json;
pub mod manifest;
pub mod manifest_json;
pub mod npy;
pub mod npz;
pub mod onnx;
pub mod openvino;
pub mod prefetch;
pub mod profiles;
pub mod protobuf;
pub mod pytorch;
pub mod safetensors;
pub mod sniff;
pub mod text;
pub mod types;
pub mod validate;
pub mod write;
pub mod zip;

pub use footer::Footer;
pub use manifest::{shape, BlobRef, Digest, Manifest, Object, Part, Shape, Shard};
pub use text::Text;
pub use types::{DType, LogicalType};

use crate::error::{Error, Result, Rule};

/// Magic bytes at offset 0 and at the end of the footer (§2.2).
pub const MAGIC: [u8; 8] = [0x89, b'Z', b'T', b'2', 0x0d, 0x0a, 0x1a, 0x0a];
/// The footer version this reader implements (§2.3).
pub const VERSION: u32 = 2;
/// Footer size in bytes (§2.3).
pub const FOOTER_LEN: u64 = 40;
/// Smallest file: magic plus footer, in bytes (§2.1).
pub const MIN_FILE_LEN: u64 = MAGIC.len() as u64 + FOOTER_LEN;
/// Alignment floor for every blob offset, in bytes (§2.4).
pub const ALIGN: u64 = 4096;
/// Largest manifest, in bytes (§3.1).
pub const MAX_MANIFEST_LEN: u64 = 1 << 30;
/// Longest object, part or attribute name, in bytes (§3.5).
pub const MAX_NAME_LEN: usize = 1024;
/// Longest shard name, in bytes (§7.1).
pub const MAX_SHARD_NAME_LEN: usize = 64;
/// Highest shape rank (§3.3).
pub const MAX_RANK: usize = 64;

/// What a valid file is.
#[derive(Debug)]
pub enum Container {
    /// A file with a manifest: a model, or a file that may also serve as a
    /// shard of another.
    Model(Manifest),
    /// A data shard: no manifest, nothing to list (§7.2).
    DataShard,
}

/// A file's bytes by range: a whole file in memory, or a source that
/// fetches what is asked (a remote object). Parsing reads only the ranges
/// it needs (magic, footer, manifest), so a remote file opens with a few
/// requests.
pub trait Ranges {
    /// The file's length in bytes.
    fn size(&self) -> u64;
    /// `len` bytes at `offset`; an error when the range is outside the
    /// file or cannot be read.
    fn get(&self, offset: u64, len: u64) -> Result<std::borrow::Cow<'_, [u8]>>;
    /// [`Ranges::get`] of bytes read once, far from anything read soon (a
    /// zip member's local header, a safetensors header): a remote source
    /// fetches just them rather than the blocks around them.
    fn get_small(&self, offset: u64, len: u64) -> Result<std::borrow::Cow<'_, [u8]>> {
        self.get(offset, len)
    }
    /// All the bytes, when they are in memory already (a slice, a map):
    /// a reader of many small ranges (a computed view) reads them there,
    /// and one that would fetch the ranges asks [`Ranges::get`] for each.
    fn in_memory(&self) -> Option<&[u8]> {
        None
    }
}

impl Ranges for &[u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn in_memory(&self) -> Option<&[u8]> {
        Some(self)
    }

    fn get(&self, offset: u64, len: u64) -> Result<std::borrow::Cow<'_, [u8]>> {
        let range = (offset.checked_add(len))
            .filter(|&end| end <= self.size())
            .map(|end| offset as usize..end as usize);
        match range {
            Some(r) => Ok(std::borrow::Cow::Borrowed(&self[r])),
            None => Err(Error::Unsupported(format!(
                "range [{offset}, +{len}) is outside the file ({} bytes)",
                self.len()
            ))),
        }
    }
}

/// Validates a whole file held in memory: footer, manifest bounds, hash,
/// strict CBOR, schema and every §3.6 check (§8 steps 1–6).
pub fn read_container(file: &[u8]) -> Result<Container> {
    read_container_from(&file)
}

/// [`read_container`] of a file read by range.
pub fn read_container_from(file: &dyn Ranges) -> Result<Container> {
    let footer = Footer::parse_from(file)?;
    let Some(range) = footer.manifest_range(file.size())? else {
        return Ok(Container::DataShard);
    };
    // The range was checked against the file length by manifest_range.
    let bytes = file.get(range.start, range.end - range.start)?;
    footer.check_hash(&bytes)?;
    let manifest = Manifest::parse(&bytes)?;
    validate::check_manifest(&manifest, file.size(), &footer)?;
    Ok(Container::Model(manifest))
}

/// Most entries reserved ahead for a count read from a file or a server;
/// past it a vector grows as its entries are read. A count checked against
/// the bytes left is still only a claim: a sparse file or a remote object
/// has terabytes of "bytes left" it never stores, so memory must follow
/// what is read, never what is claimed (tests/claims.rs).
pub const MAX_RESERVE_AHEAD: u64 = 4096;

/// What to reserve for `count` entries claimed by a file or a server.
pub fn reserve_ahead(count: u64) -> usize {
    count.min(MAX_RESERVE_AHEAD) as usize
}

/// Checks a name against §3.5: non-empty, at most 1024 bytes, no U+0000.
/// `what` says which kind of name it is, for the message.
pub fn check_name(name: &str, what: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::reject(Rule::Name, format!("empty {what} name")));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::reject(
            Rule::Name,
            format!(
                "{what} name of {} bytes is longer than {MAX_NAME_LEN}: {:?}...",
                name.len(),
                truncate(name, 40)
            ),
        ));
    }
    if name.contains('\0') {
        return Err(Error::reject(
            Rule::Name,
            format!("{what} name {name:?} contains U+0000"),
        ));
    }
    Ok(())
}

/// Checks a shard name against §7.1.
pub fn check_shard_name(name: &str) -> Result<()> {
    let ok_char = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-');
    let ok = !name.is_empty()
        && name.len() <= MAX_SHARD_NAME_LEN
        && !name.starts_with('.')
        && name.bytes().all(ok_char);
    if ok {
        Ok(())
    } else {
        Err(Error::reject(
            Rule::ShardName,
            format!(
                "shard name {name:?} is not 1..=64 bytes of [A-Za-z0-9._-] without a leading '.'"
            ),
        ))
    }
}

/// The first `max` bytes of `s`, cut at a character boundary.
pub fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
