//! An OpenVINO IR as JSON, for `manifest.json`: the graph's name and IR
//! version, its layers counted by type, its inputs and outputs, the
//! `.bin`, each constant served with its layer id, graph, element type,
//! shape and byte range, and the constants left out with why.

use super::objects::File;
use super::Const;
use crate::format::cbor::Value as J;
use crate::format::json::{to_json_pretty, Sink};

fn map<'a>(entries: Vec<(&'a str, J<'a>)>) -> J<'a> {
    J::Map(entries.into_iter().map(|(k, v)| (J::Text(k), v)).collect())
}

fn names(v: &[String]) -> J<'_> {
    J::Array(v.iter().map(|n| J::Text(n)).collect())
}

/// Const `c`'s entry (also its `meta.json`'s `openvino`).
pub fn constant(c: &Const) -> J<'_> {
    map(vec![
        ("layer_id", J::Uint(c.id)),
        ("layer_name", J::Text(&c.name)),
        ("graph", J::Uint(c.graph.into())),
        ("element_type", J::Text(&c.element_type)),
        (
            "shape",
            J::Array(c.shape.iter().map(|&d| J::Uint(d)).collect()),
        ),
        ("offset", J::Uint(c.offset)),
        ("size", J::Uint(c.size)),
    ])
}

/// The document `manifest.json` holds; `objects` are the objects' names,
/// in the order of `file.consts`.
pub fn document<'a>(file: &'a File, objects: &[&'a str]) -> J<'a> {
    let m = &file.model;
    let consts = (objects.iter().zip(&file.consts))
        .map(|(name, &i)| (J::Text(name), constant(&m.consts[i])));
    let left_out = (file.left_out.iter()).map(|(n, why)| (J::Text(n.as_str()), J::Text(why)));
    let ops = (m.ops.iter()).map(|(op, n)| (J::Text(op.as_str()), J::Uint(*n)));
    let layers = m.ops.values().fold(0u64, |a, n| a.saturating_add(*n));
    map(vec![
        ("format", J::Text("openvino")),
        ("name", J::Text(&m.name)),
        ("ir_version", J::Uint(m.version.into())),
        ("bin", J::Text(&file.bin)),
        (
            "graph",
            map(vec![
                ("inputs", names(&m.inputs)),
                ("outputs", names(&m.outputs)),
                ("layers", J::Uint(layers)),
                ("ops", J::Map(ops.collect())),
            ]),
        ),
        ("constants", J::Map(consts.collect())),
        ("left_out", J::Map(left_out.collect())),
    ])
}

/// Writes `manifest.json` of the IR whose objects are named `objects`.
pub fn write_manifest(file: &File, objects: &[&str], out: &mut dyn Sink) {
    to_json_pretty(&document(file, objects), out);
    out.push('\n');
}
