//! The view renderers (`views::render`) on the objects of a fuzzed manifest
//! whose view is small (at most `MAX_VIEW` bytes), with parts cut from the
//! rest of the input (the format is `common::split`).
//!
//! Asserts the module's contract: an object `view` gives no view is refused
//! before any part is read (as `Unsupported` when its metadata is valid); a
//! rendered view has exactly the size `view` announced; and a view is
//! rendered only when `check_data` passes.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::decode::views;
use ztfs::error::Error;
use ztfs::format::manifest::{Manifest, Object};
use ztfs::format::profiles;

/// Largest view rendered, in bytes.
const MAX_VIEW: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((manifest, payload)) = common::split(data) else {
        return;
    };
    let Ok(m) = Manifest::parse(manifest) else {
        return;
    };
    for (o, parts) in common::objects_with_parts(&m.objects, payload) {
        let Some((_, size)) = views::view(o) else {
            let refused = views::render(o, &|_| panic!("a part read for an object with no view"));
            if valid_metadata(o) {
                assert!(matches!(refused, Err(Error::Unsupported(_))), "{refused:?}");
            }
            continue;
        };
        if size > MAX_VIEW {
            continue;
        }
        let part = |name: &str| parts.get(name);
        if let Ok(bytes) = views::render(o, &part) {
            assert_eq!(bytes.len() as u64, size, "the size view announced");
            let checked = views::check_data(o, &part);
            assert!(checked.is_ok(), "rendered, but check_data says {checked:?}");
        }
    }
});

fn valid_metadata(o: &Object) -> bool {
    common::passes_part_checks(o) && profiles::check_metadata(o).is_ok()
}
