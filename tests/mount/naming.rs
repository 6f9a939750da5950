//! Names: hostile object and part names escaped, reachable and distinct;
//! the nested view and its separator.

use super::*;

#[test]
fn hostile_names() {
    let file = valid("names-hostile");
    assert!(
        file.exists(),
        "{} is missing from the corpus",
        file.display()
    );
    let listing = ls(&file);
    let m = Mount::new(&file, &[]);
    let dirs = object_dirs(&m);
    let names: BTreeSet<&String> = listing.objects.iter().map(|o| &o.name).collect();
    assert_eq!(
        dirs.keys().collect::<BTreeSet<_>>(),
        names,
        "objects reachable"
    );
    assert_fit_and_distinct(&dir_names(m.path()), m.path());
    for (name, dir) in &dirs {
        assert_escaped(dir.as_os_str().as_bytes(), name, &ROOT_RESERVED, NAME_MAX);
        check_hostile_object(&m.join(dir), name);
    }
}

/// `component` is the escape of `name`, and unescapes back to it unless it
/// had to be shortened.
pub(crate) fn assert_escaped(component: &[u8], name: &str, reserved: &Reserved<'_>, max: usize) {
    let c = std::str::from_utf8(component).expect("escaped names are UTF-8");
    assert_eq!(c, names::escape(name, reserved, max), "{name:?}");
    if !names::is_shortened(c) {
        assert_eq!(names::unescape(c).as_deref(), Some(name), "{c:?}");
    }
}

/// Every component at most NAME_MAX bytes, distinct, and neither `.` nor `..`.
pub(crate) fn assert_fit_and_distinct(list: &[OsString], dir: &Path) {
    let set: BTreeSet<_> = list.iter().collect();
    assert_eq!(
        set.len(),
        list.len(),
        "{}: duplicate entries",
        dir.display()
    );
    for c in list {
        let len = c.as_bytes().len();
        assert!(len <= NAME_MAX, "{}: {c:?} is {len} bytes", dir.display());
        assert!(
            c != "." && c != "..",
            "{}: an entry named {c:?}",
            dir.display()
        );
    }
}

/// In names-hostile every part's bytes are its own name (in the object
/// `hostile-parts`) or its object's name (elsewhere), so a read shows
/// which file it reached.
pub(crate) fn check_hostile_object(dir: &Path, name: &str) {
    assert_fit_and_distinct(&dir_names(dir), dir);
    for p in meta(dir)["parts"].items() {
        let (part, s) = (p["name"].text(), served(p));
        let escaped = names::escape(part, &PART_RESERVED, PART_NAME_MAX);
        if let Some(d) = &s.decoded {
            assert_eq!(*d, escaped, "{name:?}/{part:?}");
        }
        if let Some(r) = &s.raw {
            assert_eq!(*r, format!("{escaped}.raw"), "{name:?}/{part:?}");
        }
        let want = if name == "hostile-parts" { part } else { name };
        for f in [s.decoded, s.raw].into_iter().flatten() {
            let got = fs::read(dir.join(&f)).unwrap_or_else(|e| panic!("{name:?}/{f:?}: {e}"));
            assert_same(
                &got,
                want.as_bytes(),
                &format!("{name:?}/{part:?} as {f:?}"),
            );
        }
    }
}

#[test]
fn tree_view() {
    let file = sample("tiny-llama.zt");
    let listing = ls(&file);
    let m = Mount::new(&file, &["--tree"]);
    for d in [
        "model",
        "model/layers",
        "model/layers/0",
        "model/layers/0/self_attn",
    ] {
        assert!(m.join(d).is_dir(), "{d}/ in the nested view");
    }
    let metas = metas_by_name(&m);
    assert_eq!(
        metas.len(),
        listing.objects.len(),
        "objects in the nested view"
    );
    for o in &listing.objects {
        let path: PathBuf = o.name.split('.').collect();
        assert_eq!(metas.get(&o.name), Some(&path), "{:?}", o.name);
    }
    let o = &listing.objects[0];
    let got = fs::read(part_file(&m.join(&metas[&o.name]), "data", false)).unwrap();
    assert_same(&got, &cat(&file, &o.name, "data", false).unwrap(), &o.name);
    check_separator(&file, &listing);
    check_prefix_object();
}

/// Where each object's `meta.json` is in a mount, by true name; every
/// object must be reachable exactly once.
pub(crate) fn metas_by_name(m: &Mount) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    for (path, kind) in walk(m.path()) {
        if kind == Kind::File && path.file_name() == Some("meta.json".as_ref()) {
            let dir = path.parent().unwrap().to_path_buf();
            let name = meta(&m.join(&dir))["name"].text().to_string();
            if let Some(other) = out.insert(name.clone(), dir.clone()) {
                panic!("{name:?} is at both {other:?} and {dir:?}");
            }
        }
    }
    out
}

/// `--separator _` splits at underscores instead of dots.
pub(crate) fn check_separator(file: &Path, listing: &Listing) {
    let m = Mount::new(file, &["--tree", "--separator", "_"]);
    let metas = metas_by_name(&m);
    for o in &listing.objects {
        let path: PathBuf = o.name.split('_').collect();
        assert_eq!(metas.get(&o.name), Some(&path), "{:?} split at _", o.name);
    }
}

/// A corpus object whose name, then `.`, begins another's (neither with an
/// empty segment): its directory holds its own files and the directories
/// of the longer names.
pub(crate) fn check_prefix_object() {
    let plain = |n: &str| !n.split('.').any(str::is_empty);
    let found = mountable_files().into_iter().find_map(|f| {
        let names: Vec<String> = ls(&f).objects.into_iter().map(|o| o.name).collect();
        let is_prefix = |a: &&String| names.iter().any(|b| b.starts_with(&format!("{a}.")));
        let prefix = names.iter().filter(|a| plain(a)).find(is_prefix)?.clone();
        Some((f, prefix))
    });
    let (file, prefix) = found.expect("a corpus object whose name begins another's");
    let m = Mount::new(&file, &["--tree"]);
    let metas = metas_by_name(&m);
    let dir = m.join(&metas[&prefix]);
    let entries = dir_entries(&dir);
    let has = |kind| entries.iter().any(|e| e.1 == kind);
    assert!(has(Kind::File) && has(Kind::Dir), "{prefix:?}: {entries:?}");
    let longer = metas
        .iter()
        .filter(|(n, _)| plain(n) && n.starts_with(&format!("{prefix}.")));
    for (name, path) in longer {
        assert!(m.join(path).starts_with(&dir), "{name:?} is at {path:?}");
    }
    let o = ls(&file)
        .objects
        .into_iter()
        .find(|o| o.name == prefix)
        .unwrap();
    let s = served(&meta(&dir)["parts"].items()[0]);
    let (f, raw) = match s.decoded {
        Some(d) => (d, false),
        None => (s.raw.expect("a refused part has its raw file"), true),
    };
    let want = cat(&file, &prefix, &o.parts[0].name, raw).unwrap();
    assert_same(&fs::read(dir.join(f)).unwrap(), &want, &prefix);
}
