//! Stale mounts: a dead daemon's mount cleaned up, and a remount at the
//! same path surviving the old daemon.

use super::*;

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
