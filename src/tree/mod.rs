//! The virtual directory tree of a mounted model: inodes, names, attributes,
//! listings, extended attributes and reads. No fuser types: the FUSE adapter
//! converts, and this module is tested without a kernel.
//!
//! The tree is built once at mount time and never changes, so inode numbers
//! are stable for the life of the mount. Where bytes come from is decided
//! per file at open and read time (`content`), which leaves room for other
//! sources (passthrough files, remote ranges) without touching the shape.

mod build;
mod content;
mod failures;
mod frames;
mod jobs;
pub mod names;
mod requests;
mod view;

use std::sync::OnceLock;
use std::time::SystemTime;

pub use build::{Options, View, PART_NAME_MAX, PART_RESERVED, ROOT_RESERVED};
pub use content::Data;
pub use jobs::JOB_THREADS;
pub use requests::{OpenReply, ReadReply};

use crate::decode::Encoding;
use crate::model::Model;

/// An inode number; the root is [`ROOT`].
pub type Ino = u64;
/// The root directory's inode number.
pub const ROOT: Ino = 1;

/// Directory or regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
}

/// What `stat` says about a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    /// Inode number.
    pub ino: Ino,
    /// Directory or file.
    pub kind: FileKind,
    /// Size in bytes (files) or entry count (directories).
    pub size: u64,
    /// Permission bits.
    pub perm: u16,
    /// Link count.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Times, all from the backing file.
    pub atime: SystemTime,
    /// Modification time.
    pub mtime: SystemTime,
    /// Change time.
    pub ctime: SystemTime,
}

/// Why an operation failed; the adapter maps each to one errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsError {
    /// No such entry or inode.
    NotFound,
    /// A directory operation on a file.
    NotDir,
    /// A file operation on a directory.
    IsDir,
    /// The filesystem is read-only.
    ReadOnly,
    /// No such extended attribute.
    NoAttr,
    /// The caller's buffer is too small.
    Range,
    /// The bytes cannot be served: a corrupt or refused part, a missing
    /// shard, a truncated backing file. Logged where it happens.
    Io,
    /// The requester went away while the answer was being computed, and
    /// the work was abandoned.
    Interrupted,
}

/// How an opened file should be cached by the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenMode {
    /// Keep the kernel's page cache across opens (the content never changes).
    pub keep_cache: bool,
    /// Bypass the kernel page cache.
    pub direct_io: bool,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirEntry<'a> {
    /// The entry's inode.
    pub ino: Ino,
    /// Its kind.
    pub kind: FileKind,
    /// Its name within the directory.
    pub name: &'a str,
    /// The offset to resume after this entry.
    pub next: u64,
}

/// An inode. Small (12 bytes) on purpose: a model has a few per object, so
/// a directory's data lives apart, in [`Tree::dirs`].
#[derive(Debug)]
enum Node {
    /// A directory: an index into `Tree::dirs`.
    Dir(u32),
    Manifest,
    Digest,
    Meta {
        object: u32,
    },
    /// A decoded view of a layout profile's object (dense or dequantized).
    View {
        object: u32,
    },
    Part {
        object: u32,
        part: u32,
    },
    Raw {
        object: u32,
        part: u32,
    },
}

/// A directory's data.
#[derive(Debug)]
struct Dir {
    parent: Ino,
    /// Where its entries are in `Tree::entries`, sorted by name bytes (one
    /// table for all directories: most hold two or three entries, and a
    /// separate allocation each would cost more than the entries).
    first: u32,
    len: u32,
    object: Option<u32>,
    /// Subdirectories among `entries`, for the link count.
    subdirs: u32,
}

/// A directory entry. Names repeated in every object directory (`meta.json`,
/// `data`, ...) share one allocation, and an object directory's name is the
/// manifest's copy of the object's name unless it had to be escaped.
#[derive(Debug)]
struct Entry {
    name: crate::format::Text,
    ino: Ino,
}

/// A built tree over an opened model.
pub struct Tree {
    model: Model,
    nodes: Vec<Node>,
    dirs: Vec<Dir>,
    /// Every directory's entries, one directory after another.
    entries: Vec<Entry>,
    /// Used while building only.
    names: crate::format::text::Texts,
    base: Base,
    opts: Options,
    /// Each object's directory.
    object_dirs: Vec<Ino>,
    /// Index of each object's first part in `parts`.
    part_base: Vec<u32>,
    /// Per part: its decoder, resolved and checked on first open (boxed,
    /// so a part never opened costs a pointer, not a decoder).
    parts: Vec<OnceLock<Box<Result<Encoding, ()>>>>,
    /// manifest.json's size, found on the first stat without keeping the
    /// text; the manifest is read from the file (not the map, which the
    /// file may have been truncated under) whenever it is needed.
    manifest_json_len: OnceLock<u64>,
    /// manifest.json's text, once something has read it.
    manifest_json: OnceLock<Vec<u8>>,
    digest: Option<Vec<u8>>,
    /// Decoded frames and prepared views, under one budget.
    frames: frames::FrameCache,
    /// The job threads for slow work.
    jobs: std::sync::Arc<jobs::Jobs>,
    /// Per part, with `--verify`: verified whole (or not).
    verified: Vec<OnceLock<Result<(), ()>>>,
    /// Objects whose layout data rules were checked, and the outcome.
    object_checks: std::sync::Mutex<std::collections::HashMap<u32, bool>>,
    /// Objects whose view could not be prepared (logged once).
    view_failures: std::sync::Mutex<std::collections::HashSet<u32>>,
    /// Failed requests, logged once each and counted.
    failures: failures::Failures,
    /// Per part: where the last read ended, to tell a sequential reader
    /// (whose next frame is decoded ahead) from a random one.
    last_end: Vec<std::sync::atomic::AtomicU64>,
}

/// Ownership, permissions and times shared by every node.
#[derive(Debug, Clone, Copy)]
struct Base {
    uid: u32,
    gid: u32,
    file_perm: u16,
    dir_perm: u16,
    atime: SystemTime,
    mtime: SystemTime,
    ctime: SystemTime,
}

impl Tree {
    /// Number of inodes.
    pub fn len(&self) -> u64 {
        self.nodes.len() as u64
    }

    /// True when the tree has only its root.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 1
    }

    /// The model behind the tree.
    pub fn model(&self) -> &Model {
        &self.model
    }

    fn node(&self, ino: Ino) -> Result<&Node, FsError> {
        ino.checked_sub(1)
            .and_then(|i| self.nodes.get(i as usize))
            .ok_or(FsError::NotFound)
    }

    /// The directory `ino`.
    fn dir(&self, ino: Ino) -> Result<&Dir, FsError> {
        match self.node(ino)? {
            Node::Dir(d) => Ok(&self.dirs[*d as usize]),
            _ => Err(FsError::NotDir),
        }
    }

    /// The entries of directory `d`, sorted by name bytes.
    fn entries(&self, d: &Dir) -> &[Entry] {
        &self.entries[d.first as usize..][..d.len as usize]
    }

    /// Looks `name` up in directory `parent`.
    pub fn lookup(&self, parent: Ino, name: &[u8]) -> Result<Attr, FsError> {
        let entries = self.entries(self.dir(parent)?);
        let i = entries
            .binary_search_by(|e| e.name.as_bytes().cmp(name))
            .map_err(|_| FsError::NotFound)?;
        self.getattr(entries[i].ino)
    }

    /// The attributes of `ino`.
    pub fn getattr(&self, ino: Ino) -> Result<Attr, FsError> {
        let node = self.node(ino)?;
        let b = &self.base;
        let (kind, size, perm, nlink) = match node {
            Node::Dir(d) => {
                let d = &self.dirs[*d as usize];
                (
                    FileKind::Dir,
                    u64::from(d.len),
                    b.dir_perm,
                    2u32.saturating_add(d.subdirs),
                )
            }
            _ => (FileKind::File, self.size(node), b.file_perm, 1),
        };
        Ok(Attr {
            ino,
            kind,
            size,
            perm,
            nlink,
            uid: b.uid,
            gid: b.gid,
            atime: b.atime,
            mtime: b.mtime,
            ctime: b.ctime,
        })
    }

    /// Lists directory `ino` from `offset`: `.` and `..` first, then the
    /// entries in byte order. `sink` returns true when it is full.
    pub fn readdir(
        &self,
        ino: Ino,
        offset: u64,
        sink: &mut dyn FnMut(DirEntry<'_>) -> bool,
    ) -> Result<(), FsError> {
        let dir = self.dir(ino)?;
        let entries = self.entries(dir);
        let dots = [(ino, "."), (dir.parent, "..")];
        let all = dots
            .iter()
            .map(|&(ino, name)| (ino, name))
            .chain(entries.iter().map(|e| (e.ino, &*e.name)));
        for (i, (ino, name)) in all.enumerate().skip(offset as usize) {
            let kind = match self.nodes[ino as usize - 1] {
                Node::Dir(_) => FileKind::Dir,
                _ => FileKind::File,
            };
            if sink(DirEntry {
                ino,
                kind,
                name,
                next: i as u64 + 1,
            }) {
                break;
            }
        }
        Ok(())
    }

    /// Logs how often each logged failure repeated (at unmount).
    pub fn log_failure_counts(&self) {
        self.failures.summarise();
    }

    /// `statfs` figures: (blocks of 4 KiB, inodes, longest name).
    pub fn statfs(&self) -> (u64, u64, u32) {
        (
            self.model.root().len().div_ceil(4096),
            self.len(),
            names::NAME_MAX as u32,
        )
    }
}
