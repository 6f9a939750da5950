//! The few system calls the daemon needs that std does not wrap: fork,
//! setsid, signal masks, unmount, and AVX2 where the CPU has it. Each is a
//! thin safe wrapper; the `unsafe` of the crate outside the mmap lives
//! here.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Which side of a fork we are on.
pub enum Forked {
    /// The parent, with the child's pid.
    Parent(i32),
    /// The child.
    Child,
}

/// Forks the process. Must be called while it has a single thread.
pub fn fork() -> io::Result<Forked> {
    // SAFETY: called before any thread is started (the caller's contract),
    // so the child has a consistent copy of the whole address space.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// Starts a new session so the daemon outlives its terminal.
pub fn setsid() {
    // SAFETY: no memory is touched; failure (already a leader) is harmless.
    unsafe { libc::setsid() };
}

/// Points stdin, stdout and stderr at /dev/null.
pub fn detach_stdio() -> io::Result<()> {
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    use std::os::fd::AsRawFd;
    for fd in 0..3 {
        // SAFETY: dup2 on valid descriptors; std's handles stay valid and now
        // refer to /dev/null.
        if unsafe { libc::dup2(null.as_raw_fd(), fd) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn signal_set(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe { libc::sigemptyset(&mut set) };
    for &s in signals {
        // SAFETY: `set` is initialised and `s` is a valid signal number.
        unsafe { libc::sigaddset(&mut set, s) };
    }
    set
}

/// Blocks `signals` in this thread and every thread it starts later, so
/// that only [`wait_signal`] receives them.
pub fn block_signals(signals: &[i32]) -> io::Result<()> {
    let set = signal_set(signals);
    // SAFETY: `set` is a valid sigset_t; the old mask is not needed.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(r))
    }
}

/// Waits up to `timeout` for one of `signals` (which must be blocked).
pub fn wait_signal(signals: &[i32], timeout: std::time::Duration) -> Option<i32> {
    let set = signal_set(signals);
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as _,
    };
    // SAFETY: valid set and timespec; no siginfo wanted.
    let s = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
    (s > 0).then_some(s)
}

/// Unmounts `path`; `lazy` detaches it while files are still open.
pub fn unmount(path: &Path, lazy: bool) -> io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let flags = if lazy { libc::MNT_DETACH } else { 0 };
    // SAFETY: `c` is a valid NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), flags) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Unmounts `path` through the setuid `fusermount3 -u` (`-z`: lazily), as
/// a user who mounted without privileges must: `umount2` refuses them.
/// `FUSERMOUNT_PATH` names another helper, as for fuser's mounts. Busy and
/// not-mounted answers come back as EBUSY and EINVAL; a missing helper as
/// NotFound.
pub fn fusermount_unmount(path: &Path, lazy: bool) -> io::Result<()> {
    let bin = std::env::var_os("FUSERMOUNT_PATH").unwrap_or_else(|| "fusermount3".into());
    let mut cmd = std::process::Command::new(bin);
    cmd.arg("-u");
    if lazy {
        cmd.arg("-z");
    }
    let out = cmd
        .arg("--")
        .arg(path)
        .stdin(std::process::Stdio::null())
        .output()?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr).trim().to_string();
    Err(if text.contains("busy") {
        io::Error::from_raw_os_error(libc::EBUSY)
    } else if text.contains("not found in") {
        io::Error::from_raw_os_error(libc::EINVAL)
    } else {
        io::Error::other(text)
    })
}

/// The real user id.
pub fn uid() -> u32 {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() }
}

/// The real group id.
pub fn gid() -> u32 {
    // SAFETY: getgid has no preconditions.
    unsafe { libc::getgid() }
}

/// The effective user id: the owner of the files this process makes.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// The effective user is root.
pub fn is_root() -> bool {
    euid() == 0
}

/// True when this process may read and write `path` (`access(2)`).
pub fn can_read_write(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::R_OK | libc::W_OK) == 0 }
}

/// Returns freed heap memory to the system (glibc keeps it otherwise): the
/// daemon starts with the garbage of validation and tree building behind it.
pub fn trim_heap() {
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe { libc::malloc_trim(0) };
}

/// True when thread `tid` (the caller of a FUSE request) has gone or is
/// dying: it no longer exists, or a SIGKILL is pending for it. A process
/// killed (or Ctrl-C'd, when SIGINT's default action applies) while its
/// request is in the daemon waits for the answer with SIGKILL pending,
/// since fuser does not handle FUSE_INTERRUPT; this is how the daemon
/// learns that nobody wants the answer. `tid` 0 (unknown) is never gone.
pub fn requester_gone(tid: u32) -> bool {
    if tid == 0 {
        return false;
    }
    let Ok(status) = std::fs::read_to_string(format!("/proc/{tid}/status")) else {
        return true;
    };
    const SIGKILL_BIT: u64 = 1 << (libc::SIGKILL - 1);
    status.lines().any(|l| {
        let Some((key, value)) = l.split_once(':') else {
            return false;
        };
        let pending = matches!(key, "SigPnd" | "ShdPnd")
            && u64::from_str_radix(value.trim(), 16).is_ok_and(|m| m & SIGKILL_BIT != 0);
        let dead = key == "State" && matches!(value.trim().chars().next(), Some('Z' | 'X'));
        pending || dead
    })
}

/// The current length of an open file: one `fstat`, which is cheaper than
/// std's `statx` with an empty path (no path to copy in); the mount does
/// this on every read of the map.
pub fn file_len(file: &std::fs::File) -> io::Result<u64> {
    use std::os::fd::AsRawFd;
    // SAFETY: a zeroed stat is a valid out-parameter; the fd is open for
    // as long as `file` is borrowed.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(file.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.st_size as u64)
}

/// The coarse wall clock, seconds and nanoseconds: the clock a filesystem
/// stamps a file's times from (before the kernel's fine-grained
/// timestamps, Linux 6.13, always; since then, unless the times were read
/// since the last change).
pub fn coarse_now() -> (i64, i64) {
    // SAFETY: a zeroed timespec is a valid out-parameter.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: CLOCK_REALTIME_COARSE exists on every Linux; `ts` is valid.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
    (ts.tv_sec, ts.tv_nsec)
}

/// The pid of a process that has exited and been reaped, for tests of
/// [`requester_gone`] and what relies on it.
#[cfg(test)]
pub(crate) fn reaped_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// The state of this thread's guarded map reads: 0 off, 1 armed, 2 a page
/// vanished under a read. Const-initialised, so the signal handler may touch it.
mod bus {
    use std::cell::Cell;
    thread_local! {
        pub static STATE: Cell<u8> = const { Cell::new(0) };
    }
}

static PAGE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// SIGBUS during a guarded read: the mapped file was truncated under it.
/// Maps a zero page over the faulting page so the read completes (with
/// zeros), and records the fault so the caller discards the result. Outside
/// a guarded read the default action (a crash) is restored and the fault
/// recurs, as if no handler were installed.
extern "C" fn on_sigbus(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    let armed = bus::STATE.with(|s| s.get()) != 0;
    let page = PAGE.load(std::sync::atomic::Ordering::Relaxed);
    // SAFETY: `info` is the kernel's siginfo for this SIGBUS.
    let addr = unsafe { (*info).si_addr() } as usize;
    if armed && page != 0 && addr != 0 {
        let start = (addr & !(page - 1)) as *mut libc::c_void;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED;
        // SAFETY: replaces one page of a read-only file mapping that no longer
        // has a file page behind it; mmap is async-signal-safe.
        let p = unsafe { libc::mmap(start, page, libc::PROT_READ, flags, -1, 0) };
        if p != libc::MAP_FAILED {
            bus::STATE.with(|s| s.set(2));
            return;
        }
    }
    // SAFETY: restoring the default disposition is async-signal-safe.
    unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
}

/// Installs the SIGBUS handler behind [`guarded`] (once per process).
pub fn install_bus_guard() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        PAGE.store(
            page.max(4096) as usize,
            std::sync::atomic::Ordering::Relaxed,
        );
        // SAFETY: a zeroed sigaction with our handler, SA_SIGINFO, and an
        // empty mask is a valid argument.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
        }
    });
}

/// Runs `f`, which reads a file mapping, so that a page vanishing under it
/// (the file truncated in place) makes this return `None` instead of killing
/// the process. Needs [`install_bus_guard`]; without it a fault still kills.
pub fn guarded<T>(f: impl FnOnce() -> T) -> Option<T> {
    use std::sync::atomic::{compiler_fence, Ordering};
    let outer = bus::STATE.with(|s| s.replace(1));
    // The reads in `f` must not move outside the armed window.
    compiler_fence(Ordering::SeqCst);
    let out = f();
    compiler_fence(Ordering::SeqCst);
    let faulted = bus::STATE.with(|s| s.get()) == 2;
    // A fault inside a nested guard taints the outer one too.
    bus::STATE.with(|s| s.set(if outer != 0 && faulted { 2 } else { outer }));
    (!faulted).then_some(out)
}

/// True when a page vanished under this thread's guarded read so far:
/// what it read since may be zeros, so nothing from it may leave the
/// process (a writer checks this before each write).
pub fn fault_seen() -> bool {
    bus::STATE.with(|s| s.get()) == 2
}

/// An error once [`fault_seen`]: for a writer to call before each write.
pub fn no_fault() -> crate::error::Result<()> {
    match fault_seen() {
        true => Err(truncated_under_read()),
        false => Ok(()),
    }
}

/// The error of a read that a truncation of the mapped file spoiled.
pub fn truncated_under_read() -> crate::error::Error {
    crate::error::Error::io(
        "backing file",
        io::Error::new(io::ErrorKind::UnexpectedEof, "truncated under a read"),
    )
}

/// [`guarded`] for a fallible read: a file truncated in place under it
/// (between a length check and the read) gives an error instead of
/// killing the process.
pub fn map_read<T>(f: impl FnOnce() -> crate::error::Result<T>) -> crate::error::Result<T> {
    guarded(f).unwrap_or_else(|| Err(truncated_under_read()))
}

/// An anonymous memory file (`memfd_create`) of `len` bytes, closed on
/// exec; it vanishes with its last reference, so a crash leaves nothing.
pub fn memfd(name: &str, len: u64) -> io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    let name: Vec<u8> = name
        .bytes()
        .filter(|&b| b != 0)
        .take(200)
        .chain([0])
        .collect();
    // By the system call, not glibc's wrapper (glibc 2.27): the wheel's
    // binary links against glibc 2.17 (manylinux2014).
    // SAFETY: `name` is NUL-terminated; the returned descriptor is ours.
    let fd = unsafe { libc::syscall(libc::SYS_memfd_create, name.as_ptr(), libc::MFD_CLOEXEC) };
    let fd = i32::try_from(fd)
        .ok()
        .filter(|&fd| fd >= 0)
        .ok_or_else(io::Error::last_os_error)?;
    // SAFETY: a fresh descriptor owned by no one else.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    allocate(&file, len)?;
    Ok(file)
}

/// Gives a new memory file its `len` bytes, allocated now where the
/// filesystem can (`fallocate`): a copy into pages allocated up front ran
/// at 3.5 GB/s in every run measured, into pages allocated as it writes at
/// 1.4 to 3.4 GB/s. A full tmpfs fails here rather than mid-copy.
fn allocate(file: &std::fs::File, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let n = libc::off_t::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "length past i64"))?;
    // SAFETY: the descriptor is open; no memory is passed.
    if n == 0 || unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, n) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOSPC) => Err(e),
        _ => file.set_len(len),
    }
}

/// A tmpfs of `size` bytes backed by huge pages (`huge=always`), mounted
/// nowhere: a detached mount (`fsopen`, `fsconfig`, `fsmount`) that lives
/// as long as the returned descriptor, so a crash leaves no mount behind.
/// Files in it read as fast as the page cache's large folios, where a
/// memfd's 4 KiB pages read at about half that. Needs CAP_SYS_ADMIN.
pub fn huge_tmpfs(size: u64) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    const FSOPEN_CLOEXEC: libc::c_uint = 1;
    const FSCONFIG_SET_STRING: libc::c_uint = 1;
    const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
    const FSMOUNT_CLOEXEC: libc::c_uint = 1;
    let check = |r: libc::c_long| {
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as i32)
        }
    };
    // SAFETY: fsopen takes a NUL-terminated type name; the descriptor is ours.
    let fs = check(unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) })?;
    // SAFETY: a fresh descriptor owned by no one else.
    let fs = unsafe { std::os::fd::OwnedFd::from_raw_fd(fs) };
    let set = |key: &std::ffi::CStr, value: &str| {
        let value =
            CString::new(value).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // SAFETY: key and value are NUL-terminated strings that outlive the call.
        check(unsafe {
            libc::syscall(
                libc::SYS_fsconfig,
                std::os::fd::AsRawFd::as_raw_fd(&fs),
                FSCONFIG_SET_STRING,
                key.as_ptr(),
                value.as_ptr(),
                0,
            )
        })
    };
    set(c"huge", "always")?;
    set(c"size", &size.max(1 << 21).to_string())?;
    set(c"mode", "0700")?;
    // SAFETY: no pointers; the descriptor is valid.
    check(unsafe {
        let null = std::ptr::null::<libc::c_char>();
        libc::syscall(
            libc::SYS_fsconfig,
            std::os::fd::AsRawFd::as_raw_fd(&fs),
            FSCONFIG_CMD_CREATE,
            null,
            null,
            0,
        )
    })?;
    // SAFETY: no pointers; the descriptor is valid.
    let mnt = check(unsafe {
        libc::syscall(
            libc::SYS_fsmount,
            std::os::fd::AsRawFd::as_raw_fd(&fs),
            FSMOUNT_CLOEXEC,
            0,
        )
    })?;
    // SAFETY: a fresh descriptor owned by no one else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(mnt) })
}

/// An unnamed read-write file of `len` bytes in the filesystem whose root
/// `dir` is (a descriptor, as [`huge_tmpfs`] gives).
pub fn unnamed_file_at(dir: &std::os::fd::OwnedFd, len: u64) -> io::Result<std::fs::File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    // SAFETY: "." is NUL-terminated; the descriptor is valid.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c".".as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor owned by no one else.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    allocate(&file, len)?;
    Ok(file)
}

/// An unnamed file (`O_TMPFILE`) in directory `dir`, read-write: it has no
/// name to leave behind after a crash.
pub fn unnamed_file_in(dir: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(dir)
}

/// Shares `len` bytes of `src` at `src_offset` into `dst` at `dst_offset`
/// (`FICLONERANGE`): no data is copied, the extents are shared. Offsets
/// and length must be multiples of the filesystem block, except a length
/// reaching the end of `src`. Fails where the filesystem cannot share
/// extents (EOPNOTSUPP, EXDEV, EINVAL).
pub fn clone_range(
    src: &std::fs::File,
    src_offset: u64,
    len: u64,
    dst: &std::fs::File,
    dst_offset: u64,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let arg = libc::file_clone_range {
        src_fd: i64::from(src.as_raw_fd()),
        src_offset,
        src_length: len,
        dest_offset: dst_offset,
    };
    // SAFETY: FICLONERANGE reads the struct it is given; both descriptors
    // are open for the call's duration.
    let r = unsafe { libc::ioctl(dst.as_raw_fd(), libc::FICLONERANGE, &arg) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Copies `len` bytes of `src` at `src_offset` into `dst` at `dst_offset`
/// inside the kernel (`sendfile`): one copy from the page cache, no buffer
/// of ours. Moves `dst`'s file position.
pub fn send_range(
    src: &std::fs::File,
    src_offset: u64,
    len: u64,
    mut dst: &std::fs::File,
    dst_offset: u64,
) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    use std::os::fd::AsRawFd;
    let too_big = || io::Error::new(io::ErrorKind::InvalidInput, "range past i64");
    let mut off = libc::off_t::try_from(src_offset).map_err(|_| too_big())?;
    let end = src_offset.checked_add(len).ok_or_else(too_big)?;
    dst.seek(SeekFrom::Start(dst_offset))?;
    while (off as u64) < end {
        // The kernel moves at most 0x7ffff000 bytes a call.
        let want = (end - off as u64).min(1 << 30) as usize;
        // SAFETY: both descriptors are open for the call; `off` is ours.
        let n = unsafe { libc::sendfile(dst.as_raw_fd(), src.as_raw_fd(), &mut off, want) };
        match n {
            n if n > 0 => {}
            0 => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// Tells the kernel `[offset, offset + len)` of `file` will not be needed
/// soon, so its page cache may go (the bytes now live in a memory clone).
pub fn drop_cache(file: &std::fs::File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(off), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: advice only; no memory is touched.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), off, len, libc::POSIX_FADV_DONTNEED);
    }
}

/// Starts writing `[offset, offset + len)` of `file` back to disk without
/// waiting (`sync_file_range(SYNC_FILE_RANGE_WRITE)`), so that a writer
/// that syncs at the end finds most of it written. Advice only: errors
/// are the final sync's to report.
pub fn start_writeback(file: &std::fs::File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(off), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: a request about the file's pages; no memory is touched.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), off, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

/// Bytes of RAM (`MemTotal`), or 4 GiB when it cannot be read.
pub fn memory_total() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    (text.lines())
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(4 << 30, |kib| kib.saturating_mul(1024))
}

/// Raises this process's soft limit on open files to its hard limit: a
/// model of many files (shards, a checkpoint's files, `.npy` inputs) keeps
/// one descriptor per file, and the usual soft limit (1024) is far below
/// the usual hard one. Nothing changes when the limit cannot be read.
pub fn raise_open_file_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out-parameter, then a valid in-parameter.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// This process's limit on open files, (soft, hard); `None` when it
/// cannot be read. `RLIM_INFINITY` stands for no limit.
pub fn open_file_limit() -> Option<(libc::rlim_t, libc::rlim_t)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out-parameter.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    (got == 0).then_some((lim.rlim_cur, lim.rlim_max))
}

/// Descriptors a process needs besides one per model file (its standard
/// streams, the root, a mount's device and threads, a temporary file),
/// with room: what the advice of [`explain_open_limit`] adds.
const OTHER_FILES: usize = 64;

/// An open refused for the limit on open files, said plainly
/// ([`explain_open_limit`]).
#[derive(Debug)]
pub struct OpenLimit(String);

impl std::fmt::Display for OpenLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OpenLimit {}

/// True for an open refused for the limit on open files (EMFILE, this
/// process's; ENFILE, the system's), said plainly or not.
pub fn is_open_limit(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
        || e.get_ref().is_some_and(|r| r.is::<OpenLimit>())
}

/// `e`, said plainly when it is an open refused for the limit on open
/// files ([`is_open_limit`]), for a model that holds its `files` files
/// open together (a split GGUF model, a sharded checkpoint, a folder's
/// files): how many, the limit, and how to raise it. Any other error as
/// it is.
pub fn explain_open_limit(e: io::Error, files: usize) -> io::Error {
    let why = match e.raw_os_error() {
        Some(libc::EMFILE) => {
            let limit = match open_file_limit() {
                Some((soft, hard)) => format!("{soft} (`ulimit -n`; hard limit {hard})"),
                None => "fewer".to_string(),
            };
            let need = files.saturating_add(OTHER_FILES);
            format!(
                "too many open files (os error {}): the model has {files} files, each held open, and this process may open {limit}; raise the limit, e.g. `ulimit -n {need}` in the shell that runs ztfs (past the hard limit as root: `ulimit -Hn`, limits.conf, systemd's LimitNOFILE), and run it again",
                libc::EMFILE
            )
        }
        Some(libc::ENFILE) => format!(
            "too many open files in the system (os error {}): the model has {files} files, each held open, and the system's table of open files is full (/proc/sys/fs/file-nr); close other files or raise fs.file-max, and run it again",
            libc::ENFILE
        ),
        _ => return e,
    };
    io::Error::new(e.kind(), OpenLimit(why))
}

/// Why the daemon cannot register backing files, if it visibly cannot:
/// passthrough needs CAP_SYS_ADMIN (bit 21 of the effective set).
pub fn lacks_sys_admin() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let eff = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    let bits = u64::from_str_radix(eff.trim(), 16).ok()?;
    (bits & (1 << 21) == 0)
        .then(|| "the daemon lacks CAP_SYS_ADMIN (mount as root to pass files through)".to_string())
}

/// Copies up to `len` bytes from `src` at `src_offset` to `dst` at
/// `dst_offset` inside the kernel (`copy_file_range`, which shares the
/// blocks on a filesystem that can); returns how many it copied, 0 at the
/// source's end. Neither file's position moves.
pub fn copy_file_range(
    src: &std::fs::File,
    src_offset: u64,
    dst: &std::fs::File,
    dst_offset: u64,
    len: usize,
) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let too_far = || io::Error::from(io::ErrorKind::InvalidInput);
    let mut off_in = i64::try_from(src_offset).map_err(|_| too_far())?;
    let mut off_out = i64::try_from(dst_offset).map_err(|_| too_far())?;
    // By the system call, as memfd does: glibc's wrapper is 2.27's.
    // SAFETY: both offsets are ours, passed by pointer for the kernel to
    // advance; no other memory is touched.
    let n = unsafe {
        libc::syscall(
            libc::SYS_copy_file_range,
            src.as_raw_fd(),
            &mut off_in,
            dst.as_raw_fd(),
            &mut off_out,
            len,
            0,
        )
    };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// The threads this process may run at once, asked once: std asks the
/// cgroup's files each time (opens and reads: tens of microseconds, which
/// the dequantizer's reads paid once each).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Defines a function whose body is compiled twice, for the x86-64
/// baseline (SSE2) and for AVX2, and runs the AVX2 one where the CPU has
/// it: the statistics' wide loops, on twice the lanes. The numbers are the
/// same either way (no operation changes its rounding with the width);
/// the body is best a small loop the compiler sees whole.
macro_rules! wide {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$m])*
        #[inline]
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                #[target_feature(enable = "avx2")]
                fn avx2($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                // SAFETY: the CPU has AVX2 (checked just above), the one
                // requirement of running code compiled for it.
                #[allow(unsafe_code)]
                return unsafe { avx2($($arg),*) };
            }
            body($($arg),*)
        }
    };
}
pub(crate) use wide;

#[cfg(test)]
mod tests {
    use std::io::Write;

    /// An open refused for the limit on open files is said with the file
    /// count and the `ulimit -n` to use, and stays known as such; any
    /// other error is left as it is.
    #[test]
    fn an_open_over_the_file_limit_says_how_to_raise_it() {
        let e = super::explain_open_limit(std::io::Error::from_raw_os_error(libc::EMFILE), 100);
        let said = e.to_string();
        assert!(
            said.contains("100 files") && said.contains("`ulimit -n 164`"),
            "{said}"
        );
        assert!(super::is_open_limit(&e));
        let e = super::explain_open_limit(std::io::Error::from_raw_os_error(libc::ENFILE), 9);
        assert!(e.to_string().contains("fs.file-max"), "{e}");
        let other = super::explain_open_limit(std::io::Error::from_raw_os_error(libc::ENOENT), 9);
        assert_eq!(other.raw_os_error(), Some(libc::ENOENT));
        assert!(!super::is_open_limit(&other));
    }

    #[test]
    fn a_live_thread_is_not_gone_and_a_reaped_one_is() {
        assert!(!super::requester_gone(std::process::id()));
        assert!(!super::requester_gone(0));
        assert!(super::requester_gone(super::reaped_pid()));
    }

    #[test]
    fn a_read_of_a_truncated_mapping_is_caught_not_fatal() {
        super::install_bus_guard();
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&vec![7u8; 3 * 4096]).unwrap();
        let store = crate::store::Store::open(f.path()).unwrap();
        f.as_file().set_len(4096).unwrap();
        let bytes = store.map().unwrap();
        assert_eq!(super::guarded(|| bytes[0]), Some(7), "a page still backed");
        let past = super::guarded(|| bytes[2 * 4096 + 1]);
        assert_eq!(past, None, "the vanished page is reported");
        assert_eq!(
            super::guarded(|| bytes[100]),
            Some(7),
            "later reads still work"
        );
    }
}
