//! Writes a valid zTensor v2 file with many small dense objects, to measure
//! how fast a manifest validates:
//!
//!     cargo run --release --example gen_manifest -- N OUT.zt
//!
//! N objects named like a transformer's tensors
//! (`model.layers.{i}.mlp.up_proj.weight`, ...), each of shape [4] and
//! dtype f32 with an xxh3 digest, all aliasing a handful of 16-byte blobs so
//! the file stays small: almost all of it is the manifest. Every hundredth
//! object has a small attributes map. The manifest is deterministic CBOR
//! (RFC 8949 §4.2.1): map keys, object names included, are sorted by their
//! encoded bytes, which for text is shorter first, then bytewise.
//!
//! The CBOR writer is this file's own, so the benchmark does not depend on
//! the code it measures to produce its input.

use std::io::Write;

const MAGIC: [u8; 8] = [0x89, b'Z', b'T', b'2', 0x0d, 0x0a, 0x1a, 0x0a];
/// Alignment of every blob offset, in bytes (§2.4).
const ALIGN: usize = 4096;
/// Distinct blobs the objects share.
const BLOBS: usize = 8;
/// Tensors of one decoder layer, as in Llama-style checkpoints.
const LAYER: [&str; 9] = [
    "input_layernorm.weight",
    "mlp.down_proj.weight",
    "mlp.gate_proj.weight",
    "mlp.up_proj.weight",
    "post_attention_layernorm.weight",
    "self_attn.k_proj.weight",
    "self_attn.o_proj.weight",
    "self_attn.q_proj.weight",
    "self_attn.v_proj.weight",
];
const TOP: [&str; 3] = [
    "model.embed_tokens.weight",
    "model.norm.weight",
    "lm_head.weight",
];

/// A CBOR head in its shortest form, by the library's encoder.
fn head(out: &mut Vec<u8>, major: u8, arg: u64) {
    ztfs::format::cbor::encode_head(major, arg, out);
}

fn text(out: &mut Vec<u8>, s: &str) {
    head(out, 3, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn uint(out: &mut Vec<u8>, n: u64) {
    head(out, 0, n);
}

/// The `i`-th object name: the top-level tensors, then nine per layer.
fn name(i: usize) -> String {
    match TOP.get(i) {
        Some(n) => n.to_string(),
        None => {
            let j = i - TOP.len();
            format!(
                "model.layers.{}.{}",
                j / LAYER.len(),
                LAYER[j % LAYER.len()]
            )
        }
    }
}

/// Object `i`: `{"parts": {"data": {...}}, "shape": [4], "layout": "dense"}`
/// and, for every hundredth, `"attributes": {"layer": i}`, keys in
/// deterministic order (parts < shape < layout < attributes; blob < dtype <
/// digest).
fn object(out: &mut Vec<u8>, i: usize, blob: (u64, u64), digest: &str) {
    let attributes = i.is_multiple_of(100);
    head(out, 5, 3 + u64::from(attributes));
    text(out, "parts");
    head(out, 5, 1);
    text(out, "data");
    head(out, 5, 3);
    text(out, "blob");
    head(out, 4, 2);
    uint(out, blob.0);
    uint(out, blob.1);
    text(out, "dtype");
    text(out, "f32");
    text(out, "digest");
    text(out, digest);
    text(out, "shape");
    head(out, 4, 1);
    uint(out, 4);
    text(out, "layout");
    text(out, "dense");
    if attributes {
        text(out, "attributes");
        head(out, 5, 1);
        text(out, "layer");
        uint(out, i as u64);
    }
}

fn pad(out: &mut Vec<u8>) -> u64 {
    let at = out.len().div_ceil(ALIGN).max(1) * ALIGN;
    out.resize(at, 0);
    at as u64
}

pub fn build(n: usize) -> Vec<u8> {
    let mut file = MAGIC.to_vec();
    let mut blobs = Vec::new();
    for b in 0..BLOBS {
        let data: Vec<u8> = (0..4)
            .flat_map(|k| ((b * 4 + k) as f32).to_le_bytes())
            .collect();
        let digest = format!("xxh3:{:016x}", xxhash_rust::xxh3::xxh3_64(&data));
        blobs.push(((pad(&mut file), data.len() as u64), digest));
        file.extend_from_slice(&data);
    }
    let mut names: Vec<(String, usize)> = (0..n).map(|i| (name(i), i)).collect();
    names.sort_unstable_by(|a, b| a.0.len().cmp(&b.0.len()).then(a.0.cmp(&b.0)));
    let mut m = Vec::with_capacity(n * 150);
    head(&mut m, 5, 2);
    text(&mut m, "objects");
    head(&mut m, 5, n as u64);
    for (name, i) in &names {
        text(&mut m, name);
        let (blob, digest) = &blobs[i % BLOBS];
        object(&mut m, *i, *blob, digest);
    }
    text(&mut m, "attributes");
    head(&mut m, 5, 1);
    text(&mut m, "generator");
    text(&mut m, "examples/gen_manifest.rs");
    let at = pad(&mut file);
    file.extend_from_slice(&m);
    file.extend_from_slice(&at.to_le_bytes());
    file.extend_from_slice(&(m.len() as u64).to_le_bytes());
    file.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&m).to_le_bytes());
    file.extend_from_slice(&2u32.to_le_bytes());
    file.extend_from_slice(&0u32.to_le_bytes());
    file.extend_from_slice(&MAGIC);
    file
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(n), Some(out)) = (args.get(1).and_then(|n| n.parse().ok()), args.get(2)) else {
        eprintln!("usage: gen_manifest N OUT.zt");
        return std::process::ExitCode::from(2);
    };
    let file = build(n);
    let written = std::fs::File::create(out).and_then(|mut f| f.write_all(&file));
    if let Err(e) = written {
        eprintln!("gen_manifest: {out}: {e}");
        return std::process::ExitCode::from(2);
    }
    std::process::ExitCode::SUCCESS
}
