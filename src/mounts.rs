//! The mounts of this user: where their logs and records live, what
//! `ztfs status` shows, and `ztfs unmount --all` (docs/commands.md).
//!
//! A background daemon logs to `STATE/MOUNT.log`, capped (the one before
//! kept as `.log.1`), and keeps `STATE/MOUNT.json` (source, mount point,
//! pid, start time, log, options) while it serves; `STATE` is
//! `$XDG_STATE_HOME/ztfs` (`~/.local/state/ztfs`), and `MOUNT` is the
//! mount point's absolute path with `%` and `/` percent-encoded. `status`
//! lists the kernel's `fuse.ztfs` mounts (this user's; every user's for
//! root) with their records, and asks each, within a time limit, whether
//! it answers.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// Most bytes of one mount's log before it is rotated.
pub const LOG_CAP: u64 = 16 << 20;
/// How long `status` waits for a mount to answer.
const ANSWER_WAIT: Duration = Duration::from_secs(2);

/// The state directory (made, mode 0700), or `None` when none can be.
pub fn state_dir() -> Option<PathBuf> {
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
    dirs.into_iter().flatten().find(|d| {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(d);
        // Ours: another user's directory of that name is not.
        std::fs::metadata(d).is_ok_and(|m| m.is_dir() && m.uid() == uid)
    })
}

/// The longest name [`name_of`] gives, in bytes: a file name is at most
/// 255, and the log's rotation and the record's temporary add a suffix
/// (`.log.1`, `.json.tmp`).
pub const MAX_NAME: usize = 200;

/// The name of `mnt`'s log and record: its absolute path, `%` and `/`
/// percent-encoded, the leading `/` left out. A name past [`MAX_NAME`]
/// bytes keeps its start and ends with `~` and 16 hex digits of the
/// whole name's SHA-256, so that any mount point has one (the log's first
/// line and the record hold the path itself).
pub fn name_of(mnt: &Path) -> String {
    let abs = std::path::absolute(mnt).unwrap_or_else(|_| mnt.to_path_buf());
    let text = abs.to_string_lossy();
    let text = text.trim_start_matches('/');
    let name = text.replace('%', "%25").replace('/', "%2F");
    if name.len() <= MAX_NAME {
        return name;
    }
    use sha2::Digest;
    let sum = sha2::Sha256::digest(name.as_bytes());
    let hex: String = sum[..8].iter().map(|b| format!("{b:02x}")).collect();
    let mut keep = MAX_NAME - hex.len() - 1;
    while !name.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}~{hex}", &name[..keep])
}

/// Most logs of ended mounts kept in the state directory: a mount's log
/// outlives it (to read why it ended), but mounts come and go.
pub const KEEP_ENDED_LOGS: usize = 32;

/// Removes the logs of ended mounts (those without a record, `.log` and
/// `.log.1`) beyond the [`KEEP_ENDED_LOGS`] newest, and every empty one
/// (a mount that failed before it logged anything). `except` is the log
/// about to be used.
pub fn prune_logs(except: &Path) {
    let Some(dir) = state_dir() else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut ended: Vec<(SystemTime, PathBuf)> = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".log").or(name.strip_suffix(".log.1")) else {
            continue;
        };
        let live = dir.join(format!("{stem}.json")).exists();
        let Ok(meta) = e.metadata() else { continue };
        if live || path == except || !meta.is_file() {
            continue;
        }
        if meta.len() == 0 {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        ended.push((meta.modified().unwrap_or(UNIX_EPOCH), path));
    }
    ended.sort_by_key(|e| std::cmp::Reverse(e.0));
    for (_, path) in ended.into_iter().skip(KEEP_ENDED_LOGS) {
        let _ = std::fs::remove_file(path);
    }
}

/// Removes `log` if nothing was written to it (a mount that failed on its
/// arguments before it logged anything).
pub fn remove_if_empty(log: &Path) {
    if std::fs::metadata(log).is_ok_and(|m| m.is_file() && m.len() == 0) {
        let _ = std::fs::remove_file(log);
    }
}

/// The log of a background mount on `mnt`.
pub fn log_path(mnt: &Path) -> Option<PathBuf> {
    Some(state_dir()?.join(format!("{}.log", name_of(mnt))))
}

/// A log file that is rotated past [`LOG_CAP`] bytes: the full one
/// becomes `.1` (replacing the one before), and a new one is begun.
pub struct CappedLog {
    path: PathBuf,
    file: std::fs::File,
    written: u64,
}

impl CappedLog {
    /// Appends to `file`, opened at `path`.
    pub fn new(path: PathBuf, file: std::fs::File) -> CappedLog {
        let written = file.metadata().map_or(0, |m| m.len());
        CappedLog {
            path,
            file,
            written,
        }
    }
}

impl Write for CappedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.written + buf.len() as u64 > LOG_CAP && self.written > 0 {
            let mut old = self.path.clone().into_os_string();
            old.push(".1");
            // A regular file only: a log given as a terminal is not rotated.
            if self.file.metadata().is_ok_and(|m| m.is_file()) {
                std::fs::rename(&self.path, &old)?;
                self.file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)?;
                self.written = 0;
            }
        }
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// What a daemon records of its mount while it serves.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// The model, as shown (a URL without its query).
    pub source: String,
    pub mountpoint: PathBuf,
    pub pid: u32,
    /// Seconds since the epoch.
    pub started: u64,
    pub log: Option<PathBuf>,
    /// The mount's flags, as given.
    pub options: Vec<String>,
}

impl Record {
    fn path(mnt: &Path) -> Option<PathBuf> {
        Some(state_dir()?.join(format!("{}.json", name_of(mnt))))
    }

    /// Writes the record of the mount on `self.mountpoint` (failures only
    /// cost `status` its details).
    pub fn write(&self) {
        let Some(path) = Record::path(&self.mountpoint) else {
            return;
        };
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(self).unwrap_or_default();
        if std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .is_err()
        {
            log::debug!("{}: the mount's record was not written", path.display());
        }
    }

    /// Removes the record of the mount on `mnt`, if it is this process's.
    pub fn remove(mnt: &Path) {
        Record::remove_if(mnt, |r| r.pid == std::process::id());
    }

    /// Where the daemon of the mount on `mnt` says what its caches did.
    fn caches_path(mnt: &Path) -> Option<PathBuf> {
        Some(state_dir()?.join(format!("{}.caches.json", name_of(mnt))))
    }

    /// Writes what this process's caches did (`store::cache_counts`) for
    /// `status`, when it has any.
    pub fn write_caches(mnt: &Path) {
        let (Some(counts), Some(path)) = (crate::store::cache_counts(), Record::caches_path(mnt))
        else {
            return;
        };
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_vec(&counts).unwrap_or_default();
        if std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .is_err()
        {
            log::debug!("{}: the caches' counts were not written", path.display());
        }
    }

    fn read_caches(mnt: &Path) -> Option<serde_json::Value> {
        serde_json::from_slice(&std::fs::read(Record::caches_path(mnt)?).ok()?).ok()
    }

    /// Removes the record of the mount on `mnt` when its daemon is gone
    /// (after `ztfs unmount` of a stale mount).
    pub fn remove_if_dead(mnt: &Path) {
        Record::remove_if(mnt, |r| !pid_alive(r.pid));
    }

    fn remove_if(mnt: &Path, yes: impl Fn(&Record) -> bool) {
        let Some(path) = Record::path(mnt) else {
            return;
        };
        if Record::read(mnt).is_some_and(|r| yes(&r)) {
            let _ = std::fs::remove_file(path);
            if let Some(caches) = Record::caches_path(mnt) {
                let _ = std::fs::remove_file(caches);
            }
        }
    }

    fn read(mnt: &Path) -> Option<Record> {
        let bytes = std::fs::read(Record::path(mnt)?).ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// Seconds since the epoch, now.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A ztfs mount as `status` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Status {
    pub mountpoint: PathBuf,
    /// As the kernel shows it (the mount's fsname: a URL's query left out).
    pub source: String,
    /// The mounting user's id.
    pub uid: u32,
    /// `ok`, `stale` (the daemon is gone) or `not answering`.
    pub state: String,
    /// What to do about it, when anything.
    pub fix: Option<String>,
    /// From the daemon's record, when it has one.
    pub pid: Option<u32>,
    pub started: Option<u64>,
    pub log: Option<PathBuf>,
    pub options: Vec<String>,
    /// What the daemon's caches of remote blocks did, when it has any
    /// (its disk cache's hits and misses, the shared cache tier's counts),
    /// as of a few seconds ago.
    pub caches: Option<serde_json::Value>,
}

/// The `fuse.ztfs` mounts of this user (every user's for root), in the
/// kernel's order.
pub fn list() -> Result<Vec<Status>> {
    let info = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| Error::io("/proc/self/mountinfo", e))?;
    let me = crate::sys::uid();
    let mut out = Vec::new();
    for line in info.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|&f| f == "-") else {
            continue;
        };
        if fields.get(dash + 1) != Some(&"fuse.ztfs") {
            continue;
        }
        let (Some(point), Some(source)) = (fields.get(4), fields.get(dash + 2)) else {
            continue;
        };
        let supers = fields.get(dash + 3).copied().unwrap_or("");
        let uid = (supers.split(','))
            .find_map(|o| o.strip_prefix("user_id=")?.parse().ok())
            .unwrap_or(0);
        if me != 0 && uid != me {
            continue;
        }
        let mountpoint = PathBuf::from(unescape(point));
        let record = Record::read(&mountpoint).filter(|r| pid_alive(r.pid));
        let caches = record
            .as_ref()
            .and_then(|_| Record::read_caches(&mountpoint));
        let (state, fix) = answers(&mountpoint);
        out.push(Status {
            source: unescape(source).to_string_lossy().into_owned(),
            uid,
            fix,
            state,
            pid: record.as_ref().map(|r| r.pid),
            started: record.as_ref().map(|r| r.started),
            log: record.as_ref().and_then(|r| r.log.clone()),
            options: record.map(|r| r.options).unwrap_or_default(),
            caches,
            mountpoint,
        });
    }
    Ok(out)
}

/// Whether the mount on `mnt` answers a listing within [`ANSWER_WAIT`]
/// (on a thread of its own: a hung daemon would hold it), and the fix.
fn answers(mnt: &Path) -> (String, Option<String>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = mnt.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read_dir(&path).map(drop));
    });
    let unmount = format!("ztfs unmount {}", mnt.display());
    match rx.recv_timeout(ANSWER_WAIT) {
        Ok(Ok(())) => ("ok".into(), None),
        Ok(Err(e)) if e.raw_os_error() == Some(libc::ENOTCONN) => (
            "stale".into(),
            Some(format!("its daemon is gone: `{unmount}` cleans it up")),
        ),
        Ok(Err(e)) => ("error".into(), Some(format!("{e}"))),
        Err(_) => (
            "not answering".into(),
            Some(format!(
                "no answer within {} s; `{unmount}` detaches it",
                ANSWER_WAIT.as_secs()
            )),
        ),
    }
}

/// True when `pid` is a live ztfs process (not a zombie, not another
/// program that took the number).
fn pid_alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command's name in parentheses.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let ztfs = cmdline.split(|b| *b == 0).any(|w| w.ends_with(b"ztfs"));
    matches!(state, Some(s) if s != 'Z' && s != 'X') && ztfs
}

/// A mountinfo field with its octal escapes (space, tab, newline,
/// backslash) undone.
pub fn unescape(field: &str) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStringExt;
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    std::ffi::OsString::from_vec(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_point_names_its_files_without_ambiguity() {
        assert_eq!(name_of(Path::new("/mnt/model")), "mnt%2Fmodel");
        assert_eq!(name_of(Path::new("/mnt/a%2Fb")), "mnt%2Fa%252Fb");
        assert_ne!(name_of(Path::new("/a/b")), name_of(Path::new("/a%2Fb")));
    }

    #[test]
    fn a_log_past_its_cap_is_rotated() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("m.log");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        let mut log = CappedLog::new(path.clone(), file);
        let line = vec![b'x'; 1 << 20];
        for _ in 0..(LOG_CAP >> 20) + 3 {
            log.write_all(&line).unwrap();
        }
        let now = std::fs::metadata(&path).unwrap().len();
        let old = std::fs::metadata(t.path().join("m.log.1")).unwrap().len();
        assert_eq!((now, old), (3 << 20, LOG_CAP));
    }
}
