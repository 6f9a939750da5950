//! `read_container` on whole files, twice: as given, and with the footer's
//! manifest hash (and nothing else) made to match, so that mutations inside
//! the manifest reach the parser and the validator instead of stopping at
//! `ManifestHash`.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::format::{read_container, Container};

fuzz_target!(|data: &[u8]| {
    exercise(data);
    if let Some(fixed) = with_matching_hash(data) {
        exercise(&fixed);
    }
});

fn exercise(file: &[u8]) {
    if let Ok(Container::Model(m)) = read_container(file) {
        for p in m.objects.iter().flat_map(|o| &o.parts) {
            if p.blob.shard.is_none() {
                let end = p.blob.offset.checked_add(p.blob.length);
                let stored = end.and_then(|e| file.get(p.blob.offset as usize..e as usize));
                assert!(stored.is_some(), "a validated local blob lies in the file");
            }
        }
        let _ = ztfs::report::summary(&m);
    }
}

/// The file with the footer hash set to the XXH3-64 of the range the footer
/// names, when that range is inside the file and differs from the stored hash.
fn with_matching_hash(file: &[u8]) -> Option<Vec<u8>> {
    let foot = file.len().checked_sub(40)?;
    let word = |at: usize| u64::from_le_bytes(file[foot + at..foot + at + 8].try_into().unwrap());
    let (off, len) = (
        usize::try_from(word(0)).ok()?,
        usize::try_from(word(8)).ok()?,
    );
    let end = off.checked_add(len).filter(|&e| e <= foot)?;
    let manifest = &file[off..end];
    let hash = xxhash_rust::xxh3::xxh3_64(manifest);
    if len == 0 || hash == word(16) {
        return None;
    }
    let mut out = file.to_vec();
    out[foot + 16..foot + 24].copy_from_slice(&hash.to_le_bytes());
    Some(out)
}
