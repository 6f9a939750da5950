//! An ONNX model (`.onnx`, a `ModelProto`) as a model
//! ([`crate::format::onnx`]): its initializers and `Constant` tensors,
//! every one checked at open. `raw_data` is served in place from the
//! map; a typed field is counted at open and converted on first use into
//! the model's made file ([`super::made`]); external data files are
//! opened at open, found from the model's folder by the folder's rules
//! ([`super::folder::open_in`]; by URL, beside the model's), each range
//! checked against its file, and served in place. A part's `blob.shard`
//! names its external file by its `location`.

use std::path::Path;

use super::folder::{open_in, OpenIn};
use super::made::Made;
use super::{no_shards, Input, Model};
use crate::error::{Error, Result, Rule};
use crate::format::onnx::objects::{self, CONVERTED};
use crate::format::onnx::{self, typed, Data, Tensor};
use crate::store::{Open, Store};

/// The largest `.onnx` file: protobuf refuses a message of 2 GiB or more,
/// and ONNX keeps larger weights in external data.
pub const MAX_FILE: u64 = (1 << 31) - 1;

fn reject_in(t: &Tensor, e: Error) -> Error {
    match e {
        Error::Reject { rule, detail } => {
            Error::reject(rule, format!("tensor {:?}: {detail}", t.name))
        }
        other => other,
    }
}

impl Model {
    /// Opens an ONNX model: every rule is checked here.
    pub(super) fn open_onnx(
        root: Store,
        overrides: Vec<(String, std::path::PathBuf)>,
    ) -> Result<Model> {
        no_shards(
            &overrides,
            "an ONNX model has no shards (its external data files are found by their locations)",
        )?;
        if root.len() > MAX_FILE {
            return Err(Error::reject(
                Rule::OnnxModel,
                format!(
                    "{} bytes: an ONNX model is one protobuf message, under 2 GiB (larger weights go in external data files)",
                    root.len()
                ),
            ));
        }
        let bytes = root.slice(0, root.len())?;
        let parsed = onnx::parse(&bytes).map_err(|e| Error::reject(e.rule, e.to_string()))?;
        let (objects, file) = objects::objects(parsed)?;
        for &(i, _, _) in &file.converted {
            let t = &file.model.tensors[i];
            convert(&bytes, t, &mut |_| Ok(()))?;
        }
        drop(bytes);
        let files = open_external(&root, &file.locations)?;
        for o in &objects {
            let p = &o.parts[0];
            let Some(name) = p.blob.shard.as_deref().filter(|&s| s != CONVERTED) else {
                continue;
            };
            let len = (files.iter())
                .find(|(n, _)| n == name)
                .map_or(0, |(_, s)| s.len());
            if p.blob
                .offset
                .checked_add(p.blob.length)
                .is_none_or(|end| end > len)
            {
                return Err(Error::reject(
                    Rule::OnnxExternalRange,
                    format!(
                        "tensor {:?}: {} bytes at offset {} of {name:?}, a file of {len} bytes",
                        o.name, p.blob.length, p.blob.offset
                    ),
                ));
            }
        }
        let converted = file.converted.clone();
        let mut model = Model::one_file(root, objects, Input::Onnx(Box::new(file)));
        model.files = files;
        model.made = Made::new(CONVERTED, &converted);
        Ok(model)
    }

    /// Converts typed tensor `t`'s values into `sink`, from the root.
    pub(super) fn convert_typed(
        &self,
        t: &Tensor,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let Data::Typed { message, .. } = t.data else {
            return Err(Error::NotFound(format!(
                "the typed field of tensor {:?}",
                t.name
            )));
        };
        let bytes = self.root.slice(message.0, message.1)?;
        convert_at(&bytes, message.0, t, sink)
    }
}

/// Converts typed tensor `t`'s values from the whole file `file`.
fn convert(file: &[u8], t: &Tensor, sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
    let Data::Typed {
        message: (at, len), ..
    } = t.data
    else {
        return Ok(());
    };
    // The parser found the message inside the file.
    let msg = &file[at as usize..(at + len) as usize];
    convert_at(msg, at, t, sink)
}

fn convert_at(
    msg: &[u8],
    at: u64,
    t: &Tensor,
    sink: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    // Checked by `objects`: the product does not overflow.
    let count = t.dims.iter().product();
    typed::convert(msg, at, t.data_type, count, sink).map_err(|e| reject_in(t, e))
}

/// Opens the external data files `locations` (sorted) of the model
/// `root`, each once: locally from the model's folder by the folder's
/// rules, by URL beside the model.
fn open_external(root: &Store, locations: &[String]) -> Result<Vec<(String, Store)>> {
    let mut files = Vec::with_capacity(locations.len());
    let missing = |l: &str, why: String| {
        Error::reject(
            Rule::OnnxExternalMissing,
            format!("external data file {l:?}: {why}"),
        )
    };
    for location in locations {
        let store = match root.file() {
            Some(_) => {
                let dir = root.path().parent().filter(|d| !d.as_os_str().is_empty());
                let dir = dir.unwrap_or(Path::new("."));
                let (file, shown) = open_in(dir, location).map_err(|e| match e {
                    OpenIn::Missing(why) => missing(location, why),
                    OpenIn::Outside(why) => Error::reject(
                        Rule::OnnxExternalPath,
                        format!("external data file {location:?}: {why}"),
                    ),
                })?;
                Store::of_file(&shown, file).map_err(|e| missing(location, e.to_string()))?
            }
            None => {
                let path = crate::store::beside_path(root.path(), location);
                let n = locations.len() + 1;
                Store::open_one_of(&path, n, Open::Head).map_err(|e| match e {
                    Error::Io { ref source, .. }
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        missing(location, e.to_string())
                    }
                    e => e,
                })?
            }
        };
        files.push((location.clone(), store));
    }
    Ok(files)
}
