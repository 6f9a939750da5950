//! `pytorch::read_file_from` on whole files (a zip, its pickle, its
//! tensors), and `pytorch::pickle::load` on the same bytes as a bare
//! pickle. Asserts that an accepted checkpoint's tensors lie inside their
//! storages and their storages inside the file, that its objects and
//! `manifest.json` are made without panicking, and that a rejection names
//! a zip or PyTorch rule (or is a refusal: a TorchScript archive).
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::format::pytorch::{json, objects, pickle, read_file_from};

/// A zip or PyTorch rule, or a refusal of a valid file ztfs does not
/// interpret (a TorchScript archive).
fn is_ours(e: &ztfs::error::Error) -> bool {
    matches!(e, ztfs::error::Error::Unsupported(_))
        || e.rule()
            .is_some_and(|r| r.name() == "Zip" || r.name().starts_with("Torch"))
}

fuzz_target!(|data: &[u8]| {
    if let Err(e) = pickle::load(data) {
        assert!(is_ours(&e), "{e}");
    }
    match read_file_from(&data) {
        Ok(f) => {
            for s in &f.storages {
                let end = s.offset.checked_add(s.len).expect("storage end fits u64");
                assert!(end <= data.len() as u64, "storage inside the file");
            }
            for t in &f.tensors {
                let s = &f.storages[t.storage];
                if t.contiguous() {
                    let start = t.byte_offset();
                    assert!(start + t.numel() * t.width() <= s.len, "tensor inside its storage");
                }
            }
            assert_eq!(objects::objects(&f).len(), f.tensors.len());
            json::write_manifest(&f, &mut ztfs::format::json::Count::default());
        }
        Err(e) => assert!(is_ours(&e), "{e}"),
    }
});
