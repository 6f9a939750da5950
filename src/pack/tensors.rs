//! A model whose format says where each tensor's row-major data is, rather
//! than its objects' parts ([`Model::packs_tensor_data`]: a Hurray file,
//! whose objects are its buffers), as the dense objects a pack writes:
//! each tensor's row-major elements (as the mount's `data` serves them: a
//! range of the file, or a view computed from another dense layout or
//! from a partition's members) under the zTensor type with the same bytes.
//!
//! A tensor with no row-major data (quantized, sparse, block-paged,
//! overlay or group composites, dynamic dimensions, private layouts) or
//! with an element type zTensor has no type for is refused, naming the
//! tensor and why: a pack writes every tensor or none.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::format::manifest::{Object, Part};
use crate::format::text::Texts;
use crate::format::types::ElementType;
use crate::model::{Model, TensorData, DATA};

/// The objects to write, and which of them are computed.
pub struct Objects {
    /// Dense objects, one part `data` each; a stored tensor's blob is its
    /// range of its file (`blob.shard`: a sharded checkpoint's file).
    pub objects: Vec<Object>,
    /// The objects whose data is computed, by name: their index in the
    /// model ([`Model::tensor_data`] gives the view).
    pub computed: HashMap<Box<str>, u32>,
}

/// The dense objects of `model`'s tensors. A member of a partition
/// composite is written as a tensor of its own too (it is one in the
/// file). A quantized tensor is refused unless `dequantize` names the
/// type its values are written in (`super::values` writes them).
pub fn objects(
    model: &Model,
    dequantize: Option<crate::decode::dequant::narrow::Float>,
) -> Result<Objects> {
    let m = model.manifest().expect("checked at open");
    let mut texts = Texts::default();
    let (data, dense) = (texts.get(DATA), texts.get("dense"));
    let mut out = Objects {
        objects: Vec::with_capacity(m.objects.len()),
        computed: HashMap::new(),
    };
    for (i, o) in m.objects.iter().enumerate() {
        let refuse = |why: String| {
            Error::Unsupported(format!(
                "{} tensor {:?} cannot be packed: {why}",
                model.format_name(),
                o.name
            ))
        };
        let (elem, offset, length, shard) = match model.tensor_data(i as u32) {
            TensorData::Stored { part, elem } => {
                let p = &o.parts[part as usize];
                (elem, p.blob.offset, p.blob.length, p.blob.shard.clone())
            }
            TensorData::Computed { view, .. } if view.dequantized_from().is_some() => {
                let Some(to) = dequantize else {
                    return Err(refuse(format!(
                        "it is quantized ({}): pack with --dequantize f32|f16|bf16 to write its values",
                        view.dequantized_from().unwrap_or_default()
                    )));
                };
                let elem = crate::model::Elem::Plain(to.dtype());
                (elem, 0, view.len() / 4 * to.width(), None)
            }
            TensorData::Computed { view, elem } => {
                out.computed.insert(o.name.clone(), i as u32);
                (elem, 0, view.len(), None)
            }
            TensorData::Absent(why) => return Err(refuse(why)),
            TensorData::ByLayout => {
                return Err(refuse("its format places no row-major data".into()))
            }
        };
        let (dtype, logical) = elem.ztensor_type().ok_or_else(|| {
            refuse(format!(
                "zTensor has no type with the bytes of {}",
                elem.name()
            ))
        })?;
        let ty = ElementType {
            dtype,
            logical: logical.map(|l| texts.get(l)),
        };
        // A stored tensor stays in its file (a sharded checkpoint's).
        let mut part = Part::raw(data.clone(), ty, offset, length);
        part.blob.shard = shard;
        out.objects.push(Object {
            name: o.name.clone(),
            shape: o.shape.clone(),
            layout: dense.clone(),
            attributes: None,
            parts: smallvec::smallvec![part],
        });
    }
    Ok(out)
}
