//! The mount command's words: an invalid file refused, mount points
//! refused and why, where the log and the unmount command are, `df`, and
//! `cat`'s near names.

use super::*;

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

#[test]
fn df_reports_no_blocks_so_nothing_looks_full() {
    let m = Mount::new(&sample("tiny-llama.zt"), &[]);
    let st = statvfs(m.path()).expect("statvfs");
    assert_eq!((st.f_blocks, st.f_bfree, st.f_bavail), (0, 0, 0));
    assert_eq!(
        (st.f_files, st.f_ffree),
        (0, 0),
        "inodes as /proc reports them"
    );
    for flags in [&[][..], &["-i"][..]] {
        let out = std::process::Command::new("df")
            .args(flags)
            .arg(m.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && !text.contains("100%"),
            "df {flags:?}: {text}"
        );
    }
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
    // One log per mount, named after its mount point.
    let name = m
        .path()
        .to_string_lossy()
        .trim_start_matches('/')
        .replace('/', "%2F");
    let log = home.path().join(format!(".local/state/ztfs/{name}.log"));
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

/// The aliases `--help` lists are commands too, not a model's name given
/// as mount(8) gives it (`ztfs SOURCE MNT`).
#[test]
fn umount_and_mounts_are_the_aliases_help_says() {
    let m = Mount::new(&sample("tiny-llama.zt"), &[]);
    let out = ztfs(&[OsStr::new("mounts")]);
    assert!(out.status.success(), "{}", describe(&["mounts"], &out));
    let out = ztfs(&[OsStr::new("umount"), m.path().as_os_str()]);
    assert!(out.status.success(), "{}", describe(&["umount"], &out));
    assert!(!is_mounted(m.path()));
}

/// A mount point whose path, %-encoded, is past a file name's 255 bytes
/// (CI workspaces nest deep) still mounts: its log's name is shortened
/// with a hash, and the log holds the path.
#[test]
fn a_mount_point_of_any_length_has_a_log() {
    let home = tempfile::tempdir().unwrap();
    let top = tempfile::tempdir().unwrap();
    let mut mnt = top.path().to_path_buf();
    for _ in 0..3 {
        mnt.push("d".repeat(100));
    }
    fs::create_dir_all(&mnt).unwrap();
    assert!(mnt.as_os_str().len() > 300);
    let file = sample("tiny-llama.zt");
    let out = std::process::Command::new(BIN)
        .args([OsStr::new("mount"), file.as_os_str(), mnt.as_os_str()])
        .env("HOME", home.path())
        .env_remove("XDG_STATE_HOME")
        .output()
        .unwrap();
    let mounted = is_mounted(&mnt);
    cleanup(&mnt);
    assert!(
        out.status.success() && mounted,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let logs: Vec<_> = fs::read_dir(home.path().join(".local/state/ztfs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert!(logs[0].file_name().unwrap().len() <= 255);
    let text = fs::read_to_string(&logs[0]).unwrap();
    assert!(text.contains(&format!("on {}", mnt.display())), "{text}");
}

/// A mount that fails on its arguments leaves no empty log behind, and
/// the logs of ended mounts are kept within a bound.
#[test]
fn logs_of_failed_and_ended_mounts_do_not_pile_up() {
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join(".local/state/ztfs");
    fs::create_dir_all(&state).unwrap();
    for i in 0..40 {
        fs::write(state.join(format!("tmp%2Fold{i}.log")), "INFO unmounted\n").unwrap();
    }
    fs::write(state.join("tmp%2Fempty.log"), "").unwrap();
    let m = Mount::unmounted();
    let out = std::process::Command::new(BIN)
        .args([
            OsStr::new("mount"),
            OsStr::new("/no/such/model.zt"),
            m.path().as_os_str(),
        ])
        .env("HOME", home.path())
        .env_remove("XDG_STATE_HOME")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let own = names.iter().any(|n| n.contains("mnt.log"));
    assert!(!own, "the failed mount's empty log is left: {names:?}");
    assert!(!names.contains(&"tmp%2Fempty.log".to_string()), "{names:?}");
    assert_eq!(names.len(), 32, "{names:?}");
}

/// A background mount's log has the line a foreground mount writes:
/// which model, on which mount point.
#[test]
fn the_background_log_says_what_was_mounted_where() {
    let file = corpus().join("samples/tiny-llama.zt");
    let m = Mount::new(&file, &[]);
    let want = format!("mounted {} on {}", file.display(), m.path().display());
    assert!(
        wait_until(Duration::from_secs(5), || m.log().contains(&want)),
        "{want:?} not in the log: {}",
        m.log()
    );
}

/// `--uid`, `--gid`, `--file-mode` (or `--mode`) and `--dir-mode`, as
/// rclone and mountpoint-s3 spell them, set every entry's owner and
/// permission bits; write or execute bits are refused.
#[test]
fn owner_and_modes_are_set_as_rclone_spells_them() {
    use std::os::unix::fs::MetadataExt;
    let file = corpus().join("samples/tiny-llama.zt");
    let flags = [
        "--uid",
        "1234",
        "--gid",
        "4321",
        "--file-mode",
        "440",
        "--dir-mode",
        "550",
    ];
    let m = Mount::new(&file, &flags);
    for (path, mode) in [
        (m.path().to_path_buf(), 0o550),
        (m.join("manifest.json"), 0o440),
    ] {
        let meta = fs::metadata(&path).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (1234, 4321), "{}", path.display());
        assert_eq!(meta.mode() & 0o7777, mode, "{}", path.display());
    }
    drop(m);
    let m = Mount::new(&file, &["--mode", "400"]);
    let meta = fs::metadata(m.join("manifest.json")).unwrap();
    assert_eq!(
        (
            meta.mode() & 0o7777,
            fs::metadata(m.path()).unwrap().mode() & 0o7777
        ),
        (0o400, 0o500)
    );
    drop(m);
    let m = Mount::unmounted();
    for bad in [
        &["--dir-mode", "755"][..],
        &["--file-mode", "644"],
        &["--uid", "me"],
    ] {
        let out = m.mount(&file, bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

/// `--auto-unmount`: the kernel's mount goes when the daemon dies, even
/// by SIGKILL, so no stale mount is left behind.
#[test]
fn auto_unmount_unmounts_when_the_daemon_dies() {
    let m = Mount::new(&corpus().join("samples/tiny-llama.zt"), &["--auto-unmount"]);
    assert!(m.join("manifest.json").exists());
    kill(m.daemon(), libc::SIGKILL);
    assert!(
        wait_until(Duration::from_secs(10), || !is_mounted(m.path())),
        "still mounted after the daemon died"
    );
}
