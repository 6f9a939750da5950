//! Kernel passthrough through real mounts: reflink clones on real XFS and
//! btrfs filesystems made in loop files, memory clones on the ordinary
//! filesystem, for raw, compressed, `.npy` and view files. Every file's
//! bytes are compared with `ztfs cat` by `read` and by `mmap`, and the
//! daemon's debug log (one line per read it serves) shows that reads of a
//! passed-through file never reach it. Also: no extra disk for reflinks
//! (`df`), eviction under a small budget, many concurrent opens making one
//! clone, a model rewritten under an open file, kill -9 with files open,
//! and `--passthrough off`.
//!
//! Needs root, /dev/fuse, loop devices, `mkfs.xfs` and `mkfs.btrfs`
//! (`.ci/run` installs xfsprogs and btrfs-progs): nothing here skips.

#[allow(dead_code)]
#[path = "corpus/builder.rs"]
mod builder;
mod common;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use builder::{dense, part, root, zstd_seekable, Fields, FileBuilder, Lcg};
use common::*;

const MIB: usize = 1 << 20;

/// A loop-mounted filesystem of `kind` in a temporary directory, unmounted
/// (and its loop device released) on drop.
struct LoopFs {
    dir: tempfile::TempDir,
}

impl LoopFs {
    fn new(kind: &str) -> LoopFs {
        let dir = tempfile::Builder::new()
            .prefix("ztfs-loopfs-")
            .tempdir()
            .unwrap();
        let img = dir.path().join("fs.img");
        fs::File::create(&img).unwrap().set_len(1 << 30).unwrap();
        let mkfs = format!("mkfs.{kind}");
        run(Command::new(&mkfs).arg("-q").arg(&img), &mkfs);
        let mnt = dir.path().join("mnt");
        fs::create_dir(&mnt).unwrap();
        run(
            Command::new("mount")
                .args(["-o", "loop"])
                .arg(&img)
                .arg(&mnt),
            "mount -o loop",
        );
        LoopFs { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.path()).status();
    }
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e} (.ci/run installs xfsprogs and btrfs-progs)"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Blocks used on the filesystem holding `path` (`df`).
fn used_blocks(path: &Path) -> u64 {
    // SAFETY: statvfs fills the struct it is given.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
    (st.f_blocks - st.f_bfree) * st.f_frsize / 4096
}

/// A model with large files of each kind: raw parts (one of a length that
/// is not a multiple of the block), a compressed part and a bool part.
fn model() -> Vec<u8> {
    let mut rng = Lcg::new(0x9A55);
    let a = rng.bytes(3 * MIB);
    let b = rng.bytes(2 * MIB + 1234);
    let z: Vec<u8> = (0..2 * MIB).map(|i| (i / 4096) as u8).collect();
    let flags: Vec<u8> = (0..MIB + 7).map(|i| (i % 3 == 0) as u8).collect();
    let mut f = FileBuilder::new();
    let (ba, bb) = (f.blob(&a), f.blob(&b));
    let bz = f.blob(&zstd_seekable(&z, MIB / 2));
    let bf = f.blob(&flags);
    let zpart = part("u8", bz)
        .set("encoding", "zt.zstd-seekable/1")
        .set("decoded_length", z.len() as u64);
    let objects = Fields::new()
        .set("a", dense(&[a.len() as u64], part("u8", ba)))
        .set("b", dense(&[b.len() as u64], part("u8", bb)))
        .set("z", dense(&[z.len() as u64], zpart))
        .set(
            "flags",
            dense(&[flags.len() as u64], part("u8", bf).set("type", "bool")),
        );
    f.finish(&root(objects).sorted().encode())
}

/// The daemon's reads of inode `ino` so far, from its debug log.
fn daemon_reads(m: &Mount, ino: u64) -> usize {
    let needle = format!("read: inode {ino},");
    m.log().lines().filter(|l| l.contains(&needle)).count()
}

fn mmap_all(path: &Path) -> Vec<u8> {
    let f = fs::File::open(path).unwrap();
    mmap_read(&f, f.metadata().unwrap().len() as usize)
}

/// Every file of `m` against `cat`, read whole and mapped; for each file
/// of `min` bytes or more (passed through) no read reaches the daemon.
/// Returns how many files were checked as passed through.
fn check_all(file: &Path, m: &Mount, min: u64) -> usize {
    let mut through = 0;
    for (name, rel) in object_dirs(m) {
        let dir = m.join(&rel);
        let meta = meta(&dir);
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        for p in meta["parts"].items() {
            let s = served(p);
            let pname = p["name"].text();
            if let Some(d) = s.decoded {
                let want = cat(file, &name, pname, false).expect("cat");
                if !p["npy"].is_null() {
                    let npy = fs::read(dir.join(p["npy"]["file"].text())).unwrap();
                    let h = npy.len() - want.len();
                    assert_eq!(&npy[h..], &want[..], "{name}: .npy data");
                    files.push((p["npy"]["file"].text().into(), npy));
                }
                files.push((d, want));
            }
            if let Some(r) = s.raw {
                files.push((r, cat(file, &name, pname, true).expect("cat --raw")));
            }
        }
        for (f, want) in files {
            let path = dir.join(&f);
            let ino = fs::metadata(&path).unwrap().ino();
            let before = daemon_reads(m, ino);
            assert_same(
                &fs::read(&path).unwrap(),
                &want,
                &format!("{name}/{f}: read"),
            );
            assert_same(&mmap_all(&path), &want, &format!("{name}/{f}: mmap"));
            if want.len() as u64 >= min {
                assert_eq!(
                    daemon_reads(m, ino),
                    before,
                    "{name}/{f}: reads reached the daemon"
                );
                through += 1;
            }
        }
    }
    through
}

#[test]
fn reflink_clones_on_xfs_and_btrfs_share_extents_and_serve_every_byte() {
    for kind in ["xfs", "btrfs"] {
        let lfs = LoopFs::new(kind);
        let file = lfs.path().join("model.zt");
        fs::write(&file, model()).unwrap();
        run(&mut Command::new("sync"), "sync");
        let used = used_blocks(&lfs.path());
        let m = Mount::new(&file, &["--passthrough", "reflink", "--log-level", "debug"]);
        // Every byte right, by read and mmap; then which files pass
        // through: the raw parts and their .npy files (a bool part checked
        // whole first), not the decoded z (reflink only: no memory clones).
        check_all(&file, &m, u64::MAX);
        for f in ["a/data", "a/data.npy", "b/data", "b/data.npy", "flags/data"] {
            let ino = fs::metadata(m.join(f)).unwrap().ino();
            let before = daemon_reads(&m, ino);
            let _ = fs::read(m.join(f)).unwrap();
            assert_eq!(
                daemon_reads(&m, ino),
                before,
                "{kind}: {f} reached the daemon"
            );
        }
        let ino = fs::metadata(m.join("z/data")).unwrap().ino();
        let _ = fs::read(m.join("z/data")).unwrap();
        assert!(
            daemon_reads(&m, ino) > 0,
            "{kind}: a decoded part has no reflink clone"
        );
        run(&mut Command::new("sync"), "sync");
        let grown = used_blocks(&lfs.path()).saturating_sub(used);
        // Only the partial last blocks (and the .npy headers) are written.
        assert!(grown < 64, "{kind}: the clones took {grown} blocks");
        assert!(m.log().contains("passthrough is on"), "{}", m.log());
    }
}

#[test]
fn memory_clones_where_reflinks_fail_serve_decoded_and_checked_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.zt");
    fs::write(&file, model()).unwrap();
    let m = Mount::new(&file, &["--clone-cache", "64M", "--log-level", "debug"]);
    // Every file of 1 MiB or more: a, b, z, flags and their .npy files.
    let through = check_all(&file, &m, 1 << 20);
    assert_eq!(through, 8, "{}", m.log());
    assert!(m.log().contains("no reflink clones here"), "{}", m.log());
    // Raw blobs are copied in the kernel, never by the fallback's reads.
    assert!(!m.log().contains("in-kernel copy failed"), "{}", m.log());
    // A view and its .npy: a sparse corpus file, every file passed through.
    let sparse = valid("csr-u32");
    let m = Mount::new(
        &sparse,
        &[
            "--passthrough",
            "memory",
            "--passthrough-min",
            "0",
            "--log-level",
            "debug",
        ],
    );
    let through = check_all(&sparse, &m, 0);
    assert!(through >= 3, "{through}");
    let dense = m.join("w/dense");
    let ino = fs::metadata(&dense).unwrap().ino();
    let (a, b) = (
        fs::read(&dense).unwrap(),
        fs::read(m.join("w/dense.npy")).unwrap(),
    );
    assert_eq!(&b[4096..], &a[..]);
    assert_eq!(
        daemon_reads(&m, ino),
        0,
        "the view's reads reached the daemon"
    );
}

#[test]
fn a_bool_part_that_breaks_its_rule_is_never_passed_through() {
    let file = valid("bool-invalid-byte");
    for mode in ["memory", "auto"] {
        let flags = [
            "--passthrough",
            mode,
            "--passthrough-min",
            "0",
            "--clone-cache",
            "1M",
        ];
        let m = Mount::new(&file, &flags);
        let e = fs::read(m.join("w/data")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO), "{mode}");
    }
}

#[test]
fn a_small_budget_evicts_clones_without_open_files_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.zt");
    fs::write(&file, model()).unwrap();
    let flags = [
        "--passthrough",
        "memory",
        "--clone-cache",
        "4M",
        "--log-level",
        "debug",
    ];
    let m = Mount::new(&file, &flags);
    let ino = |f: &str| fs::metadata(m.join(f)).unwrap().ino();
    // a (3 MiB) is cloned, then b (2 MiB) evicts it: a is closed.
    assert_eq!(fs::read(m.join("a/data")).unwrap().len(), 3 * MIB);
    assert_eq!(daemon_reads(&m, ino("a/data")), 0);
    wait_released(&m, ino("a/data"), 1);
    let held = fs::File::open(m.join("b/data")).unwrap();
    assert!(
        m.log().contains(&format!(
            "evicted the memory clone of inode {}",
            ino("a/data")
        )),
        "{}",
        m.log()
    );
    // b is open: a's new open finds no room and is served by the daemon.
    let _ = fs::read(m.join("a/data")).unwrap();
    assert!(
        daemon_reads(&m, ino("a/data")) > 0,
        "a passed through beside an open b"
    );
    drop(held);
    wait_released(&m, ino("b/data"), 1);
    // With b closed, a gets a clone again.
    let before = daemon_reads(&m, ino("a/data"));
    let _ = fs::read(m.join("a/data")).unwrap();
    assert_eq!(daemon_reads(&m, ino("a/data")), before);
}

/// Waits (at most 10 s) until the daemon has had `n` releases of `ino`: a
/// close returns before FUSE's RELEASE reaches the daemon, and a clone an
/// open handle holds is not evicted (the test raced it under load).
fn wait_released(m: &Mount, ino: u64, n: usize) {
    let line = format!("ino {ino:#018x} RELEASE");
    let released = || m.log().matches(&line).count() >= n;
    assert!(
        wait_until(std::time::Duration::from_secs(10), released),
        "{}",
        m.log()
    );
}

#[test]
fn concurrent_first_opens_make_one_clone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.zt");
    fs::write(&file, model()).unwrap();
    let m = Mount::new(&file, &["--passthrough", "memory", "--log-level", "debug"]);
    let path = m.join("a/data");
    let want = cat(&file, "a", "data", false).unwrap();
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || fs::read(path).unwrap())
        })
        .collect();
    for t in threads {
        assert!(t.join().unwrap() == want, "a reader saw other bytes");
    }
    let ino = fs::metadata(&path).unwrap().ino();
    let made = format!("inode {ino}: memory clone");
    assert_eq!(m.log().matches(&made).count(), 1, "{}", m.log());
}

#[test]
fn a_model_rewritten_under_an_open_file_does_not_change_what_it_reads() {
    for (kind, lfs) in [("memory", None), ("reflink", Some(LoopFs::new("xfs")))] {
        let dir = tempfile::tempdir().unwrap();
        let base = lfs.as_ref().map_or(dir.path().to_path_buf(), LoopFs::path);
        let file = base.join("model.zt");
        let bytes = model();
        fs::write(&file, &bytes).unwrap();
        let m = Mount::new(&file, &["--passthrough", kind]);
        let want = cat(&file, "a", "data", false).unwrap();
        let f = fs::File::open(m.join("a/data")).unwrap();
        // Cut in place, then filled with other bytes.
        let w = fs::OpenOptions::new().write(true).open(&file).unwrap();
        w.set_len(4096).unwrap();
        w.set_len(bytes.len() as u64).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&w, &vec![0xEE; bytes.len() - 8192], 8192)
            .unwrap();
        let mut got = vec![0; want.len()];
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut got, 0).unwrap();
        assert!(got == want, "{kind}: the open clone changed with the model");
    }
}

#[test]
fn kill_9_with_passed_through_files_open_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.zt");
    fs::write(&file, model()).unwrap();
    let m = Mount::new(&file, &["--passthrough", "memory"]);
    let open: Vec<fs::File> = ["a/data", "b/data", "z/data"]
        .iter()
        .map(|f| fs::File::open(m.join(f)).unwrap())
        .collect();
    let pid = m.daemon();
    kill(pid, libc::SIGKILL);
    assert!(wait_until(
        std::time::Duration::from_secs(10),
        || !is_alive(pid)
    ));
    drop(open);
    let out = ztfs(&[std::ffi::OsStr::new("unmount"), m.path().as_os_str()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!is_mounted(m.path()));
    let left: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        [std::ffi::OsString::from("model.zt")],
        "files left beside the model"
    );
}

#[test]
fn auto_makes_no_memory_clone_unless_given_a_budget() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.zt");
    fs::write(&file, model()).unwrap();
    let m = Mount::new(&file, &["--log-level", "debug"]);
    let ino = fs::metadata(m.join("a/data")).unwrap().ino();
    let _ = fs::read(m.join("a/data")).unwrap();
    assert!(
        daemon_reads(&m, ino) > 0,
        "auto made a memory clone on ext4"
    );
    assert!(m.log().contains("passthrough is on"), "{}", m.log());
}

#[test]
fn passthrough_off_serves_every_read_from_the_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.zt");
    fs::write(&file, model()).unwrap();
    let m = Mount::new(&file, &["--passthrough", "off", "--log-level", "debug"]);
    let ino = fs::metadata(m.join("a/data")).unwrap().ino();
    let _ = fs::read(m.join("a/data")).unwrap();
    assert!(daemon_reads(&m, ino) > 0);
    assert!(!m.log().contains("passthrough is on"), "{}", m.log());
}

/// As a user (no CAP_SYS_ADMIN), passthrough is off: the mount says so,
/// once, when it was asked for by name (`--passthrough memory`), and says
/// nothing under the default `auto`, where its absence is no news.
#[test]
fn without_cap_sys_admin_passthrough_is_said_off_only_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let (file, mnt) = (dir.path().join("model.zt"), dir.path().join("mnt"));
    fs::write(&file, model()).unwrap();
    fs::create_dir(&mnt).unwrap();
    for p in [dir.path(), &file, &mnt] {
        give_to_test_user(p);
    }
    let _fuse = FuseOpen::new();
    for (flags, said) in [(&[][..], 0), (&["--passthrough", "memory"][..], 1)] {
        let mut argv = vec![
            OsStr::new(BIN),
            OsStr::new("mount"),
            file.as_os_str(),
            mnt.as_os_str(),
        ];
        argv.extend(flags.iter().map(OsStr::new));
        let out = as_test_user(&argv);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let unmount =
            || as_test_user(&[OsStr::new("fusermount3"), OsStr::new("-u"), mnt.as_os_str()]);
        let r = std::panic::catch_unwind(|| {
            assert!(out.status.success(), "{stderr}");
            assert_eq!(
                stderr.matches("passthrough is off").count(),
                said,
                "{flags:?}: {stderr}"
            );
            assert_eq!(
                stderr.contains("CAP_SYS_ADMIN"),
                said == 1,
                "{flags:?}: {stderr}"
            );
            let read = as_test_user(&[OsStr::new("cat"), mnt.join("a/data").as_os_str()]);
            assert!(
                read.status.success(),
                "{}",
                String::from_utf8_lossy(&read.stderr)
            );
            assert!(
                read.stdout == cat(&file, "a", "data", false).unwrap(),
                "a/data as a user"
            );
        });
        let u = unmount();
        assert!(
            u.status.success(),
            "fusermount3 -u: {}",
            String::from_utf8_lossy(&u.stderr)
        );
        if let Err(e) = r {
            std::panic::resume_unwind(e);
        }
    }
}
