//! Strict CBOR and the manifest schema on raw bytes: whatever the input,
//! `cbor::parse` and `Manifest::from_cbor` return, they never panic, and an
//! accepted input re-encodes to itself (deterministic encoding is unique).
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::format::cbor;
use ztfs::format::manifest::Manifest;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = cbor::parse(data) else {
        return;
    };
    let mut again = Vec::new();
    cbor::encode(&value, &mut again);
    assert_eq!(
        again, data,
        "an accepted item must be its own deterministic encoding"
    );
    let _ = Manifest::from_cbor(&value);
});
