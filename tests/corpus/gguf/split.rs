//! Split GGUF models: `gguf/split/<case>/m-0000K-of-0000N.gguf`, a folder
//! per case holding the files of one model as llama.cpp's `gguf-split`
//! writes them (each a whole GGUF file with `split.no`, `split.count` and
//! `split.tensors.count`; the first with the model's other KVs). The first
//! file's row carries the case's outcome (the model opened from it); the
//! other files' rows are each file read alone (valid, with the note).
//!
//! A missing file is an I/O error (exit 2), which the table has no outcome
//! for: `tests/gguf_input.rs` and the interop suite make it.

use super::writer::{pattern, str_v, Gguf, V};
use super::{Case, Dir, Outcome};

fn u16_v(n: u16) -> V {
    V(2, n.to_le_bytes().to_vec())
}

fn i32_v(n: i32) -> V {
    V(5, n.to_le_bytes().to_vec())
}

/// File `no` (0-based) of `count` of a model of `total` tensors, holding
/// `tensors` (name, f32 count).
fn file(no: u16, count: u16, total: i32, tensors: &[(&str, usize)]) -> Gguf {
    let mut g = Gguf::new();
    if no == 0 {
        g = g
            .kv("general.architecture", str_v("llama"))
            .kv("general.name", str_v("corpus split"));
    }
    g = g
        .kv("split.no", u16_v(no))
        .kv("split.count", u16_v(count))
        .kv("split.tensors.count", i32_v(total));
    for (k, (name, n)) in tensors.iter().enumerate() {
        g = g.tensor(
            name,
            &[*n as u64],
            0,
            &pattern(4 * n, no as u8 * 10 + k as u8),
        );
    }
    g
}

/// The usual model: five f32 tensors in three files.
fn usual() -> [Gguf; 3] {
    [
        file(
            0,
            3,
            5,
            &[("token_embd.weight", 8), ("blk.0.attn_norm.weight", 4)],
        ),
        file(
            1,
            3,
            5,
            &[("blk.0.ffn_up.weight", 6), ("blk.1.attn_norm.weight", 4)],
        ),
        file(2, 3, 5, &[("output.weight", 3)]),
    ]
}

/// The case `folder`: its files, the first with `outcome`.
fn case(folder: &str, files: &[Gguf], outcome: Outcome) -> Vec<Case> {
    let n = files.len();
    (files.iter().enumerate())
        .map(|(k, g)| Case {
            name: Box::leak(format!("{folder}/m-{:05}-of-{n:05}.gguf", k + 1).into_boxed_str()),
            dir: Dir::GgufSplit,
            bytes: g.bytes(),
            open: if k == 0 { outcome } else { Outcome::Valid },
            verify: if k == 0 { outcome } else { Outcome::Valid },
        })
        .collect()
}

pub fn all() -> Vec<Case> {
    let split = Outcome::Reject("GgufSplit");
    let [a, b, c] = usual();
    let mut v = case("usual", &[a.clone(), b.clone(), c.clone()], Outcome::Valid);
    // Files 2 and 3 swapped: each one's split.no is not its name's.
    v.extend(case("swapped", &[a.clone(), c.clone(), b.clone()], split));
    // File 2 says the model has 4 files.
    let b4 = file(
        1,
        4,
        5,
        &[("blk.0.ffn_up.weight", 6), ("blk.1.attn_norm.weight", 4)],
    );
    v.extend(case("count", &[a.clone(), b4, c.clone()], split));
    // split.tensors.count 6 in every file, 5 tensors in all.
    let six = [
        file(
            0,
            3,
            6,
            &[("token_embd.weight", 8), ("blk.0.attn_norm.weight", 4)],
        ),
        file(
            1,
            3,
            6,
            &[("blk.0.ffn_up.weight", 6), ("blk.1.attn_norm.weight", 4)],
        ),
        file(2, 3, 6, &[("output.weight", 3)]),
    ];
    v.extend(case("total", &six, split));
    // A tensor in files 1 and 3.
    let again = file(2, 3, 5, &[("token_embd.weight", 3)]);
    v.extend(case("name-twice", &[a, b, again], split));
    v
}
