//! Random mutation: whatever the bytes, `read_file` returns, never panics,
//! and `read_file_from` by range agrees without asking for a range outside
//! the file.
//! Mutations land where structure lives (header, descriptors, KV, index,
//! trailer), not in the padding that makes up most of a file.

use proptest::prelude::*;

use super::builder::*;
use crate::format::hurray::read_file;

/// Valid files: pyhurray's, the vector, and a few built ones.
fn seeds() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = super::pyhurray_files()
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    v.push(super::data("hurray-vectors/files/basic.hrry"));
    let mut b = file(vec![t("x", D::f32x4()), t("y", D::dense(0x48, &[5], 3))]);
    b.kv = kv(&[entry("k", 7, &[1, 1, 0, 0, 0, 1, 0, 0, 0, b'z'])]);
    b.flags = 2 | 4;
    v.push(b.build().bytes);
    v
}

/// Byte ranges worth mutating in a valid file.
fn hot_ranges(file: &[u8]) -> Vec<(usize, usize)> {
    let n = file.len();
    let mut r = vec![(0, 64), (n.saturating_sub(600), n)];
    if let Ok(f) = read_file(file) {
        for t in &f.tensors {
            let o = t.descriptor_offset as usize;
            r.push((o, o + t.descriptor_length as usize));
        }
    }
    r
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn mutated_files_never_panic(
        which in any::<usize>(),
        edits in prop::collection::vec((any::<usize>(), any::<usize>(), any::<u8>()), 1..6),
        cut in prop::option::weighted(0.1, any::<usize>()),
        fix_crc in any::<bool>(),
    ) {
        thread_local! { static SEEDS: Vec<Vec<u8>> = seeds(); }
        SEEDS.with(|seeds| {
            let mut file = seeds[which % seeds.len()].clone();
            let ranges = hot_ranges(&file);
            for (r, at, byte) in edits {
                let (lo, hi) = ranges[r % ranges.len()];
                if hi > lo {
                    file[lo + at % (hi - lo)] = byte;
                }
            }
            if fix_crc {
                refresh_crc(&mut file);
            }
            if let Some(c) = cut {
                file.truncate(c % (file.len() + 1));
            }
            // By range too: the same outcome, no range outside the file.
            let _ = super::ranges::same_both_ways(&file);
        });
    }
}

/// Makes the trailer's CRC match whatever the index now holds, so that
/// index mutations reach the index parser.
fn refresh_crc(file: &mut [u8]) {
    let Some(t) = file.len().checked_sub(40) else {
        return;
    };
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[t + at..t + at + 8].try_into().unwrap());
    let (o, n) = (word(file, 0) as usize, word(file, 8) as usize);
    if let Some(index) = o.checked_add(n).filter(|&e| e <= t).map(|e| &file[o..e]) {
        let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI).checksum(index);
        file[t + 28..t + 32].copy_from_slice(&crc.to_le_bytes());
    }
}

#[test]
fn a_million_tensors_parse() {
    // Empty groups: tensors without buffers, so the file stays small
    // (any tensor with a buffer takes a whole alignment unit).
    let mut group = D::dense(0x11, &[1], 0);
    group.layout = 0x0B;
    group.handles.clear();
    group.layout_fields = vec![3, 0, 0, 0, 0, 0, 0, 0];
    let tensors: Vec<T> = (0..1_000_000u32)
        .map(|i| t(&format!("t{i:07}"), group.clone()))
        .collect();
    let mut b = file(tensors);
    b.flags = 2 | 4;
    let bytes = b.build().bytes;
    let mut took = std::time::Duration::MAX;
    let mut f = None;
    // Best of three in release builds; one run in slow debug builds.
    for _ in 0..if cfg!(debug_assertions) { 1 } else { 3 } {
        let start = std::time::Instant::now();
        let parsed = read_file(&bytes).unwrap();
        took = took.min(start.elapsed());
        f = Some(parsed); // the previous one is dropped untimed
    }
    let f = f.unwrap();
    assert_eq!(f.tensors.len(), 1_000_000);
    // No bound on the time: a timed test fails on a busy machine (it did,
    // at 11.6 s in a debug build beside two compilers). The time is shown
    // for whoever runs it; a parser that is not linear shows here first.
    eprintln!("1e6 tensors: {took:?} ({} MB)", bytes.len() >> 20);
}
