//! ONNX models written by hand (`ModelProto` as onnx.proto numbers its
//! fields), on the crate's test encoder: the forms `onnx.save` writes and
//! the ones it does not (typed fields, runs split, fields reordered).

pub use ztfs::format::protobuf::encode::{len_field, tag, v, varint_field};

/// Where a tensor's bytes go.
pub enum Store<'a> {
    /// `raw_data` (field 9).
    Raw(&'a [u8]),
    /// A typed field's number and its values, written as `runs` runs
    /// (packed), or unpacked when `runs` is 0.
    Typed(u64, &'a [u64], usize),
    /// External: location, offset, length (as text; `None` leaves it out).
    External(&'a str, Option<u64>, Option<u64>),
    /// No data field.
    Nothing,
}

/// A `TensorProto`: name, data type, dims, bytes; its data fields first
/// and the others in reverse order when `reversed` (protobuf readers take
/// fields in any order; a repeated field's runs keep theirs).
pub fn tensor(name: &str, data_type: u64, dims: &[i64], store: Store, reversed: bool) -> Vec<u8> {
    let dims: Vec<u8> = dims.iter().flat_map(|&d| v(d as u64)).collect();
    let mut head = [
        varint_field(2, data_type),
        len_field(8, name.as_bytes()),
        len_field(1, &dims),
        // An unknown field, which every reader skips.
        len_field(99, b"unknown"),
    ];
    let mut fields = Vec::new();
    match store {
        Store::Raw(b) => fields.push(len_field(9, b)),
        Store::Typed(field, values, 0) => {
            fields.extend(values.iter().map(|&x| typed_one(field, x)))
        }
        Store::Typed(field, values, runs) => {
            for chunk in values.chunks(values.len().div_ceil(runs).max(1)) {
                let body: Vec<u8> = chunk.iter().flat_map(|&x| packed(field, x)).collect();
                fields.push(len_field(field, &body));
            }
        }
        Store::External(location, offset, length) => {
            fields.push(len_field(13, &entry("location", location)));
            if let Some(o) = offset {
                fields.push(len_field(13, &entry("offset", &o.to_string())));
            }
            if let Some(l) = length {
                fields.push(len_field(13, &entry("length", &l.to_string())));
            }
            fields.push(varint_field(14, 1));
        }
        Store::Nothing => {}
    }
    if reversed {
        head.reverse();
        return [fields.concat(), head.concat()].concat();
    }
    [head.concat(), fields.concat()].concat()
}

/// One value of typed field `field` in its packed form.
fn packed(field: u64, x: u64) -> Vec<u8> {
    match field {
        4 => (x as u32).to_le_bytes().to_vec(),
        10 => x.to_le_bytes().to_vec(),
        _ => v(x),
    }
}

/// One value of typed field `field`, unpacked (its own tag).
fn typed_one(field: u64, x: u64) -> Vec<u8> {
    let wire = match field {
        4 => 5,
        10 => 1,
        _ => 0,
    };
    [tag(field, wire), packed(field, x)].concat()
}

/// A `StringStringEntryProto`.
pub fn entry(key: &str, value: &str) -> Vec<u8> {
    [len_field(1, key.as_bytes()), len_field(2, value.as_bytes())].concat()
}

/// A `NodeProto` of `op` with one output and attributes (already encoded
/// `AttributeProto`s).
pub fn node(op: &str, output: &str, attributes: &[Vec<u8>]) -> Vec<u8> {
    let mut n = [len_field(2, output.as_bytes()), len_field(4, op.as_bytes())].concat();
    for a in attributes {
        n.extend(len_field(5, a));
    }
    n
}

/// A `Constant` node whose `value` is `tensor` (a `TensorProto`).
pub fn constant(output: &str, tensor: &[u8]) -> Vec<u8> {
    let attr = [
        len_field(1, b"value"),
        len_field(5, tensor),
        varint_field(20, 4),
    ]
    .concat();
    node("Constant", output, &[attr])
}

/// An `If` node whose `then_branch` is `graph` (a `GraphProto`).
pub fn if_node(output: &str, graph: &[u8]) -> Vec<u8> {
    let attr = [
        len_field(1, b"then_branch"),
        len_field(6, graph),
        varint_field(20, 5),
    ]
    .concat();
    node("If", output, &[attr])
}

/// A `GraphProto` of nodes and initializers.
pub fn graph(nodes: &[Vec<u8>], initializers: &[Vec<u8>]) -> Vec<u8> {
    let mut g = len_field(2, b"g");
    for n in nodes {
        g.extend(len_field(1, n));
    }
    for t in initializers {
        g.extend(len_field(5, t));
    }
    g.extend(len_field(11, &len_field(1, b"x")));
    g.extend(len_field(12, &len_field(1, b"y")));
    g
}

/// A `ModelProto` of `graph`: IR version 9, opset 17.
pub fn model(graph: &[u8]) -> Vec<u8> {
    let opset = [len_field(1, b""), varint_field(2, 17)].concat();
    [
        varint_field(1, 9),
        len_field(2, b"hand"),
        len_field(8, &opset),
        len_field(7, graph),
    ]
    .concat()
}

/// Little-endian bytes of f32 values.
pub fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|x| x.to_le_bytes()).collect()
}
