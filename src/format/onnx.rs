//! An ONNX model (`ModelProto`, onnx/onnx.proto) read on
//! [`crate::format::protobuf`]: its tensors and where each one's bytes
//! are, and the facts `manifest.json` is to say of its graph. Pure: the
//! bytes of the `.onnx` file in, offsets into them out; external files are
//! named, never opened here. Groundwork of issue 42, not yet a format the
//! commands read.
//!
//! The tensors: every initializer of the main graph and of every subgraph
//! (a node attribute's `g` or `graphs`: `If` and `Loop` bodies), and the
//! `value` tensor of every `Constant` node, named by the node's output.
//! A tensor's bytes are its `raw_data` (an offset and a length in the
//! file), or its typed field (`float_data`, `int32_data`, ...: the tensor
//! message is read again to convert them), or external data (`location`,
//! `offset`, `length`). Sparse initializers are listed by name, to be left
//! out with their reason.
//!
//! Read as protobuf defines: fields in any order, unknown fields skipped,
//! the last of a singular scalar field wins, a message field written in
//! several parts is their merge (the model's graph read part by part), a
//! repeated field's runs (packed or not) in order. A `Constant`'s tensor
//! in two parts is refused: no writer splits one. Bounded: subgraphs nest at most [`MAX_GRAPH_DEPTH`]
//! deep; nothing is allocated by a count read from the file (dims and
//! names are as many as the bytes hold).

pub mod json;
pub mod objects;
pub mod typed;
pub mod types;

use std::collections::BTreeMap;

use crate::error::Rule;
use crate::format::protobuf::{fields, packed_varints, Field, Value, WireError};

/// Deepest nesting of subgraphs (a graph in a node's attribute).
pub const MAX_GRAPH_DEPTH: u32 = 64;

/// Why the bytes are not an ONNX model this reader takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnnxError {
    /// Where, from the start of the file.
    pub offset: u64,
    /// What is wrong there.
    pub what: String,
    /// The rule it breaks.
    pub rule: Rule,
}

impl OnnxError {
    /// A model ONNX's readers do not load ([`Rule::OnnxModel`]).
    pub fn at(offset: u64, what: String) -> OnnxError {
        OnnxError {
            offset,
            what,
            rule: Rule::OnnxModel,
        }
    }

    /// Bytes that are not protobuf ([`Rule::OnnxProtobuf`]).
    pub fn wire(offset: u64, what: &str) -> OnnxError {
        OnnxError {
            offset,
            what: format!("not protobuf: {what}"),
            rule: Rule::OnnxProtobuf,
        }
    }
}

impl std::fmt::Display for OnnxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.what, self.offset)
    }
}

impl From<WireError> for OnnxError {
    fn from(e: WireError) -> OnnxError {
        OnnxError::wire(e.offset, e.what)
    }
}

/// Where a tensor's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    /// `raw_data`: `len` bytes at `offset` of the file.
    Raw { offset: u64, len: u64 },
    /// A typed field (its number: 4 `float_data`, 5 `int32_data`, 6
    /// `string_data`, 7 `int64_data`, 10 `double_data`, 11 `uint64_data`)
    /// of the tensor message at `message` (offset, length): its values are
    /// read again from there.
    Typed { field: u32, message: (u64, u64) },
    /// `data_location: EXTERNAL`: a file beside the model.
    External {
        location: String,
        offset: Option<u64>,
        length: Option<u64>,
    },
    /// No data field at all (a tensor of no elements, or a broken one:
    /// its reader decides).
    None,
}

/// Where a tensor comes from in the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An initializer of the graph at this depth (0: the main graph).
    Initializer { depth: u32 },
    /// The `value` of a `Constant` node.
    Constant { depth: u32 },
}

/// One tensor of the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    /// Its name (a Constant's: its node's first output).
    pub name: String,
    /// `TensorProto.DataType`, as written.
    pub data_type: i32,
    /// Its dims, outermost first.
    pub dims: Vec<u64>,
    /// Where its bytes are.
    pub data: Data,
    /// Where it is in the model.
    pub source: Source,
}

/// What a model holds besides its tensors, and the tensors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Model {
    pub ir_version: Option<i64>,
    pub producer_name: String,
    pub producer_version: String,
    /// `opset_import`: (domain, version).
    pub opsets: Vec<(String, i64)>,
    /// `metadata_props`.
    pub metadata: Vec<(String, String)>,
    /// The main graph's inputs and outputs, by name.
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    /// Nodes of every graph, counted by `op_type`.
    pub ops: BTreeMap<String, u64>,
    pub tensors: Vec<Tensor>,
    /// Sparse initializers, by their values tensor's name.
    pub sparse: Vec<String>,
}

/// Reads the `ModelProto` that is the whole of `buf`.
pub fn parse(buf: &[u8]) -> Result<Model, OnnxError> {
    let mut m = Model::default();
    // A message field written twice is one message, merged (protobuf's
    // rule: as if its bytes were one run): each part is read in order.
    let mut graphs = Vec::new();
    for f in fields(buf, 0) {
        let f = f?;
        match (f.number, f.value) {
            (1, Value::Varint(v)) => m.ir_version = Some(v as i64),
            (2, Value::Len(b, at)) => m.producer_name = text(b, at)?,
            (3, Value::Len(b, at)) => m.producer_version = text(b, at)?,
            (7, Value::Len(b, at)) => graphs.push((b, at)),
            (8, Value::Len(b, at)) => m.opsets.push(opset(b, at)?),
            (14, Value::Len(b, at)) => m.metadata.push(pair(b, at)?),
            // Unknown, or a known field of another wire type, which
            // protobuf keeps as an unknown field.
            _ => {}
        }
    }
    if graphs.is_empty() {
        return Err(OnnxError::at(0, "a model with no graph".into()));
    }
    for (g, at) in graphs {
        read_graph(g, at, 0, &mut m)?;
    }
    Ok(m)
}

fn text(b: &[u8], at: u64) -> Result<String, OnnxError> {
    std::str::from_utf8(b)
        .map(str::to_string)
        .map_err(|_| OnnxError::at(at, "a string that is not UTF-8".into()))
}

fn opset(buf: &[u8], base: u64) -> Result<(String, i64), OnnxError> {
    let (mut domain, mut version) = (String::new(), 0);
    for f in fields(buf, base) {
        match f? {
            Field {
                number: 1,
                value: Value::Len(b, at),
            } => domain = text(b, at)?,
            Field {
                number: 2,
                value: Value::Varint(v),
            } => version = v as i64,
            _ => {}
        }
    }
    Ok((domain, version))
}

/// A `StringStringEntryProto`: (key, value).
fn pair(buf: &[u8], base: u64) -> Result<(String, String), OnnxError> {
    let (mut key, mut value) = (String::new(), String::new());
    for f in fields(buf, base) {
        match f? {
            Field {
                number: 1,
                value: Value::Len(b, at),
            } => key = text(b, at)?,
            Field {
                number: 2,
                value: Value::Len(b, at),
            } => value = text(b, at)?,
            _ => {}
        }
    }
    Ok((key, value))
}

/// A `GraphProto` at `depth`: its initializers, sparse initializers,
/// nodes (their Constant tensors, their subgraphs), and for the main
/// graph its inputs and outputs.
fn read_graph(buf: &[u8], base: u64, depth: u32, m: &mut Model) -> Result<(), OnnxError> {
    if depth > MAX_GRAPH_DEPTH {
        return Err(OnnxError::at(
            base,
            format!("subgraphs nested deeper than {MAX_GRAPH_DEPTH}"),
        ));
    }
    for f in fields(buf, base) {
        let Field { number, value } = f?;
        let Value::Len(b, at) = value else { continue };
        match number {
            1 => read_node(b, at, depth, m)?,
            5 => {
                let t = read_tensor(b, at, Source::Initializer { depth })?;
                m.tensors.push(t);
            }
            15 => m.sparse.push(sparse_name(b, at)?),
            11 if depth == 0 => m.inputs.push(value_name(b, at)?),
            12 if depth == 0 => m.outputs.push(value_name(b, at)?),
            _ => {}
        }
    }
    Ok(())
}

/// Calls `f` with each length-delimited value of field `number` of the
/// message `buf` (at `base`), in order.
fn each_len(
    buf: &[u8],
    base: u64,
    number: u32,
    mut f: impl FnMut(&[u8], u64) -> Result<(), OnnxError>,
) -> Result<(), OnnxError> {
    for field in fields(buf, base) {
        if let Field {
            number: n,
            value: Value::Len(b, at),
        } = field?
        {
            if n == number {
                f(b, at)?;
            }
        }
    }
    Ok(())
}

/// A `ValueInfoProto`'s name.
fn value_name(buf: &[u8], base: u64) -> Result<String, OnnxError> {
    let mut name = String::new();
    each_len(buf, base, 1, |b, at| {
        name = text(b, at)?;
        Ok(())
    })?;
    Ok(name)
}

/// A `SparseTensorProto`'s name: its `values` tensor's.
fn sparse_name(buf: &[u8], base: u64) -> Result<String, OnnxError> {
    let mut name = String::new();
    each_len(buf, base, 1, |b, at| {
        name = read_tensor(b, at, Source::Initializer { depth: 0 })?.name;
        Ok(())
    })?;
    Ok(name)
}

/// A `NodeProto`: counted by op type; a `Constant`'s `value` tensor; the
/// graphs of its attributes read at the next depth.
fn read_node(buf: &[u8], base: u64, depth: u32, m: &mut Model) -> Result<(), OnnxError> {
    let (mut op, mut output, mut domain) = (String::new(), None, String::new());
    let mut attrs = Vec::new();
    for f in fields(buf, base) {
        let Field { number, value } = f?;
        let Value::Len(b, at) = value else { continue };
        match number {
            2 if output.is_none() => output = Some(text(b, at)?),
            4 => op = text(b, at)?,
            5 => attrs.push((b, at)),
            7 => domain = text(b, at)?,
            _ => {}
        }
    }
    *m.ops.entry(op.clone()).or_default() += 1;
    let constant = op == "Constant" && domain.is_empty();
    for (b, at) in attrs {
        let mut name = String::new();
        let mut tensor = None;
        for f in fields(b, at) {
            let Field { number, value } = f?;
            let Value::Len(v, vat) = value else { continue };
            match number {
                1 => name = text(v, vat)?,
                // Two parts of one tensor would merge field by field;
                // no writer splits a tensor so, and it is not read here.
                5 if tensor.is_some() => {
                    return Err(OnnxError::at(
                        vat,
                        "an attribute's tensor written in two parts (not read here)".into(),
                    ))
                }
                5 => tensor = Some((v, vat)),
                6 | 11 => read_graph(v, vat, depth + 1, m)?,
                _ => {}
            }
        }
        if let (true, "value", Some((v, vat))) = (constant, name.as_str(), tensor) {
            let mut t = read_tensor(v, vat, Source::Constant { depth })?;
            t.name = output.clone().unwrap_or_default();
            m.tensors.push(t);
        }
    }
    Ok(())
}

/// A `TensorProto` at `base`.
pub fn read_tensor(buf: &[u8], base: u64, source: Source) -> Result<Tensor, OnnxError> {
    let (mut name, mut data_type, mut dims) = (String::new(), 0, Vec::new());
    let (mut raw, mut typed, mut external, mut location) = (None, None, Vec::new(), 0);
    for f in fields(buf, base) {
        let Field { number, value } = f?;
        match (number, value) {
            (1, Value::Varint(d)) => dims.push(dim(d as i64, base)?),
            (1, Value::Len(b, at)) => {
                for d in packed_varints(b) {
                    let d = d.map_err(|what| OnnxError::wire(at, what))?;
                    dims.push(dim(d as i64, at)?);
                }
            }
            (2, Value::Varint(t)) => data_type = t as i32,
            (8, Value::Len(b, at)) => name = text(b, at)?,
            (9, Value::Len(b, at)) => raw = Some((at, b.len() as u64)),
            (4 | 5 | 6 | 7 | 10 | 11, v) if typed_wire(number, v) => typed = Some(number),
            (13, Value::Len(b, at)) => external.push(pair(b, at)?),
            (14, Value::Varint(l)) => location = l,
            _ => {}
        }
    }
    let data = match (location, raw, typed) {
        (1, _, _) => external_data(&external, base)?,
        (0, Some((offset, len)), _) => Data::Raw { offset, len },
        (0, None, Some(field)) => Data::Typed {
            field,
            message: (base, buf.len() as u64),
        },
        (0, None, None) => Data::None,
        (l, ..) => {
            return Err(OnnxError::at(
                base,
                format!("data_location {l} is neither DEFAULT (0) nor EXTERNAL (1)"),
            ))
        }
    };
    Ok(Tensor {
        name,
        data_type,
        dims,
        data,
        source,
    })
}

/// True when `v` is a wire type typed field `number` is written in:
/// packed (length-delimited) or one value of its type.
fn typed_wire(number: u32, v: Value<'_>) -> bool {
    matches!(
        (number, v),
        (_, Value::Len(..))
            | (4, Value::I32(_))
            | (10, Value::I64(_))
            | (5 | 7 | 11, Value::Varint(_))
    )
}

fn dim(d: i64, at: u64) -> Result<u64, OnnxError> {
    u64::try_from(d).map_err(|_| OnnxError::at(at, format!("a negative dim {d}")))
}

/// `external_data`'s keys: `location` (required), `offset` and `length`
/// (decimal integers as text); others (`checksum`) are not used here.
fn external_data(entries: &[(String, String)], at: u64) -> Result<Data, OnnxError> {
    let get = |k: &str| {
        entries
            .iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v)
    };
    let number = |k: &str| -> Result<Option<u64>, OnnxError> {
        get(k)
            .map(|v| {
                v.parse::<u64>().map_err(|_| {
                    OnnxError::at(at, format!("external_data {k} {v:?} is not a whole number"))
                })
            })
            .transpose()
    };
    let location = get("location")
        .ok_or_else(|| OnnxError::at(at, "external data with no location".into()))?;
    Ok(Data::External {
        location: location.clone(),
        offset: number("offset")?,
        length: number("length")?,
    })
}

#[cfg(test)]
mod tests;
