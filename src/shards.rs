//! Resolving a shard name to a file (Appendix B): an explicit `--shard
//! NAME=PATH` first, then the positional convention `<stem>-<name>.zt`
//! beside the root, then identity: a file in the root's folder with the
//! declared size and whole-file digest.
//!
//! A resolved shard is a valid container of exactly the declared size
//! (§7.3 rungs 1 and 2); its whole-file digest (rung 3) is checked by
//! identity resolution and by `verify_digest`.

use std::path::{Path, PathBuf};

use crate::digest::{self, Algo, Hasher};
use crate::error::{Error, Result, Rule};
use crate::format::{self, Shard};
use crate::store::Store;

/// How a shard was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Named on the command line.
    Override,
    /// `<stem>-<name>.zt` beside the root.
    Positional,
    /// A file in the root's folder with the declared size and digest.
    Identity,
}

/// A resolved, opened shard.
pub struct Resolved {
    /// The open file.
    pub store: Store,
    /// How it was found.
    pub found: Found,
}

/// Where the positional convention looks for shard `name` of `root`.
/// A root given by a URL with a query lends the query to its shards'
/// URLs (`store::beside`).
pub fn positional_path(root: &Path, name: &str) -> PathBuf {
    let file = crate::store::url_query(root).map_or(root, |(url, _)| Path::new(url));
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = crate::store::plain_name(root, &stem);
    crate::store::beside(root, &format!("{stem}-{name}.zt"))
}

/// Finds and opens `shard` of the model at `root`, one of its `files`
/// files. The error says every place that was tried and why each failed;
/// an open refused for the limit on open files says that alone (no other
/// open would do better).
pub fn resolve(
    root: &Path,
    shard: &Shard,
    overrides: &[(String, PathBuf)],
    files: usize,
) -> Result<Resolved> {
    if let Some((_, path)) = overrides.iter().find(|(n, _)| *n == shard.name) {
        return open_checked(path, shard, files)
            .map(|store| Resolved {
                store,
                found: Found::Override,
            })
            .map_err(|e| {
                // The detail names the path already.
                let detail = format!(
                    "shard {:?} is unavailable (given with --shard): {}",
                    shard.name,
                    e.detail()
                );
                match e.rule() {
                    Some(rule) => Error::reject(rule, detail),
                    None => Error::Unsupported(detail),
                }
            });
    }
    let pos = positional_path(root, &shard.name);
    let first = match open_checked(&pos, shard, files) {
        Ok(store) => {
            return Ok(Resolved {
                store,
                found: Found::Positional,
            })
        }
        Err(e) if e.is_open_limit() => return Err(e),
        Err(e) => e,
    };
    // A server lists nothing: a remote root's shards are found by name only.
    if crate::store::remote::url_of(root).is_some() {
        let detail = format!(
            "shard {:?} is unavailable: {} ({})",
            shard.name,
            crate::store::shown(&pos),
            first.detail()
        );
        return Err(match first.rule() {
            Some(rule) => Error::reject(rule, detail),
            None => Error::Unsupported(detail),
        });
    }
    if let Some(store) = find_by_identity(root, shard, files)? {
        return Ok(Resolved {
            store,
            found: Found::Identity,
        });
    }
    let detail = format!(
        "shard {:?} is unavailable: {} ({}), and no file in {} has its size ({} bytes) and digest",
        shard.name,
        crate::store::shown(&pos),
        first.detail(),
        folder(root).display(),
        shard.size
    );
    Err(match first.rule() {
        Some(rule) => Error::reject(rule, detail),
        None => Error::Unsupported(detail),
    })
}

/// Opens `path` as `shard`, one of a model's `files` files: exactly the
/// declared size and a valid container.
fn open_checked(path: &Path, shard: &Shard, files: usize) -> Result<Store> {
    let store = Store::open_one_of(path, files, crate::store::Open::Any)?;
    if store.len() != shard.size {
        return Err(Error::reject(
            Rule::ShardIdentity,
            format!(
                "{} is {} bytes, the shard table says {}",
                path.display(),
                store.len(),
                shard.size
            ),
        ));
    }
    format::read_container_from(&store)?;
    Ok(store)
}

/// Scans the root's folder for a `.zt` file of the declared size whose
/// whole-file digest matches.
fn find_by_identity(root: &Path, shard: &Shard, files: usize) -> Result<Option<Store>> {
    let algo = Algo::of(&shard.digest)?;
    let Ok(entries) = std::fs::read_dir(folder(root)) else {
        return Ok(None);
    };
    let mut candidates: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.metadata()
                .is_ok_and(|m| m.is_file() && m.len() == shard.size)
        })
        .map(|e| e.path())
        .collect();
    candidates.sort();
    for path in candidates {
        let Ok(store) = open_checked(&path, shard, files) else {
            continue;
        };
        if file_digest(&store, algo, &mut |_| {})? == shard.digest {
            return Ok(Some(store));
        }
    }
    Ok(None)
}

/// The folder holding the root file.
fn folder(root: &Path) -> &Path {
    root.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The whole-file digest of a store, reporting progress in bytes.
pub fn file_digest(store: &Store, algo: Algo, progress: &mut dyn FnMut(u64)) -> Result<String> {
    let mut h = Hasher::new(algo);
    store.for_each_chunk(8 << 20, &mut |chunk| {
        h.update(chunk);
        progress(chunk.len() as u64);
    })?;
    Ok(h.finish())
}

/// Checks a resolved shard's whole-file digest (§7.3 rung 3).
pub fn verify_digest(store: &Store, shard: &Shard, progress: &mut dyn FnMut(u64)) -> Result<()> {
    let algo = Algo::of(&shard.digest)?;
    let got = file_digest(store, algo, progress)?;
    digest::check(
        &shard.digest,
        &got,
        &format!("shard {:?} ({})", shard.name, store.name()),
    )
    .map_err(|_| {
        Error::reject(
            Rule::ShardIdentity,
            format!(
                "shard {:?} ({}) hashes to {got}, the shard table says {}",
                shard.name,
                store.name(),
                shard.digest
            ),
        )
    })
}
