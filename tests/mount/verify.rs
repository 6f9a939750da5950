//! `--verify`, and families with a missing, wrong or odd shard: what is
//! served, what fails, and what the terminal is told.

use super::*;

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
pub(crate) fn check_verify(file: &Path) {
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
pub(crate) fn digest_matches(digest: Option<&str>, bytes: &[u8]) -> bool {
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
