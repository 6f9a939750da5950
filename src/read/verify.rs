//! `--verify`: the one driver `ztfs check --verify` (the whole model) and
//! a mount's `--verify` (an object, on the first open of one of its files)
//! both run. What a format asks beyond structure comes from the model's
//! input: its rules on tensor bytes (a Hurray file's MXFP scales), whether
//! its parts are read and checked (zTensor and safetensors: content rules,
//! decoded length, digest; then each object's layout data rules), and the
//! bytes that reading takes, for a progress bar.

use crate::error::{Error, Result};
use crate::format::Part;
use crate::model::Model;

use super::{verify, verify_object_with, Verified};

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
    /// `n` more bytes were read. An error (the work abandoned) stops the
    /// verification and is returned as it is.
    fn read(&mut self, n: u64) -> Result<()>;
    /// An error was found at `at`; the verification goes on, so one bad
    /// part does not hide the next.
    fn failed(&mut self, at: Place, e: &Error);
}

/// Where a verification found an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The model as a whole (parts that could not be read).
    Model,
    /// Object `i`'s own rules (the format's on its bytes, its layout's).
    Object(usize),
    /// Part `p` of object `i`, as `(i, p)`.
    Part(usize, usize),
}

/// How one part's verification ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartOutcome {
    /// Checked and sound ([`Verified`] says whether a digest was matched).
    Sound(Verified),
    /// Not read: its shard is unavailable.
    Skipped,
    /// Broken (the error was told to the [`Watch`]).
    Broken,
    /// Not read on its own: the format checks its bytes by its own rules
    /// ([`crate::model::Input::verifies_parts`] is false).
    ByFormat,
}

/// What verifying one object established.
#[derive(Debug)]
pub struct Verdict {
    /// Each part's outcome, in the object's order.
    pub parts: Vec<PartOutcome>,
    /// The object's own rules held: the format's rules on its bytes, and
    /// its layout's data rules (false when a part they need was broken or
    /// skipped, so they could not be checked).
    pub object_sound: bool,
    /// The first error found (every error was told to the [`Watch`]).
    pub error: Option<Error>,
}

impl Verdict {
    /// True when part `p` may be served as verified: its own check passed
    /// and so did the object's rules. A sound part of an object whose
    /// other part is broken stands when the object has no rules over all
    /// its parts together.
    pub fn serves(&self, p: usize) -> bool {
        let part = matches!(
            self.parts.get(p),
            Some(PartOutcome::Sound(_) | PartOutcome::ByFormat)
        );
        part && self.object_sound
    }
}

/// Verifies object `i` of `model` as its format asks: the format's rules
/// on its bytes, each part (but those `skip` names: their shard is
/// unavailable), then its layout's data rules once every part passed.
/// Each error is told to `watch` as it is found and the first is kept in
/// the verdict; only an error of `watch` itself (the work abandoned) is
/// returned.
pub fn verify_object_all(
    model: &Model,
    i: usize,
    skip: &dyn Fn(&Part) -> bool,
    watch: &mut dyn Watch,
) -> Result<Verdict> {
    let Some(o) = model.manifest().and_then(|m| m.objects.get(i)) else {
        return Err(Error::NotFound(format!("object {i}")));
    };
    let mut verdict = Verdict {
        parts: vec![PartOutcome::ByFormat; o.parts.len()],
        object_sound: true,
        error: None,
    };
    let fail = |verdict: &mut Verdict, at: Place, e: Error, watch: &mut dyn Watch| {
        watch.failed(at, &e);
        verdict.error.get_or_insert(e);
    };
    match super::verify_object_format_rules(model, i, &mut |n| watch.read(n)) {
        Err(Error::Interrupted) => return Err(Error::Interrupted),
        Err(e) => {
            verdict.object_sound = false;
            fail(&mut verdict, Place::Object(i), e, watch);
        }
        Ok(()) => {}
    }
    if !model.input().verifies_parts() {
        return Ok(verdict);
    }
    for (k, p) in o.parts.iter().enumerate() {
        if skip(p) {
            verdict.parts[k] = PartOutcome::Skipped;
            continue;
        }
        verdict.parts[k] = match verify(model, o, p, &mut |n| watch.read(n)) {
            Ok(v) => PartOutcome::Sound(v),
            Err(Error::Interrupted) => return Err(Error::Interrupted),
            Err(e) => {
                fail(&mut verdict, Place::Part(i, k), e, watch);
                PartOutcome::Broken
            }
        };
    }
    if super::has_data_rules(o) {
        let parts_sound = (verdict.parts.iter()).all(|p| matches!(p, PartOutcome::Sound(_)));
        if !parts_sound {
            // The data rules need every part of the object.
            verdict.object_sound = false;
        } else {
            // Bytes decoded again, not counted in the progress, which
            // counts each part once; a watch may still abandon the work.
            let w = std::cell::RefCell::new(&mut *watch);
            let r = verify_object_with(model, o, &|_| w.borrow_mut().read(0));
            match r {
                Err(Error::Interrupted) => return Err(Error::Interrupted),
                Err(e) => {
                    verdict.object_sound = false;
                    fail(&mut verdict, Place::Object(i), e, watch);
                }
                Ok(()) => {}
            }
        }
    }
    Ok(verdict)
}

/// Verifies `model` as its format asks, object by object
/// ([`verify_object_all`]), skipping the parts of the shards named in
/// `unavailable`, telling `watch` of the bytes read (as many as
/// [`crate::model::Input::verify_bytes`] says) and of each error as it is
/// found. Fails with the first error, reported.
pub fn verify_model(model: &Model, unavailable: &[&str], watch: &mut dyn Watch) -> Result<Report> {
    let mut first_err = None;
    let mut report = Report::default();
    let skip = |p: &Part| (p.blob.shard.as_deref()).is_some_and(|s| unavailable.contains(&s));
    let objects = model.manifest().map_or(&[][..], |m| &m.objects[..]);
    for (i, o) in objects.iter().enumerate() {
        let verdict = verify_object_all(model, i, &skip, watch)?;
        for (p, outcome) in o.parts.iter().zip(&verdict.parts) {
            match outcome {
                PartOutcome::Sound(Verified::Digest) => report.verified += 1,
                PartOutcome::Sound(Verified::NoDigest) => {
                    report.no_digest += 1;
                    if report.no_digest_names.len() < NO_DIGEST_NAMES {
                        (report.no_digest_names).push(format!("{:?}/{:?}", o.name, p.name));
                    }
                }
                PartOutcome::Skipped => report.skipped += 1,
                PartOutcome::Broken | PartOutcome::ByFormat => {}
            }
        }
        if let Some(e) = verdict.error {
            first_err.get_or_insert(e);
        }
    }
    if report.skipped > 0 {
        let e = Error::Unsupported(format!(
            "{} part(s) in unavailable shards ({}) cannot be verified",
            report.skipped,
            unavailable.join(", ")
        ));
        watch.failed(Place::Model, &e);
        first_err.get_or_insert(e);
    }
    match first_err {
        Some(e) => Err(Error::Reported(Box::new(e))),
        None => Ok(report),
    }
}
