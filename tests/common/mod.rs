//! Helpers for the tests that run the real binary and mount for real: the
//! corpus and its table, `ztfs` subcommands as oracles, a mount guard that
//! never leaves a mount behind, tree walks, daemon lookup, and a small JSON
//! reader for `ztfs ls --json` and `meta.json` (the crate has no JSON
//! dependency to lend).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub use json::Json;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_ztfs");

/// `corpus/` at the crate root.
pub fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Runs `ztfs args...`.
pub fn ztfs<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run the ztfs binary")
}

/// Runs `ztfs args...`, asserts exit 0 and returns stdout.
pub fn ztfs_ok<S: AsRef<OsStr>>(args: &[S]) -> Vec<u8> {
    let out = ztfs(args);
    assert!(out.status.success(), "{}", describe(args, &out));
    out.stdout
}

/// The command line and what it printed, for assertion messages.
pub fn describe<S: AsRef<OsStr>>(args: &[S], out: &Output) -> String {
    let line: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
    format!(
        "ztfs {}: {}\nstdout: {}\nstderr: {}",
        line.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `ztfs cat [--raw] FILE OBJECT PART`: the bytes, or stderr on failure.
pub fn cat(file: &Path, object: &str, part: &str, raw: bool) -> Result<Vec<u8>, String> {
    let mut args: Vec<&OsStr> = vec!["cat".as_ref()];
    if raw {
        args.push("--raw".as_ref());
    }
    // After `--`, names that look like flags stay positionals.
    args.extend([
        "--".as_ref(),
        file.as_os_str(),
        object.as_ref(),
        part.as_ref(),
    ]);
    let out = ztfs(&args);
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// One row of `corpus/expected.tsv`.
#[derive(Debug, Clone)]
pub struct Row {
    pub name: String,
    pub dir: String,
    pub open: String,
    pub verify: String,
}

impl Row {
    /// The file's path.
    pub fn path(&self) -> PathBuf {
        // As the generator names files: `.zt` unless the name has an extension.
        let last = self.name.rsplit('/').next().unwrap_or(&self.name);
        let file = if last.contains('.') {
            self.name.clone()
        } else {
            format!("{}.zt", self.name)
        };
        corpus().join(&self.dir).join(file)
    }
}

/// The corpus rows that open but fail `--verify` on a part's digest (at
/// least one, or the tests built on them would test nothing).
pub fn rows_failing_on_a_digest() -> Vec<Row> {
    let rows: Vec<Row> = (rows().into_iter())
        .filter(|r| r.verify == "reject:Digest")
        .collect();
    assert!(
        !rows.is_empty(),
        "no corpus file fails --verify on a digest"
    );
    rows
}

/// Every row of `corpus/expected.tsv`.
pub fn rows() -> Vec<Row> {
    let path = corpus().join("expected.tsv");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (generate the corpus first)", path.display()));
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "expected.tsv line {l:?}");
            Row {
                name: f[0].into(),
                dir: f[1].into(),
                open: f[2].into(),
                verify: f[3].into(),
            }
        })
        .collect()
}

/// Every zTensor file that opens: valid and sample rows of the table,
/// plus any `.zt` file below `corpus/samples` (so a sample missing from
/// the table is still mounted). Hurray files are [`hurray_files`].
pub fn mountable_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = rows()
        .iter()
        .filter(|r| r.open == "valid" && (r.dir == "valid" || r.dir == "samples"))
        .map(Row::path)
        .filter(|p| p.extension() == Some(OsStr::new("zt")))
        .collect();
    files.extend(files_below(&corpus().join("samples")));
    files.sort();
    files.dedup();
    files
}

/// Every Hurray file of the corpus that opens (`.hrry` rows whose `open`
/// is `valid`), and every `.hrry` sample.
pub fn hurray_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = rows()
        .iter()
        .filter(|r| r.open == "valid")
        .map(Row::path)
        .filter(|p| p.extension() == Some(OsStr::new("hrry")))
        .collect();
    files.sort();
    files.dedup();
    files
}

/// Every `.zt` file below `dir`, recursively.
pub fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = e.expect("read corpus directory").path();
        if path.is_dir() {
            out.extend(files_below(&path));
        } else if path.extension() == Some(OsStr::new("zt")) {
            out.push(path);
        }
    }
    out
}

/// A sample by its path below `corpus/samples`, e.g. `tiny-llama.zt`.
pub fn sample(name: &str) -> PathBuf {
    corpus().join("samples").join(name)
}

/// A file of `corpus/valid` by its stem.
pub fn valid(name: &str) -> PathBuf {
    corpus().join("valid").join(format!("{name}.zt"))
}

// ---------------------------------------------------------------------------
// What `ztfs ls --json` says

/// One part as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct PartInfo {
    pub name: String,
    pub dtype: String,
    pub ty: Option<String>,
    pub encoding: Option<String>,
    pub offset: u64,
    pub stored_length: u64,
    pub decoded_length: u64,
    pub shard: Option<String>,
    pub digest: Option<String>,
}

/// One object as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectInfo {
    pub name: String,
    pub layout: String,
    pub shape: Vec<u64>,
    pub parts: Vec<PartInfo>,
}

/// What `ztfs ls --json FILE` says.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// A data shard: no manifest, no objects.
    pub data_shard: bool,
    pub objects: Vec<ObjectInfo>,
}

/// `ztfs ls --json FILE`.
pub fn ls(file: &Path) -> Listing {
    let out = ztfs_ok(&[OsStr::new("ls"), "--json".as_ref(), file.as_os_str()]);
    let doc = Json::parse(std::str::from_utf8(&out).expect("ls --json is UTF-8"));
    Listing {
        data_shard: doc["data_shard"] == Json::Bool(true),
        objects: doc["objects"].items().iter().map(object_info).collect(),
    }
}

fn object_info(o: &Json) -> ObjectInfo {
    ObjectInfo {
        name: o["name"].text().into(),
        layout: o["layout"].text().into(),
        shape: o["shape"].items().iter().map(Json::uint).collect(),
        parts: o["parts"].items().iter().map(part_info).collect(),
    }
}

fn part_info(p: &Json) -> PartInfo {
    PartInfo {
        name: p["name"].text().into(),
        dtype: p["dtype"].text().into(),
        ty: p["type"].opt_text(),
        encoding: p["encoding"].opt_text(),
        offset: p["offset"].uint(),
        stored_length: p["stored_length"].uint(),
        decoded_length: p["decoded_length"].uint(),
        shard: p["shard"].opt_text(),
        digest: p["digest"].opt_text(),
    }
}

/// The `.npy` files a `meta.json` announces (of parts, of the view, of a
/// Hurray tensor's data).
pub fn npy_files(meta: &Json) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |npy: &Json| {
        if !npy.is_null() {
            out.push(npy["file"].text().to_string());
        }
    };
    add(&meta["npy"]);
    add(&meta["view_npy"]);
    if !meta["parts"].is_null() {
        for p in meta["parts"].items() {
            add(&p["npy"]);
        }
    }
    out
}

/// True for a safetensors file at the root of a mount: `model.safetensors`,
/// a shard of it or its index.
pub fn is_safetensors_file(rel: &Path) -> bool {
    let name = rel.to_string_lossy();
    rel.parent() == Some(Path::new(""))
        && name.starts_with("model")
        && (name.ends_with(".safetensors") || name == "model.safetensors.index.json")
}

/// Reads and parses a `meta.json`.
pub fn meta(dir: &Path) -> Json {
    let path = dir.join("meta.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Json::parse(&text)
}

/// The files serving one part, from its entry in `meta.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// The decoded bytes; absent for a refused part.
    pub decoded: Option<String>,
    /// The stored bytes; present for an encoded or refused part.
    pub raw: Option<String>,
}

/// Which of a part's `files` is which: a refused part has only its raw
/// file; otherwise the raw file, if any, is the decoded one plus `.raw`.
pub fn served(part: &Json) -> Served {
    let files: Vec<String> = part["files"]
        .items()
        .iter()
        .map(|f| f.text().into())
        .collect();
    let refused = !part["refused"].is_null();
    match files.as_slice() {
        [raw] if refused => Served {
            decoded: None,
            raw: Some(raw.clone()),
        },
        [decoded] if !refused => Served {
            decoded: Some(decoded.clone()),
            raw: None,
        },
        [a, b] if !refused && *b == format!("{a}.raw") => Served {
            decoded: Some(a.clone()),
            raw: Some(b.clone()),
        },
        [a, b] if !refused && *a == format!("{b}.raw") => Served {
            decoded: Some(b.clone()),
            raw: Some(a.clone()),
        },
        _ => panic!(
            "part {:?}: files {files:?} with refused {:?}",
            part["name"], part["refused"]
        ),
    }
}

/// The directory of each object in a flat mount, by true name (from its
/// `meta.json`), as a path below the mount point. Every directory at the
/// root must be an object's, and no two may claim the same object.
pub fn object_dirs(m: &Mount) -> BTreeMap<String, PathBuf> {
    let mut dirs = BTreeMap::new();
    // By the listing's d_type, not stat: a test may need manifest.json
    // untouched (the truncation tests).
    for (name, _) in dir_entries(m.path())
        .into_iter()
        .filter(|e| e.1 == Kind::Dir)
    {
        let true_name = meta(&m.join(&name))["name"].text().to_string();
        if let Some(other) = dirs.insert(true_name.clone(), PathBuf::from(&name)) {
            panic!("{true_name:?} is served by both {other:?} and {name:?}");
        }
    }
    dirs
}

/// The file serving part `part` of the object in `dir` (decoded or raw),
/// found through `meta.json`.
pub fn part_file(dir: &Path, part: &str, raw: bool) -> PathBuf {
    let meta = meta(dir);
    let entry = meta["parts"]
        .items()
        .iter()
        .find(|p| p["name"].text() == part)
        .unwrap_or_else(|| panic!("{}: no part {part:?} in meta.json", dir.display()));
    let s = served(entry);
    let name = if raw { s.raw } else { s.decoded };
    dir.join(name.unwrap_or_else(|| panic!("{}: part {part:?} has no such file", dir.display())))
}

// ---------------------------------------------------------------------------
// Mounts

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

    /// Runs `ztfs mount FILE MNT flags...` and returns what it did.
    pub fn mount(&self, file: &Path, flags: &[&str]) -> Output {
        let mut args: Vec<&OsStr> = vec!["mount".as_ref(), file.as_os_str(), self.mnt.as_os_str()];
        if !flags.contains(&"--log-level") {
            args.extend(["--log-level", "info"].map(OsStr::new));
        }
        args.push(OsStr::new("--log-file"));
        args.push(self.log.as_os_str());
        args.extend(flags.iter().map(OsStr::new));
        ztfs(&args)
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
        .map(|p| PathBuf::from(OsString::from_vec(unescape_mountinfo(p))))
        .collect()
}

/// Undoes the `\NNN` octal escapes of mountinfo.
fn unescape_mountinfo(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
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
    out
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
        String::from_utf8(unescape_mountinfo(source)).ok()?,
    ))
}

/// True when `mnt` is a mount point now.
pub fn is_mounted(mnt: &Path) -> bool {
    mount_points().iter().any(|p| p == mnt)
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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

// ---------------------------------------------------------------------------
// Walking the tree

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

/// The errno of a failed call, or a panic naming what was expected.
pub fn errno_of<T>(r: io::Result<T>, what: &str) -> i32 {
    match r {
        Ok(_) => panic!("{what}: succeeded, expected a failure"),
        Err(e) => e
            .raw_os_error()
            .unwrap_or_else(|| panic!("{what}: {e} has no errno")),
    }
}

/// Fails with where `got` first differs from `want`, not with both dumps.
pub fn assert_same(got: &[u8], want: &[u8], what: &str) {
    if got != want {
        let at = got.iter().zip(want).position(|(a, b)| a != b);
        let (g, w) = (got.len(), want.len());
        panic!("{what}: {g} bytes read, {w} expected; first difference at {at:?}");
    }
}

/// The first line of a caught panic's message.
pub fn panic_text(e: &(dyn std::any::Any + Send)) -> String {
    let text = e.downcast_ref::<String>().map(String::as_str);
    let text = text.or_else(|| e.downcast_ref::<&str>().copied());
    text.unwrap_or("a panic")
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A copy of `file` as `model.zt` in a new temporary directory.
pub fn temp_copy(file: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let copy = dir.path().join("model.zt");
    std::fs::copy(file, &copy).expect("copy the model");
    (dir, copy)
}

/// Runs `f` in a thread and fails if it takes longer than `secs` (a hung
/// FUSE request would otherwise hang the test).
pub fn within<T: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    let r = rx.recv_timeout(Duration::from_secs(secs));
    r.unwrap_or_else(|_| panic!("{what}: no answer in {secs} s"))
}

// ---------------------------------------------------------------------------
// System calls std does not wrap

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

/// A safetensors file of `(name, dtype, shape, bytes)` and an optional
/// `__metadata__` object (JSON text), in this order, written by hand (the
/// tests' oracle, not the reader's code).
pub fn safetensors_file(
    tensors: &[(&str, &str, &[u64], Vec<u8>)],
    metadata: Option<&str>,
) -> Vec<u8> {
    let mut entries: Vec<String> = metadata
        .map(|m| format!("\"__metadata__\":{m}"))
        .into_iter()
        .collect();
    let mut at = 0;
    for (name, dtype, shape, bytes) in tensors {
        let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
        entries.push(format!(
            "\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{at},{}]}}",
            dims.join(","),
            at + bytes.len()
        ));
        at += bytes.len();
    }
    let header = format!("{{{}}}", entries.join(","));
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    tensors.iter().for_each(|t| file.extend_from_slice(&t.3));
    file
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

// ---------------------------------------------------------------------------
// A user without privileges

/// The user the tests run as when they must not be root: `ztfs-test`, a
/// system user without a home or a shell, made here (`useradd`) the first
/// time it is needed and kept. Its (uid, gid).
pub fn test_user() -> (u32, u32) {
    static USER: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();
    *USER.get_or_init(|| {
        let id = |flag: &str| {
            let out = std::process::Command::new("id")
                .args([flag, "ztfs-test"])
                .output()
                .ok()?;
            String::from_utf8(out.stdout)
                .ok()?
                .trim()
                .parse::<u32>()
                .ok()
        };
        if id("-u").is_none() {
            let made = std::process::Command::new("useradd")
                .args([
                    "--system",
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                    "ztfs-test",
                ])
                .status()
                .expect("useradd");
            // Another test binary may have made it meanwhile.
            assert!(
                made.success() || id("-u").is_some(),
                "useradd ztfs-test failed"
            );
        }
        (
            id("-u").expect("uid of ztfs-test"),
            id("-g").expect("gid of ztfs-test"),
        )
    })
}

/// Gives `path` to the test user.
pub fn give_to_test_user(path: &Path) {
    let (uid, gid) = test_user();
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
}

/// A command that runs as the test user (`setpriv`), as a user without
/// privileges mounts: through `fusermount3` (package fuse3, which .ci/run
/// installs).
pub fn as_test_user_cmd() -> std::process::Command {
    let (uid, gid) = test_user();
    let mut cmd = std::process::Command::new("setpriv");
    cmd.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={gid}"))
        .args(["--clear-groups", "--"]);
    cmd
}

/// Runs `argv` as the test user.
pub fn as_test_user(argv: &[&OsStr]) -> std::process::Output {
    as_test_user_cmd()
        .args(argv)
        .output()
        .expect("setpriv (util-linux)")
}

/// /dev/fuse opened to everyone for a test's duration, restored on drop.
pub struct FuseOpen(u32);

impl FuseOpen {
    /// Opens /dev/fuse to everyone until dropped.
    pub fn new() -> FuseOpen {
        FuseOpen::with_mode(0o666)
    }

    /// Gives /dev/fuse `mode` until dropped.
    pub fn with_mode(mode: u32) -> FuseOpen {
        use std::os::unix::fs::PermissionsExt;
        let old = std::fs::metadata("/dev/fuse").unwrap().permissions().mode();
        std::fs::set_permissions("/dev/fuse", std::fs::Permissions::from_mode(mode)).unwrap();
        FuseOpen(old)
    }
}

impl Drop for FuseOpen {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(
            "/dev/fuse",
            std::fs::Permissions::from_mode(self.0 & 0o7777),
        );
    }
}

pub mod http;
pub mod proxy;
pub mod s3;

/// Just enough JSON: what `ztfs ls --json` and `meta.json` contain.
pub mod json {
    use std::ops::Index;

    /// A parsed JSON value; numbers keep their spelling.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Json {
        Null,
        Bool(bool),
        Number(String),
        Text(String),
        Array(Vec<Json>),
        Object(Vec<(String, Json)>),
    }

    static NULL: Json = Json::Null;

    impl Index<&str> for Json {
        type Output = Json;
        /// The member `key` of an object, `null` when absent.
        fn index(&self, key: &str) -> &Json {
            match self {
                Json::Object(m) => m.iter().find(|(k, _)| k == key).map_or(&NULL, |(_, v)| v),
                other => panic!("{other:?} is not an object (looking up {key:?})"),
            }
        }
    }

    impl Json {
        /// Parses a whole document, panicking on anything malformed.
        pub fn parse(text: &str) -> Json {
            let mut p = Parser {
                s: text.as_bytes(),
                i: 0,
            };
            let v = p.value();
            p.ws();
            assert_eq!(p.i, p.s.len(), "trailing bytes after JSON");
            v
        }

        pub fn text(&self) -> &str {
            match self {
                Json::Text(s) => s,
                other => panic!("{other:?} is not a string"),
            }
        }

        pub fn opt_text(&self) -> Option<String> {
            match self {
                Json::Null => None,
                other => Some(other.text().to_string()),
            }
        }

        /// An unsigned integer, plain or as the `{"$int": "..."}` escape
        /// that ztfs writes beyond 2^53 - 1.
        pub fn uint(&self) -> u64 {
            match self {
                Json::Number(n) => n.parse().unwrap_or_else(|e| panic!("{n}: {e}")),
                Json::Object(m) if m.len() == 1 && m[0].0 == "$int" => {
                    let n = m[0].1.text();
                    n.parse().unwrap_or_else(|e| panic!("{n}: {e}"))
                }
                other => panic!("{other:?} is not a number"),
            }
        }

        pub fn items(&self) -> &[Json] {
            match self {
                Json::Array(a) => a,
                other => panic!("{other:?} is not an array"),
            }
        }

        pub fn is_null(&self) -> bool {
            *self == Json::Null
        }
    }

    struct Parser<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl Parser<'_> {
        fn ws(&mut self) {
            while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
                self.i += 1;
            }
        }

        fn peek(&mut self) -> u8 {
            self.ws();
            *self.s.get(self.i).expect("JSON ends early")
        }

        fn eat(&mut self, c: u8) {
            assert_eq!(self.peek(), c, "JSON at byte {}", self.i);
            self.i += 1;
        }

        fn word(&mut self, w: &str, v: Json) -> Json {
            assert!(
                self.s[self.i..].starts_with(w.as_bytes()),
                "JSON at byte {}",
                self.i
            );
            self.i += w.len();
            v
        }

        fn value(&mut self) -> Json {
            match self.peek() {
                b'n' => self.word("null", Json::Null),
                b't' => self.word("true", Json::Bool(true)),
                b'f' => self.word("false", Json::Bool(false)),
                b'"' => Json::Text(self.string()),
                b'[' => Json::Array(self.seq(b'[', b']', Parser::value)),
                b'{' => Json::Object(self.seq(b'{', b'}', Parser::member)),
                _ => self.number(),
            }
        }

        fn seq<T>(&mut self, open: u8, close: u8, item: fn(&mut Self) -> T) -> Vec<T> {
            self.eat(open);
            let mut out = Vec::new();
            if self.peek() == close {
                self.i += 1;
                return out;
            }
            loop {
                out.push(item(self));
                match self.peek() {
                    b',' => self.i += 1,
                    c if c == close => {
                        self.i += 1;
                        return out;
                    }
                    c => panic!("JSON: {:?} at byte {}", c as char, self.i),
                }
            }
        }

        fn member(&mut self) -> (String, Json) {
            self.ws();
            let k = self.string();
            self.eat(b':');
            (k, self.value())
        }

        fn number(&mut self) -> Json {
            let start = self.i;
            let num = |c: &u8| c.is_ascii_digit() || b"+-.eE".contains(c);
            while self.s.get(self.i).is_some_and(num) {
                self.i += 1;
            }
            assert!(self.i > start, "JSON: no value at byte {start}");
            Json::Number(String::from_utf8(self.s[start..self.i].to_vec()).expect("ASCII"))
        }

        fn hex4(&mut self) -> u32 {
            let h = std::str::from_utf8(&self.s[self.i..self.i + 4]).expect("ASCII");
            self.i += 4;
            u32::from_str_radix(h, 16).expect("\\u escape")
        }

        fn string(&mut self) -> String {
            self.eat(b'"');
            let mut out = Vec::new();
            loop {
                let c = self.s[self.i];
                self.i += 1;
                match c {
                    b'"' => return String::from_utf8(out).expect("JSON string is UTF-8"),
                    b'\\' => {
                        let e = self.s[self.i];
                        self.i += 1;
                        let ch = match e {
                            b'n' => '\n',
                            b't' => '\t',
                            b'r' => '\r',
                            b'b' => '\u{8}',
                            b'f' => '\u{c}',
                            b'u' => self.unicode(),
                            other => other as char,
                        };
                        out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                    }
                    _ => out.push(c),
                }
            }
        }

        fn unicode(&mut self) -> char {
            let hi = self.hex4();
            if !(0xD800..0xDC00).contains(&hi) {
                return char::from_u32(hi).expect("a scalar value");
            }
            assert_eq!(&self.s[self.i..self.i + 2], b"\\u", "lone surrogate");
            self.i += 2;
            let lo = self.hex4();
            char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).expect("a pair")
        }
    }
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
