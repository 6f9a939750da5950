//! Faults under a real mount: a daemon killed or signalled under readers, a
//! backing file truncated in place or replaced by rename, a part whose
//! first open is long work, a large view read concurrently with the
//! daemon's memory sampled, FIFOs and devices where files are expected,
//! and a shard of the right size but the wrong content.
//!
//! Each test states one required property. Some fail against today's
//! daemon on purpose; the failure message says what is wrong. Nothing may
//! hang a test: every call that could block on a hung FUSE request or a
//! FIFO runs under a bound and is killed (or its mount torn down) when it
//! exceeds it, and [`procs::Guarded`] ends a daemon left busy after its
//! mount is gone. The model files are built in code (`tests/faults/
//! models.rs`, with the corpus writer) into each test's temporary folder.

#[allow(dead_code)]
#[path = "corpus/builder.rs"]
mod builder;
mod common;
#[path = "faults/hostile.rs"]
mod hostile;
#[path = "faults/models.rs"]
mod models;
#[path = "faults/procs.rs"]
mod procs;
#[path = "faults/reads.rs"]
mod reads;

use std::ffi::OsString;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{cut, is_alive, is_mounted, kill, part_file, wait_until, within, Mount};
use hostile::{hostile_cases, judge_hostile, Cmd, MountPoints, Reaper};
use models::{FOREIGN, LOCAL, SHARD};
use procs::{is_gone_errno, write_file, Children, Guarded, Readers, Running};
use reads::{cut_reader, pread_checked, read_loop, view_reader, End, Style};

/// Seconds within which anything that must not hang has to answer.
const ANSWER_S: u64 = 10;

// ---------------------------------------------------------------------------
// 1. SIGKILL of the daemon under readers

/// A daemon killed with SIGKILL under readers: every reader gets an error
/// (ENOTCONN, EIO or ECONNABORTED), none hangs or sees a wrong byte;
/// `ztfs unmount` cleans the dead mount up; a new mount at the same path
/// serves the right bytes. Readers reopen the file every 8 reads, so that
/// they reach the daemon even where the page cache holds their pages.
#[test]
fn sigkill_fails_readers_and_the_mount_point_is_reusable() {
    let dir = tempfile::tempdir().unwrap();
    let model = models::raw_model(4 << 20, 0xFA17_0001);
    let file = write_file(dir.path(), "model.zt", &model.bytes);
    let data = Arc::new(model.data);
    for flags in [&[][..], &["--direct-io"][..]] {
        let g = Guarded::new(&file, flags);
        let path = part_file(&g.m.join("blob"), "data", false);
        let mut readers = Readers::new();
        for i in 0..4u64 {
            let (path, data) = (path.clone(), data.clone());
            readers.spawn(format!("reader {i}"), move |stop, n| {
                read_loop(&path, &data, Style::Reopen, i, 256 << 10, &stop, &n)
            });
        }
        assert!(readers.wait_reads(16, ANSWER_S), "{flags:?}: no reads");
        kill(g.pid, libc::SIGKILL);
        let ended = readers
            .join_within(ANSWER_S)
            .unwrap_or_else(|e| panic!("{flags:?}, after SIGKILL: {e}"));
        for (name, end) in ended {
            match end {
                Ok(End::Failed(e)) if is_gone_errno(&e) => {}
                other => panic!("{flags:?}: {name} after SIGKILL: {other:?}"),
            }
        }
        assert!(
            wait_until(Duration::from_secs(ANSWER_S), || !is_alive(g.pid)),
            "the killed daemon is gone"
        );
        let args = ["unmount".as_ref(), g.m.path().as_os_str()];
        let out = procs::ztfs_within(ANSWER_S, &args).expect("ztfs unmount answers");
        assert_eq!(out.code(), 0, "ztfs unmount of a dead mount: {out:?}");
        assert!(!is_mounted(g.m.path()), "still mounted after ztfs unmount");
        let again = g.m.mount(&file, flags);
        assert!(again.status.success(), "remount: {again:?}");
        let got = within(ANSWER_S, "read after the remount", move || fs::read(path));
        common::assert_same(&got.expect("read after the remount"), &data, "remount");
    }
}

// ---------------------------------------------------------------------------
// 2. Truncation in place at unaligned offsets

/// Bytes of the raw part the truncation tests read.
const CUT_PART_LEN: usize = 8 << 20;

/// After the backing file is cut in place at an offset that is not a
/// multiple of the page size, a read of the part from the cut on (the rest
/// of the cut's page, one byte, or a range straddling the cut) fails with
/// EIO: the kernel zero-fills the mapped page past the new end, and those
/// zeros are not the part's bytes. The file is opened before the cut (an
/// open after it may fail, which is also fine) and the mount uses
/// `--direct-io`: each pread then reaches the daemon, rather than pages the
/// kernel cached before the cut (`FOPEN_KEEP_CACHE`), which rightly keep
/// their original bytes.
#[test]
fn read_past_an_unaligned_cut_is_eio_not_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let model = models::raw_model(1 << 20, 0xFA17_0002);
    let file = write_file(dir.path(), "model.zt", &model.bytes);
    let g = Guarded::new(&file, &["--direct-io"]);
    let f = Arc::new(File::open(part_file(&g.m.join("blob"), "data", false)).unwrap());
    let data = Arc::new(model.data);
    let at = 300_001u64;
    let end = model.blob.offset + at;
    assert_ne!(end % 4096, 0, "an unaligned cut");
    cut(&file, end);
    let page_rest = (4096 - end % 4096) as usize;
    let ranges = [(at, 1), (at, page_rest), (at - 100, 200), (at, 65536)];
    for (offset, size) in ranges {
        let (f, data) = (f.clone(), data.clone());
        let what = format!("pread({offset}, {size}) after the cut at {at}");
        let r = within(ANSWER_S, &what, move || {
            pread_checked(&f, &data, offset, size)
        });
        match r {
            Ok(Err(e)) if e.raw_os_error() == Some(libc::EIO) => {}
            Ok(Err(e)) => panic!("{what}: {e}, expected EIO"),
            Ok(Ok(n)) => panic!("{what}: {n} bytes read past the new end"),
            Err(wrong) => panic!("{wrong} (after the cut at {at}; expected EIO)"),
        }
    }
    // Bytes wholly before the cut's page are still there.
    let r = pread_checked(&f, &data, 0, 4096).unwrap_or_else(|w| panic!("{w}"));
    assert_eq!(r.expect("a read before the cut"), 4096);
}

/// Eight threads pread random ranges of a raw part while the backing file
/// is cut in place four times, at offsets that are not page multiples:
/// every read either returns exactly the original bytes or fails with EIO
/// (the part's bytes contain no zero, so a zero-filled page is caught), and
/// no read hangs. `--direct-io`, as above, so every read reaches the daemon.
#[test]
fn unaligned_truncation_under_concurrent_readers_serves_no_wrong_byte() {
    let dir = tempfile::tempdir().unwrap();
    let model = models::raw_model(CUT_PART_LEN, 0xFA17_0003);
    let file = write_file(dir.path(), "model.zt", &model.bytes);
    let g = Guarded::new(&file, &["--direct-io"]);
    let path = part_file(&g.m.join("blob"), "data", false);
    let cuts = [7_000_001u64, 5_000_003, 3_000_005, 1_000_007];
    let data = Arc::new(model.data);
    let mut readers = Readers::new();
    for i in 0..8u64 {
        let f = File::open(&path).expect("open before the cuts");
        let data = data.clone();
        readers.spawn(format!("reader {i}"), move |stop, n| {
            cut_reader(&f, &data, &cuts, i, &stop, &n)
        });
    }
    assert!(readers.wait_reads(64, ANSWER_S), "no reads before the cuts");
    for at in cuts {
        assert_ne!((model.blob.offset + at) % 4096, 0, "an unaligned cut");
        std::thread::sleep(Duration::from_millis(300));
        cut(&file, model.blob.offset + at);
    }
    std::thread::sleep(Duration::from_millis(300));
    readers.stop.store(true, SeqCst);
    let ended = readers
        .join_within(ANSWER_S)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut wrong = Vec::new();
    let (mut ok, mut eio) = (0, 0);
    for (name, r) in ended {
        match r {
            Ok((o, e)) => (ok, eio) = (ok + o, eio + e),
            Err(w) => wrong.push(format!("{name}: {w}")),
        }
    }
    assert!(
        wrong.is_empty(),
        "wrong bytes served (other readers: {ok} right reads, {eio} EIO):\n{}",
        wrong.join("\n")
    );
}

// ---------------------------------------------------------------------------
// 3. Replacement by rename

/// The root and its shard each replaced by rename while readers run: the
/// mount keeps serving the bytes it mounted (the old inodes stay open), to
/// readers in flight and to new opens alike, and manifest.json is
/// unchanged. `--direct-io`, so every read reaches the daemon.
#[test]
fn replacement_by_rename_keeps_serving_the_original_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let fam = models::family(0xFA17_0004);
    let root = write_file(dir.path(), "model.zt", &fam.root);
    write_file(dir.path(), "model-00001.zt", &fam.shard);
    let manifest = common::ztfs_ok(&["manifest".as_ref(), root.as_os_str()]);
    let g = Guarded::new(&root, &["--direct-io"]);
    let local = part_file(&g.m.join(LOCAL), "data", false);
    let foreign = part_file(&g.m.join(FOREIGN), "data", false);
    let mut readers = Readers::new();
    for (i, (path, want)) in [(&local, &fam.local), (&foreign, &fam.foreign)]
        .into_iter()
        .cycle()
        .take(4)
        .enumerate()
    {
        let (path, want) = (path.clone(), want.clone());
        let style = [Style::Hold, Style::Reopen][i % 2];
        readers.spawn(format!("reader {i}"), move |stop, n| {
            read_loop(&path, &want, style, i as u64, 512, &stop, &n)
        });
    }
    assert!(readers.wait_reads(16, ANSWER_S), "no reads");
    let other = models::raw_model(64 << 10, 0xFA17_0005);
    fs::rename(write_file(dir.path(), "new.zt", &other.bytes), &root).unwrap();
    fs::rename(
        write_file(dir.path(), "new-shard.zt", &fam.impostor),
        dir.path().join("model-00001.zt"),
    )
    .unwrap();
    let before = readers.reads.load(SeqCst);
    assert!(readers.wait_reads(before + 16, ANSWER_S), "reads after");
    readers.stop.store(true, SeqCst);
    for (name, end) in readers
        .join_within(ANSWER_S)
        .unwrap_or_else(|e| panic!("{e}"))
    {
        assert!(matches!(end, Ok(End::Stopped)), "{name}: {end:?}");
    }
    let mf = g.m.join("manifest.json");
    let got = within(ANSWER_S, "manifest.json", move || fs::read(mf));
    common::assert_same(&got.unwrap(), &manifest, "manifest.json after the rename");
    for (path, want) in [(local, fam.local), (foreign, fam.foreign)] {
        let what = format!("{} after the rename", path.display());
        let got = within(ANSWER_S, &what.clone(), move || fs::read(path));
        common::assert_same(&got.expect("a new open and read"), &want, &what);
    }
}

// ---------------------------------------------------------------------------
// 4. Stop signals with readers in flight

/// SIGTERM, SIGINT and SIGHUP, each with readers in flight: the mount goes
/// away (lazily) within the bound; readers holding the file open finish
/// with the right bytes or fail cleanly (EIO, ENOTCONN), readers that
/// reopen it also may find it gone (ENOENT: the mount point is a plain
/// directory again); once they close, the daemon exits.
#[test]
fn stop_signals_unmount_lazily_and_the_daemon_exits() {
    let dir = tempfile::tempdir().unwrap();
    let model = models::raw_model(4 << 20, 0xFA17_0006);
    let file = write_file(dir.path(), "model.zt", &model.bytes);
    let data = Arc::new(model.data);
    let cases = [
        (libc::SIGTERM, &[][..]),
        (libc::SIGINT, &["--direct-io"][..]),
        (libc::SIGHUP, &["--direct-io"][..]),
    ];
    for (sig, flags) in cases {
        let g = Guarded::new(&file, flags);
        let path = part_file(&g.m.join("blob"), "data", false);
        let mut readers = Readers::new();
        for i in 0..4u64 {
            let (path, data) = (path.clone(), data.clone());
            let style = [Style::Hold, Style::Reopen][i as usize % 2];
            readers.spawn(format!("{style:?} reader {i}"), move |stop, n| {
                (style, read_loop(&path, &data, style, i, 1 << 20, &stop, &n))
            });
        }
        assert!(readers.wait_reads(16, ANSWER_S), "signal {sig}: no reads");
        kill(g.pid, sig);
        let gone = wait_until(Duration::from_secs(ANSWER_S), || !is_mounted(g.m.path()));
        assert!(gone, "signal {sig}: still mounted after {ANSWER_S} s");
        std::thread::sleep(Duration::from_millis(200));
        readers.stop.store(true, SeqCst);
        let ended = readers
            .join_within(ANSWER_S)
            .unwrap_or_else(|e| panic!("signal {sig}: {e}"));
        for (name, (style, end)) in ended {
            let clean = match &end {
                Ok(End::Stopped) => true,
                Ok(End::Failed(e)) if is_gone_errno(e) => true,
                Ok(End::Failed(e)) => style == Style::Reopen && e.kind() == io::ErrorKind::NotFound,
                Err(_) => false,
            };
            assert!(clean, "signal {sig}: {name}: {end:?}");
        }
        assert!(
            wait_until(Duration::from_secs(ANSWER_S), || !is_alive(g.pid)),
            "signal {sig}: the daemon {} still runs with its readers gone",
            g.pid
        );
    }
}

// ---------------------------------------------------------------------------
// 5. A slow first open

/// Frames of 16 MiB in the slow part: 512 GiB decoded, about 19 MB stored.
/// Checking its bool content over the whole part takes hours in a debug
/// build and minutes in a release one.
const SLOW_FRAMES: u32 = 32 << 10;
/// Concurrent readers of the slow part: more than the daemon's 4 workers.
const SLOW_READERS: usize = 6;
/// CPU the daemon may use in [`IDLE_WINDOW`] once nobody waits for it, in
/// clock ticks per second of that window (a tenth of a core).
const IDLE_TICKS_PER_S: u64 = 10;
/// How long the daemon's CPU time is watched for growth.
const IDLE_WINDOW: Duration = Duration::from_secs(2);

/// While more readers than the daemon has workers are opening and reading
/// a part whose first open is long work (the bool content rule over 512 GiB
/// of decoded zeros), `ls`, another object's meta.json and another part
/// still answer within the bound; when those readers are killed (SIGKILL
/// and SIGINT), the work they started stops: the daemon's CPU time stops
/// growing within the bound. A reader that gives up must not leave work
/// running.
#[test]
fn slow_part_open_leaves_other_files_answering_and_stops_when_abandoned() {
    slow_part_open(&[]);
}

/// The same under `--verify`, where the first open also decodes the whole
/// part to check it.
#[test]
fn slow_part_open_under_verify_leaves_other_files_answering_and_stops_when_abandoned() {
    slow_part_open(&["--verify"]);
}

fn slow_part_open(flags: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let file = write_file(
        dir.path(),
        "model.zt",
        &models::slow_bool_model(SLOW_FRAMES),
    );
    // Declared first, dropped last: the mount's guard ends the daemon,
    // which frees readers stuck in requests it was working on.
    let mut cats = Children(Vec::new());
    let g = Guarded::new(&file, flags);
    let slow = g.m.join("slow").join("data");
    for _ in 0..SLOW_READERS {
        let mut cmd = Command::new("cat");
        cmd.arg(&slow).stdout(Stdio::null()).stderr(Stdio::null());
        // A test run started as a shell's background job (`cargo test &`)
        // inherits SIGINT ignored (POSIX, for asynchronous commands of a
        // non-interactive shell), and a reader ignoring it would not die
        // of the SIGINT sent below: give the readers its default action.
        // SAFETY: signal(2) is async-signal-safe, as pre_exec requires.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        cats.0.push(cmd.spawn().expect("start cat"));
    }
    // Give the readers time to reach the daemon and set it to work (a
    // daemon that fails them at once, or answers them fast, is fine too).
    let t0 = procs::cpu_ticks(g.pid).expect("the daemon's CPU time");
    wait_until(Duration::from_secs(3), || {
        procs::cpu_ticks(g.pid).is_some_and(|t| t > t0 + procs::ticks_per_second() / 2)
    });
    let mut failures = other_files_answer(&g.m);
    cats.signal_all(&[libc::SIGKILL, libc::SIGINT]);
    if !cats.all_exit_within(ANSWER_S) {
        failures.push("the slow readers do not die on SIGKILL/SIGINT".into());
    }
    if let Err(e) = cpu_goes_idle(g.pid) {
        failures.push(e);
    }
    assert!(failures.is_empty(), "{flags:?}:\n{}", failures.join("\n"));
}

/// `ls MNT`, `cat MNT/small/meta.json` and a read of `small/data`, all at
/// once, each within [`ANSWER_S`]; what failed, by name.
fn other_files_answer(m: &Mount) -> Vec<String> {
    let small = m.join("small");
    let (meta, data, root) = (
        small.join("meta.json"),
        small.join("data"),
        m.path().to_owned(),
    );
    let checks: Vec<(&str, std::sync::mpsc::Receiver<Result<(), String>>)> = vec![
        (
            "ls MNT",
            spawn_check(move || {
                let names: Vec<_> = fs::read_dir(&root)
                    .map_err(|e| e.to_string())?
                    .filter_map(|e| e.ok().map(|e| e.file_name()))
                    .collect();
                let has = |n: &str| names.iter().any(|x| x == n);
                (has("slow") && has("small"))
                    .then_some(())
                    .ok_or(format!("{names:?}"))
            }),
        ),
        (
            "cat small/meta.json",
            spawn_check(move || {
                let text = fs::read_to_string(&meta).map_err(|e| e.to_string())?;
                common::Json::parse(&text)["name"]
                    .text()
                    .eq("small")
                    .then_some(())
                    .ok_or(text)
            }),
        ),
        (
            "read small/data",
            spawn_check(move || {
                let got = fs::read(&data).map_err(|e| e.to_string())?;
                (got == models::f32_ramp(256))
                    .then_some(())
                    .ok_or("wrong bytes".into())
            }),
        ),
    ];
    let deadline = Instant::now() + Duration::from_secs(ANSWER_S);
    checks
        .into_iter()
        .filter_map(|(what, rx)| {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(format!("{what}: {e}")),
                Err(_) => Some(format!("{what}: no answer in {ANSWER_S} s")),
            }
        })
        .collect()
}

/// Runs `f` in a thread that may stay blocked until the mount goes away.
fn spawn_check(
    f: impl FnOnce() -> Result<(), String> + Send + 'static,
) -> std::sync::mpsc::Receiver<Result<(), String>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx
}

/// Waits up to [`ANSWER_S`] for a window of [`IDLE_WINDOW`] in which the
/// daemon uses at most [`IDLE_TICKS_PER_S`].
fn cpu_goes_idle(pid: i32) -> Result<(), String> {
    let limit = IDLE_TICKS_PER_S * IDLE_WINDOW.as_secs();
    let deadline = Instant::now() + Duration::from_secs(ANSWER_S);
    let mut last = 0;
    while Instant::now() < deadline {
        let t0 = procs::cpu_ticks(pid).ok_or("the daemon is gone")?;
        std::thread::sleep(IDLE_WINDOW);
        let t1 = procs::cpu_ticks(pid).ok_or("the daemon is gone")?;
        last = t1 - t0;
        if last <= limit {
            return Ok(());
        }
    }
    let hz = procs::ticks_per_second() as f64;
    Err(format!(
        "the daemon still works {ANSWER_S} s after its readers were killed: {:.2} s of CPU in the last {} s",
        last as f64 / hz,
        IDLE_WINDOW.as_secs()
    ))
}

// ---------------------------------------------------------------------------
// 6. A large view read concurrently, with the daemon's memory sampled

/// The decoded-frame cache the view test mounts with, in MiB.
const VIEW_CACHE_MIB: u64 = 64;
/// What the daemon may hold beyond its cache, in MiB: the tree, the parts
/// of one sparse object (4.3 MB here), buffers of the requests in flight
/// and the allocator's slack. A small constant, against a 4 GiB view.
const RSS_SLACK_MIB: u64 = 200;

/// A sparse CSR object of 4.3 MB whose dense view is just under 4 GiB,
/// mounted with `--cache-mib 64`, read by 4 threads at once (random ranges
/// all over the view, and a sequential pass over its first 256 MiB): every
/// byte read is the view's (values where placed, zeros elsewhere), and the
/// daemon's RSS, sampled every 20 ms, never exceeds the cache plus
/// [`RSS_SLACK_MIB`]. A daemon that goes past that is killed at once by the
/// sampler (the test has failed; a view rendered whole would take GiBs).
#[test]
fn concurrent_readers_of_a_large_view_stay_within_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(models::SparseModel::new(65536, 16383, 8));
    let file = write_file(dir.path(), "model.zt", &model.bytes);
    let g = Guarded::new(&file, &["--cache-mib", &VIEW_CACHE_MIB.to_string()]);
    let bound_kib = (VIEW_CACHE_MIB + RSS_SLACK_MIB) << 10;
    let sampler = procs::RssSampler::start(g.pid, bound_kib);
    let view = g.m.join("w").join("dense");
    let size = fs::metadata(&view).expect("stat the view").len();
    assert_eq!(size, model.view_len(), "the view's size");
    let mut readers = Readers::new();
    for i in 0..4u64 {
        let (view, model) = (view.clone(), model.clone());
        readers.spawn(format!("reader {i}"), move |_, n| {
            view_reader(&view, &model, i, &n)
        });
    }
    let ended = readers.join_within(120);
    let (max_kib, samples, killed) = sampler.stop();
    assert!(
        !killed && max_kib <= bound_kib,
        "the daemon's RSS reached {} MiB, above {VIEW_CACHE_MIB} + {RSS_SLACK_MIB} MiB{}",
        max_kib >> 10,
        if killed {
            " (killed by the sampler)"
        } else {
            ""
        }
    );
    assert!(samples >= 5, "only {samples} RSS samples");
    for (name, r) in ended.unwrap_or_else(|e| panic!("{e}")) {
        r.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

// ---------------------------------------------------------------------------
// 7. FIFOs and devices where files are expected

/// A FIFO or a device where a model or a shard is expected (the shard's
/// positional name a FIFO, `--shard NAME=FIFO`, a symlink to a FIFO, the
/// root a FIFO; symlinks to /dev/zero and /dev/null as the root or a
/// shard): `ztfs check`, `check --verify` and `mount` each answer within
/// the bound. A hostile root is an error (exit 1 or 2, naming the file); a
/// hostile shard is unavailable, as a missing one is: `check` names it,
/// `check --verify` exits 1, and a mount, if it is made, serves the root's
/// own part and fails the shard's with EIO. All commands run at once, so a
/// hang costs the bound once.
#[test]
fn fifos_and_devices_in_place_of_files_are_errors_not_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let fam = models::family(0xFA17_0007);
    let fifo = dir.path().join("pipe");
    procs::mkfifo(&fifo);
    let (cases, fifos) = hostile_cases(dir.path(), &fam.root, &fifo);
    let _reaper = Reaper(fifos);
    let mut mounts = MountPoints(Vec::new());
    let mut runs = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        for (cmd, head) in [
            (Cmd::Check, &["check"][..]),
            (Cmd::Verify, &["check", "--verify"]),
        ] {
            let mut args: Vec<OsString> = head.iter().map(OsString::from).collect();
            args.extend(c.args.iter().cloned());
            args.push(c.root.clone().into());
            runs.push((i, cmd, Running::ztfs(&args)));
        }
        let m = Mount::unmounted();
        let log = dir.path().join(format!("daemon-{i}.log"));
        let mut args: Vec<OsString> = vec!["mount".into(), c.root.clone().into()];
        args.extend([m.path().into(), "--log-file".into(), log.into()]);
        args.extend(c.args.iter().cloned());
        runs.push((i, Cmd::Mount, Running::ztfs(&args)));
        mounts.0.push(m);
    }
    let deadline = Instant::now() + Duration::from_secs(ANSWER_S);
    let mut failures = Vec::new();
    for (i, cmd, run) in runs {
        let what = run.what().to_string();
        let verdict = match run.finish_by(deadline) {
            Err(hang) => Err(hang),
            Ok(ran) => judge_hostile(&cases[i], cmd, &ran, &mounts.0[i])
                .map_err(|e| format!("{what}: {e}")),
        };
        if let Err(e) = verdict {
            failures.push(format!("{}: {e}", cases[i].what));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------
// 8. A shard of the right size and the wrong content

/// A family folder below `dir`: the root, and at the positional place of
/// its shard `shard`, if any.
fn family_folder(dir: &Path, name: &str, root: &[u8], shard: Option<&[u8]>) -> PathBuf {
    let d = dir.join(name);
    fs::create_dir(&d).unwrap();
    if let Some(bytes) = shard {
        write_file(&d, &format!("model-{SHARD}.zt"), bytes);
    }
    write_file(&d, "model.zt", root)
}

/// The way a shard reaches the reader: positionally (no arguments) or
/// through `--shard`.
fn placements(
    dir: &Path,
    fam: &models::Family,
    shard: &[u8],
) -> Vec<(&'static str, PathBuf, Vec<String>)> {
    let positional = family_folder(dir, "positional", &fam.root, Some(shard));
    let overridden = family_folder(dir, "override", &fam.root, None);
    let elsewhere = write_file(dir, "elsewhere.zt", shard);
    let arg = format!("{SHARD}={}", elsewhere.display());
    vec![
        ("positional", positional, vec![]),
        ("--shard", overridden, vec!["--shard".into(), arg]),
    ]
}

/// A shard of exactly the declared size that is a valid container but not
/// the declared file (its whole-file digest differs; so does the digest of
/// the part read from it), found positionally or named by `--shard`: the
/// mount does not serve its bytes (the part fails with EIO, or the mount
/// is refused naming the shard), and `ztfs cat` of the part fails. The
/// true shard in the same places is served (the control).
#[test]
fn shard_with_the_wrong_content_is_not_served() {
    let fam = models::family(0xFA17_0008);
    let control = tempfile::tempdir().unwrap();
    for (how, root, args) in placements(control.path(), &fam, &fam.shard) {
        let flags: Vec<&str> = args.iter().map(String::as_str).collect();
        let g = Guarded::new(&root, &flags);
        let got = fs::read(g.m.join(FOREIGN).join("data")).expect("the true shard is served");
        common::assert_same(&got, &fam.foreign, &format!("{how}: the true shard"));
    }
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (how, root, args) in placements(dir.path(), &fam, &fam.impostor) {
        let mut cat: Vec<OsString> = vec!["cat".into()];
        cat.extend(args.iter().map(OsString::from));
        cat.extend([root.clone().into(), FOREIGN.into(), "data".into()]);
        match procs::ztfs_within(ANSWER_S, &cat) {
            Ok(ran) if ran.code() == 0 => {
                let same = ran.stdout == fam.impostor_foreign;
                failures.push(format!(
                    "{how}: ztfs cat exits 0 with {} bytes{}",
                    ran.stdout.len(),
                    if same { ", the wrong shard's" } else { "" }
                ))
            }
            Ok(_) => {}
            Err(hang) => failures.push(format!("{how}: {hang}")),
        }
        let m = Mount::unmounted();
        let flags: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = m.mount(&root, &flags);
        if !out.status.success() {
            let text = String::from_utf8_lossy(&out.stderr);
            if !text.contains(SHARD) {
                failures.push(format!(
                    "{how}: mount refused without naming the shard: {text}"
                ));
            }
            continue;
        }
        let g = Guarded::adopt(m);
        let r = within(ANSWER_S, "read the local part", {
            let p = g.m.join(LOCAL).join("data");
            move || fs::read(p)
        });
        common::assert_same(&r.expect("the root's own part"), &fam.local, how);
        let p = g.m.join(FOREIGN).join("data");
        match within(ANSWER_S, "read the wrong shard's part", move || fs::read(p)) {
            Err(e) if e.raw_os_error() == Some(libc::EIO) => {}
            Ok(b) if b == fam.impostor_foreign => {
                failures.push(format!("{how}: the mount serves the wrong shard's bytes"))
            }
            other => failures.push(format!(
                "{how}: the wrong shard's part: {other:?}, expected EIO"
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// With `--trust-shards` the shard found (here the one of the wrong
/// content) is served as it is, positionally and through `--shard`: the
/// user vouches for it, and the mount skips the whole-file check.
#[test]
fn trusted_shard_is_served_as_found() {
    let fam = models::family(0xFA17_0009);
    let dir = tempfile::tempdir().unwrap();
    for (how, root, args) in placements(dir.path(), &fam, &fam.impostor) {
        let mut flags: Vec<&str> = args.iter().map(String::as_str).collect();
        flags.push("--trust-shards");
        let g = Guarded::new(&root, &flags);
        let got = fs::read(g.m.join(FOREIGN).join("data"));
        let what = format!("{how} --trust-shards");
        common::assert_same(
            &got.expect("a trusted shard is served"),
            &fam.impostor_foreign,
            &what,
        );
    }
}
