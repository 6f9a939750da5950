//! A safetensors file as the objects and parts every command and the mount
//! serve: each tensor a dense object of one raw part `data`, whose blob is
//! the tensor's bytes in the file (`8 + N + start .. 8 + N + end`), so the
//! tree serves `MNT/<tensor>/data` straight from the map, with its
//! `meta.json` and `.npy` as for a `.zt` file.
//!
//! The dtype becomes the zTensor storage and logical type with the same
//! bytes (App. A; the same table the mount's `model.safetensors` uses the
//! other way). F6_E2M3 and F6_E3M2 have no zTensor type: their parts carry
//! the unregistered logical types `f6_e2m3fn` and `f6_e3m2fn`, so their
//! bytes are served raw (`data.raw`) and never reinterpreted.

use super::{Dtype, Header};
use crate::format::manifest::{Object, Part};
use crate::format::text::Texts;
use crate::format::types::{DType, ElementType};

/// The part holding a tensor's bytes.
pub const DATA: &str = "data";

/// The zTensor storage type and logical type name with `d`'s bytes.
pub fn ztensor_type(d: Dtype) -> (DType, Option<&'static str>) {
    match d {
        Dtype::BOOL => (DType::U8, Some("bool")),
        Dtype::F4 => (DType::U8, Some("f4_e2m1")),
        Dtype::F6_E2M3 => (DType::U8, Some("f6_e2m3fn")),
        Dtype::F6_E3M2 => (DType::U8, Some("f6_e3m2fn")),
        Dtype::U8 => (DType::U8, None),
        Dtype::I8 => (DType::I8, None),
        Dtype::F8_E5M2 => (DType::U8, Some("f8_e5m2")),
        Dtype::F8_E4M3 => (DType::U8, Some("f8_e4m3fn")),
        Dtype::F8_E8M0 => (DType::U8, Some("f8_e8m0")),
        Dtype::F8_E4M3FNUZ => (DType::U8, Some("f8_e4m3fnuz")),
        Dtype::F8_E5M2FNUZ => (DType::U8, Some("f8_e5m2fnuz")),
        Dtype::I16 => (DType::I16, None),
        Dtype::U16 => (DType::U16, None),
        Dtype::F16 => (DType::F16, None),
        Dtype::BF16 => (DType::BF16, None),
        Dtype::I32 => (DType::I32, None),
        Dtype::U32 => (DType::U32, None),
        Dtype::F32 => (DType::F32, None),
        Dtype::C64 => (DType::F32, Some("complex64")),
        Dtype::F64 => (DType::F64, None),
        Dtype::I64 => (DType::I64, None),
        Dtype::U64 => (DType::U64, None),
    }
}

/// The objects of a valid header, in header order.
pub fn objects(header: &Header) -> Vec<Object> {
    let mut texts = Texts::default();
    let data = texts.get(DATA);
    let dense = texts.get("dense");
    header
        .tensors
        .iter()
        .map(|t| {
            let (dtype, logical) = ztensor_type(t.dtype);
            let (offset, length) = header.file_range(t);
            Object {
                name: t.name.as_str().into(),
                shape: texts.shape(&t.shape),
                layout: dense.clone(),
                attributes: None,
                parts: smallvec::smallvec![Part::raw(
                    data.clone(),
                    ElementType {
                        dtype,
                        logical: logical.map(|l| texts.get(l)),
                    },
                    offset,
                    length,
                )],
            }
        })
        .collect()
}

/// `__metadata__` as zTensor file attributes (deterministic CBOR, text
/// values), for `ztfs pack`; `None` when the header has none or an empty
/// one (as the public implementation's converter writes it, so the same
/// tensors give the same file).
pub fn attributes(header: &Header) -> Option<Vec<u8>> {
    use crate::format::cbor::{self, text_key_cmp, Value};
    let metadata = header.metadata.as_ref().filter(|m| !m.is_empty())?;
    let mut entries: Vec<&(String, String)> = metadata.iter().collect();
    entries.sort_by(|a, b| text_key_cmp(&a.0, &b.0));
    let map = Value::Map(
        (entries.into_iter())
            .map(|(k, v)| (Value::Text(k), Value::Text(v)))
            .collect(),
    );
    let mut out = Vec::new();
    cbor::encode(&map, &mut out);
    Some(out)
}
