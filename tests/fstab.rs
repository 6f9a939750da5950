//! ztfs under the real mount(8) and mount.fuse3 (package fuse3, which
//! .ci/run installs): `mount -t fuse.ztfs`, the `ztfs#SOURCE` form, an
//! fstab line (`mount -T FILE`), `umount`, options refused by name; and
//! readiness for systemd (`sd_notify` READY=1 on `$NOTIFY_SOCKET`).

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::*;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh mount point in a temporary directory, unmounted on drop.
struct Point {
    dir: tempfile::TempDir,
}

impl Point {
    fn new() -> Point {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("mnt")).unwrap();
        Point { dir }
    }

    fn mnt(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }
}

impl Drop for Point {
    fn drop(&mut self) {
        cleanup(&self.mnt());
    }
}

fn mount(args: &[&str]) -> Output {
    Command::new("mount").args(args).output().expect("mount(8)")
}

/// Mounted and serving the sample's bytes; then `umount` unmounts it and
/// the daemon exits.
fn check_served_then_umount(mnt: &Path, file: &Path) {
    assert!(is_mounted(mnt), "not mounted");
    let got = fs::read(mnt.join("model.norm.weight/data")).unwrap();
    assert_eq!(got, cat(file, "model.norm.weight", "data", false).unwrap());
    let pid = daemon_pid(mnt).expect("the daemon");
    let out = Command::new("umount").arg(mnt).output().unwrap();
    assert!(out.status.success(), "umount: {}", text(&out.stderr));
    assert!(
        wait_until(Duration::from_secs(10), || !is_alive(pid)),
        "daemon alive after umount"
    );
}

#[test]
fn mount_t_fuse_with_the_program_in_the_source() {
    let file = sample("tiny-llama.zt");
    let p = Point::new();
    let source = format!("{BIN}#{}", file.display());
    let mnt = p.mnt();
    let out = mount(&[
        "-t",
        "fuse",
        &source,
        mnt.to_str().unwrap(),
        "-o",
        "ro,verify,nofail",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    check_served_then_umount(&mnt, &file);
    let out = mount(&[
        "-t",
        "fuse",
        &source,
        mnt.to_str().unwrap(),
        "-o",
        "ro,bogus",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("\"bogus\""),
        "{}",
        text(&out.stderr)
    );
    assert!(!is_mounted(&mnt));
}

/// `ztfs` in the standard PATH mount(8) gives its helpers, for the test's
/// duration (nothing of that name may be there before).
struct Installed(PathBuf);

impl Installed {
    fn new() -> Installed {
        let link = PathBuf::from("/usr/local/bin/ztfs");
        assert!(
            fs::symlink_metadata(&link).is_err(),
            "{} exists: this test would run it instead of the binary under test",
            link.display()
        );
        std::os::unix::fs::symlink(BIN, &link).unwrap();
        Installed(link)
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

#[test]
fn mount_t_fuse_ztfs_and_an_fstab_line() {
    let file = sample("tiny-llama.zt");
    let _installed = Installed::new();
    let p = Point::new();
    let mnt = p.mnt();
    let out = mount(&[
        "-t",
        "fuse.ztfs",
        file.to_str().unwrap(),
        mnt.to_str().unwrap(),
        "-o",
        "ro,cache_mib=64",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    check_served_then_umount(&mnt, &file);
    // The line a user puts in /etc/fstab, read from a file of its own.
    let fstab = p.dir.path().join("fstab");
    let line = format!(
        "{} {} fuse.ztfs ro,nofail,allow_other,passthrough=off 0 0\n",
        file.display(),
        mnt.display()
    );
    fs::write(&fstab, line).unwrap();
    let out = mount(&["-T", fstab.to_str().unwrap(), mnt.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    check_served_then_umount(&mnt, &file);
}

#[test]
fn foreground_mount_tells_systemd_when_ready() {
    use std::os::unix::net::UnixDatagram;
    let file = sample("tiny-llama.zt");
    let p = Point::new();
    let sock_path = p.dir.path().join("notify");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut child = Command::new(BIN)
        .args(["mount", "-f"])
        .arg(&file)
        .arg(p.mnt())
        .env("NOTIFY_SOCKET", &sock_path)
        .spawn()
        .unwrap();
    let mut buf = [0u8; 64];
    let got = sock.recv(&mut buf);
    let ready = got.as_ref().map(|&n| buf[..n].to_vec());
    let mounted = is_mounted(&p.mnt());
    kill(child.id() as i32, libc::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(
        ready.ok().as_deref(),
        Some(&b"READY=1"[..]),
        "no READY=1 from the daemon"
    );
    assert!(mounted, "READY=1 before the mount answered");
    assert!(status.success(), "{status}");
    assert!(!is_mounted(&p.mnt()));
}
