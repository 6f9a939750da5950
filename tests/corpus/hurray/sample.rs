//! `samples/tiny-llama.hrry`: a small realistic model as a strict writer
//! lays it out, for the README's first mount. Two layers of a tiny
//! llama-shaped network, f32 norms and bf16 matrices, llama.cpp-style KV
//! metadata. Data comes from a fixed-seed LCG.

use super::super::builder::Lcg;
use super::super::{Case, Dir, Outcome};
use super::writer::{dense, tensor, File, Kv};
use super::{BF16, F32};

/// Hidden size, feed-forward size, vocabulary, layers.
const DIM: u64 = 16;
const FFN: u64 = 32;
const VOCAB: u64 = 32;
const LAYERS: u64 = 2;

pub fn case() -> Case {
    Case {
        name: "tiny-llama.hrry",
        dir: Dir::Samples,
        bytes: tiny_llama(),
        open: Outcome::Valid,
        verify: Outcome::Valid,
    }
}

fn tiny_llama() -> Vec<u8> {
    let mut rng = Lcg::new(0x4852_5259);
    let mut tensors = Vec::new();
    let mut add = |name: String, type_tag: u8, shape: &[u64]| {
        let width = if type_tag == F32 { 4 } else { 2 };
        let n = shape.iter().product::<u64>() as usize;
        let data: Vec<u8> = if type_tag == F32 {
            (0..n)
                .flat_map(|i| (1.0f32 + i as f32 / 64.0).to_le_bytes())
                .collect()
        } else {
            // bf16 in [-0.5, 0.5): a fixed exponent, random mantissa and sign.
            (0..n)
                .flat_map(|_| {
                    let r = rng.next_u32();
                    (((r & 0x8000) as u16) | 0x3E80 | ((r & 0x7F) as u16)).to_le_bytes()
                })
                .collect()
        };
        debug_assert_eq!(n * width, data.len());
        tensors.push(tensor(name, dense(type_tag, shape, data)));
    };
    add("token_embd.weight".into(), BF16, &[VOCAB, DIM]);
    for l in 0..LAYERS {
        let p = format!("blk.{l}");
        add(format!("{p}.attn_norm.weight"), F32, &[DIM]);
        for m in ["attn_q", "attn_k", "attn_v", "attn_output"] {
            add(format!("{p}.{m}.weight"), BF16, &[DIM, DIM]);
        }
        add(format!("{p}.ffn_norm.weight"), F32, &[DIM]);
        add(format!("{p}.ffn_gate.weight"), BF16, &[FFN, DIM]);
        add(format!("{p}.ffn_up.weight"), BF16, &[FFN, DIM]);
        add(format!("{p}.ffn_down.weight"), BF16, &[DIM, FFN]);
    }
    add("output_norm.weight".into(), F32, &[DIM]);
    add("output.weight".into(), BF16, &[VOCAB, DIM]);
    let kv = Kv::new()
        .string("general.architecture", "llama")
        .string("general.name", "tiny-llama")
        .u64("llama.block_count", LAYERS)
        .u64("llama.context_length", 128)
        .u64("llama.embedding_length", DIM)
        .u64("llama.feed_forward_length", FFN)
        .u64("llama.attention.head_count", 2)
        .f64("llama.rope.freq_base", 10000.0)
        .f64("llama.attention.layer_norm_rms_epsilon", 1e-5)
        .u64("tokenizer.vocab_size", VOCAB);
    File::new(tensors).kv(kv.encode()).bytes()
}
