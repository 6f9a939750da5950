//! The nginx that the tests of reading models over HTTP serve files with
//! (`common::http`), and what its answers do that those reads rely on:
//! ranges and their edges, the ETag and how a replaced file changes it (or
//! does not), `If-Match` and `If-Range`, a server that goes away and comes
//! back. Each test serves 1 MiB of seeded pseudo-random bytes from its own
//! temporary directory on its own port.

use crate::common;

use std::io::ErrorKind;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::http::{get, try_get, Nginx, Response};
use common::Lcg;

/// The served file's length.
const LEN: usize = 1 << 20;

/// `LEN` bytes drawn from `seed`.
fn bytes(seed: u64) -> Vec<u8> {
    let mut lcg = Lcg::new(seed);
    (0..LEN).map(|_| lcg.below(256) as u8).collect()
}

/// `model.bin`, the bytes of seed 1, served by its own nginx.
struct Served {
    nginx: Nginx,
    file: PathBuf,
    bytes: Vec<u8>,
    // Dropped after the server.
    _dir: tempfile::TempDir,
}

impl Served {
    fn new() -> Served {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let file = dir.path().join("model.bin");
        let bytes = bytes(1);
        std::fs::write(&file, &bytes).expect("write model.bin");
        Served {
            nginx: Nginx::serve(dir.path()),
            file,
            bytes,
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        self.nginx.url("model.bin")
    }

    fn get(&self, headers: &[(&str, &str)]) -> Response {
        get(&self.url(), headers)
    }

    fn range(&self, spec: &str) -> Response {
        self.get(&[("Range", spec)])
    }

    /// The ETag of a whole GET.
    fn etag(&self) -> String {
        let r = self.get(&[]);
        assert_eq!(r.status, 200);
        r.header("ETag").expect("an ETag").to_string()
    }
}

/// Asserts a body without printing a mebibyte when it differs.
fn assert_body(r: &Response, want: &[u8]) {
    assert!(
        r.body == want,
        "body of {} bytes, want {}; first difference at {:?}",
        r.body.len(),
        want.len(),
        r.body.iter().zip(want).position(|(a, b)| a != b)
    );
}

/// Replaces `path` as a writer that publishes whole files does: `bytes`
/// into a temporary name beside it, with the modification time `mtime`,
/// then renamed over it.
fn replace_file(path: &Path, bytes: &[u8], mtime: SystemTime) {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).expect("create the replacement");
    f.write_all(bytes).expect("write the replacement");
    f.set_modified(mtime).expect("set its modification time");
    drop(f);
    std::fs::rename(&tmp, path).expect("rename over the served file");
}

fn mtime(path: &Path) -> SystemTime {
    let meta = std::fs::metadata(path).expect("stat the served file");
    meta.modified().expect("a modification time")
}

#[test]
fn a_full_get_returns_the_bytes_and_a_strong_etag() {
    let s = Served::new();
    let r = s.get(&[]);
    assert_eq!(r.status, 200);
    assert_body(&r, &s.bytes);
    assert_eq!(r.header("Content-Length"), Some("1048576"));
    assert_eq!(r.header("Accept-Ranges"), Some("bytes"));
    let etag = r.header("ETag").expect("an ETag");
    let quoted = etag.len() > 2 && etag.starts_with('"') && etag.ends_with('"');
    assert!(quoted, "not a strong ETag: {etag:?}");
}

#[test]
fn a_range_returns_206_with_exactly_those_bytes() {
    let s = Served::new();
    let r = s.range("bytes=100-199");
    assert_eq!(r.status, 206);
    assert_body(&r, &s.bytes[100..200]);
    assert_eq!(r.header("Content-Range"), Some("bytes 100-199/1048576"));
    assert_eq!(r.header("Content-Length"), Some("100"));
}

#[test]
fn a_range_ending_past_the_end_stops_at_the_end() {
    let s = Served::new();
    let r = s.range(&format!("bytes={}-{}", LEN - 10, LEN + 99));
    assert_eq!(r.status, 206);
    assert_body(&r, &s.bytes[LEN - 10..]);
    assert_eq!(
        r.header("Content-Range"),
        Some("bytes 1048566-1048575/1048576")
    );
}

#[test]
fn a_suffix_range_returns_the_last_bytes() {
    let s = Served::new();
    let r = s.range("bytes=-40");
    assert_eq!(r.status, 206);
    assert_body(&r, &s.bytes[LEN - 40..]);
    assert_eq!(
        r.header("Content-Range"),
        Some("bytes 1048536-1048575/1048576")
    );

    // Longer than the file: all of it, still as a 206.
    let r = s.range(&format!("bytes=-{}", LEN + 1));
    assert_eq!(r.status, 206);
    assert_body(&r, &s.bytes);
    assert_eq!(r.header("Content-Range"), Some("bytes 0-1048575/1048576"));
}

#[test]
fn a_range_starting_at_or_past_the_end_is_416_with_the_length() {
    let s = Served::new();
    for spec in [
        format!("bytes={LEN}-"),
        format!("bytes={}-{}", LEN + 5, LEN + 9),
    ] {
        let r = s.range(&spec);
        assert_eq!(r.status, 416, "{spec}");
        assert_eq!(r.header("Content-Range"), Some("bytes */1048576"), "{spec}");
    }
}

#[test]
fn a_range_of_another_unit_gets_the_whole_file_as_200() {
    let s = Served::new();
    let r = s.range("items=0-1");
    assert_eq!(r.status, 200);
    assert_body(&r, &s.bytes);
    assert_eq!(r.header("Content-Range"), None);
}

#[test]
fn if_match_serves_on_the_etag_and_fails_412_on_another() {
    let s = Served::new();
    let etag = s.etag();
    let r = s.get(&[("Range", "bytes=100-199"), ("If-Match", &etag)]);
    assert_eq!(r.status, 206);
    assert_body(&r, &s.bytes[100..200]);
    let r = s.get(&[("If-Match", &etag)]);
    assert_eq!(r.status, 200);
    assert_body(&r, &s.bytes);

    let weak = format!("W/{etag}");
    for other in ["\"0-0\"", weak.as_str()] {
        let r = s.get(&[("Range", "bytes=100-199"), ("If-Match", other)]);
        assert_eq!(r.status, 412, "If-Match {other} with a range");
        let r = s.get(&[("If-Match", other)]);
        assert_eq!(r.status, 412, "If-Match {other}");
    }
}

#[test]
fn if_range_on_another_etag_sends_the_whole_file_as_200() {
    let s = Served::new();
    let etag = s.etag();
    let r = s.get(&[("Range", "bytes=100-199"), ("If-Range", &etag)]);
    assert_eq!(r.status, 206);
    assert_body(&r, &s.bytes[100..200]);
    let r = s.get(&[("Range", "bytes=100-199"), ("If-Range", "\"0-0\"")]);
    assert_eq!(r.status, 200);
    assert_body(&r, &s.bytes);
}

#[test]
fn a_file_replaced_by_rename_with_a_new_mtime_has_a_new_etag() {
    let s = Served::new();
    let old = s.etag();
    let new = bytes(2);
    let later = mtime(&s.file) + Duration::from_secs(2);
    replace_file(&s.file, &new, later);
    let r = s.get(&[]);
    assert_eq!(r.status, 200);
    assert_body(&r, &new);
    let etag = r.header("ETag").expect("an ETag");
    assert_ne!(etag, old);
    let r = s.get(&[("Range", "bytes=100-199"), ("If-Match", &old)]);
    assert_eq!(r.status, 412);
}

/// nginx's ETag is the modification time in seconds and the length
/// (`"{mtime:x}-{len:x}"`), so a replacement of the same length within the
/// same second passes `If-Match` with the old ETag and serves new bytes.
#[test]
fn a_replacement_of_the_same_length_and_mtime_keeps_the_etag() {
    let s = Served::new();
    let old = s.etag();
    let new = bytes(2);
    replace_file(&s.file, &new, mtime(&s.file));
    assert_eq!(s.etag(), old);
    let r = s.get(&[("Range", "bytes=100-199"), ("If-Match", &old)]);
    assert_eq!(r.status, 206);
    assert_body(&r, &new[100..200]);
}

#[test]
fn stop_refuses_connections_and_start_again_serves_on_the_same_port() {
    let mut s = Served::new();
    let port = s.nginx.port();
    s.nginx.stop();
    let err = try_get(&s.url(), &[]).expect_err("a stopped server answered");
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
    s.nginx.start_again();
    assert_eq!(s.nginx.port(), port);
    let r = s.range("bytes=100-199");
    assert_eq!(r.status, 206);
    assert_body(&r, &s.bytes[100..200]);
}

#[test]
fn dropping_the_server_stops_it() {
    let s = Served::new();
    let url = s.url();
    assert_eq!(s.get(&[]).status, 200);
    drop(s);
    let err = try_get(&url, &[]).expect_err("a dropped server answered");
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
}
