//! An OpenVINO IR's constants as zTensor objects: each a dense object of
//! one part, `data`, a range of the `.bin` (its `blob.shard` names the
//! `.bin`). Sub-byte types zTensor does not register (`i4`, `u4`, `nf4`,
//! `u1` ... `u6`) are objects whose `data` is refused and whose `data.raw`
//! is their packed bytes; string constants are left out, with why.
//!
//! Names: a Const's layer name, as written; OpenVINO does not require
//! them to be unique, so a name met again is made unique as
//! `NAME#ID` (its layer id), or `NAME#G.ID` in subgraph G, which no name
//! of the file then takes.

use std::collections::HashSet;

use super::{types, Model};
use crate::format::manifest::{Object, Part};
use crate::format::text::Texts;
use crate::format::types::{DType, ElementType};

/// An opened IR: what it says, and how its constants are objects.
#[derive(Debug, Default)]
pub struct File {
    /// The graph as read.
    pub model: Model,
    /// The name of the `.bin`, as the parts' `blob.shard`.
    pub bin: String,
    /// The Const each object is (index in `Model::consts`), and the
    /// object's name when it is not the Const's.
    pub consts: Vec<usize>,
    /// Constants left out, by name, with why.
    pub left_out: Vec<(String, String)>,
}

/// Maps `model`'s constants to objects, their bytes in the `.bin` named
/// `bin` (their sizes and ranges were checked against it).
pub fn objects(model: Model, bin: &str) -> (Vec<Object>, File) {
    let mut texts = Texts::default();
    let (data, dense, shard) = (texts.get("data"), texts.get("dense"), texts.get(bin));
    let mut file = File {
        bin: bin.to_string(),
        ..File::default()
    };
    let mut objects = Vec::new();
    let written: HashSet<&str> = model.consts.iter().map(|c| c.name.as_str()).collect();
    let mut taken: HashSet<String> = HashSet::new();
    for (i, c) in model.consts.iter().enumerate() {
        let ty = match types::ztensor_type(&c.element_type) {
            Ok((dtype, logical)) => ElementType {
                dtype,
                logical: logical.map(|l| texts.get(l.name())),
            },
            Err(why) if c.element_type == "string" => {
                file.left_out.push((c.name.clone(), why));
                continue;
            }
            Err(_) => ElementType {
                dtype: DType::U8,
                logical: Some(texts.get(&format!("openvino.{}", c.element_type))),
            },
        };
        let name = match taken.contains(&c.name) {
            false => c.name.clone(),
            true => unique(c, &written, &taken),
        };
        taken.insert(name.clone());
        let mut part = Part::raw(data.clone(), ty, c.offset, c.size);
        part.blob.shard = Some(shard.clone());
        objects.push(Object {
            name: name.as_str().into(),
            shape: texts.shape(&c.shape),
            layout: dense.clone(),
            attributes: None,
            parts: smallvec::smallvec![part],
        });
        file.consts.push(i);
    }
    file.model = model;
    (objects, file)
}

/// A name for Const `c` whose own is taken: `NAME#ID` (`NAME#G.ID` in
/// subgraph G), with `#` again until no name of the file is it.
fn unique(c: &super::Const, written: &HashSet<&str>, taken: &HashSet<String>) -> String {
    let mut name = match c.graph {
        0 => format!("{}#{}", c.name, c.id),
        g => format!("{}#{g}.{}", c.name, c.id),
    };
    while written.contains(name.as_str()) || taken.contains(&name) {
        name.push('#');
    }
    name
}
