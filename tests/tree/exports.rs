//! The exported files of a tree without a kernel: what `model.safetensors`
//! keeps of its source.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use ztfs::model::Model;
use ztfs::tree::{Options, Tree};

use crate::{read_all, walk};

/// `model.safetensors`' `__metadata__` as the safetensors crate reads it.
fn exported_metadata(source: &Path) -> HashMap<String, String> {
    let tree = Arc::new(Tree::build(Model::open(source).unwrap(), Options::default()).unwrap());
    let ino = walk(&tree)["/model.safetensors"];
    let bytes = read_all(&tree, ino, 1 << 20);
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).expect("safetensors reads it");
    meta.metadata().clone().unwrap_or_default()
}

/// A safetensors source's `__metadata__` comes back pair for pair
/// (`format` included), beside ztfs's own `ztfs.` keys.
#[test]
fn model_safetensors_keeps_a_safetensors_sources_metadata() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/safetensors/valid");
    let file = root.join("metadata.safetensors");
    let bytes = std::fs::read(&file).unwrap();
    let (_, want) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let want = want.metadata().clone().expect("the sample has metadata");
    assert!(want.len() >= 3, "{want:?}");
    let got = exported_metadata(&file);
    for (k, v) in &want {
        assert_eq!(got.get(k), Some(v), "{k} in {got:?}");
    }
    let ours: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).collect();
    assert!(ours.iter().all(|k| k.starts_with("ztfs.")), "{ours:?}");
}

/// With no `format` in the source, `pt` (what transformers asks for).
#[test]
fn model_safetensors_says_format_pt_when_the_source_does_not() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/samples/tiny-llama.zt");
    assert_eq!(exported_metadata(&file)["format"], "pt");
}
