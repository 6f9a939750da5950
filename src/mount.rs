//! `ztfs mount` and `ztfs unmount`: validate, build the tree, mount, and run
//! the daemon until unmounted or signalled.
//!
//! The file is validated and the tree built before anything is mounted, so
//! an invalid file is refused with the same message and exit code as `check`.
//! In the background mode the process forks after that; the parent returns
//! only once the mount answers (exit 0) or the child reports why it could
//! not mount (exit 2).

use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fuser::{Config, MountOption, SessionACL};

use crate::error::{Error, Result};
use crate::fuse::ZtFs;
use crate::model::Model;
use crate::sys::{self, Forked};
use crate::tree::{Options, Tree};

/// The signals that unmount the filesystem.
const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
/// Readahead window of the mount's bdi, in KiB (fuse-performance.md §2).
const READ_AHEAD_KB: u32 = 1024;
/// Worker threads reading /dev/fuse.
const THREADS: usize = 4;

/// Everything `ztfs mount` was asked for.
#[derive(Debug, Clone)]
pub struct MountArgs {
    /// The model file.
    pub file: PathBuf,
    /// Where to mount it.
    pub mountpoint: PathBuf,
    /// Stay attached, logging to stderr.
    pub foreground: bool,
    /// Let other users see the mount.
    pub allow_other: bool,
    /// Unmount when the daemon dies (fusermount3's auto_unmount).
    pub auto_unmount: bool,
    /// Serve `user.zt.*` extended attributes.
    pub xattrs: bool,
    /// Files for named shards, ahead of the conventions.
    pub shards: Vec<(String, PathBuf)>,
    /// Serve shards without checking their whole-file digests.
    pub trust_shards: bool,
    /// Mount on a directory that is not empty (hiding what is in it).
    pub nonempty: bool,
    /// Where the daemon logs, to say at mount.
    pub log_file: Option<PathBuf>,
    /// Tree and serving options.
    pub options: Options,
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |e| Error::io(what, e)
}

/// Checks that `mnt` is a directory we can mount on, and explains a stale
/// mount left by a dead daemon.
pub fn check_mountpoint(mnt: &Path, nonempty: bool) -> Result<()> {
    let say = |what: String| {
        Err(Error::Usage(format!(
            "mount point {}: {what}",
            mnt.display()
        )))
    };
    // Listing, not stat: a dead FUSE daemon's root attributes may still be
    // cached by the kernel, but opening the directory asks the daemon.
    let entries = match std::fs::read_dir(mnt) {
        Ok(entries) => entries,
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            return say("not a directory; mount on an empty directory".into())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return say(format!("does not exist; create it first (mkdir -p {})", mnt.display()))
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => {
            return say(format!(
                "a stale FUSE mount is there (its daemon is gone: {e}); run `ztfs unmount {}` to clean it up",
                mnt.display()
            ))
        }
        Err(e) => return Err(Error::io(format!("mount point {}", mnt.display()), e)),
    };
    if let Some((fstype, _)) = mounted_at(mnt) {
        return say(format!(
            "a {fstype} filesystem is mounted there already; unmount it first (`ztfs unmount {}`) or choose another directory",
            mnt.display()
        ));
    }
    let n = entries.count();
    if n > 0 && !nonempty {
        return say(format!(
            "not empty ({n} {}); a mount would hide them: use an empty directory, or --nonempty",
            if n == 1 { "entry" } else { "entries" }
        ));
    }
    Ok(())
}

/// The type and source of what is mounted at `mnt`, if anything (from
/// /proc/self/mountinfo, whose paths escape space, tab, newline and
/// backslash as octal).
fn mounted_at(mnt: &Path) -> Option<(String, String)> {
    let real = std::fs::canonicalize(mnt).ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let unescape = crate::mounts::unescape;
    info.lines().rev().find_map(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        let point = unescape(fields.get(4)?);
        if Path::new(&point) != real {
            return None;
        }
        let dash = fields.iter().position(|&f| f == "-")?;
        let fstype = fields.get(dash + 1)?.to_string();
        let source = unescape(fields.get(dash + 2)?)
            .to_string_lossy()
            .into_owned();
        Some((fstype, source))
    })
}

/// Validates, builds and mounts; returns when the daemon is ready
/// (background) or when the filesystem is unmounted (foreground).
pub fn mount(args: MountArgs) -> Result<()> {
    let model = Model::open_with(&args.file, args.shards.clone())?.trust_shards(args.trust_shards);
    check_mountpoint(&args.mountpoint, args.nonempty)?;
    prove_shards(&model, &args);
    let tree = Arc::new(Tree::build(model, args.options.clone())?);
    tree.check_encodings();
    // A pass over the whole manifest, done here rather than on the first
    // `stat` of manifest.json, which a FUSE worker thread would answer.
    tree.manifest_json_len();
    sys::trim_heap();
    if args.foreground {
        return serve(&args, tree, None);
    }
    // The blocks read so far written to the shared cache tier first: its
    // writers then wait with its queue's lock released, which the child
    // takes (a lock held at the fork would be held forever in the child).
    crate::store::flush_shared_cache(std::time::Duration::from_secs(30));
    let (mut parent_end, child_end) = UnixStream::pair().map_err(io_err("socketpair"))?;
    match sys::fork().map_err(io_err("fork"))? {
        Forked::Parent(pid) => {
            drop(child_end);
            let mut msg = String::new();
            let _ = parent_end.read_to_string(&mut msg);
            match msg.strip_prefix("ok") {
                Some(note) => {
                    if !note.trim().is_empty() {
                        eprintln!("ztfs: {}", note.trim());
                    }
                    let log = (args.log_file.as_ref())
                        .map(|l| format!(", log {}", l.display()))
                        .unwrap_or_default();
                    println!(
                        "ztfs: mounted {} on {} (daemon pid {pid}{log}); unmount with: ztfs unmount {}",
                        crate::store::shown(&args.file),
                        args.mountpoint.display(),
                        args.mountpoint.display()
                    );
                    Ok(())
                }
                None if msg.is_empty() => Err(Error::Usage(
                    "the mount daemon exited before the mount was ready".into(),
                )),
                None => Err(Error::Usage(msg.trim_end().to_string())),
            }
        }
        Forked::Child => {
            drop(parent_end);
            sys::setsid();
            // Errors before the mount is ready reach the parent through the
            // socket; later ones are logged by serve.
            let r = serve(&args, tree, Some(child_end));
            std::process::exit(r.map_or_else(|e| e.exit_code(), |()| 0));
        }
    }
}

/// Resolves every shard and proves it is the declared one (its whole-file
/// digest, with progress on a terminal) before anything is mounted, so no
/// byte of a wrong file is ever served and no FUSE request waits on a
/// hash. A missing or wrong shard does not stop the mount: it is said on
/// stderr, as `check` says it, and in the log, and its parts fail with EIO.
fn prove_shards(model: &Model, args: &MountArgs) {
    use std::io::IsTerminal;
    let table = model.shard_table();
    let total = crate::report::total(table.iter().map(|s| s.size));
    let mut progress = crate::report::Progress::new(total, std::io::stderr().is_terminal());
    for s in table {
        if let Err(e) = model.prove_shard(&s.name, &mut |n| progress.add(n)) {
            progress.clear();
            let line = format!("{e}; its parts will fail with EIO");
            // Without a log file the log is stderr already.
            if args.log_file.is_some() {
                eprintln!("ztfs: {}: warning: {line}", crate::store::shown(&args.file));
            }
            log::warn!("{line}");
        }
    }
    progress.clear();
}

/// Mounts and runs the session until unmounted or signalled. `ready` is told
/// "ok" once the mount answers, or why it failed.
fn serve(args: &MountArgs, tree: Arc<Tree>, mut ready: Option<UnixStream>) -> Result<()> {
    sys::block_signals(&STOP_SIGNALS).map_err(io_err("signal mask"))?;
    tree.model().prepare();
    sys::install_bus_guard();
    log_panics();
    let mnt = &args.mountpoint;
    let mut cfg = Config::default();
    cfg.mount_options.extend([
        MountOption::RO,
        MountOption::NoDev,
        MountOption::NoSuid,
        // What /proc/mounts shows every user: a URL without its query.
        MountOption::FSName(crate::store::shown(&args.file)),
        // fuser's own mount(2) path ignores MountOption::Subtype.
        MountOption::CUSTOM("subtype=ztfs".into()),
    ]);
    cfg.acl = if args.allow_other {
        SessionACL::All
    } else if args.auto_unmount {
        // fusermount3 takes auto_unmount only with allow_root or
        // allow_other.
        SessionACL::RootAndOwner
    } else {
        SessionACL::Owner
    };
    if args.auto_unmount {
        cfg.mount_options.push(MountOption::AutoUnmount);
    }
    if args.allow_other {
        cfg.mount_options.push(MountOption::DefaultPermissions);
    }
    cfg.n_threads = Some(THREADS);
    let started = fuser::Session::new(ZtFs::new(tree.clone(), args.xattrs), mnt, &cfg)
        .and_then(|s| s.spawn())
        .map_err(|e| mount_error(mnt, args.allow_other, e));
    let session = match started {
        Ok(s) => s,
        Err(e) => {
            if let Some(r) = ready.as_mut() {
                let _ = write!(r, "{e}");
            }
            return Err(e);
        }
    };
    // The mount answers once a stat through it returns.
    let answered = std::fs::metadata(mnt);
    set_read_ahead(mnt);
    // Starting the session (its threads, their arenas) left freed memory
    // behind; give it back before the mount is reported ready.
    sys::trim_heap();
    if answered.is_ok() {
        notify_ready();
    }
    match (&answered, ready.take()) {
        (Ok(_), Some(mut r)) => {
            // Init has run: the note says whether passthrough is off, and why.
            let note = tree.passthrough_note().map(|n| format!("\n{n}"));
            let _ = r.write_all(format!("ok{}", note.unwrap_or_default()).as_bytes());
            drop(r);
            let _ = sys::detach_stdio();
            // The log has the line a foreground mount writes.
            let file = crate::store::shown(&args.file);
            log::info!("mounted {file} on {}", mnt.display());
            record(args);
            count_caches(mnt);
        }
        (Err(e), Some(mut r)) => {
            let _ = write!(r, "{}: the mount does not answer: {e}", mnt.display());
        }
        (_, None) => {
            let file = crate::store::shown(&args.file);
            log::info!("mounted {file} on {}", mnt.display());
            if let Some(note) = tree.passthrough_note() {
                log::warn!("{note}");
            }
        }
    }
    let end = wait_for_end(mnt, session);
    crate::mounts::Record::remove(mnt);
    // The blocks still queued for the shared cache tier written, and this
    // node's claims of them released: other nodes would otherwise miss
    // them, and wait on those claims until they give up.
    crate::store::flush_shared_cache(std::time::Duration::from_secs(30));
    tree.log_failure_counts();
    if let Some(c) = crate::store::cache_counts() {
        log::info!("caches of remote blocks: {c}");
    }
    end
}

/// Logs a panic with where it happened: a background daemon's stderr
/// goes nowhere, and a panic on the session's thread ends the mount.
fn log_panics() {
    let shown = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        log::error!("{info}");
        shown(info);
    }));
}

/// How often a daemon says what its caches did.
const CACHE_COUNTS_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Says what the daemon's caches of remote blocks did, for `ztfs status`,
/// every few seconds for its life; nothing when it has none.
fn count_caches(mnt: &Path) {
    if crate::store::cache_counts().is_none() {
        return;
    }
    let mnt = mnt.to_path_buf();
    let _ = std::thread::Builder::new()
        .name("ztfs-cache-counts".into())
        .spawn(move || loop {
            crate::mounts::Record::write_caches(&mnt);
            std::thread::sleep(CACHE_COUNTS_EVERY);
        });
}

/// Writes the record `ztfs status` reads of this background mount.
fn record(args: &MountArgs) {
    let mountpoint = std::path::absolute(&args.mountpoint).unwrap_or(args.mountpoint.clone());
    // The flags as given: every word after `mount` but the two paths,
    // each as shown (a URL's query left out).
    let paths = [args.file.as_os_str(), args.mountpoint.as_os_str()];
    let options = std::env::args_os()
        .skip(2)
        .filter(|a| !paths.contains(&a.as_os_str()))
        .map(|a| crate::store::shown(Path::new(&a)))
        .collect();
    crate::mounts::Record {
        source: crate::store::shown(&args.file),
        mountpoint,
        pid: std::process::id(),
        started: crate::mounts::now(),
        log: args.log_file.clone(),
        options,
    }
    .write();
}

/// Tells systemd the mount is ready when run as a `Type=notify` service
/// (`$NOTIFY_SOCKET`: a path, or an abstract name after `@`).
fn notify_ready() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let Some(target) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let bytes = target.as_encoded_bytes();
    let addr = match bytes.strip_prefix(b"@") {
        Some(name) => SocketAddr::from_abstract_name(name),
        None => SocketAddr::from_pathname(&target),
    };
    let sent = addr.and_then(|a| UnixDatagram::unbound()?.send_to_addr(b"READY=1", &a));
    if let Err(e) = sent {
        log::warn!("sd_notify to {}: {e}", target.to_string_lossy());
    }
}

/// Waits for a stop signal (then unmounts lazily, so readers in flight
/// finish) or for the session to end (an external unmount).
fn wait_for_end(mnt: &Path, session: fuser::BackgroundSession) -> Result<()> {
    while !session.guard.is_finished() {
        if let Some(sig) = sys::wait_signal(&STOP_SIGNALS, Duration::from_millis(200)) {
            log::info!("signal {sig}: unmounting {}", mnt.display());
            if let Err(e) = detach(mnt, true) {
                log::warn!("unmount {}: {e}", mnt.display());
            }
        }
    }
    // The filesystem is unmounted by now. Dropping the session would
    // unmount by path once more (fuser 0.18 misjudges whether it is still
    // mounted) and could detach a new mount made at the same path since;
    // the process is about to exit, so leave it be.
    std::mem::forget(session);
    log::info!("{} unmounted", mnt.display());
    Ok(())
}

/// Widens the readahead window of the mount's bdi (worth 25-35% on
/// buffered reads); a failure only costs speed.
fn set_read_ahead(mnt: &Path) {
    let Ok(meta) = std::fs::metadata(mnt) else {
        return;
    };
    let dev = meta.dev();
    let path = format!(
        "/sys/class/bdi/{}:{}/read_ahead_kb",
        libc::major(dev),
        libc::minor(dev)
    );
    if let Err(e) = std::fs::write(&path, READ_AHEAD_KB.to_string()) {
        log::debug!("{path}: {e}");
    }
}

/// `ztfs unmount`: unmounts, detaching lazily when busy, and cleans up a
/// stale mount whose daemon has died.
pub fn unmount(mnt: &Path) -> Result<()> {
    let r = unmount_now(mnt);
    if r.is_ok() {
        crate::mounts::Record::remove_if_dead(mnt);
    }
    r
}

fn unmount_now(mnt: &Path) -> Result<()> {
    match detach(mnt, false) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
            detach(mnt, true).map_err(|e| unmount_error(mnt, e))?;
            eprintln!(
                "ztfs: {}: busy; detached (it goes away when the last file is closed)",
                mnt.display()
            );
            Ok(())
        }
        Err(e) => Err(unmount_error(mnt, e)),
    }
}

/// Unmounts `mnt` (`lazy`: detached while files are open): `umount2`, or
/// for a user who mounted without privileges, `fusermount3 -u`.
fn detach(mnt: &Path, lazy: bool) -> std::io::Result<()> {
    match sys::unmount(mnt, lazy) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => sys::fusermount_unmount(mnt, lazy),
        r => r,
    }
}

fn unmount_error(mnt: &Path, e: std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::EINVAL) => Error::Usage(format!("{}: not a mount point", mnt.display())),
        _ if e.kind() == std::io::ErrorKind::NotFound && !sys::is_root() => Error::Usage(format!(
            "{}: unmounting as a user needs fusermount3, which is not installed (install the fuse3 package)",
            mnt.display()
        )),
        _ => Error::io(mnt.display().to_string(), e),
    }
}

/// What a failed mount says: the error, and where the cause is known, the
/// fix (a user mount's /dev/fuse, fusermount3, user_allow_other).
fn mount_error(mnt: &Path, allow_other: bool, e: std::io::Error) -> Error {
    let dev = Path::new("/dev/fuse");
    let text = e.to_string();
    let why = if text.contains("user_allow_other") || (allow_other && text.contains("allow_other"))
    {
        Some("--allow-other, for a user who is not root, needs a line `user_allow_other` in /etc/fuse.conf (root adds it); or mount as root".to_string())
    } else if e.kind() == std::io::ErrorKind::PermissionDenied && !sys::can_read_write(dev) {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dev)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0);
        Some(format!(
            "cannot open /dev/fuse (mode {mode:04o}): a user mount needs read and write access to it; root can run `chmod 0666 /dev/fuse` (the usual mode), or mount as root"
        ))
    } else if e.kind() == std::io::ErrorKind::NotFound && !sys::is_root() {
        Some("mounting as a user needs fusermount3, which is not installed: install the fuse3 package".to_string())
    } else {
        None
    };
    match why {
        Some(why) => Error::Usage(format!(
            "mounting on {}: {why} ({})",
            mnt.display(),
            text.trim()
        )),
        None => Error::io(format!("mounting on {}", mnt.display()), e),
    }
}
