//! A GGUF file's key-values as zTensor file attributes (§3.1), for `ztfs
//! pack`: one attribute per key, typed as GGUF types it (integers as
//! integers, `float32`/`float64` as floats in their shortest exact CBOR
//! width, bools, strings, arrays of any of these, nested), as the public
//! implementation's converter keeps them.

use super::{Array, File, Items, Value, ValueType};
use crate::error::{Error, Result};
use crate::format::cbor::{self, text_key_cmp};

/// The key-values as a deterministic CBOR map; `None` when there are
/// none. A key that is not a valid attribute name (§3.5: at most 1024
/// bytes, no U+0000) is refused, since it cannot be written.
pub fn attributes(file: &File) -> Result<Option<Vec<u8>>> {
    if file.kv.is_empty() {
        return Ok(None);
    }
    let mut kv: Vec<_> = file.kv.iter().collect();
    kv.sort_by(|a, b| text_key_cmp(&a.key, &b.key));
    let mut out = Vec::new();
    cbor::encode_head(5, kv.len() as u64, &mut out);
    for e in kv {
        crate::format::check_name(&e.key, "attribute key").map_err(|err| {
            Error::Unsupported(format!(
                "GGUF key {:?} cannot be a zTensor attribute: {}",
                crate::format::truncate(&e.key, 80),
                err.detail()
            ))
        })?;
        cbor::encode(&cbor::Value::Text(&e.key), &mut out);
        value(&e.value, &mut out);
    }
    Ok(Some(out))
}

fn value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Scalar(t, b) => scalar(*t, b, out),
        Value::String(s) => cbor::encode(&cbor::Value::Text(s), out),
        Value::Array(a) => array(a, out),
    }
}

fn array(a: &Array, out: &mut Vec<u8>) {
    cbor::encode_head(4, a.len, out);
    match &a.items {
        Items::Scalars(bytes) => {
            let width = a.elem.width().unwrap_or(1) as usize;
            bytes.chunks(width).for_each(|b| scalar(a.elem, b, out));
        }
        Items::Strings { .. } => {
            (0..a.len as usize)
                .map(|i| a.string(i).unwrap_or_default())
                .for_each(|s| cbor::encode(&cbor::Value::Text(s), out));
        }
        Items::Arrays(items) => items.iter().for_each(|i| array(i, out)),
    }
}

fn scalar(t: ValueType, b: &[u8], out: &mut Vec<u8>) {
    let v = match t {
        ValueType::Bool => cbor::Value::Bool(b[0] != 0),
        ValueType::F32 => cbor::Value::Float(f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64),
        ValueType::F64 => {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[..8]);
            cbor::Value::Float(f64::from_le_bytes(a))
        }
        _ => match super::scalar_int(t, b) {
            Some(n) if n >= 0 => cbor::Value::Uint(n as u64),
            Some(n) => cbor::Value::Nint((-1 - n) as u64),
            None => cbor::Value::Null,
        },
    };
    cbor::encode(&v, out);
}
