//! `ztfs pack` streams: its peak resident set stays a few chunks however
//! large the model, with the source read through a buffer, not kept
//! mapped. Alone in its test binary, so the only child whose peak
//! `getrusage(RUSAGE_CHILDREN)` reports is the pack.

use std::fs;
use std::io::Write;
use std::process::Command;

const MIB: usize = 1 << 20;
const TENSOR: usize = 16 * MIB;

#[test]
fn packing_a_large_model_keeps_a_small_resident_set() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path().join("big.safetensors");
    // 160 MiB of noise in 10 tensors (no page is shared or zero), written
    // a tensor at a time: a vfork'd child's peak counts this process's
    // peak before its exec, so this one must stay small too.
    let entries: Vec<String> = (0..10)
        .map(|i| {
            let (start, end) = (i * TENSOR, (i + 1) * TENSOR);
            format!("\"t{i}\":{{\"dtype\":\"U8\",\"shape\":[{TENSOR}],\"data_offsets\":[{start},{end}]}}")
        })
        .collect();
    let header = format!("{{{}}}", entries.join(","));
    let mut f = std::io::BufWriter::new(fs::File::create(&src).expect("create the model"));
    f.write_all(&(header.len() as u64).to_le_bytes()).unwrap();
    f.write_all(header.as_bytes()).unwrap();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut tensor = vec![0u8; TENSOR];
    for _ in 0..10 {
        for w in tensor.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            w.copy_from_slice(&x.to_le_bytes());
        }
        f.write_all(&tensor).unwrap();
    }
    f.flush().unwrap();
    drop((f, tensor));
    let out = dir.path().join("big.zt");
    let status = Command::new(env!("CARGO_BIN_EXE_ztfs"))
        .args(
            [src.as_os_str(), out.as_os_str()]
                .iter()
                .enumerate()
                .flat_map(|(i, p)| {
                    let flag: &std::ffi::OsStr = if i == 0 {
                        "pack".as_ref()
                    } else {
                        "-o".as_ref()
                    };
                    [flag, p]
                }),
        )
        .status()
        .expect("run ztfs pack");
    assert!(status.success());
    assert!(fs::metadata(&out).unwrap().len() > 160 * MIB as u64);
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) },
        0
    );
    let peak_mib = usage.ru_maxrss as usize / 1024;
    assert!(
        peak_mib < 64,
        "ztfs pack of 160 MiB peaked at {peak_mib} MiB resident"
    );
}
