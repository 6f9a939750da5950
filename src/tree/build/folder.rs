//! The model folder's other files in the tree ([`crate::model::folder`]):
//! its files and subfolders at their own paths, byte for byte.
//!
//! The rule for names (docs/folders.md): a folder's entries keep their
//! names, which a loader opens as they are. At the root, the tree's own
//! files (`manifest.json`, `digest`, `model.safetensors` and its shards
//! and index) keep theirs, and a folder entry of the same name is served
//! under its escaped name ([`names::escape`] against those names: the
//! first character not yet encoded becomes `%XX`, so `digest` is
//! `%64igest`), with a note at mount; tensor directories give way to the
//! folder's names as they do to the tree's own files. Nothing is hidden.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::error::Result;
use crate::model::folder::Folder;
use crate::tree::build::{DirBuild, FileName};
use crate::tree::names::{self, Reserved, NAME_MAX};
use crate::tree::{Node, Tree};

impl Tree {
    /// The model's folder, when its files are served.
    pub(in crate::tree) fn folder(&self) -> Option<&Folder> {
        if !self.opts.files {
            return None;
        }
        self.model.folder().ok().flatten()
    }

    /// Names the folder's root entries (at build, before the root is
    /// made): those that meet one of the tree's own files are escaped
    /// (kept in `folder_renamed`, with a note in the log). Returns the
    /// root's subfolders with their names.
    pub(super) fn name_folder_root(&mut self) -> Result<Vec<(u32, String)>> {
        if !self.opts.files {
            return Ok(Vec::new());
        }
        let Some(folder) = self.model.folder()? else {
            return Ok(Vec::new());
        };
        for note in &folder.notes {
            log::warn!("{note}");
        }
        let own: Vec<FileName> = self.own_root_files().into_iter().map(|f| f.0).collect();
        let root = &folder.dirs[0];
        let files = root
            .files
            .clone()
            .map(|i| (Some(i), folder.files[i as usize].name.as_str()));
        let dirs = root
            .dirs
            .clone()
            .map(|d| (None, folder.dirs[d as usize].name.as_str()));
        let entries: Vec<(Option<u32>, &str)> = files.chain(dirs).collect();
        let mut exact: Vec<&str> = own.iter().map(|n| &**n).collect();
        exact.extend(entries.iter().map(|e| e.1));
        let reserved = Reserved {
            exact: &exact,
            suffixes: &[],
        };
        let (mut renamed, mut subdirs) = (Vec::new(), Vec::new());
        let mut d = root.dirs.start;
        for (file, name) in entries {
            let served = if own.iter().any(|n| n == name) {
                let served = names::escape(name, &reserved, NAME_MAX);
                log::warn!(
                    "the folder's {name:?} is served as {served:?}: the mount's own {name:?} has its name"
                );
                served
            } else {
                name.to_string()
            };
            match file {
                Some(i) if served != name => renamed.push((i, served)),
                Some(_) => {}
                None => {
                    subdirs.push((d, served));
                    d += 1;
                }
            }
        }
        self.folder_renamed = renamed;
        Ok(subdirs)
    }

    /// Makes the directory of folder `fd` under `parent`, named `name`,
    /// with its files and subfolders.
    pub(super) fn folder_dir(&mut self, parent: u32, fd: u32, name: String) -> Result<u32> {
        let (files, subdirs) = {
            let folder = self
                .folder()
                .expect("a folder directory comes from a folder");
            let dir = &folder.dirs[fd as usize];
            let subdirs: Vec<(u32, String)> = (dir.dirs.clone())
                .map(|s| (s, folder.dirs[s as usize].name.clone()))
                .collect();
            (dir.files.len() as u32, subdirs)
        };
        let text = self.texts.get(&name);
        let d = self.push_dir(parent, None, files, Some(text))?;
        let ino = self.dirs[d as usize].ino;
        self.folder_dirs.push((ino, fd));
        let listed = self.folder_files(fd);
        let taken: Vec<&str> = listed.iter().map(|f| &*f.0).collect();
        let reserved = Reserved {
            exact: &taken,
            suffixes: &[],
        };
        let dir = DirBuild {
            object: None,
            children: BTreeMap::new(),
            flat: Vec::new(),
            folder_dirs: subdirs,
        };
        self.fill_dir(d, dir, &taken, &reserved)?;
        Ok(d)
    }

    /// The folder directory whose inode is `ino`: 0 for the root (when
    /// the folder is served), else as made by [`Tree::folder_dir`].
    pub(in crate::tree) fn folder_dir_at(&self, ino: u32) -> Option<u32> {
        if ino == crate::tree::ROOT as u32 {
            return self.folder().map(|_| 0);
        }
        let k = self.folder_dirs.binary_search_by_key(&ino, |e| e.0).ok()?;
        Some(self.folder_dirs[k].1)
    }

    /// The files of folder `fd`, named as served, in inode order.
    pub(in crate::tree) fn folder_files(&self, fd: u32) -> Vec<(FileName, Node)> {
        let Some(folder) = self.folder() else {
            return Vec::new();
        };
        let range = folder.dirs[fd as usize].files.clone();
        range
            .map(|i| {
                let name = match self.folder_renamed.iter().find(|r| r.0 == i) {
                    Some((_, served)) => served.clone(),
                    None => folder.files[i as usize].name.clone(),
                };
                (Cow::Owned(name), file_node(folder, i))
            })
            .collect()
    }

    /// The `k`-th file of folder `fd`.
    pub(in crate::tree) fn folder_file_node(&self, fd: u32, k: u32) -> Option<Node> {
        let range = self.folder()?.dirs[fd as usize].files.clone();
        let file = range.start.checked_add(k).filter(|f| *f < range.end)?;
        Some(file_node(self.folder()?, file))
    }
}

impl Tree {
    /// Every file of the model's folder as the tree serves it: its path in
    /// the folder and its inode (`ztfs pack --to-folder`).
    pub fn folder_file_inodes(&self) -> Vec<(String, crate::tree::Ino)> {
        let Some(folder) = self.folder() else {
            return Vec::new();
        };
        let root = (crate::tree::ROOT, 0u32);
        let dirs =
            std::iter::once(root).chain(self.folder_dirs.iter().map(|&(i, d)| (i.into(), d)));
        let mut out = Vec::new();
        for (ino, fd) in dirs {
            let first = folder.dirs[fd as usize].files.start as usize;
            for (k, (name, _)) in self.folder_files(fd).iter().enumerate() {
                if let Ok(attr) = self.lookup(ino, name.as_bytes()) {
                    out.push((folder.files[first + k].path.clone(), attr.ino));
                }
            }
        }
        out
    }
}

/// The node serving file `i` of `folder`: a file on disk, or the part of
/// the object holding a packed file (served as any part is: from the map,
/// checked under `--verify`, by range from a URL).
fn file_node(folder: &Folder, i: u32) -> Node {
    match folder.files[i as usize].object() {
        Some(object) => Node::Part { object, part: 0 },
        None => Node::FolderFile { file: i },
    }
}

impl Tree {
    /// File `file` of the model's folder.
    pub(in crate::tree) fn folder_file(
        &self,
        file: u32,
    ) -> Option<&crate::model::folder::FolderFile> {
        self.folder()?.files.get(file as usize)
    }

    /// True when file `file` of the folder is read from a server: its
    /// open and reads are jobs.
    pub(in crate::tree) fn folder_file_is_remote(&self, file: u32) -> bool {
        self.folder_file(file).is_some_and(|f| f.is_remote())
    }

    /// Opens file `file` of the folder (once, checking it is the file the
    /// scan found); a failure is logged once and is EIO.
    pub(in crate::tree) fn open_folder_file(&self, file: u32) -> Result<(), crate::tree::FsError> {
        let f = self
            .folder_file(file)
            .ok_or(crate::tree::FsError::NotFound)?;
        f.open().map_err(|e| self.fail_folder_file(file, &e))
    }

    /// A range of file `file` of the folder.
    pub(in crate::tree) fn read_folder_file(
        &self,
        file: u32,
        offset: u64,
        size: u32,
    ) -> Result<crate::tree::Data<'_>, crate::tree::FsError> {
        let f = self
            .folder_file(file)
            .ok_or(crate::tree::FsError::NotFound)?;
        match f.read_at(offset, size) {
            Ok(bytes) => Ok(crate::tree::Data::Owned(bytes)),
            Err(e) => Err(self.fail_folder_file(file, &e)),
        }
    }

    fn fail_folder_file(&self, file: u32, e: &crate::error::Error) -> crate::tree::FsError {
        self.failures.report((file, "folder file"), || {
            let path = self.folder_file(file).map_or("", |f| f.path.as_str());
            format!("the model folder's {path:?}: {e}")
        });
        crate::tree::FsError::Io
    }
}
