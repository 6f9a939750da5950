//! A PyTorch checkpoint as JSON, for `manifest.json`: the archive's top
//! folder, each tensor as the pickle describes it (dtype as torch names
//! it in safetensors' spelling, size, stride, storage and offset in
//! elements), each storage's place in the file (and, for a sharded
//! checkpoint, which file), and how many values of the pickled object are
//! not tensors.

use super::{File, Tensor};
use crate::format::cbor::Value as J;
use crate::format::json::{to_json_pretty, Sink};

fn map<'a>(entries: Vec<(&'a str, J<'a>)>) -> J<'a> {
    J::Map(entries.into_iter().map(|(k, v)| (J::Text(k), v)).collect())
}

fn uints<'a>(v: &[u64]) -> J<'a> {
    J::Array(v.iter().map(|&n| J::Uint(n)).collect())
}

/// Tensor `t`'s entry (also its `meta.json`'s `torch`).
pub fn tensor<'a>(file: &'a File, t: &'a Tensor) -> J<'a> {
    let s = &file.storages[t.storage];
    let mut entries = vec![
        ("dtype", J::Text(t.dtype.name())),
        ("shape", uints(&t.shape)),
        ("stride", uints(&t.stride)),
        ("storage", J::Text(&s.key)),
        ("storage_offset", J::Uint(t.offset)),
        ("contiguous", J::Bool(t.contiguous())),
    ];
    // Torch's math bits, where set: the values served are the stored ones
    // negated or conjugated, as torch.load gives them.
    if t.neg {
        entries.push(("neg", J::Bool(true)));
    }
    if t.conj {
        entries.push(("conj", J::Bool(true)));
    }
    if let Some(name) = file.files.get(s.file) {
        entries.push(("file", J::Text(name)));
    }
    map(entries)
}

/// The document `manifest.json` holds.
pub fn document(file: &File) -> J<'_> {
    let tensors = (file.tensors.iter()).map(|t| (J::Text(t.name.as_str()), tensor(file, t)));
    let storages = file.storages.iter().map(|s| {
        let entry = map(vec![
            ("offset", J::Uint(s.offset)),
            ("length", J::Uint(s.len)),
        ]);
        (J::Text(s.key.as_str()), entry)
    });
    map(vec![
        ("format", J::Text("pytorch")),
        ("archive", J::Text(&file.archive)),
        ("tensors", J::Map(tensors.collect())),
        ("storages", J::Map(storages.collect())),
        ("other_values", J::Uint(file.other_values as u64)),
    ])
}

/// Writes `manifest.json`, with a final newline.
pub fn write_manifest(file: &File, out: &mut dyn Sink) {
    to_json_pretty(&document(file), out);
    out.push('\n');
}
