//! `gguf::read_file` on whole files. Asserts that an accepted file's
//! tensors lie inside it, on the alignment, without overlapping, that its
//! objects, `manifest.json` and its transformers form are made without
//! panicking (a form names every tensor once or drops it, and each row
//! of an un-permuted tensor comes from one row of the file), and that a
//! rejection names a GGUF rule.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::format::gguf::transformers::{form, Change};
use ztfs::format::gguf::{json, objects, read_file};

fuzz_target!(|data: &[u8]| {
    match read_file(data) {
        Ok(f) => {
            let mut spans = Vec::new();
            for t in &f.tensors {
                assert_eq!(t.offset % f.alignment, 0, "tensor on the alignment");
                let end = t.start.checked_add(t.len).expect("tensor end fits u64");
                assert!(end <= data.len() as u64, "tensor inside the file");
                if t.len > 0 {
                    spans.push((t.start, end));
                }
            }
            spans.sort();
            assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "no overlap");
            assert_eq!(objects::objects(&f).len(), f.tensors.len());
            json::write_manifest(&f, &mut ztfs::format::json::Count::default());
            if let Ok(form) = form(&f) {
                assert_eq!(form.tensors.len(), f.tensors.len());
                for (t, info) in form.tensors.iter().zip(&f.tensors) {
                    let Some(t) = t else { continue };
                    let rows = info.dims.last().copied().unwrap_or(1);
                    if matches!(t.change, Change::Unpermute { .. }) && rows <= 4096 {
                        let mut seen = vec![false; rows as usize];
                        for r in 0..rows {
                            let s = t.change.source_row(r, rows) as usize;
                            assert!(s < seen.len() && !seen[s], "a permutation of the rows");
                            seen[s] = true;
                        }
                    }
                }
            }
        }
        Err(e) => assert!(
            e.rule().is_some_and(|r| r.name().starts_with("Gguf")),
            "{e}"
        ),
    }
});
