//! An opened model: the root file validated, its manifest, and its shards
//! resolved lazily by the positional convention (Appendix B) on first use.
//!
//! Opening validates the root alone, so local parts stay readable when a
//! shard is missing (notes §4 item 10). A shard is checked on first use:
//! its size against the table, and its container structure.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::{Error, Result, Rule};
use crate::format::{self, Container, Footer, Manifest, Part};
use crate::store::Store;

/// A validated root file and its lazily opened shards.
pub struct Model {
    root: Store,
    footer: Footer,
    manifest: Option<Manifest>,
    shards: Vec<OnceLock<std::result::Result<Store, ShardError>>>,
}

/// Why a shard could not be used, kept so every later use reports it again.
#[derive(Debug, Clone)]
struct ShardError {
    rule: Option<Rule>,
    detail: String,
}

impl Model {
    /// Opens and fully validates `path` (§8 steps 1–6).
    pub fn open(path: &Path) -> Result<Model> {
        let root = Store::open(path)?;
        let bytes = root.bytes();
        let container = format::read_container(bytes).map_err(|e| match e.rule() {
            Some(Rule::FileTooSmall | Rule::HeaderMagic | Rule::FooterMagic) => {
                format::sniff_foreign(bytes).map_or(e, Error::Foreign)
            }
            _ => e,
        })?;
        let footer = Footer::parse(bytes)?;
        let manifest = match container {
            Container::Model(m) => Some(m),
            Container::DataShard => None,
        };
        let n = manifest
            .as_ref()
            .and_then(|m| m.shards.as_ref())
            .map_or(0, Vec::len);
        Ok(Model {
            root,
            footer,
            manifest,
            shards: (0..n).map(|_| OnceLock::new()).collect(),
        })
    }

    /// The manifest; `None` for a data shard.
    pub fn manifest(&self) -> Option<&Manifest> {
        self.manifest.as_ref()
    }

    /// The root file.
    pub fn root(&self) -> &Store {
        &self.root
    }

    /// The raw manifest bytes (empty for a data shard).
    pub fn manifest_bytes(&self) -> &[u8] {
        let (off, len) = (self.footer.manifest_offset, self.footer.manifest_length);
        // Validated at open.
        self.root.slice(off, len).unwrap_or_default()
    }

    /// The stored bytes of a part, from the root or its shard.
    pub fn stored(&self, part: &Part) -> Result<&[u8]> {
        self.store_of(part)?
            .slice(part.blob.offset, part.blob.length)
    }

    /// The file holding a part's stored bytes.
    pub fn store_of(&self, part: &Part) -> Result<&Store> {
        match &part.blob.shard {
            None => Ok(&self.root),
            Some(name) => self.shard(name),
        }
    }

    /// The opened shard `name`, resolving it on first use.
    pub fn shard(&self, name: &str) -> Result<&Store> {
        let (i, entry) = self
            .manifest
            .as_ref()
            .and_then(|m| m.shards.as_ref())
            .and_then(|s| s.iter().enumerate().find(|(_, s)| s.name == name))
            .ok_or_else(|| Error::NotFound(format!("shard {name:?}")))?;
        let slot = self.shards[i].get_or_init(|| {
            let path = self.shard_path(name);
            open_shard(&path, entry.size).map_err(|e| ShardError {
                rule: e.rule(),
                detail: format!("shard {name:?} at {}: {e}", path.display()),
            })
        });
        slot.as_ref().map_err(|e| match e.rule {
            Some(rule) => Error::reject(rule, e.detail.clone()),
            None => Error::Unsupported(format!("{} (the part cannot be read)", e.detail)),
        })
    }

    /// Where the positional convention looks for shard `name`:
    /// `<dir>/<stem>-<name>.zt` beside the root.
    pub fn shard_path(&self, name: &str) -> PathBuf {
        let root = self.root.path();
        let stem = root
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        root.with_file_name(format!("{stem}-{name}.zt"))
    }
}

fn open_shard(path: &Path, size: u64) -> Result<Store> {
    let store = Store::open(path)?;
    if store.len() != size {
        return Err(Error::reject(
            Rule::ShardIdentity,
            format!("file is {} bytes, the shard table says {size}", store.len()),
        ));
    }
    format::read_container(store.bytes())?;
    Ok(store)
}
