//! Extended attributes: names, values, ERANGE and ENODATA.

use super::*;

#[test]
fn xattrs() {
    let mut files = vec![sample("tiny-llama.zt"), sample("mixed-dtypes.zt")];
    files.extend(zstd_parts().into_iter().map(|t| t.file).take(1));
    for file in &files {
        let m = Mount::new(file, &["--xattrs"]);
        let dirs = object_dirs(&m);
        for o in ls(file).objects {
            let dir = m.join(&dirs[&o.name]);
            check_xattrs(&dir, &expected_xattrs(&o, None));
            let meta = meta(&dir);
            for (pm, p) in meta["parts"].items().iter().zip(&o.parts) {
                let s = served(pm);
                for f in [s.decoded, s.raw].into_iter().flatten() {
                    check_xattrs(&dir.join(f), &expected_xattrs(&o, Some(p)));
                }
            }
        }
        assert_eq!(list_xattrs(&m.join("manifest.json")), Vec::<String>::new());
    }
    // Without --xattrs the daemon declines them, so the kernel stops asking
    // (and `ls -l` costs no round trips for them).
    let file = sample("tiny-llama.zt");
    let m = Mount::new(&file, &[]);
    let o = &ls(&file).objects[0];
    let dir = m.join(&object_dirs(&m)[&o.name]);
    let e = get_xattr(&dir, "user.zt.shape").expect_err("no xattrs without --xattrs");
    assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}");
}

/// What an object directory (`part` None) or a part file carries, sorted.
pub(crate) fn expected_xattrs(o: &ObjectInfo, part: Option<&PartInfo>) -> Vec<(String, String)> {
    let shape: Vec<String> = o.shape.iter().map(u64::to_string).collect();
    let mut out = vec![
        ("object", Some(o.name.clone())),
        ("shape", Some(format!("[{}]", shape.join(",")))),
        ("layout", Some(o.layout.clone())),
    ];
    if let Some(p) = part {
        out.extend([
            ("part", Some(p.name.clone())),
            ("dtype", Some(p.dtype.clone())),
            ("type", p.ty.clone()),
            ("encoding", p.encoding.clone()),
            ("digest", p.digest.clone()),
        ]);
    }
    let out = out
        .into_iter()
        .filter_map(|(k, v)| Some((format!("user.zt.{k}"), v?)));
    let mut out: Vec<(String, String)> = out.collect();
    out.sort();
    out
}

/// The names `listxattr` gives, each value, ERANGE for a buffer one byte
/// short, and ENODATA for an absent name.
pub(crate) fn check_xattrs(path: &Path, want: &[(String, String)]) {
    let what = path.display();
    let mut names = list_xattrs(path);
    names.sort();
    let keys: Vec<&String> = want.iter().map(|(k, _)| k).collect();
    assert_eq!(names.iter().collect::<Vec<_>>(), keys, "{what}");
    for (k, v) in want {
        let got = get_xattr(path, k).unwrap_or_else(|e| panic!("{what}: {k}: {e}"));
        assert_eq!(String::from_utf8_lossy(&got), *v, "{what}: {k}");
        // Size 0 would ask for the length, so only values of 2 bytes or more.
        if v.len() > 1 {
            let short = get_xattr_sized(path, k, v.len() - 1);
            assert_eq!(
                errno_of(short, k),
                libc::ERANGE,
                "{what}: {k} in a short buffer"
            );
        }
    }
    let absent = get_xattr(path, "user.zt.nonesuch");
    assert_eq!(
        errno_of(absent, "an absent attribute"),
        libc::ENODATA,
        "{what}"
    );
}
