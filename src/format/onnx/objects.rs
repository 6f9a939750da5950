//! An ONNX model's tensors as zTensor objects: each a dense object of one
//! part, `data`, whose bytes are its `raw_data` in the file, a range of
//! an external file (`blob.shard` names it by its `location`), or its
//! typed field converted into the model's file of converted tensors
//! ([`CONVERTED`]). Checked here, before anything is served: names
//! (present, never twice) and every tensor's bytes against its dims and
//! type.
//!
//! 4-bit and 2-bit integers and 6-bit floats are objects whose `data` is
//! refused (a logical type zTensor does not register) and whose
//! `data.raw` is their packed bytes as ONNX stores them (a typed field's
//! values packed so). String tensors, sparse initializers and
//! types ONNX does not define are left out, each with why.

use super::types::{byte_len, check_location, ztensor_type};
use super::{Data, Model, Tensor};
use crate::error::{Error, Result, Rule};
use crate::format::manifest::{Object, Part};
use crate::format::text::Texts;
use crate::format::types::{DType, ElementType};

/// The name of the model's file of converted typed fields, as their
/// parts' `blob.shard`: made on first use, each tensor's bytes at its
/// place (see `model::made`).
pub const CONVERTED: &str = "(converted typed fields)";

/// An opened ONNX model: what it says, and how its tensors are objects.
#[derive(Debug, Default)]
pub struct File {
    /// The model as read.
    pub model: Model,
    /// The model's tensor each object is (index in `Model::tensors`).
    pub tensor: Vec<usize>,
    /// Tensors left out, by name, with why.
    pub left_out: Vec<(String, String)>,
    /// The typed tensors, each converted at its place in [`CONVERTED`]:
    /// (tensor index, place, bytes), places end to end.
    pub converted: Vec<(usize, u64, u64)>,
    /// The external files named, sorted, once each.
    pub locations: Vec<String>,
}

/// The logical type names of the packed sub-byte integers, which zTensor
/// does not register: their `data` is refused, their `data.raw` served.
fn packed_name(t: i32) -> Option<&'static str> {
    match t {
        21 => Some("onnx.uint4"),
        22 => Some("onnx.int4"),
        25 => Some("onnx.uint2"),
        26 => Some("onnx.int2"),
        27 => Some("onnx.float6e2m3"),
        28 => Some("onnx.float6e3m2"),
        _ => None,
    }
}

fn reject(rule: Rule, t: &Tensor, why: String) -> Error {
    Error::reject(rule, format!("tensor {:?}: {why}", t.name))
}

/// Maps `model`'s tensors to objects, checking each against its dims and
/// type (the values of a typed field are counted by the caller, which
/// reads them; an external file's range by its opener).
pub fn objects(model: Model) -> Result<(Vec<Object>, File)> {
    let mut out = File::default();
    let mut objects = Vec::new();
    let mut texts = Texts::default();
    let (data, dense) = (texts.get("data"), texts.get("dense"));
    let mut names = std::collections::HashMap::new();
    let sparse = model.sparse.iter().map(|n| (n, None));
    let all = (model.tensors.iter().enumerate()).map(|(i, t)| (&t.name, Some(i)));
    for (name, i) in all.chain(sparse) {
        if name.is_empty() {
            return Err(Error::reject(
                Rule::OnnxModel,
                "a tensor with no name (ONNX requires every initializer to have one)",
            ));
        }
        if names.insert(name.as_str(), i).is_some() {
            return Err(Error::reject(
                Rule::OnnxDuplicate,
                format!("two tensors named {name:?}"),
            ));
        }
    }
    for name in &model.sparse {
        let why = "a sparse initializer (SparseTensorProto): not served".to_string();
        out.left_out.push((name.clone(), why));
    }
    let mut converted_len = 0u64;
    for (i, t) in model.tensors.iter().enumerate() {
        let count = (t.dims.iter()).try_fold(1u64, |n, &d| n.checked_mul(d));
        let Some(count) = count else {
            return Err(reject(
                Rule::OnnxModel,
                t,
                format!("dims {:?} whose product overflows", t.dims),
            ));
        };
        let ty = match (ztensor_type(t.data_type), packed_name(t.data_type)) {
            (Ok((dtype, logical)), _) => ElementType {
                dtype,
                logical: logical.map(|l| texts.get(l.name())),
            },
            (Err(_), Some(name)) => ElementType {
                dtype: DType::U8,
                logical: Some(texts.get(name)),
            },
            (Err(why), None) => {
                out.left_out.push((t.name.clone(), why));
                continue;
            }
        };
        if matches!(t.data, Data::Typed { .. }) && super::typed::layout(t.data_type).is_none() {
            let why = format!("{} in a typed field: not converted", type_name(t.data_type));
            out.left_out.push((t.name.clone(), why));
            continue;
        }
        let len = byte_len(t.data_type, count).ok_or_else(|| {
            reject(
                Rule::OnnxModel,
                t,
                format!("{count} elements whose bytes overflow"),
            )
        })?;
        let wrong = |what: &str, got: u64| {
            reject(
                Rule::OnnxLength,
                t,
                format!(
                    "{what} of {got} bytes, where dims {:?} of its type make {len}",
                    t.dims
                ),
            )
        };
        let (offset, shard) = match &t.data {
            Data::Raw { offset, len: got } => match *got == len {
                true => (*offset, None),
                false => return Err(wrong("raw_data", *got)),
            },
            Data::External {
                location,
                offset,
                length,
            } => {
                check_location(location).map_err(|why| reject(Rule::OnnxExternalPath, t, why))?;
                if let Some(got) = length.filter(|&l| l != len) {
                    return Err(wrong("an external length", got));
                }
                if let Err(at) = out.locations.binary_search(location) {
                    out.locations.insert(at, location.clone());
                }
                (offset.unwrap_or(0), Some(texts.get(location)))
            }
            Data::Typed { .. } => {
                let at = converted_len;
                converted_len = at
                    .checked_add(len)
                    .ok_or_else(|| reject(Rule::OnnxModel, t, "converted bytes overflow".into()))?;
                out.converted.push((i, at, len));
                (at, Some(texts.get(CONVERTED)))
            }
            Data::None if len == 0 => (0, None),
            Data::None => return Err(wrong("no data", 0)),
        };
        let mut part = Part::raw(data.clone(), ty, offset, len);
        part.blob.shard = shard;
        objects.push(Object {
            name: t.name.as_str().into(),
            shape: texts.shape(&t.dims),
            layout: dense.clone(),
            attributes: None,
            parts: smallvec::smallvec![part],
        });
        out.tensor.push(i);
    }
    out.model = model;
    Ok((objects, out))
}

/// ONNX's name of data type `t` (`TensorProto.DataType`).
pub fn type_name(t: i32) -> &'static str {
    const NAMES: [&str; 29] = [
        "UNDEFINED",
        "FLOAT",
        "UINT8",
        "INT8",
        "UINT16",
        "INT16",
        "INT32",
        "INT64",
        "STRING",
        "BOOL",
        "FLOAT16",
        "DOUBLE",
        "UINT32",
        "UINT64",
        "COMPLEX64",
        "COMPLEX128",
        "BFLOAT16",
        "FLOAT8E4M3FN",
        "FLOAT8E4M3FNUZ",
        "FLOAT8E5M2",
        "FLOAT8E5M2FNUZ",
        "UINT4",
        "INT4",
        "FLOAT4E2M1",
        "FLOAT8E8M0",
        "UINT2",
        "INT2",
        "FLOAT6E2M3",
        "FLOAT6E3M2",
    ];
    usize::try_from(t)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
        .unwrap_or("an undefined type")
}
