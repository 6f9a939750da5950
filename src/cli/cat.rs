//! `ztfs cat`: a part's bytes to stdout.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::args::{parse_shard, ModelArg};
use super::stdout_write;
use crate::error::{Error, Result};
use crate::model::{Model, DATA};
use crate::read;
use crate::report;

/// Write a part's decoded bytes to stdout.
#[derive(clap::Args, Debug)]
pub struct CatCmd {
    #[command(flatten)]
    pub model: ModelArg,
    /// The object's name, exactly as in the manifest.
    pub object: String,
    /// The part's name.
    #[arg(default_value = "data")]
    pub part: String,
    /// Write the stored bytes instead (structural access: no decoding,
    /// no interpretation, no content rules).
    #[arg(long)]
    pub raw: bool,
    /// Write the tensor's values as raw little-endian numbers, no header:
    /// a quantized tensor (a GGUF block type) dequantized to float32, the
    /// values gguf-py's `quants.dequantize` gives; any other tensor its
    /// row-major data.
    #[arg(long, conflicts_with = "raw")]
    pub values: bool,
    /// Use PATH for shard NAME (repeatable).
    #[arg(long, value_name = "NAME=PATH", value_parser = parse_shard)]
    pub shard: Vec<(String, PathBuf)>,
    /// Read a shard's bytes without first checking its whole-file
    /// digest against the shard table (you vouch for the file).
    #[arg(long)]
    pub trust_shards: bool,
}

impl CatCmd {
    pub fn run(self) -> Result<()> {
        let CatCmd {
            model,
            object,
            part,
            raw,
            values,
            shard,
            trust_shards,
        } = self;
        if values && part != DATA {
            return Err(Error::Usage(format!(
                "--values writes a tensor's values, not part {part:?}"
            )));
        }
        let how = match (raw, values) {
            (true, _) => How::Raw,
            (_, true) => How::Values,
            _ => How::Decoded,
        };
        cat(&model.file, &object, &part, how, shard, trust_shards)
    }
}

/// What `cat` writes of a part.
#[derive(Clone, Copy, PartialEq, Eq)]
enum How {
    Decoded,
    Raw,
    Values,
}

fn cat(
    file: &Path,
    object: &str,
    part: &str,
    how: How,
    shard_paths: Vec<(String, PathBuf)>,
    trust_shards: bool,
) -> Result<()> {
    let model = Model::open_with(file, shard_paths)?.trust_shards(trust_shards);
    let m = (model.manifest())
        .ok_or_else(|| Error::NotFound("it is a data shard: it has no objects".into()))?;
    let o = m.object(object).ok_or_else(|| {
        let near = report::near_names(object, m.objects.iter().map(|o| &*o.name));
        let hint = match near.as_slice() {
            [] => {
                " (`ztfs ls FILE` lists them; a name starting with '-' goes after `--`)".to_string()
            }
            names => format!(
                "; did you mean {}?",
                names
                    .iter()
                    .map(|n| format!("{n:?}"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        };
        Error::NotFound(format!("object {object:?}{hint}"))
    })?;
    let raw = how == How::Raw;
    // A tensor's values (with --values, a quantized tensor's, whose part
    // `data` holds its blocks), or its row-major data its format computes
    // or says it has none of where the object has no part of that name:
    // read as `ztfs.open` reads them.
    if part == DATA && !raw && (how == How::Values || o.part(part).is_none()) {
        return cat_tensor(model, object);
    }
    let p = o.part(part).ok_or_else(|| {
        let names: Vec<&str> = o.parts.iter().map(|p| p.name.as_str()).collect();
        Error::NotFound(format!(
            "part {part:?} of object {object:?} (its parts: {names:?})"
        ))
    })?;
    let mut out = std::io::stdout().lock();
    let mut sink = |chunk: &[u8]| stdout_write(&mut out, chunk);
    if raw {
        read::stored(&model, p, &mut sink)?;
    } else {
        read::decoded(&model, o, p, &mut sink)?;
    }
    out.flush().map_err(|e| Error::io("stdout", e))
}

/// Writes tensor `object`'s values, a chunk at a time, through
/// [`crate::Model`] (a chunk's dequantized values computed on every core).
fn cat_tensor(model: Model, object: &str) -> Result<()> {
    let opts = crate::library::Options {
        files: false,
        // The block cache a command has by default.
        cache_mib: 256,
        ..crate::library::Options::default()
    };
    let m = crate::Model::of(model, opts)?;
    let Some(t) = m.tensor(object) else {
        let why = (m.left_out().iter()).find(|(n, _)| n == object);
        let why = why.map_or("not a tensor", |(_, w)| w.as_str());
        return Err(Error::Unsupported(format!(
            "tensor {object:?} has no data: {why}"
        )));
    };
    let mut out = std::io::stdout().lock();
    read::in_chunks(
        t.len(),
        16 << 20,
        &mut |at, buf| m.read(t, at, buf),
        &mut |chunk| stdout_write(&mut out, chunk),
    )?;
    out.flush().map_err(|e| Error::io("stdout", e))
}
