//! System calls std does not wrap, and what the tests read with them.

use super::*;

fn cstr(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).expect("no NUL in a path")
}

/// A libc return value as a result carrying errno.
fn check(r: impl Into<i64>) -> io::Result<i64> {
    let r = r.into();
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `open(path, flags)`, closing the descriptor at once.
pub fn open_flags(path: &Path, flags: i32) -> io::Result<()> {
    // SAFETY: a valid path.
    let fd = check(unsafe { libc::open(cstr(path).as_ptr(), flags, 0o644) })?;
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd as i32) };
    Ok(())
}

pub fn chmod(path: &Path, mode: u32) -> io::Result<()> {
    // SAFETY: a valid path.
    check(unsafe { libc::chmod(cstr(path).as_ptr(), mode) }).map(drop)
}

/// Truncates the backing file `file` in place to `len` bytes (same inode),
/// as a writer would under a mount.
pub fn cut(file: &Path, len: u64) {
    std::fs::File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_len(len)
        .unwrap();
}

pub fn truncate(path: &Path) -> io::Result<()> {
    // SAFETY: a valid path.
    check(unsafe { libc::truncate(cstr(path).as_ptr(), 0) }).map(drop)
}

pub fn mknod(path: &Path) -> io::Result<()> {
    // SAFETY: a valid path.
    check(unsafe { libc::mknod(cstr(path).as_ptr(), libc::S_IFREG | 0o644, 0) }).map(drop)
}

/// Sets the access and modification times to now.
pub fn utimes_now(path: &Path) -> io::Result<()> {
    let p = cstr(path);
    // SAFETY: a valid path; null times mean now.
    check(unsafe { libc::utimensat(libc::AT_FDCWD, p.as_ptr(), std::ptr::null(), 0) }).map(drop)
}

pub fn set_xattr(path: &Path, name: &str, value: &[u8]) -> io::Result<()> {
    let (p, n) = (cstr(path), CString::new(name).unwrap());
    let v = value.as_ptr().cast();
    // SAFETY: valid path and name; `v` holds `value.len()` bytes.
    check(unsafe { libc::setxattr(p.as_ptr(), n.as_ptr(), v, value.len(), 0) } as i64).map(drop)
}

pub fn remove_xattr(path: &Path, name: &str) -> io::Result<()> {
    let (p, n) = (cstr(path), CString::new(name).unwrap());
    // SAFETY: valid path and name.
    check(unsafe { libc::removexattr(p.as_ptr(), n.as_ptr()) }).map(drop)
}

/// The extended attribute names of `path`.
pub fn list_xattrs(path: &Path) -> Vec<String> {
    let p = cstr(path);
    // SAFETY: a valid path; size 0 asks for the length.
    let n = check(unsafe { libc::listxattr(p.as_ptr(), std::ptr::null_mut(), 0) } as i64);
    let mut buf = vec![0u8; n.expect("listxattr") as usize];
    // SAFETY: the buffer holds `buf.len()` bytes.
    let m = unsafe { libc::listxattr(p.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    assert_eq!(m as usize, buf.len(), "listxattr {}", path.display());
    let names = buf.split(|&b| b == 0).filter(|s| !s.is_empty());
    names
        .map(|s| String::from_utf8(s.to_vec()).expect("UTF-8 names"))
        .collect()
}

/// An extended attribute's value, asking for its length first.
pub fn get_xattr(path: &Path, name: &str) -> io::Result<Vec<u8>> {
    let (p, n) = (cstr(path), CString::new(name).unwrap());
    // SAFETY: valid path and name; size 0 asks for the length.
    let len =
        check(unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), std::ptr::null_mut(), 0) } as i64)?;
    get_xattr_sized(path, name, len as usize)
}

/// An extended attribute's value read into a buffer of `size` bytes.
pub fn get_xattr_sized(path: &Path, name: &str, size: usize) -> io::Result<Vec<u8>> {
    let (p, n) = (cstr(path), CString::new(name).unwrap());
    let mut buf = vec![0u8; size];
    // SAFETY: the buffer holds `size` bytes.
    let r = unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), size) };
    buf.truncate(check(r as i64)? as usize);
    Ok(buf)
}

pub fn statvfs(path: &Path) -> io::Result<libc::statvfs> {
    // SAFETY: statvfs is plain data, filled in by the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid path and a valid out-pointer.
    check(unsafe { libc::statvfs(cstr(path).as_ptr(), &mut st) })?;
    Ok(st)
}

/// A 64-bit LCG with a fixed seed, for reproducible random reads.
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        Lcg(seed)
    }

    /// A number in `[0, n)` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// The first `len` bytes of `f` through a private read-only `mmap`.
pub fn mmap_read(f: &std::fs::File, len: usize) -> Vec<u8> {
    use std::os::fd::AsRawFd;
    // SAFETY: a private read-only map of a file we hold open, copied out
    // and unmapped before return.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED, "mmap");
        let v = std::slice::from_raw_parts(p as *const u8, len).to_vec();
        libc::munmap(p, len);
        v
    }
}

/// The errno of a failed call, or a panic naming what was expected.
pub fn errno_of<T>(r: io::Result<T>, what: &str) -> i32 {
    match r {
        Ok(_) => panic!("{what}: succeeded, expected a failure"),
        Err(e) => e
            .raw_os_error()
            .unwrap_or_else(|| panic!("{what}: {e} has no errno")),
    }
}
