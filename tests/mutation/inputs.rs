//! The inputs: corpus files with the shard files beside them, and what the
//! mutators need to know about each (manifest range and tree, blobs, numbers).

use std::path::{Path, PathBuf};

use super::cbor_tree::{owned, Cv};
use super::MAGIC;
use ztfs::format::cbor;
use ztfs::format::{read_container, Container};

/// Files beside an input, by the shard name that resolves to them.
pub type Companions = Vec<(String, Vec<u8>)>;

/// One file to mutate, with what the mutators need to know about it.
pub struct Input {
    /// A name for messages and saved mutants.
    pub name: String,
    /// The file.
    pub bytes: Vec<u8>,
    /// Files the positional shard convention finds beside it, by suffix.
    pub companions: Companions,
    /// The manifest's byte range, when the footer points inside the file.
    pub manifest: Option<(usize, usize)>,
    /// The manifest as a tree, when it parses.
    pub tree: Option<Cv>,
    /// Local blobs named by a valid manifest.
    pub blobs: Vec<(usize, usize)>,
    /// Integers worth trying here: those in the manifest and around the file.
    pub numbers: Vec<u64>,
}

/// The manifest's `(offset, length)` when the footer has the magic and
/// names a non-empty range inside the data region; nothing else is checked.
pub fn manifest_range(file: &[u8]) -> Option<(usize, usize)> {
    let n = file.len();
    let foot = file.get(n.checked_sub(40)?..)?;
    let word = |at: usize| u64::from_le_bytes(foot[at..at + 8].try_into().unwrap());
    let (off, len) = (word(0) as usize, word(8) as usize);
    (foot[32..] == MAGIC && len > 0 && off.checked_add(len)? <= n - 40).then_some((off, len))
}

fn collect_uints(v: &Cv, out: &mut Vec<u64>) {
    match v {
        Cv::U(n) => out.push(*n),
        Cv::A(items) => items.iter().for_each(|i| collect_uints(i, out)),
        Cv::M(es) => es.iter().for_each(|(k, v)| {
            collect_uints(k, out);
            collect_uints(v, out);
        }),
        _ => {}
    }
}

impl Input {
    /// Reads what a valid (or at least well-framed) input tells about itself.
    pub fn new(name: String, bytes: Vec<u8>, companions: Companions) -> Input {
        let manifest = manifest_range(&bytes);
        let tree = manifest
            .and_then(|(o, l)| cbor::parse(&bytes[o..o + l]).ok())
            .map(|v| owned(&v));
        let mut blobs = Vec::new();
        if let Ok(Container::Model(m)) = read_container(&bytes) {
            for p in m.objects.iter().flat_map(|o| &o.parts) {
                if p.blob.shard.is_none() && p.blob.length > 0 {
                    blobs.push((p.blob.offset as usize, p.blob.length as usize));
                }
            }
        }
        let len = bytes.len() as u64;
        let mut numbers = vec![len, len.saturating_sub(40), len.saturating_sub(4096)];
        if let Some((o, l)) = manifest {
            numbers.extend([o as u64, l as u64, (o + l) as u64]);
        }
        if let Some(t) = &tree {
            collect_uints(t, &mut numbers);
        }
        numbers.sort_unstable();
        numbers.dedup();
        Input {
            name,
            bytes,
            companions,
            manifest,
            tree,
            blobs,
            numbers,
        }
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "zt") {
            out.push(p);
        }
    }
}

/// Files beside `path` that the positional convention would open as its
/// shards (`<stem>-<name>.zt`), by name.
pub fn companions_of(path: &Path) -> Companions {
    let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
    let mut siblings = Vec::new();
    walk_flat(path.parent().unwrap(), &mut siblings);
    siblings
        .into_iter()
        .filter_map(|p| {
            let s = p.file_stem()?.to_string_lossy().into_owned();
            let name = s.strip_prefix(&stem)?.strip_prefix('-')?.to_string();
            Some((name, std::fs::read(&p).ok()?))
        })
        .collect()
}

fn walk_flat(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().extension().is_some_and(|x| x == "zt") {
            out.push(e.path());
        }
    }
}

/// Every corpus input, and whether the corpus claims to exist.
pub fn corpus_inputs() -> (Vec<Input>, bool) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut files = Vec::new();
    walk(&root.join("valid"), &mut files);
    walk(&root.join("samples"), &mut files);
    files.sort();
    let inputs = files
        .iter()
        .map(|p| {
            let name = p.strip_prefix(&root).unwrap().display().to_string();
            let name = name.trim_end_matches(".zt").replace('/', "_");
            Input::new(name, std::fs::read(p).unwrap(), companions_of(p))
        })
        .collect();
    (inputs, root.join("expected.tsv").exists())
}
