//! What ztfs says when a model by URL cannot be read for a reason outside
//! the model: a network that fails (a closed port, a name that does not
//! resolve, a TLS handshake with a server that speaks plain HTTP), by
//! `http(s)://` and by `hf://` alike, each an I/O error (exit 2, JSON
//! kind `io`, `ztfs.Error` in Python, not `Refused`) that names what
//! failed in plain words; a server that does not answer ranges; a URL
//! that names a folder.

use crate::common;

use std::net::TcpListener;

use common::http::Nginx;
use common::{ztfs_env, Json};

/// A port of 127.0.0.1 that refuses connections for as long as it lives:
/// a socket bound to it and not listening, so that no other test's server
/// takes the port meanwhile (one freed by a listener's drop may be).
struct ClosedPort {
    /// Held, never read: the port is taken while it is open.
    _socket: std::os::fd::OwnedFd,
    port: u16,
}

impl ClosedPort {
    fn new() -> ClosedPort {
        use std::os::fd::FromRawFd;
        // SAFETY: plain socket calls on a descriptor this function owns,
        // with pointers to locals of the right sizes.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            let fd = std::os::fd::OwnedFd::from_raw_fd(fd);
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
            let bound = libc::bind(raw, &addr as *const _ as *const libc::sockaddr, size);
            assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
            let mut len = size;
            let named =
                libc::getsockname(raw, &mut addr as *mut _ as *mut libc::sockaddr, &mut len);
            assert_eq!(named, 0, "getsockname: {}", std::io::Error::last_os_error());
            ClosedPort {
                _socket: fd,
                port: u16::from_be(addr.sin_port),
            }
        }
    }

    /// `http://127.0.0.1:PORT`.
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
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
    let port = ClosedPort::new();
    let closed = port.url();
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

/// A server on 127.0.0.1 that answers every request with the whole of
/// `body` (200, with an ETag), as a server without ranges does; it
/// serves until the test process ends.
fn whole_answers(body: Vec<u8>) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut head = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            let mut first = String::new();
            while head.read_line(&mut line).is_ok_and(|n| n > 2) {
                if first.is_empty() {
                    first = line.clone();
                }
                line.clear();
            }
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nETag: \"v1\"\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(answer.as_bytes());
            if !first.starts_with("HEAD") {
                let _ = conn.write_all(&body);
            }
        }
    });
    url
}

/// A server that answers a range request with the whole file is said to
/// be one, with what to do instead (before: "Range request not supported
/// by model.safetensors", which blamed the file).
#[test]
fn a_server_without_ranges_is_said_to_be_one() {
    let model =
        std::fs::read(common::corpus().join("safetensors/valid/every-dtype.safetensors")).unwrap();
    let server = whole_answers(model);
    let url = format!("{server}/model.safetensors");
    let host = server.trim_start_matches("http://");
    let words = format!(
        "the server at {host} answered the whole file (200) to a range request, and ztfs reads a model by ranges: download the file and give its local path, or serve it with a server that answers ranges"
    );
    fails_as_io(&url, &[], &words);
}

/// A URL that names a folder, refused (403) or missing (404), says that a
/// URL must name a model file or an index (before: "check the
/// credentials or the signature").
#[test]
fn a_folders_url_is_told_to_name_a_model_file() {
    let t = tempfile::tempdir().unwrap();
    std::fs::create_dir(t.path().join("dir")).unwrap();
    let nginx = Nginx::serve(t.path());
    let must = "a URL must name a model file (model.safetensors, model.zt, model.gguf, ...) or a checkpoint's index (model.safetensors.index.json)";
    let cases = [
        ("dir/", format!("access denied (403): \"/dir/\" is a folder, and {must}")),
        ("missing/", format!("no such object (404): \"/missing/\" is a folder, and {must}")),
        ("dir", format!("access denied (403): check the credentials or the signature; if \"dir\" is a folder, {must}")),
        ("missing", format!("no such object (404); if \"missing\" is a folder, {must}")),
    ];
    for (path, words) in cases {
        fails_as_io(&nginx.url(path), &[], &words);
    }
    // A file's URL gets no such advice.
    let out = ztfs_env(&["ls", &nginx.url("dir/m.safetensors")], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.ends_with(": no such object (404)\n"), "{err}");
}
