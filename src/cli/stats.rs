//! `ztfs stats`: value statistics and a histogram of each tensor.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::args::{ModelArg, ProgressArg};
use super::stdout_write;
use crate::error::{Error, Result};
use crate::library::{Options, Tensor};
use crate::report::{self, Progress};
use crate::stats::{self, short_number, Kind, Stats};

/// Print value statistics of tensors: counts of NaNs, infinities and
/// zeros, min, max, mean and standard deviation of the finite values (in
/// float64; the population std, as numpy's), and a histogram of them.
/// Quantized tensors are dequantized; a complex tensor's numbers are its
/// real and imaginary parts.
#[derive(clap::Args, Debug)]
pub struct StatsCmd {
    #[command(flatten)]
    pub model: ModelArg,
    /// The tensors, by name (default: every tensor).
    pub tensors: Vec<String>,
    /// As JSON: one object mapping each tensor's name to its numbers
    /// (`count`, `nan`, `posinf`, `neginf`, `zero`, `min`, `max`, `mean`,
    /// `std`, `hist`: `bins`, `range`, `counts`).
    #[arg(long)]
    pub json: bool,
    /// Bins of each histogram, equal over [min, max].
    #[arg(long, default_value_t = stats::DEFAULT_BINS as u32,
          value_parser = clap::value_parser!(u32).range(1..=stats::MAX_BINS as i64))]
    pub bins: u32,
    /// Memory for a remote model's blocks and values, in MiB: a remote
    /// tensor of up to half of it is fetched once and kept for the second
    /// pass, a larger one fetched twice. A local tensor is read twice.
    #[arg(long, default_value_t = 256)]
    pub cache_mib: u64,
    /// Threads computing (default: one a core).
    #[arg(long)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub progress: ProgressArg,
}

impl StatsCmd {
    pub fn run(self) -> Result<()> {
        let model = super::open(&self.model.file)?;
        let opts = Options {
            files: false,
            cache_mib: self.cache_mib,
            ..Options::default()
        };
        let m = crate::Model::of(model, opts)?;
        let chosen = choose(&m, &self.tensors)?;
        let threads = self.threads.unwrap_or_else(crate::sys::cores).max(1);
        let keep = stats::keep(&self.model.file, self.cache_mib);
        let results = compute_all(&m, &chosen, self.bins as usize, threads, keep)?;
        let mut out = std::io::stdout().lock();
        let text = match self.json {
            true => json(&results),
            false => text(&results),
        };
        stdout_write(&mut out, text.as_bytes())?;
        out.flush().map_err(|e| Error::io("stdout", e))
    }
}

/// A tensor chosen, and its numbers or why it has none.
struct Row<'a> {
    tensor: &'a Tensor,
    stats: std::result::Result<Stats, String>,
}

/// The tensors named (each must be one), or every tensor.
fn choose<'a>(m: &'a crate::Model, names: &[String]) -> Result<Vec<&'a Tensor>> {
    if names.is_empty() {
        return Ok(m.tensors().iter().collect());
    }
    names
        .iter()
        .map(|n| {
            m.tensor(n).ok_or_else(|| {
                if let Some((_, why)) = m.left_out().iter().find(|(o, _)| o == n) {
                    return Error::Unsupported(format!("{n:?} has no values: {why}"));
                }
                let near = report::near_names(n, m.tensors().iter().map(|t| t.name()));
                let hint = match near.first() {
                    Some(near) => format!("; did you mean {near:?}?"),
                    None => " (`ztfs ls FILE` lists them)".into(),
                };
                Error::NotFound(format!("tensor {n:?}{hint}"))
            })
        })
        .collect()
}

/// Each tensor's statistics: the small ones (one piece) several at once,
/// a thread each; each larger one in turn, its pieces on every thread.
fn compute_all<'a>(
    m: &crate::Model,
    chosen: &[&'a Tensor],
    bins: usize,
    threads: usize,
    keep: u64,
) -> Result<Vec<Row<'a>>> {
    let kind = |t: &Tensor| match t.dtype() {
        Ok(d) => Kind::of(d).ok_or_else(|| format!("its dtype {d} holds no numbers ztfs reads")),
        Err(why) => Err(why.to_string()),
    };
    let read_bytes = |t: &Tensor| match t.len() <= keep || m.mapped_bytes(t).is_some() {
        true => t.len(),
        false => t.len().saturating_mul(2),
    };
    let total = chosen.iter().map(|t| read_bytes(t)).sum();
    let progress = Mutex::new(Progress::doing(
        "computing",
        total,
        std::io::stderr().is_terminal(),
    ));
    let told = |n: u64| progress.lock().unwrap_or_else(|e| e.into_inner()).add(n);
    let one = |t: &Tensor, threads: usize| -> Result<std::result::Result<Stats, String>> {
        let kind = match kind(t) {
            Ok(k) => k,
            Err(why) => return Ok(Err(why)),
        };
        let read = |at: u64, buf: &mut [u8]| m.read(t, at, buf);
        let job = stats::Job {
            len: t.len(),
            kind,
            read: &read,
            bins,
            threads,
            keep,
            progress: &told,
            stop: None,
            bytes: m.mapped_bytes(t),
        };
        stats::compute(&job).map(Ok)
    };
    let mut rows: Vec<Option<std::result::Result<Stats, String>>> = vec![None; chosen.len()];
    let small: Vec<usize> = (0..chosen.len())
        .filter(|&i| chosen[i].len() <= stats::PIECE)
        .collect();
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::new());
    let failed = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads.min(small.len()) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = small.get(k) else { return };
                if failed.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
                    return;
                }
                match crate::sys::map_read(|| one(chosen[i], 1)) {
                    Ok(r) => done.lock().unwrap_or_else(|e| e.into_inner()).push((i, r)),
                    Err(e) => *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e),
                }
            });
        }
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    for (i, r) in done.into_inner().unwrap_or_else(|e| e.into_inner()) {
        rows[i] = Some(r);
    }
    for i in 0..chosen.len() {
        if rows[i].is_none() {
            rows[i] = Some(one(chosen[i], threads)?);
        }
    }
    progress
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    Ok(chosen
        .iter()
        .zip(rows)
        .map(|(t, r)| Row {
            tensor: t,
            stats: r.unwrap_or_else(|| Err("not computed".into())),
        })
        .collect())
}

/// `{name: numbers}` of the tensors that have numbers, in the file's
/// order.
fn json(rows: &[Row]) -> String {
    let mut map = serde_json::Map::new();
    for r in rows {
        if let Ok(s) = &r.stats {
            map.insert(r.tensor.name().to_string(), s.to_json());
        }
    }
    let mut text = serde_json::to_string_pretty(&serde_json::Value::Object(map))
        .unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}

/// A block a tensor: its name, dtype and shape, then its numbers and its
/// histogram drawn in one line.
fn text(rows: &[Row]) -> String {
    let mut out = String::new();
    for r in rows {
        let t = r.tensor;
        let dtype = t.dtype().unwrap_or("?");
        out += &format!(
            "{}  {dtype} {:?}\n",
            report::display_name(t.name()),
            t.shape()
        );
        let s = match &r.stats {
            Ok(s) => s,
            Err(why) => {
                out += &format!("  no statistics: {why}\n");
                continue;
            }
        };
        out += &format!(
            "  count {}  nan {}  +inf {}  -inf {}  zero {}\n",
            s.count, s.nan, s.posinf, s.neginf, s.zero
        );
        let (Some(min), Some(max), Some(mean), Some(std)) = (s.min, s.max, s.mean, s.std) else {
            out += "  no finite value\n";
            continue;
        };
        out += &format!(
            "  min {}  max {}  mean {}  std {}\n",
            short_number(min),
            short_number(max),
            short_number(mean),
            short_number(std)
        );
        match &s.counts {
            Some(counts) => {
                let (bars, n) = (bars(counts), counts.len());
                out += &format!(
                    "  {bars}  {n} bins over [{}, {}]\n",
                    short_number(min),
                    short_number(max)
                );
            }
            None => {
                out += &format!(
                    "  no histogram: [{}, {}] has no {} equal bins in float64\n",
                    short_number(min),
                    short_number(max),
                    s.bins
                );
            }
        }
    }
    out
}

/// The histogram as a line of block characters, one a bin (at most 64:
/// neighbours summed past that), scaled to the fullest.
fn bars(counts: &[u64]) -> String {
    const LEVELS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let per = counts.len().div_ceil(64).max(1);
    let cols: Vec<u64> = counts.chunks(per).map(|c| c.iter().sum()).collect();
    let top = cols.iter().copied().max().unwrap_or(0).max(1);
    cols.iter()
        .map(|&c| match c {
            0 => LEVELS[0],
            c => LEVELS[(1 + (c * 7 / top) as usize).min(8)],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_fullest_and_show_any_count() {
        assert_eq!(bars(&[0, 1, 100, 50]), " ▁█▄");
        assert_eq!(bars(&[1; 128]).chars().count(), 64);
    }
}
