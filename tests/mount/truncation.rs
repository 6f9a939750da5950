//! A backing file truncated or replaced under the mount: reads fail with
//! EIO, logged once per part, and the daemon lives on.

use super::*;

#[test]
fn truncated_backing_file() {
    let (_dir, copy) = temp_copy(&sample("tiny-llama.zt"));
    let half = fs::metadata(&copy).unwrap().len() / 2;
    let objects = ls(&copy).objects;
    let parts: Vec<(&ObjectInfo, &PartInfo)> = objects
        .iter()
        .flat_map(|o| o.parts.iter().map(move |p| (o, p)))
        .collect();
    let (bo, bp) = parts
        .iter()
        .find(|(_, p)| p.offset + p.stored_length <= half)
        .unwrap();
    let (ao, ap) = parts
        .iter()
        .find(|(_, p)| p.offset >= half)
        .expect("a part past half");
    let before = Target::new(&copy, &bo.name, &bp.name, false);
    // Direct I/O, so reads reach the daemon rather than the page cache.
    // Nothing touches manifest.json before the cut (it is rendered lazily
    // from the map, and the manifest lies at the end of the file).
    let m = Mount::new(&copy, &["--direct-io"]);
    let (before_path, after_path) = (before.path(&m), decoded_file(&m, ao, ap));
    assert_same(
        &fs::read(&before_path).unwrap(),
        &before.want,
        "before the cut",
    );
    cut(&copy, half);
    let r = within(10, "reading past the cut", move || fs::read(after_path));
    assert_eq!(errno_of(r, "reading past the cut"), libc::EIO);
    let mf = m.join("manifest.json");
    within(10, "stat manifest.json", move || fs::metadata(mf)).expect("stat manifest.json");
    let got = within(10, "reading before the cut", move || fs::read(before_path));
    assert_same(
        &got.expect("read before the cut"),
        &before.want,
        "before the cut, again",
    );
}

/// A truncated file fails every read past its end, thousands a second: the
/// log names the backing file and the object once, then counts, instead of
/// a line per failed reply (regression test for a log flood).
#[test]
fn a_truncated_file_is_logged_once_per_part_then_counted() {
    let (_dir, copy) = temp_copy(&sample("tiny-llama.zt"));
    let half = fs::metadata(&copy).unwrap().len() / 2;
    let objects = ls(&copy).objects;
    let (ao, ap) = objects
        .iter()
        .flat_map(|o| o.parts.iter().map(move |p| (o, p)))
        .find(|(_, p)| p.offset >= half)
        .expect("a part past half");
    let m = Mount::new(&copy, &["--direct-io"]);
    let path = decoded_file(&m, ao, ap);
    cut(&copy, half);
    for _ in 0..300 {
        let p = path.clone();
        let r = within(10, "reading past the cut", move || fs::read(p));
        assert_eq!(errno_of(r, "reading past the cut"), libc::EIO);
    }
    let pid = m.daemon();
    assert!(ztfs(&["unmount".as_ref(), m.path().as_os_str()])
        .status
        .success());
    assert!(wait_until(Duration::from_secs(10), || !is_alive(pid)));
    let log = m.log();
    let about: Vec<&str> = log.lines().filter(|l| l.contains(&ao.name)).collect();
    // The first failure, the counts at 10 and 100, the total at unmount.
    assert!(
        !about.is_empty() && about.len() <= 4,
        "{} lines about {:?}:\n{log}",
        about.len(),
        ao.name
    );
    assert!(about[0].contains(&copy.display().to_string()), "{log}");
    assert!(
        about.iter().any(|l| l.contains("300 times in all")),
        "{log}"
    );
}

/// The decoded file of `o`/`p` in a flat mount.
pub(crate) fn decoded_file(m: &Mount, o: &ObjectInfo, p: &PartInfo) -> PathBuf {
    part_file(&m.join(&object_dirs(m)[&o.name]), &p.name, false)
}

/// The same for a zstd-seekable part, with manifest.json stat'ed before
/// the cut: the part's frames and seek table lie past the new end, and
/// reading it must fail with EIO, not bring the daemon down.
#[test]
fn truncated_backing_file_compressed_part() {
    let t = zstd_parts()
        .into_iter()
        .next()
        .expect("a zstd-seekable part in the corpus");
    let (_dir, copy) = temp_copy(&t.file);
    let o = ls(&copy)
        .objects
        .into_iter()
        .find(|o| o.name == t.object)
        .unwrap();
    let p = o.parts.iter().find(|p| p.name == t.part).unwrap();
    let m = Mount::new(&copy, &["--direct-io"]);
    let path = decoded_file(&m, &o, p);
    fs::metadata(m.join("manifest.json")).expect("stat manifest.json");
    // At a page boundary, so the part's pages lie wholly past the end.
    cut(&copy, p.offset & !4095);
    let r = within(10, "reading a cut zstd part", move || fs::read(path));
    assert_eq!(errno_of(r, "reading a cut zstd part"), libc::EIO);
    // The manifest lay past the cut too: manifest.json, never read before,
    // can no longer be rendered, and says so (the daemon keeps no copy).
    let mf = m.join("manifest.json");
    let r = within(10, "reading manifest.json", move || fs::read(mf));
    assert_eq!(errno_of(r, "reading manifest.json past the cut"), libc::EIO);
    let root = m.join(".");
    let r = within(10, "stat after the cut", move || fs::metadata(root));
    assert!(r.is_ok(), "the daemon still answers: {r:?}");
}

#[test]
fn replaced_backing_file() {
    let (dir, copy) = temp_copy(&sample("tiny-llama.zt"));
    let manifest = ztfs_ok(&["manifest".as_ref(), copy.as_os_str()]);
    let targets = all_parts(&copy);
    let m = Mount::new(&copy, &[]);
    let other = dir.path().join("other.zt");
    fs::copy(sample("mixed-dtypes.zt"), &other).unwrap();
    fs::rename(&other, &copy).expect("replace the model");
    assert_same(
        &fs::read(m.join("manifest.json")).unwrap(),
        &manifest,
        "manifest.json",
    );
    for t in &targets {
        let got = fs::read(t.path(&m)).expect("read after the replacement");
        assert_same(&got, &t.want, &t.object);
    }
}

/// A read that reaches the map without a length check first (rendering a
/// sparse object's dense view reads its parts in user space) on a backing
/// file truncated in place: EIO, and the daemon lives on (the SIGBUS guard).
#[test]
fn truncated_backing_file_under_a_view() {
    let (_dir, copy) = temp_copy(&valid("csr-u32"));
    let m = Mount::new(&copy, &[]);
    let o = &ls(&copy).objects[0];
    let view = m.join(&object_dirs(&m)[&o.name]).join("dense");
    cut(&copy, 4096);
    let r = within(10, "reading the view", move || fs::read(view));
    assert_eq!(errno_of(r, "reading the view past the cut"), libc::EIO);
    let pid = m.daemon();
    assert!(is_alive(pid), "the daemon survives");
    let mf = m.join("manifest.json");
    within(10, "stat manifest.json", move || fs::metadata(mf)).expect("the mount still answers");
}
