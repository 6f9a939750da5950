//! `ztfs mount`: its options, and the daemon's log.

use std::path::{Path, PathBuf};

use super::args::{parse_mode, parse_shard, parse_size, FilesArg, ModelArg};
use crate::error::{Error, Result};
use crate::mount::{self, MountArgs};
use crate::tree::clones::{ClonePolicy, Passthrough};
use crate::tree::{Arrangement, NpyDtypes, Options};

/// Options of `ztfs mount`.
#[derive(clap::Args, Debug)]
pub struct MountCmd {
    #[command(flatten)]
    pub model: ModelArg,
    /// An existing directory to mount on.
    pub mountpoint: PathBuf,
    #[command(flatten)]
    pub files: FilesArg,
    #[command(flatten)]
    pub progress: super::args::ProgressArg,
    /// Stay in the foreground, logging to stderr.
    #[arg(short = 'f', long)]
    pub foreground: bool,
    /// Nest objects by the segments of their names (a.b.c becomes a/b/c/).
    #[arg(long)]
    pub tree: bool,
    /// The segment separator for --tree.
    #[arg(long, default_value_t = '.', requires = "tree")]
    pub separator: char,
    /// Permission bits for files, in octal (--mode is the same flag);
    /// default: the read bits of the backing file.
    #[arg(long = "file-mode", alias = "mode", value_name = "OCTAL", value_parser = parse_mode)]
    pub mode: Option<u16>,
    /// Permission bits for directories, in octal; default: the files'
    /// bits, with x where r is set.
    #[arg(long, value_name = "OCTAL", value_parser = super::args::parse_dir_mode)]
    pub dir_mode: Option<u16>,
    /// The owner of every file and directory (a user id); default: the
    /// backing file's owner (the mounting user's for a URL).
    #[arg(long)]
    pub uid: Option<u32>,
    /// The group of every file and directory (a group id); default: the
    /// backing file's group (the mounting user's for a URL).
    #[arg(long)]
    pub gid: Option<u32>,
    /// Unmount when the daemon dies, however it dies (the kernel's
    /// auto_unmount, through fusermount3; root may then read the mount
    /// too, which fusermount3 needs, and a user needs user_allow_other in
    /// /etc/fuse.conf).
    #[arg(long)]
    pub auto_unmount: bool,
    /// Check each part's digest and content rules the first time its file
    /// is opened; a corrupt part fails to open with EIO.
    #[arg(long)]
    pub verify: bool,
    /// Bypass the kernel page cache (FOPEN_DIRECT_IO): faster one-pass loads
    /// with large reads, no double caching; mmap still works.
    #[arg(long)]
    pub direct_io: bool,
    /// Let other users access the mount (needs user_allow_other for non-root).
    #[arg(long)]
    pub allow_other: bool,
    /// Serve user.zt.* extended attributes on part files (getfattr -d).
    /// Off by default: with it on, every entry `ls -l` lists costs three
    /// extra round trips to the daemon.
    #[arg(long)]
    pub xattrs: bool,
    /// Memory for decoded frames of compressed parts, in MiB; a remote
    /// model's blocks (all its files together) are kept within as much.
    #[arg(long, default_value_t = 256)]
    pub cache_mib: u64,
    /// Write the daemon's log to this file (rotated past 16 MiB, the one
    /// before kept as FILE.1). Default in the background: one log per
    /// mount, MOUNTPOINT.log (the path with / as %2F) under
    /// $XDG_STATE_HOME/ztfs (~/.local/state/ztfs), which `ztfs mount` and
    /// `ztfs status` name; in the foreground (-f), stderr.
    #[arg(long)]
    pub log_file: Option<PathBuf>,
    /// Log level: off, error, warn, info, debug or trace, or
    /// MODULE=LEVEL pairs, comma-separated (also ZTFS_LOG).
    #[arg(long, value_parser = super::args::parse_log_spec)]
    pub log_level: Option<String>,
    /// More log: -v is info, -vv debug, -vvv trace.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, conflicts_with = "log_level")]
    pub verbose: u8,
    /// Use PATH for shard NAME (repeatable); otherwise shards are found
    /// beside the root as STEM-NAME.zt, then by size and digest.
    #[arg(long, value_name = "NAME=PATH", value_parser = parse_shard)]
    pub shard: Vec<(String, PathBuf)>,
    /// Serve a shard's bytes without first checking its whole-file digest
    /// against the shard table (by default each shard is hashed once at
    /// mount, with progress on a terminal).
    #[arg(long)]
    pub trust_shards: bool,
    /// Mount on a directory that is not empty (its entries are hidden
    /// while mounted); refused otherwise.
    #[arg(long)]
    pub nonempty: bool,
    /// How .npy files name bfloat16 and the f8 types: `numpy` (void types
    /// of their width, `<V2`, `|V1`: load anywhere, as np.save writes
    /// them) or `ml` (the ml_dtypes names, `bfloat16`, `float8_e4m3fn`...:
    /// load after `import ml_dtypes`).
    #[arg(long, value_enum, default_value_t = NpyDtypesArg::Numpy)]
    pub npy_dtypes: NpyDtypesArg,
    /// Put every quantized tensor's values in model.safetensors, in this
    /// type: f32 (as dequantized, the values data.npy holds), f16 or bf16
    /// (rounded to nearest even, as numpy's astype(float16) and
    /// ml_dtypes.bfloat16). Without it model.safetensors leaves them out.
    #[arg(long, value_name = "DTYPE", value_parser = super::args::parse_float)]
    pub dequantize: Option<crate::decode::dequant::narrow::Float>,
    /// The longest model.safetensors header before the model is served as
    /// shards and an index (the format's limit; lower it to test loaders).
    #[arg(long, hide = true, default_value_t = crate::tree::safetensors::HEADER_MAX)]
    pub safetensors_header_max: u64,
    /// Kernel passthrough: serve reads and mmap of large files straight
    /// from a backing file of their own, at native speed. `auto`: reflink
    /// clones where the model's filesystem shares extents, and memory
    /// clones elsewhere only within --clone-cache (none by default);
    /// `reflink` or `memory` only; `off`. Needs CAP_SYS_ADMIN and Linux
    /// 6.9+; without them files are served as before (the mount says why
    /// when passthrough was asked for by name).
    #[arg(long, value_enum, default_value_t = PassthroughArg::Auto)]
    pub passthrough: PassthroughArg,
    /// Memory for memory clones (e.g. 4G, 512M); least recently used ones
    /// without open files are evicted. Default: a quarter of RAM with
    /// `--passthrough memory`, none with `auto` (a memory clone is copied
    /// before its first open returns, which halves a one-pass load here).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub clone_cache: Option<u64>,
    /// Where reflink clones are made (unnamed files, on the model's
    /// filesystem); default: the model's directory.
    #[arg(long, value_name = "DIR")]
    pub clone_dir: Option<PathBuf>,
    /// Files smaller than this stay on the buffered path.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1M")]
    pub passthrough_min: u64,
}

/// `--passthrough`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum PassthroughArg {
    /// Reflink clones where possible; memory clones within --clone-cache
    /// (none by default).
    Auto,
    /// Reflink clones only.
    Reflink,
    /// Memory clones only.
    Memory,
    /// No passthrough.
    Off,
}

/// `--npy-dtypes`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum NpyDtypesArg {
    /// Void types of the element's width.
    Numpy,
    /// ml_dtypes names.
    Ml,
}

pub fn run(m: MountCmd) -> Result<()> {
    // A background daemon logs where the user can find it; the logs of
    // ended mounts are kept within a bound.
    let default_log = (m.log_file.is_none() && !m.foreground)
        .then(|| crate::mounts::log_path(&m.mountpoint))
        .flatten();
    if let Some(log) = &default_log {
        crate::mounts::prune_logs(log);
    }
    let log_file = m.log_file.clone().or(default_log.clone());
    let level = match m.verbose {
        0 => m.log_level.clone(),
        1 => Some("info".to_string()),
        2 => Some("debug".to_string()),
        _ => Some("trace".to_string()),
    };
    init_log(level.as_deref(), log_file.as_deref(), m.foreground)?;
    // Decoded frames and a remote model's blocks are each kept within it.
    crate::store::remote::set_cache_budget(m.cache_mib.saturating_mul(1 << 20));
    let options = Options {
        arrangement: if m.tree {
            Arrangement::Nested { sep: m.separator }
        } else {
            Arrangement::Flat
        },
        mode: m.mode,
        dir_mode: m.dir_mode,
        uid: m.uid,
        gid: m.gid,
        verify: m.verify,
        direct_io: m.direct_io,
        cache_bytes: m.cache_mib.saturating_mul(1 << 20),
        npy_dtypes: match m.npy_dtypes {
            NpyDtypesArg::Numpy => NpyDtypes::Numpy,
            NpyDtypesArg::Ml => NpyDtypes::Ml,
        },
        safetensors_max: m.safetensors_header_max,
        files: !m.files.no_files,
        safetensors_exact: false,
        safetensors_shard_bytes: None,
        dequantize: m.dequantize,
        clones: ClonePolicy {
            mode: match m.passthrough {
                PassthroughArg::Auto => Passthrough::Auto,
                PassthroughArg::Reflink => Passthrough::Reflink,
                PassthroughArg::Memory => Passthrough::Memory,
                PassthroughArg::Off => Passthrough::Off,
            },
            budget: m.clone_cache.unwrap_or(match m.passthrough {
                PassthroughArg::Memory => crate::sys::memory_total() / 4,
                _ => 0,
            }),
            dir: m.clone_dir,
            min_size: m.passthrough_min,
        },
    };
    let mounted = mount::mount(MountArgs {
        auto_unmount: m.auto_unmount,
        nonempty: m.nonempty,
        log_file,
        file: m.model.file,
        mountpoint: m.mountpoint,
        foreground: m.foreground,
        allow_other: m.allow_other,
        xattrs: m.xattrs,
        shards: m.shard,
        trust_shards: m.trust_shards,
        options,
    });
    if let (Err(_), Some(log)) = (&mounted, &default_log) {
        crate::mounts::remove_if_empty(log);
    }
    mounted
}

/// One logger for ztfs and fuser: level from the flag, else `ZTFS_LOG`,
/// else info (mounted, unmounting, each failing part once); to a file
/// when asked.
fn init_log(level: Option<&str>, file: Option<&Path>, foreground: bool) -> Result<()> {
    // Info goes to a file or a foreground terminal; a background daemon
    // with nowhere to log says only warnings, on stderr until it detaches.
    let default = if file.is_some() || foreground {
        "info"
    } else {
        "warn"
    };
    let spec = match (level, std::env::var("ZTFS_LOG")) {
        (Some(l), _) => l.to_string(),
        (None, Ok(env)) => {
            // Said without the model's name, which main would put first.
            super::args::check_log_spec(&env).map_err(|e| {
                let e = Error::Usage(format!("ZTFS_LOG={env:?}: {e}"));
                eprintln!("ztfs: {e}");
                Error::Reported(Box::new(e))
            })?;
            env
        }
        (None, Err(_)) => default.into(),
    };
    let mut b = env_logger::Builder::new();
    b.parse_filters(&spec);
    if let Some(f) = file {
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        // Without O_NONBLOCK a FIFO with no reader would hang the mount here.
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(f)
            .map_err(|e| Error::io(f.display().to_string(), e))?;
        let kind = out
            .metadata()
            .map_err(|e| Error::io(f.display().to_string(), e))?
            .file_type();
        if !(kind.is_file() || kind.is_char_device()) {
            return Err(Error::Usage(format!(
                "--log-file {}: not a regular file or a terminal",
                f.display()
            )));
        }
        let out = crate::mounts::CappedLog::new(f.to_path_buf(), out);
        b.target(env_logger::Target::Pipe(Box::new(out)));
    } else if !foreground {
        b.target(env_logger::Target::Stderr);
    }
    let _ = b.try_init();
    Ok(())
}
