//! A checkpoint folder's other files: what a Hugging Face loader reads
//! beside the weights (`config.json`, the tokenizer's files, a README),
//! served byte for byte beside the tensors (docs/folders.md).
//!
//! A model has them when the user named the folder: a local folder given,
//! or an index (which names files of its folder). A model file given
//! alone, whatever its name, is that file: the folder it lies in
//! (`~/Downloads`) was never named. The model's own files (the index and
//! the files it names, or the folder's one model file) are not among them.
//!
//! What is taken, scanned once:
//! - regular files and subfolders, by their names (UTF-8 only); hidden
//!   ones (a name starting with `.`: `.git`, `.env`, `.netrc`) are left
//!   out at every level, with a note ([`is_hidden`]);
//! - a symlink when it leads to a regular file inside the folder (or, for
//!   a snapshot of the Hugging Face cache, `.../snapshots/REV/`, inside
//!   that repo's `blobs/`, where the cache keeps the files); any other is
//!   left out, with a note;
//! - FIFOs, sockets and devices are left out, with a note;
//! - at most [`MAX_ENTRIES`] files and folders, [`MAX_DEPTH`] levels and
//!   [`MAX_BYTES`] bytes in all: past any of them none is taken (a
//!   folder that large is not a model repository, most likely a mistake),
//!   and a note says why.
//!
//! The walk is by descriptors, never by path: each folder is read through
//! a descriptor opened one component at a time from the folder given,
//! without following a symlink, and each entry is looked at relative to
//! its folder's descriptor. So a subfolder swapped for a symlink to
//! `/etc` while the scan runs, or later, brings nothing from outside in.
//! Each file's identity (device, inode, length) is taken by the scan; the
//! file is opened on its first read the same way, and refused if it is no
//! longer the same file or is now shorter.

mod scan;

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::store::Store;
pub use scan::{open_in, DiskFile, OpenIn};

/// Most files and folders taken from one folder.
pub const MAX_ENTRIES: usize = 10_000;
/// Deepest subfolder taken (the folder itself is level 0).
pub const MAX_DEPTH: usize = 16;
/// Most bytes taken from one folder, all files together.
pub const MAX_BYTES: u64 = 1 << 40;

/// True when `name`, a file's or a folder's in a model's folder, is
/// hidden (starts with `.`), and so not taken: naming a folder names what
/// a listing of it shows, not the secrets a checkout or a home folder keeps
/// beside it (`.env`, `.netrc`, `.git-credentials`), nor a clone's `.git`,
/// which holds the weights a second time. A loader reads none of them.
pub fn is_hidden(name: &str) -> bool {
    name.starts_with('.')
}

/// The other files of a checkpoint folder.
#[derive(Debug)]
pub struct Folder {
    /// The folder, as given.
    pub root: PathBuf,
    /// Its folders, breadth first: `dirs[0]` is the folder itself, and
    /// each folder's subfolders are contiguous.
    pub dirs: Vec<FolderDir>,
    /// Its files, each folder's contiguous and sorted by name bytes.
    pub files: Vec<FolderFile>,
    /// What was left out, and why.
    pub notes: Vec<String>,
    /// The files' bytes together.
    pub bytes: u64,
}

/// A folder in a [`Folder`].
#[derive(Debug)]
pub struct FolderDir {
    /// Its parent's index (the root is its own parent).
    pub parent: u32,
    /// Its name in its parent (empty for the root).
    pub name: String,
    /// Its path from the root, `/`-separated (empty for the root).
    pub path: String,
    /// Its files, as indexes into [`Folder::files`].
    pub files: Range<u32>,
    /// Its subfolders, as indexes into [`Folder::dirs`], sorted by name
    /// bytes.
    pub dirs: Range<u32>,
}

impl FolderDir {
    /// The folder itself, before its entries are known.
    fn root() -> FolderDir {
        FolderDir {
            parent: 0,
            name: String::new(),
            path: String::new(),
            files: 0..0,
            dirs: 0..0,
        }
    }
}

/// A file in a [`Folder`].
#[derive(Debug)]
pub struct FolderFile {
    /// Its folder's index.
    pub dir: u32,
    /// Its name in its folder.
    pub name: String,
    /// Its path from the root, `/`-separated.
    pub path: String,
    /// Its length at the scan: the length served.
    pub len: u64,
    /// Where its bytes are.
    pub source: FileSource,
}

/// Where a [`FolderFile`]'s bytes are.
#[derive(Debug)]
pub enum FileSource {
    /// A file on disk.
    Disk(DiskFile),
    /// Object `i` of the model: a `ztfs.file/1` object of a `.zt` that
    /// `ztfs pack` wrote from a folder.
    Object(u32),
    /// A file read through a [`Store`]: a Hub repository's, by URL, or
    /// its blob in the local Hugging Face cache.
    Store(StoreFile),
}

/// A file read through a [`Store`], opened on first use.
pub struct StoreFile {
    /// Its URL, or a local path.
    location: PathBuf,
    store: OnceLock<std::result::Result<Store, String>>,
}

impl std::fmt::Debug for StoreFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoreFile({})", crate::store::shown(&self.location))
    }
}

impl StoreFile {
    /// The file at `location` (a URL or a local path), not yet opened.
    pub fn new(location: PathBuf) -> StoreFile {
        StoreFile {
            location,
            store: OnceLock::new(),
        }
    }

    /// Where it is read from.
    pub fn location(&self) -> &Path {
        &self.location
    }

    /// True when its reads are requests to a server.
    pub fn is_remote(&self) -> bool {
        crate::store::url_of(&self.location).is_some()
    }

    /// The store, opened on first use (one request for a URL) and checked
    /// to be `len` bytes long, the length listed.
    pub fn store(&self, len: u64) -> Result<&Store> {
        let opened = self.store.get_or_init(|| {
            let store = Store::open(&self.location).map_err(|e| e.to_string())?;
            match store.len() == len {
                true => Ok(store),
                false => Err(format!(
                    "{} bytes, not the {len} the repository's listing gave",
                    store.len()
                )),
            }
        });
        opened.as_ref().map_err(|why| {
            Error::io(
                crate::store::shown(&self.location),
                std::io::Error::other(why.clone()),
            )
        })
    }
}

impl FolderFile {
    /// The model's object holding its bytes, for a packed file.
    pub fn object(&self) -> Option<u32> {
        match self.source {
            FileSource::Object(i) => Some(i),
            FileSource::Disk(_) | FileSource::Store(_) => None,
        }
    }

    /// The file on disk, for a file of a folder.
    pub fn disk(&self) -> Option<&DiskFile> {
        match &self.source {
            FileSource::Disk(d) => Some(d),
            FileSource::Object(_) | FileSource::Store(_) => None,
        }
    }

    /// True when reading it makes requests to a server.
    pub fn is_remote(&self) -> bool {
        matches!(&self.source, FileSource::Store(s) if s.is_remote())
    }

    /// Opens it (once): a file on disk checked to be the one the scan
    /// found, a store checked to be of the length listed; a packed file
    /// is the model's, open already.
    pub fn open(&self) -> Result<()> {
        match &self.source {
            FileSource::Disk(d) => d.file(self.len).map(drop),
            FileSource::Store(s) => s.store(self.len).map(drop),
            FileSource::Object(_) => Ok(()),
        }
    }

    /// Up to `size` bytes at `offset`, short at the end (its length at
    /// the scan or in the listing).
    pub fn read_at(&self, offset: u64, size: u32) -> Result<Vec<u8>> {
        let end = offset.saturating_add(u64::from(size)).min(self.len);
        if offset >= end {
            return Ok(Vec::new());
        }
        match &self.source {
            FileSource::Disk(d) => {
                let mut buf = vec![0; (end - offset) as usize];
                (d.file(self.len)?.read_exact_at(&mut buf, offset))
                    .map_err(|e| Error::io(d.shown().display().to_string(), e))?;
                Ok(buf)
            }
            FileSource::Store(s) => {
                Ok(s.store(self.len)?.slice(offset, end - offset)?.into_owned())
            }
            FileSource::Object(i) => Err(Error::Unsupported(format!(
                "{:?} is object {i} of the model, read through the model",
                self.path
            ))),
        }
    }
}

impl Folder {
    /// The files of a packed model: its `ztfs.file/1` objects, at the
    /// paths their names give; `None` when it has none.
    pub fn of_objects(objects: &[crate::format::Object]) -> Option<Folder> {
        let files: Vec<(String, u64, FileSource)> = (objects.iter().enumerate())
            .filter(|(_, o)| crate::format::profiles::is_file(o))
            .map(|(i, o)| {
                let len = o.shape.first().copied().unwrap_or(0);
                (o.name.to_string(), len, FileSource::Object(i as u32))
            })
            .collect();
        (!files.is_empty()).then(|| Folder::of_paths(PathBuf::new(), files))
    }

    /// The folder of `files` (path, length, source), each path
    /// `/`-separated. A path with an empty, `.` or `..` component is left
    /// out, and so is a name that is both a file and a folder (the folder
    /// is kept), with a note; past a limit none is taken.
    pub fn of_paths(root: PathBuf, files: Vec<(String, u64, FileSource)>) -> Folder {
        #[derive(Default)]
        struct Level {
            files: Vec<(String, u64, FileSource)>,
            dirs: std::collections::BTreeMap<String, Level>,
        }
        let mut f = Folder {
            root,
            dirs: vec![FolderDir::root()],
            files: Vec::new(),
            notes: Vec::new(),
            bytes: 0,
        };
        let mut top = Level::default();
        for (path, len, source) in files {
            let mut components: Vec<&str> = path.split('/').collect();
            let plain = |c: &&str| !c.is_empty() && *c != "." && *c != ".." && c.len() <= 255;
            if !components.iter().all(plain) {
                f.note(&path, "its path has an empty, '.' or '..' component");
                continue;
            }
            let name = components.pop().unwrap_or_default().to_string();
            let mut at = &mut top;
            for c in components {
                at = at.dirs.entry(c.to_string()).or_default();
            }
            at.files.push((name, len, source));
        }
        let mut queue = VecDeque::from([(0u32, top)]);
        while let Some((d, mut level)) = queue.pop_front() {
            level
                .files
                .sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            let first_file = f.files.len() as u32;
            for (name, len, source) in level.files {
                let path = f.rel(d, OsStr::new(&name));
                if level.dirs.contains_key(&name) {
                    f.note(&path, "both a file and a folder: the folder is served");
                    continue;
                }
                f.bytes = f.bytes.saturating_add(len);
                f.files.push(FolderFile {
                    dir: d,
                    name,
                    path,
                    len,
                    source,
                });
            }
            f.dirs[d as usize].files = first_file..f.files.len() as u32;
            let first_dir = f.dirs.len() as u32;
            for (name, sub) in level.dirs {
                let at = f.dirs.len() as u32;
                let path = f.rel(d, OsStr::new(&name));
                f.dirs.push(FolderDir {
                    parent: d,
                    name,
                    path,
                    files: 0..0,
                    dirs: 0..0,
                });
                queue.push_back((at, sub));
            }
            f.dirs[d as usize].dirs = first_dir..f.dirs.len() as u32;
            if let Some(why) = f.too_large(0) {
                return f.none_taken(why);
            }
        }
        f
    }

    /// The path from the root of `name` in folder `d`.
    fn rel(&self, d: u32, name: &std::ffi::OsStr) -> String {
        let name = name.to_string_lossy();
        match self.dirs[d as usize].path.as_str() {
            "" => name.into_owned(),
            dir => format!("{dir}/{name}"),
        }
    }

    fn note(&mut self, rel: &str, why: &str) {
        self.notes.push(format!("{rel:?} left out: {why}"));
    }

    /// Why the scan so far (with `pending` folders not yet added) passes a
    /// limit, if it does.
    fn too_large(&self, pending: usize) -> Option<String> {
        let entries = self.files.len() + self.dirs.len() + pending;
        if entries > MAX_ENTRIES {
            return Some(format!("more than {MAX_ENTRIES} files and folders"));
        }
        if self.bytes > MAX_BYTES {
            return Some(format!("more than {MAX_BYTES} bytes of files"));
        }
        None
    }

    /// The folder with none of its files, for `why`.
    fn none_taken(self, why: String) -> Folder {
        let root = self.root;
        let notes = vec![format!(
            "{}: none of the folder's other files is served: it holds {why}",
            root.display()
        )];
        Folder {
            dirs: vec![FolderDir::root()],
            files: Vec::new(),
            notes,
            bytes: 0,
            root,
        }
    }

    /// True when it serves no file and no folder.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.dirs.len() <= 1
    }
}
