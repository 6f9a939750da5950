//! `--verify` of a whole model: the one driver `ztfs check --verify` runs.
//! What a format asks beyond structure comes from the model's input: its
//! rules on tensor bytes (a Hurray file's MXFP scales), whether its parts
//! are read and checked (zTensor and safetensors: content rules, decoded
//! length, digest; then each object's layout data rules), and the bytes
//! that reading takes, for a progress bar.

use crate::error::{Error, Result};
use crate::model::Model;

use super::{verify, verify_object, Verified};

/// How many parts without a digest a [`Report`] names; the rest are
/// counted.
pub const NO_DIGEST_NAMES: usize = 3;

/// What a verification found besides errors.
#[derive(Debug, Default)]
pub struct Report {
    /// Parts whose digest matches.
    pub verified: usize,
    /// Parts decoded and checked that have no digest.
    pub no_digest: usize,
    /// The first [`NO_DIGEST_NAMES`] of them, as `"object"/"part"`.
    pub no_digest_names: Vec<String>,
    /// Parts in unavailable shards, not read.
    pub skipped: usize,
}

/// What a verification tells its caller as it goes.
pub trait Watch {
    /// `n` more bytes were read.
    fn read(&mut self, n: u64);
    /// An error was found; the verification goes on, so one bad part does
    /// not hide the next.
    fn failed(&mut self, e: &Error);
}

/// Verifies `model` as its format asks, skipping the parts of the shards
/// named in `unavailable`, telling `watch` of the bytes read (as many as
/// [`crate::model::Input::verify_bytes`] says) and of each error as it is
/// found. Fails with the first error, reported.
pub fn verify_model(model: &Model, unavailable: &[&str], watch: &mut dyn Watch) -> Result<Report> {
    let mut first_err = None;
    let mut fail = |e: Error, watch: &mut dyn Watch| {
        watch.failed(&e);
        first_err.get_or_insert(e);
    };
    let mut report = Report::default();
    if let Err(e) = model.verify_format_rules(&mut |n| {
        watch.read(n);
        Ok(())
    }) {
        fail(e, watch);
    }
    let objects = match model.manifest() {
        Some(m) if model.input().verifies_parts() => &m.objects[..],
        _ => &[],
    };
    for o in objects {
        let mut parts_ok = true;
        for p in &o.parts {
            if (p.blob.shard.as_deref()).is_some_and(|s| unavailable.contains(&s)) {
                report.skipped += 1;
                parts_ok = false;
                continue;
            }
            let mut tick = |n| {
                watch.read(n);
                Ok(())
            };
            match verify(model, o, p, &mut tick) {
                Ok(Verified::Digest) => report.verified += 1,
                Ok(Verified::NoDigest) => {
                    report.no_digest += 1;
                    if report.no_digest_names.len() < NO_DIGEST_NAMES {
                        (report.no_digest_names).push(format!("{:?}/{:?}", o.name, p.name));
                    }
                }
                Err(e) => {
                    parts_ok = false;
                    fail(e, watch);
                }
            }
        }
        // Layout data rules need every part of the object.
        if parts_ok {
            if let Err(e) = verify_object(model, o) {
                fail(e, watch);
            }
        }
    }
    if report.skipped > 0 {
        let e = Error::Unsupported(format!(
            "{} part(s) in unavailable shards ({}) cannot be verified",
            report.skipped,
            unavailable.join(", ")
        ));
        fail(e, watch);
    }
    match first_err {
        Some(e) => Err(Error::Reported(Box::new(e))),
        None => Ok(report),
    }
}
