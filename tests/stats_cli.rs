//! `ztfs stats` through the real binary, on safetensors files written
//! here (the interop suite holds every number against numpy): names that
//! would be terminal controls printed escaped, every tensor in the file's
//! order, the options' bounds, and an unknown or value-less tensor refused
//! with a word of why.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// A safetensors file of `tensors` (name, dtype, shape, bytes).
fn safetensors(dir: &Path, tensors: &[(&str, &str, &[u64], Vec<u8>)]) -> PathBuf {
    let p = dir.join("m.safetensors");
    std::fs::write(&p, safetensors_file(tensors, None)).unwrap();
    p
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn the_text_names_every_tensor_and_escapes_controls() {
    let d = tempfile::tempdir().unwrap();
    let evil = "w\u{1b}[2J\u{7}";
    let p = safetensors(
        d.path(),
        &[
            ("b", "F32", &[2], f32s(&[1.0, f32::NAN])),
            (evil, "I8", &[3], vec![1, 2, 0xFF]),
            ("empty", "F16", &[0, 3], vec![]),
        ],
    );
    let out = ztfs(&[Path::new("stats"), &p]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(text.contains(r#""w\u{1b}[2J\u{7}""#), "{text}");
    assert!(text.contains("nan 1"), "{text}");
    assert!(text.contains("no finite value"), "{text}");
    let json: serde_json::Value =
        serde_json::from_slice(&ztfs_ok(&[Path::new("stats"), Path::new("--json"), &p])).unwrap();
    let names: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(names.len(), 3);
    assert_eq!(json[evil]["min"], -1.0);
    assert_eq!(json["empty"]["count"], 0);
    assert_eq!(json["empty"]["hist"]["range"], serde_json::Value::Null);
}

#[test]
fn bounds_and_unknown_names_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let p = safetensors(d.path(), &[("weight", "F32", &[1], f32s(&[2.0]))]);
    let p = p.to_str().unwrap();
    for bins in ["0", "1048577", "-3", "x"] {
        let out = ztfs(&["stats", p, "--bins", bins]);
        assert_eq!(out.status.code(), Some(2), "--bins {bins}");
    }
    let out = ztfs(&["stats", p, "wieght"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("did you mean \"weight\""), "{err}");
    assert!(out.stdout.is_empty());
    // One bin: every finite value in it.
    let json: serde_json::Value =
        serde_json::from_slice(&ztfs_ok(&["stats", "--json", "--bins", "1", p])).unwrap();
    assert_eq!(json["weight"]["hist"]["counts"], serde_json::json!([1]));
}

/// The progress line the other long commands have, on stderr.
#[test]
fn a_long_run_shows_its_progress() {
    let d = tempfile::tempdir().unwrap();
    let big: Vec<f32> = (0..3 << 20).map(|i| i as f32).collect();
    let p = safetensors(d.path(), &[("big", "F32", &[3 << 20], f32s(&big))]);
    let out = ztfs_env(
        &[
            Path::new("stats"),
            Path::new("--progress"),
            Path::new("--cache-mib"),
            Path::new("4"),
            &p,
        ],
        &[("ZTFS_PROGRESS_AFTER_MS", "0".into())],
    );
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("computing: "), "{err:?}");
}
