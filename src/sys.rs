//! The few system calls the daemon needs that std does not wrap: fork,
//! setsid, signal masks, unmount. Each is a thin safe wrapper; the `unsafe`
//! of the crate outside the mmap lives here.
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

/// Returns freed heap memory to the system (glibc keeps it otherwise): the
/// daemon starts with the garbage of validation and tree building behind it.
pub fn trim_heap() {
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe { libc::malloc_trim(0) };
}
