//! What a read-only tree refuses (every mutation is EROFS), and what it
//! answers that is not a read: statfs, ioctl.

use super::*;

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
pub(crate) fn mutations(
    dir: &Path,
    part: &Path,
    manifest: &Path,
) -> Vec<(&'static str, io::Result<()>)> {
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
