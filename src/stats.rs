//! Value statistics of a tensor, computed from its values by range: the
//! counts of NaNs, infinities and zeros, the range, mean and population
//! standard deviation of the finite values (in f64), and a histogram of
//! them equal to `numpy.histogram(values.astype(np.float64), bins=N,
//! range=(min, max))`'s. What `ztfs stats` prints and a mount's
//! `stats.json` holds.
//!
//! A tensor is read in pieces of [`PIECE`] bytes by a caller's reader (the
//! tree's, or the library's), twice (the histogram needs the range) or,
//! when it fits the memory the caller allows, once and kept; the pieces
//! are shared out among threads and their results merged in order, so
//! the numbers do not depend on the threads.

pub mod accum;
pub mod values;
pub mod wide;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};
use accum::{Bins, First, Second};
pub use values::Kind;

/// Bytes read at a time (a multiple of every element's width).
pub const PIECE: u64 = 1 << 20;
/// Bins of a histogram unless asked otherwise.
pub const DEFAULT_BINS: usize = 64;
/// Most bins a histogram may have.
pub const MAX_BINS: usize = 1 << 20;

/// The statistics of one tensor's values.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Numbers (a complex element is two).
    pub count: u64,
    pub nan: u64,
    pub posinf: u64,
    pub neginf: u64,
    pub zero: u64,
    /// Of the finite values; `None` when there is none.
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    /// The histogram's bins over `[min, max]`, their counts; `None` where
    /// numpy has no histogram (the range too narrow for as many bins, or
    /// too wide for a float64: see [`accum::Bins`]).
    pub counts: Option<Vec<u64>>,
    /// The bins asked for.
    pub bins: usize,
}

impl Stats {
    /// As `ztfs stats --json` gives it for one tensor. A mean or std
    /// past float64 (values near its ends, squared) is the string `"inf"`,
    /// as numpy's is inf: JSON has no infinity.
    pub fn to_json(&self) -> serde_json::Value {
        let number = |x: Option<f64>| match x {
            None => serde_json::Value::Null,
            Some(x) if x.is_finite() => serde_json::json!(x),
            Some(x) if x.is_nan() => serde_json::json!("nan"),
            Some(x) if x > 0.0 => serde_json::json!("inf"),
            Some(_) => serde_json::json!("-inf"),
        };
        let range = match (self.min, self.max) {
            (Some(a), Some(b)) => serde_json::json!([a, b]),
            _ => serde_json::Value::Null,
        };
        serde_json::json!({
            "count": self.count,
            "nan": self.nan,
            "posinf": self.posinf,
            "neginf": self.neginf,
            "zero": self.zero,
            "min": self.min,
            "max": self.max,
            "mean": number(self.mean),
            "std": number(self.std),
            "hist": {"bins": self.bins, "range": range, "counts": self.counts},
        })
    }
}

/// A number in at most about ten characters, for people: six decimals
/// in [1e-3, 1e6), else four significant decimals and an exponent.
pub fn short_number(x: f64) -> String {
    let a = x.abs();
    match a == 0.0 || (1e-3..1e6).contains(&a) {
        true => {
            let s = format!("{x:.6}");
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        }
        false => format!("{x:.4e}"),
    }
}

/// One tensor to compute: its bytes (row-major numbers of `kind`), read
/// by `read(offset, buf)`.
pub struct Job<'a> {
    pub len: u64,
    pub kind: Kind,
    pub read: &'a (dyn Fn(u64, &mut [u8]) -> Result<()> + Sync),
    pub bins: usize,
    /// Threads to share the pieces among.
    pub threads: usize,
    /// A tensor of at most this many bytes is read once and kept for the
    /// second pass; a larger one is read twice.
    pub keep: u64,
    /// Told of each piece's bytes as a pass reads them.
    pub progress: &'a (dyn Fn(u64) + Sync),
    /// Set to stop the job (it then fails with [`Error::Interrupted`]).
    pub stop: Option<&'a AtomicBool>,
    /// The tensor's bytes where the caller has them at hand (a local
    /// file's map): read from there, neither copied nor read by `read`.
    /// The caller's threads read a map under `sys::map_read`'s guard, as
    /// the job's own do.
    pub bytes: Option<&'a [u8]>,
}

/// [`Job::keep`] for a model at `path` and a budget of `cache_mib`:
/// [`keep_if_remote`] of half the budget.
pub fn keep(path: &std::path::Path, cache_mib: u64) -> u64 {
    let remote = crate::store::remote::url_of(path).is_some();
    keep_if_remote(remote, cache_mib.saturating_mul(1 << 20) / 2)
}

/// [`Job::keep`]: a remote tensor of up to `most` bytes is kept for the
/// second pass rather than fetched again; a local one is read again,
/// which costs less than faulting in and filling as large a buffer (a
/// quantized tensor is dequantized twice: Q4_K [4096, 8192], 0.05 s
/// against 0.09 s kept, on 2 cores). The rule of `ztfs stats`, `ztfs
/// view` and a mount's stats.json alike.
pub fn keep_if_remote(remote: bool, most: u64) -> u64 {
    match remote {
        true => most,
        false => 0,
    }
}

/// The statistics of `job`'s tensor.
pub fn compute(job: &Job) -> Result<Stats> {
    if job.bins == 0 || job.bins > MAX_BINS {
        return Err(Error::Usage(format!(
            "{} bins: a histogram has 1 to {MAX_BINS}",
            job.bins
        )));
    }
    let width = job.kind.width() as u64;
    let len = job.len - job.len % width;
    let pieces = len.div_ceil(PIECE);
    let piece = |i: u64| i * PIECE..((i + 1) * PIECE).min(len);
    let kept: Option<std::borrow::Cow<[u8]>> = match job.bytes {
        Some(b) => Some(b.get(..len as usize).unwrap_or(b).into()),
        None if len <= job.keep => Some(read_all(job, len)?.into()),
        None => None,
    };
    let at_hand = job.bytes.is_some();
    // Each pass: a piece's bytes, from memory or read now.
    let with_piece =
        |i: u64, second: bool, buf: &mut Vec<u8>, f: &mut dyn FnMut(&[u8])| -> Result<()> {
            let r = piece(i);
            if let Some(all) = &kept {
                // Bytes at hand count as read by the first pass.
                if at_hand && !second {
                    (job.progress)(r.end - r.start);
                }
                f(all
                    .get(r.start as usize..r.end as usize)
                    .unwrap_or_default());
                return Ok(());
            }
            buf.resize((r.end - r.start) as usize, 0);
            (job.read)(r.start, buf)?;
            (job.progress)(r.end - r.start);
            f(buf);
            Ok(())
        };
    let firsts = parallel(job, pieces, |i, buf| {
        let mut first = First::default();
        with_piece(i, false, buf, &mut |b| match job.kind {
            Kind::F32 => values::blocks32(b, |v| first.add_block32(v)),
            kind => values::blocks(kind, b, |v| first.add_block(v)),
        })?;
        Ok(first)
    })?;
    let mut first = First::default();
    for f in &firsts {
        first.merge(f);
    }
    let Some(mean) = first.mean() else {
        return Ok(Stats {
            count: first.count,
            nan: first.nan,
            posinf: first.posinf,
            neginf: first.neginf,
            zero: first.zero,
            min: None,
            max: None,
            mean: None,
            std: None,
            counts: Some(vec![0; job.bins]),
            bins: job.bins,
        });
    };
    let bins = Bins::new(first.min, first.max, job.bins);
    let bins = bins.as_ref();
    let seconds = parallel(job, pieces, |i, buf| {
        let mut second = Second::new(job.bins);
        with_piece(i, true, buf, &mut |b| match job.kind {
            Kind::F32 => values::blocks32(b, |v| second.add_block32(v, mean, bins)),
            kind => values::blocks(kind, b, |v| second.add_block(v, mean, bins)),
        })?;
        Ok(second)
    })?;
    let mut second = Second::new(job.bins);
    for s in &seconds {
        second.merge(s);
    }
    Ok(Stats {
        count: first.count,
        nan: first.nan,
        posinf: first.posinf,
        neginf: first.neginf,
        zero: first.zero,
        min: Some(first.min),
        max: Some(first.max),
        mean: Some(mean),
        std: Some((second.squares.value() / first.finite as f64).sqrt()),
        counts: bins.is_some().then_some(second.counts),
        bins: job.bins,
    })
}

/// The tensor's `len` bytes, read by pieces on the job's threads.
fn read_all(job: &Job, len: u64) -> Result<Vec<u8>> {
    let mut all = vec![0u8; len as usize];
    let slots: Vec<Mutex<&mut [u8]>> = all.chunks_mut(PIECE as usize).map(Mutex::new).collect();
    parallel(job, slots.len() as u64, |i, _| {
        let mut slot = slots[i as usize].lock().unwrap_or_else(|e| e.into_inner());
        (job.read)(i * PIECE, &mut slot)?;
        (job.progress)(slot.len() as u64);
        Ok(())
    })?;
    drop(slots);
    Ok(all)
}

/// `f(i, buffer)` for each piece `i` of `n`, on the job's threads (a
/// buffer each), the results in the pieces' order; the first error stops
/// the rest. A mapped file cut short under a read is an error here, not a
/// signal (`sys::map_read`).
fn parallel<T: Send>(
    job: &Job,
    n: u64,
    f: impl Fn(u64, &mut Vec<u8>) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let next = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let stopped =
        || failed.load(Ordering::Relaxed) || job.stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let work = || {
        crate::sys::map_read(|| {
            let mut buf = Vec::new();
            let mut out = Vec::new();
            loop {
                if stopped() {
                    return Ok(out);
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok(out);
                }
                match f(i, &mut buf) {
                    Ok(t) => out.push((i, t)),
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                }
            }
        })
    };
    let threads = job.threads.clamp(1, n.max(1) as usize);
    let results: Vec<Result<Vec<(u64, T)>>> = match threads {
        1 => vec![work()],
        _ => std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::Usage("a statistics thread failed".into())))
                })
                .collect()
        }),
    };
    let mut all = Vec::with_capacity(n as usize);
    for r in results {
        all.extend(r?);
    }
    if job.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
        return Err(Error::Interrupted);
    }
    all.sort_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, t)| t).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats_of(values: &[f32], threads: usize, keep: u64) -> Stats {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let read = |at: u64, buf: &mut [u8]| {
            buf.copy_from_slice(&bytes[at as usize..at as usize + buf.len()]);
            Ok(())
        };
        compute(&Job {
            len: bytes.len() as u64,
            kind: Kind::F32,
            read: &read,
            bins: 4,
            threads,
            keep,
            progress: &|_| {},
            stop: None,
            bytes: None,
        })
        .unwrap()
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(short_number(0.5), "0.5");
        assert_eq!(short_number(-2.0), "-2");
        assert_eq!(short_number(1.5e-7), "1.5000e-7");
        assert_eq!(short_number(0.0), "0");
        assert_eq!(short_number(f64::NAN), "NaN");
    }

    #[test]
    fn numbers_of_a_small_tensor() {
        let s = stats_of(&[1.0, 2.0, f32::NAN, 3.0, f32::INFINITY, 0.0], 1, 0);
        assert_eq!((s.count, s.nan, s.posinf, s.zero), (6, 1, 1, 1));
        assert_eq!((s.min, s.max, s.mean), (Some(0.0), Some(3.0), Some(1.5)));
        assert_eq!(s.std, Some(1.25f64.sqrt()));
        assert_eq!(s.counts, Some(vec![1, 1, 1, 1]));
    }

    #[test]
    fn no_finite_value_has_no_range() {
        let s = stats_of(&[f32::NAN, f32::NEG_INFINITY], 2, 1 << 20);
        assert_eq!((s.min, s.mean, s.std, s.neginf), (None, None, None, 1));
        assert_eq!(s.counts, Some(vec![0; 4]));
        let empty = stats_of(&[], 2, 0);
        assert_eq!((empty.count, empty.min), (0, None));
    }

    /// Many pieces on several threads, kept or read twice: the same
    /// numbers, bit for bit.
    #[test]
    fn threads_and_pieces_do_not_change_the_numbers() {
        let n = (PIECE as usize / 4) * 3 + 17;
        let v: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 1000) as f32 * 0.001 - 0.3)
            .collect();
        let one = stats_of(&v, 1, 0);
        assert_eq!(stats_of(&v, 3, 0), one);
        assert_eq!(stats_of(&v, 2, u64::MAX), one);
        assert_eq!(one.counts.unwrap().iter().sum::<u64>(), n as u64);
    }
}
