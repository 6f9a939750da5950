//! `ztfs digest` and `ztfs manifest`: what identifies a model, and its
//! manifest as JSON.

use std::io::Write;
use std::path::Path;

use super::args::{AlgoArg, ModelArg};
use super::{open, stdout_write};
use crate::digest::{self, Algo};
use crate::error::{Error, Result};
use crate::report;

/// Print the model's content digest (zt.content/1, §6.4).
#[derive(clap::Args, Debug)]
pub struct DigestCmd {
    #[command(flatten)]
    pub model: ModelArg,
    /// The hash over the content value.
    #[arg(long, value_enum, default_value_t = AlgoArg::Sha256)]
    pub algo: AlgoArg,
}

impl DigestCmd {
    pub fn run(self) -> Result<()> {
        print_digest(&self.model.file, self.algo)
    }
}

/// Print the manifest as JSON (the mount's manifest.json).
#[derive(clap::Args, Debug)]
pub struct ManifestCmd {
    #[command(flatten)]
    pub model: ModelArg,
}

impl ManifestCmd {
    pub fn run(self) -> Result<()> {
        manifest(&self.model.file)
    }
}

fn print_digest(file: &Path, algo: AlgoArg) -> Result<()> {
    let model = open(file)?;
    if model.has_no_digests() {
        return Err(Error::Unsupported(format!(
            "a {} file has no content digest: the format defines none",
            model.format_name()
        )));
    }
    let algo = match algo {
        AlgoArg::Sha256 => Algo::Sha256,
        AlgoArg::Xxh3 => Algo::Xxh3,
    };
    let m = model.manifest().ok_or_else(|| {
        Error::Unsupported("a data shard has no manifest, so no content digest".into())
    })?;
    match digest::content_digest(m, algo) {
        Ok(d) => {
            let mut out = std::io::stdout().lock();
            stdout_write(&mut out, format!("{d}\n").as_bytes())
        }
        Err(missing) => Err(Error::Unsupported(format!(
            "the content digest is undefined: {} part(s) have no digest: {}",
            missing.len(),
            report::list_some(&missing, 10)
        ))),
    }
}

fn manifest(file: &Path) -> Result<()> {
    let model = open(file)?;
    // Written as it is rendered: the text can be many times the manifest.
    let mut out = crate::format::json::Pieces::new(std::io::stdout().lock());
    report::write_manifest_json(&model, &mut out)?;
    out.finish()
        .and_then(|mut o| o.flush())
        .map_err(|e| Error::io("stdout", e))
}
