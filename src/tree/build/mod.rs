//! Building the tree from a model: the flat view (one directory per object)
//! or the nested view (directories along the segments of object names).
//!
//! Every directory's entries are named by [`names::escape`] against the
//! names its own virtual files reserve, so no two entries collide and every
//! object is reachable. Entries are sorted by bytes for binary-search lookup.
//!
//! Inodes are numbered depth first: a directory, then its files, then its
//! subdirectories in turn. Only directories are stored (see [`Dir`]); a
//! directory's files are the inodes after its own, derived again from the
//! manifest when asked for, in the order [`Tree::object_files`] gives.

mod folder;
pub(in crate::tree) mod listing;
pub mod names;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::sync::OnceLock;
use std::time::{Duration, UNIX_EPOCH};

use crate::decode::{check_interpretable, views};
use crate::digest::{content_digest, Algo};
use crate::error::{Error, Result};
use crate::format::text::Texts;
use crate::format::{Object, Text};
use crate::model::{Input, Model};
use crate::tree::part::{PartState, DECODED, RAW, VIEW};
use crate::tree::{Base, Dir, Node, Tree};
use names::{Reserved, NAME_MAX};

/// How objects are arranged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrangement {
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
    pub arrangement: Arrangement,
    /// Permission bits for files; directories add `x` where `r` is set.
    /// `None`: the backing file's read bits.
    pub mode: Option<u16>,
    /// Permission bits for directories; `None`: the files', with `x`
    /// where `r` is set.
    pub dir_mode: Option<u16>,
    /// Owner and group of every entry; `None`: the backing file's (the
    /// mounting user's for a remote model).
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// Verify each part's digest and content rules on first open.
    pub verify: bool,
    /// Serve with FOPEN_DIRECT_IO instead of the page cache.
    pub direct_io: bool,
    /// Byte budget of the decoded-frame cache (the safetensors plan's
    /// tables are taken from it).
    pub cache_bytes: u64,
    /// How `.npy` headers name bfloat16 and the f8 types.
    pub npy_dtypes: crate::tree::NpyDtypes,
    /// The longest safetensors header before the model is served as
    /// shards (the format's limit; lower only to test sharding).
    pub safetensors_max: u64,
    /// Backing files for kernel passthrough (off by default here; the
    /// command line's default is `auto`).
    pub clones: crate::tree::clones::ClonePolicy,
    /// Serve the other files of the model's folder ([`Model::folder`]).
    pub files: bool,
    /// `model.safetensors`' `__metadata__` is the model's exported
    /// attributes with nothing added while no object is left out (`ztfs
    /// pack --to-folder`, which writes the original folder again); a mount
    /// adds `format` (which transformers asks for) and the left-out list.
    pub safetensors_exact: bool,
    /// Most bytes of tensors in one safetensors shard (`ztfs pack
    /// --to-folder --shard-size`); `None`: shards only past the header
    /// limit.
    pub safetensors_shard_bytes: Option<u64>,
    /// `--dequantize`: `model.safetensors` carries every quantized
    /// tensor's values, in this type (else it leaves them out).
    pub dequantize: Option<crate::decode::dequant::narrow::Float>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            arrangement: Arrangement::Flat,
            mode: None,
            dir_mode: None,
            uid: None,
            gid: None,
            verify: false,
            direct_io: false,
            cache_bytes: 256 << 20,
            npy_dtypes: crate::tree::NpyDtypes::default(),
            safetensors_max: crate::tree::safetensors::HEADER_MAX,
            clones: Default::default(),
            files: true,
            safetensors_exact: false,
            safetensors_shard_bytes: None,
            dequantize: None,
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
/// The suffix of a `.npy` file beside a part or view.
pub(in crate::tree) const NPY_SUFFIX: &str = ".npy";
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
    /// Folders of the model's folder placed here, as indexes into
    /// [`Folder::dirs`](crate::model::folder::Folder), with their names.
    folder_dirs: Vec<(u32, String)>,
}

/// Most reads waiting on a remote server at once (their own job threads;
/// a read of what is cached needs none).
const FETCH_THREADS: usize = 8;

/// Per-part tables of a tree, indexed by flat part number.
struct PartIndex {
    /// Each object's first part.
    part_base: Vec<u32>,
    /// The encoded parts, ascending.
    encoded: Vec<u32>,
    /// Each part's state, with its files (see [`DECODED`], [`RAW`],
    /// [`VIEW`]).
    parts: Vec<PartState>,
}

impl PartIndex {
    fn of(objects: &[Object], input: &Input) -> PartIndex {
        let mut part_base = Vec::with_capacity(objects.len());
        let mut encoded = Vec::new();
        let mut file_flags: Vec<u8> = Vec::new();
        for o in objects {
            let first = file_flags.len();
            part_base.push(first as u32);
            for (j, p) in o.parts.iter().enumerate() {
                if p.encoding.is_some() {
                    encoded.push(file_flags.len() as u32);
                }
                let (decoded, raw) = part_files(input, o, j);
                file_flags.push(if decoded { DECODED } else { 0 } | if raw { RAW } else { 0 });
            }
            let all_decodable = file_flags[first..].iter().all(|f| f & DECODED != 0);
            // ggml blocks stored compressed: served raw, yet decoded for
            // their values' view (blocks stored as they are are computed
            // by the model).
            let ggml = o.layout.starts_with("gguf.")
                && (o.parts.iter()).all(|p| {
                    matches!(
                        p.encoding.as_deref(),
                        Some(crate::decode::zstd_seekable::ID)
                    )
                });
            if (all_decodable || ggml) && views::view(o).is_some() {
                file_flags[first] |= VIEW;
            }
        }
        PartIndex {
            part_base,
            encoded,
            parts: file_flags.into_iter().map(PartState::new).collect(),
        }
    }
}

/// A file's name: fixed, or made from a part's name.
pub(in crate::tree) type FileName = Cow<'static, str>;

impl Tree {
    /// Builds the tree of `model`.
    pub fn build(model: Model, opts: Options) -> Result<Tree> {
        let base = base_of(&model, &opts)?;
        let empty = Vec::new();
        let objects = model.manifest().map_or(&empty, |m| &m.objects);
        let PartIndex {
            part_base,
            encoded,
            parts,
        } = PartIndex::of(objects, model.input());
        let mut root = DirBuild::default();
        for (i, o) in objects.iter().enumerate() {
            // A packed folder's files are served at their paths.
            if crate::format::profiles::is_file(o) {
                continue;
            }
            place(&mut root, &o.name, i as u32, opts.arrangement);
        }
        // Hurray, safetensors and GGUF files have no content digest.
        let digest = (!model.has_no_digests())
            .then(|| model.manifest())
            .flatten()
            .and_then(|m| content_digest(m, Algo::Sha256).ok())
            .map(|d| format!("{d}\n").into_bytes());
        let mut tree = Tree {
            dirs: Vec::new(),
            children: Vec::new(),
            names: Vec::new(),
            inodes: 0,
            texts: Texts::default(),
            base,
            part_base,
            parts,
            manifest_json_len: OnceLock::new(),
            manifest_json: OnceLock::new(),
            digest,
            transformers: None,
            frames: crate::tree::frames::FrameCache::new(opts.cache_bytes),
            jobs: Default::default(),
            fetch_jobs: std::sync::Arc::new(crate::tree::jobs::Jobs::with_threads(FETCH_THREADS)),
            // One tensor's statistics at a time, itself on every core.
            stats_jobs: std::sync::Arc::new(crate::tree::jobs::Jobs::with_threads(1)),
            view_failures: Default::default(),
            failures: Default::default(),
            last_end: encoded.iter().map(|_| Default::default()).collect(),
            encoded,
            safetensors: None,
            safetensors_tables: OnceLock::new(),
            clones: crate::tree::clones::Clones::new(opts.clones.clone()),
            folder_dirs: Vec::new(),
            folder_renamed: Vec::new(),
            opts,
            model,
        };
        tree.transformers = tree.transformers_form();
        let plan = tree.plan_safetensors(true);
        // The plan's tables count in the cache's budget, whether made yet
        // or not.
        let tables = plan.as_ref().map_or(0, |p| p.heap_bytes());
        tree.safetensors = plan.map(crate::tree::safetensors::Plan::without_tables);
        tree.frames =
            crate::tree::frames::FrameCache::new(tree.opts.cache_bytes.saturating_sub(tables));
        root.folder_dirs = tree.name_folder_root()?;
        let root_files = tree.root_files();
        let fixed: Vec<&str> = root_files.iter().map(|f| &*f.0).collect();
        let files = fixed.len() as u32;
        // Tensor directories give way to the folder's names.
        let folder_dirs: Vec<String> = root.folder_dirs.iter().map(|d| d.1.clone()).collect();
        let mut exact: Vec<&str> = ROOT_RESERVED.exact.to_vec();
        exact.extend(fixed.iter().copied());
        exact.extend(folder_dirs.iter().map(String::as_str));
        let reserved = Reserved {
            exact: &exact,
            suffixes: ROOT_RESERVED.suffixes,
        };
        tree.push_dir(0, None, files, None)?;
        tree.fill_dir(0, root, &fixed, &reserved)?;
        tree.texts = Texts::default();
        tree.dirs.shrink_to_fit();
        tree.children.shrink_to_fit();
        tree.names.shrink_to_fit();
        Ok(tree)
    }

    /// Adds a directory under `parent` (an index into `dirs`) holding
    /// `files` files, and its inodes; `name` when its name is not the one
    /// [`Tree::component`] derives from its object.
    fn push_dir(
        &mut self,
        parent: u32,
        object: Option<u32>,
        files: u32,
        name: Option<Text>,
    ) -> Result<u32> {
        let too_many = || Error::Usage("too many inodes for one tree".into());
        let ino = u32::try_from(self.inodes + 1).map_err(|_| too_many())?;
        let d = u32::try_from(self.dirs.len()).map_err(|_| too_many())?;
        self.inodes = u64::from(ino) + u64::from(files);
        u32::try_from(self.inodes).map_err(|_| too_many())?;
        self.dirs.push(Dir {
            ino,
            parent,
            object: object.unwrap_or(crate::tree::NO_OBJECT),
            first: 0,
            len: 0,
            files,
        });
        if let Some(name) = name {
            // Directories are made in index order, so `names` stays sorted.
            self.names.push((d, name));
        }
        Ok(d)
    }

    /// Creates the subdirectories of directory `d` from `dir`, escaping
    /// their names against `reserved`; `files` are the names of its files.
    fn fill_dir(
        &mut self,
        d: u32,
        dir: DirBuild,
        files: &[&str],
        reserved: &Reserved<'_>,
    ) -> Result<()> {
        let mut children = Vec::with_capacity(dir.flat.len() + dir.children.len());
        for i in dir.flat {
            let name = &self.object(i).name;
            let component = names::escape(name, reserved, NAME_MAX);
            // Most names need no escaping: the object's name is the name.
            let renamed = (component != **name).then(|| component.into());
            children.push(self.object_dir(d, Some(i), BTreeMap::new(), renamed)?);
        }
        for (segment, sub) in dir.children {
            let component = names::escape(&segment, reserved, NAME_MAX);
            let derived = sub.object.map(|i| self.derived_component(i));
            let same = derived == Some(component.as_str());
            let renamed = (!same).then(|| self.texts.get(&component));
            children.push(self.object_dir(d, sub.object, sub.children, renamed)?);
        }
        for (fd, name) in dir.folder_dirs {
            children.push(self.folder_dir(d, fd, name)?);
        }
        children.sort_unstable_by(|&a, &b| {
            self.component(a)
                .as_bytes()
                .cmp(self.component(b).as_bytes())
        });
        let same = children
            .windows(2)
            .map(|w| self.component(w[0]))
            .zip(children.iter().skip(1).map(|&c| self.component(c)))
            .find_map(|(a, b)| (a == b).then_some(a))
            .or_else(|| {
                files.iter().copied().find(|f| {
                    children
                        .binary_search_by(|&c| self.component(c).as_bytes().cmp(f.as_bytes()))
                        .is_ok()
                })
            });
        if let Some(name) = same {
            return Err(Error::Usage(format!(
                "internal error: two entries named {name:?} in one directory"
            )));
        }
        let first = u32::try_from(self.children.len())
            .map_err(|_| Error::Usage("too many directory entries for one tree".into()))?;
        let dir = &mut self.dirs[d as usize];
        (dir.first, dir.len) = (first, children.len() as u32);
        self.children.extend(children);
        Ok(())
    }

    /// Makes a directory under `parent` holding object `object`'s files (if
    /// any) and nested `children`.
    fn object_dir(
        &mut self,
        parent: u32,
        object: Option<u32>,
        children: BTreeMap<String, DirBuild>,
        name: Option<Text>,
    ) -> Result<u32> {
        let files = object.map_or(Vec::new(), |i| self.object_files(i));
        let count = u32::try_from(files.len())
            .map_err(|_| Error::Usage("too many files in one object directory".into()))?;
        let d = self.push_dir(parent, object, count, name)?;
        let taken: Vec<&str> = files.iter().map(|f| &*f.0).collect();
        let reserved = Reserved {
            exact: &taken,
            suffixes: PART_SUFFIXES,
        };
        let dir = DirBuild {
            object: None,
            children,
            flat: Vec::new(),
            folder_dirs: Vec::new(),
        };
        self.fill_dir(d, dir, &taken, &reserved)?;
        Ok(d)
    }

    /// The name of directory `d` in its parent.
    pub(in crate::tree) fn component(&self, d: u32) -> &str {
        if let Ok(k) = self.names.binary_search_by_key(&d, |n| n.0) {
            return &self.names[k].1;
        }
        let object = self.dirs[d as usize].object;
        debug_assert!(
            object != crate::tree::NO_OBJECT,
            "an unnamed directory of no object"
        );
        self.derived_component(object)
    }

    /// The name an object's directory has unless escaping changed it: the
    /// object's name, or in the nested view its last segment (where
    /// [`place`] split it).
    fn derived_component(&self, i: u32) -> &str {
        let name = &self.object(i).name;
        match self.opts.arrangement {
            Arrangement::Nested { sep } if !name.split(sep).any(str::is_empty) => {
                name.rsplit(sep).next().unwrap_or(name)
            }
            _ => name,
        }
    }

    /// The root's files in inode order: the tree's own, then the model
    /// folder's.
    fn root_files(&self) -> Vec<(FileName, Node)> {
        let mut files = self.own_root_files();
        files.extend(self.folder_files(0));
        files
    }

    /// The tree's own files at the root, in inode order.
    fn own_root_files(&self) -> Vec<(FileName, Node)> {
        let mut files = vec![(Cow::Borrowed("manifest.json"), Node::Manifest)];
        if self.digest.is_some() {
            files.push((Cow::Borrowed("digest"), Node::Digest));
        }
        if self.transformers.is_some() {
            files.push((
                Cow::Borrowed(crate::tree::transformers::CONFIG),
                Node::Config,
            ));
        }
        if let Some(plan) = &self.safetensors {
            for (i, _) in plan.shards.iter().enumerate() {
                let node = Node::Safetensors { shard: i as u32 };
                files.push((Cow::Owned(plan.shard_name(i)), node));
            }
            if plan.index_len().is_some() {
                let name = Cow::Borrowed(crate::tree::safetensors::INDEX);
                files.push((name, Node::SafetensorsIndex));
            }
        }
        files
    }

    /// The files of directory `d` in inode order.
    pub(in crate::tree) fn dir_files(&self, d: &Dir) -> Vec<(FileName, Node)> {
        if d.ino == crate::tree::ROOT as u32 {
            return self.root_files();
        }
        if let Some(fd) = self.folder_dir_at(d.ino) {
            return self.folder_files(fd);
        }
        d.object().map_or(Vec::new(), |i| self.object_files(i))
    }

    /// The `k`-th file of directory `d` (inode `d.ino + 1 + k`), found
    /// without making the names.
    pub(in crate::tree) fn file_node(&self, d: &Dir, k: u32) -> Option<Node> {
        let Some(i) = d.object() else {
            if let Some(fd) = self.folder_dir_at(d.ino).filter(|&fd| fd != 0) {
                return self.folder_file_node(fd, k);
            }
            return self.root_files().get(k as usize).map(|f| f.1);
        };
        let Some(mut k) = k.checked_sub(1) else {
            return Some(Node::Meta { object: i });
        };
        if self.stats_source(i).is_some() {
            let Some(rest) = k.checked_sub(1) else {
                return Some(Node::Stats { object: i });
            };
            k = rest;
        }
        let view = self.has_view(i);
        for (has, node) in [
            (view, Node::View { object: i }),
            (
                view && self.has_npy(i, crate::tree::VIEW),
                Node::Npy {
                    object: i,
                    part: crate::tree::VIEW,
                },
            ),
        ] {
            if has {
                if k == 0 {
                    return Some(node);
                }
                k -= 1;
            }
        }
        for (j, flags) in self.part_flags(i).enumerate() {
            let part = j as u32;
            let decoded = flags & DECODED != 0;
            for (has, node) in [
                (decoded, Node::Part { object: i, part }),
                (
                    decoded && self.has_npy(i, part),
                    Node::Npy { object: i, part },
                ),
                (flags & RAW != 0, Node::Raw { object: i, part }),
            ] {
                if has {
                    if k == 0 {
                        return Some(node);
                    }
                    k -= 1;
                }
            }
        }
        None
    }

    /// The files of part `part` of object `i` (see [`DECODED`], [`RAW`],
    /// [`VIEW`]).
    pub(in crate::tree) fn files_of_part(&self, i: u32, part: u32) -> u8 {
        self.parts[(self.part_base[i as usize] + part) as usize].files()
    }

    /// The files of object `i`'s parts, in order (see [`DECODED`], [`RAW`],
    /// [`VIEW`]).
    pub(in crate::tree) fn part_flags(&self, i: u32) -> impl Iterator<Item = u8> + '_ {
        let first = self.part_base[i as usize] as usize;
        let end = self
            .part_base
            .get(i as usize + 1)
            .map_or(self.parts.len(), |&e| e as usize);
        self.parts[first..end].iter().map(PartState::files)
    }

    /// True when object `i` has a view file: its layout offers one and
    /// every part can be decoded, or it is a Hurray tensor with computed
    /// `data` (which may have no parts at all: a partition head).
    pub(in crate::tree) fn has_view(&self, i: u32) -> bool {
        self.computed_view(i).is_some() || self.part_flags(i).next().is_some_and(|f| f & VIEW != 0)
    }

    /// The files of object `i` in inode order: `meta.json`, its view if
    /// any, each decodable part, and `<part>.raw` where the stored bytes
    /// differ from the decoded ones or the part cannot be decoded.
    pub(in crate::tree) fn object_files(&self, i: u32) -> Vec<(FileName, Node)> {
        let o = self.object(i);
        let mut out = vec![(Cow::Borrowed(META), Node::Meta { object: i })];
        if self.stats_source(i).is_some() {
            let name = Cow::Borrowed(crate::tree::serve::stats::STATS_JSON);
            out.push((name, Node::Stats { object: i }));
        }
        if let Some((name, _)) = self.has_view(i).then(|| self.view_of(i)).flatten() {
            out.push((Cow::Borrowed(name), Node::View { object: i }));
            if self.has_npy(i, crate::tree::VIEW) {
                let node = Node::Npy {
                    object: i,
                    part: crate::tree::VIEW,
                };
                out.push((Cow::Owned(view_npy_name(name)), node));
            }
        }
        for (j, (p, flags)) in o.parts.iter().zip(self.part_flags(i)).enumerate() {
            let j = j as u32;
            let (decoded, raw) = (flags & DECODED != 0, flags & RAW != 0);
            let component = names::escape(&p.name, &PART_RESERVED, PART_NAME_MAX);
            if decoded {
                let node = Node::Part { object: i, part: j };
                out.push((Cow::Owned(component.clone()), node));
                if self.has_npy(i, j) {
                    let node = Node::Npy { object: i, part: j };
                    out.push((Cow::Owned(format!("{component}{NPY_SUFFIX}")), node));
                }
            }
            if raw {
                let name = format!("{component}{RAW_SUFFIX}");
                out.push((Cow::Owned(name), Node::Raw { object: i, part: j }));
            }
        }
        out
    }
}

/// The `.npy` file of view `view`: `data.npy` for a quantized tensor's
/// values (`dequantized`), which the part `data` (its blocks) then does
/// not get; `<view>.npy` for any other.
pub(in crate::tree) fn view_npy_name(view: &str) -> String {
    match view {
        crate::decode::views::DEQUANTIZED_VIEW => format!("{}{NPY_SUFFIX}", crate::model::DATA),
        _ => format!("{view}{NPY_SUFFIX}"),
    }
}

/// Which files a part gets: (decoded, raw). The format decides where it
/// says ([`Input::part_files`]); else a part gets its decoded file when
/// its encoding is known and its type can be interpreted, and `.raw`
/// when it is encoded or cannot be decoded.
pub(in crate::tree) fn part_files(input: &Input, o: &Object, j: usize) -> (bool, bool) {
    if let Some(files) = input.part_files(o, j) {
        return files;
    }
    let p = &o.parts[j];
    let known_encoding = matches!(
        p.encoding.as_deref(),
        None | Some(crate::decode::zstd_seekable::ID)
    );
    let decodable = known_encoding && check_interpretable(o, p).is_ok();
    (decodable, p.encoding.is_some() || !decodable)
}

/// Places object `i` named `name` in the build tree.
fn place(root: &mut DirBuild, name: &str, i: u32, arrangement: Arrangement) {
    let Arrangement::Nested { sep } = arrangement else {
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
    let Some(file) = model.root().file() else {
        return Ok(remote_base(opts));
    };
    let meta = file
        .metadata()
        .map_err(|e| Error::io(model.root().name(), e))?;
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
    let dir_perm = opts
        .dir_mode
        .unwrap_or(file_perm | ((file_perm & 0o444) >> 2));
    Ok(Base {
        uid: opts.uid.unwrap_or(meta.uid()),
        gid: opts.gid.unwrap_or(meta.gid()),
        file_perm,
        dir_perm,
        atime: time(meta.atime(), meta.atime_nsec()),
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        ctime: time(meta.ctime(), meta.ctime_nsec()),
    })
}

/// Owner, mode and times of a remote model's files: the mounting user's,
/// readable by all unless `--mode` says otherwise, and the mount's time.
fn remote_base(opts: &Options) -> Base {
    let file_perm = opts.mode.unwrap_or(0o444) & 0o7777;
    let now = std::time::SystemTime::now();
    Base {
        uid: opts.uid.unwrap_or(crate::sys::uid()),
        gid: opts.gid.unwrap_or(crate::sys::gid()),
        file_perm,
        dir_perm: opts
            .dir_mode
            .unwrap_or(file_perm | ((file_perm & 0o444) >> 2)),
        atime: now,
        mtime: now,
        ctime: now,
    }
}
