//! A Hugging Face sharded checkpoint as one model: its index
//! (`model.safetensors.index.json`, or `pytorch_model.bin.index.json`; see
//! [`crate::format::safetensors::index`]) and the files it names, the union
//! of their tensors. The files are all safetensors or all PyTorch
//! checkpoints (`torch.save`'s zip; told by their first bytes), never a
//! mix: transformers reads one kind per index.
//!
//! Every file is opened and its header validated at open (every
//! safetensors rule, then the index's agreement with it), so a model that
//! opens serves every tensor from a file already in hand: unlike a zTensor
//! shard, a file of the checkpoint is never resolved lazily, never missing
//! later, and has no digest to prove. A file is found by joining its name
//! (one path component, checked) onto the index's folder, or onto the
//! index URL's "folder" (the URL up to its last `/`).
//!
//! Each object's one part has `blob.shard` set to its file's name; the
//! model answers a part's file from [`Model::checkpoint_file`].

use std::path::{Path, PathBuf};

use super::{no_shards, Model, SafetensorsFile};
use crate::error::{Error, Result};
use crate::format::pytorch;
use crate::format::safetensors::{self, index};
use crate::format::{text::Text, Object};
use crate::store::{Open, Store};

/// How an index's name ends, for finding it in a folder.
pub const INDEX_SUFFIX: &str = ".safetensors.index.json";
/// How a PyTorch checkpoint's index's name ends (transformers'
/// `pytorch_model.bin.index.json`).
pub const TORCH_INDEX_SUFFIX: &str = ".bin.index.json";
/// The name of a PyTorch checkpoint of one file in a transformers folder.
pub const TORCH_SINGLE_FILE: &str = "pytorch_model.bin";
/// How a safetensors file's name ends, for finding it in a folder.
pub const FILE_SUFFIX: &str = ".safetensors";

/// `path` itself, or for a local folder the model file in it: its one
/// `*.safetensors.index.json`, or with none its one `*.safetensors`; with
/// neither, its one `*.bin.index.json`, or with none its
/// `pytorch_model.bin` (transformers prefers safetensors the same way). A
/// folder with none, or with several and no single choice, is a usage
/// error naming what it holds.
pub(super) fn resolve_dir(path: &Path) -> Result<PathBuf> {
    if crate::store::remote::url_of(path).is_some() || !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let (indexes, files, torch) = model_files_in(path)?;
    let shown = path.display();
    match (&indexes[..], &files[..], &torch[..]) {
        ([], [], [one]) => return Ok(path.join(one)),
        ([], [], [_, ..]) => {
            return Err(Error::Usage(format!(
                "{shown}: the folder holds {} PyTorch index files ({}); give one of them",
                torch.len(),
                list(&torch)
            )))
        }
        _ => {}
    }
    match (&indexes[..], &files[..]) {
        ([one], _) | ([], [one]) => Ok(path.join(one)),
        ([], []) => Err(Error::Usage(format!(
            "{shown}: the folder holds no *{INDEX_SUFFIX} and no *{FILE_SUFFIX} file; give a model file"
        ))),
        ([], many) => Err(Error::Usage(format!(
            "{shown}: the folder holds no *{INDEX_SUFFIX} and {} *{FILE_SUFFIX} files ({}); give the index or one file",
            many.len(),
            list(many)
        ))),
        (many, _) => Err(Error::Usage(format!(
            "{shown}: the folder holds {} *{INDEX_SUFFIX} files ({}); give one of them",
            many.len(),
            list(many)
        ))),
    }
}

/// The names of the indexes and of the safetensors files in `dir`, and
/// of the PyTorch indexes (or, with none, its `pytorch_model.bin`), sorted.
fn model_files_in(dir: &Path) -> Result<(Vec<String>, Vec<String>, Vec<String>)> {
    let io = |e| Error::io(dir.display().to_string(), e);
    let (mut indexes, mut files, mut torch, mut single) = (vec![], vec![], vec![], false);
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let name = entry.map_err(io)?.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.ends_with(INDEX_SUFFIX) {
            indexes.push(name.to_string());
        } else if name.ends_with(FILE_SUFFIX) {
            files.push(name.to_string());
        } else if name.ends_with(TORCH_INDEX_SUFFIX) {
            torch.push(name.to_string());
        } else if name == TORCH_SINGLE_FILE {
            single = true;
        }
    }
    if torch.is_empty() && single {
        torch.push(TORCH_SINGLE_FILE.to_string());
    }
    indexes.sort();
    files.sort();
    torch.sort();
    Ok((indexes, files, torch))
}

/// Names for a message: the first few, then how many more.
fn list(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = names[..names.len().min(SHOWN)].join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(", and {} more", names.len() - SHOWN));
    }
    s
}

impl Model {
    /// Opens a sharded checkpoint from its index: the index's rules, then
    /// each file it names, in order of first mention: its safetensors
    /// rules (the message names the file) and its agreement with the index.
    /// Objects are in `weight_map` order.
    pub(super) fn open_safetensors_index(
        root: Store,
        overrides: Vec<(String, PathBuf)>,
    ) -> Result<Model> {
        no_shards(
            &overrides,
            "a sharded safetensors checkpoint has no shards to override (its index names its files)",
        )?;
        index::check_len(root.len())?;
        let text = index::index_text(root.slice(0, root.len())?.into_owned())?;
        let idx = index::parse_index(&text)?;
        drop(text);
        let Opened {
            objects,
            mut files,
            data_len,
            torch,
        } = open_files(root.path(), &idx)?;
        files.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(merged) = torch {
            let mut model = Model::one_file(root, objects, super::Input::Torch(merged));
            model.files = files;
            return Ok(model);
        }
        let info = SafetensorsFile {
            header_len: root.len(),
            metadata_entries: idx.metadata_entries.unwrap_or(0),
            data_len,
            index_files: Some(files.len()),
        };
        let mut model = Model::one_file(root, objects, super::Input::Safetensors(info));
        model.files = files;
        Ok(model)
    }

    /// The files of a sharded checkpoint, by name (sorted); empty for any
    /// other model.
    pub fn checkpoint_files(&self) -> &[(String, Store)] {
        &self.files
    }

    /// The opened file `name` of a sharded checkpoint.
    pub fn checkpoint_file(&self, name: &str) -> Result<&Store> {
        (self.files.binary_search_by(|(n, _)| n.as_str().cmp(name)))
            .map(|i| &self.files[i].1)
            .map_err(|_| Error::NotFound(format!("file {name:?} of the checkpoint")))
    }
}

/// The files of a checkpoint, opened and validated.
struct Opened {
    /// In `weight_map` order, each part's `blob.shard` its file's name.
    objects: Vec<Object>,
    /// By name, in order of first mention.
    files: Vec<(String, Store)>,
    /// Their byte buffers' lengths together.
    data_len: u64,
    /// For PyTorch files, their tensors as one checkpoint's, in
    /// `weight_map` order.
    torch: Option<pytorch::File>,
}

/// A file of a checkpoint, read: its tensors.
enum Shard {
    Safetensors(safetensors::Header),
    Torch(pytorch::File),
}

impl Shard {
    fn names(&self) -> Vec<&str> {
        match self {
            Shard::Safetensors(h) => h.tensors.iter().map(|t| t.name.as_str()).collect(),
            Shard::Torch(f) => f.tensors.iter().map(|t| t.name.as_str()).collect(),
        }
    }
}

/// Opens and validates every file `idx` names, beside `index`.
fn open_files(index: &Path, idx: &index::Index) -> Result<Opened> {
    let mut slots: Vec<Option<Object>> = std::iter::repeat_with(|| None)
        .take(idx.weight_map.len())
        .collect();
    let mut files = Vec::with_capacity(idx.files.len());
    let mut data_len = 0u64;
    let mut torch = pytorch::Merged::default();
    let mut opened = open_headers(index, &idx.files).into_iter();
    for (i, name) in idx.files.iter().enumerate() {
        let (store, shard) = match opened.next() {
            Some(found) => found?,
            None => open_header(index, name, idx.files.len())?,
        };
        idx.check_file(i, &shard.names())?;
        let is_torch = matches!(shard, Shard::Torch(_));
        if i > 0 && is_torch != torch.is_started() {
            return Err(Error::Unsupported(format!(
                "{name:?}: the checkpoint's files mix safetensors and PyTorch files; transformers reads one kind per index"
            )));
        }
        let objects = match shard {
            Shard::Safetensors(header) => {
                data_len = data_len.saturating_add(store.len() - header.data_start());
                safetensors::objects::objects(&header)
            }
            Shard::Torch(file) => {
                data_len = data_len.saturating_add(file.data_len());
                let objects = pytorch::objects::objects(&file);
                torch.add(name, file);
                objects
            }
        };
        let text = Text::from(name.as_str());
        for mut o in objects {
            for p in &mut o.parts {
                p.blob.shard = Some(text.clone());
            }
            let pos = idx.position(&o.name);
            slots[pos.expect("check_file: every tensor is listed")] = Some(o);
        }
        files.push((name.clone(), store));
    }
    let objects: Vec<Object> = (slots.into_iter())
        .map(|o| o.expect("check_file: every listed tensor is in its file"))
        .collect();
    let torch = (torch.is_started()).then(|| torch.finish(objects.iter().map(|o| &*o.name)));
    Ok(Opened {
        objects,
        files,
        data_len,
        torch,
    })
}

/// Files opened at once for a checkpoint by URL.
const OPEN_AT_ONCE: usize = 8;

/// A file of a checkpoint, opened, and its tensors.
type Found = Result<(Store, Shard)>;

/// File `name` of a checkpoint of `files` files (beside `index`) opened
/// by its head, its header (or for a zip, the PyTorch checkpoint) read.
fn open_header(index: &Path, name: &str, files: usize) -> Found {
    let path = crate::store::beside(index, name);
    let store = Store::open_one_of(&path, files, Open::Head)?;
    let zip = store.slice(0, store.len().min(4))?.as_ref() == crate::format::zip::MAGIC;
    let shard = match zip {
        true => pytorch::read_file_from(&store).map(Shard::Torch),
        false => safetensors::read_header_from(&store).map(Shard::Safetensors),
    };
    Ok((store, shard.map_err(|e| in_file(name, e))?))
}

/// For a checkpoint by URL, each file of `names` opened with its header
/// read, up to [`OPEN_AT_ONCE`] at a time, since each open waits on a
/// round trip (its head, with its header in it; one more for a longer
/// header or a zip's end), in `names`' order, so the first
/// failure said is the one a file-by-file open says; none for local files,
/// which are opened one by one, stopping at the first bad one.
fn open_headers(index: &Path, names: &[String]) -> Vec<Found> {
    let open = |name: &String| open_header(index, name, names.len());
    if crate::store::url_of(index).is_none() || names.len() < 2 {
        return Vec::new();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<Found>>> =
        names.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..OPEN_AT_ONCE.min(names.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(name) = names.get(i) else { break };
                let r = open(name);
                *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| Err(Error::Usage("a checkpoint file was not opened".into())))
        })
        .collect()
}

/// A rejection of file `name` of a checkpoint, its message naming the file.
pub(super) fn in_file(name: &str, e: Error) -> Error {
    match e {
        Error::Reject { rule, detail } => Error::reject(rule, format!("{name:?}: {detail}")),
        other => other,
    }
}
