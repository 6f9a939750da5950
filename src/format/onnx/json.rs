//! An ONNX model as JSON, for `manifest.json`: what the model says of
//! itself (IR version, producer, opset imports, metadata), its main
//! graph's inputs and outputs and every graph's nodes counted by op type;
//! each tensor served, with its ONNX type, dims and where its bytes are;
//! and the tensors left out, with why.

use super::objects::{type_name, File};
use super::{Data, Source, Tensor};
use crate::format::cbor::Value as J;
use crate::format::json::{to_json_pretty, Sink};

fn map<'a>(entries: Vec<(&'a str, J<'a>)>) -> J<'a> {
    J::Map(entries.into_iter().map(|(k, v)| (J::Text(k), v)).collect())
}

fn names(v: &[String]) -> J<'_> {
    J::Array(v.iter().map(|n| J::Text(n)).collect())
}

fn int<'a>(n: i64) -> J<'a> {
    match u64::try_from(n) {
        Ok(u) => J::Uint(u),
        Err(_) => J::Nint(!(n as u64)),
    }
}

/// Tensor `t`'s entry (also its `meta.json`'s `onnx`).
pub fn tensor(t: &Tensor) -> J<'_> {
    let (source, depth) = match t.source {
        Source::Initializer { depth } => ("initializer", depth),
        Source::Constant { depth } => ("constant", depth),
    };
    let mut e = vec![
        ("data_type", int(t.data_type.into())),
        ("type", J::Text(type_name(t.data_type))),
        (
            "dims",
            J::Array(t.dims.iter().map(|&d| J::Uint(d)).collect()),
        ),
        ("source", J::Text(source)),
        ("graph_depth", J::Uint(depth.into())),
    ];
    match &t.data {
        Data::Raw { offset, len } => e.extend([
            ("storage", J::Text("raw")),
            ("offset", J::Uint(*offset)),
            ("length", J::Uint(*len)),
        ]),
        Data::Typed { field, .. } => e.extend([
            ("storage", J::Text("typed")),
            ("field", J::Text(field_name(*field))),
        ]),
        Data::External {
            location,
            offset,
            length,
        } => {
            e.extend([
                ("storage", J::Text("external")),
                ("location", J::Text(location)),
            ]);
            e.extend(offset.map(|o| ("offset", J::Uint(o))));
            e.extend(length.map(|l| ("length", J::Uint(l))));
        }
        Data::None => e.push(("storage", J::Text("none"))),
    }
    map(e)
}

/// The name of typed field `n` of `TensorProto`.
fn field_name(n: u32) -> &'static str {
    match n {
        4 => "float_data",
        5 => "int32_data",
        6 => "string_data",
        7 => "int64_data",
        10 => "double_data",
        11 => "uint64_data",
        _ => "unknown",
    }
}

/// The document `manifest.json` holds.
pub fn document(file: &File) -> J<'_> {
    let m = &file.model;
    let served = file.tensor.iter().map(|&i| &m.tensors[i]);
    let tensors = served.map(|t| (J::Text(t.name.as_str()), tensor(t)));
    let left_out = (file.left_out.iter()).map(|(n, why)| (J::Text(n.as_str()), J::Text(why)));
    let opsets = (m.opsets.iter())
        .map(|(domain, v)| map(vec![("domain", J::Text(domain)), ("version", int(*v))]));
    let metadata = (m.metadata.iter()).map(|(k, v)| (J::Text(k.as_str()), J::Text(v)));
    let ops = (m.ops.iter()).map(|(op, n)| (J::Text(op.as_str()), J::Uint(*n)));
    let nodes = m.ops.values().fold(0u64, |a, n| a.saturating_add(*n));
    map(vec![
        ("format", J::Text("onnx")),
        ("ir_version", m.ir_version.map_or(J::Null, int)),
        ("producer_name", J::Text(&m.producer_name)),
        ("producer_version", J::Text(&m.producer_version)),
        ("opset_import", J::Array(opsets.collect())),
        ("metadata_props", J::Map(metadata.collect())),
        (
            "graph",
            map(vec![
                ("inputs", names(&m.inputs)),
                ("outputs", names(&m.outputs)),
                ("nodes", J::Uint(nodes)),
                ("ops", J::Map(ops.collect())),
            ]),
        ),
        ("external_files", names(&file.locations)),
        ("tensors", J::Map(tensors.collect())),
        ("left_out", J::Map(left_out.collect())),
    ])
}

/// Writes `manifest.json` of the model.
pub fn write_manifest(file: &File, out: &mut dyn Sink) {
    to_json_pretty(&document(file), out);
    out.push('\n');
}
