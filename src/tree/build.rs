//! Building the tree from a model: the flat view (one directory per object)
//! or the nested view (directories along the segments of object names).
//!
//! Every directory's entries are named by [`names::escape`] against the
//! names its own virtual files reserve, so no two entries collide and every
//! object is reachable. Entries are sorted by bytes for binary-search lookup.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::sync::OnceLock;
use std::time::{Duration, UNIX_EPOCH};

use super::names::{self, Reserved, NAME_MAX};
use super::{Base, Dir, Entry, Ino, Node, Tree};
use crate::decode::{check_interpretable, views};
use crate::digest::{content_digest, Algo};
use crate::error::{Error, Result};
use crate::format::text::Texts;
use crate::format::{Object, Text};
use crate::model::Model;

/// How objects are arranged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// One directory per object at the root.
    Flat,
    /// Directories along the segments of names split at `sep`.
    Nested {
        /// The separator.
        sep: char,
    },
}

/// Mount-time choices that shape the tree and how it serves.
#[derive(Debug, Clone)]
pub struct Options {
    /// Flat or nested.
    pub view: View,
    /// Permission bits for files; directories add `x` where `r` is set.
    /// `None`: the backing file's read bits.
    pub mode: Option<u16>,
    /// Verify each part's digest and content rules on first open.
    pub verify: bool,
    /// Serve with FOPEN_DIRECT_IO instead of the page cache.
    pub direct_io: bool,
    /// Byte budget of the decoded-frame cache.
    pub cache_bytes: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            view: View::Flat,
            mode: None,
            verify: false,
            direct_io: false,
            cache_bytes: 256 << 20,
        }
    }
}

/// Names the root's virtual files take (and later views may take).
pub const ROOT_RESERVED: Reserved<'static> = Reserved {
    exact: &["manifest.json", "digest"],
    suffixes: &[".json", ".safetensors"],
};
/// Suffixes reserved for the virtual files beside parts.
const PART_SUFFIXES: &[&str] = &[".raw", ".json", ".npy"];
const META: &str = "meta.json";
/// Names an object directory's virtual files take, against which part
/// names are escaped.
pub const PART_RESERVED: Reserved<'static> = Reserved {
    exact: &[META, views::DENSE_VIEW, views::DEQUANTIZED_VIEW],
    suffixes: PART_SUFFIXES,
};
/// Room left for the `.raw` suffix on a part's component.
const RAW_SUFFIX: &str = ".raw";
/// Longest component of a part file.
pub const PART_NAME_MAX: usize = NAME_MAX - RAW_SUFFIX.len();

/// A directory under construction.
#[derive(Default)]
struct DirBuild {
    object: Option<u32>,
    children: BTreeMap<String, DirBuild>,
    /// Objects placed here by their whole name (flat view, or names with an
    /// empty segment in the nested view).
    flat: Vec<u32>,
}

impl Tree {
    /// Builds the tree of `model`.
    pub fn build(model: Model, opts: Options) -> Result<Tree> {
        let base = base_of(&model, &opts)?;
        let empty = Vec::new();
        let objects = model.manifest().map_or(&empty, |m| &m.objects);
        let mut part_base = Vec::with_capacity(objects.len());
        let mut n_parts = 0u32;
        for o in objects {
            part_base.push(n_parts);
            n_parts += o.parts.len() as u32;
        }
        let mut root = DirBuild::default();
        for (i, o) in objects.iter().enumerate() {
            place(&mut root, &o.name, i as u32, opts.view);
        }
        let digest = model
            .manifest()
            .and_then(|m| content_digest(m, Algo::Sha256).ok())
            .map(|d| format!("{d}\n").into_bytes());
        let mut tree = Tree {
            nodes: Vec::new(),
            dirs: Vec::new(),
            entries: Vec::new(),
            names: Texts::default(),
            base,
            object_dirs: vec![0; objects.len()],
            part_base,
            parts: (0..n_parts).map(|_| OnceLock::new()).collect(),
            manifest_json_len: OnceLock::new(),
            manifest_json: OnceLock::new(),
            digest,
            frames: super::frames::FrameCache::new(opts.cache_bytes),
            jobs: Default::default(),
            verified: (0..if opts.verify { n_parts } else { 0 })
                .map(|_| OnceLock::new())
                .collect(),
            object_checks: Default::default(),
            view_failures: Default::default(),
            failures: Default::default(),
            last_end: (0..n_parts).map(|_| Default::default()).collect(),
            opts,
            model,
        };
        tree.dirs.push(Dir {
            parent: super::ROOT,
            first: 0,
            len: 0,
            object: None,
            subdirs: 0,
        });
        tree.nodes.push(Node::Dir(0));
        let mut entries = vec![(String::from("manifest.json"), Node::Manifest)];
        if tree.digest.is_some() {
            entries.push((String::from("digest"), Node::Digest));
        }
        let mut fixed = Vec::new();
        for (name, node) in entries {
            fixed.push(Entry {
                name: name.into(),
                ino: tree.push(node),
            });
        }
        tree.fill_dir(super::ROOT, root, fixed, &ROOT_RESERVED)?;
        tree.names = Texts::default();
        tree.nodes.shrink_to_fit();
        tree.dirs.shrink_to_fit();
        tree.entries.shrink_to_fit();
        Ok(tree)
    }

    fn push(&mut self, node: Node) -> Ino {
        self.nodes.push(node);
        self.nodes.len() as Ino
    }

    /// Creates the entries of directory `ino` from `dir`, after the `fixed`
    /// virtual entries already made, escaping names against `reserved`.
    fn fill_dir(
        &mut self,
        ino: Ino,
        dir: DirBuild,
        mut entries: Vec<Entry>,
        reserved: &Reserved<'_>,
    ) -> Result<()> {
        for i in dir.flat {
            let name = self.object_name(i as usize);
            let component = names::escape(&name, reserved, NAME_MAX);
            // Most names need no escaping: share the manifest's copy.
            let component = if *component == *name {
                name
            } else {
                component.into()
            };
            let child = self.object_dir(ino, Some(i), BTreeMap::new())?;
            entries.push(Entry {
                name: component,
                ino: child,
            });
        }
        for (segment, sub) in dir.children {
            let component = names::escape(&segment, reserved, NAME_MAX);
            let child = self.object_dir(ino, sub.object, sub.children)?;
            entries.push(Entry {
                name: component.into(),
                ino: child,
            });
        }
        entries.sort_unstable_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        if let Some(w) = entries.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(Error::Usage(format!(
                "internal error: two entries named {:?} in one directory",
                w[0].name
            )));
        }
        let count = entries
            .iter()
            .filter(|e| matches!(self.nodes[e.ino as usize - 1], Node::Dir(_)))
            .count() as u32;
        let Node::Dir(d) = self.nodes[ino as usize - 1] else {
            unreachable!("fill_dir on a file");
        };
        let first = u32::try_from(self.entries.len())
            .map_err(|_| Error::Usage("too many directory entries for one tree".into()))?;
        let dir = &mut self.dirs[d as usize];
        (dir.first, dir.len, dir.subdirs) = (first, entries.len() as u32, count);
        self.entries.extend(entries);
        Ok(())
    }

    fn object_name(&self, i: usize) -> Text {
        let m = self.model.manifest().expect("objects imply a manifest");
        m.objects[i].name.clone()
    }

    /// Makes a directory under `parent` holding object `object`'s files (if
    /// any) and nested `children`.
    fn object_dir(
        &mut self,
        parent: Ino,
        object: Option<u32>,
        children: BTreeMap<String, DirBuild>,
    ) -> Result<Ino> {
        let d = self.dirs.len() as u32;
        self.dirs.push(Dir {
            parent,
            first: 0,
            len: 0,
            object,
            subdirs: 0,
        });
        let ino = self.push(Node::Dir(d));
        if let Some(i) = object {
            self.object_dirs[i as usize] = ino;
        }
        let mut files = Vec::new();
        let mut taken: Vec<String> = Vec::new();
        if let Some(i) = object {
            for (name, node) in self.object_files(i) {
                taken.push(name.clone());
                files.push(Entry {
                    name: self.names.get(&name),
                    ino: self.push(node),
                });
            }
        }
        let taken: Vec<&str> = taken.iter().map(String::as_str).collect();
        let reserved = Reserved {
            exact: &taken,
            suffixes: PART_SUFFIXES,
        };
        let dir = DirBuild {
            object: None,
            children,
            flat: Vec::new(),
        };
        self.fill_dir(ino, dir, files, &reserved)?;
        Ok(ino)
    }

    /// The files of object `i`: `meta.json`, each decodable part, and
    /// `<part>.raw` where the stored bytes differ from the decoded ones or
    /// the part cannot be decoded.
    fn object_files(&self, i: u32) -> Vec<(String, Node)> {
        let m = self.model.manifest().expect("objects imply a manifest");
        let o = &m.objects[i as usize];
        let mut out = vec![(META.to_string(), Node::Meta { object: i })];
        let all_decodable = (0..o.parts.len()).all(|j| part_files(o, j).0);
        if let Some((name, _)) = views::view(o).filter(|_| all_decodable) {
            out.push((name.to_string(), Node::View { object: i }));
        }
        for (j, p) in o.parts.iter().enumerate() {
            let j = j as u32;
            let (decoded, raw) = part_files(o, j as usize);
            let component = names::escape(&p.name, &PART_RESERVED, PART_NAME_MAX);
            if decoded {
                out.push((component.clone(), Node::Part { object: i, part: j }));
            }
            if raw {
                out.push((
                    format!("{component}{RAW_SUFFIX}"),
                    Node::Raw { object: i, part: j },
                ));
            }
        }
        out
    }
}

/// Which files a part gets: (decoded, raw).
pub(super) fn part_files(o: &Object, j: usize) -> (bool, bool) {
    let p = &o.parts[j];
    let known_encoding = matches!(
        p.encoding.as_deref(),
        None | Some(crate::decode::zstd_seekable::ID)
    );
    let decodable = known_encoding && check_interpretable(o, p).is_ok();
    (decodable, p.encoding.is_some() || !decodable)
}

/// Places object `i` named `name` in the build tree.
fn place(root: &mut DirBuild, name: &str, i: u32, view: View) {
    let View::Nested { sep } = view else {
        root.flat.push(i);
        return;
    };
    // A name with an empty segment ("a..b", ".a", "a.") is not split: it
    // stays whole at the root. Such names contain the separator, and nested
    // components never do, so the two cannot collide.
    if name.split(sep).any(str::is_empty) {
        root.flat.push(i);
        return;
    }
    let mut dir = root;
    for segment in name.split(sep) {
        dir = dir.children.entry(segment.to_string()).or_default();
    }
    dir.object = Some(i);
}

fn base_of(model: &Model, opts: &Options) -> Result<Base> {
    let meta = model
        .root()
        .file()
        .metadata()
        .map_err(|e| Error::io(model.root().path().display().to_string(), e))?;
    let time = |s: i64, ns: i64| {
        let d = Duration::new(s.unsigned_abs(), ns.clamp(0, 999_999_999) as u32);
        if s >= 0 {
            UNIX_EPOCH + d
        } else {
            UNIX_EPOCH.checked_sub(d).unwrap_or(UNIX_EPOCH)
        }
    };
    let read_bits = (meta.mode() & 0o444) as u16;
    let file_perm = opts.mode.unwrap_or(read_bits) & 0o7777;
    // A directory is searchable by whoever may read the files in it.
    let dir_perm = file_perm | ((file_perm & 0o444) >> 2);
    Ok(Base {
        uid: meta.uid(),
        gid: meta.gid(),
        file_perm,
        dir_perm,
        atime: time(meta.atime(), meta.atime_nsec()),
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        ctime: time(meta.ctime(), meta.ctime_nsec()),
    })
}
