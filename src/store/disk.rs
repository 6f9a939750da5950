//! The disk cache of remote blocks (`--cache-dir`, `--cache-size`): one
//! directory shared by every remote object a process reads, so a model
//! read once is read again from local disk, by this mount or a later one.
//!
//! The directory is the effective user's, writable by no one else, and
//! holds a secret key file made when ztfs first used it, empty (`disk/secret.rs`
//! says what is refused). A block is a file `ztfs-block-<64 hex>`, named by
//! a hash of its object's identity (URL, ETag, size, modification time)
//! and its index, so a changed object never finds its old blocks. Each
//! file holds a header (magic, that hash again, the length, an HMAC-SHA256
//! keyed by the cache's secret over those and the bytes) and the bytes,
//! and is checked on every read back: a torn, truncated, altered or
//! planted file (whoever wrote it without the secret) is deleted and its
//! block fetched again. Files are written under a temporary name
//! (`ztfs-tmp.*`) and renamed, so a reader never sees half of one. The
//! least recently used blocks are deleted past the budget; the order
//! survives the process in the files' modification times. Two mounts may
//! share a directory: each checks what it reads, but each counts the
//! budget alone.
//!
//! ztfs deletes only its own files: block files by name (and, past the
//! budget, only after their magic is read again), and its temporaries
//! left for an hour; nothing else in the directory is touched.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use hmac::Mac as _;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

mod secret;

use secret::Secret;

const MAGIC: &[u8; 8] = b"ZTFSBLK2";
/// Magic, key, length, MAC.
const HEADER: usize = 8 + 32 + 8 + 32;
/// A block file's name: this prefix and its key in hex.
const BLOCK_PREFIX: &str = "ztfs-block-";
/// A temporary file's name begins so.
const TMP_PREFIX: &str = "ztfs-tmp.";
/// Temporary files older than this are a crashed writer's and removed.
const STALE_TMP: std::time::Duration = std::time::Duration::from_secs(3600);
/// Numbers the process's temporary files.
static TMP: AtomicU64 = AtomicU64::new(0);

type Hmac = hmac::Hmac<Sha256>;

/// A block's name in the cache: what identifies its bytes.
pub type Key = [u8; 32];

/// The key of block `index` of the object identified by `object`.
pub fn key(object: &[u8; 32], index: u64) -> Key {
    let mut h = Sha256::new();
    h.update(object);
    h.update(index.to_le_bytes());
    h.finalize().into()
}

/// An object's identity for the cache: everything its pin holds.
pub fn object_id(url: &str, etag: Option<&str>, len: u64, modified: i64) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [url, etag.unwrap_or("")] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.update(len.to_le_bytes());
    h.update(modified.to_le_bytes());
    h.finalize().into()
}

/// The process's disk cache, when one was asked for.
static CACHE: OnceLock<Arc<Disk>> = OnceLock::new();

/// Uses `dir` as this process's disk cache, keeping at most `budget` bytes
/// of blocks (headers included). Made once, before any remote object is
/// opened.
pub fn configure(dir: &Path, budget: u64) -> Result<()> {
    let disk = Disk::open(dir, budget)?;
    CACHE
        .set(Arc::new(disk))
        .map_err(|_| Error::Usage("the disk cache is already set".into()))
}

/// The process's disk cache, which [`crate::store::remote::Remote::open`]
/// hands each object it opens.
pub fn cache() -> Option<Arc<Disk>> {
    CACHE.get().cloned()
}

/// A cache directory and what it holds.
pub struct Disk {
    dir: PathBuf,
    budget: u64,
    secret: Secret,
    index: Mutex<Index>,
    /// Blocks read back, and blocks asked for and not held (`ztfs status`).
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Default)]
struct Index {
    /// Each file's size and when it was last used.
    entries: HashMap<Key, (u64, u64)>,
    held: u64,
    clock: u64,
}

impl Disk {
    /// Blocks read back from the cache so far, and blocks asked of it
    /// that it did not give.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Opens (making it if needed) the cache in `dir`, refusing a
    /// directory that is not ztfs's alone, and lists what it holds, oldest
    /// first by modification time.
    pub fn open(dir: &Path, budget: u64) -> Result<Disk> {
        let ctx = || format!("cache directory {}", dir.display());
        if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
            return Err(Error::Usage(format!(
                "{}: the cache directory is not a directory",
                dir.display()
            )));
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::io(ctx(), e))?;
        // A daemon works from `/`: a relative path would move.
        let dir = &std::fs::canonicalize(dir).map_err(|e| Error::io(ctx(), e))?;
        secret::check_dir(dir)?;
        let secret = secret::secret(dir, &tmp_path(dir), |n| n.starts_with(TMP_PREFIX))?;
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io(ctx(), e))? {
            let entry = entry.map_err(|e| Error::io(ctx(), e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Ok(meta) = entry.metadata() else { continue };
            let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            if name.starts_with(TMP_PREFIX) {
                let old = modified.elapsed().is_ok_and(|age| age > STALE_TMP);
                if old {
                    let _ = std::fs::remove_file(entry.path());
                }
            } else if let Some(key) = parse_name(name) {
                found.push((modified, key, meta.len()));
            }
        }
        found.sort();
        let mut index = Index::default();
        for (_, key, len) in found {
            index.clock += 1;
            index.entries.insert(key, (len, index.clock));
            index.held += len;
        }
        let disk = Disk {
            dir: dir.to_path_buf(),
            budget,
            secret,
            index: Mutex::new(index),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        };
        disk.evict(None);
        log::debug!(
            "{}: disk cache of {} bytes at most, {} held",
            dir.display(),
            budget,
            disk.locked().held
        );
        Ok(disk)
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn path(&self, key: &Key) -> PathBuf {
        self.dir.join(format!("{BLOCK_PREFIX}{}", hex(key)))
    }

    /// True when the cache lists block `key`.
    pub fn has(&self, key: &Key) -> bool {
        self.locked().entries.contains_key(key)
    }

    /// Block `key` of `len` bytes, read into `buf` (cleared first), if the
    /// cache holds it and it passes its checks; a file that fails them is
    /// deleted.
    pub fn get(&self, key: &Key, len: u64, mut buf: Vec<u8>) -> Option<Vec<u8>> {
        {
            let mut index = self.locked();
            index.clock += 1;
            let clock = index.clock;
            let Some(entry) = index.entries.get_mut(key) else {
                self.misses.fetch_add(1, Ordering::Relaxed);
                return None;
            };
            entry.1 = clock;
        }
        let path = self.path(key);
        match read_entry(&path, &self.secret, key, len, &mut buf) {
            Ok(()) => {
                // The order of use, for the next process that opens the cache.
                let _ =
                    File::open(&path).and_then(|f| f.set_modified(std::time::SystemTime::now()));
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(buf)
            }
            Err(why) => {
                if why.kind() != std::io::ErrorKind::NotFound {
                    log::warn!("{}: cached block dropped: {why}", path.display());
                }
                let _ = std::fs::remove_file(&path);
                self.forget(key);
                self.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Keeps `bytes` as block `key`, then deletes the least recently used
    /// blocks past the budget. A failure to write (a full disk) is logged
    /// and leaves the block uncached.
    pub fn put(&self, key: &Key, bytes: &[u8]) {
        let size = (HEADER + bytes.len()) as u64;
        if size > self.budget || self.has(key) {
            return;
        }
        let tmp = tmp_path(&self.dir);
        let written = write_entry(&tmp, &self.secret, key, bytes)
            .and_then(|()| std::fs::rename(&tmp, self.path(key)));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            log::warn!("{}: a block was not cached: {e}", self.dir.display());
            return;
        }
        {
            let mut index = self.locked();
            index.clock += 1;
            let clock = index.clock;
            if index.entries.insert(*key, (size, clock)).is_none() {
                index.held += size;
            }
        }
        self.evict(Some(key));
    }

    /// Deletes the least recently used blocks other than `keep` until the
    /// cache is within its budget.
    fn evict(&self, keep: Option<&Key>) {
        let victims = {
            let mut index = self.locked();
            let mut order: Vec<(u64, Key, u64)> = Vec::new();
            if index.held > self.budget {
                order = (index.entries.iter())
                    .filter(|(k, _)| Some(*k) != keep)
                    .map(|(k, &(len, used))| (used, *k, len))
                    .collect();
                order.sort_unstable();
            }
            let mut victims = Vec::new();
            for (_, key, len) in order {
                if index.held <= self.budget {
                    break;
                }
                index.entries.remove(&key);
                index.held -= len;
                victims.push(key);
            }
            victims
        };
        for key in victims {
            // Whatever took the name since it was listed is left alone
            // unless it is still a block file.
            let path = self.path(&key);
            if is_block_file(&path) {
                let _ = std::fs::remove_file(path);
            }
        }
    }

    fn forget(&self, key: &Key) {
        let mut index = self.locked();
        if let Some((len, _)) = index.entries.remove(key) {
            index.held -= len;
        }
    }

    /// Bytes the cache counts now.
    #[cfg(test)]
    fn held(&self) -> u64 {
        self.locked().held
    }
}

use std::os::unix::fs::DirBuilderExt;

fn hex(key: &Key) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

/// A new temporary file's path in `dir`, unique to this process.
fn tmp_path(dir: &Path) -> PathBuf {
    let n = TMP.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{TMP_PREFIX}{}.{n}", std::process::id()))
}

/// The key a block file's name gives, `None` for any other name.
fn parse_name(name: &str) -> Option<Key> {
    let name = name.strip_prefix(BLOCK_PREFIX)?;
    if name.len() != 64 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, k) in key.iter_mut().enumerate() {
        *k = u8::from_str_radix(&name[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

/// The check of a block file: an HMAC keyed by the cache's secret over
/// its header's fields and its bytes.
fn mac(secret: &Secret, key: &Key, bytes: &[u8]) -> Hmac {
    let mut mac =
        <Hmac as hmac::Mac>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(MAGIC);
    mac.update(key);
    mac.update(&(bytes.len() as u64).to_le_bytes());
    mac.update(bytes);
    mac
}

fn write_entry(path: &Path, secret: &Secret, key: &Key, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    let mut header = Vec::with_capacity(HEADER);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(key);
    header.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    header.extend_from_slice(&mac(secret, key, bytes).finalize().into_bytes());
    f.write_all(&header)?;
    f.write_all(bytes)
}

/// True when `path` is a regular file beginning with a block's magic: a
/// file ztfs wrote, which it may delete.
fn is_block_file(path: &Path) -> bool {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let Ok(mut f) = opened else { return false };
    let mut magic = [0u8; 8];
    f.metadata().is_ok_and(|m| m.is_file()) && f.read_exact(&mut magic).is_ok() && &magic == MAGIC
}

use std::os::unix::fs::OpenOptionsExt;

/// Reads the entry at `path` into `buf` if it is block `key` of `len`
/// bytes, whole, unaltered and written with `secret`.
fn read_entry(
    path: &Path,
    secret: &Secret,
    key: &Key,
    len: u64,
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    let bad = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
    // O_NONBLOCK: a FIFO put in the cache's place would otherwise hold the
    // reader until someone writes to it; only a regular file is read.
    // O_NOFOLLOW: a symbolic link is not followed out of the cache.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(bad("it is not a regular file"));
    }
    if meta.len() != HEADER as u64 + len {
        return Err(bad("its size is wrong"));
    }
    let mut f = f.take(HEADER as u64 + len);
    let mut header = [0u8; HEADER];
    f.read_exact(&mut header)?;
    if &header[..8] != MAGIC || header[8..40] != key[..] {
        return Err(bad("its header is not this block's"));
    }
    let stored_len = u64::from_le_bytes(header[40..48].try_into().unwrap_or_default());
    if stored_len != len {
        return Err(bad("its length is wrong"));
    }
    buf.clear();
    buf.reserve(len as usize);
    f.read_to_end(buf)?;
    if buf.len() as u64 != len {
        return Err(bad("its size is wrong"));
    }
    let checked = mac(secret, key, buf).verify_slice(&header[48..]);
    if checked.is_err() {
        return Err(bad(
            "its check fails (altered, or not written with this cache's key)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
