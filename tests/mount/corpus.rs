//! Every corpus file mounted and walked whole: each file against `ztfs cat`,
//! `meta.json` against `ls --json`, `manifest.json` and `digest` against
//! their commands.

use super::*;

#[test]
fn every_corpus_file_matches_cat() {
    let files = mountable_files();
    assert!(
        files.len() >= 30,
        "only {} corpus files to mount",
        files.len()
    );
    let failed: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let r = std::panic::catch_unwind(|| check_whole_mount(file));
            r.err()
                .map(|e| format!("{}: {}", file.display(), panic_text(&*e)))
        })
        .collect();
    let n = files.len();
    assert!(
        failed.is_empty(),
        "{} of {n} files fail:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// Mounts `file`, walks all of it and accounts for every entry.
pub(crate) fn check_whole_mount(file: &Path) {
    let listing = ls(file);
    let m = Mount::new(file, &[]);
    let tree = walk(m.path());
    let mut seen = BTreeSet::new();
    check_top_files(file, &m, &mut seen);
    let dirs = object_dirs(&m);
    let names: BTreeSet<&String> = listing.objects.iter().map(|o| &o.name).collect();
    assert_eq!(dirs.keys().collect::<BTreeSet<_>>(), names, "objects");
    if listing.data_shard {
        let only: Vec<&Path> = tree.keys().map(PathBuf::as_path).collect();
        assert_eq!(only, [Path::new("manifest.json")], "a data shard's tree");
        let text = fs::read(m.join("manifest.json")).unwrap();
        assert_eq!(text, b"null\n", "a data shard's manifest.json");
    }
    for o in &listing.objects {
        check_object(file, &m, &dirs[&o.name], o, &mut seen);
    }
    // The legacy views at the root; their content is views.rs's.
    seen.extend(tree.keys().filter(|p| is_safetensors_file(p)).cloned());
    let all: BTreeSet<PathBuf> = tree.into_keys().collect();
    let stray: Vec<_> = all.difference(&seen).collect();
    assert!(stray.is_empty(), "stray entries {stray:?}");
    assert_eq!(all, seen, "entries");
}

/// `manifest.json` and `digest` against `ztfs manifest` and `ztfs digest`.
pub(crate) fn check_top_files(file: &Path, m: &Mount, seen: &mut BTreeSet<PathBuf>) {
    let f = file.as_os_str();
    let manifest = ztfs_ok(&["manifest".as_ref(), f]);
    let got = fs::read(m.join("manifest.json")).expect("read manifest.json");
    assert_same(&got, &manifest, "manifest.json");
    seen.insert("manifest.json".into());
    let digest = ztfs(&["digest".as_ref(), f]);
    match digest.status.code() {
        Some(0) => {
            let got = fs::read(m.join("digest")).expect("read digest");
            assert_same(&got, &digest.stdout, "digest");
            seen.insert("digest".into());
        }
        Some(1) => assert!(!m.join("digest").exists(), "a digest `ztfs digest` refuses"),
        _ => panic!("{}", describe(&["digest".as_ref(), f], &digest)),
    }
}

/// One object's directory: `meta.json` against `ls --json`, and every file
/// it lists against `cat`.
pub(crate) fn check_object(
    file: &Path,
    m: &Mount,
    dir: &Path,
    o: &ObjectInfo,
    seen: &mut BTreeSet<PathBuf>,
) {
    let what = format!("{:?}", o.name);
    let meta = meta(&m.join(dir));
    assert_eq!(meta["name"].text(), o.name, "{what}");
    assert_eq!(meta["layout"].text(), o.layout, "{what}");
    let shape: Vec<u64> = meta["shape"].items().iter().map(Json::uint).collect();
    assert_eq!(shape, o.shape, "{what}");
    let parts = meta["parts"].items();
    assert_eq!(parts.len(), o.parts.len(), "{what}: parts");
    seen.extend([dir.to_path_buf(), dir.join("meta.json")]);
    for (pm, p) in parts.iter().zip(&o.parts) {
        let what = format!("{what}/{:?}", p.name);
        check_part_meta(pm, p, &what);
        let s = served(pm);
        let refused = s.decoded.is_none();
        assert_eq!(
            s.raw.is_some(),
            p.encoding.is_some() || refused,
            "{what}: {s:?}"
        );
        if refused {
            let decoded = cat(file, &o.name, &p.name, false);
            assert!(
                decoded.is_err(),
                "{what}: refused by the mount, decoded by cat"
            );
        }
        for (name, raw) in [(&s.decoded, false), (&s.raw, true)] {
            if let Some(name) = name {
                seen.insert(dir.join(name));
                check_file(file, &m.join(dir).join(name), o, p, raw);
            }
        }
    }
    check_view(&m.join(dir), &meta, &what);
    if let Some(view) = meta["view"].opt_text() {
        seen.insert(dir.join(view));
    }
    // The `.npy` files meta.json announces (their content is
    // views.rs's); any other is stray.
    seen.extend(announced_files(&meta).into_iter().map(|f| dir.join(f)));
}

/// A layout profile's view file (`dense`, `dequantized`), named by
/// meta.json: its size is what stat says, or opening it fails with EIO when
/// the object breaks its layout's data rules; no other object has one.
pub(crate) fn check_view(dir: &Path, meta: &Json, what: &str) {
    let Some(view) = meta["view"].opt_text() else {
        let layout = meta["layout"].text();
        assert!(
            layout == "dense" || !dir.join("dense").exists(),
            "{what}: view file without meta"
        );
        return;
    };
    let path = dir.join(&view);
    let size = fs::metadata(&path)
        .unwrap_or_else(|e| panic!("{what}: stat {view}: {e}"))
        .len();
    match fs::read(&path) {
        Ok(bytes) => assert_eq!(bytes.len() as u64, size, "{what}: {view} size"),
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EIO), "{what}: {view}: {e}"),
    }
}

pub(crate) fn check_part_meta(pm: &Json, p: &PartInfo, what: &str) {
    assert_eq!(pm["name"].text(), p.name, "{what}");
    assert_eq!(pm["dtype"].text(), p.dtype, "{what}");
    assert_eq!(pm["type"].opt_text(), p.ty, "{what}");
    assert_eq!(pm["encoding"].opt_text(), p.encoding, "{what}");
    assert_eq!(pm["stored_length"].uint(), p.stored_length, "{what}");
    assert_eq!(pm["decoded_length"].uint(), p.decoded_length, "{what}");
    assert_eq!(pm["digest"].opt_text(), p.digest, "{what}");
    assert_eq!(pm["shard"].opt_text(), p.shard, "{what}");
}

/// One part file: its size, and its bytes against `cat`; where `cat` fails
/// (a shard the corpus lacks, a corrupt frame, a bad bool byte) the read
/// must fail with EIO.
pub(crate) fn check_file(file: &Path, path: &Path, o: &ObjectInfo, p: &PartInfo, raw: bool) {
    let what = path.display().to_string();
    let len = if raw {
        p.stored_length
    } else {
        p.decoded_length
    };
    assert_eq!(
        fs::metadata(path).map(|m| m.len()).ok(),
        Some(len),
        "{what}: size"
    );
    match (cat(file, &o.name, &p.name, raw), fs::read(path)) {
        (Ok(want), Ok(got)) => assert_same(&got, &want, &what),
        (Err(_), Err(e)) => assert_eq!(e.raw_os_error(), Some(libc::EIO), "{what}: {e}"),
        (Ok(_), Err(e)) => panic!("{what}: cat reads it, the mount fails: {e}"),
        (Err(e), Ok(_)) => panic!("{what}: the mount serves bytes that cat refuses: {e}"),
    }
}
