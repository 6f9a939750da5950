//! A GGUF's transformers form in the tree, without a kernel: with
//! `--dequantize`, `config.json` at the root and `model.safetensors` under
//! the model's parameter names, llama's q rows un-permuted and Gemma's
//! norms less one, byte for byte; the whole form given up when a tensor the
//! model needs cannot be in `model.safetensors`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use ztfs::decode::dequant::narrow::Float;
use ztfs::model::Model;
use ztfs::tree::{Options, Tree};

use crate::writer::{str_v, u32_v, Gguf};
use crate::{read_all, walk};

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The tree of GGUF `g` with `--dequantize f32`: its files and the
/// tensors of its `model.safetensors` (name → bytes).
fn mount(g: &Gguf, dir: &Path) -> (Arc<Tree>, HashMap<String, Vec<u8>>) {
    let file = dir.join("m.gguf");
    std::fs::write(&file, g.bytes()).unwrap();
    let opts = Options {
        dequantize: Some(Float::F32),
        ..Options::default()
    };
    let tree = Arc::new(Tree::build(Model::open(&file).unwrap(), opts).unwrap());
    let ino = walk(&tree)["/model.safetensors"];
    let bytes = read_all(&tree, ino, 7);
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let tensors = (st.tensors().into_iter())
        .map(|(n, v)| (n, v.data().to_vec()))
        .collect();
    (tree, tensors)
}

fn llama() -> Gguf {
    Gguf::new()
        .kv("general.architecture", str_v("llama"))
        .kv("llama.block_count", u32_v(1))
        .kv("llama.attention.head_count", u32_v(2))
        .kv("llama.attention.head_count_kv", u32_v(1))
}

#[test]
fn llama_q_rows_are_unpermuted_and_the_config_is_served() {
    // 8 rows of 2: for 2 heads, rows (h, d, t) of the file, d < 2.
    let q: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let g = llama()
        .tensor("blk.0.attn_q.weight", &[2, 8], 0, &f32s(&q))
        .tensor("rope_freqs.weight", &[2], 0, &f32s(&[1.0, 2.0]));
    let d = tempfile::tempdir().unwrap();
    let (tree, tensors) = mount(&g, d.path());
    let files = walk(&tree);
    let config = read_all(&tree, files["/config.json"], 5);
    let config = String::from_utf8(config).unwrap();
    assert!(config.contains("\"num_attention_heads\": 2"), "{config}");
    // Model row (h, t, d) is file row (h, d, t): rows 0 2 1 3 | 4 6 5 7.
    let want: Vec<f32> = [0, 2, 1, 3, 4, 6, 5, 7]
        .iter()
        .flat_map(|&r| [q[2 * r], q[2 * r + 1]])
        .collect();
    let got = &tensors["model.layers.0.self_attn.q_proj.weight"];
    assert_eq!(got, &f32s(&want));
    assert_eq!(
        tensors.len(),
        1,
        "rope_freqs is dropped: {:?}",
        tensors.keys()
    );
    // The tensor's directory keeps the file's name and bytes.
    assert_eq!(
        read_all(&tree, files["/blk.0.attn_q.weight/data"], 3),
        f32s(&q)
    );
}

#[test]
fn gemma_norms_are_less_one() {
    let g = Gguf::new()
        .kv("general.architecture", str_v("gemma3"))
        .kv("gemma3.block_count", u32_v(1))
        .tensor("blk.0.attn_norm.weight", &[3], 0, &f32s(&[1.5, 1.0, 0.25]));
    let d = tempfile::tempdir().unwrap();
    let (_, tensors) = mount(&g, d.path());
    let got = &tensors["model.layers.0.input_layernorm.weight"];
    assert_eq!(got, &f32s(&[0.5, 0.0, -0.75]));
}

/// A tensor the model has a parameter for, of a type ztfs has no values
/// for (Q1_0), would leave that parameter as initialised: no form at all.
#[test]
fn a_tensor_the_model_needs_without_values_gives_up_the_form() {
    let g = llama().tensor("blk.0.attn_v.weight", &[128, 1], 41, &[0; 18]);
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("m.gguf");
    std::fs::write(&file, g.bytes()).unwrap();
    let opts = Options {
        dequantize: Some(Float::F32),
        ..Options::default()
    };
    let tree = Arc::new(Tree::build(Model::open(&file).unwrap(), opts).unwrap());
    assert!(!walk(&tree).contains_key("/config.json"));
}
