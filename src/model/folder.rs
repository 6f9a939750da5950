//! A checkpoint folder's other files: what a Hugging Face loader reads
//! beside the weights (`config.json`, the tokenizer's files, a README),
//! served byte for byte beside the tensors (docs/folders.md).
//!
//! A model has them when it was opened from a local folder, from a
//! safetensors index, or from a file named `model.safetensors`: the folder
//! holding the model's file. The model's own files (the index and the
//! files it names, or the one safetensors file) are not among them.
//!
//! What is taken, scanned once:
//! - regular files and subfolders, by their names (UTF-8 only); hidden
//!   subfolders (`.git`, `.cache`) are left out, with a note;
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
//! Each file's identity (device, inode, length) is taken by the scan; the
//! file is opened on its first read, without following a symlink, and
//! refused if it is no longer the same file or is now shorter.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::ops::Range;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// Most files and folders taken from one folder.
pub const MAX_ENTRIES: usize = 10_000;
/// Deepest subfolder taken (the folder itself is level 0).
pub const MAX_DEPTH: usize = 16;
/// Most bytes taken from one folder, all files together.
pub const MAX_BYTES: u64 = 1 << 40;

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
}

/// A file on disk, as the scan found it.
#[derive(Debug)]
pub struct DiskFile {
    /// What is opened: the file, or a symlink's target.
    target: PathBuf,
    /// (device, inode) of what the scan found.
    id: (u64, u64),
    /// Opened on first use.
    file: OnceLock<std::result::Result<File, String>>,
}

impl FolderFile {
    /// The model's object holding its bytes, for a packed file.
    pub fn object(&self) -> Option<u32> {
        match self.source {
            FileSource::Object(i) => Some(i),
            FileSource::Disk(_) => None,
        }
    }

    /// The file on disk, for a file of a folder.
    pub fn disk(&self) -> Option<&DiskFile> {
        match &self.source {
            FileSource::Disk(d) => Some(d),
            FileSource::Object(_) => None,
        }
    }

    /// The file, opened on first use and checked to be the one the scan
    /// found (a packed file has none: its bytes are the model's).
    pub fn file(&self) -> Result<&File> {
        match &self.source {
            FileSource::Disk(d) => d.file(self.len),
            FileSource::Object(i) => Err(Error::Unsupported(format!(
                "{:?} is object {i} of the model, read through the model",
                self.path
            ))),
        }
    }

    /// Up to `size` bytes at `offset`, short at the end (its length at
    /// the scan).
    pub fn read_at(&self, offset: u64, size: u32) -> Result<Vec<u8>> {
        let end = offset.saturating_add(u64::from(size)).min(self.len);
        if offset >= end {
            return Ok(Vec::new());
        }
        let mut buf = vec![0; (end - offset) as usize];
        let f = self.file()?;
        let target = self.disk().map_or(Path::new(""), |d| &d.target);
        f.read_exact_at(&mut buf, offset)
            .map_err(|e| Error::io(target.display().to_string(), e))?;
        Ok(buf)
    }
}

impl DiskFile {
    /// The path opened: the file, or a symlink's target.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The file, opened on first use and checked to be the one the scan
    /// found, at least `len` bytes long (its length at the scan).
    fn file(&self, len: u64) -> Result<&File> {
        let opened = self.file.get_or_init(|| self.open_same(len));
        opened.as_ref().map_err(|why| {
            Error::io(
                self.target.display().to_string(),
                std::io::Error::other(why.clone()),
            )
        })
    }

    fn open_same(&self, len: u64) -> std::result::Result<File, String> {
        // O_NONBLOCK: a FIFO put in the file's place since the scan would
        // otherwise hold the open until a writer comes.
        let f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&self.target)
            .map_err(|e| e.to_string())?;
        let m = f.metadata().map_err(|e| e.to_string())?;
        if !m.is_file() || (m.dev(), m.ino()) != self.id {
            return Err("no longer the file that was there at mount".into());
        }
        if m.len() < len {
            return Err(format!(
                "now {} bytes, shorter than the {len} at mount",
                m.len()
            ));
        }
        Ok(f)
    }
}

impl Folder {
    /// Scans `root`, leaving out the files of its own level named in
    /// `exclude` (the model's own files). Fails only when `root` itself
    /// cannot be read.
    pub fn scan(root: &Path, exclude: &[String]) -> Result<Folder> {
        let io = |e| Error::io(root.display().to_string(), e);
        let canon = std::fs::canonicalize(root).map_err(io)?;
        let inside = allowed_targets(&canon);
        let mut f = Folder {
            root: root.to_path_buf(),
            dirs: vec![FolderDir::root()],
            files: Vec::new(),
            notes: Vec::new(),
            bytes: 0,
        };
        let mut queue = VecDeque::from([(0u32, canon, 0usize)]);
        while let Some((d, dir, depth)) = queue.pop_front() {
            // Past the limit nothing is taken, so a folder of millions of
            // names is not read whole first.
            let room = MAX_ENTRIES.saturating_sub(f.files.len() + f.dirs.len());
            let entries = match sorted_entries(&dir, room) {
                Ok(Some(e)) => e,
                Ok(None) => {
                    let why = format!("more than {MAX_ENTRIES} files and folders");
                    return Ok(f.none_taken(why));
                }
                Err(e) if d == 0 => return Err(io(e)),
                Err(e) => {
                    f.note(
                        &f.dirs[d as usize].path.clone(),
                        &format!("cannot be read: {e}"),
                    );
                    continue;
                }
            };
            let first_file = f.files.len() as u32;
            let mut subdirs = Vec::new();
            for name in entries {
                let rel = f.rel(d, &name);
                let Some(name) = name.to_str().map(str::to_string) else {
                    f.note(&rel, "its name is not UTF-8");
                    continue;
                };
                if d == 0 && exclude.contains(&name) {
                    continue;
                }
                let path = dir.join(&name);
                let meta = match std::fs::symlink_metadata(&path) {
                    Ok(m) => m,
                    Err(e) => {
                        f.note(&rel, &format!("cannot be read: {e}"));
                        continue;
                    }
                };
                let kind = meta.file_type();
                let found = if kind.is_file() {
                    Ok((path, meta))
                } else if kind.is_symlink() {
                    follow(&path, &inside)
                } else if kind.is_dir() {
                    if name.starts_with('.') {
                        f.note(&rel, "a hidden folder");
                    } else if depth + 1 > MAX_DEPTH {
                        f.note(&rel, &format!("deeper than {MAX_DEPTH} levels"));
                    } else {
                        subdirs.push((name, path));
                    }
                    continue;
                } else {
                    Err(describe(&kind))
                };
                match found {
                    Ok((target, meta)) => {
                        f.bytes = f.bytes.saturating_add(meta.len());
                        f.files.push(FolderFile {
                            dir: d,
                            name,
                            path: rel,
                            len: meta.len(),
                            source: FileSource::Disk(DiskFile {
                                target,
                                id: (meta.dev(), meta.ino()),
                                file: OnceLock::new(),
                            }),
                        });
                    }
                    Err(why) => f.note(&rel, &why),
                }
                if let Some(why) = f.too_large(subdirs.len()) {
                    return Ok(f.none_taken(why));
                }
            }
            f.dirs[d as usize].files = first_file..f.files.len() as u32;
            let first_dir = f.dirs.len() as u32;
            for (name, path) in subdirs {
                let at = f.dirs.len() as u32;
                let rel = f.rel(d, std::ffi::OsStr::new(&name));
                f.dirs.push(FolderDir {
                    parent: d,
                    name,
                    path: rel,
                    files: 0..0,
                    dirs: 0..0,
                });
                queue.push_back((at, path, depth + 1));
            }
            f.dirs[d as usize].dirs = first_dir..f.dirs.len() as u32;
        }
        Ok(f)
    }

    /// The files of a packed model: its `ztfs.file/1` objects, at the
    /// paths their names give; `None` when it has none. A name that is
    /// both a file and a folder keeps the folder, with a note.
    pub fn of_objects(objects: &[crate::format::Object]) -> Option<Folder> {
        #[derive(Default)]
        struct Level {
            files: Vec<(String, u64, u32)>,
            dirs: std::collections::BTreeMap<String, Level>,
        }
        let mut top = Level::default();
        let mut any = false;
        for (i, o) in objects.iter().enumerate() {
            if !crate::format::profiles::is_file(o) {
                continue;
            }
            any = true;
            let mut at = &mut top;
            let mut components: Vec<&str> = o.name.split('/').collect();
            let name = components.pop().unwrap_or_default();
            for c in components {
                at = at.dirs.entry(c.to_string()).or_default();
            }
            let len = o.shape.first().copied().unwrap_or(0);
            at.files.push((name.to_string(), len, i as u32));
        }
        if !any {
            return None;
        }
        let mut f = Folder {
            root: PathBuf::new(),
            dirs: vec![FolderDir::root()],
            files: Vec::new(),
            notes: Vec::new(),
            bytes: 0,
        };
        let mut queue = VecDeque::from([(0u32, top)]);
        while let Some((d, mut level)) = queue.pop_front() {
            level
                .files
                .sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            let first_file = f.files.len() as u32;
            for (name, len, i) in level.files {
                let path = f.rel(d, std::ffi::OsStr::new(&name));
                if level.dirs.contains_key(&name) {
                    f.note(&path, "both a file and a folder: the folder is served");
                    continue;
                }
                f.bytes = f.bytes.saturating_add(len);
                let source = FileSource::Object(i);
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
                let path = f.rel(d, std::ffi::OsStr::new(&name));
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
        }
        Some(f)
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

/// The names in `dir`, sorted by bytes; `None` when there are more than
/// `max` (the reading stops there).
fn sorted_entries(dir: &Path, max: usize) -> std::io::Result<Option<Vec<std::ffi::OsString>>> {
    use std::os::unix::ffi::OsStrExt;
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir)? {
        if names.len() == max {
            return Ok(None);
        }
        names.push(e?.file_name());
    }
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    Ok(Some(names))
}

/// Where a symlink in folder `canon` may lead: inside it, and for a
/// snapshot of the Hugging Face cache (`.../snapshots/REV`) inside the
/// repo's `blobs/`.
fn allowed_targets(canon: &Path) -> Vec<PathBuf> {
    let mut out = vec![canon.to_path_buf()];
    let snapshots = canon.parent();
    if snapshots.is_some_and(|s| s.file_name().is_some_and(|n| n == "snapshots")) {
        let blobs = snapshots.and_then(Path::parent).map(|r| r.join("blobs"));
        if let Some(b) = blobs.and_then(|b| std::fs::canonicalize(b).ok()) {
            out.push(b);
        }
    }
    out
}

/// The regular file the symlink `path` leads to, when it is inside one of
/// `inside`; else why not.
fn follow(
    path: &Path,
    inside: &[PathBuf],
) -> std::result::Result<(PathBuf, std::fs::Metadata), String> {
    let target =
        std::fs::canonicalize(path).map_err(|e| format!("a symlink that leads nowhere ({e})"))?;
    if !inside.iter().any(|dir| target.starts_with(dir)) {
        return Err("a symlink to outside the folder".into());
    }
    let meta = std::fs::metadata(&target).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err(format!("a symlink to {}", describe(&meta.file_type())));
    }
    Ok((target, meta))
}

/// What a file type is, for a note: "a FIFO", "a directory", ...
fn describe(kind: &std::fs::FileType) -> String {
    format!("a {}", crate::store::kind_of(kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(f: &Folder) -> Vec<&str> {
        f.files.iter().map(|x| x.path.as_str()).collect()
    }

    #[test]
    fn a_folder_is_taken_breadth_first_with_its_rules() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("repo");
        std::fs::create_dir_all(root.join("tok/deep")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join("config.json"), "{}").unwrap();
        std::fs::write(root.join("model.safetensors"), "x").unwrap();
        std::fs::write(root.join(".gitattributes"), "a").unwrap();
        std::fs::write(root.join("tok/vocab.txt"), "abc").unwrap();
        std::fs::write(root.join("tok/deep/merges.txt"), "m").unwrap();
        std::fs::write(t.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink("config.json", root.join("link.json")).unwrap();
        std::os::unix::fs::symlink("../secret", root.join("out")).unwrap();
        std::os::unix::fs::symlink("tok", root.join("dirlink")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(root.join("pipe"))
            .status();
        assert!(made.unwrap().success());
        let f = Folder::scan(&root, &["model.safetensors".into()]).unwrap();
        assert_eq!(
            names(&f),
            [
                ".gitattributes",
                "config.json",
                "link.json",
                "tok/vocab.txt",
                "tok/deep/merges.txt"
            ]
        );
        let dirs: Vec<_> = f.dirs.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(dirs, ["", "tok", "tok/deep"]);
        assert_eq!(f.dirs[0].dirs, 1..2);
        assert_eq!(f.dirs[1].files, 3..4);
        let notes = f.notes.join("\n");
        for left_out in [
            "\".git\" left out: a hidden folder",
            "\"out\" left out: a symlink to outside the folder",
            "\"dirlink\" left out: a symlink to a directory",
            "\"pipe\" left out: a FIFO",
        ] {
            assert!(notes.contains(left_out), "{left_out} in {notes}");
        }
        assert_eq!(f.files[2].read_at(0, 100).unwrap(), b"{}");
        assert_eq!(f.files[3].read_at(1, 100).unwrap(), b"bc");
        assert_eq!(f.bytes, 1 + 2 + 2 + 3 + 1);
    }

    #[test]
    fn a_file_replaced_after_the_scan_is_refused() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("a.txt"), "hello").unwrap();
        std::fs::write(t.path().join("b.txt"), "other").unwrap();
        std::fs::write(t.path().join("c.txt"), "third").unwrap();
        let f = Folder::scan(t.path(), &[]).unwrap();
        std::fs::rename(t.path().join("b.txt"), t.path().join("a.txt")).unwrap();
        let e = f.files[0].read_at(0, 5).unwrap_err().to_string();
        assert!(e.contains("no longer the file"), "{e}");
        // A FIFO in a file's place fails at once, without waiting for a
        // writer.
        std::fs::remove_file(t.path().join("c.txt")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(t.path().join("c.txt"))
            .status();
        assert!(made.unwrap().success());
        let e = f.files[2].read_at(0, 5).unwrap_err().to_string();
        assert!(e.contains("no longer the file"), "{e}");
    }

    #[test]
    fn past_a_limit_no_file_is_taken() {
        let t = tempfile::tempdir().unwrap();
        for i in 0..=MAX_ENTRIES {
            std::fs::File::create(t.path().join(format!("f{i}"))).unwrap();
        }
        let f = Folder::scan(t.path(), &[]).unwrap();
        assert!(f.is_empty());
        assert!(
            f.notes[0].contains("more than 10000 files and folders"),
            "{:?}",
            f.notes
        );
    }
}
