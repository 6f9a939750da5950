//! `safetensors::read_header` on whole files. Asserts that a rejection
//! names a `Safetensors*` rule, and that an accepted file's tensors lie in
//! the byte buffer back to back, each as long as its shape and dtype say,
//! covering it exactly; and that what the commands derive from it (the
//! objects, `manifest.json`) is made without panicking, `manifest.json`
//! written from the text as the tree of the header renders it.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::format::safetensors::json::Json;
use ztfs::format::safetensors::{objects, read_header, write_manifest};

fuzz_target!(|data: &[u8]| {
    match read_header(data) {
        Ok(h) => {
            let start = h.data_start();
            let mut spans: Vec<(u64, u64)> = h.tensors.iter().map(|t| (t.start, t.end)).collect();
            spans.sort_unstable();
            let mut next = 0;
            for &(s, e) in &spans {
                assert_eq!(s, next, "contiguous");
                next = e;
            }
            assert_eq!(start + next, data.len() as u64, "covers the file");
            for t in &h.tensors {
                let n: u64 = t.shape.iter().product();
                assert_eq!(n * t.dtype.bits(), (t.end - t.start) * 8, "size");
            }
            let objs = objects::objects(&h);
            assert_eq!(objs.len(), h.tensors.len());
            let text = std::str::from_utf8(&data[8..start as usize]).expect("UTF-8 header");
            let mut written = String::new();
            write_manifest(text, &mut written).expect("a valid header renders");
            let mut whole = String::new();
            let tree = Json::parse(text).expect("a valid header parses");
            ztfs::format::json::to_json_pretty(&tree.to_value(), &mut whole);
            whole.push('\n');
            assert_eq!(written, whole, "written as the tree renders");
        }
        Err(e) => assert!(
            e.rule()
                .is_some_and(|r| r.name().starts_with("Safetensors")),
            "{e}"
        ),
    }
});
