//! A Hugging Face Hub emulator on 127.0.0.1 for the tests of `hf://`
//! models (`scripts/hub/emulator.py`, run by the project's Python), its
//! repositories made by `scripts/hub/store.py` from folders that
//! `scripts/hub/make_repo.py` writes, and the real `huggingface_hub`
//! (`snapshot_download`) as the oracle of what a repository holds.
//!
//! [`Hub`] owns its process (a process group of its own, stopped on drop)
//! and its repositories' directory.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::venv::python;

/// How long the emulator may take to say it listens.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The emulator, serving the repositories of its own directory.
pub struct Hub {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    dir: tempfile::TempDir,
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts/hub")
        .join(name)
}

impl Hub {
    /// Starts an emulator; repositories marked private or gated need
    /// `token`.
    pub fn start(token: Option<&str>) -> Hub {
        Hub::start_with(token, None)
    }

    /// [`Hub::start`], its tree listings in pages of `page_size` entries.
    pub fn start_with(token: Option<&str>, page_size: Option<usize>) -> Hub {
        let dir = tempfile::Builder::new()
            .prefix("ztfs-hub-")
            .tempdir()
            .expect("a temporary directory");
        let repos = dir.path().join("repos");
        std::fs::create_dir(&repos).expect("the repositories' directory");
        let mut cmd = Command::new(python());
        cmd.arg(script("emulator.py"))
            .arg("--repos")
            .arg(&repos)
            .args(["--host", "127.0.0.1", "--port", "0"]);
        if let Some(t) = token {
            cmd.args(["--token", t]);
        }
        if let Some(n) = page_size {
            cmd.args(["--page-size", &n.to_string()]);
        }
        let log = std::fs::File::create(dir.path().join("emulator.log")).expect("its log");
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("start scripts/hub/emulator.py");
        let stdout = child.stdout.take().expect("its stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(START_TIMEOUT).unwrap_or_default();
        let Some(addr) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let log = std::fs::read_to_string(dir.path().join("emulator.log")).unwrap_or_default();
            panic!("the Hub emulator did not start: {line:?}\n{log}");
        };
        Hub {
            url: format!("http://{addr}"),
            child,
            dir,
        }
    }

    /// The directory of its repositories.
    pub fn repos(&self) -> PathBuf {
        self.dir.path().join("repos")
    }

    /// Adds the folder `src` as a new commit of repository `repo` (of
    /// `kind`: `models`, `datasets`, `spaces`), pointing `refs` at it;
    /// returns the commit.
    pub fn add(&self, kind: &str, repo: &str, src: &Path, refs: &[&str]) -> String {
        let mut cmd = Command::new(python());
        cmd.arg(script("store.py"))
            .arg("add")
            .arg(self.repos())
            .args([kind, repo])
            .arg(src);
        for r in refs {
            cmd.args(["--ref", r]);
        }
        let out = cmd.output().expect("run scripts/hub/store.py");
        assert!(out.status.success(), "store.py add: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Marks repository `repo` private (`private`) or gated (`gated`).
    pub fn mark(&self, kind: &str, repo: &str, marker: &str) {
        let dir = self.repos().join(kind).join(repo);
        std::fs::write(dir.join(marker), b"").expect("write the marker");
    }

    /// The environment that points a client at it.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![("HF_ENDPOINT", self.url.clone())]
    }

    /// `GET path` of the emulator: the body.
    pub fn get(&self, path: &str) -> String {
        self.request("GET", path)
    }

    /// `POST path` with an empty body: the body.
    pub fn post(&self, path: &str, body: &str) -> String {
        self.request_body("POST", path, body)
    }

    fn request(&self, method: &str, path: &str) -> String {
        self.request_body(method, path, "")
    }

    fn request_body(&self, method: &str, path: &str, body: &str) -> String {
        let addr = self.url.trim_start_matches("http://");
        let mut s = std::net::TcpStream::connect(addr).expect("connect to the emulator");
        s.set_read_timeout(Some(Duration::from_secs(10))).ok();
        write!(
            s,
            "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("send the request");
        let mut answer = String::new();
        s.read_to_string(&mut answer).expect("read the answer");
        answer
            .split_once("\r\n\r\n")
            .map_or(String::new(), |(_, b)| b.to_string())
    }

    /// The emulator's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("emulator.log")).unwrap_or_default()
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let pid = self.child.id() as i32;
        // The group: the server and anything it started.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// `scripts/hub/make_repo.py OUT args...`: a small real model repository.
pub fn make_repo(out: &Path, args: &[&str]) {
    let o = Command::new(python())
        .arg(script("make_repo.py"))
        .arg(out)
        .args(args)
        .output()
        .expect("run scripts/hub/make_repo.py");
    assert!(o.status.success(), "make_repo.py: {}", stderr(&o));
}

/// `huggingface_hub.snapshot_download` of `repo` at `revision` from
/// `hub`, with `HF_HOME` at `hf_home`: the snapshot's folder.
pub fn snapshot_download(hub: &Hub, repo: &str, revision: &str, hf_home: &Path) -> PathBuf {
    let code = "import sys\nfrom huggingface_hub import snapshot_download\n\
                print(snapshot_download(sys.argv[1], revision=sys.argv[2]))";
    let o = Command::new(python())
        .args(["-c", code, repo, revision])
        .envs(hub.env())
        .env("HF_HOME", hf_home)
        .env("HF_HUB_DISABLE_XET", "1")
        .env("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        .env_remove("HF_TOKEN")
        .output()
        .expect("run huggingface_hub");
    assert!(o.status.success(), "snapshot_download: {}", stderr(&o));
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
