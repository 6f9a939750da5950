//! No count or length a file claims sizes an allocation before the bytes
//! it describes are read. Each case is a sparse 1 TiB file (a few KiB on
//! disk) whose header claims a huge count, checked by `ztfs check` with its
//! data segment limited to 1 GiB (RLIMIT_DATA: the heap and anonymous maps,
//! not the file's own read-only map): the file is rejected by its rule
//! (exit 1), not an abort on a failed allocation (exit 134). GGUF's counts
//! are in tests/gguf_input.rs.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use common::BIN;

const TIB: u64 = 1 << 40;

/// `bytes` at `at` in a sparse file of `len` bytes at `path`.
fn sparse(path: &Path, len: u64, pieces: &[(u64, &[u8])]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::create(path).unwrap();
    f.set_len(len).unwrap();
    for (at, bytes) in pieces {
        f.write_all_at(bytes, *at).unwrap();
    }
}

/// `ztfs ARGS` with at most 1 GiB of data segment: exit code and stderr.
fn limited(args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1 << 30,
                rlim_max: 1 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("run ztfs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_rejected(path: &Path, args: &[&str], rule: &str, what: &str) {
    let mut all: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    all.push(path.as_os_str());
    let (code, err) = limited(&all);
    assert_eq!(code, Some(1), "{what}: {err}");
    assert!(
        err.contains(&format!("rejected ({rule})")),
        "{what}: want {rule}: {err}"
    );
}

/// A Hurray header (64 bytes) with `flags`, and a trailer (40 bytes) for a
/// file of `len` bytes.
fn hurray(flags: u32, index: (u64, u64), kv: (u64, u32), len: u64) -> Vec<(u64, Vec<u8>)> {
    let mut h = b"HRRYFILE".to_vec();
    h.extend_from_slice(&[1, 0, 0, 0]);
    h.extend_from_slice(&flags.to_le_bytes());
    h.extend_from_slice(&4096u32.to_le_bytes());
    h.extend_from_slice(&64u64.to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes());
    h.resize(64, 0);
    let mut t = index.0.to_le_bytes().to_vec();
    t.extend_from_slice(&index.1.to_le_bytes());
    t.extend_from_slice(&kv.0.to_le_bytes());
    t.extend_from_slice(&kv.1.to_le_bytes());
    t.extend_from_slice(&[0; 8]);
    t.extend_from_slice(b"HRRY");
    vec![(0, h), (len - 40, t)]
}

#[test]
fn a_hurray_index_of_2_40_entries_is_rejected_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.hrry");
    let mut pieces = hurray(0, (4096, 1 << 39), (0, 0), TIB);
    pieces.push((4096, (1u64 << 40).to_le_bytes().to_vec()));
    let pieces: Vec<(u64, &[u8])> = pieces.iter().map(|(a, b)| (*a, &b[..])).collect();
    sparse(&path, TIB, &pieces);
    assert_rejected(&path, &["check"], "HurrayName", "index count 2^40");
}

#[test]
fn a_hurray_kv_section_of_2_32_entries_is_rejected_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kv.hrry");
    // An empty index (a count of 0), then a KV section of 4 GiB whose count
    // is 2^32 - 1 and whose first key has length 0.
    let (kv_at, kv_len) = (8192u64, u32::MAX - 15);
    let mut pieces = hurray(1, (4096, 8), (kv_at, kv_len), TIB);
    pieces.push((4096, 0u64.to_le_bytes().to_vec()));
    pieces.push((kv_at, u32::MAX.to_le_bytes().to_vec()));
    let pieces: Vec<(u64, &[u8])> = pieces.iter().map(|(a, b)| (*a, &b[..])).collect();
    sparse(&path, TIB, &pieces);
    assert_rejected(&path, &["check"], "HurrayKv", "kv count 2^32 - 1");
}

#[test]
fn a_seek_table_of_2_26_frames_costs_at_most_its_bytes() {
    use ztfs::format::manifest::{BlobRef, Manifest, Object, Part};
    use ztfs::format::types::{DType, ElementType};
    // One zstd-seekable part: a 1 TiB - 1 MiB blob at 4096 ending in a
    // seek table of 2^26 entries (zeros: 512 MiB of the file's map), its
    // header and footer valid. Kept as 40-byte frames it took 2.5 GiB.
    let blob_len = TIB - (1 << 20);
    let count: u32 = 1 << 26;
    let table_len = u64::from(count) * 8 + 17;
    let mut table = 0x184D_2A5Eu32.to_le_bytes().to_vec();
    table.extend_from_slice(&((table_len - 8) as u32).to_le_bytes());
    let mut end = count.to_le_bytes().to_vec();
    end.push(0);
    end.extend_from_slice(&0x8F92_EAB1u32.to_le_bytes());
    let part = Part {
        name: "data".into(),
        ty: ElementType {
            dtype: DType::U8,
            logical: None,
        },
        blob: BlobRef {
            offset: 4096,
            length: blob_len,
            shard: None,
        },
        encoding: Some("zt.zstd-seekable/1".into()),
        decoded: 1 << 20,
        digest: None,
    };
    let m = Manifest {
        objects: vec![Object {
            name: "t".into(),
            shape: ztfs::format::shape([1u64 << 20]),
            layout: "dense".into(),
            attributes: None,
            parts: smallvec::smallvec![part],
        }],
        shards: None,
        attributes: None,
    };
    let manifest = ztfs::format::write::manifest_bytes(&m);
    let at = (4096 + blob_len).div_ceil(4096) * 4096;
    let hash = xxhash_rust::xxh3::xxh3_64(&manifest);
    let footer = ztfs::format::write::footer(at, manifest.len() as u64, hash);
    let len = at + manifest.len() as u64 + footer.len() as u64;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seekable.zt");
    let blob_end = 4096 + blob_len;
    sparse(
        &path,
        len,
        &[
            (0, &ztfs::format::MAGIC),
            (blob_end - table_len, &table),
            (blob_end - 9, &end),
            (at, &manifest),
            (at + manifest.len() as u64, &footer),
        ],
    );
    assert_rejected(&path, &["check", "--verify"], "Encoding", "2^26 frames");
}
