//! A PyTorch checkpoint as the objects and parts every command and the
//! mount serve. A contiguous tensor is a dense object of one raw part
//! `data`, its bytes in the file (a range of its storage's member), typed
//! as safetensors' dtype of the same name maps to zTensor. A strided view
//! (a transpose, a slice with steps) is an object of layout
//! [`STRIDED`] whose one raw part `storage` is its storage's bytes; its
//! row-major `data` is computed by range (`crate::decode::hurray::RowMajor`).
//! A quantized tensor (`qint8`, `quint8`, `qint32`) is an object of layout
//! [`QUANTIZED`], its part `storage` too: its values are computed by range
//! from its integers (`crate::decode::dequant::torch`).

use super::File;
use crate::format::manifest::{Object, Part};
use crate::format::safetensors::objects::ztensor_type;
use crate::format::text::Texts;
use crate::format::types::{DType, ElementType};

/// The part holding a contiguous tensor's bytes.
pub const DATA: &str = "data";
/// The part holding a strided view's storage.
pub const STORAGE: &str = "storage";
/// The layout of a strided view.
pub const STRIDED: &str = "torch:strided";
/// The layout of a quantized tensor.
pub const QUANTIZED: &str = "torch:quantized";

/// The objects of a checkpoint, in the pickled value's order.
pub fn objects(file: &File) -> Vec<Object> {
    let mut texts = Texts::default();
    let (data, storage) = (texts.get(DATA), texts.get(STORAGE));
    let (dense, strided) = (texts.get("dense"), texts.get(STRIDED));
    let quantized = texts.get(QUANTIZED);
    file.tensors
        .iter()
        .map(|t| {
            let s = &file.storages[t.storage];
            let (part, layout) = match t.in_place() {
                true if t.quant.is_none() => {
                    let (dtype, logical) = ztensor_type(t.dtype);
                    let ty = ElementType {
                        dtype,
                        logical: logical.map(|l| texts.get(l)),
                    };
                    let offset = s.offset + t.byte_offset();
                    (
                        Part::raw(data.clone(), ty, offset, t.numel() * t.width()),
                        dense.clone(),
                    )
                }
                _ => {
                    let ty = ElementType {
                        dtype: DType::U8,
                        logical: None,
                    };
                    let layout = match t.quant {
                        Some(_) => quantized.clone(),
                        None => strided.clone(),
                    };
                    (Part::raw(storage.clone(), ty, s.offset, s.len), layout)
                }
            };
            Object {
                name: t.name.as_str().into(),
                shape: texts.shape(&t.shape),
                layout,
                attributes: None,
                parts: smallvec::smallvec![part],
            }
        })
        .collect()
}
