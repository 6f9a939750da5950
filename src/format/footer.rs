//! The 40-byte footer (§2.3) and the checks that come before the manifest is
//! parsed, in the public implementation's order (IMPLEMENTER-NOTES §1).

use std::ops::Range;

use super::{ALIGN, FOOTER_LEN, MAGIC, MAX_MANIFEST_LEN, MIN_FILE_LEN, VERSION};
use crate::error::{Error, Result, Rule};

/// The decoded footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Absolute offset of the manifest blob, 0 in a data shard.
    pub manifest_offset: u64,
    /// Length of the manifest blob, 0 in a data shard.
    pub manifest_length: u64,
    /// XXH3-64 (seed 0) of the manifest bytes, 0 in a data shard.
    pub manifest_hash: u64,
    /// Footer version; only 2 gets past [`Footer::parse`].
    pub version: u32,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

impl Footer {
    /// Checks size, both magics and the version, and decodes the footer.
    /// The reserved word is never read (§2.3).
    pub fn parse(file: &[u8]) -> Result<Footer> {
        Footer::parse_from(&file)
    }

    /// [`Footer::parse`] of a file read by range: its first 8 bytes and
    /// its last 40.
    pub fn parse_from(file: &dyn super::Ranges) -> Result<Footer> {
        let len = file.size();
        if len < MIN_FILE_LEN {
            return Err(Error::reject(
                Rule::FileTooSmall,
                format!("file of {len} bytes is shorter than {MIN_FILE_LEN}"),
            ));
        }
        let head = file.get(0, 8)?;
        if head[..] != MAGIC {
            return Err(Error::reject(
                Rule::HeaderMagic,
                format!("header magic {:02x?} is not {:02x?}", &head[..], MAGIC),
            ));
        }
        let foot = file.get(len - FOOTER_LEN, FOOTER_LEN)?;
        let foot = &foot[..];
        if foot[32..40] != MAGIC {
            return Err(Error::reject(
                Rule::FooterMagic,
                format!(
                    "footer magic {:02x?} is not {:02x?} (a footer not at the end of the file, after a crashed append, is invalid)",
                    &foot[32..40],
                    MAGIC
                ),
            ));
        }
        let version = u32::from_le_bytes([foot[24], foot[25], foot[26], foot[27]]);
        if version != VERSION {
            return Err(Error::reject(
                Rule::Version,
                format!("footer version {version} is not {VERSION}"),
            ));
        }
        Ok(Footer {
            manifest_offset: u64_at(foot, 0),
            manifest_length: u64_at(foot, 8),
            manifest_hash: u64_at(foot, 16),
            version,
        })
    }

    /// The manifest's byte range within a file of `file_len` bytes, or `None`
    /// for a data shard. Checks the cap before the bounds, and alignment
    /// before bounds, as the public implementation does.
    pub fn manifest_range(&self, file_len: u64) -> Result<Option<Range<u64>>> {
        let (off, len) = (self.manifest_offset, self.manifest_length);
        if len == 0 {
            if off != 0 || self.manifest_hash != 0 {
                return Err(Error::reject(
                    Rule::ManifestBounds,
                    format!(
                        "data shard footer (manifest_length 0) has manifest_offset {off} and manifest_hash {:#018x}; both must be 0",
                        self.manifest_hash
                    ),
                ));
            }
            return Ok(None);
        }
        if len > MAX_MANIFEST_LEN {
            return Err(Error::reject(
                Rule::ManifestTooLarge,
                format!("manifest_length {len} exceeds the cap of {MAX_MANIFEST_LEN} bytes"),
            ));
        }
        if off % ALIGN != 0 || off < ALIGN {
            return Err(Error::reject(
                Rule::BlobAlignment,
                format!("manifest_offset {off} is not a multiple of {ALIGN} at or above {ALIGN}"),
            ));
        }
        let region = file_len - FOOTER_LEN;
        match off.checked_add(len) {
            Some(end) if end <= region => Ok(Some(off..end)),
            _ => Err(Error::reject(
                Rule::ManifestBounds,
                format!("manifest [{off}, +{len}) ends past the data region ({region})"),
            )),
        }
    }

    /// Checks the manifest bytes against the footer's XXH3-64.
    pub fn check_hash(&self, manifest: &[u8]) -> Result<()> {
        let got = xxhash_rust::xxh3::xxh3_64(manifest);
        if got == self.manifest_hash {
            Ok(())
        } else {
            Err(Error::reject(
                Rule::ManifestHash,
                format!(
                    "manifest hashes to {got:#018x}, footer says {:#018x}",
                    self.manifest_hash
                ),
            ))
        }
    }
}
