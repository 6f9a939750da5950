//! What opening a model of many files by URL costs in memory: a sharded
//! safetensors checkpoint of 300 files served by nginx, opened by `ztfs
//! check` and by a mount (its daemon's peak after `ls`), measured as
//! `/proc` and `wait4` count it (the peak resident set, VmHWM), against a
//! bound with a wide margin, not a time.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::http::Nginx;
use common::{status_kib, Mount, BIN};

/// Files of the checkpoint.
const FILES: usize = 300;
/// Most the process may hold at its peak, in KiB. Measured (debug build,
/// 2026-12-05, two runs): 42-43 MiB for the daemon, 51-52 MiB for
/// `check`; before the files an index names were opened by their head
/// alone, 300-303 and 328-335 MiB (each open read the file's last MiB and
/// its first, which filled the 256 MiB block cache).
const PEAK_KIB: u64 = 120 << 10;

/// `dir/model.safetensors.index.json` and the `FILES` files it names,
/// each of 4 tensors of 1 MiB (zeros, left sparse on disk), except every
/// 30th, of 800 tensors of 6 KiB, whose header (about 80 KiB) is longer
/// than what the open reads.
fn checkpoint(dir: &Path) {
    let mut weight_map = Vec::new();
    for i in 0..FILES {
        let name = format!("model-{:05}-of-{FILES:05}.safetensors", i + 1);
        let (count, size) = if i % 30 == 0 {
            (800, 6 << 10)
        } else {
            (4, 1 << 20)
        };
        let mut entries = Vec::new();
        for j in 0..count {
            let tensor = format!("layers.{i}.w{j}");
            let at = j * size;
            entries.push(format!(
                "\"{tensor}\":{{\"dtype\":\"F32\",\"shape\":[{}],\"data_offsets\":[{at},{}]}}",
                size / 4,
                at + size
            ));
            weight_map.push(format!("\"{tensor}\":\"{name}\""));
        }
        let header = format!("{{{}}}", entries.join(","));
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        let file = dir.join(&name);
        std::fs::write(&file, &bytes).unwrap();
        let f = std::fs::File::options().write(true).open(&file).unwrap();
        f.set_len((bytes.len() + count * size) as u64).unwrap();
    }
    let index = format!(
        "{{\"metadata\":{{}},\"weight_map\":{{{}}}}}",
        weight_map.join(",")
    );
    std::fs::write(dir.join("model.safetensors.index.json"), index).unwrap();
}

/// `ztfs args...`: its exit status and its peak resident set in KiB, as
/// GNU time reports it. Not `wait4` on a child of this process: the test
/// binary spawns by vfork, and at exec the kernel records the parent's
/// peak as the child's (`exec_mmap`), so the child's `ru_maxrss` was this
/// whole test process's (about 500 MB when run with the other tests).
/// `time` forks the program from itself, a small process.
fn peak_of(args: &[&str]) -> (std::process::ExitStatus, u64) {
    let out = Command::new("/usr/bin/time")
        .args(["-f", "peak %M"])
        .arg(BIN)
        .args(args)
        .output()
        .expect("GNU time (/usr/bin/time; .ci/run installs it)");
    let err = String::from_utf8_lossy(&out.stderr);
    let peak = (err.lines().rev())
        .find_map(|l| l.strip_prefix("peak ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak in {err}"));
    (out.status, peak)
}

/// A checkpoint of 300 files by URL opens without filling the block
/// cache: each file costs its header, not its last MiB and its first
/// (before, 300 MiB for the daemon and 328 MiB for `check`).
#[test]
fn a_checkpoint_of_300_files_by_url_opens_in_little_memory() {
    let t = tempfile::tempdir().unwrap();
    checkpoint(t.path());
    let nginx = Nginx::serve(t.path());
    let url = nginx.url("model.safetensors.index.json");
    let (status, peak) = peak_of(&["check", &url]);
    assert!(status.success(), "ztfs check {url}: {status}");
    assert!(peak < PEAK_KIB, "ztfs check peaked at {peak} KiB");
    let mount = Mount::new(Path::new(&url), &[]);
    let names = std::fs::read_dir(mount.path()).unwrap().count();
    assert!(names > 4 * FILES, "{names} names");
    let peak = status_kib(mount.daemon(), "VmHWM");
    assert!(peak < PEAK_KIB, "the daemon peaked at {peak} KiB");
}
