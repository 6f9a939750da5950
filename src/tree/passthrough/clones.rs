//! Backing files for kernel passthrough (`FOPEN_PASSTHROUGH`, Linux 6.9+).
//!
//! The kernel serves reads and `mmap` of a passed-through file straight
//! from a backing file, byte 0 to byte 0, so each file served that way
//! needs a file of its own whose content is exactly the file's: a clone.
//!
//! * Reflink clones share the extents of a raw part's blob (`FICLONERANGE`
//!   into an unnamed `O_TMPFILE` on the model's filesystem): no extra disk,
//!   where the filesystem shares extents (XFS, btrfs, ...: found by trying).
//! * Memory clones are files filled with the file's bytes as the tree
//!   serves them (decoded, checked), in a huge-page tmpfs mounted nowhere
//!   (else `memfd`s), under a byte budget: the least recently used clone
//!   without open handles is evicted first, and a file that does not fit
//!   stays on the buffered path.
//!
//! Both vanish with the daemon (no name on disk), and both are separate
//! files: rewriting the model after the mount cannot change what a reader
//! of a clone sees. One clone per inode, made once (concurrent first opens
//! wait for one job), shared by every open handle.

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use crate::tree::Ino;

/// Which backing files passthrough may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passthrough {
    /// Never: every read reaches the daemon.
    Off,
    /// Reflink clones where the filesystem shares extents, memory clones
    /// elsewhere (and for decoded files), within the budget.
    Auto,
    /// Reflink clones only.
    Reflink,
    /// Memory clones only.
    Memory,
}

/// How passthrough is set up for a mount.
#[derive(Debug, Clone)]
pub struct ClonePolicy {
    /// Which clones.
    pub mode: Passthrough,
    /// Bytes of memory clones at most.
    pub budget: u64,
    /// Where reflink clones are made (on the model's filesystem); `None`:
    /// the model's directory.
    pub dir: Option<PathBuf>,
    /// Files smaller than this stay on the buffered path (registering a
    /// backing file costs more than serving them).
    pub min_size: u64,
}

impl Default for ClonePolicy {
    fn default() -> ClonePolicy {
        ClonePolicy {
            mode: Passthrough::Off,
            budget: 0,
            dir: None,
            min_size: MIN_SIZE,
        }
    }
}

/// Files below this size stay buffered by default.
pub const MIN_SIZE: u64 = 1 << 20;

/// How a clone was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Extents shared with the model file.
    Reflink,
    /// A memory file.
    Memory,
}

/// A backing file: exactly the bytes of one file of the tree.
#[derive(Debug)]
pub struct Backing {
    /// The file handed to the kernel.
    pub file: File,
    /// Its length.
    pub len: u64,
    /// How it was made.
    pub kind: Kind,
}

/// `Clones::reflink`: not tried yet, works, fails.
const UNKNOWN: u8 = 0;
const WORKS: u8 = 1;
const FAILS: u8 = 2;

struct Slot {
    backing: Arc<Backing>,
    /// Open handles using it.
    handles: u32,
    /// When it was last handed out (a tick of `Inner::clock`).
    last: u64,
}

#[derive(Default)]
struct Inner {
    map: HashMap<Ino, Slot>,
    /// Inodes whose clone could not be made: they stay buffered.
    failed: std::collections::HashSet<Ino>,
    /// Bytes of memory clones held.
    memory: u64,
    clock: u64,
}

/// The clones of a mount.
pub struct Clones {
    /// The policy it was made with.
    pub policy: ClonePolicy,
    /// False once the kernel or the daemon's rights rule passthrough out.
    available: std::sync::atomic::AtomicBool,
    /// Why passthrough was turned off, if it was.
    off_because: Mutex<Option<String>>,
    /// Whether reflinks work on the model's filesystem (found by trying).
    reflink: AtomicU8,
    /// The huge-page tmpfs memory clones are made in, made on first use;
    /// `None` where it cannot be (they are memfds then).
    huge: std::sync::OnceLock<Option<std::os::fd::OwnedFd>>,
    inner: Mutex<Inner>,
}

impl Clones {
    /// Clones under `policy`.
    pub fn new(policy: ClonePolicy) -> Clones {
        Clones {
            policy,
            available: std::sync::atomic::AtomicBool::new(true),
            off_because: Mutex::default(),
            reflink: AtomicU8::new(UNKNOWN),
            huge: std::sync::OnceLock::new(),
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True when a file of `len` bytes is worth a clone.
    pub fn wants(&self, len: u64) -> bool {
        self.policy.mode != Passthrough::Off
            && len >= self.policy.min_size
            && self.available.load(Ordering::Relaxed)
    }

    /// Turns passthrough off for the mount, saying why (once).
    pub fn disable(&self, why: &str) {
        if self.available.swap(false, Ordering::Relaxed) {
            // Said once: `ztfs mount` prints it when passthrough was asked
            // for by name (see Tree::passthrough_note); under `auto`, the
            // default, it is no news.
            let level = match self.policy.mode {
                Passthrough::Auto => log::Level::Debug,
                _ => log::Level::Info,
            };
            log::log!(
                level,
                "passthrough is off: {why}; files are served through the daemon"
            );
            let mut off = self.off_because.lock().unwrap_or_else(|p| p.into_inner());
            *off = Some(why.to_string());
        }
    }

    /// Why passthrough was asked for and turned off, if it was.
    pub fn off_because(&self) -> Option<String> {
        let off = self.off_because.lock().unwrap_or_else(|p| p.into_inner());
        off.clone()
    }

    /// True when reflinks may be tried.
    pub fn may_reflink(&self) -> bool {
        matches!(self.policy.mode, Passthrough::Auto | Passthrough::Reflink)
            && self.reflink.load(Ordering::Relaxed) != FAILS
    }

    /// True when memory clones may be made.
    pub fn may_copy(&self) -> bool {
        matches!(self.policy.mode, Passthrough::Auto | Passthrough::Memory)
            && self.policy.budget > 0
    }

    /// Records whether a reflink worked; the first failure is logged.
    pub fn reflink_result(&self, ok: bool, why: &dyn std::fmt::Display) {
        let new = if ok { WORKS } else { FAILS };
        let old = self.reflink.swap(new, Ordering::Relaxed);
        if !ok && old != FAILS {
            log::info!("passthrough: no reflink clones here ({why}); memory clones where allowed");
        }
    }

    /// The clone of `ino`, taking a handle on it, if one is made.
    pub fn take(&self, ino: Ino) -> Option<Arc<Backing>> {
        let mut c = self.lock();
        c.clock += 1;
        let now = c.clock;
        let slot = c.map.get_mut(&ino)?;
        slot.handles += 1;
        slot.last = now;
        Some(slot.backing.clone())
    }

    /// True when `ino`'s clone could not be made (it stays buffered).
    pub fn failed(&self, ino: Ino) -> bool {
        self.lock().failed.contains(&ino)
    }

    /// Gives back a handle taken by [`Clones::take`].
    pub fn release(&self, ino: Ino) {
        if let Some(slot) = self.lock().map.get_mut(&ino) {
            slot.handles = slot.handles.saturating_sub(1);
        }
    }

    /// Makes room for a memory clone of `len` bytes, evicting the least
    /// recently used clones without open handles; false when it cannot.
    pub fn reserve_memory(&self, len: u64) -> bool {
        let mut c = self.lock();
        let budget = self.policy.budget;
        while c.memory.saturating_add(len) > budget {
            let victim = (c.map.iter())
                .filter(|(_, s)| s.handles == 0 && s.backing.kind == Kind::Memory)
                .min_by_key(|(_, s)| s.last)
                .map(|(&ino, _)| ino);
            let Some(victim) = victim else {
                return false;
            };
            if let Some(s) = c.map.remove(&victim) {
                c.memory -= s.backing.len;
                log::debug!("passthrough: evicted the memory clone of inode {victim}");
            }
        }
        c.memory += len;
        true
    }

    /// Gives back memory reserved for a clone that was not made.
    pub fn unreserve_memory(&self, len: u64) {
        let mut c = self.lock();
        c.memory = c.memory.saturating_sub(len);
    }

    /// Keeps `backing` as `ino`'s clone (its memory was reserved).
    pub fn insert(&self, ino: Ino, backing: Backing) {
        let mut c = self.lock();
        c.clock += 1;
        let last = c.clock;
        let slot = Slot {
            backing: Arc::new(backing),
            handles: 0,
            last,
        };
        if let Some(old) = c.map.insert(ino, slot) {
            if old.backing.kind == Kind::Memory {
                c.memory -= old.backing.len;
            }
        }
    }

    /// Remembers that `ino` cannot be cloned.
    pub fn fail(&self, ino: Ino) {
        self.lock().failed.insert(ino);
    }

    /// A new file of `len` bytes for a memory clone: in a detached tmpfs of
    /// huge pages where one can be mounted (reads at the page cache's
    /// speed), else a memfd (4 KiB pages: about half that, measured).
    pub fn memory_file(&self, name: &str, len: u64) -> std::io::Result<File> {
        let huge = self.huge.get_or_init(|| {
            // Room for the budget, and for each file rounded up to 2 MiB.
            let size = (self.policy.budget)
                .saturating_add(self.policy.budget / 4)
                .saturating_add(64 << 20);
            match crate::sys::huge_tmpfs(size) {
                Ok(fd) => Some(fd),
                Err(e) => {
                    log::info!("passthrough: memory clones are memfds (no huge-page tmpfs: {e})");
                    None
                }
            }
        });
        match huge {
            Some(dir) => crate::sys::unnamed_file_at(dir, len),
            None => crate::sys::memfd(name, len),
        }
    }

    /// Bytes of memory clones held now.
    pub fn memory_bytes(&self) -> u64 {
        self.lock().memory
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(len: u64) -> Backing {
        Backing {
            file: crate::sys::memfd("test", len).unwrap(),
            len,
            kind: Kind::Memory,
        }
    }

    #[test]
    fn evicts_the_least_recently_used_clone_without_handles() {
        let c = Clones::new(ClonePolicy {
            mode: Passthrough::Memory,
            budget: 300,
            ..ClonePolicy::default()
        });
        for ino in 1..=3 {
            assert!(c.reserve_memory(100));
            c.insert(ino, memory(100));
        }
        let held = c.take(1).unwrap();
        assert_eq!(held.len, 100);
        let _ = c.take(2);
        c.release(2);
        // 3 is the least recently used without a handle, then 2; 1 is open.
        assert!(c.reserve_memory(200));
        assert!(c.take(3).is_none() && c.take(2).is_none());
        assert!(c.take(1).is_some());
        assert_eq!(c.memory_bytes(), 300);
        // Nothing left to evict: a clone that does not fit is refused.
        assert!(!c.reserve_memory(1));
    }
}
