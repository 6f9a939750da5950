//! What ztfs says when a model by URL cannot be read for a reason outside
//! the model: a network that fails (a closed port, a name that does not
//! resolve, a TLS handshake with a server that speaks plain HTTP), by
//! `http(s)://` and by `hf://` alike. Each is an I/O error (exit 2, JSON
//! kind `io`, `ztfs.Error` in Python, not `Refused`) that names what
//! failed in plain words.

use crate::common;

use std::net::TcpListener;

use common::http::Nginx;
use common::{ztfs_env, Json};

/// A URL of 127.0.0.1 on a port nothing listens on (it was free a moment
/// ago).
fn closed_port() -> String {
    let free = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap();
    drop(free);
    format!("http://{addr}")
}

/// `ztfs ls URL` with `env` fails with exit 2, one line naming `words`,
/// and its JSON form (`ZTFS_ERROR_FORMAT=json`) has kind `io`.
fn fails_as_io(url: &str, env: &[(&str, String)], words: &str) {
    let out = ztfs_env(&["ls", url], env);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{url}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{url}: {err}");
    assert!(err.contains(words), "{url}: {words:?} not in {err}");
    for noise in ["refused:", "error sending request", "Generic", "retries"] {
        assert!(!err.contains(noise), "{url}: {noise:?} in {err}");
    }
    let mut env = env.to_vec();
    env.push(("ZTFS_ERROR_FORMAT", "json".into()));
    let out = ztfs_env(&["ls", url], &env);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = Json::parse(err.trim_end().lines().last().unwrap_or_default());
    assert_eq!(json["error"].text(), "io", "{url}: {err}");
    assert_eq!(json["exit_code"].uint(), 2, "{url}: {err}");
}

/// A failed network is an I/O error saying what failed, never a refusal
/// (before, `hf://` without a network said `refused: the Hub: error
/// sending request`, exit 1).
#[test]
fn a_failed_network_is_an_io_error_that_says_what_failed() {
    let closed = closed_port();
    let nowhere = "http://no-such-host.invalid";
    let t = tempfile::tempdir().unwrap();
    // A server of plain HTTP, asked for TLS.
    let plain = Nginx::serve(t.path());
    let tls = plain.url("").replacen("http://", "https://", 1);
    let tls = tls.trim_end_matches('/');
    let refused = "connection refused";
    let dns = "the server's name does not resolve (DNS)";
    let handshake = "the secure connection (TLS) failed";
    for (server, words) in [(&*closed, refused), (nowhere, dns), (tls, handshake)] {
        fails_as_io(&format!("{server}/model.safetensors"), &[], words);
        let hub = [
            ("HF_ENDPOINT", server.to_string()),
            ("HF_TOKEN", String::new()),
            ("HF_HOME", t.path().join("home").display().to_string()),
        ];
        fails_as_io(
            "hf://org/name",
            &hub,
            &format!("the Hub at {server}: {words}"),
        );
    }
}
