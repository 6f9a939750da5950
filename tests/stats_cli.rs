//! `ztfs stats` through the real binary, on safetensors files written
//! here (the interop suite holds every number against numpy): names that
//! would be terminal controls printed escaped, every tensor in the file's
//! order, the options' bounds, and an unknown or value-less tensor refused
//! with a word of why, a file truncated under the run an error.

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

/// A file truncated in place under `ztfs stats` while its threads read
/// the tensor from the file's map (reads past the new end fault): an
/// error naming it, not a SIGBUS that kills the process without a word,
/// and no numbers printed.
#[test]
fn a_file_truncated_under_stats_is_an_error() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let d = tempfile::tempdir().unwrap();
    // 256 MiB of zeros (sparse): seconds of work for a debug build.
    let p = d.path().join("big.safetensors");
    let n = 256u64 << 20;
    let header = format!(
        r#"{{"t":{{"dtype":"F32","shape":[{}],"data_offsets":[0,{n}]}}}}"#,
        n / 4
    );
    let mut head = (header.len() as u64).to_le_bytes().to_vec();
    head.extend_from_slice(header.as_bytes());
    std::fs::write(&p, &head).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(head.len() as u64 + n).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ztfs"))
        .args([Path::new("stats"), Path::new("--progress"), &p])
        .env("ZTFS_PROGRESS_AFTER_MS", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first progress line: the threads are reading the map.
    let mut err = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !String::from_utf8_lossy(&seen).contains("computing: ") {
        assert_eq!(err.read(&mut byte).unwrap(), 1, "stats ended first");
        seen.push(byte[0]);
    }
    f.set_len(4096).unwrap();
    err.read_to_end(&mut seen).unwrap();
    let o = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&seen);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("truncated under a read"), "{text}");
    assert!(o.stdout.is_empty(), "numbers printed");
}
