//! What ztfs says about a model, in words and in JSON: summaries, listings,
//! refusal notes, `check`'s lines (`check`), `manifest.json`, each
//! object's `meta.json` (`meta`), and progress on a terminal. Rendering
//! only: the model answers facts and never calls up here; `ztfs manifest`
//! and a mount write `manifest.json` through the one
//! [`write_manifest_json`], so they serve the same bytes.

pub mod check;
pub mod meta;

use std::io::Write;
use std::time::{Duration, Instant};

use crate::decode::check_interpretable;
use crate::error::Result;
use crate::format::cbor::{self, Value};
use crate::format::json::{self, Sink};
use crate::format::{gguf, hurray, npz, onnx, openvino, pytorch, safetensors, Manifest, Object};
use crate::model::{Input, Model};

/// The length of what `write` writes, counted, not kept.
pub fn text_len(write: impl FnOnce(&mut dyn Sink) -> Result<()>) -> Result<u64> {
    let mut count = json::Count::default();
    write(&mut count)?;
    Ok(count.0)
}

/// One line about a model: counts and total decoded size.
pub fn summary(m: &Manifest) -> String {
    let parts: usize = m.objects.iter().map(|o| o.parts.len()).sum();
    let bytes = total(
        m.objects
            .iter()
            .flat_map(|o| &o.parts)
            .map(|p| p.decoded_size()),
    );
    let shards =
        (m.shards.as_ref()).map_or(String::new(), |s| format!(", {}", count(s.len(), "shard")));
    format!(
        "{}, {}, {}{shards}",
        count(m.objects.len(), "object"),
        count(parts, "part"),
        human(bytes)
    )
}

/// `n` and `noun`, plural unless `n` is 1 (`1 object`, `2 objects`).
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// One line about an opened model (see [`check::summary`]).
pub fn summary_of(model: &Model, m: &Manifest) -> String {
    check::summary(model.input(), m)
}

/// Notes on every part this reader will refuse to decode, grouped so that a
/// model of many such parts gives a few lines, not thousands.
pub fn refusals(m: &Manifest) -> Vec<String> {
    let mut notes = Vec::new();
    for o in &m.objects {
        for p in &o.parts {
            let why = match check_interpretable(o, p) {
                Err(e) => e.to_string(),
                Ok(()) => match p.encoding.as_deref() {
                    Some(crate::decode::zstd_seekable::ID) | None => continue,
                    Some(enc) => format!(
                        "part {:?}/{:?} uses encoding {enc:?}, which this reader does not know",
                        o.name, p.name
                    ),
                },
            };
            notes.push(why);
            break; // one note per object is enough
        }
    }
    if notes.len() > 20 {
        let more = notes.len() - 20;
        notes.truncate(20);
        notes.push(format!(
            "... and {more} more objects whose parts will be refused for decoding"
        ));
    }
    notes
}

/// A name as a single printable line, quoted and escaped where it would
/// not read back as itself: control characters, an empty name, a space
/// at either end.
pub fn display_name(name: &str) -> String {
    if name.is_empty() || name.trim() != name || name.chars().any(char::is_control) {
        format!("{name:?}")
    } else {
        name.to_string()
    }
}

/// The first `n` items joined, with a count of the rest.
pub fn list_some(items: &[String], n: usize) -> String {
    let mut s = items.iter().take(n).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > n {
        s.push_str(&format!(", and {} more", items.len() - n));
    }
    s
}

/// A sum of sizes from the file, saturating: declared sizes of many parts
/// can add up past u64 (the shapes and blobs themselves are validated).
pub fn total(sizes: impl Iterator<Item = u64>) -> u64 {
    sizes.fold(0u64, u64::saturating_add)
}

/// Bytes in a human unit.
pub fn human(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The long listing: one line per object, then attributes and shards.
pub fn ls_long(model: &Model) -> Result<String> {
    let Some(m) = model.manifest() else {
        return Ok(String::new());
    };
    let mut s = String::new();
    for (i, o) in m.objects.iter().enumerate() {
        // A packed folder's files are listed as files (`ztfs ls`).
        if crate::format::profiles::is_file(o) {
            continue;
        }
        let size = object_size(model, i, o);
        let shape = format!("{:?}", o.shape);
        let enc = if o.parts.iter().any(|p| p.encoding.is_some()) {
            " (encoded)"
        } else {
            ""
        };
        let shard = where_label(model.input(), o);
        s.push_str(&format!(
            "{:<8} {:<10} {:<20} {:>12}  {}{enc}{shard}\n",
            o.layout,
            type_label(model.input(), i, o),
            shape,
            size,
            display_name(&o.name)
        ));
    }
    if let Some(a) = &m.attributes {
        let mut j = String::new();
        json::to_json(&cbor::parse(a)?, &mut j);
        s.push_str(&format!("attributes: {j}\n"));
    }
    for sh in m.shards.iter().flatten() {
        s.push_str(&format!(
            "shard {}: {} bytes, {}\n",
            sh.name, sh.size, sh.digest
        ));
    }
    Ok(s)
}

/// Object `i`'s type for a listing: its format's element type name
/// (Hurray, GGUF; torch's dtype name for PyTorch), else its parts' types.
fn type_label(input: &Input, i: usize, o: &Object) -> String {
    match input {
        Input::Hurray(f) => f.tensors[i].descriptor.elem.name().to_string(),
        Input::Gguf(f) => f.tensors[i].ty.name.to_string(),
        Input::Torch(f) => match &f.tensors[i].quant {
            // torch's name of the quantized dtype.
            Some(q) => q.ty.torch_name().to_string(),
            None => {
                let (dtype, logical) = safetensors::objects::ztensor_type(f.tensors[i].dtype);
                logical.unwrap_or(dtype.name()).to_string()
            }
        },
        Input::Onnx(f) => {
            let t = &f.model.tensors[f.tensor[i]];
            onnx::objects::type_name(t.data_type).to_string()
        }
        Input::OpenVino(f) => f.model.consts[f.consts[i]].element_type.clone(),
        Input::Zt(_) | Input::Safetensors(_) | Input::Npz(_) => {
            let mut types: Vec<&str> = o.parts.iter().map(|p| p.ty.type_name()).collect();
            types.dedup();
            types.join(",")
        }
    }
}

/// Where object `o`'s bytes are, for `ls -l`: the shard holding them
/// (` [shard NAME]`), ` (deflated)` for a deflated `.npz` array (its
/// parts name the archive's file of inflated members as their shard),
/// ` (typed)` for an ONNX tensor in a typed field, ` [file NAME]` for
/// one in an external file, or nothing when they are in the file itself.
fn where_label(input: &Input, o: &Object) -> String {
    match o.parts.iter().find_map(|p| p.blob.shard.as_deref()) {
        // Every constant of an IR is in its one .bin.
        None | Some(_) if matches!(input, Input::OpenVino(_)) => String::new(),
        None => String::new(),
        Some(npz::INFLATED) if matches!(input, Input::Npz(_)) => " (deflated)".to_string(),
        Some(onnx::objects::CONVERTED) if matches!(input, Input::Onnx(_)) => " (typed)".into(),
        Some(s) if matches!(input, Input::Onnx(_)) => format!(" [file {s}]"),
        Some(s) => format!(" [shard {s}]"),
    }
}

/// Writes `manifest.json` (and `ztfs manifest`): pretty JSON with a
/// final newline, from the format's own document; a data shard's is
/// `null`. A zTensor manifest and a safetensors header are read from
/// the file now (a mount keeps neither).
pub fn write_manifest_json(model: &Model, out: &mut dyn Sink) -> Result<()> {
    match model.input() {
        Input::Zt(_) => {
            let bytes = model.read_manifest_bytes()?;
            crate::format::manifest_json::write(bytes.as_deref(), out)
        }
        Input::Hurray(file) => {
            hurray::json::write_manifest(file, out);
            Ok(())
        }
        Input::Gguf(file) => {
            gguf::json::write_manifest(file, out);
            Ok(())
        }
        Input::Torch(file) => {
            pytorch::json::write_manifest(file, out);
            Ok(())
        }
        Input::Npz(file) => {
            npz::write_manifest(file, out);
            Ok(())
        }
        Input::Onnx(file) => {
            onnx::json::write_manifest(file, out);
            Ok(())
        }
        Input::OpenVino(file) => {
            let names: Vec<&str> = (model.manifest().iter())
                .flat_map(|m| &m.objects)
                .map(|o| &*o.name)
                .collect();
            openvino::json::write_manifest(file, &names, out);
            Ok(())
        }
        Input::Safetensors(st) => {
            let header = model.read_safetensors_header()?.unwrap_or_default();
            match st.index_files {
                Some(_) => safetensors::index::write_manifest(&header, out),
                None => safetensors::write_manifest(&header, out),
            }
        }
    }
}

/// An object's size for listings: its parts' decoded bytes; for a Hurray
/// tensor, its buffers' bytes (its `data` part repeats buffer 0).
fn object_size(model: &Model, i: usize, o: &Object) -> u64 {
    model.input().object_size(i, o)
}

/// Whether a part's stored bytes can be reached: false for a part in a
/// shard that cannot be resolved.
pub fn part_available(model: &Model, p: &crate::format::Part) -> bool {
    p.blob
        .shard
        .as_deref()
        .is_none_or(|s| model.shard_usable(s))
}

/// Text, or null when absent.
pub fn opt_text(v: Option<&str>) -> Value<'_> {
    v.map_or(Value::Null, Value::Text)
}

/// Everything about the objects as one JSON document.
pub fn ls_json(model: &Model, with_files: bool) -> Result<String> {
    let Some(m) = model.manifest() else {
        return Ok(String::new());
    };
    let attrs: Vec<Option<Value<'_>>> = m
        .objects
        .iter()
        .map(|o| o.attributes().map(cbor::parse).transpose())
        .collect::<Result<_>>()?;
    let file_attrs = m.attributes.as_deref().map(cbor::parse).transpose()?;
    // The document borrows its texts; a digest's is made here.
    let digests: Vec<Vec<Option<String>>> = m
        .objects
        .iter()
        .map(|o| {
            (o.parts.iter())
                .map(|p| p.digest.as_ref().map(ToString::to_string))
                .collect()
        })
        .collect();
    let text = |s: &'static str| Value::Text(s);
    let opt = opt_text;
    let objects = m
        .objects
        .iter()
        .zip(attrs)
        .zip(&digests)
        .enumerate()
        .map(|(i, ((o, a), digests))| {
            let parts = o
                .parts
                .iter()
                .zip(digests)
                .map(|(p, digest)| {
                    let mut e = vec![
                        (text("name"), Value::Text(&p.name)),
                        (text("dtype"), Value::Text(p.ty.dtype.name())),
                    ];

                    e.push((text("type"), opt(p.ty.logical.as_deref())));
                    e.push((text("encoding"), opt(p.encoding.as_deref())));
                    e.push((text("offset"), Value::Uint(p.blob.offset)));
                    e.push((text("stored_length"), Value::Uint(p.blob.length)));
                    e.push((text("decoded_length"), Value::Uint(p.decoded_size())));
                    e.push((text("shard"), opt(p.blob.shard.as_deref())));
                    e.push((text("digest"), opt(digest.as_deref())));
                    e.push((text("available"), Value::Bool(part_available(model, p))));
                    Value::Map(e)
                })
                .collect();
            let size = object_size(model, i, o);
            Value::Map(vec![
                (text("name"), Value::Text(&o.name)),
                (text("layout"), Value::Text(&o.layout)),
                (
                    text("shape"),
                    Value::Array(o.shape.iter().map(|&d| Value::Uint(d)).collect()),
                ),
                (text("size"), Value::Uint(size)),
                (text("attributes"), a.unwrap_or(Value::Null)),
                (text("parts"), Value::Array(parts)),
            ])
        })
        .collect();
    let shards = m.shards.as_ref().map_or(Value::Null, |s| {
        Value::Array(
            s.iter()
                .map(|sh| {
                    Value::Map(vec![
                        (text("name"), Value::Text(&sh.name)),
                        (text("size"), Value::Uint(sh.size)),
                        (text("digest"), Value::Text(&sh.digest)),
                    ])
                })
                .collect(),
        )
    });
    let folder = if with_files { model.folder()? } else { None };
    let files = folder.map_or(Value::Null, |f| {
        let entries = f.files.iter().map(|x| {
            Value::Map(vec![
                (text("path"), Value::Text(&x.path)),
                (text("size"), Value::Uint(x.len)),
            ])
        });
        Value::Array(entries.collect())
    });
    let doc = Value::Map(vec![
        (text("objects"), Value::Array(objects)),
        (text("attributes"), file_attrs.unwrap_or(Value::Null)),
        (text("shards"), shards),
        (text("files"), files),
    ]);
    let mut s = String::new();
    json::to_json(&doc, &mut s);
    Ok(s)
}

/// Whether progress lines are shown: on a terminal (the default), always
/// (`--progress`), or never (`--quiet`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    Terminal,
    Always,
    Never,
}

static PROGRESS_MODE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Sets this process's [`ProgressMode`] (from `--progress`, `--quiet`).
pub fn set_progress_mode(mode: ProgressMode) {
    let m = match mode {
        ProgressMode::Terminal => 0,
        ProgressMode::Always => 1,
        ProgressMode::Never => 2,
    };
    PROGRESS_MODE.store(m, std::sync::atomic::Ordering::Relaxed);
}

/// How long work runs before its progress line shows (`ZTFS_PROGRESS_AFTER_MS`
/// sets it, for the tests).
fn progress_after() -> Duration {
    let ms = std::env::var("ZTFS_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|v| v.parse().ok());
    Duration::from_millis(ms.unwrap_or(2000))
}

/// Progress of long work, one line redrawn on stderr once it has run 2
/// seconds, whatever its size: `packing: 1.2 GiB of 4.0 GiB (30%), 450
/// MiB/s, 6 s left`. On a terminal only, unless `--progress` or `--quiet`
/// says otherwise.
pub struct Progress {
    verb: &'static str,
    total: u64,
    done: u64,
    shown: bool,
    on: bool,
    started: Instant,
    after: Duration,
    last: Instant,
}

impl Progress {
    /// Progress of verifying `total` bytes; `terminal` when stderr is one.
    pub fn new(total: u64, terminal: bool) -> Progress {
        Progress::doing("verifying", total, terminal)
    }

    /// [`Progress::new`] of work named `verb` (`packing`).
    pub fn doing(verb: &'static str, total: u64, terminal: bool) -> Progress {
        let on = match PROGRESS_MODE.load(std::sync::atomic::Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => terminal,
        };
        let now = Instant::now();
        Progress {
            verb,
            total,
            done: 0,
            shown: false,
            on: on && total > 0,
            started: now,
            after: progress_after(),
            last: now,
        }
    }

    /// Counts `n` more bytes.
    pub fn add(&mut self, n: u64) {
        self.done = self.done.saturating_add(n);
        if self.on && (!self.shown || self.last.elapsed() > Duration::from_millis(200)) {
            self.last = Instant::now();
            self.show();
        }
    }

    fn show(&mut self) {
        let elapsed = self.started.elapsed();
        if !self.on || elapsed < self.after {
            return;
        }
        self.shown = true;
        let pct = self.done as f64 * 100.0 / self.total.max(1) as f64;
        let rate = self.done as f64 / elapsed.as_secs_f64().max(1e-3);
        let left = match rate > 0.0 {
            true => format!(
                ", {} left",
                seconds(self.total.saturating_sub(self.done) as f64 / rate)
            ),
            false => String::new(),
        };
        eprint!(
            "\r{}: {} of {} ({pct:.0}%), {}/s{left}   ",
            self.verb,
            human(self.done),
            human(self.total),
            human(rate as u64)
        );
        let _ = std::io::stderr().flush();
    }

    /// Erases the progress line.
    pub fn clear(&mut self) {
        if self.shown {
            eprint!("\r{:80}\r", "");
            self.shown = false;
        }
    }
}

/// A duration in words: `6 s`, `3 min`, `2 h 5 min`.
fn seconds(s: f64) -> String {
    let s = s.round() as u64;
    match s {
        s if s < 100 => format!("{s} s"),
        s if s < 6000 => format!("{} min", s.div_ceil(60)),
        s => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_would_not_read_back_is_quoted() {
        assert_eq!(display_name("lm_head.weight"), "lm_head.weight");
        assert_eq!(display_name("a b"), "a b");
        assert_eq!(display_name(""), r#""""#);
        assert_eq!(display_name(" a"), r#"" a""#);
        assert_eq!(display_name("a\n"), r#""a\n""#);
    }

    /// Every corpus file's manifest, valid or not: the streamed length is
    /// the length of the text, or both fail.
    /// The text as the renderer writes it from the whole tree: what the
    /// writers that walk a manifest or header piece by piece must match.
    fn rendered_whole(model: &Model) -> Option<String> {
        let mut s = String::new();
        match model.input() {
            Input::Safetensors(_) => {
                let header = model.read_safetensors_header().unwrap().unwrap();
                let json = crate::format::safetensors::json::Json::parse(&header).unwrap();
                json::to_json_pretty(&json.to_value(), &mut s);
            }
            Input::Hurray(_)
            | Input::Gguf(_)
            | Input::Torch(_)
            | Input::Npz(_)
            | Input::Onnx(_)
            | Input::OpenVino(_) => return None,
            Input::Zt(_) if model.manifest().is_none() => s.push_str("null"),
            Input::Zt(_) => {
                json::to_json_pretty(&cbor::parse(&model.manifest_bytes()).unwrap(), &mut s)
            }
        }
        s.push('\n');
        Some(s)
    }

    #[test]
    fn manifest_json_written_in_pieces_is_the_text_rendered_whole() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
        let mut dirs = vec![root];
        let mut checked = 0;
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                    continue;
                }
                let Ok(model) = Model::open(&p) else {
                    continue;
                };
                let mut text = String::new();
                write_manifest_json(&model, &mut text).unwrap();
                let len = text_len(|out| write_manifest_json(&model, out)).unwrap();
                assert_eq!(len, text.len() as u64, "{}", p.display());
                if let Some(want) = rendered_whole(&model) {
                    assert_eq!(text, want, "{}", p.display());
                    checked += 1;
                }
            }
        }
        assert!(checked >= 50, "corpus too small: {checked}");
    }
}

/// Up to three of `names` near `wanted`, nearest first: within an edit
/// distance of a quarter of its length (at least 2), or containing it, or
/// equal to it ignoring case. For "did you mean" after an unknown name;
/// linear in the names, each compared within a band, so a million names
/// take a moment.
pub fn near_names<'a>(wanted: &str, names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let w: Vec<char> = wanted.chars().collect();
    let max = (w.len() / 4).max(2);
    let lower = wanted.to_lowercase();
    let mut near: Vec<(usize, &str)> = names
        .filter_map(|n| {
            if n.to_lowercase() == lower {
                return Some((0, n));
            }
            if let Some(d) = edit_distance_within(&w, n, max) {
                return Some((d, n));
            }
            (w.len() >= 3 && n.contains(wanted)).then_some((max + 1, n))
        })
        .collect();
    near.sort();
    near.into_iter().take(3).map(|(_, n)| n).collect()
}

/// The edit distance between `a` and `b` if it is at most `max`.
fn edit_distance_within(a: &[char], b: &str, max: usize) -> Option<usize> {
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        if cur.iter().min().is_some_and(|&m| m > max) {
            return None;
        }
        prev = cur;
    }
    let d = prev[b.len()];
    (d <= max).then_some(d)
}

#[cfg(test)]
mod near_tests {
    use super::near_names;

    #[test]
    fn suggests_typos_case_and_containing_names() {
        let names = [
            "lm_head.weight",
            "model.norm.weight",
            "model.embed_tokens.weight",
            "x",
        ];
        let near = |w: &str| near_names(w, names.iter().copied());
        assert_eq!(near("lm_haed.weight"), ["lm_head.weight"]);
        assert_eq!(near("LM_HEAD.WEIGHT"), ["lm_head.weight"]);
        assert_eq!(near("embed_tokens"), ["model.embed_tokens.weight"]);
        assert!(near("something.else.entirely").is_empty());
    }
}
