//! Strict deterministic CBOR (RFC 8949 §4.2.1 as zTensor v2 §3.1 narrows it).
//!
//! INTERFACE STUB: the decoder, encoder and their tests are being written.

use crate::error::Result;

/// Deepest item allowed, counted from the root item at depth 0 (§3.1).
pub const MAX_DEPTH: usize = 32;

/// A decoded CBOR item, borrowing text and bytes from the input.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// Major type 0.
    Uint(u64),
    /// Major type 1: the value is `-1 - n`.
    Nint(u64),
    /// Major type 2.
    Bytes(&'a [u8]),
    /// Major type 3, valid UTF-8.
    Text(&'a str),
    /// Major type 4.
    Array(Vec<Value<'a>>),
    /// Major type 5, entries in the order of the input (which is the
    /// deterministic order, since the decoder rejects anything else).
    Map(Vec<(Value<'a>, Value<'a>)>),
    /// Simple values 20 and 21.
    Bool(bool),
    /// Simple value 22.
    Null,
    /// Major type 7 floats of any width, widened to f64.
    Float(f64),
}

/// Decodes one item that must span all of `bytes`.
pub fn parse(bytes: &[u8]) -> Result<Value<'_>> {
    let _ = bytes;
    todo!()
}

/// Encodes `value` in deterministic form: shortest heads, map entries in the
/// order given (callers sort), floats in the shortest exact width.
pub fn encode(value: &Value<'_>, out: &mut Vec<u8>) {
    let _ = (value, out);
    todo!()
}
