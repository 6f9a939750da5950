//! Hurray files through the real mount: every valid Hurray file of the
//! corpus mounted and read back against `ztfs cat` and `ztfs manifest`
//! (by `read`, by `pread` at odd offsets and by `mmap`), no `digest`, the
//! files each tensor's `meta.json` names and no others, the nested view of
//! names with `/`, and every rejected Hurray file refused before anything
//! is mounted.
//!
//! The independent oracle for the bytes themselves is the interop check
//! (`scripts/interop`: files written by pyhurray); here the mount must
//! agree with the command line on every file and every tensor.

use crate::common;

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;

use common::*;

/// Reads `path` three ways and checks they agree: whole, in odd-sized
/// `pread`s from odd offsets, and through `mmap`.
fn read_three_ways(path: &Path) -> Vec<u8> {
    let whole = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let f = fs::File::open(path).expect("open");
    let mut pieces = Vec::new();
    let mut off = 0u64;
    let step = 4093usize;
    loop {
        let mut buf = vec![0; step];
        let n = f.read_at(&mut buf, off).expect("pread");
        if n == 0 {
            break;
        }
        pieces.extend_from_slice(&buf[..n]);
        off += n as u64;
    }
    assert_eq!(pieces, whole, "{}: pread pieces differ", path.display());
    if !whole.is_empty() {
        let mapped = mmap_read(&f, whole.len());
        assert_eq!(mapped, whole, "{}: mmap differs", path.display());
    }
    whole
}

/// Mounts `file` and checks every tensor's files against the CLI.
fn check_hurray_mount(file: &Path) {
    let m = Mount::new(file, &[]);
    assert_eq!(
        read_three_ways(&m.join("manifest.json")),
        ztfs_ok(&[Path::new("manifest"), file]),
        "manifest.json differs from `ztfs manifest`"
    );
    assert!(
        !m.join("digest").exists(),
        "a Hurray mount has no digest file"
    );
    let listing = ls(file);
    let dirs = object_dirs(&m);
    assert_eq!(
        dirs.keys().collect::<Vec<_>>(),
        {
            let mut names: Vec<&String> = listing.objects.iter().map(|o| &o.name).collect();
            names.sort();
            names
        },
        "one directory per tensor"
    );
    for (name, rel) in &dirs {
        let dir = m.join(rel);
        let meta = meta(&dir);
        assert_eq!(meta["format"].text(), "hurray");
        let mut expected_files = vec!["meta.json".to_string()];
        let cat = common::cat(file, name, "data", false);
        if meta["data"].is_null() {
            assert!(
                !meta["no_data"].is_null(),
                "{name:?}: no data and no reason"
            );
            assert!(cat.is_err(), "{name:?}: cat gives data the mount lacks");
        } else {
            // `data`, or a quantized tensor's values (`dequantized`).
            let f = meta["data"]["file"].text();
            expected_files.push(f.to_string());
            let eio = fs::read(dir.join(f)).err().and_then(|e| e.raw_os_error());
            if eio == Some(libc::EIO) && cat.is_err() {
                // Both refuse: a parameter the spec forbids (an MXFP
                // scale of 0x00 or 0xFF) met by the read.
                continue;
            }
            let served = read_three_ways(&dir.join(f));
            assert_eq!(
                Ok(&served),
                cat.as_ref(),
                "{name:?}: {f} differs from `ztfs cat`"
            );
            assert_eq!(served.len() as u64, meta["data"]["length"].uint());
        }
        for b in meta["buffers"].items() {
            let part = b["name"].text();
            let files = b["files"].items();
            assert_eq!(files.len(), 1, "{name:?}/{part}: one file");
            let f = files[0].text();
            assert_eq!(f, format!("{part}.raw"));
            expected_files.push(f.to_string());
            let served = read_three_ways(&dir.join(f));
            assert_eq!(served.len() as u64, b["byte_size"].uint());
            assert_eq!(
                Ok(served),
                common::cat(file, name, part, true),
                "{name:?}/{f} differs from `ztfs cat --raw`"
            );
        }
        let mut on_disk: Vec<String> = dir_entries(&dir)
            .into_iter()
            .filter(|e| e.1 == Kind::File)
            .map(|e| e.0.to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        expected_files.extend(announced_files(&meta));
        expected_files.sort();
        assert_eq!(on_disk, expected_files, "{name:?}: files");
    }
}

#[test]
fn every_hurray_file_matches_cat() {
    let files = hurray_files();
    assert!(
        files.len() >= 10,
        "only {} Hurray files to mount",
        files.len()
    );
    let failed: Vec<String> = files
        .iter()
        .filter_map(|file| {
            std::panic::catch_unwind(|| check_hurray_mount(file))
                .err()
                .map(|e| format!("{}: {}", file.display(), panic_text(&*e)))
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} files fail:\n{}",
        failed.len(),
        files.len(),
        failed.join("\n")
    );
}

#[test]
fn rejected_hurray_files_are_not_mounted() {
    let rejects: Vec<Row> = rows()
        .into_iter()
        .filter(|r| r.path().extension().is_some_and(|e| e == "hrry"))
        .filter(|r| r.open.starts_with("reject:"))
        .collect();
    assert!(rejects.len() >= 20, "only {} Hurray rejects", rejects.len());
    for r in rejects {
        let m = Mount::unmounted();
        let out = m.mount(&r.path(), &[]);
        let rule = r.open.trim_start_matches("reject:");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {err}", r.name);
        assert!(
            err.contains(&format!("rejected ({rule})")),
            "{}: {err}",
            r.name
        );
        assert!(!is_mounted(m.path()), "{}: mounted anyway", r.name);
    }
}

#[test]
fn nested_view_splits_hurray_names() {
    let file = corpus().join("samples/tiny-llama.hrry");
    let m = Mount::new(&file, &["--tree"]);
    let listing = ls(&file);
    let nested: Vec<&str> = listing
        .objects
        .iter()
        .map(|o| o.name.as_str())
        .filter(|n| n.contains('/') || n.contains('.'))
        .collect();
    assert!(!nested.is_empty(), "the sample has names to nest");
    let all = walk(m.path());
    for name in nested {
        let found = all.keys().any(|p| {
            p.parent()
                .filter(|d| d.join("meta.json") == **p)
                .is_some_and(|d| meta(&m.join(d))["name"].text() == name)
        });
        assert!(found, "{name:?} not found in the nested view");
    }
}

#[test]
fn xattrs_name_a_hurray_tensors_type() {
    let file = corpus().join("samples/tiny-llama.hrry");
    let m = Mount::new(&file, &["--xattrs"]);
    let dirs = object_dirs(&m);
    let (name, rel) = dirs.iter().next().expect("a tensor");
    let dir = m.join(rel);
    let ty = meta(&dir)["type"].text().to_string();
    let get = |f: &str, x: &str| String::from_utf8(get_xattr(&dir.join(f), x).expect(x)).unwrap();
    assert_eq!(get("data", "user.zt.dtype"), ty, "{name:?}");
    assert_eq!(get("data", "user.zt.object"), *name);
    assert_eq!(get("buffer0.raw", "user.zt.dtype"), "u8");
    assert!(get("data", "user.zt.layout").starts_with("hurray:"));
}

/// `--verify` applies the one data rule of the format, MXFP scale bytes,
/// on a tensor's first open: its files fail with EIO and a log line, where
/// the same tensor with a valid scale opens.
#[test]
fn verify_refuses_a_reserved_mxfp_scale() {
    for (case, good) in [
        ("quant-mxfp", true),
        ("quant-mxfp-scale-0xff", false),
        ("quant-mxfp-scale-0x00", false),
    ] {
        let file = corpus().join(format!("hurray/valid/{case}.hrry"));
        let m = Mount::new(&file, &["--verify"]);
        let (_, rel) = object_dirs(&m).into_iter().next().expect("a tensor");
        for f in ["buffer0.raw", "buffer1.raw"] {
            let r = fs::read(m.join(&rel).join(f));
            match good {
                true => assert!(r.is_ok(), "{case}/{f}: {r:?}"),
                false => assert_eq!(
                    r.map_err(|e| e.raw_os_error()).err(),
                    Some(Some(libc::EIO)),
                    "{case}/{f}"
                ),
            }
        }
        if !good {
            assert!(m.log().contains("MXFP scale 0"), "{case}: log: {}", m.log());
        }
    }
}
