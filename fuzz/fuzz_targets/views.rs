//! The view renderers (`views::render`) on the objects of a fuzzed manifest
//! whose view is small (at most `MAX_VIEW` bytes), with parts cut from the
//! rest of the input (the format is `common::split`).
//!
//! Asserts the module's contract: an object `view` gives no view is refused
//! before any part is read (as `Unsupported` when its metadata is valid); a
//! rendered view has exactly the size `view` announced; a view is rendered
//! only when `check_data` passes; `prepare` fails exactly when `render`
//! does, and ranges read from a prepared view are slices of the render.
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
        let rendered = views::render(o, &part);
        let prepared = views::prepare(o, &part);
        assert_eq!(
            rendered.as_ref().err().map(|e| e.to_string()),
            prepared.as_ref().err().map(|e| e.to_string()),
            "prepare and render disagree"
        );
        if let (Ok(bytes), Ok(p)) = (rendered, prepared) {
            assert_eq!(bytes.len() as u64, size, "the size view announced");
            assert_eq!(p.size(), size, "the prepared view's size");
            let checked = views::check_data(o, &part);
            assert!(checked.is_ok(), "rendered, but check_data says {checked:?}");
            // Ranges read from the prepared view are slices of the whole.
            let n = bytes.len() as u64;
            let cut = |k: usize| data.get(k).map_or(0, |&b| u64::from(b)) * n / 255;
            for (i, (a, b)) in [(0, n), (cut(0), cut(1)), (cut(2), n + 7), (n, 5)]
                .into_iter()
                .enumerate()
            {
                let (from, len) = (a.min(b), a.max(b) - a.min(b));
                let got = p
                    .read_range(from, len as usize)
                    .expect("read a prepared view");
                let end = (from + len).min(n);
                let want = &bytes[from.min(n) as usize..end.max(from.min(n)) as usize];
                assert_eq!(got, want, "range {i}: [{from}, +{len}) of {n}");
            }
        }
    }
});

fn valid_metadata(o: &Object) -> bool {
    common::passes_part_checks(o) && profiles::check_metadata(o).is_ok()
}
