//! Small realistic models, built with canonical placement (§6.3): blobs at
//! 64 KiB boundaries from 65536, ordered by (object, part) name of their
//! first reference, byte-identical parts sharing one blob, an xxh3 digest on
//! every part, the manifest last. Data comes from a fixed-seed LCG.
//!
//! `sharded/` is a root with two shards: `model-00001.zt` is a bare data
//! shard; `model-00002.zt` is a complete file with its own manifest, which
//! the root uses purely as a blob heap (§7.2). Shards are not canonical.

use super::builder::{
    dense, float, part, root, sha256_digest, xxh3_digest, BlobRef, CborItem, Fields, FileBuilder,
    Footer, Lcg, CANONICAL_ALIGN,
};
use super::{Case, Dir, Outcome};

/// Every sample.
pub fn all() -> Vec<Case> {
    let (root, shards) = sharded();
    let mut all = vec![
        sample("tiny-llama", tiny_llama()),
        sample("mixed-dtypes", mixed_dtypes()),
        sample("sharded/model", root),
    ];
    all.extend(shards.into_iter().map(|(name, bytes)| sample(name, bytes)));
    all
}

fn sample(name: &'static str, bytes: Vec<u8>) -> Case {
    Case {
        name,
        dir: Dir::Samples,
        bytes,
        open: Outcome::Valid,
        verify: Outcome::Valid,
    }
}

/// A single-part dense tensor.
struct Tensor {
    name: String,
    shape: Vec<u64>,
    dtype: &'static str,
    ty: Option<&'static str>,
    data: Vec<u8>,
}

fn tensor(name: impl Into<String>, shape: &[u64], dtype: &'static str, data: Vec<u8>) -> Tensor {
    Tensor {
        name: name.into(),
        shape: shape.to_vec(),
        dtype,
        ty: None,
        data,
    }
}

impl Tensor {
    fn typed(mut self, ty: &'static str) -> Tensor {
        self.ty = Some(ty);
        self
    }

    fn elements(&self) -> usize {
        self.shape.iter().product::<u64>() as usize
    }

    /// The part over `blob`, with its digest and logical type.
    fn part(&self, blob: BlobRef) -> Fields {
        let p = part(self.dtype, blob).set("digest", xxh3_digest(&self.data));
        match self.ty {
            Some(ty) => p.set("type", ty),
            None => p,
        }
    }
}

/// Places `tensors` canonically in `f` and returns the objects map.
fn place(f: &mut FileBuilder, mut tensors: Vec<Tensor>) -> Fields {
    tensors.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    let mut placed: Vec<(&[u8], BlobRef)> = Vec::new();
    let mut objects = Fields::new();
    for t in &tensors {
        let blob = match placed.iter().find(|(d, _)| *d == t.data.as_slice()) {
            Some((_, b)) => *b,
            None => {
                let b = f.blob(&t.data);
                placed.push((&t.data, b));
                b
            }
        };
        objects = objects.set(t.name.as_str(), dense(&t.shape, t.part(blob)));
    }
    objects
}

/// A canonical single file of `tensors` with file `attributes`.
fn canonical(tensors: Vec<Tensor>, attributes: Fields) -> Vec<u8> {
    let mut f = FileBuilder::new().with_align(CANONICAL_ALIGN);
    let objects = place(&mut f, tensors);
    f.finish(
        &root(objects)
            .set("attributes", attributes)
            .sorted()
            .encode(),
    )
}

/// `n` bf16 values of magnitude 2^-10 to 2^-3, random sign and mantissa.
fn bf16s(rng: &mut Lcg, n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|_| {
            let r = rng.next_u32();
            let bits = ((r >> 31) << 15) | ((117 + (r >> 8) % 8) << 7) | (r & 0x7F);
            (bits as u16).to_le_bytes()
        })
        .collect()
}

/// `n` f16 values of magnitude 2^-10 to 2^-3, random sign and mantissa.
fn f16s(rng: &mut Lcg, n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|_| {
            let r = rng.next_u32();
            let bits = ((r >> 31) << 15) | ((5 + (r >> 12) % 8) << 10) | (r & 0x3FF);
            (bits as u16).to_le_bytes()
        })
        .collect()
}

fn f32s(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

/// One decoder layer of a Llama-shaped model: hidden 16, 2 heads of 8, one
/// key-value head, MLP 32, vocabulary 64, bf16 attention and embeddings, f16
/// MLP, f32 norms (all ones, so the three share a blob), and `lm_head.weight`
/// tied to `model.embed_tokens.weight`.
fn tiny_llama() -> Vec<u8> {
    let mut rng = Lcg::new(0x7A74_11A3);
    let embed = bf16s(&mut rng, 64 * 16);
    let ones = f32s([1.0; 16]);
    let layer = |n: &str| format!("model.layers.0.{n}.weight");
    let tensors = vec![
        tensor(
            "model.embed_tokens.weight",
            &[64, 16],
            "bf16",
            embed.clone(),
        ),
        tensor("lm_head.weight", &[64, 16], "bf16", embed),
        tensor(
            layer("self_attn.q_proj"),
            &[16, 16],
            "bf16",
            bf16s(&mut rng, 256),
        ),
        tensor(
            layer("self_attn.k_proj"),
            &[8, 16],
            "bf16",
            bf16s(&mut rng, 128),
        ),
        tensor(
            layer("self_attn.v_proj"),
            &[8, 16],
            "bf16",
            bf16s(&mut rng, 128),
        ),
        tensor(
            layer("self_attn.o_proj"),
            &[16, 16],
            "bf16",
            bf16s(&mut rng, 256),
        ),
        tensor(
            layer("mlp.gate_proj"),
            &[32, 16],
            "f16",
            f16s(&mut rng, 512),
        ),
        tensor(layer("mlp.up_proj"), &[32, 16], "f16", f16s(&mut rng, 512)),
        tensor(
            layer("mlp.down_proj"),
            &[16, 32],
            "f16",
            f16s(&mut rng, 512),
        ),
        tensor(layer("input_layernorm"), &[16], "f32", ones.clone()),
        tensor(
            layer("post_attention_layernorm"),
            &[16],
            "f32",
            ones.clone(),
        ),
        tensor("model.norm.weight", &[16], "f32", ones),
    ];
    let attributes = Fields::new()
        .set("architecture", "LlamaForCausalLM")
        .set("hidden_size", 16u64)
        .set("intermediate_size", 32u64)
        .set("num_attention_heads", 2u64)
        .set("num_hidden_layers", 1u64)
        .set("num_key_value_heads", 1u64)
        .set("vocab_size", 64u64)
        .set("rms_norm_eps", float(1e-5))
        .set("rope_theta", float(10000.0))
        .set("tie_word_embeddings", CborItem::Bool(true))
        .set("torch_dtype", "bfloat16");
    canonical(tensors, attributes)
}

/// One tensor of each kind of element: int8, a bool mask over u8, f64,
/// complex64 over f32, and an i64 scalar.
fn mixed_dtypes() -> Vec<u8> {
    let mut rng = Lcg::new(0x3D_7E5);
    let mask: Vec<u8> = (0..16).map(|i| u8::from(i % 8 < 5)).collect();
    let doubles: Vec<u8> = (0..9)
        .flat_map(|i| (i as f64 * 0.5 - 1.25).to_le_bytes())
        .collect();
    let complex = f32s((0..16).map(|i| (i as f32 - 8.0) * 0.125));
    let tensors = vec![
        tensor("activations.int8", &[4, 8], "i8", rng.bytes(32)),
        tensor("attention_mask", &[2, 8], "u8", mask).typed("bool"),
        tensor("double_precision", &[3, 3], "f64", doubles),
        tensor("fft.coefficients", &[8], "f32", complex).typed("complex64"),
        tensor("step", &[], "i64", 1000i64.to_le_bytes().to_vec()),
    ];
    for t in &tensors {
        let width = match (t.dtype, t.ty) {
            (_, Some("complex64")) => 8,
            ("i8" | "u8", _) => 1,
            _ => 8,
        };
        assert_eq!(t.data.len(), t.elements() * width, "{}", t.name);
    }
    let attributes = Fields::new().set("description", "one tensor of each kind of element");
    canonical(tensors, attributes)
}

/// The root `sharded/model.zt` and its shards, by sample name.
fn sharded() -> (Vec<u8>, Vec<(&'static str, Vec<u8>)>) {
    let mut rng = Lcg::new(0x5AA2_D001);
    let layers = [f16s(&mut rng, 512), f16s(&mut rng, 512)];
    let head = tensor("lm_head.weight", &[64, 16], "bf16", bf16s(&mut rng, 1024));

    let mut f = FileBuilder::new().with_align(CANONICAL_ALIGN);
    let layer_blobs: Vec<BlobRef> = layers.iter().map(|d| f.blob(d)).collect();
    let shard1 = f.finish_footer(&Footer::data_shard());

    let mut f = FileBuilder::new().with_align(CANONICAL_ALIGN);
    let head_part = head.part(f.blob(&head.data));
    let own = Fields::new().set(head.name.as_str(), dense(&head.shape, head_part.clone()));
    let shard2 = f.finish(&root(own).sorted().encode());

    let norm = tensor("model.norm.weight", &[16], "f32", f32s([1.0; 16]));
    let mut f = FileBuilder::new().with_align(CANONICAL_ALIGN);
    let norm_blob = f.blob(&norm.data);
    let mut objects = Fields::new()
        .set(norm.name.as_str(), dense(&norm.shape, norm.part(norm_blob)))
        .set(
            "lm_head.weight",
            dense(&head.shape, head_part.set("shard", "00002")),
        );
    for (i, (data, blob)) in layers.iter().zip(&layer_blobs).enumerate() {
        let name = format!("model.layers.{i}.mlp.weight");
        let p = tensor(name.as_str(), &[32, 16], "f16", data.clone()).part(*blob);
        objects = objects.set(name, dense(&[32, 16], p.set("shard", "00001")));
    }
    let identity = |bytes: &[u8]| {
        Fields::new()
            .set("size", bytes.len() as u64)
            .set("digest", sha256_digest(bytes))
    };
    let shards = Fields::new()
        .set("00001", identity(&shard1))
        .set("00002", identity(&shard2));
    let attributes = Fields::new().set("architecture", "LlamaForCausalLM");
    let manifest = root(objects)
        .set("shards", shards)
        .set("attributes", attributes)
        .sorted()
        .encode();
    let model = f.finish(&manifest);
    (
        model,
        vec![
            ("sharded/model-00001", shard1),
            ("sharded/model-00002", shard2),
        ],
    )
}
