//! Tests: the conformance vectors, pyhurray output, hand-built files with
//! one broken rule each, and random mutation.

use super::*;
use crate::error::Rule;

mod builder;
mod composites;
mod descriptor_rules;
mod mutation;
mod ranges;
mod rules;
mod sparse_paged;

fn data(path: &str) -> Vec<u8> {
    let p = format!("{}/tests/data/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Every pyhurray-written file, decompressed (they are mostly alignment
/// padding, so they are stored with zstd).
pub(super) fn pyhurray_files() -> Vec<(String, Vec<u8>)> {
    let dir = format!("{}/tests/data/hurray-pyhurray", env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".hrry.zst"))
        .map(|p| {
            let bytes = zstd::decode_all(&std::fs::read(&p).unwrap()[..]).unwrap();
            (p.file_name().unwrap().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    out.sort();
    out
}

/// pyhurray files that ztfs refuses on purpose, with the rule: a NumPy
/// bool array saved byte per element under the bit-packed bool tag would
/// be decoded into other values by any reader that follows the spec.
const PYHURRAY_REJECTED: &[(&str, Rule)] = &[("numpy_bool_rejected.hrry.zst", Rule::HurrayBuffer)];

#[test]
fn every_pyhurray_file_parses() {
    let files = pyhurray_files();
    assert!(files.len() >= 30, "{} files", files.len());
    let mut failed = Vec::new();
    for (name, bytes) in &files {
        let want = PYHURRAY_REJECTED
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, r)| r);
        let got = read_file(bytes).err();
        if got.as_ref().and_then(|e| e.rule()) != want {
            failed.push(format!("{name}: expected {want:?}, got {got:?}"));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// (file, shape, layout tag, buffer sizes) from the vectors' manifest.json.
const DESCRIPTOR_VECTORS: &[(&str, &[u64], u8, &[u64])] = &[
    ("row_major_f32_3x4", &[3, 4], 0x01, &[48]),
    ("row_major_int8_5", &[5], 0x01, &[5]),
    ("row_major_f16_2x2", &[2, 2], 0x01, &[8]),
    ("bool_packed_10", &[10], 0x01, &[2]),
    ("strided_f32_3x4", &[3, 4], 0x03, &[48]),
    ("morton_f32_4x4", &[4, 4], 0x05, &[64]),
    ("empty_f32_0x4", &[0, 4], 0x01, &[0]),
    ("sharded_f32_8x4", &[8, 4], 0x01, &[128]),
    ("csr_f32_3x3", &[3, 3], 0x07, &[8, 16, 32]),
    ("composite_head_partition", &[8, 8], 0x0B, &[]),
    (
        "quant_per_block_int4_128x128",
        &[128, 128],
        0x01,
        &[8192, 256],
    ),
];

#[test]
fn every_descriptor_vector_decodes_as_its_manifest_says() {
    for &(name, shape, layout, sizes) in DESCRIPTOR_VECTORS {
        let bytes = data(&format!("hurray-vectors/descriptors/{name}.bin"));
        let d = read_descriptor(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(d.shape, shape, "{name}");
        let tag = match d.layout {
            Layout::RowMajor => 0x01,
            Layout::Strided(_) => 0x03,
            Layout::Morton(_) => 0x05,
            Layout::Csr { .. } => 0x07,
            Layout::Composite(_) => 0x0B,
            _ => 0,
        };
        assert_eq!(tag, layout, "{name}");
        let got: Vec<u64> = d.buffers.iter().map(|b| b.size).collect();
        assert_eq!(got, sizes, "{name}");
    }
    let n = std::fs::read_dir(format!(
        "{}/tests/data/hurray-vectors/descriptors",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .count();
    assert_eq!(
        n,
        DESCRIPTOR_VECTORS.len(),
        "a vector without an expectation"
    );
}

#[test]
fn the_file_vector_parses_as_its_manifest_says() {
    let f = read_file(&data("hurray-vectors/files/basic.hrry")).unwrap();
    let names: Vec<&str> = f.tensors.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["weights", "bias"]);
    assert_eq!(f.tensors[0].descriptor.shape, [2, 2]);
    assert_eq!(f.tensors[0].descriptor.elem, ElemType::F32);
    assert_eq!(f.tensors[1].descriptor.elem, ElemType::I8);
    assert_eq!(f.tensors[1].descriptor.buffers[0].size, 3);
    assert_eq!(
        f.kv,
        [
            KvEntry {
                key: "producer".into(),
                value: KvValue::Str("hurray-conformance".into())
            },
            KvEntry {
                key: "tensor_count".into(),
                value: KvValue::I64(2)
            },
        ]
    );
}

#[test]
fn a_tensor_stays_small() {
    // A mount keeps every tensor: a million of them at this size each.
    let n = std::mem::size_of::<super::Tensor>();
    assert!(n <= 224, "Tensor is {n} bytes");
}
