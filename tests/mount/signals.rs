//! Signals: SIGTERM, SIGINT and SIGHUP unmount, readers and all.

use super::*;

#[test]
fn signals_unmount() {
    let t = largest_sample_part();
    let cases = [
        (libc::SIGINT, &[][..]),
        (libc::SIGTERM, &["--direct-io"]),
        (libc::SIGHUP, &[]),
    ];
    for (sig, flags) in cases {
        let m = Mount::new(&t.file, flags);
        let pid = m.daemon();
        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicU64::new(0));
        let reader = spawn_reader(t.path(&m), t.want.clone(), stop.clone(), reads.clone());
        assert!(
            wait_until(FIVE_S, || reads.load(SeqCst) > 0),
            "signal {sig}: no read"
        );
        kill(pid, sig);
        let gone = wait_until(FIVE_S, || !is_mounted(m.path()));
        stop.store(true, SeqCst);
        let outcome = reader.join().expect("the reader does not panic");
        assert!(gone, "signal {sig}: still mounted after 5 s");
        assert!(outcome.is_ok(), "signal {sig}: {outcome:?}");
        // The daemon serves open files until they close, then exits.
        assert!(
            wait_until(FIVE_S, || !is_alive(pid)),
            "signal {sig}: {pid} still runs"
        );
    }
}

/// Holds `path` open and reads it whole until `stop`; fails on a wrong
/// byte, and ends quietly on EIO or ENOTCONN (the mount went away).
pub(crate) fn spawn_reader(
    path: PathBuf,
    want: Vec<u8>,
    stop: Arc<AtomicBool>,
    reads: Arc<AtomicU64>,
) -> std::thread::JoinHandle<Result<u64, String>> {
    std::thread::spawn(move || {
        let f = File::open(&path).map_err(|e| format!("open: {e}"))?;
        let mut buf = vec![0u8; want.len() + 1];
        while !stop.load(SeqCst) {
            match f.read_at(&mut buf, 0) {
                Ok(n) if buf[..n] == want[..] => reads.fetch_add(1, SeqCst),
                Ok(n) => return Err(format!("wrong bytes: {n} read")),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EIO | libc::ENOTCONN)) => break,
                Err(e) => return Err(format!("read: {e}")),
            };
        }
        Ok(reads.load(SeqCst))
    })
}
