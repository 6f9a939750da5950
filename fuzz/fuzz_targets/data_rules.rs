//! The layout profiles' data rules (`views::check_data`) on the objects of a
//! fuzzed manifest, with parts cut from the rest of the input (the format is
//! `common::split`). Objects are not validated first: the views module
//! promises an error, not a panic, to a caller that skipped validation.
//!
//! Asserts that an object whose metadata is valid (after the per-part
//! checks `validate` runs) and whose parts have their declared sizes is
//! refused only with `LayoutData`.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::decode::views;
use ztfs::error::Rule;
use ztfs::format::manifest::Manifest;
use ztfs::format::profiles;

fuzz_target!(|data: &[u8]| {
    let Some((manifest, payload)) = common::split(data) else {
        return;
    };
    let Ok(m) = Manifest::parse(manifest) else {
        return;
    };
    for (o, parts) in common::objects_with_parts(&m.objects, payload) {
        let checked = views::check_data(o, &|name| parts.get(name));
        let valid = common::passes_part_checks(o) && profiles::check_metadata(o).is_ok();
        if let (true, Err(e)) = (valid, checked) {
            assert_eq!(e.rule(), Some(Rule::LayoutData), "{e:?}");
        }
    }
});
