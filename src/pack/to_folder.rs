//! `ztfs pack MODEL --to-folder DIR`: a model written out as a Hugging
//! Face folder again: the folder's files at their paths, byte for byte,
//! and the tensors as `model.safetensors` (or its shards and index), with
//! the model's `__metadata__` as it was (docs/folders.md).
//!
//! The bytes are the ones a mount serves: the tree is built as for a
//! mount, with every part verified before it is read, and each file read
//! through it. Everything is written in a staging folder beside `DIR` and
//! renamed into place at the end, so `DIR` appears whole or not at all.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::model::Model;
use crate::tree::{Ino, Options, Tree, ROOT};

/// Bytes read from the tree at once.
const CHUNK: u32 = 4 << 20;

/// What was written.
#[derive(Debug, Default)]
pub struct Written {
    /// The folder's files.
    pub files: usize,
    /// The safetensors files (shards, then the index).
    pub safetensors: Vec<String>,
    /// Objects not in the safetensors files, with why (the files of a
    /// packed folder are not among them).
    pub left_out: Vec<(String, String)>,
    /// Bytes written in all.
    pub bytes: u64,
}

/// The staging folder for `dir`: beside it, hidden, removed on failure.
pub fn staging_for(dir: &Path) -> Result<tempfile::TempDir> {
    if std::fs::symlink_metadata(dir).is_ok() && !is_empty_dir(dir) {
        return Err(Error::Usage(format!(
            "{}: exists and is not an empty folder; give a new one",
            dir.display()
        )));
    }
    super::out::check_folder(dir)?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    tempfile::Builder::new()
        .prefix(".ztfs-to-folder-")
        .tempdir_in(&parent)
        .map_err(|e| Error::io(parent.display().to_string(), e))
}

/// The bytes `tree` exports: its folder's files (when it serves them)
/// and its safetensors files.
pub fn export_bytes(tree: &Tree) -> u64 {
    let files = tree.folder_file_inodes();
    let mut st = tree.safetensors_files();
    st.extend(tree.config_file().map(String::from));
    let inos = files
        .iter()
        .map(|f| f.1)
        .chain(st.iter().filter_map(|n| root_ino(tree, n)));
    inos.filter_map(|ino| tree.getattr(ino).ok())
        .map(|a| a.size)
        .sum()
}

/// The tree `--to-folder` reads: every part verified before it is
/// served, the safetensors metadata exact, shards of at most
/// `shard_bytes` of tensors when given, quantized tensors as their values
/// in type `dequantize` when given.
pub fn tree_of(
    model: Model,
    files: bool,
    shard_bytes: Option<u64>,
    dequantize: Option<crate::decode::dequant::narrow::Float>,
) -> Result<Arc<Tree>> {
    let opts = Options {
        verify: true,
        files,
        safetensors_exact: true,
        safetensors_shard_bytes: shard_bytes,
        dequantize,
        ..Options::default()
    };
    Ok(Arc::new(Tree::build(model, opts)?))
}

/// Writes `tree`'s folder files and safetensors files into `staging`,
/// then renames it to `dir`; `step` hears of the bytes as they are
/// written and may stop the work with an error.
pub fn to_folder(
    tree: &Arc<Tree>,
    staging: tempfile::TempDir,
    dir: &Path,
    step: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<Written> {
    let mut w = Written::default();
    for (path, ino) in tree.folder_file_inodes() {
        w.bytes += copy_out(tree, ino, &path, staging.path(), step)?;
        w.files += 1;
    }
    // A GGUF's config, as transformers makes it (`--dequantize`).
    if let Some(name) = tree.config_file() {
        let ino = root_ino(tree, name)
            .ok_or_else(|| Error::Unsupported(format!("{name}: listed, not found at the root")))?;
        w.bytes += copy_out(tree, ino, name, staging.path(), step)?;
        w.files += 1;
    }
    for name in tree.safetensors_files() {
        let ino = root_ino(tree, &name).ok_or_else(|| {
            Error::Unsupported(format!("{name}: listed by the plan, not found at the root"))
        })?;
        w.bytes += copy_out(tree, ino, &name, staging.path(), step)?;
        w.safetensors.push(name);
    }
    w.left_out = left_out(tree);
    publish(staging, dir)?;
    Ok(w)
}

/// The objects `tree`'s safetensors files leave out (a quantized GGUF
/// tensor, a Hurray composite...), with why; the folder's files are not
/// among them.
pub fn left_out(tree: &Tree) -> Vec<(String, String)> {
    (tree.safetensors_listing().into_iter())
        .filter_map(|(name, place)| match place {
            Err(why) if why != crate::tree::FILE_NOT_TENSOR => Some((name, why)),
            _ => None,
        })
        .collect()
}

fn root_ino(tree: &Tree, name: &str) -> Option<Ino> {
    tree.lookup(ROOT, name.as_bytes()).ok().map(|a| a.ino)
}

/// Copies the tree's file `ino` to `path` under `root`; its length.
fn copy_out(
    tree: &Arc<Tree>,
    ino: Ino,
    path: &str,
    root: &Path,
    step: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<u64> {
    let failed = |what: &str| {
        Error::Unsupported(format!(
            "{path:?}: {what} (a damaged or unavailable part; `ztfs check --verify` says which)"
        ))
    };
    // The profile's rules allow only plain names; a path that would leave
    // the folder is refused here too, whatever let it through.
    let plain = Path::new(path)
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !plain || path.is_empty() {
        return Err(failed("is not a plain path inside the folder"));
    }
    tree.open_wait(ino)
        .map_err(|_| failed("cannot be opened"))?;
    let size = tree.getattr(ino).map_err(|_| failed("has no size"))?.size;
    let dest = root.join(path);
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent.display().to_string(), e))?;
    }
    let io = |e| Error::io(dest.display().to_string(), e);
    let mut out = File::options()
        .write(true)
        .create_new(true)
        .open(&dest)
        .map_err(io)?;
    let mut at = 0u64;
    while at < size {
        let want = CHUNK.min((size - at).min(u64::from(u32::MAX)) as u32);
        let bytes = tree
            .read_wait(ino, at, want)
            .map_err(|_| failed("a read failed"))?;
        if bytes.is_empty() {
            return Err(failed(&format!("ended at {at} of {size} bytes")));
        }
        out.write_all(&bytes).map_err(io)?;
        at += bytes.len() as u64;
        step(bytes.len() as u64)?;
    }
    out.sync_all().map_err(io)?;
    Ok(size)
}

/// Renames the staging folder to `dir` (an empty `dir` is replaced).
fn publish(staging: tempfile::TempDir, dir: &Path) -> Result<()> {
    // A source truncated under a read: bytes written since may be zeros.
    crate::sys::no_fault()?;
    let io = |e| Error::io(dir.display().to_string(), e);
    if std::fs::symlink_metadata(dir).is_ok() {
        // Only an empty folder gets here (staging_for checked), and
        // remove_dir removes nothing else.
        std::fs::remove_dir(dir).map_err(io)?;
    }
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, dir) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(io(e));
    }
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(dir, mode).map_err(io)
}

fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none())
}
