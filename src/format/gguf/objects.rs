//! A GGUF file as the objects and parts every command and the mount serve.
//!
//! Each tensor is an object named by its tensor name, with its row-major
//! shape (the GGUF dims reversed: `ne[0]`, the row length, is the last,
//! fastest-varying dimension) and one part `data`: the tensor's byte range
//! in the file, served straight from the map.
//!
//! * Unquantized types (f32, f16, bf16, f64, i8..i64) are `dense` objects
//!   whose part has the matching dtype, so they get `.npy` files and a
//!   place in `model.safetensors`.
//! * Block types follow the `gguf.<type>/1` profile (notes §3.6): layout
//!   `gguf.<type>/1`, part `data` of `u8` holding the block array verbatim,
//!   attributes `elems_per_block` and `block_bytes`. Unlike a zTensor
//!   file's `gguf.<type>/1` objects (served only as `.raw`), the part is
//!   served as `data`: in a GGUF file the block bytes are the tensor.

use super::{File, TensorInfo};
use crate::format::cbor::{self, Value};
use crate::format::manifest::{Object, Part};
use crate::format::profiles::DENSE;
use crate::format::text::Texts;
use crate::format::types::{DType, ElementType};

/// The part (and file) holding a tensor's bytes.
pub const DATA: &str = "data";

/// The `gguf.<type>/1` layout id of a block type.
pub fn layout_id(ggml_name: &str) -> String {
    format!("gguf.{ggml_name}/1")
}

/// The objects of a GGUF file, in tensor-info order.
pub fn objects(file: &File) -> Vec<Object> {
    let mut texts = Texts::default();
    let data = texts.get(DATA);
    (file.tensors.iter())
        .map(|t| object(t, &mut texts, &data))
        .collect()
}

fn object(t: &TensorInfo, texts: &mut Texts, data: &crate::format::Text) -> Object {
    let (layout, dtype, attributes) = match t.ty.dense {
        Some(d) => (texts.get(DENSE), d, None),
        None => {
            let mut a = Vec::new();
            // Deterministic CBOR: keys by length, then bytes.
            let map = Value::Map(vec![
                (Value::Text("block_bytes"), Value::Uint(t.ty.block_bytes)),
                (
                    Value::Text("elems_per_block"),
                    Value::Uint(t.ty.block_elems),
                ),
            ]);
            cbor::encode(&map, &mut a);
            (texts.get(&layout_id(t.ty.name)), DType::U8, Some(a))
        }
    };
    Object {
        name: t.name.clone(),
        shape: texts.shape(&t.shape()),
        layout,
        attributes: attributes.map(crate::format::manifest::boxed_attributes),
        parts: smallvec::smallvec![Part::raw(
            data.clone(),
            ElementType {
                dtype,
                logical: None,
            },
            t.start,
            t.len,
        )],
    }
}
