//! Models read by URL from a real nginx on 127.0.0.1 (tests/common/http.rs;
//! `.ci/run` installs nginx-light): every command gives the outcome it
//! gives for the local file, a mount by URL serves the bytes of a local
//! mount, and a changed object or a dead server fails reads with EIO
//! without hanging the mount.

mod common;

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::http::Nginx;
use common::{corpus, ztfs, Mount};

/// The corpus file at `rel` (below `corpus/`) and its URL.
fn both(server: &Nginx, path: &Path) -> (PathBuf, String) {
    let rel = path.strip_prefix(corpus()).expect("a corpus file");
    (path.to_path_buf(), server.url(&rel.to_string_lossy()))
}

/// What a command printed and how it ended, with the file's path spelled
/// as `name`, so a local run and a URL run compare equal.
fn outcome(args: &[&OsStr], path: &str, name: &str) -> (Option<i32>, String, String) {
    let out = ztfs(args);
    let text = |b: &[u8]| String::from_utf8_lossy(b).replace(path, name);
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

fn is_hurray(path: &Path) -> bool {
    fs::read(path).is_ok_and(|b| b.starts_with(b"HRRYFILE"))
}

#[test]
fn every_corpus_file_has_the_same_outcome_by_url() {
    let server = Nginx::serve(&corpus());
    let mut compared = 0;
    for row in common::rows() {
        let (path, url) = both(&server, &row.path());
        let p = path.to_string_lossy().into_owned();
        if is_hurray(&path) {
            let out = ztfs(&["check", url.as_str()]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success() && err.contains("needs a local file"), "{url}: {err}");
            continue;
        }
        for cmd in [&["check", "--verify"][..], &["digest"], &["ls"], &["manifest"]] {
            let run = |file: &str| {
                let args: Vec<&OsStr> = cmd.iter().chain([&file]).map(OsStr::new).collect();
                outcome(&args, file, "FILE")
            };
            assert_eq!(run(&url), run(&p), "{cmd:?} {url}");
        }
        compared += 1;
    }
    assert!(compared >= 100, "only {compared} files compared");
}

#[test]
fn cat_by_url_gives_every_part_s_local_bytes() {
    let server = Nginx::serve(&corpus());
    for path in common::mountable_files() {
        let (path, url) = both(&server, &path);
        let listing = common::ls(&path);
        for o in &listing.objects {
            for p in &o.parts {
                for raw in [false, true] {
                    let local = common::cat(&path, &o.name, &p.name, raw);
                    let remote = common::cat(Path::new(&url), &o.name, &p.name, raw);
                    let p_ = path.to_string_lossy();
                    assert_eq!(
                        remote.map_err(|e| e.replace(&url, "FILE")),
                        local.map_err(|e| e.replace(p_.as_ref(), "FILE")),
                        "{url} {} {} raw={raw}",
                        o.name,
                        p.name
                    );
                }
            }
        }
    }
}

/// Every file below `dir`, relative, with its bytes (or the error kind).
fn read_tree(dir: &Path) -> Vec<(PathBuf, Result<Vec<u8>, std::io::ErrorKind>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                out.push((rel, fs::read(&path).map_err(|e| e.kind())));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn a_mount_by_url_serves_what_a_local_mount_serves() {
    let server = Nginx::serve(&corpus());
    let files = [
        common::sample("tiny-llama.zt"),
        common::sample("mixed-dtypes.zt"),
        common::valid("csr-u32"),
        corpus().join("families/local-and-foreign/model.zt"),
    ];
    let zstd = common::mountable_files()
        .into_iter()
        .find(|f| common::ls(f).objects.iter().any(|o| o.parts.iter().any(|p| p.encoding.is_some())))
        .expect("a corpus file with a compressed part");
    for path in files.iter().chain([&zstd]) {
        let (path, url) = both(&server, path);
        let local = Mount::new(&path, &[]);
        let remote = Mount::new(Path::new(&url), &[]);
        let (a, b) = (read_tree(local.path()), read_tree(remote.path()));
        assert_eq!(a.len(), b.len(), "{url}");
        for ((pa, da), (pb, db)) in a.iter().zip(&b) {
            assert_eq!(pa, pb, "{url}");
            // The mount's time differs; everything else is the same.
            assert!(da == db, "{url}: {} differs", pa.display());
        }
    }
}

#[test]
fn an_object_replaced_under_a_mount_fails_its_reads_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let big = common::sample("tiny-llama.zt");
    let file = dir.path().join("model.zt");
    fs::copy(&big, &file).unwrap();
    let server = Nginx::serve(dir.path());
    let m = Mount::new(Path::new(&server.url("model.zt")), &["--log-level", "debug"]);
    let listing = common::ls(&file);
    let parts: Vec<PathBuf> = (listing.objects.iter())
        .map(|o| common::part_file(&m.join(&o.name), &o.parts[0].name, false))
        .collect();
    assert!(fs::read(&parts[0]).is_ok());
    // A new version under the same name (a new inode, so a new ETag).
    let next = dir.path().join("next.zt");
    let mut bytes = fs::read(&big).unwrap();
    bytes.extend_from_slice(&[0; 4096]);
    fs::write(&next, &bytes).unwrap();
    fs::rename(&next, &file).unwrap();
    let last = parts.last().unwrap();
    let e = fs::read(last).expect_err("a read of the replaced object");
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    assert!(m.log().contains("changed since it was opened"), "{}", m.log());
}

#[test]
fn a_dead_server_fails_reads_in_bounded_time_and_a_live_one_serves_again() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(common::sample("tiny-llama.zt"), dir.path().join("model.zt")).unwrap();
    let mut server = Nginx::serve(dir.path());
    let m = Mount::new(Path::new(&server.url("model.zt")), &[]);
    let listing = common::ls(&dir.path().join("model.zt"));
    let o = listing.objects.last().unwrap();
    let part = common::part_file(&m.join(&o.name), &o.parts[0].name, false);
    server.stop();
    let t = Instant::now();
    let e = fs::read(&part).expect_err("no server, no bytes");
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    assert!(t.elapsed() < Duration::from_secs(40), "{:?}", t.elapsed());
    // Virtual files need no server.
    assert!(fs::read(m.join("manifest.json")).is_ok());
    assert!(fs::read(m.join(&o.name).join("meta.json")).is_ok());
    server.start_again();
    let local = common::cat(&dir.path().join("model.zt"), &o.name, &o.parts[0].name, false).unwrap();
    assert_eq!(fs::read(&part).unwrap(), local);
}
