//! The GGUF corpus: `gguf/valid/*.gguf` and `gguf/reject/*.gguf`, built by
//! [`writer`], which shares no code with the reader. Rule names are those
//! of `src/error.rs` (`Rule::Gguf*`), reached in file order: header, KVs,
//! `general.alignment`, tensor infos, then the data section.

pub mod split;
pub mod writer;

use super::{Case, Dir, Outcome};
use writer::{array, pattern, str_v, string, u32_v, Gguf, V};

/// `name` with the `.gguf` extension the table and the file keep.
fn gguf(name: &str) -> &'static str {
    Box::leak(format!("{name}.gguf").into_boxed_str())
}

fn valid(name: &str, g: &Gguf) -> Case {
    Case {
        name: gguf(name),
        dir: Dir::GgufValid,
        bytes: g.bytes(),
        open: Outcome::Valid,
        verify: Outcome::Valid,
    }
}

fn reject(name: &str, rule: &'static str, bytes: Vec<u8>) -> Case {
    Case {
        name: gguf(name),
        dir: Dir::GgufReject,
        bytes,
        open: Outcome::Reject(rule),
        verify: Outcome::Reject(rule),
    }
}

/// A KV of every scalar type, strings, arrays (of strings, of floats, of
/// arrays), and a tensor of every unquantized type and a few block types.
fn basic() -> Gguf {
    let mut tokens = Vec::new();
    for t in ["<s>", "</s>", "é", ""] {
        tokens.extend(string(t.as_bytes()));
    }
    let scores: Vec<u8> = [0.5f32, -1.25, 3.0, 0.1]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let mut nested = 0u32.to_le_bytes().to_vec(); // inner: 2 uint8
    nested.extend_from_slice(&2u64.to_le_bytes());
    nested.extend_from_slice(&[1, 2]);
    nested.extend_from_slice(&8u32.to_le_bytes()); // inner: 1 string
    nested.extend_from_slice(&1u64.to_le_bytes());
    nested.extend(string(b"x"));
    Gguf::new()
        .kv("general.architecture", str_v("llama"))
        .kv("general.name", str_v("corpus basic"))
        .kv("x.u8", V(0, vec![200]))
        .kv("x.i8", V(1, vec![0x80]))
        .kv("x.u16", V(2, 65535u16.to_le_bytes().to_vec()))
        .kv("x.i16", V(3, (-2i16).to_le_bytes().to_vec()))
        .kv("x.u32", u32_v(4_000_000_000))
        .kv("x.i32", V(5, (-7i32).to_le_bytes().to_vec()))
        .kv("x.f32", V(6, 0.1f32.to_le_bytes().to_vec()))
        .kv("x.bool", V(7, vec![1]))
        .kv("x.u64", V(10, u64::MAX.to_le_bytes().to_vec()))
        .kv("x.i64", V(11, i64::MIN.to_le_bytes().to_vec()))
        .kv("x.f64", V(12, f64::NAN.to_le_bytes().to_vec()))
        .kv("tokenizer.ggml.tokens", array(8, 4, &tokens))
        .kv("tokenizer.ggml.scores", array(6, 4, &scores))
        .kv("x.nested", array(9, 2, &nested))
        .kv("x.empty", array(5, 0, &[]))
        .tensor("token_embd.weight", &[3, 2], 0, &pattern(24, 1))
        .tensor("f16", &[4], 1, &pattern(8, 2))
        .tensor("bf16", &[2, 2], 30, &pattern(8, 3))
        .tensor("f64", &[2], 28, &pattern(16, 4))
        .tensor("i8", &[5], 24, &pattern(5, 5))
        .tensor("i16", &[3], 25, &pattern(6, 6))
        .tensor("i32", &[1, 3], 26, &pattern(12, 7))
        .tensor("i64", &[1], 27, &pattern(8, 8))
        .tensor("scalar", &[], 0, &pattern(4, 9))
        .tensor("empty", &[4, 0], 0, &[])
        .tensor("blk.0.q8_0", &[32, 2], 8, &pattern(68, 10))
        .tensor("blk.0.q4_0", &[64], 2, &pattern(36, 11))
        .tensor("blk.0.q4_k", &[256], 12, &pattern(144, 12))
        .tensor("blk.0.tq2_0", &[256], 35, &pattern(66, 13))
        .tensor("a.b/c", &[2, 1, 1, 2], 0, &pattern(16, 14))
}

fn one_tensor() -> Gguf {
    Gguf::new().tensor("w", &[4], 0, &pattern(16, 1))
}

/// Every GGUF case.
pub fn all() -> Vec<Case> {
    let mut v = vec![
        valid("basic", &basic()),
        valid(
            "no-tensors",
            &Gguf::new().kv("general.architecture", str_v("x")),
        ),
        valid("empty", &Gguf::new()),
        valid(
            "split-file",
            &one_tensor().kv("split.count", V(2, 3u16.to_le_bytes().to_vec())),
        ),
        valid(
            "name-64-bytes",
            &Gguf::new().tensor(&"n".repeat(64), &[2], 0, &pattern(8, 1)),
        ),
        // The spec forbids an empty name nowhere; ggml and gguf-py read it.
        valid(
            "name-empty",
            &Gguf::new().tensor("", &[2], 0, &pattern(8, 1)),
        ),
        valid(
            "zero-length-shared-offset",
            &one_tensor()
                .info(b"e", &[0, 3], 0, 0)
                .info(b"f", &[0], 8, 0),
        ),
        // ggml requires offsets in order and packed; the spec does not.
        valid("decision-gap-between-tensors", &{
            let mut g = one_tensor().info(b"v", &[4], 0, 64);
            g.data.resize(64, 0);
            g.data.extend(pattern(16, 2));
            g
        }),
        valid("decision-offsets-out-of-order", &{
            let mut g = Gguf::new()
                .info(b"late", &[4], 0, 32)
                .info(b"early", &[4], 0, 0);
            g.data = pattern(48, 3);
            g
        }),
    ];
    let mut v2 = one_tensor();
    v2.version = 2;
    v.push(valid("version-2", &v2));
    let mut a64 = Gguf::new().kv("general.alignment", u32_v(64));
    a64.alignment = 64;
    let a64 = a64
        .tensor("a", &[3], 0, &pattern(12, 1))
        .tensor("b", &[32], 8, &pattern(34, 2));
    v.push(valid("alignment-64", &a64));
    v.extend(rejects());
    v.extend(split::all());
    v
}

fn with_version(version: u32) -> Vec<u8> {
    let mut g = one_tensor();
    g.version = version;
    g.bytes()
}

fn rejects() -> Vec<Case> {
    let one = one_tensor;
    let kv = |key: &str, v: V| one().kv(key, v).bytes();
    let mut huge_kv = Gguf::new();
    huge_kv.kv_count = 1 << 40;
    let mut huge_t = Gguf::new();
    huge_t.tensor_count = 1000;
    let mut nest = Vec::new();
    for _ in 0..8 {
        nest.extend_from_slice(&9u32.to_le_bytes());
        nest.extend_from_slice(&1u64.to_le_bytes());
    }
    nest.extend_from_slice(&0u32.to_le_bytes());
    nest.extend_from_slice(&0u64.to_le_bytes());
    // An f64 with 3 of its 8 bytes, at the end of the file.
    let mut truncated_kv = Gguf::new().kv("x", V(12, vec![0; 3])).bytes();
    truncated_kv.truncate(24 + 8 + 1 + 4 + 3);
    let data = |f: fn(Gguf) -> Gguf| f(one()).bytes();
    vec![
        reject(
            "header-truncated",
            "GgufMagic",
            b"GGUF\x03\0\0\0\0\0\0\0".to_vec(),
        ),
        reject("version-1", "GgufVersion", with_version(1)),
        reject("version-4", "GgufVersion", with_version(4)),
        reject(
            "version-big-endian",
            "GgufVersion",
            with_version(3u32.swap_bytes()),
        ),
        reject("count-kv-huge", "GgufCount", huge_kv.bytes()),
        reject("count-tensors-huge", "GgufCount", huge_t.bytes()),
        reject(
            "count-array-huge",
            "GgufCount",
            kv("a", array(8, 1_000_000, &[])),
        ),
        reject("kv-unknown-type", "GgufKv", kv("a", V(13, vec![0; 8]))),
        reject("kv-bool-2", "GgufKv", kv("a", V(7, vec![2]))),
        reject("kv-bool-array-2", "GgufKv", kv("a", array(7, 2, &[1, 2]))),
        reject("kv-key-empty", "GgufKv", kv("", V(10, vec![0; 8]))),
        reject(
            "kv-key-duplicate",
            "GgufKv",
            one().kv("a", V(0, vec![1])).kv("a", V(0, vec![2])).bytes(),
        ),
        reject(
            "kv-string-not-utf8",
            "GgufKv",
            kv("a", V(8, string(b"\xc3\x28"))),
        ),
        reject("kv-truncated", "GgufKv", truncated_kv),
        reject("kv-nested-too-deep", "GgufKv", kv("a", V(9, nest))),
        reject(
            "alignment-zero",
            "GgufAlignment",
            kv("general.alignment", u32_v(0)),
        ),
        reject(
            "alignment-48",
            "GgufAlignment",
            kv("general.alignment", u32_v(48)),
        ),
        reject(
            "alignment-4",
            "GgufAlignment",
            kv("general.alignment", u32_v(4)),
        ),
        reject(
            "alignment-uint64",
            "GgufAlignment",
            kv("general.alignment", V(10, 32u64.to_le_bytes().to_vec())),
        ),
        reject(
            "info-dims-5",
            "GgufTensorInfo",
            Gguf::new().info(b"t", &[1; 5], 0, 0).bytes(),
        ),
        reject(
            "info-unknown-type",
            "GgufTensorInfo",
            Gguf::new().info(b"t", &[1], 99, 0).bytes(),
        ),
        reject(
            "info-removed-type",
            "GgufTensorInfo",
            Gguf::new().info(b"t", &[32], 4, 0).bytes(),
        ),
        reject(
            "info-row-not-whole-blocks",
            "GgufTensorInfo",
            Gguf::new().info(b"t", &[16, 2], 8, 0).bytes(),
        ),
        reject(
            "info-name-65-bytes",
            "GgufTensorInfo",
            Gguf::new().info(&[b'n'; 65], &[1], 0, 0).bytes(),
        ),
        reject(
            "info-name-nul",
            "GgufTensorInfo",
            Gguf::new().info(b"a\0b", &[1], 0, 0).bytes(),
        ),
        reject(
            "info-name-not-utf8",
            "GgufTensorInfo",
            Gguf::new().info(b"\xff", &[1], 0, 0).bytes(),
        ),
        reject(
            "info-dim-negative",
            "GgufTensorInfo",
            Gguf::new().info(b"t", &[u64::MAX], 0, 0).bytes(),
        ),
        reject(
            "info-element-count-overflow",
            "GgufTensorInfo",
            Gguf::new().info(b"t", &[1 << 32, 1 << 31], 0, 0).bytes(),
        ),
        reject(
            "data-misaligned",
            "GgufData",
            data(|g| g.info(b"v", &[1], 0, 8)),
        ),
        reject(
            "data-past-end",
            "GgufData",
            data(|g| g.info(b"v", &[8], 0, 32)),
        ),
        reject(
            "data-overlap",
            "GgufData",
            data(|g| g.info(b"v", &[2], 0, 0)),
        ),
        reject(
            "info-name-duplicate",
            "GgufTensorInfo",
            data(|g| g.info(b"w", &[0], 0, 0)),
        ),
        reject(
            "data-offset-overflow",
            "GgufData",
            data(|g| g.info(b"v", &[1], 0, u64::MAX - 31)),
        ),
    ]
}
