//! The object-storage link of `scripts/bench-remote-link.sh`, checked by
//! its own harness (`scripts/link/check.py`): through the network
//! namespace it makes, the first byte of an answer is late by the delay,
//! one connection is held to its cap, many together to the link's, and a
//! `ztfs mount` by URL reads a 16 MiB tensor through it exactly. Needs
//! root, `ip` and `tc` (iproute2), nginx and curl, as CI has.

use super::common::binary::BIN;

#[test]
fn the_benchmark_link_holds_its_caps_and_delay() {
    let work = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/link/check.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(BIN)
        .arg(work.path())
        .output()
        .expect("run python3 scripts/link/check.py");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "check.py failed:\n{text}");
    let passed = text.lines().filter(|l| l.starts_with("ok ")).count();
    assert_eq!(
        passed, 5,
        "check.py said fewer checks than it makes:\n{text}"
    );
}
