//! The arguments more than one subcommand takes: a model (a file, its
//! URL, an index or a folder, and how to read one by URL), sizes, shard
//! overrides, digest algorithms.

use std::path::PathBuf;

use clap::ValueEnum;

/// A model: a file, its URL, an index, or a folder of a checkpoint.
#[derive(clap::Args, Debug)]
pub struct ModelArg {
    /// The model file (.zt, .hrry, .safetensors, .gguf, a PyTorch checkpoint (.pt, .pth, .bin), .npz, a checkpoint index .safetensors.index.json or .bin.index.json), its URL, or a folder holding one checkpoint.
    pub file: PathBuf,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Whether progress lines are shown (on a terminal by default).
#[derive(clap::Args, Debug, Default)]
pub struct ProgressArg {
    /// Show progress (after 2 seconds of work: done, rate, time left) even
    /// when stderr is not a terminal.
    #[arg(long, conflicts_with = "quiet")]
    pub progress: bool,
    /// Show no progress.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl ProgressArg {
    /// The mode the flags ask for.
    pub fn mode(&self) -> crate::report::ProgressMode {
        use crate::report::ProgressMode;
        match (self.progress, self.quiet) {
            (true, _) => ProgressMode::Always,
            (_, true) => ProgressMode::Never,
            _ => ProgressMode::Terminal,
        }
    }
}

/// Whether a checkpoint folder's other files come with the model.
#[derive(clap::Args, Debug)]
pub struct FilesArg {
    /// Leave out the other files of the model's folder (config.json, the
    /// tokenizer's files, ...), which come with a model given as a
    /// folder or an index (a model file given alone has none).
    #[arg(long)]
    pub no_files: bool,
}

/// How a model by URL is read: the disk cache of its blocks, and whether
/// an object without a version may be read. Only on the commands that take
/// a model.
#[derive(clap::Args, Debug)]
pub struct RemoteArgs {
    /// Keep blocks of models read by URL in this directory (made if
    /// missing), for this command and later ones; each block is checked
    /// by a key kept there when read back. It must be yours, writable by
    /// you alone, and empty the first time. Default: no disk cache.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// The most the disk cache may hold (e.g. 20G, 512M); the least
    /// recently used blocks are deleted first.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "10G")]
    pub cache_size: u64,
    /// Ask a shared cache tier on S3-compatible storage (s3://BUCKET or
    /// s3://BUCKET/PREFIX) for blocks of models read by URL before their
    /// origin, and write there what the origin gives, for the other nodes
    /// of a fleet (docs/fleet.md). Also `ZTFS_SHARED_CACHE`; its endpoint
    /// `ZTFS_SHARED_CACHE_ENDPOINT` where it differs from s3:// models',
    /// its secret `ZTFS_SHARED_CACHE_SECRET`.
    #[arg(long, value_name = "URL")]
    pub shared_cache: Option<String>,
    /// Read objects by URL whose server gives neither an ETag nor a
    /// Last-Modified (refused by default): a change of such an object
    /// under a reader goes unseen, and a read may mix two versions.
    #[arg(long)]
    pub trust_unversioned: bool,
}

/// `--dir-mode`: octal permission bits of the mount's directories; read
/// and search bits only (a read-only mount's directories are never
/// written).
pub fn parse_dir_mode(s: &str) -> std::result::Result<u16, String> {
    parse_octal(s, 0o7222, "555", "the directories of a read-only mount are never written, so only read and search bits may be given (e.g. 555 or 550)")
}

/// An octal mode with none of the bits of `forbidden`; `example` and
/// `why` for the refusals.
fn parse_octal(
    s: &str,
    forbidden: u16,
    example: &str,
    why: &str,
) -> std::result::Result<u16, String> {
    let m = u16::from_str_radix(s.trim_start_matches("0o"), 8)
        .ok()
        .filter(|m| *m <= 0o7777)
        .ok_or_else(|| format!("{s:?} is not an octal mode such as {example}"))?;
    match m & forbidden {
        0 => Ok(m),
        _ => Err(format!("{s}: {why}")),
    }
}

/// The log levels, as `--log-level` and `ZTFS_LOG` take them.
const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// Checks a log filter: comma-separated directives, each a level or
/// `MODULE=LEVEL` (env_logger's form); anything else is refused, where
/// env_logger would take an unknown word (`loud`) as a module name and
/// log nothing new.
pub fn check_log_spec(spec: &str) -> std::result::Result<(), String> {
    let level = |l: &str| LEVELS.contains(&l.trim().to_ascii_lowercase().as_str());
    for d in spec.split(',').map(str::trim) {
        let ok = match d.split_once('=') {
            Some((module, l)) => !module.trim().is_empty() && level(l),
            None => level(d),
        };
        if !ok {
            return Err(format!(
                "{d:?} is not a log level: say one of {} (or MODULE=LEVEL, comma-separated)",
                LEVELS.join(", ")
            ));
        }
    }
    Ok(())
}

/// `--log-level`'s parser: a checked filter.
pub fn parse_log_spec(s: &str) -> std::result::Result<String, String> {
    check_log_spec(s).map(|()| s.to_string())
}

/// A byte size: a number with an optional K, M, G or T (powers of 1024).
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(format!("{s:?}: the unit must be K, M, G or T")),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 512M, 4G)"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

pub fn parse_shard(s: &str) -> std::result::Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.to_string(), PathBuf::from(path)))
        }
        _ => Err(format!("{s:?} is not NAME=PATH")),
    }
}

/// `--file-mode`: octal permission bits of the mount's files; read bits
/// only.
pub fn parse_mode(s: &str) -> std::result::Result<u16, String> {
    parse_octal(s, 0o7333, "444", "the files of a read-only mount are never written or run, so only read bits may be given (e.g. 444 or 440; directories add x where r is set)")
}

/// Digest algorithm choices.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum AlgoArg {
    /// SHA-256.
    Sha256,
    /// XXH3-64.
    Xxh3,
}

/// A `--dequantize` type: `f32`, `f16` or `bf16`.
pub fn parse_float(s: &str) -> Result<crate::decode::dequant::narrow::Float, String> {
    crate::decode::dequant::narrow::Float::parse(s)
        .ok_or_else(|| format!("{s:?} is not f32, f16 or bf16"))
}
