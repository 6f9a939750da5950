//! Encodings (§5.3): `zt.zstd-seekable/1` (notes §3.1) and an unknown one.
//!
//! The seek table and frames are data: a file whose stored bytes break the
//! profile opens, and `--verify`, which decodes every part, rejects it with
//! `Encoding`. This reader follows the profile text where the public
//! implementation is more lenient (notes §2): every frame needs its content
//! checksum, the checksum column is verified, one entry is one frame. It
//! also follows the seekable format where the public implementation is
//! stricter: descriptor bits 1..0 are unused, not reserved.
//!
//! Each encoded part carries the digest of the bytes it should decode to,
//! so verify must decode it, and a reader that silently truncates or
//! zero-fills a frame would see the digest match.

use super::super::builder::{
    dense, frame_checksum, part, root, seek_table_with, xxh3_digest, zstd_frame, zstd_frame_with,
    zstd_seekable, Fields, SeekEntry, CHECKSUM_FLAG,
};
use super::super::Outcome;
use super::{file, reject, valid, valid_then, Case, DATA};

pub fn cases() -> Vec<Case> {
    [encodings(), seekable_cases()]
        .into_iter()
        .flatten()
        .collect()
}

/// 2500 f32 (10000 bytes) that compress well.
fn zstd_input() -> Vec<u8> {
    (0..2500u32)
        .flat_map(|i| ((i % 50) as f32 * 0.25).to_le_bytes())
        .collect()
}

/// Frames of this many decoded bytes: 10000 bytes make 3 frames.
const FRAME: usize = 4096;

/// Object `w`, dense `dtype` of `shape`, stored as `stored` under
/// `encoding` with `decoded_length`, and the digest when given.
fn encoded(
    stored: &[u8],
    encoding: &str,
    decoded_length: u64,
    shape: &[u64],
    dtype: &str,
    digest: Option<String>,
) -> Vec<u8> {
    file(&[stored], |b| {
        let mut p = part(dtype, b[0])
            .set("encoding", encoding)
            .set("decoded_length", decoded_length);
        if let Some(d) = digest {
            p = p.set("digest", d);
        }
        root(Fields::new().set("w", dense(shape, p))).sorted()
    })
}

fn encodings() -> Vec<Case> {
    let data = zstd_input();
    let stored = zstd_seekable(&data, FRAME);
    let zstd = "zt.zstd-seekable/1";
    let n = data.len() as u64;
    let encoding = Outcome::Reject("Encoding");
    let unknown = vec![0x42; 64];
    vec![
        valid(
            "zstd-seekable",
            encoded(&stored, zstd, n, &[n / 4], "f32", Some(xxh3_digest(&data))),
        ),
        // No frames: the bare 17-byte seek table.
        valid(
            "zstd-seekable-empty",
            encoded(
                &zstd_seekable(&[], FRAME),
                zstd,
                0,
                &[0],
                "u8",
                Some(xxh3_digest(&[])),
            ),
        ),
        // The shape counts stored bytes; the dense size is the decoded length.
        reject(
            "zstd-dense-size-uses-decoded-length",
            "DenseSize",
            encoded(&stored, zstd, n, &[stored.len() as u64], "u8", None),
        ),
        valid_then(
            "zstd-corrupt-frame",
            encoding,
            encoded(&corrupt_first_frame(&data), zstd, n, &[n / 4], "f32", None),
        ),
        // The frames decode to 10000 bytes; the part says 10001.
        valid_then(
            "zstd-seek-table-sum-mismatch",
            encoding,
            encoded(&stored, zstd, n + 1, &[n + 1], "u8", None),
        ),
        // The digest of the stored bytes, not of the decoded ones.
        valid_then(
            "zstd-digest-over-stored-bytes",
            Outcome::Reject("Digest"),
            encoded(
                &stored,
                zstd,
                n,
                &[n / 4],
                "f32",
                Some(xxh3_digest(&stored)),
            ),
        ),
        // With a digest, so that verify must decode it.
        valid_then(
            "view-unknown-encoding-refused",
            Outcome::Refused,
            encoded(
                DATA,
                "acme.lz/1",
                64,
                &[64],
                "u8",
                Some(xxh3_digest(&unknown)),
            ),
        ),
    ]
}

/// `data` as zstd-seekable with one byte of the first frame's block
/// flipped, so that zstd (its checksum at the latest) fails on the frame.
fn corrupt_first_frame(data: &[u8]) -> Vec<u8> {
    let mut stored = zstd_seekable(data, FRAME);
    let first = zstd_frame(&data[..FRAME]);
    assert_eq!(stored[..first.len()], first[..]);
    // 4 magic, 1 descriptor, 1 window descriptor, 3 block header.
    stored[12] ^= 0x40;
    assert!(zstd::bulk::decompress(&stored[..first.len()], FRAME).is_err());
    stored
}

/// One zstd frame: its stored bytes and the decoded bytes it stands for.
struct Frame {
    stored: Vec<u8>,
    decoded: Vec<u8>,
}

/// `data` cut into frames of `sizes` (which must add up to its length),
/// each with its content checksum unless `without_checksum` names it.
fn frames_of(data: &[u8], sizes: &[usize], without_checksum: Option<usize>) -> Vec<Frame> {
    assert_eq!(sizes.iter().sum::<usize>(), data.len());
    let mut at = 0;
    sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let decoded = data[at..at + n].to_vec();
            at += n;
            Frame {
                stored: zstd_frame_with(&decoded, without_checksum != Some(i)),
                decoded,
            }
        })
        .collect()
}

/// The true seek-table entries of `frames`, checksums included.
fn entries(frames: &[Frame]) -> Vec<SeekEntry> {
    frames
        .iter()
        .map(|f| SeekEntry {
            compressed: f.stored.len() as u32,
            decompressed: f.decoded.len() as u32,
            checksum: frame_checksum(&f.decoded),
        })
        .collect()
}

/// The stored blob: the frames, `gap` (junk the table does not account
/// for), then the seek table of `entries` with `descriptor`.
fn assemble(frames: &[Frame], gap: &[u8], entries: &[SeekEntry], descriptor: u8) -> Vec<u8> {
    let mut out: Vec<u8> = frames.iter().flat_map(|f| f.stored.clone()).collect();
    out.extend_from_slice(gap);
    out.extend_from_slice(&seek_table_with(entries, descriptor));
    out
}

/// Object `w`, dense u8 of `decoded.len()` elements, stored as `stored`
/// under zstd-seekable with the digest of `decoded`.
fn zstd_u8(stored: &[u8], decoded: &[u8]) -> Vec<u8> {
    let n = decoded.len() as u64;
    let zstd = "zt.zstd-seekable/1";
    encoded(stored, zstd, n, &[n], "u8", Some(xxh3_digest(decoded)))
}

/// `data` in frames of `sizes` with the true table under `descriptor`.
fn seekable(data: &[u8], sizes: &[usize], descriptor: u8) -> Vec<u8> {
    let frames = frames_of(data, sizes, None);
    zstd_u8(&assemble(&frames, &[], &entries(&frames), descriptor), data)
}

/// The usual 3 frames of `data` (4096, 4096, 1808) under `descriptor`
/// with the table's entries edited by `edit`. The part's decoded length is
/// what the entries add up to, and its digest is over that many bytes of
/// `data`, zero-filled past its end.
fn edited_entries(data: &[u8], descriptor: u8, edit: impl FnOnce(&mut [SeekEntry])) -> Vec<u8> {
    let frames = frames_of(data, &[FRAME, FRAME, data.len() - 2 * FRAME], None);
    let mut e = entries(&frames);
    edit(&mut e);
    let n: usize = e.iter().map(|e| e.decompressed as usize).sum();
    let mut want = data.to_vec();
    want.resize(n, 0);
    zstd_u8(&assemble(&frames, &[], &e, descriptor), &want)
}

fn seekable_cases() -> Vec<Case> {
    let data = zstd_input();
    let n = data.len();
    let usual = [FRAME, FRAME, n - 2 * FRAME];
    let encoding = Outcome::Reject("Encoding");
    let with_checksums = CHECKSUM_FLAG;
    // The first 4096 bytes as two frames under one entry.
    let two_in_one = {
        let mut frames = frames_of(&data, &[FRAME / 2, FRAME / 2, FRAME, n - 2 * FRAME], None);
        let second = frames.remove(1);
        frames[0].stored.extend(second.stored);
        frames[0].decoded.extend(second.decoded);
        zstd_u8(&assemble(&frames, &[], &entries(&frames), 0), &data)
    };
    // 16 MiB + 1 zero bytes in one frame: a few hundred stored bytes.
    let over_cap = vec![0u8; (16 << 20) + 1];
    let big = frames_of(&over_cap, &[over_cap.len()], None);
    let untabled_junk = {
        let frames = frames_of(&data, &usual, None);
        zstd_u8(&assemble(&frames, &[0; 4], &entries(&frames), 0), &data)
    };
    let no_checksum = {
        let frames = frames_of(&data, &usual, Some(1));
        assert_eq!(frames[1].stored[4] & 0x04, 0, "frame 1 has a checksum");
        zstd_u8(&assemble(&frames, &[], &entries(&frames), 0), &data)
    };
    vec![
        valid("zstd-seekable-one-frame", seekable(&data, &[n], 0)),
        valid(
            "zstd-seekable-last-frame-smaller",
            seekable(&data, &[3000, 3000, 3000, 1000], 0),
        ),
        // The profile constrains only the frames before the last.
        valid(
            "zstd-seekable-last-frame-larger",
            seekable(&data, &[3000, 3000, 4000], 0),
        ),
        valid(
            "zstd-seekable-checksum-column",
            seekable(&data, &usual, with_checksums),
        ),
        // Bits 1..0 are unused in the seekable format, not reserved.
        valid(
            "zstd-seekable-descriptor-bit0",
            seekable(&data, &usual, 0x01),
        ),
        valid(
            "zstd-seekable-descriptor-bit1",
            seekable(&data, &usual, 0x02),
        ),
        valid_then(
            "zstd-seekable-descriptor-bit2",
            encoding,
            seekable(&data, &usual, 0x04),
        ),
        valid_then(
            "zstd-seekable-descriptor-bit6",
            encoding,
            seekable(&data, &usual, 0x40),
        ),
        // Frame 1 of 3 lacks the content checksum the profile requires.
        valid_then(
            "zstd-seekable-frame-without-checksum",
            encoding,
            no_checksum,
        ),
        valid_then(
            "zstd-seekable-checksum-column-wrong",
            encoding,
            edited_entries(&data, with_checksums, |e| e[2].checksum ^= 1),
        ),
        valid_then("zstd-seekable-entry-two-frames", encoding, two_in_one),
        // The last frame decodes to 1808 bytes; its entry says 1800.
        valid_then(
            "zstd-seekable-frame-longer-than-entry",
            encoding,
            edited_entries(&data, 0, |e| e[2].decompressed -= 8),
        ),
        // The last frame decodes to 1808 bytes; its entry says 1816.
        valid_then(
            "zstd-seekable-frame-shorter-than-entry",
            encoding,
            edited_entries(&data, 0, |e| e[2].decompressed += 8),
        ),
        valid_then(
            "zstd-seekable-frame-over-16mib",
            encoding,
            zstd_u8(&assemble(&big, &[], &entries(&big), 0), &over_cap),
        ),
        // Frame 1 of 3 is not the size of frame 0.
        valid_then(
            "zstd-seekable-unequal-frames",
            encoding,
            seekable(&data, &[FRAME, FRAME / 2, n - FRAME - FRAME / 2], 0),
        ),
        // Four bytes between the last frame and the table.
        valid_then(
            "zstd-seekable-compressed-sizes-short",
            encoding,
            untabled_junk,
        ),
    ]
}
