//! What a pack reads: a model ztfs opens (zTensor, safetensors, GGUF;
//! local or by URL), with its objects, their parts' decoded bytes and the
//! file attributes its format carries.
//!
//! A model whose format places each tensor's row-major data (a Hurray
//! file) is packed as dense objects of that data (`tensors.rs`).
//!
//! A model given as a checkpoint's folder (or its index) brings the
//! folder's other files
//! ([`Model::folder`]), each packed as a `ztfs.file/1` object named by its
//! path (docs/folders.md); a `.zt` packed so carries them on.
//!
//! File attributes: a zTensor model's own; a safetensors file's
//! `__metadata__` (text values; a sharded checkpoint's first file's, by
//! name); a GGUF file's key-values, typed (as the
//! public implementation's converter keeps them).

use crate::decode::Encoding;
use crate::error::{Error, Result};
use crate::format::text::Texts;
use crate::format::types::ElementType;
use crate::format::{npy, Object, Part};
use crate::model::folder::FileSource;
use crate::model::{Model, TensorData};
use crate::read::PartCheck;
use crate::store::{Blob, Store};
use std::path::PathBuf;

/// A model to pack.
pub struct Source {
    kind: Kind,
}

enum Kind {
    /// A model ztfs opens; its tensors as dense objects where its format
    /// places their row-major data.
    Model {
        model: Box<Model>,
        tensors: Option<super::tensors::Objects>,
        /// The folder's files on disk, as objects, with their files;
        /// sorted by name.
        files: Vec<(Object, Store)>,
        /// Whether a packed model's own files (its `ztfs.file/1`
        /// objects) are packed again.
        keep_files: bool,
        /// With `--dequantize`, the dense objects of values that replace
        /// its quantized objects.
        values: Option<super::values::Values>,
    },
    /// `.npy` files, each an object named by its file's stem, with its
    /// file; sorted by name.
    Npy(Vec<(Object, Store)>),
}

/// Bytes of a computed view read at once.
const VIEW_CHUNK: u64 = 8 << 20;
/// Bytes of a raw part of a local file read at once (each window mapped,
/// then unmapped: the pack's resident set stays small).
pub const FILE_CHUNK: u64 = 8 << 20;

impl Source {
    /// The model to pack, with the files of its folder unless `files` is
    /// false (`--no-files`), its quantized tensors as their values in type
    /// `dequantize` if given.
    pub fn of_model(
        model: Model,
        with_files: bool,
        dequantize: Option<crate::decode::dequant::narrow::Float>,
    ) -> Result<Source> {
        if model.manifest().is_none() {
            return Err(Error::Usage(
                "a data shard has no objects to pack: give its model's root file".into(),
            ));
        }
        let tensors = (model.packs_tensor_data())
            .then(|| super::tensors::objects(&model, dequantize))
            .transpose()?;
        let values = dequantize
            .map(|to| super::values::Values::of(&model, to))
            .transpose()?;
        let files = match with_files {
            true => folder_objects(&model)?,
            false => Vec::new(),
        };
        // One set of the model's names, not a pass over a million objects
        // for each file.
        let taken: std::collections::HashSet<&str> = match files.is_empty() {
            true => Default::default(),
            false => (model.manifest().expect("checked above").objects.iter())
                .map(|o| &*o.name)
                .collect(),
        };
        if let Some((o, _)) = files.iter().find(|(o, _)| taken.contains(&*o.name)) {
            return Err(Error::Usage(format!(
                "the folder's file {:?} has the name of an object of the model; pack with --no-files, or rename the file",
                o.name
            )));
        }
        Ok(Source {
            kind: Kind::Model {
                model: Box::new(model),
                tensors,
                files,
                keep_files: with_files,
                values,
            },
        })
    }

    /// Leaves out of the folder's files the output `path` and its data
    /// shards (`STEM-*.zt` beside it), when they lie in the folder: a
    /// folder packed into itself again must not take its last output in.
    pub fn leave_out_output(&mut self, path: &std::path::Path) {
        let Kind::Model { files, .. } = &mut self.kind else {
            return;
        };
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return;
        };
        let dir = match dir.as_os_str().is_empty() {
            true => std::path::Path::new("."),
            false => dir,
        };
        let Ok(dir) = std::fs::canonicalize(dir) else {
            return;
        };
        let name = name.to_string_lossy();
        let stem = name.strip_suffix(".zt").unwrap_or(&name).to_string();
        let ours = |target: &std::path::Path| {
            let Some(n) = target.file_name().map(|n| n.to_string_lossy()) else {
                return false;
            };
            let family = n.starts_with(&format!("{stem}-")) && n.ends_with(".zt");
            target.parent() == Some(dir.as_path()) && (n == name || family)
        };
        files.retain(|(_, store)| {
            let target = std::fs::canonicalize(store.path()).unwrap_or_default();
            !ours(&target)
        });
    }

    /// `.npy` files, each an object named by its file's stem (`w.npy` is
    /// `w`) of one part `data`; two files of one stem are refused.
    pub fn of_npy_files(paths: &[PathBuf]) -> Result<Source> {
        let mut files = Vec::with_capacity(paths.len());
        let mut texts = Texts::default();
        for path in paths {
            let store = Store::open(path)?;
            let head = store.slice(0, store.len().min(npy::MAX_HEAD_BYTES))?;
            // With one input, the command line names it already.
            let h = npy::read_header(&head, store.len()).map_err(|e| match paths.len() {
                1 => e,
                _ => Error::Unsupported(format!("{}: {}", path.display(), e.detail())),
            })?;
            let name = npy_object_name(path)?;
            let ty = ElementType {
                dtype: h.dtype,
                logical: h.logical.map(|l| texts.get(l)),
            };
            let object = Object {
                name: name.into(),
                shape: texts.shape(&h.shape),
                layout: texts.get("dense"),
                attributes: None,
                parts: smallvec::smallvec![Part::raw(
                    texts.get("data"),
                    ty,
                    h.data_offset,
                    h.data_len
                )],
            };
            files.push((object, store));
        }
        files.sort_by(|a, b| a.0.name.as_bytes().cmp(b.0.name.as_bytes()));
        if let Some(w) = files.windows(2).find(|w| w[0].0.name == w[1].0.name) {
            return Err(Error::Usage(format!(
                "two .npy files would both be object {:?}",
                w[0].0.name
            )));
        }
        Ok(Source {
            kind: Kind::Npy(files),
        })
    }

    /// Objects by the bytewise order of their names (§6.3 rule 3).
    pub fn objects_in_canonical_order(&self) -> Vec<&Object> {
        let mut objects: Vec<&Object> = match &self.kind {
            Kind::Model {
                tensors: Some(h),
                files,
                values,
                ..
            } => (h.objects.iter().map(|o| replace(values.as_ref(), o)))
                .chain(files.iter().map(|(o, _)| o))
                .collect(),
            Kind::Model {
                model,
                files,
                keep_files,
                values,
                ..
            } => {
                let m = model.manifest().expect("checked at open");
                let kept = |o: &&Object| *keep_files || !crate::format::profiles::is_file(o);
                let replaced = |o| replace(values.as_ref(), o);
                (m.objects.iter().filter(kept).map(replaced))
                    .chain(files.iter().map(|(o, _)| o))
                    .collect()
            }
            Kind::Npy(files) => files.iter().map(|(o, _)| o).collect(),
        };
        objects.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        objects
    }

    /// The stored bytes of `part` of `object`.
    fn blob(&self, object: &Object, part: &Part) -> Result<Blob<'_>> {
        match &self.kind {
            Kind::Model { model, files, .. } if !is_folder_file(files, object) => model.blob(part),
            Kind::Model { files, .. } | Kind::Npy(files) => {
                let i = files
                    .binary_search_by(|(o, _)| o.name.as_bytes().cmp(object.name.as_bytes()))
                    .map_err(|_| Error::NotFound(format!("object {:?}", object.name)))?;
                Ok(Blob {
                    store: &files[i].1,
                    offset: part.blob.offset,
                    len: part.blob.length,
                })
            }
        }
    }

    /// The values replacing quantized object `object` (`--dequantize`),
    /// the model, and the object's index in it.
    fn values_of(&self, object: &Object) -> Option<(&super::values::Values, &Model, u32)> {
        match &self.kind {
            Kind::Model {
                model,
                values: Some(v),
                ..
            } => {
                // A folder's file of the same name is not the tensor.
                let r = v.get(&object.name)?;
                std::ptr::eq(r, object).then_some((v, &**model, v.model_index(&object.name)?))
            }
            _ => None,
        }
    }

    /// The computed view of a tensor's data, and the file it reads.
    fn view(&self, object: &Object) -> Option<(&crate::decode::hurray::RowMajor, &Store)> {
        match &self.kind {
            Kind::Model {
                model,
                tensors: Some(h),
                ..
            } => {
                let i = *h.computed.get(&object.name)?;
                match model.tensor_data(i) {
                    TensorData::Computed { view, .. } => Some((view, model.view_store(i).ok()?)),
                    TensorData::ByLayout | TensorData::Stored { .. } | TensorData::Absent(_) => {
                        None
                    }
                }
            }
            _ => None,
        }
    }

    /// An object's parts by the bytewise order of their names.
    pub fn parts_in_canonical_order<'a>(&self, object: &'a Object) -> Vec<&'a Part> {
        let mut parts: Vec<&Part> = object.parts.iter().collect();
        parts.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        parts
    }

    /// The sum of the decoded sizes of every part.
    pub fn decoded_bytes(&self) -> u64 {
        let objects = self.objects_in_canonical_order();
        objects
            .iter()
            .flat_map(|o| o.parts.iter())
            .map(Part::decoded_size)
            .fold(0, u64::saturating_add)
    }

    /// Streams a part's decoded bytes to `sink`, checking them on the way:
    /// the encoding (frame checksums, lengths), the content rules of a
    /// dense object's logical type, and the part's digest when it has one.
    /// A part of an unknown encoding, logical type or digest algorithm is
    /// refused, as `check --verify` refuses it.
    pub fn stream(
        &self,
        object: &Object,
        part: &Part,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut check = PartCheck::new(object, part)?;
        let what = check.what().to_string();
        if let Some((values, model, i)) = self.values_of(object) {
            values.stream(model, i, &mut |c: &[u8]| {
                check.update(c)?;
                sink(c)
            })?;
            return check.finish().map(|_| ());
        }
        let view = self.view(object);
        let stored = self.blob(object, part)?;
        let enc = Encoding::of_from(part, &stored)?;
        let mut each = |c: &[u8]| {
            check.update(c)?;
            sink(c)
        };
        match (view, &enc, stored.store.file()) {
            (Some((v, file)), _, _) => stream_view(v, file, &what, &mut each)?,
            // Through windows of a map, not the store's whole-file map: a
            // pack reads every byte once, and through the whole map each
            // page would stay in the resident set until the end.
            (None, Encoding::Raw, Some(file)) => crate::store::for_each_mapped(
                file,
                &stored.store.name(),
                stored.offset,
                stored.len,
                FILE_CHUNK,
                &mut each,
            )?,
            _ => enc.stream_from(&stored, &mut each)?,
        }
        check.finish().map(|_| ())
    }

    /// Where a raw part of a local file lies, for a copy from file to file
    /// (none for an encoded part, a computed view or a remote file).
    pub fn local_range(&self, object: &Object, part: &Part) -> Option<LocalRange<'_>> {
        if part.encoding.is_some()
            || self.view(object).is_some()
            || self.values_of(object).is_some()
        {
            return None;
        }
        let blob = self.blob(object, part).ok()?;
        Some(LocalRange {
            file: blob.store.file()?,
            path: blob.store.path(),
            name: blob.store.name(),
            offset: blob.offset,
            len: blob.len,
        })
    }

    /// The file a part's bytes are read from (a computed view's too), to
    /// watch for changes and to name: local or by URL; none for a shard
    /// that cannot be found.
    pub fn store_of(&self, object: &Object, part: &Part) -> Option<&Store> {
        if let Some((_, model, i)) = self.values_of(object) {
            return match model.tensor_data(i) {
                TensorData::Computed { .. } => model.view_store(i).ok(),
                _ => model
                    .blob(model.manifest()?.objects[i as usize].parts.first()?)
                    .ok()
                    .map(|b| b.store),
            };
        }
        match self.view(object) {
            Some((_, file)) => Some(file),
            None => Some(self.blob(object, part).ok()?.store),
        }
    }

    /// Checks an object's layout data rules (sparse indices, MX scales)
    /// over its decoded parts, as `check --verify` does: a pack writes
    /// nothing that check would reject.
    pub fn check_object(&self, object: &Object) -> Result<()> {
        match &self.kind {
            Kind::Model { model, .. } if crate::read::has_data_rules(object) => {
                crate::read::verify_object(model, object)
            }
            _ => Ok(()),
        }
    }

    /// The file attributes to write, as deterministic CBOR.
    pub fn attributes(&self) -> Result<Option<Vec<u8>>> {
        let Kind::Model { model: m, .. } = &self.kind else {
            return Ok(None);
        };
        m.file_attributes()
    }
}

/// `o`, or the object of values that replaces it (`--dequantize`).
fn replace<'a>(values: Option<&'a super::values::Values>, o: &'a Object) -> &'a Object {
    values.and_then(|v| v.get(&o.name)).unwrap_or(o)
}

/// A raw part's bytes in a local file ([`Source::local_range`]).
pub struct LocalRange<'a> {
    pub file: &'a std::fs::File,
    /// The file's path.
    pub path: &'a std::path::Path,
    /// The file's path, for messages.
    pub name: String,
    pub offset: u64,
    pub len: u64,
}

/// A computed view's bytes, a chunk at a time.
fn stream_view(
    view: &crate::decode::hurray::RowMajor,
    file: &Store,
    what: &str,
    sink: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let mut read = |at, buf: &mut [u8]| {
        (view.read_into(file, at, buf)).map_err(|e| Error::Unsupported(format!("{what}: {e}")))
    };
    crate::read::in_chunks(view.len(), VIEW_CHUNK, &mut read, sink)
}

/// The object name of a `.npy` input: its file name without `.npy`,
/// refused when that is not UTF-8 (an object name is UTF-8, and a
/// replacement character would name a file that does not exist) or empty
/// (a file named `.npy`).
fn npy_object_name(path: &std::path::Path) -> Result<String> {
    let file = path.file_name().unwrap_or_default();
    let file = file.to_str().ok_or_else(|| {
        Error::Usage(format!(
            "{path:?}: the file name is not UTF-8, so it is no object name (rename the file)"
        ))
    })?;
    let name = file.strip_suffix(".npy").unwrap_or(file);
    if name.is_empty() {
        return Err(Error::Usage(format!(
            "{path:?}: the file name without .npy is empty, so it is no object name (rename the file)"
        )));
    }
    Ok(name.to_string())
}

/// True when `object` is one of `files` (the folder's files on disk).
fn is_folder_file(files: &[(Object, Store)], object: &Object) -> bool {
    (files.binary_search_by(|(o, _)| o.name.as_bytes().cmp(object.name.as_bytes()))).is_ok()
}

/// The files of `model`'s folder (on disk, or a Hub repository's), each as a `ztfs.file/1` object
/// of one raw `u8` part `data` (the whole file), with the file opened;
/// sorted by name. A packed model's own files are among its objects
/// already.
fn folder_objects(model: &Model) -> Result<Vec<(Object, Store)>> {
    let Some(folder) = model.folder()? else {
        return Ok(Vec::new());
    };
    let mut texts = Texts::default();
    let mut out = Vec::new();
    for f in &folder.files {
        let store = match &f.source {
            FileSource::Disk(disk) => {
                let file = disk.file(f.len)?.try_clone();
                let file = file.map_err(|e| Error::io(disk.shown().display().to_string(), e))?;
                Store::of_file(disk.shown(), file)?
            }
            FileSource::Store(s) => Store::open(s.location())?,
            // A packed model's files are among its objects already.
            FileSource::Object(_) => continue,
        };
        if store.len() != f.len {
            return Err(Error::Unsupported(format!(
                "the folder's file {:?} changed while it was read ({} bytes, {} before)",
                f.path,
                store.len(),
                f.len
            )));
        }
        let ty = ElementType {
            dtype: crate::format::types::DType::U8,
            logical: None,
        };
        let object = Object {
            name: f.path.as_str().into(),
            shape: texts.shape(&[f.len]),
            layout: texts.get(crate::format::profiles::FILE),
            attributes: None,
            parts: smallvec::smallvec![Part::raw(texts.get("data"), ty, 0, f.len)],
        };
        out.push((object, store));
    }
    out.sort_by(|a, b| a.0.name.as_bytes().cmp(b.0.name.as_bytes()));
    Ok(out)
}
