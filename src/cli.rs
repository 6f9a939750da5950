//! The command line: one function per subcommand. Errors go back to `main`,
//! which prints them once and picks the exit code.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand, ValueEnum};

use crate::digest::{self, Algo};
use crate::error::{Error, Result};
use crate::format::hurray;
use crate::model::Model;
use crate::mount::{self, MountArgs};
use crate::read::{self, Verified};
use crate::report;
use crate::shards::Found;
use crate::tree::clones::{ClonePolicy, Passthrough};
use crate::tree::{NpyDtypes, Options, View};

mod pack;

/// Look inside tensor model files (zTensor v2, Hurray, safetensors, GGUF;
/// local or by URL): check them, list and read their tensors, and mount
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
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// The disk cache of models read by URL.
#[derive(clap::Args, Debug)]
pub struct CacheArgs {
    /// Keep blocks of models read by URL in this directory (made if
    /// missing), for this command and later ones; each block is checked
    /// by a key kept there when read back. It must be yours, writable by
    /// you alone, and empty the first time. Default: no disk cache.
    #[arg(long, global = true, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// The most the disk cache may hold (e.g. 20G, 512M); the least
    /// recently used blocks are deleted first.
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_size, default_value = "10G")]
    pub cache_size: u64,
    /// Read objects by URL whose server gives neither an ETag nor a
    /// Last-Modified (refused by default): a change of such an object
    /// under a reader goes unseen, and a read may mix two versions.
    #[arg(long, global = true)]
    pub trust_unversioned: bool,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Validate a file: exit 0 if valid, 1 if rejected, 2 on usage or I/O errors.
    ///
    /// Without --verify, checks everything the format lets a reader check
    /// without reading tensor bytes: footer, manifest hash, strict CBOR,
    /// schema, names, shapes, blob bounds and overlap, layout metadata.
    Check {
        /// The model file (.zt, .hrry, .safetensors, .gguf, .safetensors.index.json), its URL, or a folder holding one safetensors checkpoint.
        file: PathBuf,
        /// Also decode every part and check its digest and content rules
        /// (bool bytes, f4_e2m1 padding), and each shard's whole-file
        /// digest; report parts with no digest.
        #[arg(long)]
        verify: bool,
        /// Use PATH for shard NAME (repeatable); otherwise shards are found
        /// beside the root as STEM-NAME.zt, then by size and digest.
        #[arg(long, value_name = "NAME=PATH", value_parser = parse_shard)]
        shard: Vec<(String, PathBuf)>,
    },
    /// List objects: names; with -l layout, type, shape and size, file
    /// attributes and the shard table.
    Ls {
        /// The model file (.zt, .hrry, .safetensors, .gguf, .safetensors.index.json), its URL, or a folder holding one safetensors checkpoint.
        file: PathBuf,
        /// Long listing.
        #[arg(short = 'l', long = "long")]
        long: bool,
        /// Everything as JSON.
        #[arg(long, conflicts_with = "long")]
        json: bool,
        /// Which objects a mount's model.safetensors holds (name, dtype,
        /// file), and why each other one is left out.
        #[arg(long, conflicts_with_all = ["long", "json"])]
        safetensors: bool,
        /// Use PATH for shard NAME (repeatable).
        #[arg(long, value_name = "NAME=PATH", value_parser = parse_shard)]
        shard: Vec<(String, PathBuf)>,
    },
    /// Write a part's decoded bytes to stdout.
    Cat {
        /// The model file (.zt, .hrry, .safetensors, .gguf, .safetensors.index.json), its URL, or a folder holding one safetensors checkpoint.
        file: PathBuf,
        /// The object's name, exactly as in the manifest.
        object: String,
        /// The part's name.
        #[arg(default_value = "data")]
        part: String,
        /// Write the stored bytes instead (structural access: no decoding,
        /// no interpretation, no content rules).
        #[arg(long)]
        raw: bool,
        /// Use PATH for shard NAME (repeatable).
        #[arg(long, value_name = "NAME=PATH", value_parser = parse_shard)]
        shard: Vec<(String, PathBuf)>,
        /// Read a shard's bytes without first checking its whole-file
        /// digest against the shard table (you vouch for the file).
        #[arg(long)]
        trust_shards: bool,
    },
    /// Print the model's content digest (zt.content/1, §6.4).
    Digest {
        /// The model file (.zt, .hrry, .safetensors, .gguf, .safetensors.index.json), its URL, or a folder holding one safetensors checkpoint.
        file: PathBuf,
        /// The hash over the content value.
        #[arg(long, value_enum, default_value_t = AlgoArg::Sha256)]
        algo: AlgoArg,
    },
    /// Print the manifest as JSON (the mount's manifest.json).
    Manifest {
        /// The model file (.zt, .hrry, .safetensors, .gguf, .safetensors.index.json), its URL, or a folder holding one safetensors checkpoint.
        file: PathBuf,
    },
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
    Unmount {
        /// The mount point.
        mountpoint: PathBuf,
    },
    /// Print a shell completion script (e.g. `ztfs completions bash >
    /// /etc/bash_completion.d/ztfs`).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff; e.g. `ztfs man > /usr/local/share/man/man1/ztfs.1`).
    Man,
}

/// Options of `ztfs mount`.
#[derive(clap::Args, Debug)]
pub struct MountCmd {
    /// The model file (.zt, .hrry, .safetensors, .gguf, .safetensors.index.json), its URL, or a folder holding one safetensors checkpoint.
    pub file: PathBuf,
    /// An existing directory to mount on.
    pub mountpoint: PathBuf,
    /// Stay in the foreground, logging to stderr.
    #[arg(short = 'f', long)]
    pub foreground: bool,
    /// Nest objects by the segments of their names (a.b.c becomes a/b/c/).
    #[arg(long)]
    pub tree: bool,
    /// The segment separator for --tree.
    #[arg(long, default_value_t = '.', requires = "tree")]
    pub separator: char,
    /// Permission bits for files, in octal (directories add x where r is
    /// set); default: the read bits of the backing file.
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<u16>,
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
    /// Memory for decoded frames of compressed parts, in MiB.
    #[arg(long, default_value_t = 256)]
    pub cache_mib: u64,
    /// Write the daemon's log to this file (in the background the log is
    /// otherwise discarded).
    #[arg(long)]
    pub log_file: Option<PathBuf>,
    /// Log level: error, warn, info, debug or trace (also ZTFS_LOG).
    #[arg(long)]
    pub log_level: Option<String>,
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
    /// The longest model.safetensors header before the model is served as
    /// shards and an index (the format's limit; lower it to test loaders).
    #[arg(long, hide = true, default_value_t = crate::tree::safetensors::HEADER_MAX)]
    pub safetensors_header_max: u64,
    /// Kernel passthrough: serve reads and mmap of large files straight
    /// from a backing file of their own, at native speed. `auto`: reflink
    /// clones where the model's filesystem shares extents, memory clones
    /// elsewhere and for decoded files; `reflink` or `memory` only; `off`.
    /// Needs CAP_SYS_ADMIN and Linux 6.9+; without them files are served
    /// as before, and the mount says why.
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
    /// Reflink clones where possible, memory clones otherwise.
    Auto,
    /// Reflink clones only.
    Reflink,
    /// Memory clones only.
    Memory,
    /// No passthrough.
    Off,
}

/// A byte size: a number with an optional K, M, G or T (powers of 1024).
fn parse_size(s: &str) -> std::result::Result<u64, String> {
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

/// `--npy-dtypes`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum NpyDtypesArg {
    /// Void types of the element's width.
    Numpy,
    /// ml_dtypes names.
    Ml,
}

fn parse_shard(s: &str) -> std::result::Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.to_string(), PathBuf::from(path)))
        }
        _ => Err(format!("{s:?} is not NAME=PATH")),
    }
}

fn parse_mode(s: &str) -> std::result::Result<u16, String> {
    let m = u16::from_str_radix(s.trim_start_matches("0o"), 8)
        .ok()
        .filter(|m| *m <= 0o7777)
        .ok_or_else(|| format!("{s:?} is not an octal mode such as 444"))?;
    if m & 0o7333 != 0 {
        return Err(format!(
            "{s}: the files of a read-only mount are never written or run, so only read bits may be given (e.g. 444 or 440; directories add x where r is set)"
        ));
    }
    Ok(m)
}

impl Command {
    /// The file the command is about.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Command::Check { file, .. }
            | Command::Ls { file, .. }
            | Command::Cat { file, .. }
            | Command::Digest { file, .. }
            | Command::Manifest { file } => Some(file),
            Command::Mount(m) => Some(&m.file),
            // Several .npy files: each error names its own.
            Command::Pack(p) if p.input.len() == 1 => Some(&p.input[0]),
            Command::Pack(_) => None,
            Command::Unmount { .. } | Command::Completions { .. } | Command::Man => None,
        }
    }
}

/// Digest algorithm choices.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum AlgoArg {
    /// SHA-256.
    Sha256,
    /// XXH3-64.
    Xxh3,
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    // A mount sets up its own log; the other commands log to stderr only
    // when `ZTFS_LOG` asks (`ZTFS_LOG=debug ztfs cat URL ...` shows the
    // requests).
    if !matches!(cli.command, Command::Mount(_)) {
        if let Ok(spec) = std::env::var("ZTFS_LOG") {
            let mut b = env_logger::Builder::new();
            b.parse_filters(&spec).target(env_logger::Target::Stderr);
            let _ = b.try_init();
        }
    }
    crate::store::remote::trust_unversioned(cli.cache.trust_unversioned);
    if let Some(dir) = &cli.cache.cache_dir {
        // A refused cache directory is no fault of the model: said without
        // the model's name, which main would put first.
        crate::store::use_disk_cache(dir, cli.cache.cache_size).map_err(|e| {
            eprintln!("ztfs: {e}");
            Error::Reported(Box::new(e))
        })?;
    }
    match cli.command {
        Command::Check {
            file,
            verify,
            shard,
        } => check(&file, verify, shard),
        Command::Ls {
            file,
            safetensors: true,
            shard,
            ..
        } => ls_safetensors(&file, shard),
        Command::Ls {
            file,
            long,
            json,
            shard,
            ..
        } => ls(&file, long, json, shard),
        Command::Cat {
            file,
            object,
            part,
            raw,
            shard,
            trust_shards,
        } => cat(&file, &object, &part, raw, shard, trust_shards),
        Command::Digest { file, algo } => print_digest(&file, algo),
        Command::Manifest { file } => manifest(&file),
        Command::Mount(m) => mount_cmd(m),
        Command::Pack(p) => pack::run(p),
        Command::Unmount { mountpoint } => mount::unmount(&mountpoint),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut out = std::io::stdout().lock();
            clap_complete::generate(shell, &mut Cli::command(), "ztfs", &mut out);
            Ok(())
        }
        Command::Man => {
            use clap::CommandFactory;
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut page)
                .map_err(|e| Error::io("man page", e))?;
            stdout_write(&mut std::io::stdout().lock(), &page)
        }
    }
}

fn open(file: &Path) -> Result<Model> {
    Model::open(file)
}

fn stdout_write(out: &mut impl Write, bytes: &[u8]) -> Result<()> {
    out.write_all(bytes).map_err(|e| Error::io("stdout", e))
}

fn check(file: &Path, verify: bool, shard_paths: Vec<(String, PathBuf)>) -> Result<()> {
    let model = Model::open_with(file, shard_paths)?;
    let Some(m) = model.manifest() else {
        println!(
            "{}: valid: data shard (no manifest)",
            crate::store::shown(file)
        );
        return Ok(());
    };
    let say = |what: &str, line: &dyn std::fmt::Display| {
        eprintln!("ztfs: {}: {what}{line}", crate::store::shown(file))
    };
    for n in model.input().notes(m) {
        say("note: ", &n);
    }
    let shard_bytes = report::total(model.shard_table().iter().map(|s| s.size));
    let part_bytes = report::total(
        m.objects
            .iter()
            .flat_map(|o| &o.parts)
            .map(|p| p.decoded_size()),
    );
    let total = if verify {
        shard_bytes.saturating_add(part_bytes)
    } else {
        0
    };
    let mut progress = report::Progress::new(total, std::io::stderr().is_terminal());
    let mut first_err = None;
    let mut unavailable = Vec::new();
    for s in model.shard_table() {
        match model.shard(&s.name) {
            Ok((store, found)) => {
                if found != Found::Positional {
                    say(
                        "note: ",
                        &format!(
                            "shard {:?} found {} at {}",
                            s.name,
                            found_how(found),
                            store.name()
                        ),
                    );
                }
                if verify {
                    if let Err(e) = model.prove_shard(&s.name, &mut |n| progress.add(n)) {
                        progress.clear();
                        say("", &e);
                        first_err.get_or_insert(e);
                    }
                }
            }
            Err(e) => {
                say("warning: ", &e);
                unavailable.push(s.name.as_str());
            }
        }
    }
    if !verify {
        println!(
            "{}: valid: {}",
            crate::store::shown(file),
            report::summary_of(&model, m)
        );
        return Ok(());
    }
    if model.gguf().is_some() {
        println!(
            "{}: valid and verified: {}; every structural rule holds; the format has no content digests and no rules on tensor bytes",
            crate::store::shown(file),
            report::summary_of(&model, m),
        );
        return Ok(());
    }
    if let Some(f) = model.hurray() {
        // The structural rules were checked at open; the one rule on bytes
        // (MXFP scales) is checked here. The format has no content digests.
        let total = hurray::data_rules::data_bytes(f);
        let mut progress = report::Progress::new(total, std::io::stderr().is_terminal());
        let mut tick = |n| {
            progress.add(n);
            Ok(())
        };
        let r = hurray::data_rules::check_data(f, model.root(), &mut tick);
        progress.clear();
        r?;
        println!(
            "{}: valid and verified: {}; every structural rule, the index CRC (when present) and the MXFP scale bytes hold; the format has no content digests",
            crate::store::shown(file),
            report::summary_of(&model, m),
        );
        return Ok(());
    }
    let (mut no_digest, mut verified, mut skipped) = (Vec::new(), 0usize, 0usize);
    let mut no_digest_count = 0usize;
    for o in &m.objects {
        let mut parts_ok = true;
        for p in &o.parts {
            let in_missing = p
                .blob
                .shard
                .as_deref()
                .is_some_and(|s| unavailable.contains(&s));
            let r = if in_missing {
                skipped += 1;
                Ok(None)
            } else {
                let mut tick = |n| {
                    progress.add(n);
                    Ok(())
                };
                read::verify(&model, o, p, &mut tick).map(Some)
            };
            match r {
                Ok(Some(Verified::Digest)) => verified += 1,
                Ok(Some(Verified::NoDigest)) => {
                    no_digest_count += 1;
                    if no_digest.len() < NO_DIGEST_NAMES {
                        no_digest.push(format!("{:?}/{:?}", o.name, p.name));
                    }
                }
                Ok(None) => parts_ok = false,
                Err(e) => {
                    parts_ok = false;
                    progress.clear();
                    say("", &e);
                    first_err.get_or_insert(e);
                }
            }
        }
        // Layout data rules need every part of the object.
        let data = if parts_ok {
            read::verify_object(&model, o)
        } else {
            Ok(())
        };
        if let Err(e) = data {
            progress.clear();
            say("", &e);
            first_err.get_or_insert(e);
        }
    }
    progress.clear();
    if skipped > 0 {
        let e = Error::Unsupported(format!(
            "{skipped} part(s) in unavailable shards ({}) cannot be verified",
            unavailable.join(", ")
        ));
        say("", &e);
        first_err.get_or_insert(e);
    }
    if let Some(e) = first_err {
        return Err(Error::Reported(Box::new(e)));
    }
    if model.safetensors().is_some() {
        // Every rule of the format was checked at open; reading every
        // tensor adds the content rules of the types (bool bytes).
        println!(
            "{}: valid and verified: {}; every structural rule holds and every tensor reads (bool bytes are 0 or 1); the format has no content digests",
            crate::store::shown(file),
            report::summary_of(&model, m),
        );
        return Ok(());
    }
    if no_digest_count > 0 {
        say("note: ", &no_digest_note(no_digest_count, &no_digest));
    }
    println!(
        "{}: valid and verified: {}; {} {}, {} no digest",
        crate::store::shown(file),
        report::summary_of(&model, m),
        report::count(verified, "digest"),
        if verified == 1 { "matches" } else { "match" },
        report::count(no_digest_count, "part")
            + if no_digest_count == 1 {
                " has"
            } else {
                " have"
            },
    );
    Ok(())
}

/// How many parts without a digest `check --verify` names; the rest are counted.
const NO_DIGEST_NAMES: usize = 3;

/// One line for the parts without a digest, however many there are.
fn no_digest_note(count: usize, first: &[String]) -> String {
    let names = first.join(", ");
    let more = count.saturating_sub(first.len());
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let (what, its) = if count == 1 {
        ("part has", "its")
    } else {
        ("parts have", "their")
    };
    format!("{count} {what} no digest, so {its} content is not verified: {names}{tail}")
}

fn found_how(found: Found) -> &'static str {
    match found {
        Found::Override => "as given",
        Found::Positional => "beside the root",
        Found::Identity => "by identity (size and digest)",
    }
}

/// `ls --safetensors`: each object's place in a mount's safetensors
/// files, as the mount would serve them.
fn ls_safetensors(file: &Path, shard_paths: Vec<(String, PathBuf)>) -> Result<()> {
    let model = Model::open_with(file, shard_paths)?;
    let tree = crate::tree::Tree::build(model, Options::default())?;
    let mut text = String::new();
    for (name, place) in tree.safetensors_listing() {
        let name = report::display_name(&name);
        match place {
            Ok((file, dtype)) => text.push_str(&format!("{name}\t{dtype}\t{file}\n")),
            Err(why) => text.push_str(&format!("{name}\t-\tleft out: {why}\n")),
        }
    }
    for note in tree.safetensors_notes() {
        text.push_str(&format!("{}: {note}\n", crate::tree::safetensors::FILE));
    }
    let mut out = std::io::stdout().lock();
    stdout_write(&mut out, text.as_bytes())?;
    out.flush().map_err(|e| Error::io("stdout", e))
}

fn ls(file: &Path, long: bool, as_json: bool, shard_paths: Vec<(String, PathBuf)>) -> Result<()> {
    let model = Model::open_with(file, shard_paths)?;
    let mut out = std::io::stdout().lock();
    let text = match model.manifest() {
        None if as_json => "{\"data_shard\":true,\"objects\":[]}\n".to_string(),
        None => format!(
            "{}: data shard (no manifest): nothing to list\n",
            crate::store::shown(file)
        ),
        Some(_) if as_json => report::ls_json(&model)? + "\n",
        Some(_) if long => report::ls_long(&model)?,
        Some(m) => m
            .objects
            .iter()
            .map(|o| format!("{}\n", report::display_name(&o.name)))
            .collect(),
    };
    stdout_write(&mut out, text.as_bytes())?;
    out.flush().map_err(|e| Error::io("stdout", e))
}

fn cat(
    file: &Path,
    object: &str,
    part: &str,
    raw: bool,
    shard_paths: Vec<(String, PathBuf)>,
    trust_shards: bool,
) -> Result<()> {
    let model = Model::open_with(file, shard_paths)?.trust_shards(trust_shards);
    let m = (model.manifest())
        .ok_or_else(|| Error::NotFound("it is a data shard: it has no objects".into()))?;
    let o = m.object(object).ok_or_else(|| {
        let near = report::near_names(object, m.objects.iter().map(|o| &*o.name));
        let hint = match near.as_slice() {
            [] => {
                " (`ztfs ls FILE` lists them; a name starting with '-' goes after `--`)".to_string()
            }
            names => format!(
                "; did you mean {}?",
                names
                    .iter()
                    .map(|n| format!("{n:?}"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        };
        Error::NotFound(format!("object {object:?}{hint}"))
    })?;
    if let Some(file) = model.hurray() {
        if part == hurray::objects::DATA && o.part(part).is_none() && !raw {
            let i = m
                .objects
                .iter()
                .position(|x| std::ptr::eq(x, o))
                .unwrap_or(0);
            return cat_hurray_view(&model, file, i);
        }
    }
    let p = o.part(part).ok_or_else(|| {
        let names: Vec<&str> = o.parts.iter().map(|p| p.name.as_str()).collect();
        Error::NotFound(format!(
            "part {part:?} of object {object:?} (its parts: {names:?})"
        ))
    })?;
    let mut out = std::io::stdout().lock();
    let mut sink = |chunk: &[u8]| stdout_write(&mut out, chunk);
    if raw {
        read::stored(&model, p, &mut sink)?;
    } else {
        read::decoded(&model, o, p, &mut sink)?;
    }
    out.flush().map_err(|e| Error::io("stdout", e))
}

/// Writes a Hurray tensor's computed `data` (another dense layout, a
/// partition), a chunk at a time, or says why it has none.
fn cat_hurray_view(model: &Model, file: &hurray::File, i: usize) -> Result<()> {
    let t = &file.tensors[i];
    let members = hurray::composite_members(&file.tensors);
    let v = match crate::decode::hurray::view(file, i, &members) {
        Some(v) => v.map_err(|e| Error::Unsupported(format!("tensor {:?}: {e}", t.name)))?,
        None => {
            let why = match hurray::objects::data_of(t) {
                hurray::objects::Data::Absent(why) => why,
                _ => "no row-major view".to_string(),
            };
            return Err(Error::Unsupported(format!(
                "tensor {:?} has no data: {why} (its buffers are its parts buffer0, buffer1, ...)",
                t.name
            )));
        }
    };
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0; 1 << 20];
    let mut offset = 0;
    while offset < v.len() {
        let n = (v.len() - offset).min(buf.len() as u64) as usize;
        v.read_into(model.root(), offset, &mut buf[..n])
            .map_err(Error::Unsupported)?;
        stdout_write(&mut out, &buf[..n])?;
        offset += n as u64;
    }
    out.flush().map_err(|e| Error::io("stdout", e))
}

fn print_digest(file: &Path, algo: AlgoArg) -> Result<()> {
    let model = open(file)?;
    if model.has_no_digests() {
        return Err(Error::Unsupported(format!(
            "a {} file has no content digest: the format defines none",
            model.format_name()
        )));
    }
    let algo = match algo {
        AlgoArg::Sha256 => Algo::Sha256,
        AlgoArg::Xxh3 => Algo::Xxh3,
    };
    let m = model.manifest().ok_or_else(|| {
        Error::Unsupported("a data shard has no manifest, so no content digest".into())
    })?;
    match digest::content_digest(m, algo) {
        Ok(d) => {
            let mut out = std::io::stdout().lock();
            stdout_write(&mut out, format!("{d}\n").as_bytes())
        }
        Err(missing) => Err(Error::Unsupported(format!(
            "the content digest is undefined: {} part(s) have no digest: {}",
            missing.len(),
            report::list_some(&missing, 10)
        ))),
    }
}

fn manifest(file: &Path) -> Result<()> {
    let model = open(file)?;
    // Written as it is rendered: the text can be many times the manifest.
    let mut out = crate::format::json::Pieces::new(std::io::stdout().lock());
    model.write_manifest_json(&mut out)?;
    out.finish()
        .and_then(|mut o| o.flush())
        .map_err(|e| Error::io("stdout", e))
}

fn mount_cmd(m: MountCmd) -> Result<()> {
    // A background daemon logs where the user can find it.
    let log_file =
        (m.log_file.clone()).or_else(|| (!m.foreground).then(default_log_file).flatten());
    init_log(m.log_level.as_deref(), log_file.as_deref(), m.foreground)?;
    let options = Options {
        view: if m.tree {
            View::Nested { sep: m.separator }
        } else {
            View::Flat
        },
        mode: m.mode,
        verify: m.verify,
        direct_io: m.direct_io,
        cache_bytes: m.cache_mib.saturating_mul(1 << 20),
        npy_dtypes: match m.npy_dtypes {
            NpyDtypesArg::Numpy => NpyDtypes::Numpy,
            NpyDtypesArg::Ml => NpyDtypes::Ml,
        },
        safetensors_max: m.safetensors_header_max,
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
    mount::mount(MountArgs {
        nonempty: m.nonempty,
        log_file,
        file: m.file,
        mountpoint: m.mountpoint,
        foreground: m.foreground,
        allow_other: m.allow_other,
        xattrs: m.xattrs,
        shards: m.shard,
        trust_shards: m.trust_shards,
        options,
    })
}

/// The log of background daemons: `ztfs.log` in the user's state
/// directory (`$XDG_STATE_HOME/ztfs`, else `~/.local/state/ztfs`), else
/// the runtime directory; `None` when none can be made.
fn default_log_file() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let uid = crate::sys::uid();
    let dirs = [
        env("XDG_STATE_HOME").map(|d| d.join("ztfs")),
        env("HOME").map(|h| h.join(".local/state/ztfs")),
        env("XDG_RUNTIME_DIR").map(|d| d.join("ztfs")),
        Some(std::env::temp_dir().join(format!("ztfs-{uid}"))),
    ];
    dirs.into_iter().flatten().find_map(|d| {
        use std::os::unix::fs::DirBuilderExt;
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&d);
        // Ours and writable: another user's directory of that name is not.
        let log = d.join("ztfs.log");
        let ok = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .is_ok();
        ok.then_some(log)
    })
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
    let spec = level
        .map(str::to_string)
        .or_else(|| std::env::var("ZTFS_LOG").ok())
        .unwrap_or_else(|| default.into());
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
        b.target(env_logger::Target::Pipe(Box::new(out)));
    } else if !foreground {
        b.target(env_logger::Target::Stderr);
    }
    let _ = b.try_init();
    Ok(())
}
