//! `stats.json` in a tensor's directory: the numbers `ztfs stats --json`
//! gives for it ([`crate::stats`]), computed on the file's first read by a
//! job of its own pool (never on a FUSE worker; a pool apart from the
//! other jobs, whose views and verifications it may wait for), kept in the
//! tree's budgeted cache, and computed again if the cache let it go.
//!
//! Its size must be known before its numbers (a `stat` answers at once):
//! the JSON is one line padded with spaces to the longest any tensor's
//! can be ([`stats_json_len`]), which a JSON reader ignores.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::decode::views::DEQUANTIZED_VIEW;
use crate::stats::{self, Kind, Stats};
use crate::store::Reader;
use crate::tree::export::forms;
use crate::tree::jobs::{Cancel, Done, JobKey, Work};
use crate::tree::{FsError, Node, NpyDtypes, Tree};

pub use crate::report::meta::STATS_JSON;

/// Readers of the statistics jobs, apart from every mount's and the
/// library's (see `library.rs`: counted up from 2^62).
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(3 << 61);

/// The length of every stats.json: that of the numbers at their longest
/// (20 digits a count, 24 characters a float), and a newline.
pub fn stats_json_len() -> u64 {
    let longest = -2.225_073_858_507_201_4e-308_f64;
    let s = Stats {
        count: u64::MAX,
        nan: u64::MAX,
        posinf: u64::MAX,
        neginf: u64::MAX,
        zero: u64::MAX,
        min: Some(longest),
        max: Some(longest),
        mean: Some(longest),
        std: Some(longest),
        counts: Some(vec![u64::MAX; stats::DEFAULT_BINS]),
        bins: stats::DEFAULT_BINS,
    };
    s.to_json().to_string().len() as u64 + 1
}

/// `s` as stats.json: its JSON, spaces to [`stats_json_len`], a newline.
fn stats_text(s: &Stats) -> Vec<u8> {
    let mut text = s.to_json().to_string().into_bytes();
    let len = stats_json_len() as usize;
    text.resize(len.max(text.len() + 1) - 1, b' ');
    text.push(b'\n');
    text
}

impl Tree {
    /// Where object `i`'s values are when it has a stats.json, and how
    /// they are numbers: a tensor the tree serves row-major (its file, of
    /// a type with numbers whatever `--npy-dtypes` says of its `.npy`),
    /// or a quantized tensor's dequantized values (float32 unless
    /// `--dequantize` narrows them), as `data.npy` holds them.
    pub(in crate::tree) fn stats_source(&self, i: u32) -> Option<(Node, Kind, u64)> {
        let (node, elem, len) = match self.tensor_node(i) {
            Ok(t) => t,
            Err(_) => match self.view_of(i).filter(|_| self.has_view(i))? {
                (DEQUANTIZED_VIEW, len) => return Some((Node::View { object: i }, Kind::F32, len)),
                _ => return None,
            },
        };
        if forms::packed_f4(elem) {
            return None;
        }
        let o = self.object(i);
        let form = forms::npy(o, elem, forms::Shape::Tensor, len, NpyDtypes::Ml).ok()?;
        Some((node, Kind::of(form.descr)?, len))
    }

    /// Answers `done` once object `object`'s stats.json is in the cache,
    /// computing it on the statistics pool if it is not.
    pub(in crate::tree) fn when_stats_ready(self: &Arc<Self>, object: u32, tid: u32, done: Done) {
        if self.frames.stats(object).is_some() {
            return done(Ok(()));
        }
        let tree = self.clone();
        let work: Work = Arc::new(move |c: &Cancel| tree.compute_stats(object, c));
        (self.stats_jobs).submit(JobKey::Stats(object), tid, done, work);
    }

    /// Computes object `object`'s statistics into the cache, reading its
    /// tensor as the library does; stops when nobody waits any more.
    fn compute_stats(self: &Arc<Self>, object: u32, c: &Cancel) -> Result<(), FsError> {
        let (node, kind, len) = self.stats_source(object).ok_or(FsError::Io)?;
        let reader = Reader {
            pid: 0,
            handle: NEXT_HANDLE.fetch_add(1, Ordering::Relaxed),
            exact: false,
        };
        let read =
            |at: u64, buf: &mut [u8]| self.read_node_into(object, node, len, at, buf, reader);
        let stop = AtomicBool::new(false);
        let job = stats::Job {
            len,
            kind,
            read: &read,
            bins: stats::DEFAULT_BINS,
            threads: crate::sys::cores(),
            keep: stats::keep_if_remote(self.model.is_remote(), self.frames.budget() / 4),
            progress: &|_| {},
            stop: Some(&stop),
            // A tensor file in a map: read there (the view of a quantized
            // tensor is computed, and has none).
            bytes: match node {
                Node::Part { .. } => self.tensor_bytes(object),
                _ => None,
            },
        };
        // Computed on threads of its own while this one asks whether
        // anyone still waits: a reader that gave up stops the job.
        let computed = std::thread::scope(|s| {
            let h = s.spawn(|| stats::compute(&job));
            while !h.is_finished() {
                if c.check() {
                    stop.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            h.join().unwrap_or_else(|_| {
                Err(crate::error::Error::Usage("a statistics job failed".into()))
            })
        });
        match computed {
            Ok(s) => {
                self.frames.insert_stats(object, Arc::new(stats_text(&s)));
                Ok(())
            }
            Err(crate::error::Error::Interrupted) => Err(FsError::Interrupted),
            Err(e) => {
                log::error!("{:?}/{STATS_JSON}: {e}", self.object(object).name);
                Err(FsError::Io)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{Ino, Options, ROOT};

    /// A safetensors file of float32 tensors `a` and `b`, 100 values each.
    fn two_tensors(dir: &std::path::Path) -> std::path::PathBuf {
        let header = br#"{"a":{"dtype":"F32","shape":[100],"data_offsets":[0,400]},"b":{"dtype":"F32","shape":[100],"data_offsets":[400,800]}}"#;
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header);
        for i in 0..200u32 {
            bytes.extend_from_slice(&(i as f32 * 0.5 - 7.0).to_le_bytes());
        }
        let path = dir.join("two.safetensors");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// The tree of [`two_tensors`] in `dir`, with a cache that holds one
    /// entry (a stats.json lets the one before go).
    fn one_entry_tree(dir: &std::path::Path) -> Arc<Tree> {
        let model = crate::model::Model::open(&two_tensors(dir)).unwrap();
        let opts = Options {
            cache_bytes: 0,
            ..Options::default()
        };
        Arc::new(Tree::build(model, opts).unwrap())
    }

    /// Tensor `name`'s stats.json, opened.
    fn stats_json(tree: &Arc<Tree>, name: &str) -> Ino {
        let dir = tree.lookup(ROOT, name.as_bytes()).unwrap().ino;
        let ino = tree.lookup(dir, STATS_JSON.as_bytes()).unwrap().ino;
        tree.open_wait(ino).unwrap();
        ino
    }

    /// A stats.json the cache let go (a budget that holds one entry: `b`'s
    /// evicts `a`'s) is computed again on its next read, to the same bytes.
    #[test]
    fn a_dropped_stats_json_is_computed_again() {
        let dir = tempfile::tempdir().unwrap();
        let tree = one_entry_tree(dir.path());
        let stats_of = |name: &str| tree.read_wait(stats_json(&tree, name), 0, 1 << 16).unwrap();
        let a = (0..2).find(|&i| &*tree.object(i).name == "a").unwrap();
        let first = stats_of("a");
        assert!(tree.frames.stats(a).is_some());
        let v: serde_json::Value = serde_json::from_slice(&first).unwrap();
        assert_eq!(
            (v["count"].as_u64(), v["min"].as_f64()),
            (Some(100), Some(-7.0))
        );
        stats_of("b");
        assert!(tree.frames.stats(a).is_none(), "b's stats.json let a's go");
        assert_eq!(stats_of("a"), first, "computed again, the same");
        assert!(tree.frames.stats(a).is_some());
    }

    /// Two readers, each of its own tensor's stats.json, with a cache that
    /// holds one entry: each read lets the other's go, at any moment. Every
    /// read answers the whole text (one taken from the cache and gone
    /// before it was read answered EIO).
    #[test]
    fn stats_json_read_while_the_cache_lets_it_go_is_never_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let tree = one_entry_tree(dir.path());
        let (a, b) = (stats_json(&tree, "a"), stats_json(&tree, "b"));
        let want = [
            tree.read_wait(a, 0, 1 << 16).unwrap(),
            tree.read_wait(b, 0, 1 << 16).unwrap(),
        ];
        std::thread::scope(|s| {
            for (ino, want) in [a, b].into_iter().zip(&want) {
                let tree = &tree;
                s.spawn(move || {
                    for i in 0..200_000 {
                        let got = tree.read_wait(ino, 0, 1 << 16);
                        assert!(got.as_ref() == Ok(want), "read {i}: {:?}", got.err());
                    }
                });
            }
        });
    }

    #[test]
    fn every_stats_json_has_the_one_length() {
        let small = Stats {
            count: 1,
            nan: 0,
            posinf: 0,
            neginf: 0,
            zero: 0,
            min: Some(1.0),
            max: Some(1.0),
            mean: Some(1.0),
            std: Some(0.0),
            counts: None,
            bins: 64,
        };
        let text = stats_text(&small);
        assert_eq!(text.len() as u64, stats_json_len());
        let v: serde_json::Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(v["min"], 1.0);
        let worst = -f64::MIN_POSITIVE;
        assert_eq!(serde_json::json!(worst).to_string().len(), 24);
    }
}
