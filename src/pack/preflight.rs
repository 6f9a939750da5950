//! Refusing, before any byte is copied, a source whose output `ztfs
//! check` would reject: the manifest the pack will write, but for
//! placement (each part raw and whole, one after another from 4096, in
//! one file) and digests (none), is read back by the reader's own code
//! (`format::read_container_from`) as a file holding it. The rules a
//! source's format lacks (a rank above 64, file attribute names) are found
//! in a second, not after the model is copied.
//!
//! This is an early answer, not the guarantee: the written root is
//! validated again before it is published (`out.rs`).

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::format::manifest::{BlobRef, Manifest, Object, Part};
use crate::format::{write, Ranges, ALIGN, FOOTER_LEN, MAGIC};

use super::Source;

/// Checks the manifest `source` would give (with `attributes`) as `ztfs
/// check` reads it.
pub fn check_writable(source: &Source, attributes: &Option<Vec<u8>>) -> Result<()> {
    let mut end = ALIGN;
    let mut objects = Vec::new();
    for object in source.objects_in_canonical_order() {
        let mut parts = Vec::new();
        for part in source.parts_in_canonical_order(object) {
            let length = part.decoded_size();
            parts.push(Part {
                blob: BlobRef {
                    offset: end,
                    length,
                    shard: None,
                },
                encoding: None,
                decoded: 0,
                digest: None,
                ..part.clone()
            });
            // Past 2^64 bytes there is no file to write (the pack will say).
            let Some(next) = end
                .checked_add(length)
                .and_then(|e| e.checked_next_multiple_of(ALIGN))
            else {
                return Ok(());
            };
            end = next;
        }
        objects.push(Object {
            parts: parts.into(),
            ..object.clone()
        });
    }
    let manifest = Manifest {
        objects,
        shards: None,
        attributes: attributes.clone(),
    };
    crate::format::read_container_from(&Sketch::of(&manifest, end)).map(|_| ())
}

/// A file of a manifest at `manifest_at` and its footer, whose other bytes
/// (the blobs) are never read.
struct Sketch {
    manifest_at: u64,
    manifest: Vec<u8>,
    footer: [u8; FOOTER_LEN as usize],
}

impl Sketch {
    fn of(m: &Manifest, manifest_at: u64) -> Sketch {
        let manifest = write::manifest_bytes(m);
        let hash = xxhash_rust::xxh3::xxh3_64(&manifest);
        let footer = write::footer(manifest_at, manifest.len() as u64, hash);
        Sketch {
            manifest_at,
            manifest,
            footer,
        }
    }
}

impl Ranges for Sketch {
    fn size(&self) -> u64 {
        self.manifest_at + self.manifest.len() as u64 + FOOTER_LEN
    }

    fn get(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        let footer_at = self.size() - FOOTER_LEN;
        match (offset, len) {
            (0, 8) => Ok(Cow::Borrowed(&MAGIC[..])),
            (o, _) if o == footer_at && len == FOOTER_LEN => Ok(Cow::Borrowed(&self.footer[..])),
            (o, l) if o == self.manifest_at && l == self.manifest.len() as u64 => {
                Ok(Cow::Borrowed(&self.manifest))
            }
            _ => Err(Error::Unsupported(format!(
                "range [{offset}, +{len}) of a sketch of the output: only its magic, manifest and footer are there"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sketch of a valid manifest reads back; one with a rank-65
    /// object is rejected by check's rule.
    #[test]
    fn a_sketch_is_read_by_the_reader_s_rules() {
        let mut texts = crate::format::text::Texts::default();
        let object = |rank: usize, texts: &mut crate::format::text::Texts| Object {
            name: "w".into(),
            shape: texts.shape(&vec![1; rank]),
            layout: texts.get("dense"),
            attributes: None,
            parts: smallvec::smallvec![Part::raw(
                texts.get("data"),
                crate::format::types::ElementType {
                    dtype: crate::format::DType::U8,
                    logical: None,
                },
                4096,
                1,
            )],
        };
        let m = |rank, texts: &mut _| Manifest {
            objects: vec![object(rank, texts)],
            shards: None,
            attributes: None,
        };
        let ok = m(64, &mut texts);
        assert!(crate::format::read_container_from(&Sketch::of(&ok, 8192)).is_ok());
        let bad = m(65, &mut texts);
        let e = crate::format::read_container_from(&Sketch::of(&bad, 8192)).unwrap_err();
        assert!(
            matches!(e, Error::Reject { rule, .. } if rule == crate::error::Rule::Shape),
            "{e}"
        );
    }
}
