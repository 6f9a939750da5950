//! `hurray::read_file` on whole files, twice: as given, and with the
//! trailer's index CRC-32C made to match, so that mutations inside the
//! index reach the index parser instead of stopping at `HurrayIndexCrc`.
//! The same bytes also go to `read_descriptor` (the descriptor vectors are
//! seeds too). Asserts that an accepted file's buffers lie inside it, on
//! the file's buffer alignment, and that a rejection names a Hurray rule.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::format::hurray::{read_descriptor, read_file};

fuzz_target!(|data: &[u8]| {
    exercise(data);
    if let Some(fixed) = with_matching_crc(data) {
        exercise(&fixed);
    }
    if let Err(e) = read_descriptor(data) {
        assert!(
            e.rule().is_some_and(|r| r.name().starts_with("Hurray")),
            "{e}"
        );
    }
});

fn exercise(file: &[u8]) {
    match read_file(file) {
        Ok(f) => {
            let a = u64::from(f.header.data_buffer_alignment);
            for t in &f.tensors {
                assert_eq!(t.buffer_offsets.len(), t.descriptor.buffers.len());
                for (b, &off) in t.descriptor.buffers.iter().zip(&t.buffer_offsets) {
                    assert_eq!(off % a, 0, "buffer on the alignment");
                    let end = off.checked_add(b.size).expect("buffer end fits u64");
                    assert!(end <= file.len() as u64 - 40, "buffer before the trailer");
                }
            }
            served(file, &f);
        }
        Err(e) => assert!(
            e.rule().is_some_and(|r| r.name().starts_with("Hurray")),
            "{e}"
        ),
    }
}

/// What every command and the mount derive from an accepted file: the
/// objects, `manifest.json`, and the first and last bytes of every
/// computed `data` view (relayouts, partitions, quantized values), which
/// must read without panicking and exactly fill their buffers (a quantized
/// tensor's may fail on a forbidden parameter).
fn served(file: &[u8], f: &ztfs::format::hurray::File) {
    use ztfs::format::hurray::{composite_members, json, objects};
    let objs = objects::objects(f);
    assert_eq!(objs.len(), f.tensors.len());
    json::write_manifest(f, &mut ztfs::format::json::Count::default());
    let members = composite_members(&f.tensors);
    for i in 0..f.tensors.len() {
        let Some(Ok(v)) = ztfs::decode::hurray::view(f, i, &members) else {
            continue;
        };
        let n = v.len().min(4096);
        let mut buf = vec![0; n as usize];
        let (head, tail) = (v.read_into(&file, 0, &mut buf), v.read_into(&file, v.len() - n, &mut buf));
        // A quantized tensor's values may meet a parameter the spec
        // forbids (a zero scale): an error, never a panic.
        if v.dequantized_from().is_none() {
            head.expect("the head of a view reads");
            tail.expect("the tail of a view reads");
        }
    }
}

/// The file with the trailer CRC set to the CRC-32C of the index range the
/// trailer names, when that range is inside the file and the CRC differs.
fn with_matching_crc(file: &[u8]) -> Option<Vec<u8>> {
    let t = file.len().checked_sub(40)?;
    let word = |at: usize| u64::from_le_bytes(file[t + at..t + at + 8].try_into().unwrap());
    let (off, len) = (
        usize::try_from(word(0)).ok()?,
        usize::try_from(word(8)).ok()?,
    );
    let end = off.checked_add(len).filter(|&e| e <= t)?;
    let crc = crc32c(&file[off..end]);
    if crc.to_le_bytes() == file[t + 28..t + 32] {
        return None;
    }
    let mut out = file.to_vec();
    out[t + 28..t + 32].copy_from_slice(&crc.to_le_bytes());
    Some(out)
}

/// Bitwise CRC-32C (Castagnoli, reflected 0x82F63B78): slow and obviously
/// right, independent of the crate the parser uses.
fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
