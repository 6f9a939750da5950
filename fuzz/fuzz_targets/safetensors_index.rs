//! `safetensors::index::parse_index` on raw bytes (a Hugging Face sharded
//! checkpoint's `model.safetensors.index.json`). Asserts that a rejection
//! names a `SafetensorsIndex*` rule; that an accepted index's file names
//! are distinct single path components, no more than `MAX_INDEX_FILES`,
//! every `weight_map` entry naming one of them; that `check_file` against
//! a header of no tensors answers without panicking; and that
//! `manifest.json` renders.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::format::safetensors::index::{
    check_file_name, check_len, index_text, parse_index, write_manifest, MAX_INDEX_FILES,
};
use ztfs::format::safetensors::read_header;

/// A valid safetensors file of no tensors: `{}` padded to 8 bytes.
const EMPTY: &[u8] = b"\x08\0\0\0\0\0\0\0{}      ";

fuzz_target!(|data: &[u8]| {
    let parsed = check_len(data.len() as u64)
        .and_then(|()| index_text(data.to_vec()))
        .and_then(|text| parse_index(&text).map(|i| (i, text)));
    let (index, text) = match parsed {
        Ok(ok) => ok,
        Err(e) => {
            let rule = e.rule().map(|r| r.name());
            assert!(rule.is_some_and(|r| r.starts_with("SafetensorsIndex")), "{e}");
            return;
        }
    };
    assert!(index.files.len() <= MAX_INDEX_FILES);
    let mut seen = std::collections::HashSet::new();
    for f in &index.files {
        check_file_name(f).expect("an accepted file name");
        assert!(seen.insert(f), "file {f:?} listed twice");
    }
    for (t, f) in &index.weight_map {
        assert!(*f < index.files.len());
        assert_eq!(index.file_of(t), Some(*f));
    }
    let empty = read_header(EMPTY).expect("a valid empty file");
    for i in 0..index.files.len().min(4) {
        // Every file is mapped at least one tensor, which {} lacks.
        assert!(index.check_file(i, &empty.tensors.iter().map(|t| t.name.as_str()).collect::<Vec<_>>()).is_err());
    }
    write_manifest(&text, &mut String::new()).expect("a valid index renders");
});
