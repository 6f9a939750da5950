//! The layout profiles' metadata rules (`profiles::check_metadata`) on every
//! object of a fuzzed manifest that passes the per-part checks `validate`
//! runs first (see `common::passes_part_checks`), plus `views::view`, which
//! decides from metadata alone.
//!
//! Asserts the rejection rules the profiles document (`LayoutRule`,
//! `DenseSize`, `Shape`) and, for accepted objects, the invariants handed on
//! to decoders: the parts a profile names exist, with sizes from its size
//! equations.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::decode::views;
use ztfs::error::Rule;
use ztfs::format::manifest::{Manifest, Object};
use ztfs::format::profiles::{self, Layout};
use ztfs::format::types::Interpretation;

fuzz_target!(|data: &[u8]| {
    let Ok(m) = Manifest::parse(data) else {
        return;
    };
    for o in m.objects.iter().filter(|o| common::passes_part_checks(o)) {
        let _ = views::view(o);
        let _ = profiles::gguf_table_mismatch(o);
        match profiles::check_metadata(o) {
            Ok(()) => check_accepted(o),
            Err(e) => assert!(
                matches!(
                    e.rule(),
                    Some(Rule::LayoutRule | Rule::DenseSize | Rule::Shape)
                ),
                "check_metadata rejects with a layout rule, not {e:?}"
            ),
        }
    }
});

fn check_accepted(o: &Object) {
    let size = |name: &str| o.part(name).map(|p| p.decoded_size()).expect(name);
    match Layout::of(&o.layout) {
        Layout::Dense => {
            let p = o.part("data").expect("data");
            assert_eq!(o.parts.len(), 1);
            if !matches!(p.ty.interpretation(), Interpretation::Unknown) {
                assert_eq!(p.ty.size(o.num_elements().unwrap()), Some(p.decoded_size()));
            }
        }
        Layout::SparseCsr => {
            let c = profiles::parse_csr(o).expect("parse agrees with check");
            let w = c.index.width();
            assert_eq!(size("indices"), c.nnz * w);
            assert_eq!(size("indptr"), (c.rows + 1) * w);
            assert_eq!([c.rows, c.cols], o.shape[..]);
            let values = o.part("values").unwrap();
            if let Some(want) = values.ty.size(c.nnz) {
                assert_eq!(values.decoded_size(), want);
            }
        }
        Layout::SparseCoo => {
            let c = profiles::parse_coo(o).expect("parse agrees with check");
            assert_eq!(
                size("coords"),
                c.nnz * c.index.width() * o.shape.len() as u64
            );
            let values = o.part("values").unwrap();
            if let Some(want) = values.ty.size(c.nnz) {
                assert_eq!(values.decoded_size(), want);
            }
        }
        Layout::QuantGroup => {
            let q = profiles::parse_quant_group(o).expect("parse agrees with check");
            assert_eq!(Some(q.codes), o.num_elements());
            let _ = (size("data"), size("scales"));
            if q.zeros.is_some() {
                size("zeros");
            }
        }
        Layout::Mx => {
            let x = profiles::parse_mx(o).expect("parse agrees with check");
            assert_eq!(Some(x.elements), o.num_elements());
            assert!(x.block_size >= 2);
            let _ = (size("data"), size("scales"));
        }
        Layout::Gguf { .. } => {
            profiles::parse_gguf(o).expect("parse agrees with check");
        }
        Layout::File => {
            // An accepted file object is one u8 part of its shape's length,
            // at a path whose every component can be a file name.
            assert_eq!((o.parts.len(), &o.shape[..]), (1, &[size("data")][..]));
            let bad = |c: &str| c.is_empty() || c == "." || c == ".." || c.len() > 255;
            assert!(!o.name.split('/').any(bad), "{:?}", o.name);
        }
        // Only the Hurray reader makes these objects.
        Layout::Hurray | Layout::Torch | Layout::Unknown => {}
    }
}
