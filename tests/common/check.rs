//! Assertions and waits: where two byte strings differ, a caught panic's
//! text, a wait for a condition, a time limit on a call that could hang.

use super::*;

/// Polls `cond` every 20 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Fails with where `got` first differs from `want`, not with both dumps.
pub fn assert_same(got: &[u8], want: &[u8], what: &str) {
    if got != want {
        let at = got.iter().zip(want).position(|(a, b)| a != b);
        let (g, w) = (got.len(), want.len());
        panic!("{what}: {g} bytes read, {w} expected; first difference at {at:?}");
    }
}

/// The first line of a caught panic's message.
pub fn panic_text(e: &(dyn std::any::Any + Send)) -> String {
    let text = e.downcast_ref::<String>().map(String::as_str);
    let text = text.or_else(|| e.downcast_ref::<&str>().copied());
    text.unwrap_or("a panic")
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Runs `f` in a thread and fails if it takes longer than `secs` (a hung
/// FUSE request would otherwise hang the test).
pub fn within<T: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    let r = rx.recv_timeout(Duration::from_secs(secs));
    r.unwrap_or_else(|_| panic!("{what}: no answer in {secs} s"))
}
