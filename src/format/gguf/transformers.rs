//! A GGUF as transformers loads it: the config and the state dict that
//! `from_pretrained(dir, gguf_file=...)` builds from the file (transformers
//! 5.25's GGUF loader: `load_gguf_checkpoint`, its `GGUF_CONFIG_MAPPING`
//! and `TENSOR_PROCESSORS`), for the architectures whose names and value
//! changes this module knows: llama, qwen2, qwen3, gemma2 and gemma3. A mount's `config.json` and
//! `model.safetensors` made from it are a folder `from_pretrained` loads
//! as the same model (`ztfs mount --dequantize`, docs/gguf.md).
//!
//! What it follows of that loader, each in one place below:
//! * the config (`config`): the file's keys that transformers maps, renamed
//!   as it renames them, valued as it parses them (a one-element array is
//!   its element), `tie_word_embeddings` when there is no `output.weight`,
//!   `vocab_size` from the tokenizer's token count when the file has none,
//!   `gemma3` as `gemma3_text`;
//! * the names (`hf_name`): gguf-py's tensor names mapped back to the
//!   parameters the model class has (a tensor of a parameter it lacks, a
//!   layer past `block_count` or a bias it has none of, is dropped, as the
//!   loader drops it);
//! * the values ([`Change`]): llama's q and k weights un-permuted, Gemma's
//!   norms less one.
//!
//! A file it cannot describe so has no form, and says why: another
//! architecture, and what the loader itself fails on (a nested array, a
//! head count that does not divide the rows, a llama named exactly
//! `mistral`, which it renames to an architecture gguf-py has no tensor
//! names for).

use super::{File, Items, Value, ValueType};
use crate::format::json::push_string;

/// How a tensor's values differ in transformers' state dict from the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// As stored.
    Same,
    /// Rows reordered: llama.cpp interleaves the two rotary halves of
    /// each of `heads` heads, so row `(h, d, t)` of the file (`d` below
    /// half the head's rows, `t` 0 or 1) is row `(h, t, d)` of the model.
    Unpermute {
        /// The heads the rows are split into.
        heads: u64,
    },
    /// Each value less one: llama.cpp stores Gemma's RMS norm weights as
    /// `1 + w`.
    LessOne,
}

impl Change {
    /// The file's row that row `row` of the model is, of `rows` rows.
    pub fn source_row(self, row: u64, rows: u64) -> u64 {
        match self {
            Change::Unpermute { heads } => {
                let half = rows / heads.max(1) / 2;
                if half == 0 {
                    return row;
                }
                let (h, r) = (row / (2 * half), row % (2 * half));
                h * 2 * half + (r % half) * 2 + r / half
            }
            Change::Same | Change::LessOne => row,
        }
    }
}

/// One tensor of the state dict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    /// Its name in the state dict.
    pub name: String,
    /// How its values differ from the file's.
    pub change: Change,
}

/// A GGUF as transformers loads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// `config.json`: the config dict the loader builds.
    pub config: String,
    /// Per tensor of the file (in its order): its place in the state dict,
    /// or `None` where the loader drops it.
    pub tensors: Vec<Option<Tensor>>,
}

/// The architectures this module maps (as `general.architecture` names them).
pub const ARCHITECTURES: [&str; 5] = ["llama", "qwen2", "qwen3", "gemma2", "gemma3"];

/// A config value as Python holds it after the loader's parse.
#[derive(Debug, Clone, PartialEq)]
enum Py {
    Int(i128),
    Float(f64),
    Bool(bool),
    Str(String),
    List(Vec<Py>),
}

/// The form of `file`, or why it has none.
pub fn form(file: &File) -> Result<Form, String> {
    let arch = match file.get("general.architecture") {
        Some(Value::String(s)) => s.to_string(),
        Some(_) => return Err("general.architecture is not a string".into()),
        None => return Err("the file has no general.architecture".into()),
    };
    if !ARCHITECTURES.contains(&arch.as_str()) {
        return Err(format!(
            "architecture {arch:?} is not one ztfs maps to transformers' names ({})",
            ARCHITECTURES.join(", ")
        ));
    }
    if let Some(kv) = (file.kv.iter())
        .find(|kv| matches!(&kv.value, Value::Array(a) if a.elem == ValueType::Array))
    {
        return Err(format!(
            "{:?} is an array of arrays, which transformers' GGUF loader cannot parse",
            kv.key
        ));
    }
    let config = config(file, &arch)?;
    let int = |key: &str| config.iter().find(|e| e.0 == key).map(|e| &e.1);
    let layers = match int("num_hidden_layers") {
        Some(Py::Int(n)) => *n,
        _ => return Err("the file gives no block count".into()),
    };
    // The loader un-permutes only when the file gives both counts.
    let count = |n: &i128| u64::try_from(*n).ok().filter(|&n| n > 0);
    let heads = match (int("num_attention_heads"), int("num_key_value_heads")) {
        (None, _) | (_, None) => None,
        (Some(Py::Int(q)), Some(Py::Int(k))) => match (count(q), count(k)) {
            (Some(q), Some(k)) => Some((q, k)),
            _ => return Err(format!("head counts {q} and {k} do not divide rows")),
        },
        _ => return Err("a head count is not one integer".into()),
    };
    let mut tensors = Vec::with_capacity(file.tensors.len());
    for t in &file.tensors {
        let Some(name) = hf_name(&arch, &t.name, layers) else {
            tensors.push(None);
            continue;
        };
        let change = change(&arch, &t.name, heads);
        if let Change::Unpermute { heads } = change {
            let rows = t.dims.last().copied().unwrap_or(1);
            // A head count past half of u64 splits no rows (nor numpy's).
            if heads.checked_mul(2).is_none_or(|halves| rows % halves != 0) {
                return Err(format!(
                    "{:?}: its {rows} rows do not split into {heads} heads of two halves",
                    t.name
                ));
            }
        }
        tensors.push(Some(Tensor { name, change }));
    }
    Ok(Form {
        config: render(&config),
        tensors,
    })
}

/// The change the loader's tensor processor makes to tensor `name`.
fn change(arch: &str, name: &str, heads: Option<(u64, u64)>) -> Change {
    match (arch, heads) {
        ("llama", Some((q, _))) if name.contains(".attn_q.") => Change::Unpermute { heads: q },
        ("llama", Some((_, k))) if name.contains(".attn_k.") => Change::Unpermute { heads: k },
        ("gemma2" | "gemma3", _) if name.contains("norm.weight") => Change::LessOne,
        _ => Change::Same,
    }
}

/// The state dict's name of tensor `name` in a model of `layers` layers,
/// or `None` when the model has no such parameter.
fn hf_name(arch: &str, name: &str, layers: i128) -> Option<String> {
    let (base, suffix) = match name.rsplit_once('.') {
        Some((b, s @ ("weight" | "bias"))) => (b, s),
        _ => return None,
    };
    let gemma = arch.starts_with("gemma");
    let qk_norm = arch == "qwen3" || arch == "gemma3";
    let mapped = match base {
        "token_embd" => "model.embed_tokens".to_string(),
        "output_norm" => "model.norm".to_string(),
        "output" => "lm_head".to_string(),
        _ => {
            let rest = base.strip_prefix("blk.")?;
            let (n, leaf) = rest.split_once('.')?;
            let layer: i128 = n.parse().ok().filter(|l| *l < layers)?;
            if layer.to_string() != n {
                return None;
            }
            let leaf = match leaf {
                "attn_norm" => "input_layernorm",
                "attn_q" => "self_attn.q_proj",
                "attn_k" => "self_attn.k_proj",
                "attn_v" => "self_attn.v_proj",
                "attn_output" => "self_attn.o_proj",
                "attn_q_norm" if qk_norm => "self_attn.q_norm",
                "attn_k_norm" if qk_norm => "self_attn.k_norm",
                "ffn_norm" if gemma => "pre_feedforward_layernorm",
                "ffn_norm" => "post_attention_layernorm",
                "post_attention_norm" if gemma => "post_attention_layernorm",
                "post_ffw_norm" if gemma => "post_feedforward_layernorm",
                "ffn_gate" => "mlp.gate_proj",
                "ffn_up" => "mlp.up_proj",
                "ffn_down" => "mlp.down_proj",
                _ => return None,
            };
            format!("model.layers.{layer}.{leaf}")
        }
    };
    // Only qwen2 has biases, on q, k and v (its config has no switch).
    let biased = arch == "qwen2"
        && [".q_proj", ".k_proj", ".v_proj"]
            .iter()
            .any(|p| mapped.ends_with(p));
    if suffix == "bias" && !biased {
        return None;
    }
    Some(format!("{mapped}.{suffix}"))
}

/// The config keys of `<arch>.<key>` as `GGUF_CONFIG_MAPPING` renames
/// them (`None`: read, and not kept).
fn arch_key(arch: &str, key: &str) -> Option<Option<&'static str>> {
    let gemma = arch == "gemma2" || arch == "gemma3";
    Some(Some(match key {
        "context_length" => "max_position_embeddings",
        "block_count" => "num_hidden_layers",
        "feed_forward_length" => "intermediate_size",
        "embedding_length" => "hidden_size",
        "rope.dimension_count" if arch == "llama" => "head_dim",
        "rope.dimension_count" => return Some(None),
        "rope.freq_base" => "rope_theta",
        "attention.key_length" if gemma => "head_dim",
        "attention.head_count" => "num_attention_heads",
        "attention.head_count_kv" => "num_key_value_heads",
        "attention.layer_norm_rms_epsilon" => "rms_norm_eps",
        "attention.sliding_window" if gemma => "sliding_window",
        "vocab_size" => "vocab_size",
        _ => return None,
    }))
}

/// The config key of file key `key`.
fn config_key(arch: &str, key: &str) -> Option<&'static str> {
    let (prefix, rest) = key.split_once('.').unwrap_or((key, ""));
    match (prefix, rest) {
        ("general", "architecture") => Some("model_type"),
        ("general", "name") => Some("_model_name_or_path"),
        ("tokenizer", "ggml.bos_token_id") => Some("bos_token_id"),
        ("tokenizer", "ggml.eos_token_id") => Some("eos_token_id"),
        ("tokenizer", "ggml.unknown_token_id") => Some("unk_token_id"),
        ("tokenizer", "ggml.padding_token_id") => Some("pad_token_id"),
        (p, k) if p == arch => arch_key(arch, k).flatten(),
        _ => None,
    }
}

/// The config dict, in the order the loader fills it.
fn config(file: &File, arch: &str) -> Result<Vec<(&'static str, Py)>, String> {
    // `"mistral" in model_name`: a list holding exactly that string.
    let mistral = match file.get("general.name") {
        Some(v) => parse(v)?.iter().any(|n| *n == Py::Str("mistral".into())),
        None => false,
    };
    // The loader renames such a llama "mistral", then fails: gguf-py has no
    // architecture of that name to map its tensors with.
    if arch == "llama" && mistral {
        return Err("transformers' GGUF loader fails on a llama file named \"mistral\" (gguf-py has no mistral tensor names)".into());
    }
    let mut config: Vec<(&'static str, Py)> = Vec::new();
    let mut set = |key: &'static str, value: Py| match config.iter_mut().find(|e| e.0 == key) {
        Some(e) => e.1 = value,
        None => config.push((key, value)),
    };
    let tied = file.tensors.iter().all(|t| &*t.name != "output.weight");
    set("tie_word_embeddings", Py::Bool(tied));
    let mut tokens = None;
    for kv in &file.kv {
        let key = &*kv.key;
        if key == "tokenizer.ggml.tokens" {
            tokens = Some(python_len(&one_or_list(parse(&kv.value)?)));
        }
        if let Some(target) = config_key(arch, key) {
            set(target, one_or_list(parse(&kv.value)?));
        }
    }
    let has = |c: &[(&str, Py)], k: &str| c.iter().any(|e| e.0 == k);
    if !has(&config, "vocab_size") {
        if let Some(n) = tokens {
            config.push(("vocab_size", Py::Int(n)));
        }
    }
    for e in config.iter_mut().filter(|e| e.0 == "model_type") {
        if e.1 == Py::Str("gemma3".into()) {
            e.1 = Py::Str("gemma3_text".into());
        }
    }
    Ok(config)
}

/// `len()` of a parsed value: a list's items, a string's characters.
fn python_len(v: &Py) -> i128 {
    match v {
        Py::List(l) => l.len() as i128,
        Py::Str(s) => s.chars().count() as i128,
        _ => 1,
    }
}

/// The loader's `value[0] if len(value) == 1 else value`.
fn one_or_list(mut items: Vec<Py>) -> Py {
    match items.len() {
        1 => items.remove(0),
        _ => Py::List(items),
    }
}

/// A value as the loader's `_gguf_parse_value` gives it, one item per
/// element (a scalar or string is one item).
fn parse(v: &Value) -> Result<Vec<Py>, String> {
    match v {
        Value::Scalar(t, b) => Ok(vec![scalar(*t, b)?]),
        Value::String(s) => Ok(vec![Py::Str(s.to_string())]),
        Value::Array(a) => match &a.items {
            Items::Scalars(bytes) => {
                let w = a.elem.width().ok_or("an array of unknown width")? as usize;
                bytes.chunks_exact(w).map(|c| scalar(a.elem, c)).collect()
            }
            Items::Strings { .. } => Ok((0..a.len as usize)
                .filter_map(|i| a.string(i))
                .map(|s| Py::Str(s.to_string()))
                .collect()),
            Items::Arrays(_) => Err("an array of arrays".into()),
        },
    }
}

fn scalar(t: ValueType, b: &[u8]) -> Result<Py, String> {
    let mut a = [0u8; 8];
    let n = b.len().min(8);
    a[..n].copy_from_slice(&b[..n]);
    Ok(match t {
        ValueType::F32 => Py::Float(f64::from(f32::from_le_bytes([a[0], a[1], a[2], a[3]]))),
        ValueType::F64 => Py::Float(f64::from_le_bytes(a)),
        ValueType::Bool => Py::Bool(a[0] != 0),
        t => Py::Int(super::scalar_int(t, &a).ok_or("a value of no scalar type")?),
    })
}

/// The config as JSON text (Python's `json` reads `NaN` and `Infinity`).
fn render(config: &[(&str, Py)]) -> String {
    let mut s = String::from("{\n");
    for (i, (k, v)) in config.iter().enumerate() {
        s.push_str("  ");
        push_string(&mut s, k);
        s.push_str(": ");
        push_py(&mut s, v);
        s.push_str(if i + 1 < config.len() { ",\n" } else { "\n" });
    }
    s.push_str("}\n");
    s
}

fn push_py(s: &mut String, v: &Py) {
    match v {
        Py::Int(n) => s.push_str(&n.to_string()),
        Py::Float(x) if x.is_nan() => s.push_str("NaN"),
        Py::Float(x) if x.is_infinite() => {
            s.push_str(if *x > 0.0 { "Infinity" } else { "-Infinity" })
        }
        // Shortest digits that read back as the same double, as Python's repr.
        Py::Float(x) => s.push_str(&format!("{x:?}")),
        Py::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
        Py::Str(t) => push_string(s, t),
        Py::List(items) => {
            s.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                push_py(s, item);
            }
            s.push(']');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::gguf::read_file;
    use crate::format::gguf::tests::{string, Builder};

    fn text(s: &str) -> Vec<u8> {
        let mut v = Vec::new();
        string(&mut v, s.as_bytes());
        v
    }

    /// A two-layer llama of 4 heads (2 for k), without data that matters.
    fn llama(name: &str) -> Builder {
        let f32s = |n: u64| vec![0u8; n as usize * 4];
        Builder::new()
            .kv("general.architecture", 8, &text("llama"))
            .kv("general.name", 8, &text(name))
            .kv("llama.block_count", 4, &2u32.to_le_bytes())
            .kv("llama.attention.head_count", 4, &4u32.to_le_bytes())
            .kv("llama.attention.head_count_kv", 4, &2u32.to_le_bytes())
            .kv(
                "llama.attention.layer_norm_rms_epsilon",
                6,
                &1e-6f32.to_le_bytes(),
            )
            .kv("llama.rope.dimension_count", 4, &4u32.to_le_bytes())
            .tensor("token_embd.weight", &[16, 8], 0, &f32s(128))
            .tensor("blk.0.attn_q.weight", &[16, 16], 0, &f32s(256))
            .tensor("blk.0.attn_k.weight", &[16, 8], 0, &f32s(128))
            .tensor("blk.0.attn_q.bias", &[16], 0, &f32s(16))
            .tensor("blk.2.attn_q.weight", &[16, 16], 0, &f32s(256))
            .tensor("blk.01.ffn_up.weight", &[16, 16], 0, &f32s(256))
            .tensor("rope_freqs.weight", &[2], 0, &f32s(2))
    }

    #[test]
    fn llama_names_changes_and_config() {
        let f = form(&read_file(&llama("tiny").bytes()).unwrap()).unwrap();
        let names: Vec<Option<(&str, Change)>> = (f.tensors.iter())
            .map(|t| t.as_ref().map(|t| (t.name.as_str(), t.change)))
            .collect();
        let q = Change::Unpermute { heads: 4 };
        assert_eq!(
            names,
            [
                Some(("model.embed_tokens.weight", Change::Same)),
                Some(("model.layers.0.self_attn.q_proj.weight", q)),
                Some((
                    "model.layers.0.self_attn.k_proj.weight",
                    Change::Unpermute { heads: 2 }
                )),
                None, // llama has no biases
                None, // past block_count
                None, // not a name gguf-py writes
                None, // no parameter
            ]
        );
        let c = &f.config;
        assert!(c.contains("\"model_type\": \"llama\""), "{c}");
        assert!(c.contains("\"tie_word_embeddings\": true"), "{c}");
        assert!(c.contains("\"rms_norm_eps\": 9.999999974752427e-7"), "{c}");
        assert!(c.contains("\"head_dim\": 4"), "{c}");
        assert!(c.contains("\"num_key_value_heads\": 2"), "{c}");
    }

    /// The loader renames a llama named "mistral", then fails on it.
    #[test]
    fn a_llama_named_mistral_has_no_form() {
        let file = read_file(&llama("mistral").bytes()).unwrap();
        assert!(form(&file).unwrap_err().contains("mistral"));
        let file = read_file(&llama("Mistral 7B").bytes()).unwrap();
        assert!(form(&file).is_ok());
    }

    #[test]
    fn rows_that_do_not_split_into_heads_have_no_form() {
        let b = llama("tiny").tensor("blk.1.attn_k.weight", &[16, 6], 0, &[0; 384]);
        assert!(form(&read_file(&b.bytes()).unwrap())
            .unwrap_err()
            .contains("heads"));
    }

    /// A head count from a 64-bit key, too large to double, splits no
    /// rows: no form, no overflow.
    #[test]
    fn a_head_count_past_half_of_u64_has_no_form() {
        let f32s = vec![0u8; 256 * 4];
        let b = Builder::new()
            .kv("general.architecture", 8, &text("llama"))
            .kv("llama.block_count", 4, &1u32.to_le_bytes())
            .kv("llama.attention.head_count", 10, &u64::MAX.to_le_bytes())
            .kv("llama.attention.head_count_kv", 4, &2u32.to_le_bytes())
            .tensor("blk.0.attn_q.weight", &[16, 16], 0, &f32s);
        assert!(form(&read_file(&b.bytes()).unwrap())
            .unwrap_err()
            .contains("heads"));
    }

    #[test]
    fn an_array_of_arrays_has_no_form() {
        let mut inner = Vec::new();
        inner.extend_from_slice(&9u32.to_le_bytes());
        inner.extend_from_slice(&1u64.to_le_bytes());
        inner.extend_from_slice(&4u32.to_le_bytes());
        inner.extend_from_slice(&1u64.to_le_bytes());
        inner.extend_from_slice(&7u32.to_le_bytes());
        let b = llama("tiny").kv("x.nested", 9, &inner);
        assert!(form(&read_file(&b.bytes()).unwrap())
            .unwrap_err()
            .contains("array of arrays"));
    }

    #[test]
    fn other_architectures_have_no_form() {
        let b = Builder::new().kv("general.architecture", 8, &text("phi3"));
        assert!(form(&read_file(&b.bytes()).unwrap())
            .unwrap_err()
            .contains("phi3"));
    }

    /// Un-permuting is numpy's `w.reshape(h, d, 2, -1).swapaxes(2, 1)`
    /// (transformers' `_reverse_permute_weights`), row by row.
    #[test]
    fn unpermute_is_the_loaders_reshape() {
        let (heads, rows) = (2u64, 12u64);
        let half = rows / heads / 2;
        let change = Change::Unpermute { heads };
        for h in 0..heads {
            for t in 0..2 {
                for d in 0..half {
                    let model_row = h * 2 * half + t * half + d;
                    let file_row = h * 2 * half + d * 2 + t;
                    assert_eq!(change.source_row(model_row, rows), file_row);
                }
            }
        }
    }

    /// Gemma: norms less one, its own norm names, `gemma3_text`, the
    /// vocabulary's size from the token list, an untied head.
    #[test]
    fn gemma3_norms_and_config() {
        let mut tokens = Vec::new();
        tokens.extend_from_slice(&8u32.to_le_bytes());
        tokens.extend_from_slice(&3u64.to_le_bytes());
        for t in ["a", "b", "c"] {
            string(&mut tokens, t.as_bytes());
        }
        let b = Builder::new()
            .kv("general.architecture", 8, &text("gemma3"))
            .kv("gemma3.block_count", 4, &1u32.to_le_bytes())
            .kv("gemma3.attention.key_length", 4, &8u32.to_le_bytes())
            .kv("tokenizer.ggml.tokens", 9, &tokens)
            .tensor("blk.0.ffn_norm.weight", &[4], 0, &[0; 16])
            .tensor("blk.0.attn_q_norm.weight", &[4], 0, &[0; 16])
            .tensor("output.weight", &[4, 3], 0, &[0; 48]);
        let f = form(&read_file(&b.bytes()).unwrap()).unwrap();
        let t = |i: usize| f.tensors[i].clone().unwrap();
        assert_eq!(t(0).name, "model.layers.0.pre_feedforward_layernorm.weight");
        assert_eq!(t(0).change, Change::LessOne);
        assert_eq!(t(1).name, "model.layers.0.self_attn.q_norm.weight");
        assert_eq!(t(2).name, "lm_head.weight");
        assert_eq!(t(2).change, Change::Same);
        for want in [
            "\"gemma3_text\"",
            "\"head_dim\": 8",
            "\"vocab_size\": 3",
            "\"tie_word_embeddings\": false",
        ] {
            assert!(f.config.contains(want), "{want} in {}", f.config);
        }
    }
}
