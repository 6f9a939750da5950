//! `npz::read_archive` on whole files (deflated members inflated as a
//! stream, in constant memory). Asserts that an accepted archive's stored
//! arrays lie inside the file and inside their members, a deflated one
//! inside its inflated bytes, whose places lie end to end within the
//! file of inflated members, that its objects and `manifest.json` are
//! made without panicking, and that a rejection is the zip rule or a
//! `.npy` refusal.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::error::Error;
use ztfs::format::npz;

fuzz_target!(|data: &[u8]| {
    let members = match npz::members(&data) {
        Ok(m) => m,
        Err(e) => return assert!(e.rule().is_some_and(|r| r.name() == "Zip"), "{e}"),
    };
    match npz::read_archive(&data, &members) {
        Ok(f) => {
            let mut inflated = 0;
            for a in &f.arrays {
                let end = a.header.data_offset + a.header.data_len;
                match a.is_stored() {
                    true => {
                        assert!(end <= a.member.len, "array inside its member");
                        assert!(a.member.offset + a.member.len <= data.len() as u64);
                    }
                    false => {
                        assert!(end <= a.member.size, "array inside its inflated bytes");
                        assert_eq!(a.inflated_at, inflated, "places end to end");
                        inflated += a.member.size;
                    }
                }
            }
            assert_eq!(inflated, f.inflated_len());
            assert_eq!(npz::objects(&f).len(), f.arrays.len());
            npz::write_manifest(&f, &mut ztfs::format::json::Count::default());
        }
        Err(Error::Unsupported(_)) => {}
        Err(e) => assert!(e.rule().is_some_and(|r| r.name() == "Zip"), "{e}"),
    }
});
