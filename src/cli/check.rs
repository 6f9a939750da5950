//! `ztfs check`: validate a model, and with `--verify` read every part.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use super::args::{parse_shard, FilesArg, ModelArg};
use crate::error::{Error, Result};
use crate::model::Model;
use crate::read::{self, Watch};
use crate::report;
use crate::shards::Found;

/// Validate a file: exit 0 if valid, 1 if rejected, 2 on usage or I/O errors.
///
/// Without --verify, checks everything the format lets a reader check
/// without reading tensor bytes: footer, manifest hash, strict CBOR,
/// schema, names, shapes, blob bounds and overlap, layout metadata.
#[derive(clap::Args, Debug)]
pub struct CheckCmd {
    #[command(flatten)]
    pub model: ModelArg,
    /// Also decode every part and check its digest and content rules
    /// (bool bytes, f4_e2m1 padding), and each shard's whole-file
    /// digest; report parts with no digest.
    #[arg(long)]
    pub verify: bool,
    /// Use PATH for shard NAME (repeatable); otherwise shards are found
    /// beside the root as STEM-NAME.zt, then by size and digest.
    #[arg(long, value_name = "NAME=PATH", value_parser = parse_shard)]
    pub shard: Vec<(String, PathBuf)>,
    #[command(flatten)]
    pub files: FilesArg,
    #[command(flatten)]
    pub progress: super::args::ProgressArg,
}

impl CheckCmd {
    pub fn run(self) -> Result<()> {
        check(
            &self.model.file,
            self.verify,
            self.shard,
            !self.files.no_files,
        )
    }
}

fn check(
    file: &Path,
    verify: bool,
    shard_paths: Vec<(String, PathBuf)>,
    files: bool,
) -> Result<()> {
    let model = Model::open_with(file, shard_paths)?;
    if files {
        note_folder(&model, file)?;
    }
    let Some(m) = model.manifest() else {
        println!(
            "{}: valid: data shard (no manifest)",
            crate::store::shown(file)
        );
        return Ok(());
    };
    let say = |what: &str, line: &dyn std::fmt::Display| {
        eprintln!("ztfs: {}: {what}{line}", crate::store::shown(file))
    };
    for n in crate::report::check::notes(model.input(), m) {
        say("note: ", &n);
    }
    let shard_bytes = report::total(model.shard_table().iter().map(|s| s.size));
    let total = if verify {
        shard_bytes.saturating_add(model.input().verify_bytes(m))
    } else {
        0
    };
    let mut progress = report::Progress::new(total, std::io::stderr().is_terminal());
    let mut first_err = None;
    let mut unavailable = Vec::new();
    for s in model.shard_table() {
        match model.shard(&s.name) {
            Ok((store, found)) => {
                if found != Found::Positional {
                    say(
                        "note: ",
                        &format!(
                            "shard {:?} found {} at {}",
                            s.name,
                            found_how(found),
                            store.name()
                        ),
                    );
                }
                if verify {
                    if let Err(e) = model.prove_shard(&s.name, &mut |n| progress.add(n)) {
                        progress.clear();
                        crate::sys::no_fault()?;
                        say("", &e);
                        first_err.get_or_insert(e);
                    }
                }
            }
            Err(e) => {
                say("warning: ", &e);
                unavailable.push(s.name.as_str());
            }
        }
    }
    if !verify {
        println!(
            "{}: valid: {}",
            crate::store::shown(file),
            report::summary_of(&model, m)
        );
        return Ok(());
    }
    let mut shown = Shown {
        progress: &mut progress,
        file,
    };
    let verified = read::verify_model(&model, &unavailable, &mut shown);
    progress.clear();
    if let Some(e) = first_err {
        // A shard's digest failed; the parts' errors, if any, were said.
        return Err(Error::Reported(Box::new(e)));
    }
    let report = verified?;
    // A format without digests says so in its line instead.
    if report.no_digest > 0 && model.input().has_digests() {
        say(
            "note: ",
            &no_digest_note(report.no_digest, &report.no_digest_names),
        );
    }
    println!(
        "{}: valid and verified: {}; {}",
        crate::store::shown(file),
        report::summary_of(&model, m),
        crate::report::check::verified(model.input(), &report),
    );
    Ok(())
}

/// A verification shown on a terminal: a progress bar, and each error on
/// stderr as it is found.
struct Shown<'a> {
    progress: &'a mut report::Progress,
    file: &'a Path,
}

impl Watch for Shown<'_> {
    fn read(&mut self, n: u64) -> Result<()> {
        // The file truncated under a read: what was read since may be the
        // zeros that stood in, so nothing more is judged.
        crate::sys::no_fault()?;
        self.progress.add(n);
        Ok(())
    }

    fn failed(&mut self, _: read::Place, e: &Error) {
        self.progress.clear();
        if !crate::sys::fault_seen() {
            eprintln!("ztfs: {}: {e}", crate::store::shown(self.file));
        }
    }
}

/// One line for the parts without a digest, however many there are.
fn no_digest_note(count: usize, first: &[String]) -> String {
    let names = first.join(", ");
    let more = count.saturating_sub(first.len());
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let (what, its) = if count == 1 {
        ("part has", "its")
    } else {
        ("parts have", "their")
    };
    format!("{count} {what} no digest, so {its} content is not verified: {names}{tail}")
}

fn found_how(found: Found) -> &'static str {
    match found {
        Found::Override => "as given",
        Found::Positional => "beside the root",
        Found::Identity => "by identity (size and digest)",
    }
}

/// Notes what comes with the model from its folder, and what was left out.
fn note_folder(model: &Model, file: &Path) -> Result<()> {
    let Some(folder) = model.folder()? else {
        return Ok(());
    };
    let say = |what: &str| eprintln!("ztfs: {}: note: {what}", crate::store::shown(file));
    for note in &folder.notes {
        say(note);
    }
    if !folder.is_empty() {
        say(&format!(
            "{} other files of the folder ({}) come with the model (--no-files leaves them out)",
            folder.files.len(),
            report::human(folder.bytes)
        ));
    }
    Ok(())
}
