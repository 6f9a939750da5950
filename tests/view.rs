//! `ztfs view` through the real binary and a real browser (Debian's
//! headless Chromium, which `.ci/run` installs): the model's page lists
//! every tensor, a tensor's page shows `ztfs stats`' numbers, an SVG
//! histogram of the right bars and heights, and a heatmap of the right
//! size; a name or a metadata string holding markup stays text (a planted
//! script that would change the title does not run); requests without the
//! token, for paths, for an unknown tensor or too long are refused.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::*;

const EVIL_NAME: &str = "<script>document.title='pwned'</script>";
const EVIL_META: &str = "<img src=x onerror=\"document.title='pwned2'\">";

/// A safetensors file: a 2-D float32 tensor of 300 x 700, a tensor named
/// with markup, a small int8 one; metadata holding markup.
fn model(dir: &Path) -> PathBuf {
    let w: Vec<u8> = (0..300 * 700)
        .flat_map(|i| (((i * 7919) % 1000) as f32 * 0.002 - 1.0).to_le_bytes())
        .collect();
    let tensors: [(&str, &str, Vec<u64>, Vec<u8>); 3] = [
        ("layers.0.w", "F32", vec![300, 700], w),
        (
            EVIL_NAME,
            "F32",
            vec![2],
            [1.0f32, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect(),
        ),
        ("layers.1.b", "I8", vec![4], vec![1, 2, 3, 0xFF]),
    ];
    let tensors: Vec<(&str, &str, &[u64], Vec<u8>)> = tensors
        .iter()
        .map(|(n, d, s, b)| (*n, *d, &s[..], b.clone()))
        .collect();
    let meta = serde_json::json!({ "note": EVIL_META }).to_string();
    let p = dir.join("m.safetensors");
    std::fs::write(&p, safetensors_file(&tensors, Some(&meta))).unwrap();
    p
}

/// A running `ztfs view`, stopped with SIGINT when dropped.
struct View {
    child: Child,
    /// Its stdout, kept open.
    _out: BufReader<std::process::ChildStdout>,
    /// `http://127.0.0.1:PORT`, and the token.
    base: String,
    token: String,
}

impl View {
    fn start(file: &Path) -> View {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ztfs"))
            .arg("view")
            .arg(file)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut line).unwrap();
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"));
        let (base, token) = url.split_once("/?token=").unwrap();
        assert!(base.starts_with("http://127.0.0.1:"), "bound to {base}");
        View {
            child,
            _out: out,
            base: base.to_string(),
            token: token.to_string(),
        }
    }

    /// `path` (with the token added) as a headless Chromium renders it: its
    /// DOM after every script that would run.
    fn dom(&self, path: &str) -> String {
        let sep = if path.contains('?') { '&' } else { '?' };
        let url = format!("{}{path}{sep}token={}", self.base, self.token);
        let out = Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--dump-dom",
                &url,
            ])
            .stderr(Stdio::null())
            .output()
            .expect("chromium (Debian's package; .ci/run installs it)");
        assert!(out.status.success(), "chromium {url}: {:?}", out.status);
        String::from_utf8(out.stdout).unwrap()
    }

    /// A raw GET of `target`: the status code and the body.
    fn get(&self, target: &str) -> (u16, Vec<u8>) {
        let addr = self.base.trim_start_matches("http://");
        let mut s = TcpStream::connect(addr).unwrap();
        write!(
            s,
            "GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).unwrap();
        let text = String::from_utf8_lossy(&answer);
        let code = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = match answer.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(i) => answer[i + 4..].to_vec(),
            None => Vec::new(),
        };
        (code, body)
    }
}

impl View {
    /// Ctrl-C, as a person stops it: it exits, successfully, at once.
    fn interrupt(mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "ztfs view after Ctrl-C: {status:?}");
                return;
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(10),
                "ztfs view ignored Ctrl-C"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for View {
    fn drop(&mut self) {
        // SAFETY-free: the child's pid, signalled as Ctrl-C would.
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

fn title(dom: &str) -> &str {
    let a = dom.find("<title>").map_or(0, |i| i + 7);
    let b = dom.find("</title>").unwrap_or(a);
    &dom[a..b]
}

#[test]
fn the_page_lists_every_tensor_and_no_planted_script_runs() {
    let d = tempfile::tempdir().unwrap();
    let file = model(d.path());
    let v = View::start(&file);
    let dom = v.dom("/");
    assert!(
        title(&dom).starts_with("ztfs view: "),
        "title {:?}",
        title(&dom)
    );
    assert_eq!(dom.matches("class=\"tensor\"").count(), 3, "{dom}");
    // The markup is text: escaped in the DOM, never an element.
    assert!(
        dom.contains("<summary>&lt;script&gt;document</summary>"),
        "{dom}"
    );
    assert!(dom.contains(">title='pwned'&lt;/script&gt;</a>"), "{dom}");
    assert!(dom.contains("&lt;img src=x onerror="), "{dom}");
    assert!(!dom.contains("<img src=\"x\""), "{dom}");
    // The tree by dotted names: layers, then 0 and 1.
    assert!(dom.contains("<summary>layers</summary>"), "{dom}");
    let evil = v.dom(&format!("/tensor?name={}", percent(EVIL_NAME)));
    assert_eq!(
        title(&evil),
        "ztfs view: &lt;script&gt;document.title='pwned'&lt;/script&gt;"
    );
}

#[test]
fn a_tensor_page_shows_the_statistics_histogram_and_heatmap() {
    let d = tempfile::tempdir().unwrap();
    let file = model(d.path());
    let v = View::start(&file);
    let dom = v.dom("/tensor?name=layers.0.w");
    let json: serde_json::Value =
        serde_json::from_slice(&ztfs_ok(&[Path::new("stats"), Path::new("--json"), &file]))
            .unwrap();
    let s = &json["layers.0.w"];
    for (key, want) in [
        ("values", s["count"].to_string()),
        ("NaN", s["nan"].to_string()),
        ("min", ztfs::stats::short_number(s["min"].as_f64().unwrap())),
        ("max", ztfs::stats::short_number(s["max"].as_f64().unwrap())),
        (
            "mean",
            ztfs::stats::short_number(s["mean"].as_f64().unwrap()),
        ),
        ("std", ztfs::stats::short_number(s["std"].as_f64().unwrap())),
    ] {
        let cell = format!("data-key=\"{key}\">{want}</td>");
        assert!(dom.contains(&cell), "{cell} not in {dom}");
    }
    // 64 bars, each as high as its count over the fullest bin's.
    let counts: Vec<u64> = s["hist"]["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    let rects: Vec<&str> = dom.split("<rect ").skip(1).collect();
    assert_eq!(rects.len(), 64);
    let top = *counts.iter().max().unwrap() as f64;
    for (r, &c) in rects.iter().zip(&counts) {
        let attr = |k: &str| -> f64 {
            let i = r.find(&format!("{k}=\"")).unwrap() + k.len() + 2;
            r[i..i + r[i..].find('"').unwrap()].parse().unwrap()
        };
        assert_eq!(attr("data-count") as u64, c);
        assert!(
            (attr("height") - c as f64 / top * 200.0).abs() < 0.01,
            "{r}"
        );
    }
    // The first values, and a heatmap of 300 x 512 pixels.
    assert!(
        dom.contains("<code id=\"first\">-1, 0.838, 0.676, "),
        "{dom}"
    );
    assert!(dom.contains("width=\"512\" height=\"300\""), "{dom}");
    let (code, png) = v.get(&format!("/heatmap.png?name=layers.0.w&token={}", v.token));
    assert_eq!(code, 200);
    assert_eq!(&png[1..4], b"PNG");
    let be = |i: usize| u32::from_be_bytes(png[i..i + 4].try_into().unwrap());
    assert_eq!((be(16), be(20)), (512, 300), "the PNG's width and height");
}

#[test]
fn requests_without_the_token_for_paths_or_too_long_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let file = model(d.path());
    let v = View::start(&file);
    let t = &v.token;
    assert_eq!(v.get("/").0, 403);
    assert_eq!(v.get("/?token=0123").0, 403);
    assert_eq!(v.get(&format!("/?token={}", "0".repeat(t.len()))).0, 403);
    assert_eq!(v.get("/tensor?name=layers.0.w").0, 403);
    assert_eq!(v.get(&format!("/?token={t}")).0, 200);
    assert_eq!(v.get(&format!("/../../../etc/passwd?token={t}")).0, 404);
    assert_eq!(v.get(&format!("/etc/passwd?token={t}")).0, 404);
    assert_eq!(
        v.get(&format!("/tensor?name=..%2F..%2Fetc%2Fpasswd&token={t}"))
            .0,
        404
    );
    assert_eq!(
        v.get(&format!("/heatmap.png?name=layers.1.b&token={t}")).0,
        404,
        "not 2-D"
    );
    let long = format!("/tensor?name={}&token={t}", "a".repeat(5000));
    assert_eq!(v.get(&long).0, 414);
    v.interrupt();
}

/// `s` percent-encoded for a query value.
fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}
