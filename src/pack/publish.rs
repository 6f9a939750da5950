//! Putting a family of finished temporary files at their names all or
//! nothing: each is renamed over its name after the file already there
//! (if any) is kept aside under a hidden name, so that a failure at any
//! later step puts every earlier file back as it was, and success removes
//! what was kept aside.
//!
//! The earlier file is kept aside by a second link to it: its name never
//! stops naming a file. On a filesystem without hard links it is renamed
//! aside instead (for a moment its name names nothing). This module does
//! no locking: the caller keeps a signal's clean-up out while it runs.

use std::fs::File;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One file put at its name, and what was there before.
#[derive(Debug)]
pub struct Placed {
    dest: PathBuf,
    /// Where the file that was at `dest` is kept, if there was one.
    aside: Option<PathBuf>,
}

/// The files put in place so far, in order, until [`Family::commit`] or
/// [`Family::roll_back`].
#[derive(Debug, Default)]
pub struct Family {
    placed: Vec<Placed>,
}

impl Family {
    /// Renames `tmp` to `dest`, keeping the file at `dest` (if any) aside
    /// under `aside` (a name nothing else uses, in `dest`'s folder). On an
    /// error nothing has changed for this file: `tmp` is where it was, and
    /// so is the file at `dest`.
    pub fn put(&mut self, tmp: &Path, dest: &Path, aside: &Path) -> io::Result<()> {
        let kept = match std::fs::symlink_metadata(dest) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
            Ok(m) if m.file_type().is_file() => Some(keep_aside(dest, aside)?),
            // Never replaced (nor kept aside): the caller refuses it first.
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "exists and is not a regular file",
                ))
            }
        };
        if let Err(e) = std::fs::rename(tmp, dest) {
            if let Some(how) = kept {
                // Undone at once: nothing of this file stays changed.
                let _ = match how {
                    Kept::Linked => std::fs::remove_file(aside),
                    Kept::Renamed => std::fs::rename(aside, dest),
                };
            }
            return Err(e);
        }
        self.placed.push(Placed {
            dest: dest.to_path_buf(),
            aside: kept.map(|_| aside.to_path_buf()),
        });
        Ok(())
    }

    /// Success: removes what was kept aside.
    pub fn commit(self) {
        for p in self.placed {
            if let Some(a) = p.aside {
                let _ = std::fs::remove_file(a);
            }
        }
    }

    /// Failure: removes every file put in place and puts back what was
    /// there, last first. Returns the files it could not put back (each
    /// with the name it is kept under), for the message.
    pub fn roll_back(self) -> Vec<(PathBuf, PathBuf)> {
        let mut lost = Vec::new();
        for p in self.placed.into_iter().rev() {
            let r = match &p.aside {
                Some(a) => std::fs::rename(a, &p.dest),
                None => std::fs::remove_file(&p.dest),
            };
            if let (Err(_), Some(a)) = (r, p.aside) {
                lost.push((p.dest, a));
            }
        }
        lost
    }
}

/// How a file was kept aside.
#[derive(Debug, Clone, Copy)]
enum Kept {
    /// A second link to it: it is still at its name too.
    Linked,
    /// Renamed: it is only at the aside name.
    Renamed,
}

fn keep_aside(dest: &Path, aside: &Path) -> io::Result<Kept> {
    match std::fs::hard_link(dest, aside) {
        Ok(()) => Ok(Kept::Linked),
        // A filesystem without hard links (vfat, some FUSE ones).
        Err(e) if no_hard_links(&e) => std::fs::rename(dest, aside).map(|()| Kept::Renamed),
        Err(e) => Err(e),
    }
}

fn no_hard_links(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EPERM | libc::EOPNOTSUPP | libc::ENOSYS | libc::EMLINK)
    )
}

/// The permission bits a file published at `dest` gets: those of the
/// regular file there, if there is one (a replaced output keeps its
/// mode), else `new_mode` (0666 less the umask). Set-id and sticky bits
/// are not carried over.
pub fn mode_for(dest: &Path, new_mode: u32) -> u32 {
    match std::fs::symlink_metadata(dest) {
        Ok(m) if m.file_type().is_file() => m.permissions().mode() & 0o777,
        _ => new_mode,
    }
}

/// Syncs the folder `dir`, so that renames in it are on disk.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir)?.sync_all() {
        // A filesystem that cannot sync a folder has nothing to sync.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three files put in place over two earlier ones and a new name,
    /// then rolled back: the earlier files are back, byte for byte and
    /// the same inodes, the new name is free, nothing is kept aside.
    #[test]
    fn a_roll_back_puts_every_earlier_file_back() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let d = dir.path();
        std::fs::write(d.join("a"), b"old a").unwrap();
        std::fs::write(d.join("c"), b"old c").unwrap();
        let ino = |n: &str| std::fs::metadata(d.join(n)).unwrap().ino();
        let (a, c) = (ino("a"), ino("c"));
        let mut family = Family::default();
        for n in ["a", "b", "c"] {
            let tmp = d.join(format!(".{n}.part"));
            std::fs::write(&tmp, format!("new {n}")).unwrap();
            family
                .put(&tmp, &d.join(n), &d.join(format!(".{n}.old")))
                .unwrap();
            assert!(!tmp.exists());
        }
        assert_eq!(std::fs::read(d.join("a")).unwrap(), b"new a");
        assert!(family.roll_back().is_empty());
        assert_eq!(std::fs::read(d.join("a")).unwrap(), b"old a");
        assert_eq!(std::fs::read(d.join("c")).unwrap(), b"old c");
        assert_eq!((ino("a"), ino("c")), (a, c));
        let mut left: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        left.sort();
        assert_eq!(left, ["a", "c"]);
    }

    /// A commit leaves the new files and removes what was kept aside.
    #[test]
    fn a_commit_keeps_the_new_files_only() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let d = dir.path();
        std::fs::write(d.join("a"), b"old").unwrap();
        std::fs::write(d.join(".a.part"), b"new").unwrap();
        let mut family = Family::default();
        (family.put(&d.join(".a.part"), &d.join("a"), &d.join(".a.old"))).unwrap();
        family.commit();
        assert_eq!(std::fs::read(d.join("a")).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 1);
    }

    /// A name held by something other than a regular file (a folder)
    /// changes nothing: the temporary file stays, nothing is kept aside.
    #[test]
    fn a_failed_put_changes_nothing() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("a")).unwrap();
        std::fs::write(d.join(".a.part"), b"new").unwrap();
        let mut family = Family::default();
        let r = family.put(&d.join(".a.part"), &d.join("a"), &d.join(".a.old"));
        assert!(r.is_err());
        assert!(d.join("a").is_dir() && d.join(".a.part").exists());
        assert!(!d.join(".a.old").exists());
        assert!(family.roll_back().is_empty());
    }
}
