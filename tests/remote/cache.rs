//! A model read by URL through a disk cache (`--cache-dir`): a later
//! mount is served from it and a damaged block is fetched again, a block
//! planted from another cache is not served, and the cache keeps within
//! its size, for the mount and `cat` alike.

use crate::common;
use crate::reads::{fetches, model, served, MIB};

use std::fs;
use std::path::{Path, PathBuf};

use common::{ztfs, Mount};

/// The block files of a disk cache (`ztfs-block-<64 hex>`, by name), and
/// their bytes in all.
fn cached_blocks(dir: &Path) -> (Vec<PathBuf>, u64) {
    let is_block = |name: &str| {
        name.strip_prefix("ztfs-block-")
            .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    let mut files: Vec<PathBuf> = (fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().is_some_and(is_block))
        .collect();
    files.sort();
    let bytes = files.iter().map(|p| p.metadata().unwrap().len()).sum();
    (files, bytes)
}

#[test]
fn a_disk_cache_serves_a_later_mount_and_refetches_a_damaged_block() {
    let (dir, _server, url) = served(&model(false));
    let cache = tempfile::tempdir().unwrap();
    let flags = [
        "--log-level",
        "debug",
        "--cache-dir",
        cache.path().to_str().unwrap(),
    ];
    let local = |o: &str| common::cat(&dir.path().join("model.zt"), o, "data", false).unwrap();
    let read_all = |m: &Mount| {
        for o in ["a", "b"] {
            common::assert_same(
                &fs::read(m.join(format!("{o}/data"))).unwrap(),
                &local(o),
                o,
            );
        }
    };
    let first = Mount::new(Path::new(&url), &flags);
    read_all(&first);
    assert!(fetches(&first.log()) > 0, "{}", first.log());
    drop(first);
    // The object's 5 MiB before the 1 MiB tail: 5 blocks, and the one the
    // tail starts in when a read crosses into it.
    let (files, _) = cached_blocks(cache.path());
    assert!((5..=6).contains(&files.len()), "{files:?}");

    let again = Mount::new(Path::new(&url), &flags);
    read_all(&again);
    assert_eq!(fetches(&again.log()), 0, "all from disk:\n{}", again.log());
    drop(again);
    // A URL with another query (a presigned URL signed again) is the same
    // object: its blocks' names leave the query out.
    let resigned = Mount::new(Path::new(&format!("{url}?sig=fresh")), &flags);
    read_all(&resigned);
    assert_eq!(fetches(&resigned.log()), 0, "{}", resigned.log());
    drop(resigned);

    // A damaged block is dropped and fetched again, never served.
    let mut bytes = fs::read(&files[0]).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 0x40;
    fs::write(&files[0], bytes).unwrap();
    let damaged = Mount::new(Path::new(&url), &flags);
    read_all(&damaged);
    assert_eq!(fetches(&damaged.log()), 1, "{}", damaged.log());
    assert!(
        damaged.log().contains("cached block dropped"),
        "{}",
        damaged.log()
    );
}

/// A block file planted in a cache by whoever may write it, with a check
/// that is right for another cache (its own, whose key they hold), is
/// dropped and its block fetched again: the object's bytes are served.
#[test]
fn a_block_planted_from_another_cache_is_not_served() {
    let genuine = model(false);
    let (dir, _server, url) = served(&genuine);
    let path = dir.path().join("model.zt");
    let cat = |cache: &Path| {
        let args = ["cat", "--cache-dir", cache.to_str().unwrap(), &url, "a"];
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ztfs"))
            .args(args)
            .env("ZTFS_LOG", "debug")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::describe(&args, &out));
        (
            out.stdout,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (victim, attacker) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (want, _) = cat(victim.path());
    let local = common::cat(&path, "a", "data", false).unwrap();
    common::assert_same(&want, &local, "a");
    // The attacker serves other bytes under the same pin (size and
    // modification time, so the same ETag) and fills a cache of theirs.
    let modified = fs::metadata(&path).unwrap().modified().unwrap();
    let mut forged = genuine.clone();
    for b in &mut forged[MIB + 100..2 * MIB - 100] {
        *b ^= 0x5a;
    }
    let set = |bytes: &[u8]| {
        fs::write(&path, bytes).unwrap();
        let f = fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(modified).unwrap();
    };
    set(&forged);
    let (theirs, _) = cat(attacker.path());
    assert_ne!(theirs, want, "the attacker's cache holds other bytes");
    set(&genuine);
    // Their blocks, under the same names, planted in the victim's cache.
    let (planted, _) = cached_blocks(attacker.path());
    for file in &planted {
        fs::copy(file, victim.path().join(file.file_name().unwrap())).unwrap();
    }
    let (got, log) = cat(victim.path());
    common::assert_same(&got, &want, "a from a planted cache");
    assert!(
        fetches(&log) >= 1,
        "the planted block was fetched again:\n{log}"
    );
    assert!(log.contains("cached block dropped"), "{log}");
}

#[test]
fn a_disk_cache_keeps_within_its_size_and_serves_cat_too() {
    let (dir, _server, url) = served(&model(false));
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let args = [
        "cat",
        "--cache-dir",
        cache_dir,
        "--cache-size",
        "2M",
        &url,
        "a",
    ];
    let out = ztfs(&args);
    assert!(out.status.success(), "{}", common::describe(&args, &out));
    let local = common::cat(&dir.path().join("model.zt"), "a", "data", false).unwrap();
    common::assert_same(&out.stdout, &local, "a by cat");
    let (files, bytes) = cached_blocks(cache.path());
    assert!(bytes <= 2 << 20, "{bytes} bytes in {} files", files.len());
    assert_eq!(
        files.len(),
        1,
        "one 1 MiB block and its header fit in 2 MiB"
    );
}
