//! Models read by URL under faults: a proxy in front of a real nginx
//! (`tests/common/proxy.rs`) delays answers, answers 5xx, cuts bodies
//! short or hangs; the served file is replaced under a mount; nginx is
//! killed in the middle of a read. Each test states the outcome that the
//! "Faults" of docs/remote.md documents: the right bytes, or EIO
//! within a bound from a mount that keeps answering, and serves again once
//! the fault clears. Every byte read is compared with the local file, so a
//! short read counts as wrong.
//!
//! Nothing may hang a test: every call into the mount that could wait on
//! the network runs in a thread under a bound (`common::within`). The
//! bounds follow the client's fixed constants (src/store/remote.rs): 20 s
//! per request, 5 s to connect, 3 retries with backoff within 30 s.

use crate::builder;
use crate::common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use builder::{dense, part, root, Fields, FileBuilder, Lcg};
use common::http::Nginx;
use common::proxy::{Fault, Proxy};
use common::{within, Mount};

const MIB: usize = 1 << 20;
/// Seconds a failing read may take: the client's last try starts within
/// its 30 s of retries and may itself take its 20 s timeout.
const EIO_BOUND: u64 = 60;
/// Seconds an answer that needs no server may take.
const QUICK: u64 = 5;
/// Seconds a test waits for a read before it fails as hung: past
/// [`EIO_BOUND`], so that a late EIO is told from a hang.
const HUNG: u64 = 90;

/// A model of raw `u8` parts served by nginx through a proxy. The parts
/// lie in the file in the order given: a part placed before the ones a
/// test reads first is never fetched ahead of its own reads (read-ahead
/// runs forward).
struct Served {
    /// Each part's bytes by object name.
    parts: BTreeMap<String, Vec<u8>>,
    file: PathBuf,
    nginx: Nginx,
    proxy: Proxy,
    _dir: tempfile::TempDir,
}

impl Served {
    /// `model.zt` with a part of each `(name, length)`, seeded by `seed`.
    fn new(seed: u64, sizes: &[(&str, usize)]) -> Served {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let file = dir.path().join("model.zt");
        let (bytes, parts) = model(seed, sizes);
        fs::write(&file, bytes).expect("write model.zt");
        let nginx = Nginx::serve(dir.path());
        let proxy = Proxy::new(nginx.port());
        Served {
            parts,
            file,
            nginx,
            proxy,
            _dir: dir,
        }
    }

    /// Mounts the model through the proxy.
    fn mount(&self) -> Mount {
        Mount::new(Path::new(&self.proxy.url("model.zt")), &[])
    }

    /// The bytes of `object`'s part.
    fn want(&self, object: &str) -> &[u8] {
        &self.parts[object]
    }

    /// Replaces the served file by another model of the same parts, drawn
    /// from `seed`, 4 KiB longer (nginx's ETag is the modification second
    /// and the length, so it changes).
    fn replace(&self, seed: u64) {
        let sizes: Vec<_> = (self.parts.iter())
            .map(|(k, v)| (k.as_str(), v.len()))
            .collect();
        let (mut bytes, _) = model(seed, &sizes);
        bytes.extend_from_slice(&[0; 4096]);
        let next = self.file.with_extension("next");
        fs::write(&next, bytes).expect("write the new model");
        fs::rename(&next, &self.file).expect("replace the model");
    }
}

/// A model file with a raw part per `(name, length)` of bytes drawn from
/// `seed`, and those bytes by name.
fn model(seed: u64, sizes: &[(&str, usize)]) -> (Vec<u8>, BTreeMap<String, Vec<u8>>) {
    let mut rng = Lcg::new(seed);
    let mut f = FileBuilder::new();
    let mut objects = Fields::new();
    let mut parts = BTreeMap::new();
    for &(name, len) in sizes {
        let data = rng.bytes(len);
        let blob = f.blob(&data);
        objects = objects.set(name, dense(&[len as u64], part("u8", blob)));
        parts.insert(name.to_string(), data);
    }
    (f.finish(&root(objects).sorted().encode()), parts)
}

/// What a read gave: the bytes or the errno, and how long it took.
type Outcome = (Result<Vec<u8>, i32>, Duration);

/// Reads `path` whole in a thread; fails the test after `secs`.
fn read_within(secs: u64, path: PathBuf) -> Outcome {
    let what = format!("read {}", path.display());
    within(secs, &what, move || {
        let t = Instant::now();
        let r = fs::read(&path).map_err(|e| e.raw_os_error().unwrap_or(0));
        (r, t.elapsed())
    })
}

/// Reads `len` bytes of `path` at `offset` in a thread; fails the test
/// after `secs`.
fn pread_within(secs: u64, path: PathBuf, offset: u64, len: usize) -> Outcome {
    let what = format!("read {} at {offset}", path.display());
    within(secs, &what, move || {
        let t = Instant::now();
        let mut buf = vec![0; len];
        let r = fs::File::open(&path)
            .and_then(|f| f.read_exact_at(&mut buf, offset))
            .map(|()| buf)
            .map_err(|e| e.raw_os_error().unwrap_or(0));
        (r, t.elapsed())
    })
}

/// What a reader thread gave; its panic (a read that hung) as the test's.
fn joined<T>(reader: std::thread::JoinHandle<T>) -> T {
    reader
        .join()
        .unwrap_or_else(|e| panic!("{}", common::panic_text(&*e)))
}

/// Asserts that a read gave exactly `want`.
fn assert_read(got: &Outcome, want: &[u8], what: &str) {
    match &got.0 {
        Ok(bytes) => common::assert_same(bytes, want, what),
        Err(e) => panic!("{what}: errno {e} after {:?}", got.1),
    }
}

/// Asserts that a read failed with EIO within [`EIO_BOUND`].
fn assert_eio(got: &Outcome, what: &str) {
    assert_errno_eio(got, what);
    assert_in_bound(got, what);
}

/// Asserts that a read failed with EIO, however long it took.
fn assert_errno_eio(got: &Outcome, what: &str) {
    match &got.0 {
        Ok(bytes) => panic!("{what}: {} bytes read, EIO expected", bytes.len()),
        Err(e) => assert_eq!(*e, libc::EIO, "{what}: errno {e}, EIO expected"),
    }
    eprintln!("{what}: EIO after {:.1} s", got.1.as_secs_f64());
}

/// Asserts that reads of `path` give `want` again within [`QUICK`] once a
/// fault has cleared: a block's failure answers its readers for a second
/// (src/store/blocks.rs), so a read right after one may still fail.
fn assert_served_again(path: PathBuf, want: &[u8], what: &str) {
    let t = Instant::now();
    loop {
        let got = read_within(HUNG, path.clone());
        if got.0.is_ok() || t.elapsed() > Duration::from_secs(QUICK) {
            return assert_read(&got, want, what);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Asserts that a read ended within [`EIO_BOUND`].
fn assert_in_bound(got: &Outcome, what: &str) {
    let bound = Duration::from_secs(EIO_BOUND);
    assert!(
        got.1 < bound,
        "{what}: EIO after {:?}, not within {bound:?}",
        got.1
    );
}

/// Asserts that a read gave either exactly `want` or EIO: never other or
/// fewer bytes.
fn assert_read_or_eio(got: &Outcome, want: &[u8], what: &str) {
    match &got.0 {
        Ok(bytes) => common::assert_same(bytes, want, what),
        Err(_) => assert_eio(got, what),
    }
}

/// Asserts that the mount answers within [`QUICK`] what needs no server:
/// a listing of its root, manifest.json, `a/meta.json`, and the first
/// bytes of each `(file, bytes)` in `read_before`. Tries them all, then
/// names every one that failed or did not answer.
fn assert_answers(m: &Mount, read_before: &[(&str, &[u8])], what: &str) {
    let mut failed = Vec::new();
    let root = m.path().to_path_buf();
    match in_time(move || common::dir_names(&root)) {
        Some(names) if names.len() >= 3 => {}
        other => failed.push(format!("ls of the root: {other:?}")),
    }
    for file in ["manifest.json", "a/meta.json"] {
        let path = m.join(file);
        match in_time(move || fs::read(path).map_err(|e| e.raw_os_error())) {
            Some(Ok(_)) => {}
            other => failed.push(format!("{file}: {:?}", other.map(|r| r.map(drop)))),
        }
    }
    for &(file, want) in read_before {
        let (path, len) = (m.join(file), want.len());
        let read = move || {
            let mut buf = vec![0; len];
            let f = fs::File::open(path)?;
            f.read_exact_at(&mut buf, 0).map(|()| buf)
        };
        match in_time(read) {
            Some(Ok(got)) if got == want => {}
            Some(Ok(_)) => failed.push(format!("{file}: other bytes")),
            other => failed.push(format!("{file}: {:?}", other.map(|r| r.map(drop)))),
        }
    }
    assert!(
        failed.is_empty(),
        "{what}: (None: no answer in {QUICK} s)\n{}",
        failed.join("\n")
    );
}

/// `f()` run in a thread, or `None` when it takes longer than [`QUICK`].
fn in_time<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(Duration::from_secs(QUICK)).ok()
}

#[test]
fn the_proxy_passes_delays_fails_cuts_and_hangs_as_told() {
    use common::http::try_get;
    use std::io::Read;
    let s = Served::new(1, &[("a", 100_000)]);
    let url = s.proxy.url("model.zt");
    let whole = fs::read(&s.file).unwrap();
    assert_eq!(try_get(&url, &[]).unwrap().body, whole);
    s.proxy.next(1, Fault::Status(503));
    let r = try_get(&url, &[]).unwrap();
    assert_eq!((r.status, r.body.is_empty()), (503, false));
    assert_eq!(try_get(&url, &[]).unwrap().status, 200, "one 503 only");
    for reset in [false, true] {
        s.proxy.next(1, Fault::Cut { after: 1000, reset });
        assert!(try_get(&url, &[]).is_err(), "cut with reset {reset}");
    }
    s.proxy.set(Fault::Delay(Duration::from_millis(300)));
    let t = Instant::now();
    assert_eq!(try_get(&url, &[]).unwrap().body, whole);
    assert!(t.elapsed() >= Duration::from_millis(300));
    // A hung request has no answer until the fault changes, then its
    // connection closes.
    s.proxy.set(Fault::Hang);
    let mut c = std::net::TcpStream::connect(("127.0.0.1", s.proxy.port())).unwrap();
    std::io::Write::write_all(&mut c, b"GET /model.zt HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    c.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(c.read(&mut [0; 16]).is_err(), "no answer while hung");
    s.proxy.set(Fault::Pass);
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(c.read(&mut [0; 16]).unwrap(), 0, "closed");
    assert_eq!(s.proxy.requests(), 7);
}

#[test]
fn answers_delayed_under_the_timeout_are_read_right() {
    let s = Served::new(2, &[("b", 2 * MIB + 1234), ("a", 3 * MIB)]);
    let delay = Duration::from_millis(1500);
    s.proxy.set(Fault::Delay(delay));
    let m = s.mount();
    // a first: reading it fetches nothing of b, before it in the file.
    for o in ["a", "b"] {
        let got = read_within(HUNG, m.join(format!("{o}/data")));
        assert_read(&got, s.want(o), o);
        assert!(got.1 >= delay, "{o}: read in {:?}, not delayed", got.1);
    }
}

#[test]
fn a_few_5xx_answers_are_retried_and_read_right() {
    let s = Served::new(3, &[("b", 2 * MIB + 1234), ("a", 3 * MIB)]);
    let m = s.mount();
    // As many failures as the client retries, on one block's request
    // (block 1: the open fetched block 0, the model's first bytes).
    let before = s.proxy.requests();
    s.proxy.next(3, Fault::Status(503));
    let got = pread_within(HUNG, m.join("b/data"), MIB as u64, 4096);
    assert_read(&got, &s.want("b")[MIB..MIB + 4096], "b after three 503");
    let made = s.proxy.requests() - before;
    assert!(made >= 4, "{made} requests: three 503, then the range");
    s.proxy.next(2, Fault::Status(500));
    let got = read_within(HUNG, m.join("a/data"));
    assert_read(&got, s.want("a"), "a after two 500");
}

#[test]
fn persistent_5xx_fail_reads_with_eio_in_bounded_time_and_the_mount_keeps_answering() {
    let s = Served::new(4, &[("b", 2 * MIB + 1234), ("a", 3 * MIB)]);
    let m = s.mount();
    assert_read(&read_within(HUNG, m.join("a/data")), s.want("a"), "a");
    s.proxy.set(Fault::Status(503));
    assert_eio(&read_within(HUNG, m.join("b/data")), "b under 503");
    assert_answers(&m, &[("a/data", s.want("a"))], "under 503");
    s.proxy.set(Fault::Pass);
    assert_served_again(m.join("b/data"), s.want("b"), "b once the server answers");
}

#[test]
fn a_body_cut_short_once_is_retried_and_read_right() {
    // In order (FIN: a short body) and with a reset (RST).
    for (seed, reset) in [(5, false), (6, true)] {
        let s = Served::new(seed, &[("b", 2 * MIB + 1234), ("a", 3 * MIB)]);
        let m = s.mount();
        s.proxy.next(
            1,
            Fault::Cut {
                after: 300_000,
                reset,
            },
        );
        let before = s.proxy.requests();
        let got = read_within(HUNG, m.join("b/data"));
        assert_read(&got, s.want("b"), &format!("b, cut once (reset {reset})"));
        assert!(
            s.proxy.requests() >= before + 2,
            "the cut one and its retry"
        );
    }
}

#[test]
fn a_body_cut_short_every_time_fails_with_eio_never_short_bytes() {
    let s = Served::new(7, &[("b", 2 * MIB + 1234), ("a", 3 * MIB)]);
    let m = s.mount();
    // The client resumes a cut body where it stopped, on each of its
    // retries: 1000 bytes a try never make a block.
    s.proxy.set(Fault::Cut {
        after: 1000,
        reset: false,
    });
    let got = read_within(HUNG, m.join("a/data"));
    assert_read_or_eio(&got, s.want("a"), "a, every answer cut");
    assert!(got.0.is_err(), "a, every answer cut: read");
    let got = pread_within(HUNG, m.join("b/data"), MIB as u64 + 5, 100_000);
    let want = &s.want("b")[MIB + 5..MIB + 5 + 100_000];
    assert_read_or_eio(&got, want, "b at 1 MiB, every answer cut");
    assert!(got.0.is_err(), "b at 1 MiB, every answer cut: read");
    s.proxy.set(Fault::Pass);
    assert_served_again(m.join("b/data"), s.want("b"), "b");
}

#[test]
fn a_hanging_server_fails_a_read_with_eio_in_bounded_time_and_the_mount_keeps_answering() {
    let s = Served::new(7, &[("b", 2 * MIB + 1234), ("a", 3 * MIB)]);
    let m = s.mount();
    s.proxy.set(Fault::Hang);
    let path = m.join("b/data");
    let reader = std::thread::spawn(move || read_within(HUNG, path));
    std::thread::sleep(Duration::from_secs(1));
    assert_answers(&m, &[], "while a read hangs");
    let got = joined(reader);
    assert_errno_eio(&got, "b, server hung");
    eprintln!(
        "b, server hung: EIO after {:?}, {} requests",
        got.1,
        s.proxy.requests()
    );
    // Unmounting needs no server, and the daemon goes.
    let pid = m.daemon();
    let mnt = m.path().to_path_buf();
    let out = within(QUICK, "ztfs unmount", move || {
        common::ztfs(&[std::ffi::OsStr::new("unmount"), mnt.as_os_str()])
    });
    assert!(out.status.success(), "{out:?}");
    let gone = common::wait_until(Duration::from_secs(QUICK), || !common::is_alive(pid));
    assert!(gone, "the daemon is still there {QUICK} s after unmount");
    assert_in_bound(&got, "b, server hung");
}

#[test]
fn readers_hung_on_every_job_thread_leave_virtual_files_and_read_data_answering() {
    let s = Served::new(8, &[("b", 4 * MIB), ("a", 4 * MIB)]);
    let m = s.mount();
    assert_read(&read_within(HUNG, m.join("a/data")), s.want("a"), "a");
    s.proxy.set(Fault::Hang);
    // More reads than the daemon has job threads (src/tree/jobs.rs: 4),
    // as a loader reading tensors in parallel: blocks 1 to 3 (the open
    // fetched block 0).
    let readers: Vec<_> = (0..6)
        .map(|i| {
            let (path, at) = (m.join("b/data"), (1 + i % 3) * MIB as u64 + (i / 3) * 65536);
            std::thread::spawn(move || pread_within(HUNG, path, at, 4096))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    assert_answers(&m, &[("a/data", s.want("a"))], "while six reads hang");
    let got: Vec<Outcome> = readers.into_iter().map(joined).collect();
    for g in &got {
        assert_errno_eio(g, "b, server hung");
    }
    for g in &got {
        assert_in_bound(g, "b, server hung");
    }
}

#[test]
fn an_object_replaced_under_the_mount_fails_with_eio_and_never_mixes_bytes() {
    let s = Served::new(9, &[("b", 2 * MIB + 1234), ("a", 3 * MIB)]);
    let m = s.mount();
    let got = pread_within(HUNG, m.join("a/data"), 0, MIB);
    assert_read(&got, &s.want("a")[..MIB], "a's first MiB");
    s.replace(10);
    // What was read before may be served again, whole; nothing new is.
    let got = read_within(HUNG, m.join("a/data"));
    assert_read_or_eio(&got, s.want("a"), "a after the change");
    assert_eio(&read_within(HUNG, m.join("b/data")), "b after the change");
    let got = pread_within(HUNG, m.join("b/data"), MIB as u64, 4096);
    assert_eio(&got, "b at 1 MiB after the change");
    assert!(
        m.log().contains("changed since it was opened"),
        "{}",
        m.log()
    );
    // The mount still answers what it holds.
    assert_answers(&m, &[], "after the change");
}

#[test]
fn nginx_killed_mid_read_fails_the_reader_with_eio_in_bounded_time_and_a_restart_serves_again() {
    // Longer than the read-ahead window (128 MiB; a part read from its
    // start is fetched that far at once), so that the reader meets bytes
    // not yet fetched when nginx dies.
    let mut s = Served::new(11, &[("a", 200 * MIB)]);
    // Straight to nginx: its death is the fault.
    let m = Mount::new(Path::new(&s.nginx.url("model.zt")), &[]);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (path, want, seen) = (m.join("a/data"), s.want("a").to_vec(), done.clone());
    // A paced sequential reader (1 MiB per 20 ms) checking every chunk.
    let reader = std::thread::spawn(move || {
        within(HUNG, "the sequential reader", move || {
            let f = fs::File::open(&path).expect("open a/data");
            let mut buf = vec![0; MIB];
            for (i, chunk) in want.chunks(MIB).enumerate() {
                let at = (i * MIB) as u64;
                if let Err(e) = f.read_exact_at(&mut buf[..chunk.len()], at) {
                    return (Err(e.raw_os_error().unwrap_or(0)), at);
                }
                common::assert_same(&buf[..chunk.len()], chunk, &format!("a at {at}"));
                seen.store(at + chunk.len() as u64, std::sync::atomic::Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
            }
            (Ok(Vec::new()), want.len() as u64)
        })
    });
    let started = common::wait_until(Duration::from_secs(30), || {
        done.load(std::sync::atomic::Ordering::SeqCst) >= 4 * MIB as u64
    });
    assert!(started, "the reader did not get to 4 MiB");
    s.nginx.kill();
    let killed = Instant::now();
    let (r, at) = joined(reader);
    assert_eio(&(r, killed.elapsed()), &format!("a at {at}, nginx killed"));
    s.nginx.start_again();
    assert_served_again(m.join("a/data"), s.want("a"), "a again");
}

/// A server's error body is read only in part and shown as at most one
/// line, its control characters escaped: a 500 with megabytes of lines
/// full of terminal escapes gives `ztfs check` a short message with no
/// ESC byte and no line break from the body.
#[test]
fn a_hostile_error_body_is_cut_to_one_escaped_line() {
    let s = Served::new(5, &[("a", 4096)]);
    s.proxy.set(Fault::Noisy(500));
    let url = s.proxy.url("model.zt");
    let out = common::ztfs(&[OsStr::new("check"), OsStr::new(&url)]);
    assert!(!out.status.success());
    let err = &out.stderr;
    let text = String::from_utf8_lossy(err);
    assert!(
        !err.contains(&0x1b),
        "an ESC byte reached the terminal: {text:?}"
    );
    assert!(err.len() < 2048, "{} bytes of message", err.len());
    assert!(text.contains("500"), "{text}");
    assert_eq!(text.trim_end().lines().count(), 1, "{text}");
}

/// An object whose server names no version (no `ETag`, no
/// `Last-Modified`) cannot be pinned: a mount of it is refused with a
/// message naming the missing validators and the flag, and with
/// `--trust-unversioned` it mounts and reads.
#[test]
fn an_unversioned_object_is_refused_unless_trusted() {
    let s = Served::new(6, &[("a", 4096)]);
    s.proxy.set(Fault::Unversioned);
    let url = s.proxy.url("model.zt");
    let m = Mount::unmounted();
    let out = common::ztfs(&[OsStr::new("mount"), OsStr::new(&url), m.path().as_os_str()]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("no ETag and no Last-Modified") && text.contains("--trust-unversioned"),
        "{text}"
    );
    let m = Mount::new(Path::new(&url), &["--trust-unversioned"]);
    assert_read(&read_within(HUNG, m.join("a/data")), s.want("a"), "a");
}
