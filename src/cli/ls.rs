//! `ztfs ls`: the objects of a model, in words or as JSON.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::args::{parse_shard, FilesArg, ModelArg};
use super::stdout_write;
use crate::error::{Error, Result};
use crate::model::Model;
use crate::report;
use crate::tree::Options;

/// List objects: names; with -l layout, type, shape and size, file
/// attributes and the shard table.
#[derive(clap::Args, Debug)]
pub struct LsCmd {
    #[command(flatten)]
    pub model: ModelArg,
    /// Long listing.
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// Everything as JSON.
    #[arg(long, conflicts_with = "long")]
    pub json: bool,
    /// Which objects a mount's model.safetensors holds (name, dtype,
    /// file), and why each other one is left out.
    #[arg(long, conflicts_with_all = ["long", "json"])]
    pub safetensors: bool,
    /// Use PATH for shard NAME (repeatable).
    #[arg(long, value_name = "NAME=PATH", value_parser = parse_shard)]
    pub shard: Vec<(String, PathBuf)>,
    #[command(flatten)]
    pub files: FilesArg,
}

impl LsCmd {
    pub fn run(self) -> Result<()> {
        if self.safetensors {
            return ls_safetensors(&self.model.file, self.shard);
        }
        let files = !self.files.no_files;
        ls(&self.model.file, self.long, self.json, self.shard, files)
    }
}

/// `ls --safetensors`: each object's place in a mount's safetensors
/// files, as the mount would serve them.
fn ls_safetensors(file: &Path, shard_paths: Vec<(String, PathBuf)>) -> Result<()> {
    let model = Model::open_with(file, shard_paths)?;
    let tree = crate::tree::Tree::build(model, Options::default())?;
    let mut text = String::new();
    for (name, place) in tree.safetensors_listing() {
        let name = report::display_name(&name);
        match place {
            Ok((file, _, dtype)) => text.push_str(&format!("{name}\t{dtype}\t{file}\n")),
            Err(why) => text.push_str(&format!("{name}\t-\tleft out: {why}\n")),
        }
    }
    for note in tree.safetensors_notes() {
        text.push_str(&format!("{}: {note}\n", crate::tree::safetensors::FILE));
    }
    let mut out = std::io::stdout().lock();
    stdout_write(&mut out, text.as_bytes())?;
    out.flush().map_err(|e| Error::io("stdout", e))
}

fn ls(
    file: &Path,
    long: bool,
    as_json: bool,
    shard_paths: Vec<(String, PathBuf)>,
    files: bool,
) -> Result<()> {
    let model = Model::open_with(file, shard_paths)?;
    let mut out = std::io::stdout().lock();
    let mut text = match model.manifest() {
        None if as_json => "{\"data_shard\":true,\"objects\":[]}\n".to_string(),
        None => format!(
            "{}: data shard (no manifest): nothing to list\n",
            crate::store::shown(file)
        ),
        Some(_) if as_json => report::ls_json(&model, files)? + "\n",
        Some(_) if long => report::ls_long(&model)?,
        // A packed folder's files are listed as files, below.
        Some(m) => (m.objects.iter())
            .filter(|o| !crate::format::profiles::is_file(o))
            .map(|o| format!("{}\n", report::display_name(&o.name)))
            .collect(),
    };
    // The folder's files after the objects, under a line of their own.
    let folder = if files && !as_json {
        model.folder()?
    } else {
        None
    };
    if let Some(f) = folder.filter(|f| !f.files.is_empty()) {
        text.push_str(&format!("\nfiles of the folder ({}):\n", f.files.len()));
        for x in &f.files {
            let path = report::display_name(&x.path);
            match long {
                true => text.push_str(&format!("{:>12}  {path}\n", x.len)),
                false => text.push_str(&format!("{path}\n")),
            }
        }
    }
    stdout_write(&mut out, text.as_bytes())?;
    out.flush().map_err(|e| Error::io("stdout", e))
}
