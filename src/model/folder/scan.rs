//! The walk of a folder on disk (see the parent module): by descriptors,
//! never by path, and the opening of its files the same way.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::{FileSource, Folder, FolderDir, FolderFile, MAX_DEPTH, MAX_ENTRIES};
use crate::error::{Error, Result};

/// A file on disk, as the scan found it.
#[derive(Debug)]
pub struct DiskFile {
    /// The directory its path starts from.
    base: Arc<Base>,
    /// Its path under `base`, normal components only, walked without
    /// following a symlink: the file, or a symlink's target.
    rel: PathBuf,
    /// Its path as shown in messages.
    shown: PathBuf,
    /// (device, inode) of what the scan found.
    id: (u64, u64),
    /// Opened on first use.
    file: OnceLock<std::result::Result<File, String>>,
}

/// The directory a folder's files are opened from, held open.
#[derive(Debug)]
struct Base {
    fd: OwnedFd,
    /// The folder's path under `fd`: empty, or `snapshots/REV` when the
    /// folder is a snapshot of the Hugging Face cache and `fd` its repo.
    root: PathBuf,
    /// Where under `fd` a symlink may lead: the folder, and for a cache
    /// snapshot the repo's `blobs`.
    allowed: Vec<PathBuf>,
    /// The files the scan took, each held open once read: for the advice
    /// when opening one meets the limit on open files.
    files: AtomicUsize,
}

impl DiskFile {
    /// Its path as shown in messages: the file, or a symlink's target.
    pub fn shown(&self) -> &Path {
        &self.shown
    }

    /// The file, opened on first use and checked to be the one the scan
    /// found, at least `len` bytes long (its length at the scan).
    pub fn file(&self, len: u64) -> Result<&File> {
        let opened = self.file.get_or_init(|| self.open_same(len));
        opened.as_ref().map_err(|why| {
            Error::io(
                self.shown.display().to_string(),
                std::io::Error::other(why.clone()),
            )
        })
    }

    fn open_same(&self, len: u64) -> std::result::Result<File, String> {
        let files = self.base.files.load(Ordering::Relaxed);
        let opened = open_beneath(&self.base.fd, &self.rel, false)
            .map_err(|e| crate::sys::explain_open_limit(e, files).to_string())?;
        let f = File::from(opened);
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

/// Opens `rel` (normal components only) under `base`, one component at a
/// time, following no symlink: a symlink anywhere on the way fails
/// (`ELOOP` or `ENOTDIR`). A directory when `dir`. O_NONBLOCK: a FIFO put
/// in a file's place fails at the type check instead of waiting for a
/// writer.
fn open_beneath(base: &OwnedFd, rel: &Path, dir: bool) -> std::io::Result<OwnedFd> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
    let names: Vec<&OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(std::io::Error::other(format!(
                "{rel:?} is not a plain relative path"
            ))),
        })
        .collect::<std::io::Result<_>>()?;
    let mut at: Option<OwnedFd> = None;
    for (i, name) in names.iter().enumerate() {
        let last = i + 1 == names.len();
        let flags = if last && !dir {
            flags
        } else {
            flags | OFlags::DIRECTORY
        };
        let from = at.as_ref().map_or(base.as_fd(), |f| f.as_fd());
        at = Some(rustix::fs::openat(from, *name, flags, Mode::empty())?);
    }
    match at {
        Some(fd) => Ok(fd),
        None => Ok(rustix::fs::openat(
            base,
            ".",
            flags | OFlags::DIRECTORY,
            Mode::empty(),
        )?),
    }
}

/// Why a file named in a folder could not be opened by [`open_in`].
#[derive(Debug)]
pub enum OpenIn {
    /// Not there, or not a regular file.
    Missing(String),
    /// It leads outside the folder (a symlink out, or through a symlinked
    /// folder), which the folder's rules never follow.
    Outside(String),
}

/// Opens the regular file `rel` (a relative path, `..` refused by the
/// caller) of folder `root` by the folder's rules: each folder on the
/// way opened without following a symlink; the file itself a regular
/// file, or a symlink leading, with no further symlink, to one inside the
/// folder (or, for a snapshot of the Hugging Face cache, its repo's
/// `blobs`). Returns it with its path as shown in messages.
pub fn open_in(root: &Path, rel: &str) -> std::result::Result<(File, PathBuf), OpenIn> {
    let missing = |e: std::io::Error| OpenIn::Missing(format!("{}: {e}", root.join(rel).display()));
    let base = Base::of(root).map_err(missing)?;
    let rel_path = Path::new(rel);
    let mut names: Vec<&OsStr> = Vec::new();
    for c in rel_path.components() {
        match c {
            Component::Normal(n) => names.push(n),
            Component::CurDir => {}
            _ => {
                return Err(OpenIn::Outside(format!(
                    "{rel:?} is not a plain relative path"
                )))
            }
        }
    }
    let Some((name, dirs)) = names.split_last() else {
        return Err(OpenIn::Missing(format!("{rel:?} names no file")));
    };
    let dir: PathBuf = dirs.iter().fold(base.root.clone(), |d, n| d.join(n));
    let dir_fd = open_beneath(&base.fd, &dir, true).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::ENOTDIR) => OpenIn::Outside(format!(
            "{rel:?}: a folder on its way is a symlink (not followed) or not a folder"
        )),
        _ => missing(e),
    })?;
    let stat = rustix::fs::statat(&dir_fd, *name, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| missing(e.into()))?;
    let shown = root.join(rel);
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {
            let fd = open_beneath(&dir_fd, Path::new(name), false).map_err(missing)?;
            Ok((File::from(fd), shown))
        }
        FileType::Symlink => {
            let name = name
                .to_str()
                .ok_or_else(|| OpenIn::Missing(format!("{rel:?}: not UTF-8")))?;
            let found = base
                .follow(&dir_fd, &dir, name)
                .map_err(|why| match why.as_str() {
                    "a symlink that leads nowhere" => OpenIn::Missing(format!("{rel:?}: {why}")),
                    _ if why.starts_with("a symlink to a") && !why.contains("outside") => {
                        OpenIn::Missing(format!("{rel:?}: {why}"))
                    }
                    _ => OpenIn::Outside(format!("{rel:?}: {why}")),
                })?;
            let fd = open_beneath(&base.fd, &found.rel, false).map_err(missing)?;
            let file = File::from(fd);
            let m = file.metadata().map_err(missing)?;
            if !m.is_file() || (m.dev(), m.ino()) != found.id {
                return Err(OpenIn::Outside(format!(
                    "{rel:?}: changed while it was opened"
                )));
            }
            Ok((file, base.shown(root, &found.rel)))
        }
        _ => Err(OpenIn::Missing(format!(
            "{rel:?}: {}, not a regular file",
            describe(stat.st_mode)
        ))),
    }
}

impl Folder {
    /// Scans `root`, leaving out the files of its own level named in
    /// `exclude` (the model's own files). Fails only when `root` itself
    /// cannot be read.
    pub fn scan(root: &Path, exclude: &[String]) -> Result<Folder> {
        let io = |e| Error::io(root.display().to_string(), e);
        let base = Arc::new(Base::of(root).map_err(io)?);
        let mut f = Folder {
            root: root.to_path_buf(),
            dirs: vec![FolderDir::root()],
            files: Vec::new(),
            notes: Vec::new(),
            bytes: 0,
        };
        let mut queue = VecDeque::from([(0u32, base.root.clone(), 0usize)]);
        while let Some((d, dir, depth)) = queue.pop_front() {
            // Past the limit nothing is taken, so a folder of millions of
            // names is not read whole first.
            let room = MAX_ENTRIES.saturating_sub(f.files.len() + f.dirs.len());
            let (dir_fd, entries) = match open_beneath(&base.fd, &dir, true)
                .and_then(|fd| sorted_entries(&fd, room).map(|e| (fd, e)))
            {
                Ok((fd, Some(e))) => (fd, e),
                Ok((_, None)) => {
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
                let stat =
                    match rustix::fs::statat(&dir_fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(m) => m,
                        Err(e) => {
                            f.note(
                                &rel,
                                &format!("cannot be read: {}", std::io::Error::from(e)),
                            );
                            continue;
                        }
                    };
                let kind = FileType::from_raw_mode(stat.st_mode);
                if super::is_hidden(&name) {
                    let what = match kind {
                        FileType::Directory => "a hidden folder",
                        _ => "a hidden file",
                    };
                    f.note(&rel, what);
                    continue;
                }
                let found = match kind {
                    FileType::RegularFile => Ok(Found {
                        rel: dir.join(&name),
                        id: (stat.st_dev, stat.st_ino),
                        len: stat.st_size as u64,
                    }),
                    FileType::Symlink => base.follow(&dir_fd, &dir, &name),
                    FileType::Directory => {
                        if depth + 1 > MAX_DEPTH {
                            f.note(&rel, &format!("deeper than {MAX_DEPTH} levels"));
                        } else {
                            subdirs.push(name);
                        }
                        continue;
                    }
                    _ => Err(describe(stat.st_mode)),
                };
                match found {
                    Ok(found) => {
                        f.bytes = f.bytes.saturating_add(found.len);
                        let shown = base.shown(root, &found.rel);
                        f.files.push(FolderFile {
                            dir: d,
                            name,
                            path: rel,
                            len: found.len,
                            source: FileSource::Disk(DiskFile {
                                base: base.clone(),
                                rel: found.rel,
                                shown,
                                id: found.id,
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
            for name in subdirs {
                let at = f.dirs.len() as u32;
                let rel = f.rel(d, OsStr::new(&name));
                queue.push_back((at, dir.join(&name), depth + 1));
                f.dirs.push(FolderDir {
                    parent: d,
                    name,
                    path: rel,
                    files: 0..0,
                    dirs: 0..0,
                });
            }
            f.dirs[d as usize].dirs = first_dir..f.dirs.len() as u32;
        }
        base.files.store(f.files.len(), Ordering::Relaxed);
        Ok(f)
    }
}

/// A file the scan takes: its path under the base, identity and length.
struct Found {
    rel: PathBuf,
    id: (u64, u64),
    len: u64,
}

impl Base {
    /// The base for folder `root`: the folder itself, or for a snapshot
    /// of the Hugging Face cache (`.../snapshots/REV`, whose files are
    /// symlinks to `../../blobs/HASH`) the cache's repo folder, when it
    /// holds `blobs` and the snapshot is the folder given.
    fn of(root: &Path) -> std::io::Result<Base> {
        let dir = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rustix::fs::open(root, dir, Mode::empty())?;
        let plain = |fd| Base {
            fd,
            root: PathBuf::new(),
            allowed: vec![PathBuf::new()],
            files: AtomicUsize::new(0),
        };
        let canon = std::fs::canonicalize(root)?;
        let (Some(rev), Some(snapshots)) = (canon.file_name(), canon.parent()) else {
            return Ok(plain(fd));
        };
        let repo = snapshots.parent();
        if snapshots.file_name() != Some(OsStr::new("snapshots")) || repo.is_none() {
            return Ok(plain(fd));
        }
        let Ok(repo_fd) = rustix::fs::open(repo.unwrap_or(Path::new("/")), dir, Mode::empty())
        else {
            return Ok(plain(fd));
        };
        let root_rel = Path::new("snapshots").join(rev);
        let same = |a: &OwnedFd, b: &OwnedFd| {
            let (a, b) = (rustix::fs::fstat(a), rustix::fs::fstat(b));
            matches!((a, b), (Ok(a), Ok(b)) if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino))
        };
        let is_snapshot = open_beneath(&repo_fd, &root_rel, true).is_ok_and(|s| same(&s, &fd));
        let has_blobs = open_beneath(&repo_fd, Path::new("blobs"), true).is_ok();
        if !is_snapshot || !has_blobs {
            return Ok(plain(fd));
        }
        Ok(Base {
            fd: repo_fd,
            allowed: vec![root_rel.clone(), PathBuf::from("blobs")],
            root: root_rel,
            files: AtomicUsize::new(0),
        })
    }

    /// The regular file the symlink `name` in folder `dir` (its path
    /// under the base, open as `dir_fd`) leads to; else why not. The
    /// target is read as text and resolved by its components (`..` steps
    /// back one), and must lead, with no further symlink, to a file under
    /// one of the allowed folders.
    fn follow(
        &self,
        dir_fd: &OwnedFd,
        dir: &Path,
        name: &str,
    ) -> std::result::Result<Found, String> {
        let target = rustix::fs::readlinkat(dir_fd, name, Vec::new()).map_err(|e| {
            format!(
                "a symlink that cannot be read ({})",
                std::io::Error::from(e)
            )
        })?;
        let target = Path::new(OsStr::from_bytes(target.as_bytes()));
        let outside = || "a symlink to outside the folder".to_string();
        let mut rel = dir.to_path_buf();
        for c in target.components() {
            match c {
                Component::Normal(n) => rel.push(n),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !rel.pop() {
                        return Err(outside());
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(outside()),
            }
        }
        if !self.allowed.iter().any(|a| rel.starts_with(a)) {
            return Err(outside());
        }
        let fd = open_beneath(&self.fd, &rel, false).map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::ENOTDIR) => {
                "a symlink through another symlink (not followed)".to_string()
            }
            Some(libc::ENOENT) => "a symlink that leads nowhere".to_string(),
            _ => format!("a symlink whose target cannot be opened ({e})"),
        })?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| std::io::Error::from(e).to_string())?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Ok(Found {
                rel,
                id: (stat.st_dev, stat.st_ino),
                len: stat.st_size as u64,
            }),
            _ => Err(format!("a symlink to {}", describe(stat.st_mode))),
        }
    }

    /// How the file at `rel` under the base is named in messages: from
    /// `root` as given when it is in the folder, else (a cache blob) from
    /// the folder's repo.
    fn shown(&self, root: &Path, rel: &Path) -> PathBuf {
        match rel.strip_prefix(&self.root) {
            Ok(inside) => root.join(inside),
            Err(_) => root.join("../..").join(rel),
        }
    }
}

/// What a file of `mode` is, for a note: "a FIFO", "a directory", ...
fn describe(mode: u32) -> String {
    format!("a {}", crate::store::kind_of(mode))
}

/// The names in the folder open as `dir`, sorted by bytes; `None` when
/// there are more than `max` (the reading stops there).
fn sorted_entries(dir: &OwnedFd, max: usize) -> std::io::Result<Option<Vec<OsString>>> {
    let mut names = Vec::new();
    let mut entries = rustix::fs::Dir::read_from(dir)?;
    while let Some(e) = entries.read() {
        let e = e?;
        let name = e.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if names.len() == max {
            return Ok(None);
        }
        names.push(OsStr::from_bytes(name).to_os_string());
    }
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    Ok(Some(names))
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
        std::os::unix::fs::symlink("config.json", root.join(".hidden-link")).unwrap();
        std::fs::write(root.join("tok/.env"), "KEY=s").unwrap();
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
                "config.json",
                "link.json",
                "tok/vocab.txt",
                "tok/deep/merges.txt"
            ]
        );
        let dirs: Vec<_> = f.dirs.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(dirs, ["", "tok", "tok/deep"]);
        assert_eq!(f.dirs[0].dirs, 1..2);
        assert_eq!(f.dirs[1].files, 2..3);
        let notes = f.notes.join("\n");
        for left_out in [
            "\".git\" left out: a hidden folder",
            "\".gitattributes\" left out: a hidden file",
            "\".hidden-link\" left out: a hidden file",
            "\"tok/.env\" left out: a hidden file",
            "\"out\" left out: a symlink to outside the folder",
            "\"dirlink\" left out: a symlink to a directory",
            "\"pipe\" left out: a FIFO",
        ] {
            assert!(notes.contains(left_out), "{left_out} in {notes}");
        }
        assert_eq!(f.files[1].read_at(0, 100).unwrap(), b"{}");
        assert_eq!(f.files[2].read_at(1, 100).unwrap(), b"bc");
        assert_eq!(f.bytes, 2 + 2 + 3 + 1);
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

    #[test]
    fn a_folder_swapped_for_a_symlink_after_the_scan_brings_nothing_in() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("repo");
        std::fs::create_dir_all(root.join("tok")).unwrap();
        std::fs::create_dir_all(t.path().join("elsewhere")).unwrap();
        std::fs::write(root.join("tok/vocab.txt"), "abc").unwrap();
        // The same file (a hard link) reached through a swapped folder: a
        // walk by path would find the identity it expects and serve it.
        std::fs::hard_link(
            root.join("tok/vocab.txt"),
            t.path().join("elsewhere/vocab.txt"),
        )
        .unwrap();
        std::os::unix::fs::symlink("tok/vocab.txt", root.join("two")).unwrap();
        std::os::unix::fs::symlink("two", root.join("one")).unwrap();
        let f = Folder::scan(&root, &[]).unwrap();
        assert_eq!(names(&f), ["two", "tok/vocab.txt"]);
        let notes = f.notes.join("\n");
        assert!(
            notes.contains("\"one\" left out: a symlink through another symlink"),
            "{notes}"
        );
        std::fs::rename(root.join("tok"), t.path().join("old")).unwrap();
        std::os::unix::fs::symlink("../elsewhere", root.join("tok")).unwrap();
        for file in &f.files {
            let e = file.read_at(0, 3).unwrap_err().to_string();
            assert!(
                e.contains("symbolic links") || e.contains("Not a directory"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_hugging_face_cache_snapshot_reaches_its_blobs_and_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("models--org--name");
        let snap = repo.join("snapshots/0123abcd");
        std::fs::create_dir_all(snap.join("tok")).unwrap();
        std::fs::create_dir_all(repo.join("blobs")).unwrap();
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("blobs/aaa"), "{}").unwrap();
        std::fs::write(repo.join("blobs/bbb"), "vocab").unwrap();
        std::fs::write(repo.join("refs/main"), "0123abcd").unwrap();
        std::os::unix::fs::symlink("../../blobs/aaa", snap.join("config.json")).unwrap();
        std::os::unix::fs::symlink("../../../blobs/bbb", snap.join("tok/vocab.txt")).unwrap();
        std::os::unix::fs::symlink("../../refs/main", snap.join("ref")).unwrap();
        std::os::unix::fs::symlink("../../../../secret", snap.join("up")).unwrap();
        std::fs::write(t.path().join("secret"), "s").unwrap();
        let f = Folder::scan(&snap, &[]).unwrap();
        assert_eq!(names(&f), ["config.json", "tok/vocab.txt"]);
        assert_eq!(f.files[0].read_at(0, 10).unwrap(), b"{}");
        assert_eq!(f.files[1].read_at(0, 10).unwrap(), b"vocab");
        let notes = f.notes.join("\n");
        for left_out in [
            "\"ref\" left out: a symlink to outside",
            "\"up\" left out: a symlink to outside",
        ] {
            assert!(notes.contains(left_out), "{left_out} in {notes}");
        }
        // Outside a cache (no `blobs` beside `snapshots`), the same links
        // lead outside the folder.
        std::fs::rename(repo.join("blobs"), repo.join("blobs.old")).unwrap();
        let f = Folder::scan(&snap, &[]).unwrap();
        assert!(f.files.is_empty(), "{:?}", names(&f));
    }
}
