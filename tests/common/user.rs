//! A user without privileges, for mounts by a user (`setpriv`), and
//! /dev/fuse opened to them.

use super::*;

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
