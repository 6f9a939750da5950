//! A GGUF file as JSON: `manifest.json` (the version, every key-value pair
//! with its GGUF type in file order, every tensor info) through the
//! lossless mapping of `crate::format::json`.
//!
//! A KV is `{"key", "type", "value"}`; `type` is the GGUF type
//! (`uint8` .. `float64`, `bool`, `string`, `array<T>`), so a `uint32` 5
//! and an `int64` 5 stay apart. An array of arrays has type
//! `array<array>` and each element is `{"type": "array<T>", "value": [...]}`.
//! Floats are exact (a `float32` widened to f64), integers beyond 2^53 are
//! `{"$int": ...}`.

use super::{Array, File, Items, TensorInfo, Value, ValueType};
use crate::format::cbor::Value as J;
use crate::format::json;

fn t(s: &str) -> J<'_> {
    J::Text(s)
}

fn uint<'a>(n: u64) -> J<'a> {
    J::Uint(n)
}

fn int<'a>(n: i128) -> J<'a> {
    if n >= 0 {
        J::Uint(n as u64)
    } else {
        J::Nint((-1 - n) as u64)
    }
}

fn map<'a>(entries: Vec<(&'a str, J<'a>)>) -> J<'a> {
    J::Map(entries.into_iter().map(|(k, v)| (t(k), v)).collect())
}

/// Writes `manifest.json` of a GGUF file, with a final newline: the
/// document around its KVs and tensor infos, and those written one at a
/// time, an array KV an item at a time (a vocabulary is 150,000 strings;
/// held as JSON values it cost about 40 times its bytes).
pub fn write_manifest(file: &File, out: &mut dyn json::Sink) {
    json::write_kv_document(
        out,
        &document(file),
        &file.kv,
        |e| (&e.key, type_name(&e.value)),
        |w, e, l| match &e.value {
            Value::Array(a) => write_array(w, a, l),
            v => w.value(&value(v), l),
        },
        &file.tensors,
        tensor,
    );
}

/// The note on a file of a split model (`split.count` > 1) read alone.
pub const SPLIT_NOTE: &str = "split.count > 1: this is one file of a split model, read alone (its own tensors and KVs); open the model's first file, NAME-00001-of-0000N.gguf, for all of it";

/// The document with its KVs and tensor infos left for [`write_manifest`].
/// A split model opened from its first file lists its files
/// (`split_files`); its tensors name theirs (`split`, an index in it).
fn document(file: &File) -> J<'_> {
    let notes = J::Array(match file.split_count() {
        Some(_) if file.split_files.is_empty() => vec![t(SPLIT_NOTE)],
        _ => Vec::new(),
    });
    let mut fields = vec![
        ("format", t("gguf")),
        ("version", uint(file.version.into())),
        ("tensor_count", uint(file.tensors.len() as u64)),
        ("kv_count", uint(file.kv.len() as u64)),
        ("alignment", uint(file.alignment)),
        ("data_offset", uint(file.data_offset)),
        ("notes", notes),
    ];
    if !file.split_files.is_empty() {
        let names = file.split_files.iter().map(|n| t(n)).collect();
        fields.push(("split_files", J::Array(names)));
    }
    fields.extend([
        ("kv", J::Array(Vec::new())),
        ("tensors", J::Array(Vec::new())),
    ]);
    map(fields)
}

/// The JSON of one tensor info (also in `meta.json`).
pub fn tensor(x: &TensorInfo) -> J<'_> {
    let dims = |d: Vec<u64>| J::Array(d.into_iter().map(uint).collect());
    let mut fields = vec![
        ("name", t(&x.name)),
        ("dims", dims(x.dims.clone())),
        ("shape", dims(x.shape())),
        ("type", t(x.ty.name)),
        ("type_id", uint(x.ty.id.into())),
        ("block_elems", uint(x.ty.block_elems)),
        ("block_bytes", uint(x.ty.block_bytes)),
        ("offset", uint(x.offset)),
        ("file_offset", uint(x.start)),
        ("length", uint(x.len)),
    ];
    if let Some(k) = x.split {
        fields.push(("split", uint(k.into())));
    }
    map(fields)
}

/// The type name of a value: `array<T>` for an array of T.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Array(a) => array_type(a),
        v => v.ty().name(),
    }
}

fn array_type(a: &Array) -> &'static str {
    match a.elem {
        ValueType::U8 => "array<uint8>",
        ValueType::I8 => "array<int8>",
        ValueType::U16 => "array<uint16>",
        ValueType::I16 => "array<int16>",
        ValueType::U32 => "array<uint32>",
        ValueType::I32 => "array<int32>",
        ValueType::F32 => "array<float32>",
        ValueType::Bool => "array<bool>",
        ValueType::String => "array<string>",
        ValueType::Array => "array<array>",
        ValueType::U64 => "array<uint64>",
        ValueType::I64 => "array<int64>",
        ValueType::F64 => "array<float64>",
    }
}

/// A value that is not an array.
fn value(v: &Value) -> J<'_> {
    match v {
        Value::Scalar(ty, b) => scalar(*ty, b),
        Value::String(s) => t(s),
        Value::Array(_) => J::Null,
    }
}

fn scalar(ty: ValueType, b: &[u8]) -> J<'static> {
    match ty {
        ValueType::Bool => J::Bool(b[0] != 0),
        ValueType::F32 => J::Float(f32::from_le_bytes([b[0], b[1], b[2], b[3]]).into()),
        ValueType::F64 => {
            let mut a = [0; 8];
            a.copy_from_slice(&b[..8]);
            J::Float(f64::from_le_bytes(a))
        }
        ty => super::scalar_int(ty, b).map_or(J::Null, int),
    }
}

/// An array, an item at a time; an array of arrays as `{"type", "value"}`
/// per item.
fn write_array(w: &mut json::Writer<'_, dyn json::Sink + '_>, a: &Array, level: usize) {
    match &a.items {
        Items::Scalars(bytes) => {
            let width = a.elem.width().unwrap_or(1) as usize;
            w.items(bytes.chunks_exact(width), level, |w, c, l| {
                w.value(&scalar(a.elem, c), l)
            })
        }
        Items::Strings { .. } => w.items(0..a.len as usize, level, |w, i, l| {
            w.value(&t(a.string(i).unwrap_or_default()), l)
        }),
        Items::Arrays(inner) => w.items(inner, level, |w, x, l| {
            let item = map(vec![("type", J::Text(array_type(x))), ("value", J::Null)]);
            w.object_with(&item, l, |w, key, l| {
                key == "value" && {
                    write_array(w, x, l);
                    true
                }
            })
        }),
    }
}
