//! Process helpers for the fault tests: commands that must answer within a
//! bound (killed when they do not), a mount guard that also ends a daemon
//! left running, reader threads and processes that are joined or killed
//! within a bound, and what `/proc` says about the daemon (CPU time, RSS).
//!
//! Everything here cleans up after itself on drop, so a failing test leaves
//! no mount, process or thread waiting on a hung request behind (a thread
//! blocked in a FUSE request returns once the mount is gone).

use std::ffi::{CString, OsStr};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::common::{cleanup, is_alive, kill, Mount, BIN};

/// What a bounded command did.
#[derive(Debug)]
pub struct Ran {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Ran {
    /// The exit code, or -signal when killed.
    pub fn code(&self) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        self.status
            .code()
            .unwrap_or_else(|| -self.status.signal().unwrap_or(0))
    }
}

/// A started command whose output goes to files (not pipes: a daemon it
/// forks may hold a pipe open long after the command itself is gone).
pub struct Running {
    what: String,
    child: Child,
    out: tempfile::NamedTempFile,
    err: tempfile::NamedTempFile,
}

impl Running {
    /// Starts `ztfs args...`.
    pub fn ztfs<S: AsRef<OsStr>>(args: &[S]) -> Running {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        let line: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
        Running::start(cmd, format!("ztfs {}", line.join(" ")))
    }

    /// Starts `cmd`, described as `what` in messages.
    pub fn start(mut cmd: Command, what: String) -> Running {
        let out = tempfile::NamedTempFile::new().expect("a temporary file");
        let err = tempfile::NamedTempFile::new().expect("a temporary file");
        cmd.stdin(Stdio::null())
            .stdout(out.reopen().expect("reopen"))
            .stderr(err.reopen().expect("reopen"));
        let child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
        Running {
            what,
            child,
            out,
            err,
        }
    }

    /// The command line, for messages.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// Waits until `deadline`; a command still running then is killed and
    /// reported as a hang.
    pub fn finish_by(mut self, deadline: Instant) -> Result<Ran, String> {
        loop {
            match self.child.try_wait().expect("wait for a child") {
                Some(status) => {
                    let read =
                        |f: &tempfile::NamedTempFile| std::fs::read(f.path()).unwrap_or_default();
                    return Ok(Ran {
                        status,
                        stdout: read(&self.out),
                        stderr: String::from_utf8_lossy(&read(&self.err)).into_owned(),
                    });
                }
                None if Instant::now() >= deadline => return Err(format!("{}: hangs", self.what)),
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs `ztfs args...`, which must end within `secs`.
pub fn ztfs_within<S: AsRef<OsStr>>(secs: u64, args: &[S]) -> Result<Ran, String> {
    Running::ztfs(args).finish_by(Instant::now() + Duration::from_secs(secs))
}

/// A [`Mount`] that also ends its daemon: unmounted on drop as `Mount`
/// does, then the daemon, if it still runs after a short grace (stuck in
/// work nobody waits for), is killed.
pub struct Guarded {
    pub m: Mount,
    pub pid: i32,
}

impl Guarded {
    /// Mounts `file` with `flags`, asserting success. These tests are of
    /// the daemon's own serving, so passthrough is off unless `flags`
    /// name it (a passed-through file's reads never reach the daemon).
    pub fn new(file: &Path, flags: &[&str]) -> Guarded {
        let mut flags = flags.to_vec();
        if !flags.contains(&"--passthrough") {
            flags.extend(["--passthrough", "off"]);
        }
        let m = Mount::new(file, &flags);
        let pid = m.daemon();
        Guarded { m, pid }
    }

    /// Takes over a mount made some other way, if its daemon runs.
    pub fn adopt(m: Mount) -> Guarded {
        let pid = m.daemon();
        Guarded { m, pid }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        cleanup(self.m.path());
        end_daemon(self.pid, self.m.path());
    }
}

/// Ends the daemon `pid` of `mnt` if it still runs 2 s from now: SIGKILL,
/// but only while its command line still names `mnt` (not a reused pid).
pub fn end_daemon(pid: i32, mnt: &Path) {
    if crate::common::wait_until(Duration::from_secs(2), || !is_alive(pid)) {
        return;
    }
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let ours = cmd
        .split(|&b| b == 0)
        .any(|a| a == mnt.as_os_str().as_bytes());
    if ours {
        eprintln!("daemon {pid} of {} still runs: killing it", mnt.display());
        // SAFETY: kill has no memory effects; failure (already gone) is fine.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        crate::common::wait_until(Duration::from_secs(5), || !is_alive(pid));
    }
}

/// Kills every daemon serving `mnt` (for a mount made by a command that
/// may or may not have succeeded).
pub fn end_daemons_of(mnt: &Path) {
    // Bounded: a daemon that will not die is reported by the test that
    // made it, not waited for here.
    for _ in 0..3 {
        let Some(pid) = crate::common::daemon_pid(mnt) else {
            break;
        };
        cleanup(mnt);
        // SAFETY: as in end_daemon; the pid was just found by its cmdline.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        crate::common::wait_until(Duration::from_secs(5), || !is_alive(pid));
    }
    cleanup(mnt);
}

/// Threads that end by themselves (or on `stop`) and are waited for within
/// a bound; `stop` is set on drop, so a failing test does not leave them
/// spinning.
pub struct Readers<T> {
    pub stop: Arc<AtomicBool>,
    /// Successful reads, all readers together.
    pub reads: Arc<AtomicU64>,
    handles: Vec<(String, JoinHandle<T>)>,
}

impl<T: Send + 'static> Readers<T> {
    pub fn new() -> Readers<T> {
        Readers {
            stop: Arc::new(AtomicBool::new(false)),
            reads: Arc::new(AtomicU64::new(0)),
            handles: Vec::new(),
        }
    }

    /// Starts `f(stop, reads)` as reader `name`.
    pub fn spawn(
        &mut self,
        name: String,
        f: impl FnOnce(Arc<AtomicBool>, Arc<AtomicU64>) -> T + Send + 'static,
    ) {
        let (stop, reads) = (self.stop.clone(), self.reads.clone());
        self.handles
            .push((name, std::thread::spawn(move || f(stop, reads))));
    }

    /// Waits until at least `n` reads have succeeded, up to `secs`.
    pub fn wait_reads(&self, n: u64, secs: u64) -> bool {
        crate::common::wait_until(Duration::from_secs(secs), || self.reads.load(SeqCst) >= n)
    }

    /// Waits for every reader to end, up to `secs` in all; a reader still
    /// blocked then is reported by name (its thread is left to end when
    /// the mount goes away).
    pub fn join_within(&mut self, secs: u64) -> Result<Vec<(String, T)>, String> {
        let done = crate::common::wait_until(Duration::from_secs(secs), || {
            self.handles.iter().all(|(_, h)| h.is_finished())
        });
        if !done {
            let stuck: Vec<&str> = self
                .handles
                .iter()
                .filter(|(_, h)| !h.is_finished())
                .map(|(n, _)| n.as_str())
                .collect();
            return Err(format!("readers still blocked after {secs} s: {stuck:?}"));
        }
        let all = std::mem::take(&mut self.handles);
        Ok(all
            .into_iter()
            .map(|(n, h)| {
                let r = h
                    .join()
                    .unwrap_or_else(|e| panic!("{n}: {}", crate::common::panic_text(&*e)));
                (n, r)
            })
            .collect())
    }
}

impl<T> Drop for Readers<T> {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
    }
}

/// Child processes killed (SIGKILL) on drop unless already gone.
pub struct Children(pub Vec<Child>);

impl Children {
    /// Sends `sig` to every child still running.
    pub fn signal_all(&mut self, sigs: &[i32]) {
        for (i, c) in self.0.iter_mut().enumerate() {
            if let Ok(None) = c.try_wait() {
                kill(c.id() as i32, sigs[i % sigs.len()]);
            }
        }
    }

    /// True once every child has exited, waiting up to `secs`.
    pub fn all_exit_within(&mut self, secs: u64) -> bool {
        crate::common::wait_until(Duration::from_secs(secs), || {
            self.0
                .iter_mut()
                .all(|c| matches!(c.try_wait(), Ok(Some(_))))
        })
    }
}

impl Drop for Children {
    /// Kills what still runs and reaps it, waiting at most 10 s in all: a
    /// process blocked in a FUSE request its daemon is working on cannot
    /// die before the daemon answers or is gone (the guard of the mount
    /// should be dropped first), and is then left for init to reap.
    fn drop(&mut self) {
        for c in &mut self.0 {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
        }
        self.all_exit_within(10);
    }
}

/// CPU time `pid` has used, user and system, in clock ticks (all threads).
pub fn cpu_ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name in parentheses: state is field 3, utime 14,
    // stime 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Clock ticks per second.
pub fn ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as u64
}

/// `VmRSS` of `pid` in KiB.
pub fn rss_kib(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Samples the RSS of `pid` every 20 ms until dropped or [`RssSampler::
/// stop`]ped, keeping the maximum. Above `kill_above` KiB the daemon is
/// killed at once: the test has failed, and a daemon growing without bound
/// would take the machine's memory with it.
pub struct RssSampler {
    stop: Arc<AtomicBool>,
    max: Arc<AtomicU64>,
    samples: Arc<AtomicU64>,
    killed: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl RssSampler {
    pub fn start(pid: i32, kill_above: u64) -> RssSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let max = Arc::new(AtomicU64::new(0));
        let samples = Arc::new(AtomicU64::new(0));
        let killed = Arc::new(AtomicBool::new(false));
        let (s, m, n, k) = (stop.clone(), max.clone(), samples.clone(), killed.clone());
        let handle = std::thread::spawn(move || {
            while !s.load(SeqCst) {
                let Some(rss) = rss_kib(pid) else { break };
                m.fetch_max(rss, SeqCst);
                n.fetch_add(1, SeqCst);
                if rss > kill_above && !k.swap(true, SeqCst) {
                    // SAFETY: kill has no memory effects.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
                // Often enough to see a view rendered whole, which takes
                // GiBs within a fraction of a second.
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        RssSampler {
            stop,
            max,
            samples,
            killed,
            handle: Some(handle),
        }
    }

    /// Stops sampling: (largest RSS in KiB, samples taken, whether the
    /// daemon was killed for exceeding the limit).
    pub fn stop(mut self) -> (u64, u64, bool) {
        self.stop.store(true, SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        (
            self.max.load(SeqCst),
            self.samples.load(SeqCst),
            self.killed.load(SeqCst),
        )
    }
}

impl Drop for RssSampler {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
    }
}

/// `mkfifo(path, 0644)`.
pub fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).expect("no NUL in a path");
    // SAFETY: a valid NUL-terminated path.
    let r = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(
        r,
        0,
        "mkfifo {}: {}",
        path.display(),
        io::Error::last_os_error()
    );
}

/// Wakes anything blocked opening the FIFO `path` for reading (a writer
/// opens and closes it at once, so the reader sees end of file); harmless
/// when nobody waits (the non-blocking open then fails with ENXIO).
pub fn release_fifo(path: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map(drop);
}

/// An errno is one a reader of a mount whose daemon is gone or failing may
/// see: EIO, ENOTCONN, ECONNABORTED (a request in flight when the
/// connection was aborted).
pub fn is_gone_errno(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO | libc::ENOTCONN | libc::ECONNABORTED)
    )
}

/// Writes `bytes` as `dir/name` and returns the path.
pub fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

/// Runs `f` in a thread and returns its result, or `None` when it takes
/// longer than `secs` (the thread is left to end when the mount goes away).
pub fn bounded<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(Duration::from_secs(secs)).ok()
}
