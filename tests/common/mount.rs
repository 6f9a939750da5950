//! Real mounts: a guard that never leaves a mount behind, the mount table,
//! the daemon's process, and walks of a mounted tree.

use super::*;

/// A mount of a model on a fresh temporary directory, unmounted on drop
/// (`ztfs unmount`, then `umount -l` if that fails), so a failing test never
/// leaves a mount behind. The daemon logs to a file beside the mount point,
/// printed when the test is failing.
pub struct Mount {
    mnt: PathBuf,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Mount {
    /// Mounts `file` with extra `flags`, asserting success.
    pub fn new(file: &Path, flags: &[&str]) -> Mount {
        let m = Mount::unmounted();
        let out = m.mount(file, flags);
        assert!(
            out.status.success(),
            "mount {}: {}",
            file.display(),
            m.report(&out)
        );
        assert!(
            is_mounted(&m.mnt),
            "{} is not in mountinfo",
            m.mnt.display()
        );
        m
    }

    /// A fresh, empty mount point with nothing mounted yet.
    pub fn unmounted() -> Mount {
        let dir = tempfile::Builder::new()
            .prefix("ztfs-mount-test-")
            .tempdir()
            .expect("create a temporary directory");
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).expect("create the mount point");
        Mount {
            log: dir.path().join("daemon.log"),
            mnt,
            _dir: dir,
        }
    }

    /// Mounts `file` with extra `flags` and environment `env`, asserting
    /// success.
    pub fn with_env(file: &Path, flags: &[&str], env: &[(&str, String)]) -> Mount {
        let m = Mount::unmounted();
        let out = m.mount_env(file, flags, env);
        assert!(
            out.status.success(),
            "mount {}: {}",
            file.display(),
            m.report(&out)
        );
        m
    }

    /// Runs `ztfs mount FILE MNT flags...` and returns what it did.
    pub fn mount(&self, file: &Path, flags: &[&str]) -> Output {
        self.mount_env(file, flags, &[])
    }

    /// [`Mount::mount`] with environment `env` added.
    pub fn mount_env(&self, file: &Path, flags: &[&str], env: &[(&str, String)]) -> Output {
        let mut args: Vec<&OsStr> = vec!["mount".as_ref(), file.as_os_str(), self.mnt.as_os_str()];
        if !flags.contains(&"--log-level") {
            args.extend(["--log-level", "info"].map(OsStr::new));
        }
        args.push(OsStr::new("--log-file"));
        args.push(self.log.as_os_str());
        args.extend(flags.iter().map(OsStr::new));
        ztfs_env(&args, env)
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.mnt
    }

    /// A path below the mount point.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.mnt.join(rel)
    }

    /// The daemon's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn report(&self, out: &Output) -> String {
        format!(
            "{}\nstderr: {}\ndaemon log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            self.log()
        )
    }

    /// The daemon's pid, found by its command line.
    pub fn daemon(&self) -> i32 {
        daemon_pid(&self.mnt).unwrap_or_else(|| panic!("no daemon for {}", self.mnt.display()))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("daemon log of {}:\n{}", self.mnt.display(), self.log());
        }
        cleanup(&self.mnt);
    }
}

/// Unmounts `mnt` if it is mounted: `ztfs unmount`, else `umount -l`.
pub fn cleanup(mnt: &Path) {
    if !is_mounted(mnt) {
        return;
    }
    let out = ztfs(&[OsStr::new("unmount"), mnt.as_os_str()]);
    if !out.status.success() || is_mounted(mnt) {
        eprintln!("cleanup: {}", describe(&["unmount"], &out));
        let _ = Command::new("umount").arg("-l").arg(mnt).status();
    }
}

/// Mount points of this mount namespace.
pub fn mount_points() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").expect("read mountinfo");
    text.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(ztfs::mounts::unescape(p)))
        .collect()
}

/// The filesystem type and source of the mount on `mnt`, from mountinfo.
pub fn mount_source(mnt: &Path) -> Option<(String, String)> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").expect("read mountinfo");
    let line = text.lines().find(|l| l.split(' ').nth(4) == mnt.to_str())?;
    // After " - ": the type, the source, the superblock options.
    let mut f = line.split_once(" - ")?.1.split(' ');
    let (fstype, source) = (f.next()?, f.next()?);
    Some((
        fstype.into(),
        ztfs::mounts::unescape(source).into_string().ok()?,
    ))
}

/// True when `mnt` is a mount point now.
pub fn is_mounted(mnt: &Path) -> bool {
    mount_points().iter().any(|p| p == mnt)
}

/// The process serving `mnt`: a `ztfs mount` whose arguments include it.
pub fn daemon_pid(mnt: &Path) -> Option<i32> {
    let me = std::process::id() as i32;
    let want = mnt.as_os_str().as_bytes();
    std::fs::read_dir("/proc").ok()?.find_map(|e| {
        let pid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        // `ztfs mount ... MNT`, or as mount.fuse3 runs it, `ztfs SRC MNT -o ..`.
        let ztfs = args.first().is_some_and(|a| a.ends_with(b"ztfs"));
        let ours = (ztfs || args.contains(&b"mount".as_slice())) && args.contains(&want);
        (pid != me && ours && is_alive(pid)).then_some(pid)
    })
}

/// A memory figure of `pid` from /proc/PID/status, in KiB: `VmRSS`
/// (resident now) or `VmHWM` (the peak so far).
pub fn status_kib(pid: i32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = (status.lines())
        .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// True while any thread of `pid` runs. A zombie counts as gone (our pid 1
/// may not reap it), but only once its other threads are gone too: they
/// share the descriptor table, and /dev/fuse closes with the last of them.
pub fn is_alive(pid: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    let field = |k: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .map(str::trim)
    };
    let zombie = field("State:").is_some_and(|s| s.starts_with(['Z', 'X']));
    let threads: u32 = field("Threads:").and_then(|t| t.parse().ok()).unwrap_or(0);
    !zombie || threads > 1
}

/// Sends `sig` to `pid`.
pub fn kill(pid: i32, sig: i32) {
    // SAFETY: kill has no memory effects.
    let r = unsafe { libc::kill(pid, sig) };
    assert_eq!(r, 0, "kill({pid}, {sig}): {}", io::Error::last_os_error());
}

/// Kind of an entry found by [`walk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
}

/// Every entry below `root`, by relative path, with its kind as `lstat`
/// says; the listing of each directory comes from [`dir_names`], so
/// entries named `.` or `..` beyond the two real ones would fail the walk.
pub fn walk(root: &Path) -> BTreeMap<PathBuf, Kind> {
    let mut out = BTreeMap::new();
    walk_into(root, Path::new(""), &mut out);
    out
}

fn walk_into(root: &Path, rel: &Path, out: &mut BTreeMap<PathBuf, Kind>) {
    for name in dir_names(&root.join(rel)) {
        let path = rel.join(&name);
        let meta = std::fs::symlink_metadata(root.join(&path))
            .unwrap_or_else(|e| panic!("lstat {}: {e}", path.display()));
        let kind = if meta.is_dir() { Kind::Dir } else { Kind::File };
        assert!(
            meta.is_dir() || meta.is_file(),
            "{}: neither file nor directory",
            path.display()
        );
        assert!(
            out.insert(path.clone(), kind).is_none(),
            "{} listed twice",
            path.display()
        );
        if kind == Kind::Dir {
            walk_into(root, &path, out);
        }
    }
}

/// The names a directory lists, as `readdir(3)` returns them, asserting
/// that `.` and `..` come exactly once each and leaving them out.
pub fn dir_names(dir: &Path) -> Vec<OsString> {
    dir_entries(dir).into_iter().map(|e| e.0).collect()
}

/// [`dir_names`] with each entry's kind as the listing's `d_type` says.
pub fn dir_entries(dir: &Path) -> Vec<(OsString, Kind)> {
    let c = CString::new(dir.as_os_str().as_bytes()).expect("no NUL in a path");
    // SAFETY: a valid NUL-terminated path.
    let d = unsafe { libc::opendir(c.as_ptr()) };
    assert!(
        !d.is_null(),
        "opendir {}: {}",
        dir.display(),
        io::Error::last_os_error()
    );
    let mut names = Vec::new();
    loop {
        // SAFETY: `d` is an open directory stream; the entry is valid until
        // the next readdir, and its name is copied out before that.
        let e = unsafe { libc::readdir(d) };
        if e.is_null() {
            break;
        }
        let (name, d_type) =
            unsafe { (std::ffi::CStr::from_ptr((*e).d_name.as_ptr()), (*e).d_type) };
        let kind = if d_type == libc::DT_DIR {
            Kind::Dir
        } else {
            Kind::File
        };
        names.push((OsString::from_vec(name.to_bytes().to_vec()), kind));
    }
    // SAFETY: `d` came from opendir and is closed once.
    unsafe { libc::closedir(d) };
    for dot in [".", ".."] {
        let n = names.iter().filter(|n| n.0 == dot).count();
        assert_eq!(n, 1, "{}: {n} entries named {dot:?}", dir.display());
    }
    names.retain(|n| n.0 != "." && n.0 != "..");
    names
}

/// Every file below `dir`, relative, with its bytes (or the error kind).
pub fn read_tree(dir: &Path) -> Vec<(PathBuf, Result<Vec<u8>, std::io::ErrorKind>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                out.push((rel, std::fs::read(&path).map_err(|e| e.kind())));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Reading `file` fails with EIO, and the daemon's `log` says the object
/// changed since it was opened (a remote model replaced under a mount).
pub fn assert_fails_as_changed(file: &Path, log: impl Fn() -> String) {
    match std::fs::read(file) {
        Ok(b) => panic!(
            "{}: {} bytes read from the replaced object",
            file.display(),
            b.len()
        ),
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EIO), "{}: {e}", file.display()),
    }
    let log = log();
    assert!(log.contains("changed since it was opened"), "{log}");
}
