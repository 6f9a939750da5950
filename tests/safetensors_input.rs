//! safetensors files as models, through the real binary and a real mount:
//! every valid corpus file mounted, each tensor's `data` (or `data.raw`
//! where ztfs does not interpret the dtype) equal to `ztfs cat`, to the
//! bytes at the tensor's offsets in the file and to what the `safetensors`
//! crate reads; `ls` in header order; `manifest.json` equal to `ztfs
//! manifest` and to the file's header as JSON; no `digest`; every rejected
//! file refused before anything is mounted.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use common::*;

/// The safetensors rows of the table whose `open` is `valid`.
fn valid_files() -> Vec<PathBuf> {
    rows_in("safetensors/valid")
}

fn rows_in(dir: &str) -> Vec<PathBuf> {
    let files: Vec<PathBuf> = rows()
        .iter()
        .filter(|r| r.dir == dir)
        .map(Row::path)
        .collect();
    assert!(!files.is_empty(), "no rows in {dir}");
    files
}

/// The header of `bytes`, as JSON, with object keys in file order.
fn header_json(bytes: &[u8]) -> serde_json::Value {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    serde_json::from_slice(&bytes[8..8 + n]).expect("a valid header")
}

/// The tensors of `file` as the crate reads them: name, dtype, and the
/// bytes' range in the file.
fn reference(bytes: &[u8]) -> Vec<(String, String, std::ops::Range<usize>)> {
    let st = safetensors::SafeTensors::deserialize(bytes).expect("the crate reads it");
    let base = bytes.as_ptr() as usize;
    st.tensors()
        .into_iter()
        .map(|(name, v)| {
            let start = v.data().as_ptr() as usize - base;
            let range = start..start + v.data().len();
            (name, format!("{:?}", v.dtype()), range)
        })
        .collect()
}

fn check_mount(file: &Path) {
    let bytes = std::fs::read(file).unwrap();
    let m = Mount::new(file, &[]);
    let manifest = std::fs::read(m.join("manifest.json")).unwrap();
    assert_eq!(manifest, ztfs_ok(&[Path::new("manifest"), file]));
    let parsed: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
    assert_eq!(
        parsed,
        header_json(&bytes),
        "{}: manifest.json",
        file.display()
    );
    assert!(
        !m.join("digest").exists(),
        "a safetensors mount has no digest"
    );
    let dirs = object_dirs(&m);
    let tensors = reference(&bytes);
    assert_eq!(
        dirs.len(),
        tensors.len(),
        "{}: one directory per tensor",
        file.display()
    );
    for (name, dtype, range) in tensors {
        let want = &bytes[range.clone()];
        let dir = m.join(&dirs[&name]);
        let meta = meta(&dir);
        let part = &meta["parts"].items()[0];
        let served = served(part);
        let raw = dtype.starts_with("F6_");
        assert_eq!(
            served.decoded.is_none(),
            raw,
            "{name:?} ({dtype}): {part:?}"
        );
        let path = dir.join(served.decoded.or(served.raw).unwrap());
        let bool_bad = dtype == "BOOL" && want.iter().any(|&b| b > 1);
        match std::fs::read(&path) {
            Ok(got) => {
                assert!(!bool_bad, "{name:?}: a bool byte other than 0/1 was served");
                assert_eq!(
                    got,
                    want,
                    "{}: {name:?} differs from the file's bytes",
                    file.display()
                );
                assert_eq!(
                    cat(file, &name, "data", raw).unwrap(),
                    want,
                    "{name:?}: ztfs cat"
                );
            }
            Err(e) => {
                assert!(bool_bad, "{}: {name:?}: {e}", file.display());
                let err = cat(file, &name, "data", false).unwrap_err();
                assert!(err.contains("LayoutData"), "{err}");
                assert_eq!(cat(file, &name, "data", true).unwrap(), want);
            }
        }
    }
}

#[test]
fn every_valid_file_mounts_and_serves_its_tensors() {
    for file in valid_files() {
        check_mount(&file);
    }
}

#[test]
fn ls_lists_tensors_in_header_order() {
    let file = corpus().join("safetensors/valid/header-order-not-offset-order.safetensors");
    let out = ztfs_ok(&[Path::new("ls"), &file]);
    assert_eq!(String::from_utf8(out).unwrap(), "third\nsecond\nfirst\n");
    let listing = ls(&file);
    let shapes: Vec<(&str, &str, Option<&str>)> = (listing.objects.iter())
        .map(|o| {
            (
                o.name.as_str(),
                o.parts[0].dtype.as_str(),
                o.parts[0].ty.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        shapes,
        [
            ("third", "f32", None),
            ("second", "i16", None),
            ("first", "u8", None)
        ]
    );
    let long = ztfs_ok(&[Path::new("ls"), Path::new("-l"), &file]);
    assert!(String::from_utf8(long).unwrap().contains("third"));
}

#[test]
fn dtypes_take_the_ztensor_types_of_the_same_bytes() {
    let file = corpus().join("safetensors/valid/every-dtype.safetensors");
    let types: Vec<(String, String)> = (ls(&file).objects.iter())
        .map(|o| {
            let p = &o.parts[0];
            (
                o.name.clone(),
                p.ty.clone().unwrap_or_else(|| p.dtype.clone()),
            )
        })
        .collect();
    let want = [
        ("bool", "bool"),
        ("f4", "f4_e2m1"),
        ("f8_e4m3", "f8_e4m3fn"),
        ("f8_e8m0", "f8_e8m0"),
        ("c64", "complex64"),
        ("bf16", "bf16"),
    ];
    for (name, ty) in want {
        assert!(
            types.iter().any(|(n, t)| n == name && t == ty),
            "{name} is not {ty}: {types:?}"
        );
    }
}

#[test]
fn check_says_what_it_checked() {
    let file = corpus().join("safetensors/valid/metadata.safetensors");
    let out = String::from_utf8(ztfs_ok(&[Path::new("check"), &file])).unwrap();
    assert!(
        out.contains("safetensors file, 1 tensor, 3 metadata entries"),
        "{out}"
    );
    let out = ztfs_ok(&[Path::new("check"), Path::new("--verify"), &file]);
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("no content digests"));
}

#[test]
fn digest_and_shards_are_refused() {
    let file = corpus().join("safetensors/valid/metadata.safetensors");
    let out = ztfs(&[Path::new("digest"), &file]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        describe(&[Path::new("digest"), &file], &out)
    );
    let args: [&OsStr; 4] = [
        "check".as_ref(),
        "--shard".as_ref(),
        "x=y".as_ref(),
        file.as_os_str(),
    ];
    let out = ztfs(&args);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no shards"));
}

#[test]
fn an_npy_file_is_the_header_and_the_tensor_bytes() {
    let file = corpus().join("safetensors/valid/scalars-and-empty.safetensors");
    let bytes = std::fs::read(&file).unwrap();
    let m = Mount::new(&file, &[]);
    let dirs = object_dirs(&m);
    let npy = std::fs::read(m.join(&dirs["scalar"]).join("data.npy")).unwrap();
    assert!(npy.starts_with(b"\x93NUMPY"));
    assert!(String::from_utf8_lossy(&npy[..4096]).contains("'shape': ()"));
    let (_, _, range) = reference(&bytes)
        .into_iter()
        .find(|t| t.0 == "scalar")
        .unwrap();
    assert_eq!(&npy[4096..], &bytes[range]);
}

#[test]
fn every_rejected_file_is_refused_before_mounting() {
    for file in rows_in("safetensors/reject") {
        let row = rows().into_iter().find(|r| r.path() == file).unwrap();
        let rule = row.open.strip_prefix("reject:").unwrap().to_string();
        let m = Mount::unmounted();
        let out = m.mount(&file, &[]);
        assert_eq!(out.status.code(), Some(1), "{}", file.display());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("rejected ({rule})")),
            "{}: {stderr}",
            file.display()
        );
        assert!(!is_mounted(m.path()));
    }
}

/// A safetensors file of `tensors` (name, dtype, shape, data length).
fn safetensors_of(tensors: &[(&str, &str, Vec<u64>, usize)]) -> Vec<u8> {
    let (mut header, mut data) = (serde_json::Map::new(), Vec::new());
    for (name, dtype, shape, len) in tensors {
        let at = data.len();
        data.resize(at + len, 0);
        let v = serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [at, at + len]});
        header.insert(name.to_string(), v);
    }
    let header = serde_json::to_vec(&header).unwrap();
    let mut f = (header.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(&header);
    f.extend_from_slice(&data);
    f
}

#[test]
fn data_npy_is_served_only_for_shapes_np_load_reads() {
    // np.load (numpy 2.4.6) refuses rank 65 (NPY_MAXDIMS is 64) and a
    // dimension of 2^63 (shapes are int64) even when another is 0.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shapes.safetensors");
    let tensors = [
        ("rank64", "F32", vec![1; 64], 4),
        ("rank65", "F32", vec![1; 65], 4),
        ("huge_empty", "U8", vec![0, 1 << 63], 0),
        ("big_empty", "U8", vec![0, (1 << 63) - 1], 0),
    ];
    std::fs::write(&file, safetensors_of(&tensors)).unwrap();
    let m = Mount::new(&file, &[]);
    let dirs = object_dirs(&m);
    for (name, served) in [
        ("rank64", true),
        ("rank65", false),
        ("huge_empty", false),
        ("big_empty", true),
    ] {
        let dir = m.join(&dirs[name]);
        let meta = meta(&dir);
        let part = &meta["parts"].items()[0];
        let npy = std::fs::read(dir.join("data.npy"));
        assert_eq!(
            npy.is_ok(),
            served,
            "{name}: data.npy {:?}",
            npy.as_ref().err()
        );
        assert_eq!(part["no_npy"].is_null(), served, "{name}: {part:?}");
        match npy {
            Ok(npy) => {
                let text = String::from_utf8_lossy(&npy[10..4096]).into_owned();
                let shape = &tensors.iter().find(|t| t.0 == name).unwrap().2;
                let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
                assert!(
                    text.contains(&format!("'shape': ({}),", dims.join(", "))),
                    "{text}"
                );
            }
            Err(_) => {
                let why = part["no_npy"].text().to_string();
                assert!(why.contains("numpy"), "{name}: {why}");
            }
        }
    }
}

/// A header of millions of small values (an ignored field of a tensor,
/// arrays nested 100 deep, which the `safetensors` package accepts) makes
/// a `manifest.json` as large as itself. The daemon writes it from the
/// header's text without a tree of its values (about 40 times the text:
/// a 10 MB header peaked at 400 MB) and keeps it in a temporary file, not
/// in memory: while it is written its peak grows by about the header's
/// length at most (the header read again), and afterwards its anonymous
/// memory has not grown by the text (its threads' first reads grow it by
/// about 9 MB of malloc arenas here, whatever they read).
#[test]
fn a_huge_header_s_manifest_json_costs_the_daemon_its_length_once_and_then_nothing() {
    let deep = format!(
        "{}{}{}",
        "[".repeat(100),
        ["0"; 1000].join(","),
        "]".repeat(100)
    );
    let values = vec![deep; 8000].join(",");
    let mut header =
        format!(r#"{{"t":{{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":[{values}]}}}}"#);
    header.push_str(&" ".repeat((8 - header.len() % 8) % 8));
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&[0; 4]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge-header.safetensors");
    std::fs::write(&file, &bytes).unwrap();

    let m = Mount::new(&file, &["--cache-mib", "16"]);
    let pid = m.daemon();
    let (peak, anon) = (status_kib(pid, "VmHWM"), status_kib(pid, "RssAnon"));
    let text = std::fs::read(m.join("manifest.json")).unwrap();
    assert_eq!(text, ztfs_ok(&[OsStr::new("manifest"), file.as_os_str()]));
    assert!(text.len() > 16 << 20, "the text is {} bytes", text.len());
    let grew = (status_kib(pid, "VmHWM") - peak) << 10;
    let kept = status_kib(pid, "RssAnon").saturating_sub(anon) << 10;
    let header_len = header.len() as u64;
    assert!(
        grew < 2 * header_len + (16 << 20),
        "the peak grew by {grew} bytes writing the manifest.json of a {header_len}-byte header"
    );
    // The threads' arenas alone keep 8.5-8.9 MB here (a bound of half the
    // text failed now and then); the text kept would add its 17.8 MB.
    assert!(
        kept < text.len() as u64,
        "{kept} bytes more stay resident after reading a {}-byte manifest.json",
        text.len()
    );
}

/// `check --verify` says what it verified: without digests only bool
/// tensors have a rule on their bytes, so the others are not read, and it
/// says so rather than "every tensor reads".
#[test]
fn check_verify_says_what_it_read() {
    let bytes = common::safetensors_file(
        &[
            ("w", "F32", &[4], vec![0; 16]),
            ("m", "BOOL", &[2], vec![1, 0]),
        ],
        None,
    );
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("m.safetensors");
    std::fs::write(&p, bytes).unwrap();
    let out = common::ztfs_ok(&[Path::new("check"), Path::new("--verify"), &p]);
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("bool tensor's bytes are 0 or 1") && text.contains("not read"),
        "{text}"
    );
    assert!(!text.contains("every tensor reads"), "{text}");
}
