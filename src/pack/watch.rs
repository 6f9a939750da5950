//! Whether the local files a pack reads held still while it read them.
//!
//! A raw part of a local file is hashed from the source's pages and then
//! copied by the kernel, a second read: a source written in between would
//! give an output whose digests do not match its bytes. So each local
//! file's status is taken before the first byte of it is read, and
//! compared after each copy from it and once more before the output is
//! published: the same file (device and inode, by its path), the same
//! size, the same modification and change times. Any difference fails the
//! pack ("changed while it was packed"). The change time moves with every
//! write and every change of the modification time, so a writer that puts
//! the modification time back is seen too. A file changed so lately that
//! the filesystem's clock has not moved since (a write now would get the
//! same change time) is stamped only once the clock has moved (as git
//! treats a racily clean file), a few milliseconds at most. What is left
//! unseen: a same-length write on a filesystem whose times are coarser
//! than the kernel's clock tick (whole seconds: FAT, some network
//! filesystems) within one of its ticks of the last change.
//!
//! A file read by URL is not watched here: its store pins its version.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::store::Store;

/// What a file's status says of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    /// Seconds and nanoseconds.
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    /// The stamp of a file's status.
    pub fn of(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }

    /// What differs between `before` and this, if anything.
    pub fn change_since(&self, before: &Stamp) -> Option<&'static str> {
        if (self.dev, self.ino) != (before.dev, before.ino) {
            Some("its path names another file")
        } else if self.size != before.size {
            Some("its size changed")
        } else if self.mtime != before.mtime {
            Some("its modification time changed")
        } else if self.ctime != before.ctime {
            Some("its change time changed")
        } else {
            None
        }
    }
}

/// The local files read so far, each with its stamp from before it was
/// first read.
#[derive(Debug, Default)]
pub struct Watch {
    files: Vec<Watched>,
    /// Index in `files` by path: a checkpoint of many files has many
    /// parts, each looked up.
    by_path: HashMap<PathBuf, usize>,
}

#[derive(Debug)]
struct Watched {
    path: PathBuf,
    /// For messages.
    name: String,
    stamp: Stamp,
}

impl Watch {
    /// Takes `store`'s stamp, from its open file (the bytes that will be
    /// read), unless it is watched already or is not a local file (a
    /// remote object, a file of ours).
    pub fn see(&mut self, store: &Store) -> Result<()> {
        let Some(file) = store.file() else {
            return Ok(());
        };
        if store.is_own() || self.by_path.contains_key(store.path()) {
            return Ok(());
        }
        let stamp = settled_stamp(file).map_err(|e| Error::io(store.name(), e))?;
        (self.by_path).insert(store.path().to_path_buf(), self.files.len());
        self.files.push(Watched {
            path: store.path().to_path_buf(),
            name: store.name(),
            stamp,
        });
        Ok(())
    }

    /// Fails when the file at `path`, if watched, is not the one seen as
    /// it was.
    pub fn check(&self, path: &Path) -> Result<()> {
        match self.by_path.get(path) {
            Some(&i) => self.files[i].check(),
            None => Ok(()),
        }
    }

    /// [`Watch::check`] of every file watched.
    pub fn check_all(&self) -> Result<()> {
        self.files.iter().try_for_each(Watched::check)
    }
}

/// Most time spent waiting for the clock to pass a file's change time:
/// one tick is a few milliseconds; a change time in the future (a clock
/// set back) is taken as it is after this.
const SETTLE: Duration = Duration::from_millis(100);

/// `file`'s stamp, once the filesystem clock has passed its change time,
/// so that any later write moves it.
fn settled_stamp(file: &std::fs::File) -> std::io::Result<Stamp> {
    let start = Instant::now();
    loop {
        let stamp = Stamp::of(&file.metadata()?);
        if stamp.ctime < crate::sys::coarse_now() || start.elapsed() > SETTLE {
            return Ok(stamp);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

impl Watched {
    fn check(&self) -> Result<()> {
        let now = std::fs::metadata(&self.path).map_err(|e| Error::io(self.name.as_str(), e))?;
        match Stamp::of(&now).change_since(&self.stamp) {
            None => Ok(()),
            Some(why) => Err(changed(&self.name, why)),
        }
    }
}

/// `name` changed while it was packed: `why`.
pub fn changed(name: &str, why: &str) -> Error {
    Error::io(
        name,
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("changed while it was packed ({why})"),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    fn stamp(path: &Path) -> Stamp {
        Stamp::of(&std::fs::metadata(path).unwrap())
    }

    /// Each field is seen: a rewrite of the same length that puts the
    /// modification time back (the change time moved), a new time alone,
    /// a length, another file renamed over the name; an untouched file is
    /// unchanged.
    #[test]
    fn every_kind_of_change_is_seen() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123").unwrap();
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let set_mtime = |t| {
            let f = std::fs::File::options().write(true).open(&p).unwrap();
            f.set_modified(t).unwrap();
        };
        set_mtime(old);
        let before = stamp(&p);
        assert_eq!(stamp(&p).change_since(&before), None);

        // The change time has a clock tick's granularity: wait one out.
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(&p, b"abcd").unwrap();
        set_mtime(old);
        assert_eq!(
            stamp(&p).change_since(&before),
            Some("its change time changed")
        );

        let before = stamp(&p);
        set_mtime(old + Duration::from_secs(1));
        assert_eq!(
            stamp(&p).change_since(&before),
            Some("its modification time changed")
        );

        let before = stamp(&p);
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(3)
            .unwrap();
        assert_eq!(stamp(&p).change_since(&before), Some("its size changed"));

        let before = stamp(&p);
        let q = dir.path().join("g");
        std::fs::write(&q, b"abc").unwrap();
        std::fs::rename(&q, &p).unwrap();
        assert_eq!(
            stamp(&p).change_since(&before),
            Some("its path names another file")
        );
    }

    /// A file written just before it is seen, then rewritten (same
    /// length, its modification time put back) at once: the rewrite is
    /// seen, because the stamp waits for the clock to pass the first
    /// write. (On a kernel with fine-grained timestamps, 6.13 on, the
    /// filesystem tells the two apart anyway.)
    #[test]
    fn a_rewrite_right_after_the_stamp_is_seen() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let p = dir.path().join("f");
        for _ in 0..20 {
            std::fs::write(&p, b"0123").unwrap();
            let store = Store::open(&p).unwrap();
            let mut watch = Watch::default();
            watch.see(&store).unwrap();
            let f = std::fs::File::options().write(true).open(&p).unwrap();
            let mtime = f.metadata().unwrap().modified().unwrap();
            std::os::unix::fs::FileExt::write_all_at(&f, b"abcd", 0).unwrap();
            f.set_modified(mtime).unwrap();
            assert!(watch.check(&p).is_err());
        }
    }
}
