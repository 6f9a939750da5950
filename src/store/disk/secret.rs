//! What makes a cache directory ztfs's, and its secret: the directory must
//! be the effective user's and writable by no one else, and it holds a key
//! file, `ztfs-cache.key` (magic `ZTFSKEY2` and 32 random bytes, mode
//! 0600, the user's), whose bytes key every block's check. The key file is
//! also the mark that ztfs may delete its own files in the directory: one
//! is made only in an empty directory, never beside files ztfs did not
//! write.
//!
//! Refused, as ssh refuses a key file others can touch: a directory owned
//! by another user or writable by group or others; a key file that is not
//! a regular file, not the user's, open to group or others, or malformed;
//! a directory that holds files but no key file. Each is an
//! [`Error::Usage`] naming the path and what to do.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use crate::error::{Error, Result};
use crate::sys;

/// The key file's name at the cache's root.
pub(super) const KEY_FILE: &str = "ztfs-cache.key";
const KEY_MAGIC: &[u8; 8] = b"ZTFSKEY2";
/// Magic, then the secret.
const KEY_FILE_LEN: usize = 8 + 32;

/// A cache's secret: the key of its blocks' checks.
pub(super) type Secret = [u8; 32];

/// Checks that `dir` is the effective user's and that no one else may
/// write in it (add, rename or delete files).
pub(super) fn check_dir(dir: &Path) -> Result<()> {
    let meta = std::fs::metadata(dir).map_err(|e| Error::io(shown(dir), e))?;
    let euid = sys::euid();
    if meta.uid() != euid {
        return Err(Error::Usage(format!(
            "{}: the cache directory is owned by uid {}, not by this user (uid {euid})",
            shown(dir),
            meta.uid()
        )));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(Error::Usage(format!(
            "{}: the cache directory is writable by group or others (mode {mode:04o}); \
             a block planted there would be served: chmod go-w it",
            shown(dir)
        )));
    }
    Ok(())
}

/// The secret of the cache in `dir` (checked by [`check_dir`]): its key
/// file's, or a new one written there when the directory holds nothing
/// but ztfs's temporaries (`is_tmp`). A new key is written under the
/// temporary name `tmp` and linked into place, so of two processes making
/// one at once the second reads the first's.
pub(super) fn secret(dir: &Path, tmp: &Path, is_tmp: impl Fn(&str) -> bool) -> Result<Secret> {
    let path = dir.join(KEY_FILE);
    if let Some(secret) = read_key(&path)? {
        return Ok(secret);
    }
    check_empty(dir, &is_tmp)?;
    let mut secret = [0u8; 32];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut secret))
        .map_err(|e| Error::io("/dev/urandom", e))?;
    let written = write_key(tmp, &secret).and_then(|()| std::fs::hard_link(tmp, &path));
    let _ = std::fs::remove_file(tmp);
    match written {
        Ok(()) => Ok(secret),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => read_key(&path)?
            .ok_or_else(|| Error::Usage(format!("{}: the key file vanished", shown(&path)))),
        Err(e) => Err(Error::io(shown(&path), e)),
    }
}

/// The secret in the key file at `path`, `None` when there is none.
fn read_key(path: &Path) -> Result<Option<Secret>> {
    let refuse = |why: String| Error::Usage(format!("{}: {why}", shown(path)));
    // O_NOFOLLOW: a symbolic link is refused, not followed elsewhere;
    // O_NONBLOCK: a FIFO is refused, not waited on.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let f = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(refuse("the cache's key file is a symbolic link".into()))
        }
        Err(e) => return Err(Error::io(shown(path), e)),
    };
    let meta = f.metadata().map_err(|e| Error::io(shown(path), e))?;
    let (euid, mode) = (sys::euid(), meta.mode() & 0o7777);
    if !meta.is_file() {
        return Err(refuse("the cache's key file is not a regular file".into()));
    }
    if meta.uid() != euid {
        return Err(refuse(format!(
            "the cache's key file is owned by uid {}, not by this user (uid {euid})",
            meta.uid()
        )));
    }
    if mode & 0o077 != 0 {
        return Err(refuse(format!(
            "the cache's key file is open to group or others (mode {mode:04o}); \
             it must be 0600: chmod 600 it, or delete the cache directory"
        )));
    }
    let mut bytes = Vec::with_capacity(KEY_FILE_LEN);
    (f.take(KEY_FILE_LEN as u64 + 1))
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(shown(path), e))?;
    match bytes.split_at_checked(KEY_MAGIC.len()) {
        Some((magic, secret)) if magic == KEY_MAGIC && secret.len() == 32 => {
            let mut s = [0u8; 32];
            s.copy_from_slice(secret);
            Ok(Some(s))
        }
        _ => Err(refuse(format!(
            "not a ztfs cache key ({} bytes; {KEY_FILE_LEN} beginning {:?} expected): \
             delete the cache directory",
            bytes.len(),
            std::str::from_utf8(KEY_MAGIC).unwrap_or_default()
        ))),
    }
}

/// Refuses a directory without a key file that holds anything but ztfs's
/// temporaries: its files are not ztfs's, so none may be deleted.
fn check_empty(dir: &Path, is_tmp: &impl Fn(&str) -> bool) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(shown(dir), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(shown(dir), e))?;
        let name = entry.file_name();
        // The key file itself: another process linked it in since this
        // one looked; the link of ours will fail and read theirs.
        if name.to_str().is_some_and(|n| is_tmp(n) || n == KEY_FILE) {
            continue;
        }
        return Err(Error::Usage(format!(
            "{}: not a ztfs cache directory: it holds {name:?} and no {KEY_FILE}; name an empty \
             or new directory (ztfs deletes files only in a directory of its own; a cache of \
             an older ztfs must be deleted by hand)",
            shown(dir)
        )));
    }
    Ok(())
}

fn write_key(tmp: &Path, secret: &Secret) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(tmp)?;
    f.write_all(KEY_MAGIC)?;
    f.write_all(secret)?;
    f.sync_all()
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}
