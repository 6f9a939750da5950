//! `ztfs pack`: its options and the one function that runs it.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use super::args::{parse_shard, parse_size, AlgoArg, FilesArg, RemoteArgs};
use crate::digest::Algo;
use crate::error::{Error, Result};
use crate::model::Model;
use crate::pack::{self, to_folder, Options, Source, Summary};
use crate::report::{self, Progress};

/// Options of `ztfs pack`.
#[derive(clap::Args, Debug)]
// One of the two outputs, as the usage line says: `<--output <FILE>|--to-folder <DIR>>`.
#[command(group(clap::ArgGroup::new("target").required(true).args(["output", "to_folder"])))]
pub struct PackCmd {
    /// The model to pack (.zt, .hrry, .safetensors, .gguf, a PyTorch
    /// checkpoint, .npz, a sharded checkpoint's index or folder; local or
    /// by URL), or one or more .npy
    /// files (each an object named by its file's stem).
    #[arg(required = true, num_args = 1..)]
    pub input: Vec<PathBuf>,
    /// The zTensor file to write (replaced if it exists). Its shards, with
    /// --shard-size, go beside it as STEM-NNNNN-of-NNNNN.zt.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write the model as a Hugging Face folder instead: its folder's
    /// files at their paths and its tensors as model.safetensors (or
    /// shards and an index), with the model's __metadata__ as it was. DIR
    /// must be new or empty; it appears whole or not at all. With
    /// --shard-size, model-0000i-of-0000n.safetensors shards of at most
    /// SIZE of tensors each and their index, as save_pretrained writes.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["output", "zstd", "digest", "align", "frame_size"])]
    pub to_folder: Option<PathBuf>,
    /// With --to-folder: write the folder even when some tensors cannot be
    /// safetensors tensors (they are left out, each named); without it such
    /// a model is refused before anything is written.
    #[arg(long, requires = "to_folder")]
    pub allow_left_out: bool,
    /// Write every quantized tensor as a dense tensor of its values in
    /// DTYPE: f32 (as dequantized, what a mount's data.npy serves), f16
    /// or bf16 (rounded to nearest even, as numpy's astype(float16) and
    /// ml_dtypes.bfloat16). With --to-folder they go in model.safetensors
    /// (else left out); a quantized tensor ztfs cannot dequantize is refused.
    #[arg(long, value_name = "DTYPE", value_parser = super::args::parse_float)]
    pub dequantize: Option<crate::decode::dequant::narrow::Float>,
    /// The digest of every part (and shard). Canonical form needs xxh3.
    #[arg(long, value_enum, default_value_t = AlgoArg::Xxh3)]
    pub digest: AlgoArg,
    /// Compress each part as zt.zstd-seekable/1 at LEVEL (default 3;
    /// `--zstd=19`), where that makes it smaller.
    #[arg(long, value_name = "LEVEL", num_args = 0..=1, default_missing_value = "3",
          require_equals = true, allow_negative_numbers = true)]
    pub zstd: Option<i32>,
    /// Decoded bytes per zstd frame (at most 16M).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1M")]
    pub frame_size: u64,
    /// Write the blobs to data shards of about SIZE each (a larger part
    /// gets a shard of its own); the output holds the manifest.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub shard_size: Option<u64>,
    /// Place blobs at multiples of SIZE (a multiple of 4K). Canonical form
    /// is 64K.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "64K")]
    pub align: u64,
    /// Use PATH for shard NAME of a zTensor input (repeatable).
    #[arg(long, value_name = "NAME=PATH", value_parser = parse_shard)]
    pub shard: Vec<(String, PathBuf)>,
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(flatten)]
    pub files: FilesArg,
    #[command(flatten)]
    pub progress: super::args::ProgressArg,
}

/// The signals that stop a pack.
const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// How long a signalled pack may take to stop by itself before its
/// temporary files are removed under it (it may be waiting on a server).
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Runs `work` on a worker thread while this one waits for a stop
/// signal; a signal stops the work (`work`'s step sees the flag) and
/// `abandon` removes what it wrote, so nothing is left behind.
fn until_signalled<T: Send + 'static>(
    work: impl FnOnce(&AtomicBool) -> Result<T> + Send + 'static,
    abandon: impl FnOnce(),
) -> Result<T> {
    crate::sys::block_signals(&STOP_SIGNALS).map_err(|e| Error::io("signal mask", e))?;
    let stop = Arc::new(AtomicBool::new(false));
    // The source's map is read on the worker (decoding, verifying): a
    // file truncated under it is an error there, and nothing read after
    // the fault is published (see `sys::fault_seen`).
    crate::sys::install_bus_guard();
    let worker = {
        let stop = stop.clone();
        std::thread::spawn(move || crate::sys::map_read(|| work(&stop)))
    };
    let mut signalled = None;
    let mut waited = Duration::ZERO;
    while !worker.is_finished() && waited < STOP_GRACE {
        let step = Duration::from_millis(100);
        if let Some(sig) = crate::sys::wait_signal(&STOP_SIGNALS, step) {
            signalled.get_or_insert(sig);
            stop.store(true, Relaxed);
        }
        if signalled.is_some() {
            waited += step;
        }
    }
    if let Some(sig) = signalled {
        abandon();
        return Err(Error::Usage(format!(
            "interrupted by signal {sig}: nothing was written"
        )));
    }
    worker
        .join()
        .unwrap_or_else(|_| Err(Error::Usage("the pack failed".into())))
}

/// Packs `source` to `output`, with a progress line on a terminal.
fn pack_until_signalled(source: Source, output: &Path, opts: &Options) -> Result<Summary> {
    let (output, opts) = (output.to_path_buf(), opts.clone());
    let work = move |stop: &AtomicBool| {
        let terminal = std::io::stderr().is_terminal();
        let mut progress = Progress::doing("packing", source.decoded_bytes(), terminal);
        let r = pack::pack(&source, &output, &opts, &mut |n| {
            if stop.load(Relaxed) {
                return Err(Error::Interrupted);
            }
            crate::sys::no_fault()?;
            progress.add(n);
            Ok(())
        });
        progress.clear();
        r
    };
    until_signalled(work, pack::abandon)
}

/// `ztfs pack MODEL --to-folder DIR`: writes the folder, then says what
/// it wrote.
fn to_folder(cmd: &PackCmd, dir: &Path) -> Result<()> {
    let [input] = &cmd.input[..] else {
        return Err(Error::Usage("--to-folder takes one model".into()));
    };
    if crate::store::remote::url_of(dir).is_some() {
        return Err(Error::Usage(format!(
            "{}: --to-folder writes a local folder only",
            dir.display()
        )));
    }
    let files = !cmd.files.no_files;
    let model = Model::open_with(input, cmd.shard.clone())?;
    let tree = to_folder::tree_of(model, files, cmd.shard_size, cmd.dequantize)?;
    // A folder without some of the model's tensors is data lost in a
    // script that trusts the exit code: refused unless asked for (a
    // tensor transformers' GGUF loader drops is not lost to the folder's
    // reader, and is only named after the writing).
    let mut left_out = to_folder::left_out(&tree);
    left_out.retain(|(_, why)| why != crate::tree::DROPPED);
    if !left_out.is_empty() && !cmd.allow_left_out {
        for (name, why) in &left_out {
            eprintln!("ztfs: {name:?} cannot be in the safetensors files: {why}");
        }
        return Err(Error::Unsupported(format!(
            "{} of the model's objects cannot be safetensors tensors (see above): nothing was written; --allow-left-out writes the folder without them",
            left_out.len()
        )));
    }
    let staging = to_folder::staging_for(dir)?;
    let staged = staging.path().to_path_buf();
    let total = to_folder::export_bytes(&tree);
    let dest = dir.to_path_buf();
    let work = move |stop: &AtomicBool| {
        let terminal = std::io::stderr().is_terminal();
        let mut progress = Progress::doing("writing", total, terminal);
        let r = to_folder::to_folder(&tree, staging, &dest, &mut |n| {
            if stop.load(Relaxed) {
                return Err(Error::Interrupted);
            }
            crate::sys::no_fault()?;
            progress.add(n);
            Ok(())
        });
        progress.clear();
        r
    };
    let w = until_signalled(work, || drop(std::fs::remove_dir_all(&staged)))?;
    for (name, why) in &w.left_out {
        eprintln!("ztfs: {name:?} is not in the safetensors files: {why}");
    }
    let weights = match w.safetensors.len() {
        0 => "no tensors".to_string(),
        1 => w.safetensors[0].clone(),
        n => format!("{} shards and {}", n - 1, crate::tree::safetensors::INDEX),
    };
    println!(
        "{}: {} files of the folder, {weights}, {} in all{}",
        dir.display(),
        w.files,
        report::human(w.bytes),
        match w.left_out.len() {
            0 => String::new(),
            n => format!(" ({n} objects left out: see above)"),
        }
    );
    Ok(())
}

/// The model, or the `.npy` files, to pack.
fn source(
    input: &[PathBuf],
    shards: Vec<(String, PathBuf)>,
    files: bool,
    dequantize: Option<crate::decode::dequant::narrow::Float>,
) -> Result<Source> {
    // A file named `.npy` has no extension, but is one, to be refused by
    // name rather than sniffed.
    let is_npy = |p: &PathBuf| {
        (p.extension()).is_some_and(|e| e.eq_ignore_ascii_case("npy"))
            || p.file_name().is_some_and(|n| n == ".npy")
    };
    if input.iter().all(is_npy) {
        if let Some((name, _)) = shards.first() {
            return Err(Error::Usage(format!(
                "--shard {name}: .npy files have no shards"
            )));
        }
        return Source::of_npy_files(input);
    }
    match input {
        [one] => Source::of_model(Model::open_with(one, shards)?, files, dequantize),
        _ => Err(Error::Usage(
            "several inputs must all be .npy files (one model file otherwise)".into(),
        )),
    }
}

/// Runs `ztfs pack`: writes the file, then says what it wrote.
pub fn run(cmd: PackCmd) -> Result<()> {
    if let Some(dir) = &cmd.to_folder {
        return to_folder(&cmd, dir);
    }
    let output = cmd
        .output
        .clone()
        .ok_or_else(|| Error::Usage("-o FILE is needed".into()))?;
    let opts = Options {
        digest: match cmd.digest {
            AlgoArg::Xxh3 => Algo::Xxh3,
            AlgoArg::Sha256 => Algo::Sha256,
        },
        zstd: cmd.zstd,
        frame_len: cmd.frame_size,
        shard_size: cmd.shard_size,
        align: cmd.align,
    };
    if crate::store::remote::url_of(&output).is_some() {
        return Err(Error::Usage(format!(
            "{}: ztfs pack writes local files only",
            output.display()
        )));
    }
    let mut source = source(&cmd.input, cmd.shard, !cmd.files.no_files, cmd.dequantize)?;
    source.leave_out_output(&output);
    let s = pack_until_signalled(source, &output, &opts)?;
    let mut notes = Vec::new();
    if s.shared > 0 {
        notes.push(format!("{} sharing an earlier part's blob", s.shared));
    }
    if opts.zstd.is_some() {
        notes.push(format!("{} compressed", s.compressed));
    }
    let plural = |n: usize, what: &str| match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    };
    let notes = match notes.is_empty() {
        true => String::new(),
        false => format!(" ({})", notes.join(", ")),
    };
    let shards = match s.shards {
        0 => String::new(),
        n => format!(", {}", plural(n, "data shard")),
    };
    let form = match (&s.not_nfc, opts.is_canonical()) {
        (None, true) => "canonical".to_string(),
        (Some(n), true) => format!("not canonical: name {n:?} is not in Unicode NFC"),
        (_, false) => "not canonical".to_string(),
    };
    println!(
        "{}: {}, {}{notes}, {} decoded, {form}{shards}",
        output.display(),
        plural(s.objects, "object"),
        plural(s.parts, "part"),
        report::human(s.decoded_bytes),
    );
    Ok(())
}
