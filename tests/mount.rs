//! The mount, for real: every corpus file mounted and read back against
//! `ztfs cat`, hostile names, range reads, mmap, concurrent readers, every
//! mutation refused, xattrs, statfs, the nested view, signals, stale mounts,
//! a backing file truncated or replaced under the mount, invalid files,
//! `--verify`, and `unmount` of a plain directory.
//!
//! Each test mounts its own temporary directories through
//! [`common::Mount`], which unmounts on drop even when the test fails. The
//! oracles are the other subcommands: `ls --json`, `cat`, `manifest`,
//! `digest` and `check`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use ztfs::tree::names::{self, Reserved, NAME_MAX};

const ZSTD: &str = "zt.zstd-seekable/1";
const FIVE_S: Duration = Duration::from_secs(5);

use ztfs::tree::{PART_NAME_MAX, PART_RESERVED, ROOT_RESERVED};

// ---------------------------------------------------------------------------
// 1. Every corpus file, whole

#[test]
fn every_corpus_file_matches_cat() {
    let files = mountable_files();
    assert!(
        files.len() >= 30,
        "only {} corpus files to mount",
        files.len()
    );
    let failed: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let r = std::panic::catch_unwind(|| check_whole_mount(file));
            r.err()
                .map(|e| format!("{}: {}", file.display(), panic_text(&*e)))
        })
        .collect();
    let n = files.len();
    assert!(
        failed.is_empty(),
        "{} of {n} files fail:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// Mounts `file`, walks all of it and accounts for every entry.
fn check_whole_mount(file: &Path) {
    let listing = ls(file);
    let m = Mount::new(file, &[]);
    let tree = walk(m.path());
    let mut seen = BTreeSet::new();
    check_top_files(file, &m, &mut seen);
    let dirs = object_dirs(&m);
    let names: BTreeSet<&String> = listing.objects.iter().map(|o| &o.name).collect();
    assert_eq!(dirs.keys().collect::<BTreeSet<_>>(), names, "objects");
    if listing.data_shard {
        let only: Vec<&Path> = tree.keys().map(PathBuf::as_path).collect();
        assert_eq!(only, [Path::new("manifest.json")], "a data shard's tree");
        let text = fs::read(m.join("manifest.json")).unwrap();
        assert_eq!(text, b"null\n", "a data shard's manifest.json");
    }
    for o in &listing.objects {
        check_object(file, &m, &dirs[&o.name], o, &mut seen);
    }
    // The legacy views at the root; their content is mount_views.rs's.
    seen.extend(tree.keys().filter(|p| is_safetensors_file(p)).cloned());
    let all: BTreeSet<PathBuf> = tree.into_keys().collect();
    let stray: Vec<_> = all.difference(&seen).collect();
    assert!(stray.is_empty(), "stray entries {stray:?}");
    assert_eq!(all, seen, "entries");
}

/// `manifest.json` and `digest` against `ztfs manifest` and `ztfs digest`.
fn check_top_files(file: &Path, m: &Mount, seen: &mut BTreeSet<PathBuf>) {
    let f = file.as_os_str();
    let manifest = ztfs_ok(&["manifest".as_ref(), f]);
    let got = fs::read(m.join("manifest.json")).expect("read manifest.json");
    assert_same(&got, &manifest, "manifest.json");
    seen.insert("manifest.json".into());
    let digest = ztfs(&["digest".as_ref(), f]);
    match digest.status.code() {
        Some(0) => {
            let got = fs::read(m.join("digest")).expect("read digest");
            assert_same(&got, &digest.stdout, "digest");
            seen.insert("digest".into());
        }
        Some(1) => assert!(!m.join("digest").exists(), "a digest `ztfs digest` refuses"),
        _ => panic!("{}", describe(&["digest".as_ref(), f], &digest)),
    }
}

/// One object's directory: `meta.json` against `ls --json`, and every file
/// it lists against `cat`.
fn check_object(file: &Path, m: &Mount, dir: &Path, o: &ObjectInfo, seen: &mut BTreeSet<PathBuf>) {
    let what = format!("{:?}", o.name);
    let meta = meta(&m.join(dir));
    assert_eq!(meta["name"].text(), o.name, "{what}");
    assert_eq!(meta["layout"].text(), o.layout, "{what}");
    let shape: Vec<u64> = meta["shape"].items().iter().map(Json::uint).collect();
    assert_eq!(shape, o.shape, "{what}");
    let parts = meta["parts"].items();
    assert_eq!(parts.len(), o.parts.len(), "{what}: parts");
    seen.extend([dir.to_path_buf(), dir.join("meta.json")]);
    for (pm, p) in parts.iter().zip(&o.parts) {
        let what = format!("{what}/{:?}", p.name);
        check_part_meta(pm, p, &what);
        let s = served(pm);
        let refused = s.decoded.is_none();
        assert_eq!(
            s.raw.is_some(),
            p.encoding.is_some() || refused,
            "{what}: {s:?}"
        );
        if refused {
            let decoded = cat(file, &o.name, &p.name, false);
            assert!(
                decoded.is_err(),
                "{what}: refused by the mount, decoded by cat"
            );
        }
        for (name, raw) in [(&s.decoded, false), (&s.raw, true)] {
            if let Some(name) = name {
                seen.insert(dir.join(name));
                check_file(file, &m.join(dir).join(name), o, p, raw);
            }
        }
    }
    check_view(&m.join(dir), &meta, &what);
    if let Some(view) = meta["view"].opt_text() {
        seen.insert(dir.join(view));
    }
    // The `.npy` files meta.json announces (their content is
    // mount_views.rs's); any other is stray.
    seen.extend(npy_files(&meta).into_iter().map(|f| dir.join(f)));
}

/// A layout profile's view file (`dense`, `dequantized`), named by
/// meta.json: its size is what stat says, or opening it fails with EIO when
/// the object breaks its layout's data rules; no other object has one.
fn check_view(dir: &Path, meta: &Json, what: &str) {
    let Some(view) = meta["view"].opt_text() else {
        let layout = meta["layout"].text();
        assert!(
            layout == "dense" || !dir.join("dense").exists(),
            "{what}: view file without meta"
        );
        return;
    };
    let path = dir.join(&view);
    let size = fs::metadata(&path)
        .unwrap_or_else(|e| panic!("{what}: stat {view}: {e}"))
        .len();
    match fs::read(&path) {
        Ok(bytes) => assert_eq!(bytes.len() as u64, size, "{what}: {view} size"),
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EIO), "{what}: {view}: {e}"),
    }
}

fn check_part_meta(pm: &Json, p: &PartInfo, what: &str) {
    assert_eq!(pm["name"].text(), p.name, "{what}");
    assert_eq!(pm["dtype"].text(), p.dtype, "{what}");
    assert_eq!(pm["type"].opt_text(), p.ty, "{what}");
    assert_eq!(pm["encoding"].opt_text(), p.encoding, "{what}");
    assert_eq!(pm["stored_length"].uint(), p.stored_length, "{what}");
    assert_eq!(pm["decoded_length"].uint(), p.decoded_length, "{what}");
    assert_eq!(pm["digest"].opt_text(), p.digest, "{what}");
    assert_eq!(pm["shard"].opt_text(), p.shard, "{what}");
}

/// One part file: its size, and its bytes against `cat`; where `cat` fails
/// (a shard the corpus lacks, a corrupt frame, a bad bool byte) the read
/// must fail with EIO.
fn check_file(file: &Path, path: &Path, o: &ObjectInfo, p: &PartInfo, raw: bool) {
    let what = path.display().to_string();
    let len = if raw {
        p.stored_length
    } else {
        p.decoded_length
    };
    assert_eq!(
        fs::metadata(path).map(|m| m.len()).ok(),
        Some(len),
        "{what}: size"
    );
    match (cat(file, &o.name, &p.name, raw), fs::read(path)) {
        (Ok(want), Ok(got)) => assert_same(&got, &want, &what),
        (Err(_), Err(e)) => assert_eq!(e.raw_os_error(), Some(libc::EIO), "{what}: {e}"),
        (Ok(_), Err(e)) => panic!("{what}: cat reads it, the mount fails: {e}"),
        (Err(e), Ok(_)) => panic!("{what}: the mount serves bytes that cat refuses: {e}"),
    }
}

// ---------------------------------------------------------------------------
// 2. Hostile names

#[test]
fn hostile_names() {
    let file = valid("names-hostile");
    assert!(
        file.exists(),
        "{} is missing from the corpus",
        file.display()
    );
    let listing = ls(&file);
    let m = Mount::new(&file, &[]);
    let dirs = object_dirs(&m);
    let names: BTreeSet<&String> = listing.objects.iter().map(|o| &o.name).collect();
    assert_eq!(
        dirs.keys().collect::<BTreeSet<_>>(),
        names,
        "objects reachable"
    );
    assert_fit_and_distinct(&dir_names(m.path()), m.path());
    for (name, dir) in &dirs {
        assert_escaped(dir.as_os_str().as_bytes(), name, &ROOT_RESERVED, NAME_MAX);
        check_hostile_object(&m.join(dir), name);
    }
}

/// `component` is the escape of `name`, and unescapes back to it unless it
/// had to be shortened.
fn assert_escaped(component: &[u8], name: &str, reserved: &Reserved<'_>, max: usize) {
    let c = std::str::from_utf8(component).expect("escaped names are UTF-8");
    assert_eq!(c, names::escape(name, reserved, max), "{name:?}");
    if !names::is_shortened(c) {
        assert_eq!(names::unescape(c).as_deref(), Some(name), "{c:?}");
    }
}

/// Every component at most NAME_MAX bytes, distinct, and neither `.` nor `..`.
fn assert_fit_and_distinct(list: &[OsString], dir: &Path) {
    let set: BTreeSet<_> = list.iter().collect();
    assert_eq!(
        set.len(),
        list.len(),
        "{}: duplicate entries",
        dir.display()
    );
    for c in list {
        let len = c.as_bytes().len();
        assert!(len <= NAME_MAX, "{}: {c:?} is {len} bytes", dir.display());
        assert!(
            c != "." && c != "..",
            "{}: an entry named {c:?}",
            dir.display()
        );
    }
}

/// In names-hostile every part's bytes are its own name (in the object
/// `hostile-parts`) or its object's name (elsewhere), so a read shows
/// which file it reached.
fn check_hostile_object(dir: &Path, name: &str) {
    assert_fit_and_distinct(&dir_names(dir), dir);
    for p in meta(dir)["parts"].items() {
        let (part, s) = (p["name"].text(), served(p));
        let escaped = names::escape(part, &PART_RESERVED, PART_NAME_MAX);
        if let Some(d) = &s.decoded {
            assert_eq!(*d, escaped, "{name:?}/{part:?}");
        }
        if let Some(r) = &s.raw {
            assert_eq!(*r, format!("{escaped}.raw"), "{name:?}/{part:?}");
        }
        let want = if name == "hostile-parts" { part } else { name };
        for f in [s.decoded, s.raw].into_iter().flatten() {
            let got = fs::read(dir.join(&f)).unwrap_or_else(|e| panic!("{name:?}/{f:?}: {e}"));
            assert_same(
                &got,
                want.as_bytes(),
                &format!("{name:?}/{part:?} as {f:?}"),
            );
        }
    }
}

// ---------------------------------------------------------------------------
// 3. Random range reads

/// A part to read, with the bytes `cat` gives for it.
struct Target {
    file: PathBuf,
    object: String,
    part: String,
    raw: bool,
    want: Vec<u8>,
}

impl Target {
    fn new(file: &Path, object: &str, part: &str, raw: bool) -> Target {
        let want = cat(file, object, part, raw).expect("cat the target part");
        let (object, part) = (object.to_string(), part.to_string());
        Target {
            file: file.to_path_buf(),
            object,
            part,
            raw,
            want,
        }
    }

    /// Its file in a flat mount of `self.file`.
    fn path(&self, m: &Mount) -> PathBuf {
        part_file(&m.join(&object_dirs(m)[&self.object]), &self.part, self.raw)
    }
}

/// Every part of `file`, decoded.
fn all_parts(file: &Path) -> Vec<Target> {
    let listing = ls(file);
    let pairs = listing
        .objects
        .iter()
        .flat_map(|o| o.parts.iter().map(move |p| (o, p)));
    pairs
        .map(|(o, p)| Target::new(file, &o.name, &p.name, false))
        .collect()
}

/// The largest unencoded part of the samples.
fn largest_sample_part() -> Target {
    let mut best: Option<(u64, PathBuf, String, String)> = None;
    for file in files_below(&corpus().join("samples")) {
        for o in ls(&file).objects {
            for p in o.parts.iter().filter(|p| p.encoding.is_none()) {
                if best.as_ref().is_none_or(|b| p.decoded_length > b.0) {
                    best = Some((
                        p.decoded_length,
                        file.clone(),
                        o.name.clone(),
                        p.name.clone(),
                    ));
                }
            }
        }
    }
    let (_, file, object, part) = best.expect("the samples have parts");
    Target::new(&file, &object, &part, false)
}

/// The first non-empty zstd-seekable part of a corpus file that verifies,
/// decoded and raw; none if the corpus has none.
fn zstd_parts() -> Vec<Target> {
    let good = rows()
        .into_iter()
        .filter(|r| r.open == "valid" && r.verify == "valid");
    for file in good.map(|r| r.path()) {
        for o in ls(&file).objects {
            let zstd = |p: &&PartInfo| p.encoding.as_deref() == Some(ZSTD) && p.decoded_length > 0;
            if let Some(p) = o.parts.iter().find(zstd) {
                let t = |raw| Target::new(&file, &o.name, &p.name, raw);
                return vec![t(false), t(true)];
            }
        }
    }
    Vec::new()
}

#[test]
fn random_range_reads() {
    let mut targets = vec![largest_sample_part()];
    targets.extend(zstd_parts());
    for flags in [&[][..], &["--direct-io"]] {
        for (i, t) in targets.iter().enumerate() {
            let m = Mount::new(&t.file, flags);
            random_reads(&t.path(&m), &t.want, 0x5EED + i as u64);
        }
    }
}

/// 500 seeded preads: within the file, past its end, and across it.
fn random_reads(path: &Path, want: &[u8], seed: u64) {
    let f = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let len = want.len() as u64;
    let mut rng = Lcg::new(seed);
    for i in 0..500 {
        let (offset, size) = match i % 5 {
            0 => (len + rng.below(1 << 20), 1 + rng.below(8192)),
            1 => (len.saturating_sub(rng.below(64)), 1 + rng.below(256)),
            2 => (0, len + rng.below(4096)),
            _ => (rng.below(len + 1), rng.below(len / 2 + 4097)),
        };
        let mut buf = vec![0xAA; size as usize];
        let n = f
            .read_at(&mut buf, offset)
            .unwrap_or_else(|e| panic!("pread: {e}"));
        let (lo, hi) = (offset.min(len) as usize, (offset + size).min(len) as usize);
        let what = format!("{}: pread({offset}, {size})", path.display());
        assert_same(&buf[..n], &want[lo..hi], &what);
    }
}

// ---------------------------------------------------------------------------
// 4. mmap

#[test]
fn mmap_through_mount() {
    let mut targets = vec![largest_sample_part()];
    targets.extend(zstd_parts());
    for flags in [&[][..], &["--direct-io"]] {
        for t in &targets {
            let m = Mount::new(&t.file, flags);
            let path = t.path(&m);
            let what = format!("mmap {} {flags:?}", path.display());
            let f = File::open(&path).expect("open the part");
            // SAFETY: MAP_SHARED, read-only, of a file nothing changes.
            let map = unsafe { memmap2::Mmap::map(&f) };
            assert_same(
                &map.unwrap_or_else(|e| panic!("{what}: {e}")),
                &t.want,
                &what,
            );
        }
    }
}

// ---------------------------------------------------------------------------
// 5. Concurrent readers

#[test]
fn concurrent_readers() {
    let file = sample("tiny-llama.zt");
    let targets = all_parts(&file);
    for flags in [&[][..], &["--direct-io"]] {
        let m = Mount::new(&file, flags);
        read_concurrently(&m, &targets, 8);
    }
    // Decoded frames shared by readers, through a cache that holds one.
    for t in zstd_parts() {
        let m = Mount::new(&t.file, &["--direct-io", "--cache-mib", "0"]);
        read_concurrently(&m, std::slice::from_ref(&t), 8);
    }
}

/// `threads` threads each read every target whole 20 times, starting at
/// different targets, so that some read the same part at once and some not.
fn read_concurrently(m: &Mount, targets: &[Target], threads: usize) {
    let paths: Vec<PathBuf> = targets.iter().map(|t| t.path(m)).collect();
    std::thread::scope(|s| {
        for i in 0..threads {
            let paths = &paths;
            s.spawn(move || {
                for round in 0..20 {
                    for j in 0..targets.len() {
                        let k = (i + j + round) % targets.len();
                        let got = fs::read(&paths[k]).expect("read a part");
                        assert_same(&got, &targets[k].want, &format!("thread {i}: {k}"));
                    }
                }
            });
        }
    });
}

// ---------------------------------------------------------------------------
// 6. Mutations

#[test]
fn mutations_are_erofs() {
    let file = sample("tiny-llama.zt");
    let m = Mount::new(&file, &[]);
    let o = &ls(&file).objects[0];
    let dir = m.join(&object_dirs(&m)[&o.name]);
    let part = part_file(&dir, &o.parts[0].name, false);
    for (what, r) in mutations(&dir, &part, &m.join("manifest.json")) {
        let errno = errno_of(r, what);
        assert_eq!(
            errno,
            libc::EROFS,
            "{what}: {}",
            io::Error::from_raw_os_error(errno)
        );
    }
    let want = cat(&file, &o.name, &o.parts[0].name, false).unwrap();
    assert_same(&fs::read(&part).expect("still readable"), &want, "the part");
}

/// Every way to change a tree, with what each did.
fn mutations(dir: &Path, part: &Path, manifest: &Path) -> Vec<(&'static str, io::Result<()>)> {
    use libc::{O_CREAT, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY};
    use std::os::unix::fs as ufs;
    let new = dir.join("new");
    vec![
        ("open O_WRONLY", open_flags(part, O_WRONLY)),
        ("open O_RDWR", open_flags(manifest, O_RDWR)),
        ("open O_CREAT", open_flags(&new, O_WRONLY | O_CREAT)),
        (
            "open O_CREAT read-only",
            open_flags(&new, O_RDONLY | O_CREAT),
        ),
        ("open O_TRUNC", open_flags(part, O_RDONLY | O_TRUNC)),
        ("rename", fs::rename(part, &new)),
        (
            "rename a directory",
            fs::rename(dir, dir.with_file_name("moved")),
        ),
        ("unlink", fs::remove_file(part)),
        ("unlink manifest.json", fs::remove_file(manifest)),
        ("mkdir", fs::create_dir(&new)),
        ("rmdir", fs::remove_dir(dir)),
        ("symlink", ufs::symlink("x", &new)),
        ("link", fs::hard_link(part, &new)),
        ("chmod", chmod(part, 0o644)),
        ("chmod a directory", chmod(dir, 0o755)),
        ("chown", ufs::chown(part, Some(1), Some(1))),
        ("truncate", truncate(part)),
        ("utimes", utimes_now(part)),
        ("setxattr", set_xattr(part, "user.zt.dtype", b"u8")),
        ("setxattr new", set_xattr(part, "user.other", b"1")),
        ("removexattr", remove_xattr(part, "user.zt.dtype")),
        ("mknod", mknod(&new)),
    ]
}

// ---------------------------------------------------------------------------
// 7. Extended attributes

#[test]
fn xattrs() {
    let mut files = vec![sample("tiny-llama.zt"), sample("mixed-dtypes.zt")];
    files.extend(zstd_parts().into_iter().map(|t| t.file).take(1));
    for file in &files {
        let m = Mount::new(file, &["--xattrs"]);
        let dirs = object_dirs(&m);
        for o in ls(file).objects {
            let dir = m.join(&dirs[&o.name]);
            check_xattrs(&dir, &expected_xattrs(&o, None));
            let meta = meta(&dir);
            for (pm, p) in meta["parts"].items().iter().zip(&o.parts) {
                let s = served(pm);
                for f in [s.decoded, s.raw].into_iter().flatten() {
                    check_xattrs(&dir.join(f), &expected_xattrs(&o, Some(p)));
                }
            }
        }
        assert_eq!(list_xattrs(&m.join("manifest.json")), Vec::<String>::new());
    }
    // Without --xattrs the daemon declines them, so the kernel stops asking
    // (and `ls -l` costs no round trips for them).
    let file = sample("tiny-llama.zt");
    let m = Mount::new(&file, &[]);
    let o = &ls(&file).objects[0];
    let dir = m.join(&object_dirs(&m)[&o.name]);
    let e = get_xattr(&dir, "user.zt.shape").expect_err("no xattrs without --xattrs");
    assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}");
}

/// What an object directory (`part` None) or a part file carries, sorted.
fn expected_xattrs(o: &ObjectInfo, part: Option<&PartInfo>) -> Vec<(String, String)> {
    let shape: Vec<String> = o.shape.iter().map(u64::to_string).collect();
    let mut out = vec![
        ("object", Some(o.name.clone())),
        ("shape", Some(format!("[{}]", shape.join(",")))),
        ("layout", Some(o.layout.clone())),
    ];
    if let Some(p) = part {
        out.extend([
            ("part", Some(p.name.clone())),
            ("dtype", Some(p.dtype.clone())),
            ("type", p.ty.clone()),
            ("encoding", p.encoding.clone()),
            ("digest", p.digest.clone()),
        ]);
    }
    let out = out
        .into_iter()
        .filter_map(|(k, v)| Some((format!("user.zt.{k}"), v?)));
    let mut out: Vec<(String, String)> = out.collect();
    out.sort();
    out
}

/// The names `listxattr` gives, each value, ERANGE for a buffer one byte
/// short, and ENODATA for an absent name.
fn check_xattrs(path: &Path, want: &[(String, String)]) {
    let what = path.display();
    let mut names = list_xattrs(path);
    names.sort();
    let keys: Vec<&String> = want.iter().map(|(k, _)| k).collect();
    assert_eq!(names.iter().collect::<Vec<_>>(), keys, "{what}");
    for (k, v) in want {
        let got = get_xattr(path, k).unwrap_or_else(|e| panic!("{what}: {k}: {e}"));
        assert_eq!(String::from_utf8_lossy(&got), *v, "{what}: {k}");
        // Size 0 would ask for the length, so only values of 2 bytes or more.
        if v.len() > 1 {
            let short = get_xattr_sized(path, k, v.len() - 1);
            assert_eq!(
                errno_of(short, k),
                libc::ERANGE,
                "{what}: {k} in a short buffer"
            );
        }
    }
    let absent = get_xattr(path, "user.zt.nonesuch");
    assert_eq!(
        errno_of(absent, "an absent attribute"),
        libc::ENODATA,
        "{what}"
    );
}

// ---------------------------------------------------------------------------
// 8. statfs

#[test]
fn statfs_readonly() {
    let file = sample("tiny-llama.zt");
    let m = Mount::new(&file, &[]);
    let st = statvfs(m.path()).expect("statvfs");
    assert_ne!(st.f_flag & libc::ST_RDONLY, 0, "ST_RDONLY");
    assert_ne!(st.f_flag & libc::ST_NOSUID, 0, "ST_NOSUID");
    assert_ne!(st.f_flag & libc::ST_NODEV, 0, "ST_NODEV");
    assert_eq!(st.f_namemax, 255);
    // fuser's own mount(2) passes the type "fuse" and drops the subtype;
    // through libfuse it would be "fuse.ztfs". The source is the model.
    let (fstype, source) = mount_source(m.path()).expect("the mount in mountinfo");
    assert!(
        ["fuse", "fuse.ztfs"].contains(&fstype.as_str()),
        "type {fstype}"
    );
    assert_eq!(Path::new(&source), file, "source");
}

/// Every Python `open()` asks TCGETS (is it a terminal?): the answer is a
/// regular file's, ENOTTY, and the daemon's log stays quiet (fuser's
/// default logged each call).
#[test]
fn ioctl_is_enotty_and_not_logged() {
    use std::os::fd::AsRawFd;
    let m = Mount::new(&sample("tiny-llama.zt"), &[]);
    for rel in ["manifest.json", "lm_head.weight/data"] {
        let f = File::open(m.join(rel)).expect("open");
        for _ in 0..3 {
            let mut t = std::mem::MaybeUninit::<libc::termios>::uninit();
            let r = unsafe { libc::ioctl(f.as_raw_fd(), libc::TCGETS, t.as_mut_ptr()) };
            assert_eq!(r, -1, "{rel}: TCGETS succeeded");
            assert_eq!(
                io::Error::last_os_error().raw_os_error(),
                Some(libc::ENOTTY)
            );
        }
    }
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg("import sys; print(len(open(sys.argv[1], 'rb').read()))")
        .arg(m.join("manifest.json"))
        .output()
        .expect("run python3");
    assert!(out.status.success(), "{out:?}");
    let log = m.log();
    assert!(
        !log.to_lowercase().contains("ioctl"),
        "the log names ioctl:\n{log}"
    );
}

// ---------------------------------------------------------------------------
// 9. The nested view

#[test]
fn tree_view() {
    let file = sample("tiny-llama.zt");
    let listing = ls(&file);
    let m = Mount::new(&file, &["--tree"]);
    for d in [
        "model",
        "model/layers",
        "model/layers/0",
        "model/layers/0/self_attn",
    ] {
        assert!(m.join(d).is_dir(), "{d}/ in the nested view");
    }
    let metas = metas_by_name(&m);
    assert_eq!(
        metas.len(),
        listing.objects.len(),
        "objects in the nested view"
    );
    for o in &listing.objects {
        let path: PathBuf = o.name.split('.').collect();
        assert_eq!(metas.get(&o.name), Some(&path), "{:?}", o.name);
    }
    let o = &listing.objects[0];
    let got = fs::read(part_file(&m.join(&metas[&o.name]), "data", false)).unwrap();
    assert_same(&got, &cat(&file, &o.name, "data", false).unwrap(), &o.name);
    check_separator(&file, &listing);
    check_prefix_object();
}

/// Where each object's `meta.json` is in a mount, by true name; every
/// object must be reachable exactly once.
fn metas_by_name(m: &Mount) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    for (path, kind) in walk(m.path()) {
        if kind == Kind::File && path.file_name() == Some("meta.json".as_ref()) {
            let dir = path.parent().unwrap().to_path_buf();
            let name = meta(&m.join(&dir))["name"].text().to_string();
            if let Some(other) = out.insert(name.clone(), dir.clone()) {
                panic!("{name:?} is at both {other:?} and {dir:?}");
            }
        }
    }
    out
}

/// `--separator _` splits at underscores instead of dots.
fn check_separator(file: &Path, listing: &Listing) {
    let m = Mount::new(file, &["--tree", "--separator", "_"]);
    let metas = metas_by_name(&m);
    for o in &listing.objects {
        let path: PathBuf = o.name.split('_').collect();
        assert_eq!(metas.get(&o.name), Some(&path), "{:?} split at _", o.name);
    }
}

/// A corpus object whose name, then `.`, begins another's (neither with an
/// empty segment): its directory holds its own files and the directories
/// of the longer names.
fn check_prefix_object() {
    let plain = |n: &str| !n.split('.').any(str::is_empty);
    let found = mountable_files().into_iter().find_map(|f| {
        let names: Vec<String> = ls(&f).objects.into_iter().map(|o| o.name).collect();
        let is_prefix = |a: &&String| names.iter().any(|b| b.starts_with(&format!("{a}.")));
        let prefix = names.iter().filter(|a| plain(a)).find(is_prefix)?.clone();
        Some((f, prefix))
    });
    let (file, prefix) = found.expect("a corpus object whose name begins another's");
    let m = Mount::new(&file, &["--tree"]);
    let metas = metas_by_name(&m);
    let dir = m.join(&metas[&prefix]);
    let entries = dir_entries(&dir);
    let has = |kind| entries.iter().any(|e| e.1 == kind);
    assert!(has(Kind::File) && has(Kind::Dir), "{prefix:?}: {entries:?}");
    let longer = metas
        .iter()
        .filter(|(n, _)| plain(n) && n.starts_with(&format!("{prefix}.")));
    for (name, path) in longer {
        assert!(m.join(path).starts_with(&dir), "{name:?} is at {path:?}");
    }
    let o = ls(&file)
        .objects
        .into_iter()
        .find(|o| o.name == prefix)
        .unwrap();
    let s = served(&meta(&dir)["parts"].items()[0]);
    let (f, raw) = match s.decoded {
        Some(d) => (d, false),
        None => (s.raw.expect("a refused part has its raw file"), true),
    };
    let want = cat(&file, &prefix, &o.parts[0].name, raw).unwrap();
    assert_same(&fs::read(dir.join(f)).unwrap(), &want, &prefix);
}

// ---------------------------------------------------------------------------
// 10. Signals

#[test]
fn signals_unmount() {
    let t = largest_sample_part();
    let cases = [
        (libc::SIGINT, &[][..]),
        (libc::SIGTERM, &["--direct-io"]),
        (libc::SIGHUP, &[]),
    ];
    for (sig, flags) in cases {
        let m = Mount::new(&t.file, flags);
        let pid = m.daemon();
        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicU64::new(0));
        let reader = spawn_reader(t.path(&m), t.want.clone(), stop.clone(), reads.clone());
        assert!(
            wait_until(FIVE_S, || reads.load(SeqCst) > 0),
            "signal {sig}: no read"
        );
        kill(pid, sig);
        let gone = wait_until(FIVE_S, || !is_mounted(m.path()));
        stop.store(true, SeqCst);
        let outcome = reader.join().expect("the reader does not panic");
        assert!(gone, "signal {sig}: still mounted after 5 s");
        assert!(outcome.is_ok(), "signal {sig}: {outcome:?}");
        // The daemon serves open files until they close, then exits.
        assert!(
            wait_until(FIVE_S, || !is_alive(pid)),
            "signal {sig}: {pid} still runs"
        );
    }
}

/// Holds `path` open and reads it whole until `stop`; fails on a wrong
/// byte, and ends quietly on EIO or ENOTCONN (the mount went away).
fn spawn_reader(
    path: PathBuf,
    want: Vec<u8>,
    stop: Arc<AtomicBool>,
    reads: Arc<AtomicU64>,
) -> std::thread::JoinHandle<Result<u64, String>> {
    std::thread::spawn(move || {
        let f = File::open(&path).map_err(|e| format!("open: {e}"))?;
        let mut buf = vec![0u8; want.len() + 1];
        while !stop.load(SeqCst) {
            match f.read_at(&mut buf, 0) {
                Ok(n) if buf[..n] == want[..] => reads.fetch_add(1, SeqCst),
                Ok(n) => return Err(format!("wrong bytes: {n} read")),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EIO | libc::ENOTCONN)) => break,
                Err(e) => return Err(format!("read: {e}")),
            };
        }
        Ok(reads.load(SeqCst))
    })
}

// ---------------------------------------------------------------------------
// 11. A stale mount

#[test]
fn stale_mount_cleanup() {
    let file = sample("tiny-llama.zt");
    let m = Mount::new(&file, &[]);
    let pid = m.daemon();
    kill(pid, libc::SIGKILL);
    assert!(wait_until(FIVE_S, || !is_alive(pid)), "SIGKILL");
    let e = errno_of(fs::read_dir(m.path()), "listing a stale mount");
    assert_eq!(e, libc::ENOTCONN, "{}", io::Error::from_raw_os_error(e));
    let out = m.mount(&file, &[]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "mount on a stale mount: {text}");
    assert!(
        text.contains("stale") && text.contains("ztfs unmount"),
        "{text}"
    );
    let args = ["unmount".as_ref(), m.path().as_os_str()];
    let out = ztfs(&args);
    assert!(out.status.success(), "{}", describe(&args, &out));
    assert!(!is_mounted(m.path()), "still mounted");
    let left = fs::read_dir(m.path())
        .expect("a plain directory again")
        .count();
    assert_eq!(left, 0, "the mount point is empty");
}

// ---------------------------------------------------------------------------
// 12. A backing file truncated under the mount

#[test]
fn truncated_backing_file() {
    let (_dir, copy) = temp_copy(&sample("tiny-llama.zt"));
    let half = fs::metadata(&copy).unwrap().len() / 2;
    let objects = ls(&copy).objects;
    let parts: Vec<(&ObjectInfo, &PartInfo)> = objects
        .iter()
        .flat_map(|o| o.parts.iter().map(move |p| (o, p)))
        .collect();
    let (bo, bp) = parts
        .iter()
        .find(|(_, p)| p.offset + p.stored_length <= half)
        .unwrap();
    let (ao, ap) = parts
        .iter()
        .find(|(_, p)| p.offset >= half)
        .expect("a part past half");
    let before = Target::new(&copy, &bo.name, &bp.name, false);
    // Direct I/O, so reads reach the daemon rather than the page cache.
    // Nothing touches manifest.json before the cut (it is rendered lazily
    // from the map, and the manifest lies at the end of the file).
    let m = Mount::new(&copy, &["--direct-io"]);
    let (before_path, after_path) = (before.path(&m), decoded_file(&m, ao, ap));
    assert_same(
        &fs::read(&before_path).unwrap(),
        &before.want,
        "before the cut",
    );
    cut(&copy, half);
    let r = within(10, "reading past the cut", move || fs::read(after_path));
    assert_eq!(errno_of(r, "reading past the cut"), libc::EIO);
    let mf = m.join("manifest.json");
    within(10, "stat manifest.json", move || fs::metadata(mf)).expect("stat manifest.json");
    let got = within(10, "reading before the cut", move || fs::read(before_path));
    assert_same(
        &got.expect("read before the cut"),
        &before.want,
        "before the cut, again",
    );
}

/// A truncated file fails every read past its end, thousands a second: the
/// log names the backing file and the object once, then counts, instead of
/// a line per failed reply (regression test for a log flood).
#[test]
fn a_truncated_file_is_logged_once_per_part_then_counted() {
    let (_dir, copy) = temp_copy(&sample("tiny-llama.zt"));
    let half = fs::metadata(&copy).unwrap().len() / 2;
    let objects = ls(&copy).objects;
    let (ao, ap) = objects
        .iter()
        .flat_map(|o| o.parts.iter().map(move |p| (o, p)))
        .find(|(_, p)| p.offset >= half)
        .expect("a part past half");
    let m = Mount::new(&copy, &["--direct-io"]);
    let path = decoded_file(&m, ao, ap);
    cut(&copy, half);
    for _ in 0..300 {
        let p = path.clone();
        let r = within(10, "reading past the cut", move || fs::read(p));
        assert_eq!(errno_of(r, "reading past the cut"), libc::EIO);
    }
    let pid = m.daemon();
    assert!(ztfs(&["unmount".as_ref(), m.path().as_os_str()])
        .status
        .success());
    assert!(wait_until(Duration::from_secs(10), || !is_alive(pid)));
    let log = m.log();
    let about: Vec<&str> = log.lines().filter(|l| l.contains(&ao.name)).collect();
    // The first failure, the counts at 10 and 100, the total at unmount.
    assert!(
        !about.is_empty() && about.len() <= 4,
        "{} lines about {:?}:\n{log}",
        about.len(),
        ao.name
    );
    assert!(about[0].contains(&copy.display().to_string()), "{log}");
    assert!(
        about.iter().any(|l| l.contains("300 times in all")),
        "{log}"
    );
}

/// The decoded file of `o`/`p` in a flat mount.
fn decoded_file(m: &Mount, o: &ObjectInfo, p: &PartInfo) -> PathBuf {
    part_file(&m.join(&object_dirs(m)[&o.name]), &p.name, false)
}

/// The same for a zstd-seekable part, with manifest.json stat'ed before
/// the cut: the part's frames and seek table lie past the new end, and
/// reading it must fail with EIO, not bring the daemon down.
#[test]
fn truncated_backing_file_compressed_part() {
    let t = zstd_parts()
        .into_iter()
        .next()
        .expect("a zstd-seekable part in the corpus");
    let (_dir, copy) = temp_copy(&t.file);
    let o = ls(&copy)
        .objects
        .into_iter()
        .find(|o| o.name == t.object)
        .unwrap();
    let p = o.parts.iter().find(|p| p.name == t.part).unwrap();
    let m = Mount::new(&copy, &["--direct-io"]);
    let path = decoded_file(&m, &o, p);
    fs::metadata(m.join("manifest.json")).expect("stat manifest.json");
    // At a page boundary, so the part's pages lie wholly past the end.
    cut(&copy, p.offset & !4095);
    let r = within(10, "reading a cut zstd part", move || fs::read(path));
    assert_eq!(errno_of(r, "reading a cut zstd part"), libc::EIO);
    // The manifest lay past the cut too: manifest.json, never read before,
    // can no longer be rendered, and says so (the daemon keeps no copy).
    let mf = m.join("manifest.json");
    let r = within(10, "reading manifest.json", move || fs::read(mf));
    assert_eq!(errno_of(r, "reading manifest.json past the cut"), libc::EIO);
    let root = m.join(".");
    let r = within(10, "stat after the cut", move || fs::metadata(root));
    assert!(r.is_ok(), "the daemon still answers: {r:?}");
}

// ---------------------------------------------------------------------------
// 13. A backing file replaced under the mount

#[test]
fn replaced_backing_file() {
    let (dir, copy) = temp_copy(&sample("tiny-llama.zt"));
    let manifest = ztfs_ok(&["manifest".as_ref(), copy.as_os_str()]);
    let targets = all_parts(&copy);
    let m = Mount::new(&copy, &[]);
    let other = dir.path().join("other.zt");
    fs::copy(sample("mixed-dtypes.zt"), &other).unwrap();
    fs::rename(&other, &copy).expect("replace the model");
    assert_same(
        &fs::read(m.join("manifest.json")).unwrap(),
        &manifest,
        "manifest.json",
    );
    for t in &targets {
        let got = fs::read(t.path(&m)).expect("read after the replacement");
        assert_same(&got, &t.want, &t.object);
    }
}

// ---------------------------------------------------------------------------
// 14. Invalid files

#[test]
fn invalid_file_refused() {
    let m = Mount::unmounted();
    let rejects: Vec<Row> = rows().into_iter().filter(|r| r.dir == "reject").collect();
    assert!(!rejects.is_empty(), "no reject files in the corpus");
    for row in rejects {
        let file = row.path();
        let check = ztfs(&["check".as_ref(), file.as_os_str()]);
        let mount = m.mount(&file, &[]);
        let what = describe(&["mount".as_ref(), file.as_os_str()], &mount);
        assert_eq!(check.status.code(), Some(1), "{}", row.name);
        assert_eq!(mount.status.code(), Some(1), "{what}");
        assert_eq!(mount.stderr, check.stderr, "{what}");
        assert!(!is_mounted(m.path()), "{what}: mounted");
    }
    assert_eq!(
        fs::read_dir(m.path()).unwrap().count(),
        0,
        "the mount point is untouched"
    );
}

/// A family whose shard is missing, wrong, or not a regular file still
/// mounts (its parts fail with EIO), and `ztfs mount` says so on stderr,
/// naming the shard and where it looked, before its success line, as
/// `check` does; the log has it too.
#[test]
fn a_degraded_mount_says_so_on_the_terminal() {
    let fam = corpus().join("families");
    let dir = tempfile::tempdir().unwrap();
    let make = |name: &str, shard: &dyn Fn(&Path)| {
        let d = dir.path().join(name);
        fs::create_dir(&d).unwrap();
        fs::copy(fam.join("missing/model.zt"), d.join("model.zt")).unwrap();
        shard(&d.join("model-00001.zt"));
        d.join("model.zt")
    };
    let fifo = make("fifo", &|p| {
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
    });
    let device = make("device", &|p| {
        std::os::unix::fs::symlink("/dev/zero", p).unwrap()
    });
    let cases = [
        (fam.join("missing/model.zt"), "No such file"),
        (fam.join("wrong-digest/model.zt"), "ShardIdentity"),
        (fifo, "a FIFO"),
        (device, "a character device"),
    ];
    for (root, why) in cases {
        let m = Mount::unmounted();
        let out = m.mount(&root, &[]);
        let what = describe(&["mount".as_ref(), root.as_os_str()], &out);
        assert!(out.status.success(), "{what}");
        let err = String::from_utf8_lossy(&out.stderr);
        let shard = root.with_file_name("model-00001.zt");
        let line = err
            .lines()
            .find(|l| l.contains("warning"))
            .unwrap_or_else(|| panic!("no warning: {what}"));
        assert!(line.contains("shard \"00001\""), "{what}");
        assert!(
            line.contains(&*shard.to_string_lossy()),
            "where it looked: {what}"
        );
        assert!(line.contains(why), "{why}: {what}");
        assert!(m.log().contains("00001"), "the log: {}", m.log());
        assert!(is_mounted(m.path()), "{what}");
    }
}

// ---------------------------------------------------------------------------
// 15. --verify

#[test]
fn verify_mode() {
    for row in &common::rows_failing_on_a_digest() {
        check_verify(&row.path());
    }
    let good = sample("tiny-llama.zt");
    let m = Mount::new(&good, &["--verify"]);
    for t in all_parts(&good) {
        let got = fs::read(t.path(&m)).expect("a good part opens under --verify");
        assert_same(&got, &t.want, &t.object);
    }
}

/// Under `--verify` a part whose digest is wrong fails to open with EIO,
/// while a plain mount serves it; at least one part of `file` is such.
fn check_verify(file: &Path) {
    let verified = Mount::new(file, &["--verify"]);
    let plain = Mount::new(file, &[]);
    let mut bad = 0;
    for o in ls(file).objects {
        for p in &o.parts {
            let Ok(want) = cat(file, &o.name, &p.name, false) else {
                continue;
            };
            let what = format!("{}: {:?}/{:?}", file.display(), o.name, p.name);
            let path = decoded_file(&verified, &o, p);
            if digest_matches(p.digest.as_deref(), &want) {
                assert_same(&fs::read(path).expect("a good part opens"), &want, &what);
                continue;
            }
            bad += 1;
            assert_eq!(
                errno_of(File::open(path), &what),
                libc::EIO,
                "{what} under --verify"
            );
            let served = fs::read(decoded_file(&plain, &o, p));
            assert_same(&served.expect("served without --verify"), &want, &what);
        }
    }
    assert!(bad > 0, "{}: no part with a wrong digest", file.display());
}

/// True when `digest`, if any, is the digest of `bytes`.
fn digest_matches(digest: Option<&str>, bytes: &[u8]) -> bool {
    use sha2::Digest as _;
    let Some(d) = digest else {
        return true;
    };
    let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let actual = match d.split_once(':') {
        Some(("xxh3", _)) => format!("xxh3:{:016x}", xxhash_rust::xxh3::xxh3_64(bytes)),
        Some(("sha256", _)) => format!("sha256:{}", hex(&sha2::Sha256::digest(bytes))),
        _ => return false,
    };
    actual == d
}

// ---------------------------------------------------------------------------
// 16. unmount of something that is not a mount

#[test]
fn unmount_not_a_mount() {
    let dir = tempfile::tempdir().unwrap();
    for path in [dir.path().to_path_buf(), dir.path().join("missing")] {
        let args = ["unmount".as_ref(), path.as_os_str()];
        let out = ztfs(&args);
        assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
        assert!(out.stdout.is_empty(), "{}", describe(&args, &out));
    }
}

// ---------------------------------------------------------------------------
// Regression: the daemon of an unmounted filesystem must not take a new
// mount at the same path with it when it exits.

#[test]
fn remount_at_same_path_survives_old_daemon() {
    let file = sample("tiny-llama.zt");
    let m = Mount::new(&file, &[]);
    let old = m.daemon();
    let out = ztfs(&["unmount".as_ref(), m.path().as_os_str()]);
    assert!(out.status.success(), "{}", describe(&["unmount"], &out));
    let again = m.mount(&file, &[]);
    assert!(again.status.success(), "{}", describe(&["mount"], &again));
    assert!(
        wait_until(Duration::from_secs(5), || !is_alive(old)),
        "the old daemon exits"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(is_mounted(m.path()), "the new mount is still there");
    assert!(m.join("manifest.json").exists());
}

/// A sparse object that breaks its layout's data rules: a plain mount serves
/// its parts (each a valid array) but not its dense view; under `--verify`
/// its parts fail to open as well, as `check --verify` rejects the file.
#[test]
fn sparse_data_rules_in_the_mount() {
    let file = valid("csr-index-out-of-range");
    let plain = Mount::new(&file, &[]);
    let verified = Mount::new(&file, &["--verify"]);
    let o = &ls(&file).objects[0];
    let dir = |m: &Mount| m.join(&object_dirs(m)[&o.name]);
    for p in &o.parts {
        let want = cat(&file, &o.name, &p.name, false).expect("cat serves a part");
        assert_same(
            &fs::read(decoded_file(&plain, o, p)).unwrap(),
            &want,
            &p.name,
        );
        let e = File::open(decoded_file(&verified, o, p));
        assert_eq!(errno_of(e, &p.name), libc::EIO, "{} under --verify", p.name);
    }
    let view = fs::read(dir(&plain).join("dense"));
    assert_eq!(errno_of(view, "dense view"), libc::EIO);
}

/// A read that reaches the map without a length check first (rendering a
/// sparse object's dense view reads its parts in user space) on a backing
/// file truncated in place: EIO, and the daemon lives on (the SIGBUS guard).
#[test]
fn truncated_backing_file_under_a_view() {
    let (_dir, copy) = temp_copy(&valid("csr-u32"));
    let m = Mount::new(&copy, &[]);
    let o = &ls(&copy).objects[0];
    let view = m.join(&object_dirs(&m)[&o.name]).join("dense");
    cut(&copy, 4096);
    let r = within(10, "reading the view", move || fs::read(view));
    assert_eq!(errno_of(r, "reading the view past the cut"), libc::EIO);
    let pid = m.daemon();
    assert!(is_alive(pid), "the daemon survives");
    let mf = m.join("manifest.json");
    within(10, "stat manifest.json", move || fs::metadata(mf)).expect("the mount still answers");
}

// ---------------------------------------------------------------------------
// Everyday use: df, refused mount points, what mount and cat say

#[test]
fn df_reports_no_blocks_so_nothing_looks_full() {
    let m = Mount::new(&sample("tiny-llama.zt"), &[]);
    let st = statvfs(m.path()).expect("statvfs");
    assert_eq!((st.f_blocks, st.f_bfree, st.f_bavail), (0, 0, 0));
    assert!(st.f_files > 0, "inodes are counted");
    let out = std::process::Command::new("df")
        .arg(m.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("100%"), "{text}");
}

#[test]
fn mount_points_that_are_refused_say_why() {
    let file = sample("tiny-llama.zt");
    let dir = tempfile::tempdir().unwrap();
    let run = |mnt: &Path, flags: &[&str]| {
        let mut args: Vec<&OsStr> = vec!["mount".as_ref(), file.as_os_str(), mnt.as_os_str()];
        args.extend(flags.iter().map(OsStr::new));
        ztfs(&args)
    };
    let err = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    let missing = dir.path().join("missing");
    let o = run(&missing, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("mount point") && err(&o).contains("mkdir -p"),
        "{}",
        err(&o)
    );
    let plain = dir.path().join("plain");
    fs::write(&plain, b"x").unwrap();
    let o = run(&plain, &[]);
    assert!(err(&o).contains("not a directory"), "{}", err(&o));
    let full = dir.path().join("full");
    fs::create_dir(&full).unwrap();
    fs::write(full.join("a"), b"x").unwrap();
    let o = run(&full, &[]);
    assert!(
        err(&o).contains("not empty (1 entry)") && err(&o).contains("--nonempty"),
        "{}",
        err(&o)
    );
    let o = run(&full, &["--nonempty"]);
    assert!(o.status.success(), "{}", err(&o));
    cleanup(&full);
    // Over an existing mount: refused, naming what is there.
    let m = Mount::new(&file, &[]);
    let o = run(m.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("is mounted there already"), "{}", err(&o));
    let stacked = fs::read_to_string("/proc/self/mountinfo").unwrap();
    let at = m.path().to_string_lossy().into_owned();
    assert_eq!(
        stacked
            .lines()
            .filter(|l| l.split(' ').nth(4) == Some(&*at))
            .count(),
        1
    );
    // The model's path once, as the prefix of every message.
    for o in [run(&missing, &[]), run(&plain, &[]), run(m.path(), &[])] {
        let e = err(&o);
        assert_eq!(e.matches(&*file.to_string_lossy()).count(), 1, "{e}");
    }
}

#[test]
fn mount_says_where_and_how_to_unmount() {
    let file = sample("tiny-llama.zt");
    let m = Mount::unmounted();
    let out = m.mount(&file, &[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let pid = daemon_pid(m.path()).expect("a daemon");
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains(&format!("daemon pid {pid}")), "{text}");
    assert!(
        text.contains(&format!("ztfs unmount {}", m.path().display())),
        "{text}"
    );
}

#[test]
fn cat_suggests_near_names() {
    let file = sample("tiny-llama.zt");
    let args = ["cat".as_ref(), file.as_os_str(), "lm_haed.weight".as_ref()];
    let out = ztfs(&args);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("did you mean \"lm_head.weight\""), "{e}");
    assert_eq!(e.matches(&*file.to_string_lossy()).count(), 1, "{e}");
}

#[test]
fn a_background_daemon_logs_where_the_mount_line_says() {
    let home = tempfile::tempdir().unwrap();
    let m = Mount::unmounted();
    let file = sample("tiny-llama.zt");
    let out = std::process::Command::new(BIN)
        .args([OsStr::new("mount"), file.as_os_str(), m.path().as_os_str()])
        .env("HOME", home.path())
        .env_remove("XDG_STATE_HOME")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = home.path().join(".local/state/ztfs/ztfs.log");
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(line.contains(&format!("log {}", log.display())), "{line}");
    let _ = fs::read(m.join("model.norm.weight/data")).unwrap();
    let pid = daemon_pid(m.path()).expect("the daemon");
    cleanup(m.path());
    assert!(
        wait_until(FIVE_S, || !is_alive(pid)),
        "the daemon outlived its mount"
    );
    let text = fs::read_to_string(&log).expect("the log");
    assert!(text.contains("INFO") && text.contains("unmount"), "{text}");
}
