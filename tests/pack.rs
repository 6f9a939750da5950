//! `ztfs pack`, run as a user runs it: what it writes is checked by ztfs
//! itself (`check --verify`, `ls --json`, `cat`, `digest`) against the
//! source. The interop suite (`scripts/interop.sh --suite pack`) holds the
//! same files against the public zTensor package.
//!
//! The oracle for the corpus: a pack succeeds exactly where `check
//! --verify` of the source passes (a pack never copies what a check would
//! reject), and what it writes holds the same objects, bytes and content
//! digest.

#[allow(dead_code)]
#[path = "corpus/builder.rs"]
mod builder;
mod common;

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{describe, ls, ztfs, ztfs_ok, Listing};

/// Runs `ztfs pack SRC -o OUT FLAGS...`.
/// `ztfs pack SRC -o OUT FLAGS --no-files`: these tests are about the
/// tensors (a folder or an index given as the source brings its other
/// files, earlier outputs among them; a folder's files are
/// tests/tree/folder.rs's).
fn pack(src: &Path, out: &Path, flags: &[&str]) -> std::process::Output {
    let mut args: Vec<&OsStr> = vec!["pack".as_ref(), src.as_os_str(), "-o".as_ref()];
    args.push(out.as_os_str());
    args.extend(flags.iter().map(OsStr::new));
    args.push("--no-files".as_ref());
    ztfs(&args)
}

fn pack_ok(src: &Path, out: &Path, flags: &[&str]) -> String {
    let o = pack(src, out, flags);
    assert!(o.status.success(), "{}", describe(&["pack"], &o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn verify_ok(file: &Path) {
    ztfs_ok(&[OsStr::new("check"), "--verify".as_ref(), file.as_os_str()]);
}

/// `ztfs digest FILE`, when the file has one.
fn digest(file: &Path) -> Option<String> {
    let o = ztfs(&[OsStr::new("digest"), file.as_os_str()]);
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The files in `dir`, by name.
fn names_in(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = fs::read_dir(dir)
        .expect("read the directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

/// Asserts that `packed` holds `src`'s objects: names, layouts, shapes,
/// types, and every part's decoded bytes.
fn assert_same_model(src: &Path, packed: &Path) {
    let (a, b) = (ls(src), ls(packed));
    let key = |l: &Listing| -> Vec<_> {
        let mut v: Vec<_> = (l.objects.iter())
            .map(|o| {
                let mut parts: Vec<_> = (o.parts.iter())
                    .map(|p| {
                        (
                            p.name.clone(),
                            p.dtype.clone(),
                            p.ty.clone(),
                            p.decoded_length,
                        )
                    })
                    .collect();
                parts.sort();
                (o.name.clone(), o.layout.clone(), o.shape.clone(), parts)
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        key(&a),
        key(&b),
        "{} packed as {}",
        src.display(),
        packed.display()
    );
    let encoded = |l: &Listing, o: &str, p: &str| {
        let o = l.objects.iter().find(|x| x.name == o).expect("the object");
        o.parts.iter().any(|x| x.name == p && x.encoding.is_some())
    };
    for o in &b.objects {
        for p in &o.parts {
            let want = part_bytes(src, &o.name, &p.name, encoded(&a, &o.name, &p.name));
            let got = part_bytes(packed, &o.name, &p.name, p.encoding.is_some());
            assert_eq!(got, want, "{}: {:?}/{:?}", src.display(), o.name, p.name);
        }
    }
}

/// A part's decoded bytes; for a raw part of a layout ztfs does not
/// interpret (`gguf.<type>/1` in a zTensor file, a vendor's), its stored
/// bytes, which are the same.
fn part_bytes(file: &Path, object: &str, part: &str, encoded: bool) -> Result<Vec<u8>, String> {
    match common::cat(file, object, part, false) {
        Err(e) if e.contains("does not interpret") && !encoded => {
            common::cat(file, object, part, true)
        }
        r => r,
    }
}

/// Every file of the corpus that opens as a model: a pack succeeds
/// exactly when `check --verify` passes, and writes the same model.
#[test]
fn a_pack_succeeds_exactly_where_check_verify_passes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().join("out.zt");
    let mut packed = 0;
    for row in common::rows().iter().filter(|r| r.open == "valid") {
        let src = row.path();
        let o = pack(&src, &out, &[]);
        if row.dir.starts_with("hurray") || row.name.ends_with(".hrry") {
            packed += usize::from(hurray_packed_as_served(&src, &out, &o));
            continue;
        }
        let verify = ztfs(&[OsStr::new("check"), "--verify".as_ref(), src.as_os_str()]);
        if ls(&src).data_shard {
            assert_eq!(o.status.code(), Some(2), "{}", describe(&[&src], &o));
            continue;
        }
        // zTensor names are 1..=1024 bytes (§3.5): a source that names a
        // tensor "" (safetensors allows it) checks but cannot be packed,
        // and pack says so.
        let unwritable = "cannot be written as zTensor: empty object name";
        if verify.status.success() && String::from_utf8_lossy(&o.stderr).contains(unwritable) {
            assert_eq!(o.status.code(), Some(1), "{}", src.display());
            assert!(
                !out.exists(),
                "{}: a failed pack left its output",
                src.display()
            );
            continue;
        }
        assert_eq!(
            o.status.success(),
            verify.status.success(),
            "{}: pack and check --verify disagree\npack: {}\ncheck: {}",
            src.display(),
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&verify.stderr)
        );
        if !o.status.success() {
            assert_eq!(o.status.code(), verify.status.code(), "{}", src.display());
            assert!(
                !out.exists(),
                "{}: a failed pack left its output",
                src.display()
            );
            continue;
        }
        verify_ok(&out);
        assert_same_model(&src, &out);
        // The content digest holds each part's digest string, so it is
        // kept where the source's parts have xxh3 digests, as ours do.
        let xxh3 =
            |p: &common::PartInfo| p.digest.as_deref().is_some_and(|d| d.starts_with("xxh3:"));
        if ls(&src).objects.iter().all(|o| o.parts.iter().all(xxh3)) {
            if let Some(d) = digest(&src) {
                assert_eq!(digest(&out), Some(d), "{}: content digest", src.display());
            }
        }
        fs::remove_file(&out).expect("remove the output");
        packed += 1;
    }
    assert!(packed > 30, "only {packed} corpus files packed");
    assert_eq!(names_in(dir.path()), Vec::<String>::new(), "left behind");
}

/// A Hurray file packs when every tensor has row-major data of a type
/// zTensor has (else it is refused, naming the tensor), into dense
/// objects whose data is what `ztfs cat` serves from the Hurray file.
/// True when it packed.
fn hurray_packed_as_served(src: &Path, out: &Path, o: &std::process::Output) -> bool {
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{}", describe(&[src], o));
        assert!(err.contains("cannot be"), "{}", describe(&[src], o));
        assert!(!out.exists());
        return false;
    }
    verify_ok(out);
    let (a, b) = (ls(src), ls(out));
    assert_eq!(a.objects.len(), b.objects.len(), "{}", src.display());
    for o in &b.objects {
        assert_eq!(o.layout, "dense");
        let source = a
            .objects
            .iter()
            .find(|x| x.name == o.name)
            .expect("same names");
        assert_eq!(source.shape, o.shape, "{}: {:?}", src.display(), o.name);
        let want = common::cat(src, &o.name, "data", false);
        assert_eq!(
            common::cat(out, &o.name, "data", false),
            want,
            "{}: {:?}",
            src.display(),
            o.name
        );
    }
    fs::remove_file(out).expect("remove the output");
    true
}

/// A safetensors file of `(name, dtype, shape, bytes)`, in this order.
fn safetensors(tensors: &[(&str, &str, &[u64], Vec<u8>)]) -> Vec<u8> {
    common::safetensors_file(tensors, None)
}

/// Bytes that do not compress.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    builder::Lcg::new(seed).bytes(n)
}

/// A model with tied weights (`tied` equals `emb`), an empty tensor, a
/// compressible one and noise, written in non-name order.
fn sample_model(dir: &Path) -> PathBuf {
    let emb = noise(300_000, 1);
    let file = safetensors(&[
        ("zeros", "F32", &[256, 1024], vec![0; 1 << 20]),
        ("emb", "BF16", &[150_000], emb.clone()),
        ("empty", "F16", &[0, 8], Vec::new()),
        ("tied", "BF16", &[150_000], emb),
        ("flags", "BOOL", &[4], vec![0, 1, 1, 0]),
        ("noise", "U8", &[700_000], noise(700_000, 2)),
    ]);
    let path = dir.join("model.safetensors");
    fs::write(&path, file).expect("write the model");
    path
}

/// Canonical form (§6.3): 64 KiB placement from 65536 in name order,
/// tied weights in one blob, an empty part placed without advancing,
/// xxh3 digests; the same input gives the same bytes, and packing the
/// packed file gives it back unchanged.
#[test]
fn the_default_output_is_canonical_and_reproducible() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = sample_model(dir.path());
    let (a, b, c) = (
        dir.path().join("a.zt"),
        dir.path().join("b.zt"),
        dir.path().join("c.zt"),
    );
    let said = pack_ok(&src, &a, &[]);
    assert!(said.contains("6 objects, 6 parts (1 sharing"), "{said}");
    assert!(
        said.contains("canonical") && !said.contains("not canonical"),
        "{said}"
    );
    verify_ok(&a);
    assert_same_model(&src, &a);
    let mut objects = ls(&a).objects;
    objects.sort_by(|x, y| x.name.as_bytes().cmp(y.name.as_bytes()));
    let mut next = 65536;
    for o in &objects {
        let p = &o.parts[0];
        assert!(p.digest.as_deref().is_some_and(|d| d.starts_with("xxh3:")));
        assert_eq!(p.encoding, None);
        if o.name == "tied" {
            let emb = objects.iter().find(|x| x.name == "emb").unwrap();
            assert_eq!(p.offset, emb.parts[0].offset, "tied shares emb's blob");
            continue;
        }
        assert_eq!(p.offset, next, "{} placed at {}", o.name, p.offset);
        next = (p.offset + p.stored_length).next_multiple_of(65536);
    }
    pack_ok(&src, &b, &[]);
    pack_ok(&a, &c, &[]);
    let bytes = fs::read(&a).unwrap();
    assert!(
        fs::read(&b).unwrap() == bytes,
        "two packs of one source differ"
    );
    assert!(
        fs::read(&c).unwrap() == bytes,
        "packing a canonical file changed it"
    );
}

/// A model file given alone packs alone, whatever lies beside it (a
/// config, a secret, a big file, the pack before): no file of its folder
/// in the output, and the same bytes when packed again into that folder.
/// (Before, a `model.safetensors` brought every file of its folder, the
/// first output too.)
#[test]
fn a_lone_file_packs_alone_and_again_to_the_same_bytes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = sample_model(dir.path());
    fs::write(dir.path().join("config.json"), r#"{"model_type": "x"}"#).unwrap();
    fs::write(dir.path().join(".env"), "API_KEY=secret\n").unwrap();
    fs::write(dir.path().join("big.bin"), noise(3 << 20, 9)).unwrap();
    let (a, b) = (dir.path().join("a.zt"), dir.path().join("b.zt"));
    for out in [&a, &b] {
        let o = ztfs(&[
            "pack".as_ref(),
            src.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ]);
        assert!(o.status.success(), "{}", describe(&["pack"], &o));
    }
    assert!(
        fs::read(&a).unwrap() == fs::read(&b).unwrap(),
        "two packs differ"
    );
    for file in [&src, &a] {
        let json = ztfs_ok(&["ls".as_ref(), "--json".as_ref(), file.as_os_str()]);
        let doc = common::json::Json::parse(std::str::from_utf8(&json).unwrap());
        assert!(doc["files"].is_null(), "{file:?} has files: {doc:?}");
    }
    assert_same_model(&src, &a);
}

/// `--zstd` stores a part compressed only where that is smaller; every
/// option gives a file that checks, tied weights in one blob, and the
/// same content digest for the same digest algorithm (layout never
/// reaches it, §6.4; the parts' digest strings do).
#[test]
fn options_change_the_layout_and_never_the_content() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = sample_model(dir.path());
    let base = dir.path().join("base.zt");
    pack_ok(&src, &base, &[]);
    let want = digest(&base).expect("a packed file has a content digest");
    pack_ok(&src, &base, &["--digest", "sha256"]);
    let want_sha256 = digest(&base).expect("a packed file has a content digest");
    let variants: &[&[&str]] = &[
        &["--zstd"],
        &["--zstd=19", "--frame-size", "64K"],
        &["--digest", "sha256"],
        &["--align", "4K"],
        &["--zstd=1", "--align", "16K", "--digest", "sha256"],
    ];
    for flags in variants {
        let out = dir.path().join("v.zt");
        let said = pack_ok(&src, &out, flags);
        assert!(said.contains("not canonical"), "{flags:?}: {said}");
        verify_ok(&out);
        assert_same_model(&src, &out);
        let listing = ls(&out);
        let part = |n: &str| listing.objects.iter().find(|o| o.name == n).unwrap().parts[0].clone();
        if flags.iter().any(|f| f.starts_with("--zstd")) {
            assert_eq!(
                part("zeros").encoding.as_deref(),
                Some("zt.zstd-seekable/1")
            );
            assert!(part("zeros").stored_length < 1 << 16);
            assert_eq!(
                part("noise").encoding,
                None,
                "{flags:?}: noise does not shrink"
            );
        }
        if let Some(i) = flags.iter().position(|f| *f == "--align") {
            let align = if flags[i + 1] == "4K" { 4096 } else { 16384 };
            assert!(listing
                .objects
                .iter()
                .all(|o| o.parts[0].offset % align == 0));
        }
        let algo = if flags.contains(&"sha256") {
            "sha256:"
        } else {
            "xxh3:"
        };
        assert!(part("emb").digest.unwrap().starts_with(algo));
        // The sharing key is XXH3 whatever the digest, on either path.
        assert_eq!(
            part("tied").offset,
            part("emb").offset,
            "{flags:?}: tied shares emb's blob"
        );
        // Part digests are in the content value: same algorithm, same digest.
        let want = if algo == "sha256:" {
            &want_sha256
        } else {
            &want
        };
        assert_eq!(digest(&out).as_ref(), Some(want), "{flags:?}");
        let again = dir.path().join("again.zt");
        pack_ok(&src, &again, flags);
        assert!(
            fs::read(&again).unwrap() == fs::read(&out).unwrap(),
            "{flags:?}: not reproducible"
        );
    }
}

/// `--shard-size`: data shards beside the root, named by the positional
/// convention, each a data shard with its digest in the root's table.
#[test]
fn shard_size_writes_a_family_of_files() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = sample_model(dir.path());
    let out_dir = dir.path().join("out");
    fs::create_dir(&out_dir).unwrap();
    let root = out_dir.join("model.zt");
    let said = pack_ok(&src, &root, &["--shard-size", "1M"]);
    assert!(said.contains("data shards"), "{said}");
    let names = names_in(&out_dir);
    let n = names.len() - 1;
    assert!(n >= 2, "{names:?}");
    for i in 1..=n {
        let shard = out_dir.join(format!("model-{i:05}-of-{n:05}.zt"));
        assert!(ls(&shard).data_shard, "{}", shard.display());
    }
    verify_ok(&root);
    assert_same_model(&src, &root);
    let base = dir.path().join("base.zt");
    pack_ok(&src, &base, &[]);
    assert_eq!(digest(&root), digest(&base));
    // The root is useless without its shards, and says so.
    fs::remove_file(out_dir.join(format!("model-00001-of-{n:05}.zt"))).unwrap();
    let o = ztfs(&[OsStr::new("check"), "--verify".as_ref(), root.as_os_str()]);
    assert!(!o.status.success(), "{}", describe(&["check"], &o));
}

#[test]
fn bad_options_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = sample_model(dir.path());
    let out = dir.path().join("out.zt");
    for flags in [
        &["--align", "1000"][..],
        &["--align", "0"],
        &["--frame-size", "0"],
        &["--frame-size", "17M"],
        &["--zstd=99"],
        &["--shard-size", "0"],
    ] {
        let o = pack(&src, &out, flags);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{flags:?}: {}",
            describe(flags, &o)
        );
        assert!(!out.exists(), "{flags:?}");
    }
    assert_eq!(names_in(dir.path()), vec!["model.safetensors"]);
}

/// An output that is not a regular file (a symlink such as /dev/stdout, a
/// directory) is refused, never replaced.
#[test]
fn an_output_that_is_not_a_regular_file_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = sample_model(dir.path());
    let link = dir.path().join("link.zt");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    let sub = dir.path().join("sub");
    fs::create_dir(&sub).unwrap();
    for out in [&link, &sub, &dir.path().join("missing/out.zt")] {
        let o = pack(&src, out, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", describe(&["pack"], &o));
    }
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        names_in(dir.path()),
        vec!["link.zt", "model.safetensors", "sub"]
    );
}

/// A source that fails a check half-way leaves neither an output nor a
/// temporary file, and a file already at the output's name untouched.
#[test]
fn a_failed_pack_leaves_nothing_behind() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path().join("bad.safetensors");
    fs::write(
        &src,
        safetensors(&[
            ("a", "U8", &[1 << 20], noise(1 << 20, 3)),
            ("b", "BOOL", &[3], vec![0, 2, 1]),
        ]),
    )
    .unwrap();
    let out = dir.path().join("out.zt");
    fs::write(&out, b"before").unwrap();
    let o = pack(&src, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&["pack"], &o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("LayoutData"));
    assert_eq!(fs::read(&out).unwrap(), b"before");
    assert_eq!(names_in(dir.path()), vec!["bad.safetensors", "out.zt"]);
}

/// Packing a file onto itself replaces it whole: the source stays
/// readable while it is read (the new file is renamed over it at the end).
#[test]
fn a_pack_may_replace_its_own_source() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = sample_model(dir.path());
    let zt = dir.path().join("m.zt");
    pack_ok(&src, &zt, &["--zstd"]);
    let d = digest(&zt);
    pack_ok(&zt, &zt, &[]);
    verify_ok(&zt);
    assert_eq!(digest(&zt), d);
    assert_same_model(&src, &zt);
}

/// A model read by URL packs to the same bytes as the local file.
#[test]
fn a_model_by_url_packs_as_the_local_file_does() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = sample_model(dir.path());
    let nginx = common::http::Nginx::serve(dir.path());
    let (local, remote) = (dir.path().join("local.zt"), dir.path().join("remote.zt"));
    pack_ok(&src, &local, &[]);
    pack_ok(Path::new(&nginx.url("model.safetensors")), &remote, &[]);
    assert!(fs::read(&local).unwrap() == fs::read(&remote).unwrap());
}

/// SIGTERM stops a pack whose source hangs (a server that never answers):
/// it exits within its grace period, with no output and no temporary file.
#[test]
fn a_signal_stops_a_pack_and_leaves_nothing() {
    use common::http::Nginx;
    use common::proxy::{Fault, Proxy};
    let served = tempfile::tempdir().expect("a temporary directory");
    let model = safetensors(&[
        ("a", "U8", &[4 << 20], noise(4 << 20, 4)),
        ("b", "U8", &[4 << 20], noise(4 << 20, 5)),
    ]);
    fs::write(served.path().join("m.safetensors"), model).unwrap();
    let nginx = Nginx::serve(served.path());
    let proxy = Proxy::new(nginx.port());
    let url = proxy.url("m.safetensors");
    ztfs_ok(&["ls", url.as_str()]);
    let opening = proxy.requests();
    proxy.set(Fault::Hang);
    proxy.next(opening, Fault::Pass);
    let out_dir = tempfile::tempdir().expect("a temporary directory");
    let out = out_dir.path().join("out.zt");
    let child = std::process::Command::new(common::BIN)
        .args([
            OsStr::new("pack"),
            url.as_ref(),
            "-o".as_ref(),
            out.as_os_str(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start ztfs pack");
    let started = common::wait_until(Duration::from_secs(30), || {
        !names_in(out_dir.path()).is_empty()
    });
    assert!(started, "no temporary file appeared");
    std::thread::sleep(Duration::from_millis(300));
    common::kill(child.id() as i32, libc::SIGTERM);
    let o = common::within(20, "ztfs pack after SIGTERM", move || {
        child.wait_with_output().unwrap()
    });
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("interrupted by signal"),
        "{}",
        describe(&["pack"], &o)
    );
    assert_eq!(names_in(out_dir.path()), Vec::<String>::new());
    proxy.set(Fault::Pass);
}

/// Each `.npy` input stays open for the pack; more inputs than the soft
/// limit on open files (1024 on most systems; 64 here) pack all the same,
/// since ztfs raises its soft limit to the hard one (and a mount of a
/// many-file model keeps as many open).
#[test]
fn more_inputs_than_the_soft_open_file_limit_pack() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let n = 150;
    for i in 0..n {
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        let pad = 64 - (10 + header.len() + 1) % 64;
        let text = format!("{header}{}\n", " ".repeat(pad % 64));
        bytes.extend_from_slice(&(text.len() as u16).to_le_bytes());
        bytes.extend_from_slice(text.as_bytes());
        bytes.extend_from_slice(&(i as f32).to_le_bytes());
        bytes.extend_from_slice(&(-(i as f32)).to_le_bytes());
        fs::write(dir.path().join(format!("t{i:03}.npy")), bytes).unwrap();
    }
    let out = dir.path().join("all.zt");
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"ulimit -Sn 64 && exec "$0" pack "$1"/*.npy -o "$2""#)
        .arg(common::BIN)
        .arg(dir.path())
        .arg(&out)
        .output()
        .expect("run bash");
    assert!(
        o.status.success(),
        "{}",
        describe(&["pack", "150 files"], &o)
    );
    let objects = ls(&out).objects;
    assert_eq!(objects.len(), n);
    verify_ok(&out);
}

/// numpy's own test files (tests/data/npy): packed exactly where `np.load`
/// (numpy 2.4.6, no `allow_pickle`) reads them.
#[test]
fn numpy_test_files_get_numpys_verdict() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/npy");
    let out = tempfile::tempdir().unwrap();
    for (name, numpy) in [
        ("python3.npy", true),
        ("win64python2.npy", true),
        ("py2-objarr.npy", false),
        ("py2-np0-objarr.npy", false),
        ("py3-objarr.npy", false),
    ] {
        let packed = out.path().join(format!("{name}.zt"));
        let o = pack(&dir.join(name), &packed, &[]);
        assert_eq!(
            o.status.success(),
            numpy,
            "{name}: {}",
            describe(&["pack"], &o)
        );
        if numpy {
            verify_ok(&packed);
        }
    }
    let listed = names_in(&dir);
    assert_eq!(
        listed.len(),
        6,
        "tests/data/npy holds the five files and README.md: {listed:?}"
    );
}

/// A `.npy` input's stem is its object's name: a name that is not UTF-8,
/// or the empty stem of a file named `.npy`, is refused, not made up.
#[test]
fn npy_names_that_are_not_object_names_are_refused() {
    use std::os::unix::ffi::OsStrExt;
    let npy =
        fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/npy/python3.npy")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for name in [&b"w\xff.npy"[..], b".npy"] {
        let src = dir.path().join(OsStr::from_bytes(name));
        fs::write(&src, &npy).unwrap();
        let out = dir.path().join("out.zt");
        let o = pack(&src, &out, &[]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{:?}: {}",
            src,
            describe(&["pack"], &o)
        );
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("object name"),
            "{}",
            describe(&["pack"], &o)
        );
        assert!(!out.exists());
        fs::remove_file(&src).unwrap();
    }
}

/// `--to-folder` of a model some of whose objects cannot be safetensors
/// tensors (a CSR sparse `.zt`) is refused before anything is written, so
/// a script trusting the exit code loses nothing silently;
/// `--allow-left-out` writes the rest, naming what it left out.
#[test]
fn a_folder_without_some_tensors_is_written_only_when_asked() {
    let src = common::corpus().join("valid/csr-u32.zt");
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("out");
    let args = |more: &[&str]| {
        let mut a: Vec<&OsStr> = vec!["pack".as_ref(), src.as_os_str()];
        a.extend(["--to-folder".as_ref(), dir.as_os_str()]);
        a.extend(more.iter().map(OsStr::new));
        ztfs(&a)
    };
    let o = args(&[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot be in the safetensors files") && err.contains("--allow-left-out"),
        "{err}"
    );
    assert_eq!(
        fs::read_dir(d.path()).unwrap().count(),
        0,
        "nothing written"
    );
    let o = args(&["--allow-left-out"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("left out"));
    assert!(dir.join("model.safetensors").is_file());
}
