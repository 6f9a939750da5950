//! `zt.zstd-seekable/1` on a stored blob: `SeekTable::parse`, then decoding
//! the frames of what parses. The decoded length the table must add up to is
//! read off the table's entries here, independently, so that mutations reach
//! past the length check; one more byte must then be refused.
//!
//! Asserts what a reader relies on: frames tile the stored bytes before the
//! table and the decoded stream, `frame_at` finds the frame holding a byte,
//! and a frame that decodes has its declared size and the bytes a fresh zstd
//! context gives for it (also when decoded into a reused buffer). Frames
//! above `MAX_DECODED` are skipped, so an input cannot make the target
//! allocate up to the profile's 16 MiB per frame.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::decode::zstd_seekable::{SeekTable, MAX_FRAME_LEN};

/// Largest frame decoded, and most bytes decoded per input.
const MAX_DECODED: u64 = 1 << 20;

fuzz_target!(|stored: &[u8]| {
    let Some((table_start, total)) = entries_sum(stored) else {
        let _ = SeekTable::parse(stored, 0);
        return;
    };
    let Ok(table) = SeekTable::parse(stored, total) else {
        return;
    };
    assert!(
        SeekTable::parse(stored, total + 1).is_err(),
        "decoded_length must equal the frames' sum"
    );
    check_tiling(&table, table_start, total);
    check_frame_at(&table, total, stored);
    check_decoding(&table, stored);
});

/// Where the seek table starts and what its decoded sizes add up to, when
/// the footer's count fits the blob.
fn entries_sum(b: &[u8]) -> Option<(u64, u64)> {
    let u32_at = |at: usize| Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?));
    let n = b.len();
    let entry = if b.get(n.checked_sub(5)?)? & 0x80 != 0 {
        12
    } else {
        8
    };
    let count = u32_at(n.checked_sub(9)?)? as usize;
    let start = n.checked_sub(count.checked_mul(entry)?.checked_add(17)?)?;
    let sizes = (0..count).map(|i| u32_at(start + 8 + i * entry + 4).map(u64::from));
    Some((start as u64, sizes.sum::<Option<u64>>()?))
}

fn check_tiling(t: &SeekTable, table_start: u64, total: u64) {
    let (mut stored, mut decoded) = (0, 0);
    for (i, f) in t.frames().enumerate() {
        assert_eq!((f.stored_offset, f.decoded_offset), (stored, decoded));
        assert!(f.decoded_len <= MAX_FRAME_LEN);
        if i > 0 && i + 1 < t.len() {
            assert_eq!(
                f.decoded_len, t.frame(0).decoded_len,
                "middle frames match frame 0"
            );
        }
        stored += f.stored_len;
        decoded += f.decoded_len;
    }
    assert_eq!((stored, decoded), (table_start, total));
}

/// `frame_at` on the first and last byte and a few picked by the input.
fn check_frame_at(t: &SeekTable, total: u64, input: &[u8]) {
    if total == 0 {
        return;
    }
    let picked = input
        .chunks(8)
        .take(4)
        .map(|c| c.iter().fold(0u64, |a, &b| a << 8 | u64::from(b)));
    for pos in [0, total - 1].into_iter().chain(picked.map(|p| p % total)) {
        let f = t.frame(t.frame_at(pos));
        assert!(
            f.decoded_offset <= pos && pos < f.decoded_offset + f.decoded_len,
            "frame_at({pos}) gave {f:?}"
        );
    }
}

fn check_decoding(t: &SeekTable, stored: &[u8]) {
    let mut budget = MAX_DECODED;
    let mut reused = Vec::new();
    for (i, f) in t.frames().enumerate() {
        if f.decoded_len > budget {
            continue;
        }
        budget -= f.decoded_len;
        let fresh = t.decode_frame(stored, i);
        let again = t.decode_frame_into(stored, i, std::mem::take(&mut reused));
        // Both may fail, not necessarily alike (zstd's error can depend on
        // the room it has); one failing alone is a finding.
        let lens =
            |r: &ztfs::error::Result<Vec<u8>>| r.as_ref().map(Vec::len).map_err(|e| e.detail());
        assert_eq!(
            fresh.is_ok(),
            again.is_ok(),
            "frame {i} decodes into a fresh buffer as {:?}, into a reused one as {:?}",
            lens(&fresh),
            lens(&again)
        );
        let (Ok(fresh), Ok(again)) = (fresh, again) else {
            continue;
        };
        assert_eq!(fresh.len() as u64, f.decoded_len);
        assert!(fresh == again, "a reused buffer decodes to the same bytes");
        let src = &stored[f.stored_offset as usize..(f.stored_offset + f.stored_len) as usize];
        // One-shot, as the reader decodes: the streaming decoder would also
        // refuse frames whose declared window exceeds its default limit.
        let library = zstd::bulk::decompress(src, fresh.len()).expect("an accepted frame decodes");
        assert!(
            library == fresh,
            "frame {i} decodes as the zstd library does"
        );
        reused = again;
    }
}
