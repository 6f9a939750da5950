//! `ztfs check`: validate a model, and with `--verify` read every part.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use super::args::{parse_shard, ModelArg};
use crate::error::{Error, Result};
use crate::format::hurray;
use crate::model::Model;
use crate::read::{self, Verified};
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
}

impl CheckCmd {
    pub fn run(self) -> Result<()> {
        check(&self.model.file, self.verify, self.shard)
    }
}

fn check(file: &Path, verify: bool, shard_paths: Vec<(String, PathBuf)>) -> Result<()> {
    let model = Model::open_with(file, shard_paths)?;
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
    for n in model.input().notes(m) {
        say("note: ", &n);
    }
    let shard_bytes = report::total(model.shard_table().iter().map(|s| s.size));
    let part_bytes = report::total(
        m.objects
            .iter()
            .flat_map(|o| &o.parts)
            .map(|p| p.decoded_size()),
    );
    let total = if verify {
        shard_bytes.saturating_add(part_bytes)
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
    if model.gguf().is_some() {
        println!(
            "{}: valid and verified: {}; every structural rule holds; the format has no content digests and no rules on tensor bytes",
            crate::store::shown(file),
            report::summary_of(&model, m),
        );
        return Ok(());
    }
    if let Some(f) = model.hurray() {
        // The structural rules were checked at open; the one rule on bytes
        // (MXFP scales) is checked here. The format has no content digests.
        let total = hurray::data_rules::data_bytes(f);
        let mut progress = report::Progress::new(total, std::io::stderr().is_terminal());
        let mut tick = |n| {
            progress.add(n);
            Ok(())
        };
        let r = hurray::data_rules::check_data(f, model.root(), &mut tick);
        progress.clear();
        r?;
        println!(
            "{}: valid and verified: {}; every structural rule, the index CRC (when present) and the MXFP scale bytes hold; the format has no content digests",
            crate::store::shown(file),
            report::summary_of(&model, m),
        );
        return Ok(());
    }
    let (mut no_digest, mut verified, mut skipped) = (Vec::new(), 0usize, 0usize);
    let mut no_digest_count = 0usize;
    for o in &m.objects {
        let mut parts_ok = true;
        for p in &o.parts {
            let in_missing = p
                .blob
                .shard
                .as_deref()
                .is_some_and(|s| unavailable.contains(&s));
            let r = if in_missing {
                skipped += 1;
                Ok(None)
            } else {
                let mut tick = |n| {
                    progress.add(n);
                    Ok(())
                };
                read::verify(&model, o, p, &mut tick).map(Some)
            };
            match r {
                Ok(Some(Verified::Digest)) => verified += 1,
                Ok(Some(Verified::NoDigest)) => {
                    no_digest_count += 1;
                    if no_digest.len() < NO_DIGEST_NAMES {
                        no_digest.push(format!("{:?}/{:?}", o.name, p.name));
                    }
                }
                Ok(None) => parts_ok = false,
                Err(e) => {
                    parts_ok = false;
                    progress.clear();
                    say("", &e);
                    first_err.get_or_insert(e);
                }
            }
        }
        // Layout data rules need every part of the object.
        let data = if parts_ok {
            read::verify_object(&model, o)
        } else {
            Ok(())
        };
        if let Err(e) = data {
            progress.clear();
            say("", &e);
            first_err.get_or_insert(e);
        }
    }
    progress.clear();
    if skipped > 0 {
        let e = Error::Unsupported(format!(
            "{skipped} part(s) in unavailable shards ({}) cannot be verified",
            unavailable.join(", ")
        ));
        say("", &e);
        first_err.get_or_insert(e);
    }
    if let Some(e) = first_err {
        return Err(Error::Reported(Box::new(e)));
    }
    if model.safetensors().is_some() {
        // Every rule of the format was checked at open; reading every
        // tensor adds the content rules of the types (bool bytes).
        println!(
            "{}: valid and verified: {}; every structural rule holds and every tensor reads (bool bytes are 0 or 1); the format has no content digests",
            crate::store::shown(file),
            report::summary_of(&model, m),
        );
        return Ok(());
    }
    if no_digest_count > 0 {
        say("note: ", &no_digest_note(no_digest_count, &no_digest));
    }
    println!(
        "{}: valid and verified: {}; {} {}, {} no digest",
        crate::store::shown(file),
        report::summary_of(&model, m),
        report::count(verified, "digest"),
        if verified == 1 { "matches" } else { "match" },
        report::count(no_digest_count, "part")
            + if no_digest_count == 1 {
                " has"
            } else {
                " have"
            },
    );
    Ok(())
}

/// How many parts without a digest `check --verify` names; the rest are counted.
const NO_DIGEST_NAMES: usize = 3;

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
