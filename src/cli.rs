//! The command line: a module per subcommand, its options and the
//! function that runs it; `args` holds what several take (a model, sizes,
//! shard overrides). Errors go back to `main`, which prints them once and
//! picks the exit code.

use std::io::Write;
use std::path::Path;

use clap::{Parser, Subcommand};

use crate::error::{Error, Result};
use crate::model::Model;

pub(crate) mod args;
mod cat;
mod check;
mod digest;
mod ls;
mod mount;
mod pack;
mod stats;
mod status;
#[cfg(feature = "view")]
mod view;

pub use mount::MountCmd;

/// Look inside tensor model files (zTensor v2, Hurray, safetensors, GGUF,
/// PyTorch checkpoints read without running pickle, .npz; local or by URL): check them, list and read their tensors, and mount
/// them as read-only directory trees.
#[derive(Parser, Debug)]
#[command(name = "ztfs", version, about, long_about = None)]
#[command(
    after_help = "Exit codes: 0 success; 1 the file is rejected (it breaks a rule of the format) \
or a part is refused (it uses something this reader does not interpret); 2 usage or I/O error."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    Check(check::CheckCmd),
    Ls(ls::LsCmd),
    Cat(cat::CatCmd),
    Digest(digest::DigestCmd),
    Manifest(digest::ManifestCmd),
    Stats(stats::StatsCmd),
    #[cfg(feature = "view")]
    View(view::ViewCmd),
    /// Mount a model as a read-only directory tree.
    ///
    /// Validates the file exactly as `check` does (an invalid file is refused
    /// before anything is mounted), then serves one directory per object with
    /// a file per part. Returns once the mount answers and keeps serving in
    /// the background; `ztfs unmount MNT` or SIGINT/SIGTERM/SIGHUP to the
    /// daemon unmounts.
    Mount(MountCmd),
    /// Write a model as a zTensor v2 file: by default in canonical form
    /// (§6.3: 64 KiB placement in name order, equal parts sharing a blob,
    /// an xxh3 digest on every part), so the same tensors give the same
    /// bytes. Written under a temporary name and renamed when complete.
    Pack(pack::PackCmd),
    /// Unmount a ztfs mount, including a stale one whose daemon has died.
    #[command(visible_alias = "umount")]
    Unmount {
        /// The mount point.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        mountpoint: Option<std::path::PathBuf>,
        /// Unmount every ztfs mount `ztfs status` lists.
        #[arg(long)]
        all: bool,
    },
    /// List the ztfs mounts of this user (every user's for root): source,
    /// mount point, daemon, start, log, options, and whether each answers.
    #[command(visible_alias = "mounts")]
    Status {
        /// As JSON: a list of objects.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script (e.g. `ztfs completions bash >
    /// /etc/bash_completion.d/ztfs`).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print a manual page (roff): ztfs(1), or with a command's name its
    /// own page, ztfs-COMMAND(1) (e.g. `ztfs man mount >
    /// /usr/local/share/man/man1/ztfs-mount.1`).
    Man {
        /// The command whose page to print (mount, pack, ...).
        command: Option<String>,
    },
}

impl Command {
    /// The file the command is about.
    pub fn file(&self) -> Option<&Path> {
        self.model().map(|m| m.file.as_path()).or(match self {
            // Several .npy files: each error names its own.
            Command::Pack(p) if p.input.len() == 1 => Some(&p.input[0]),
            _ => None,
        })
    }

    /// The model a command takes.
    fn model(&self) -> Option<&args::ModelArg> {
        match self {
            Command::Check(c) => Some(&c.model),
            Command::Ls(c) => Some(&c.model),
            Command::Cat(c) => Some(&c.model),
            Command::Digest(c) => Some(&c.model),
            Command::Manifest(c) => Some(&c.model),
            Command::Stats(c) => Some(&c.model),
            #[cfg(feature = "view")]
            Command::View(c) => Some(&c.model),
            Command::Mount(m) => Some(&m.model),
            Command::Pack(_)
            | Command::Unmount { .. }
            | Command::Status { .. }
            | Command::Completions { .. }
            | Command::Man { .. } => None,
        }
    }

    /// Its progress flags, if it shows progress.
    fn progress(&self) -> Option<&args::ProgressArg> {
        match self {
            Command::Check(c) => Some(&c.progress),
            Command::Pack(c) => Some(&c.progress),
            Command::Stats(c) => Some(&c.progress),
            Command::Mount(c) => Some(&c.progress),
            _ => None,
        }
    }

    /// How the command reads a model by URL, if it takes one.
    fn remote(&self) -> Option<&args::RemoteArgs> {
        match self {
            Command::Pack(p) => Some(&p.remote),
            c => c.model().map(|m| &m.remote),
        }
    }
}

/// At the end of a command, waits for the blocks queued for the shared
/// cache tier (at most [`FLUSH_WAIT`]).
struct Flush;

/// How long a command that ends waits for its writes to the shared cache.
const FLUSH_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl Drop for Flush {
    fn drop(&mut self) {
        crate::store::flush_shared_cache(FLUSH_WAIT);
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    // A mount sets up its own log; the other commands log to stderr only
    // when `ZTFS_LOG` asks (`ZTFS_LOG=debug ztfs cat URL ...` shows the
    // requests).
    if !matches!(cli.command, Command::Mount(_)) {
        if let Ok(spec) = std::env::var("ZTFS_LOG") {
            // Said without the model's name, which main would put first.
            args::check_log_spec(&spec).map_err(|e| {
                let e = Error::Usage(format!("ZTFS_LOG={spec:?}: {e}"));
                eprintln!("ztfs: {e}");
                Error::Reported(Box::new(e))
            })?;
            let mut b = env_logger::Builder::new();
            b.parse_filters(&spec).target(env_logger::Target::Stderr);
            let _ = b.try_init();
        }
    }
    if let Some(p) = cli.command.progress() {
        crate::report::set_progress_mode(p.mode());
    }
    if let Some(remote) = cli.command.remote() {
        crate::store::remote::trust_unversioned(remote.trust_unversioned);
        if let Some(dir) = &remote.cache_dir {
            // A refused cache directory is no fault of the model: said
            // without the model's name, which main would put first.
            crate::store::use_disk_cache(dir, remote.cache_size).map_err(|e| {
                eprintln!("ztfs: {e}");
                Error::Reported(Box::new(e))
            })?;
        }
        let env = std::env::var("ZTFS_SHARED_CACHE")
            .ok()
            .filter(|u| !u.is_empty());
        if let Some(url) = remote.shared_cache.clone().or(env) {
            crate::store::use_shared_cache(&url).map_err(|e| {
                eprintln!("ztfs: {e}");
                Error::Reported(Box::new(e))
            })?;
        }
    }
    // What the origin gave is in the shared cache before the command ends.
    let _flush = Flush;
    match cli.command {
        Command::Check(c) => map_guarded(|| c.run()),
        Command::Ls(c) => c.run(),
        Command::Cat(c) => map_guarded(|| c.run()),
        Command::Digest(c) => map_guarded(|| c.run()),
        Command::Manifest(c) => c.run(),
        Command::Stats(c) => map_guarded(|| c.run()),
        #[cfg(feature = "view")]
        Command::View(c) => c.run(),
        Command::Mount(m) => mount::run(m),
        Command::Pack(p) => pack::run(p),
        Command::Unmount {
            mountpoint: Some(mnt),
            ..
        } => crate::mount::unmount(&mnt),
        Command::Unmount {
            mountpoint: None, ..
        } => status::unmount_all(),
        Command::Status { json } => status::run(json),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut out = std::io::stdout().lock();
            clap_complete::generate(shell, &mut Cli::command(), "ztfs", &mut out);
            Ok(())
        }
        Command::Man { command } => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            cmd.build();
            let (cmd, title) = match command {
                None => (cmd, "ztfs".to_string()),
                Some(name) => {
                    let names: Vec<String> = cmd
                        .get_subcommands()
                        .map(|c| c.get_name().to_string())
                        .collect();
                    let sub = cmd.find_subcommand(&name).cloned().ok_or_else(|| {
                        Error::Usage(format!("no command {name:?}: one of {}", names.join(", ")))
                    })?;
                    // Named as the parent page lists it: ztfs-mount(1).
                    let title = format!("ztfs-{}", sub.get_name());
                    (sub, title)
                }
            };
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd)
                .title(title)
                .source(concat!("ztfs ", env!("CARGO_PKG_VERSION")))
                .render(&mut page)
                .map_err(|e| Error::io("man page", e))?;
            stdout_write(&mut std::io::stdout().lock(), &page)
        }
    }
}

fn open(file: &Path) -> Result<Model> {
    Model::open(file)
}

/// Runs a command that reads the file's map in user space (decoding,
/// verifying, hashing) on this thread so that the file truncated under it
/// is an error, not a SIGBUS that kills the process without a word.
fn map_guarded(run: impl FnOnce() -> Result<()>) -> Result<()> {
    crate::sys::install_bus_guard();
    crate::sys::map_read(run)
}

/// Writes to stdout, unless a read since the command began met the file
/// truncated under it: the bytes may be the zeros that stood in.
fn stdout_write(out: &mut impl Write, bytes: &[u8]) -> Result<()> {
    crate::sys::no_fault()?;
    out.write_all(bytes).map_err(|e| Error::io("stdout", e))
}
