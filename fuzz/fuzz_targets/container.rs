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
    if let Some(fixed) = common::with_matching_hash(data) {
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
