//! The virtual directory tree of a mounted model: inodes, names, attributes,
//! listings, extended attributes and reads. No fuser types: the FUSE adapter
//! converts, and this module is tested without a kernel.
//!
//! The tree is built once at mount time and never changes, so inode numbers
//! are stable for the life of the mount. Where bytes come from is decided
//! per file at open and read time (`content`), which leaves room for other
//! sources (passthrough files, remote ranges) without touching the shape.

mod build;
mod export;
mod part;
mod passthrough;
mod serve;

pub use build::names;
pub use export::transformers::DROPPED;
pub use export::{safetensors, FILE_NOT_TENSOR};
pub use passthrough::{clones, registry};

use build::listing;
use export::{forms, npy, transformers};
use serve::{content, direct, failures, frames, jobs, requests, spool};

use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

pub use build::{Arrangement, Options, PART_NAME_MAX, PART_RESERVED, ROOT_RESERVED};
pub use content::Data;
pub use direct::TensorForm;
pub use forms::NpyDtypes;
pub use jobs::JOB_THREADS;
pub use requests::{OpenReply, ReadReply};

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

/// How an opened file should be served by the kernel.
#[derive(Debug, Clone)]
pub struct OpenMode {
    /// Keep the kernel's page cache across opens (the content never changes).
    pub keep_cache: bool,
    /// Bypass the kernel page cache.
    pub direct_io: bool,
    /// A backing file holding exactly the file's bytes: the kernel may
    /// serve reads and `mmap` from it (passthrough), and the page-cache
    /// flags do not apply. The open holds a handle on it until
    /// [`Tree::release_backing`].
    pub backing: Option<Arc<clones::Backing>>,
}

impl OpenMode {
    fn with_backing(self, b: Arc<clones::Backing>) -> OpenMode {
        OpenMode {
            backing: Some(b),
            ..self
        }
    }
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

/// What an inode is. Never stored: [`Tree::node`] derives it from the
/// inode number, the directories and the manifest.
#[derive(Debug, Clone, Copy)]
enum Node {
    /// A directory: an index into `Tree::dirs`.
    Dir(u32),
    Manifest,
    Digest,
    /// `config.json` of a GGUF as transformers loads it
    /// ([`Options::dequantize`], `export/transformers.rs`).
    Config,
    Meta {
        object: u32,
    },
    /// A tensor's value statistics (`stats.json`, `serve/stats.rs`).
    Stats {
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
    /// A `.npy` file: a header, then the bytes of part `part`'s decoded
    /// file, or of the object's view when `part` is [`VIEW`].
    Npy {
        object: u32,
        part: u32,
    },
    /// A safetensors file of the model (`model.safetensors`, or shard
    /// `shard` of a sharded model).
    Safetensors {
        shard: u32,
    },
    /// `model.safetensors.index.json` of a sharded model.
    SafetensorsIndex,
    /// A file of the model's folder: an index into
    /// [`Folder::files`](crate::model::folder::Folder).
    FolderFile {
        file: u32,
    },
}

/// `Node::Npy::part` of an object's view.
const VIEW: u32 = u32::MAX;

/// A directory. Its files (the root's `manifest.json` and `digest`, an
/// object's `meta.json`, view and part files) are not stored: they take
/// the inode numbers right after the directory's own, in the order
/// [`Tree::object_files`] gives, and their names and meaning are derived
/// from the manifest when asked for. Only subdirectories are stored, as
/// indexes into `Tree::dirs` in `Tree::children`.
///
/// Directories are numbered in the order their inodes were made, so
/// `ino` grows with the index and an inode's directory is found by binary
/// search. 24 bytes: a flat view has one per object.
#[derive(Debug)]
struct Dir {
    ino: u32,
    /// The parent's index in `Tree::dirs` (the root is its own parent).
    parent: u32,
    /// The object whose files it holds, or [`NO_OBJECT`].
    object: u32,
    /// Where its subdirectories are in `Tree::children`, sorted by name
    /// bytes (one table for all directories).
    first: u32,
    len: u32,
    /// How many files it holds (inodes `ino + 1 ..= ino + files`).
    files: u32,
}

/// `Dir::object` of a directory that holds no object's files.
const NO_OBJECT: u32 = u32::MAX;

impl Dir {
    /// The object whose files it holds.
    fn object(&self) -> Option<u32> {
        (self.object != NO_OBJECT).then_some(self.object)
    }
}

/// A built tree over an opened model.
pub struct Tree {
    model: Model,
    dirs: Vec<Dir>,
    /// Every directory's subdirectories, one directory after another.
    children: Vec<u32>,
    /// The names of directories whose name is not their object's name (or
    /// its last segment, nested): escaped names, and nested directories of
    /// no object. By directory index, ascending; usually few.
    names: Vec<(u32, crate::format::Text)>,
    /// Number of inodes.
    inodes: u64,
    /// Used while building only.
    texts: crate::format::text::Texts,
    base: Base,
    opts: Options,
    /// Index of each object's first part in `parts`.
    part_base: Vec<u32>,
    /// Per part, by flat number: its files, decoder and verification.
    parts: Vec<part::PartState>,
    /// manifest.json's size, found on the first stat without keeping the
    /// text; the manifest is read from the file (not the map, which the
    /// file may have been truncated under) whenever it is needed.
    manifest_json_len: OnceLock<u64>,
    /// manifest.json's text, once something has read it.
    manifest_json: OnceLock<spool::Spooled>,
    digest: Option<Vec<u8>>,
    /// A GGUF as transformers loads it: its `config.json`, and the names
    /// and values of `model.safetensors` (with `--dequantize`, for an
    /// architecture ztfs maps).
    transformers: Option<crate::format::gguf::transformers::Form>,
    /// Decoded frames and prepared views, under one budget.
    frames: frames::FrameCache,
    /// The job threads for slow work.
    jobs: std::sync::Arc<jobs::Jobs>,
    /// The job threads for reads that wait on a remote server: their own,
    /// so that a server that hangs holds up no other work.
    fetch_jobs: std::sync::Arc<jobs::Jobs>,
    /// The statistics jobs (`serve/stats.rs`): a pool apart, since they
    /// wait for the views and verifications the other jobs make.
    stats_jobs: std::sync::Arc<jobs::Jobs>,
    /// Objects whose view could not be prepared (logged once).
    view_failures: std::sync::Mutex<std::collections::HashSet<u32>>,
    /// Failed requests, logged once each and counted.
    failures: failures::Failures,
    /// The encoded parts (flat part indexes, ascending), and for each where
    /// the last read ended, to tell a sequential reader (whose next frame
    /// is decoded ahead) from a random one. Raw parts are read from the
    /// map and need neither.
    encoded: Vec<u32>,
    last_end: Vec<std::sync::atomic::AtomicU64>,
    /// The model's safetensors files; `None` when they could not be
    /// planned (logged at mount).
    safetensors: Option<safetensors::Plan>,
    /// The whole plan with its tables, made again on the first read of a
    /// safetensors file (about 24 bytes an object that most mounts never
    /// need); `None` inside when it no longer comes out the same.
    safetensors_tables: OnceLock<Option<safetensors::Plan>>,
    /// Backing files for passthrough.
    clones: clones::Clones,
    /// The directories of the model folder's subfolders: (inode, index
    /// into the folder's `dirs`), ascending.
    folder_dirs: Vec<(u32, u32)>,
    /// The folder's root files served under another name than their own
    /// (one of the tree's own files has it): (file index, name).
    folder_renamed: Vec<(u32, String)>,
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
        self.inodes
    }

    /// True when the tree has only its root.
    pub fn is_empty(&self) -> bool {
        self.inodes <= 1
    }

    /// The model behind the tree.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// What inode `ino` is: the directory at or before it, or one of that
    /// directory's files.
    fn node(&self, ino: Ino) -> Result<Node, FsError> {
        let d = self
            .dirs
            .partition_point(|d| u64::from(d.ino) <= ino)
            .checked_sub(1)
            .ok_or(FsError::NotFound)?;
        let dir = &self.dirs[d];
        match ino - u64::from(dir.ino) {
            0 => Ok(Node::Dir(d as u32)),
            k if k <= u64::from(dir.files) => {
                self.nth_file(dir, (k - 1) as u32).ok_or(FsError::NotFound)
            }
            _ => Err(FsError::NotFound),
        }
    }

    /// Where the last read of part `key` ended, for an encoded part.
    fn last_end(&self, key: u32) -> Option<&std::sync::atomic::AtomicU64> {
        let i = self.encoded.binary_search(&key).ok()?;
        Some(&self.last_end[i])
    }

    /// The computed view serving object `object`'s `data`, if its format
    /// computes one ([`crate::model::TensorData::Computed`]).
    fn computed_view(&self, object: u32) -> Option<&crate::decode::hurray::RowMajor> {
        self.model.computed_view(object)
    }

    /// The name and size of `object`'s view file, if its layout offers one.
    fn view_of(&self, object: u32) -> Option<(&'static str, u64)> {
        match self.computed_view(object) {
            Some(r) if r.dequantized_from().is_some() => {
                Some((crate::decode::views::DEQUANTIZED_VIEW, r.len()))
            }
            Some(r) => Some((crate::model::DATA, r.len())),
            None => crate::decode::views::view(self.object(object)),
        }
    }

    /// The directory `ino`.
    fn dir(&self, ino: Ino) -> Result<&Dir, FsError> {
        match self.node(ino)? {
            Node::Dir(d) => Ok(&self.dirs[d as usize]),
            Node::Manifest
            | Node::Digest
            | Node::Config
            | Node::Meta { .. }
            | Node::Stats { .. }
            | Node::View { .. }
            | Node::Part { .. }
            | Node::Raw { .. }
            | Node::Npy { .. }
            | Node::Safetensors { .. }
            | Node::SafetensorsIndex
            | Node::FolderFile { .. } => Err(FsError::NotDir),
        }
    }

    /// The subdirectories of `d`, sorted by name bytes.
    fn children(&self, d: &Dir) -> &[u32] {
        &self.children[d.first as usize..][..d.len as usize]
    }

    /// Looks `name` up in directory `parent`.
    pub fn lookup(&self, parent: Ino, name: &[u8]) -> Result<Attr, FsError> {
        let dir = self.dir(parent)?;
        let listing = self.listing(dir);
        let files = &listing.files;
        if let Ok(i) = files.binary_search_by(|f| f.0.as_bytes().cmp(name)) {
            return self.getattr(files[i].1);
        }
        let children = self.children(dir);
        let i = children
            .binary_search_by(|&c| self.component(c).as_bytes().cmp(name))
            .map_err(|_| FsError::NotFound)?;
        self.getattr(u64::from(self.dirs[children[i] as usize].ino))
    }

    /// The attributes of `ino`.
    pub fn getattr(&self, ino: Ino) -> Result<Attr, FsError> {
        let node = self.node(ino)?;
        let b = &self.base;
        let (kind, size, perm, nlink) = match node {
            Node::Dir(d) => {
                let d = &self.dirs[d as usize];
                (
                    FileKind::Dir,
                    u64::from(d.files) + u64::from(d.len),
                    b.dir_perm,
                    2u32.saturating_add(d.len),
                )
            }
            Node::Manifest
            | Node::Digest
            | Node::Config
            | Node::Meta { .. }
            | Node::Stats { .. }
            | Node::View { .. }
            | Node::Part { .. }
            | Node::Raw { .. }
            | Node::Npy { .. }
            | Node::Safetensors { .. }
            | Node::SafetensorsIndex
            | Node::FolderFile { .. } => (FileKind::File, self.size(&node), b.file_perm, 1),
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
        let parent = u64::from(self.dirs[dir.parent as usize].ino);
        let dots = [(ino, "."), (parent, "..")];
        for (i, (ino, name)) in dots.into_iter().enumerate().skip(offset as usize) {
            let (kind, next) = (FileKind::Dir, i as u64 + 1);
            if sink(DirEntry {
                ino,
                kind,
                name,
                next,
            }) {
                return Ok(());
            }
        }
        self.list(dir, offset.saturating_sub(2), sink);
        Ok(())
    }

    /// Lists the entries of `dir` from the `start`-th (after the dots). The
    /// entries merge two sorted lists: the files (a few) and the
    /// subdirectories (perhaps a million, so the place to start is found by
    /// binary search, not counted on every call).
    fn list(&self, dir: &Dir, start: u64, sink: &mut dyn FnMut(DirEntry<'_>) -> bool) {
        let listing = self.listing(dir);
        let (files, at) = (&listing.files, &listing.at);
        let children = self.children(dir);
        let total = files.len() + children.len();
        let start = start.min(total as u64) as usize;
        let mut f = at.partition_point(|&p| p < start);
        let mut c = start - f;
        for i in start..total {
            let next = i as u64 + 3;
            let entry = if at.get(f) == Some(&i) {
                f += 1;
                let (name, ino) = &files[f - 1];
                let (ino, kind) = (*ino, FileKind::File);
                DirEntry {
                    ino,
                    kind,
                    name,
                    next,
                }
            } else {
                c += 1;
                let d = children[c - 1];
                let ino = u64::from(self.dirs[d as usize].ino);
                let (kind, name) = (FileKind::Dir, self.component(d));
                DirEntry {
                    ino,
                    kind,
                    name,
                    next,
                }
            };
            if sink(entry) {
                break;
            }
        }
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
