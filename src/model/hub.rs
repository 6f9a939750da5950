//! A model in a Hugging Face Hub repository (`hf://`, docs/hub.md): the
//! revision resolved to its commit and the files listed
//! ([`crate::store::remote::hub`]), the checkpoint found among them and
//! opened by range at that commit, and the repository's other files as the
//! model's folder, each read by range on first use, or from the local
//! Hugging Face cache when it holds the same blob.

use std::path::PathBuf;

use super::folder::{FileSource, Folder, StoreFile};
use super::hf::{FILE_SUFFIX, INDEX_SUFFIX, TORCH_INDEX_SUFFIX, TORCH_SINGLE_FILE};
use super::{FolderOf, Model};
use crate::error::{Error, Result};
use crate::store::remote::hub::{self, Snapshot};

/// Model files found alone in a folder of the repository, after an index
/// and a safetensors file.
const OTHER_MODELS: [&str; 4] = [".gguf", ".zt", ".hrry", ".onnx"];

/// Opens the model an `hf://` URL names: with its folder when the URL
/// names a folder of the repository (its root by default) or an index;
/// a model file named by its path is that file alone, as a local one is.
pub(super) fn open(text: &str, overrides: Vec<(String, PathBuf)>) -> Result<Model> {
    let snap = hub::open(text)?;
    if snap.truncated {
        log::warn!(
            "{text}: the repository lists more files than ztfs takes; the listing stops there"
        );
    }
    let (dir, file) = choose(&snap, text)?;
    let mut model = open_model(&snap, &file, overrides)?;
    if file == snap.url.path && !model.is_checkpoint() {
        return Ok(model);
    }
    let name = file.rsplit('/').next().unwrap_or_default().to_string();
    let mut own = vec![name];
    own.extend(model.files.iter().map(|(n, _)| n.clone()));
    model.folder_of = Some(FolderOf::Hub(Box::new(snap), dir, own));
    Ok(model)
}

/// The model file at `file` in the repository: from the local cache's
/// snapshot of the commit when it holds it (and, for an index, its
/// files), else by URL.
fn open_model(snap: &Snapshot, file: &str, overrides: Vec<(String, PathBuf)>) -> Result<Model> {
    let local = (snap.cache_dir())
        .map(|d| d.join("snapshots").join(&snap.sha).join(file))
        .filter(|p| p.is_file());
    if let Some(path) = local {
        match Model::open_file(&path, overrides.clone()) {
            Ok(m) => {
                log::debug!("{}: read from the local cache", path.display());
                return Ok(m);
            }
            Err(e) => log::debug!("{}: not from the local cache: {e}", path.display()),
        }
    }
    Model::open_file(&PathBuf::from(snap.file_url(file)), overrides)
}

/// `names` with the files of one whole split GGUF model (every
/// `NAME-0000K-of-0000N.gguf` of one name and count, and nothing else)
/// counted as one: its first file, which opens the model.
fn first_of_split(names: Vec<&str>) -> Vec<&str> {
    let split: Vec<_> = names
        .iter()
        .map(|n| super::gguf_split::split_name(n))
        .collect();
    let whole = match split.first() {
        Some(Some((prefix, _, count))) => {
            names.len() == *count as usize
                && (split.iter()).all(|s| matches!(s, Some((p, _, c)) if p == prefix && c == count))
        }
        _ => false,
    };
    if !whole {
        return names;
    }
    (names.into_iter().zip(split))
        .filter(|(_, s)| matches!(s, Some((_, 1, _))))
        .map(|(n, _)| n)
        .collect()
}

/// The folder (its path in the repository) and the model file in it: the
/// file the URL names; else in the folder it names (the root by
/// default), its one `*.safetensors.index.json`, else its one
/// `*.safetensors`, else its one `.gguf` (or the first file of a split
/// GGUF model), `.zt`, `.hrry` or `.onnx`.
fn choose(snap: &Snapshot, text: &str) -> Result<(String, String)> {
    let path = snap.url.path.as_str();
    if snap.files.iter().any(|e| e.path == path) {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        return Ok((dir.to_string(), path.to_string()));
    }
    let prefix = match path {
        "" => String::new(),
        p => format!("{p}/"),
    };
    let here: Vec<&str> = (snap.files.iter())
        .filter_map(|e| e.path.strip_prefix(prefix.as_str()))
        .collect();
    let usage = |why: String| Error::at(text, Error::Usage(why));
    if here.is_empty() {
        return Err(usage(format!(
            "no file or folder {path:?} in {} at commit {}",
            snap.url.repo, snap.sha
        )));
    }
    let top: Vec<&str> = here.iter().copied().filter(|p| !p.contains('/')).collect();
    let ending = |suffix: &str| -> Vec<&str> {
        top.iter()
            .copied()
            .filter(|n| n.ends_with(suffix))
            .collect()
    };
    let indexes = ending(INDEX_SUFFIX);
    let files = ending(FILE_SUFFIX);
    let others = first_of_split(OTHER_MODELS.iter().flat_map(|s| ending(s)).collect());
    // A PyTorch checkpoint only where there is no other model file, as
    // transformers prefers safetensors.
    let mut torch = ending(TORCH_INDEX_SUFFIX);
    if torch.is_empty() && top.contains(&TORCH_SINGLE_FILE) {
        torch.push(TORCH_SINGLE_FILE);
    }
    if let ([], [], [], [one]) = (&indexes[..], &files[..], &others[..], &torch[..]) {
        return Ok((path.to_string(), format!("{prefix}{one}")));
    }
    let one = match (&indexes[..], &files[..], &others[..]) {
        ([one], _, _) | ([], [one], _) | ([], [], [one]) => *one,
        ([], [], []) => {
            return Err(usage(format!(
                "the folder {:?} holds no model file (*{INDEX_SUFFIX}, *{FILE_SUFFIX}, .gguf, .zt, .hrry, .onnx, *{TORCH_INDEX_SUFFIX}, {TORCH_SINGLE_FILE}); name one in the URL",
                if path.is_empty() { "/" } else { path }
            )))
        }
        (many, _, _) if many.len() > 1 => {
            return Err(usage(format!(
                "the folder holds {} indexes ({}); name one in the URL",
                many.len(),
                many.join(", ")
            )))
        }
        ([], many, _) if many.len() > 1 => {
            return Err(usage(format!(
                "the folder holds {} *{FILE_SUFFIX} files and no index ({}); name one in the URL",
                many.len(),
                many.join(", ")
            )))
        }
        (_, _, many) => {
            return Err(usage(format!(
                "the folder holds several model files ({}); name one in the URL",
                many.join(", ")
            )))
        }
    };
    Ok((path.to_string(), format!("{prefix}{one}")))
}

/// The folder `dir` of the repository, less the model's own files at its
/// top (`own`) and what is hidden, as on disk ([`super::folder::is_hidden`]):
/// each file read from the local cache when it holds its blob, else by
/// URL on first use.
pub(super) fn folder(snap: &Snapshot, dir: &str, own: &[String]) -> Folder {
    let prefix = match dir {
        "" => String::new(),
        d => format!("{d}/"),
    };
    let mut files = Vec::new();
    let mut hidden = std::collections::BTreeSet::new();
    for e in &snap.files {
        let Some(rel) = e.path.strip_prefix(prefix.as_str()) else {
            continue;
        };
        if !rel.contains('/') && own.iter().any(|o| o == rel) {
            continue;
        }
        // The first hidden component: a hidden folder is noted once.
        if let Some(at) = hidden_prefix(rel) {
            hidden.insert(at.to_string());
            continue;
        }
        let location = match snap.cached(&e.path) {
            Some(blob) => blob,
            None => PathBuf::from(snap.file_url(&e.path)),
        };
        files.push((
            rel.to_string(),
            e.size,
            FileSource::Store(StoreFile::new(location)),
        ));
    }
    let shown = format!("hf://{}@{}/{dir}", snap.url.repo, snap.sha);
    let mut f = Folder::of_paths(PathBuf::from(shown), files);
    for at in hidden {
        f.notes.push(format!("{at:?} left out: hidden"));
    }
    if snap.truncated {
        f.notes.push(format!(
            "the repository lists more files than ztfs takes: the listing stopped at {}",
            snap.files.len()
        ));
    }
    f
}

/// The path up to its first hidden component, if it has one.
fn hidden_prefix(rel: &str) -> Option<&str> {
    let mut end = 0;
    for c in rel.split('/') {
        end += c.len();
        if super::folder::is_hidden(c) {
            return Some(&rel[..end]);
        }
        end += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::hidden_prefix;

    #[test]
    fn a_path_is_hidden_from_its_first_hidden_component() {
        assert_eq!(hidden_prefix(".gitattributes"), Some(".gitattributes"));
        assert_eq!(hidden_prefix("a/.git/objects/x"), Some("a/.git"));
        assert_eq!(hidden_prefix("a/b.c/d"), None);
        assert_eq!(hidden_prefix("config.json"), None);
    }
}
