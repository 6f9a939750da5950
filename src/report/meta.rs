//! An object's `meta.json` in a mount: what the model says of it (names,
//! shape, layout, attributes, per part its types, encoding, lengths and
//! digest) beside what the tree serves of it ([`Served`]: the files of
//! each part, its view, its `.npy` files, its place in `model.safetensors`),
//! in the form its format asks for ([`MetaForm`]).

use super::{opt_text, part_available};
use crate::format::cbor::{self, Value};
use crate::format::hurray::{self, objects};
use crate::format::{gguf, json, onnx, openvino, profiles, pytorch, Object};
use crate::model::{Input, MetaForm, Model, TensorData};

/// A `.npy` file the tree serves.
#[derive(Debug, Clone)]
pub struct Npy {
    /// Its name in the object's directory.
    pub file: String,
    /// Its header's `descr`.
    pub descr: &'static str,
    /// Its header's `shape`.
    pub shape: Vec<u64>,
}

/// What the tree serves of an object, and why it serves no more.
#[derive(Debug, Clone)]
pub struct Served {
    /// For each part, the names of the files serving it.
    pub files: Vec<Vec<String>>,
    /// For each part, its `.npy` file, or why it has none.
    pub npy: Vec<Result<Npy, String>>,
    /// For each part without a decoded file, why.
    pub refused: Vec<Option<String>>,
    /// The object's view file (its name and length), if it has one.
    pub view: Option<(&'static str, u64)>,
    /// The view's `.npy` file, or why it has none.
    pub view_npy: Result<Npy, String>,
    /// Where `model.safetensors` holds the object (its file, its name
    /// there, its dtype), or why it does not.
    pub safetensors: Result<(String, String, &'static str), String>,
    /// For a quantized tensor, what its values are dequantized from (a
    /// ggml type, or the layout), or why it has no values; `Ok(None)` for
    /// a tensor that is not quantized.
    pub values: Result<Option<String>, String>,
    /// Whether it has a `stats.json` (a tensor with numbers).
    pub stats: bool,
}

/// The file of a tensor's value statistics, in its directory.
pub const STATS_JSON: &str = "stats.json";

/// Object `object`'s `meta.json`, pretty-printed, with a final newline.
pub fn meta_json(model: &Model, object: u32, served: &Served) -> Vec<u8> {
    let o = &model.manifest().expect("a mount of objects").objects[object as usize];
    match model.input().meta_form(object as usize) {
        MetaForm::Hurray(t) => hurray_meta_json(model, object, o, t, served),
        MetaForm::Object => object_meta_json(model, object, o, served),
    }
}

/// `meta.json`'s `npy` (or `view_npy`) and `no_npy` values.
fn npy_json(info: &Result<Npy, String>) -> (Value<'_>, Value<'_>) {
    match info {
        Ok(npy) => (
            Value::Map(vec![
                (Value::Text("file"), Value::Text(&npy.file)),
                (Value::Text("descr"), Value::Text(npy.descr)),
                (Value::Text("shape"), uints(&npy.shape)),
            ]),
            Value::Null,
        ),
        Err(why) => (Value::Null, Value::Text(why)),
    }
}

/// `meta.json`'s `safetensors` and `no_safetensors` values for object `o`.
fn safetensors_json<'a>(
    o: &'a Object,
    info: &'a Result<(String, String, &'static str), String>,
) -> (Value<'a>, Value<'a>) {
    match info {
        Ok((file, name, dtype)) => (
            Value::Map(vec![
                (Value::Text("file"), Value::Text(file)),
                (Value::Text("name"), Value::Text(name)),
                (Value::Text("dtype"), Value::Text(dtype)),
                (Value::Text("shape"), uints(&o.shape)),
            ]),
            Value::Null,
        ),
        Err(why) => (Value::Null, Value::Text(why)),
    }
}

/// `meta.json`'s `values` (a quantized tensor's values: its file, its
/// `.npy`, their type and what they are dequantized from) and `no_values`
/// (why a quantized tensor has none).
fn values_json(served: &Served) -> (Value<'_>, Value<'_>) {
    match (&served.values, served.view) {
        (Ok(Some(from)), Some((file, _))) => {
            let npy = served.view_npy.as_ref().ok();
            (
                Value::Map(vec![
                    (Value::Text("file"), Value::Text(file)),
                    (Value::Text("npy"), opt_text(npy.map(|n| n.file.as_str()))),
                    (Value::Text("dtype"), Value::Text("float32")),
                    (Value::Text("dequantized_from"), Value::Text(from)),
                ]),
                Value::Null,
            )
        }
        (Ok(Some(_)), None) => (Value::Null, Value::Text("its values cannot be served")),
        (Ok(None), _) => (Value::Null, Value::Null),
        (Err(why), _) => (Value::Null, Value::Text(why)),
    }
}

fn uints(v: &[u64]) -> Value<'static> {
    Value::Array(v.iter().map(|&d| Value::Uint(d)).collect())
}

/// The object form: true names, shape, layout, attributes, and per part
/// its types, encoding, lengths, digest and the files serving it.
fn object_meta_json(model: &Model, object: u32, o: &Object, served: &Served) -> Vec<u8> {
    let attrs = o.attributes().and_then(|a| cbor::parse(a).ok());
    let t = Value::Text;
    let opt = opt_text;
    let digests: Vec<Option<String>> = (o.parts.iter())
        .map(|p| p.digest.as_ref().map(ToString::to_string))
        .collect();
    let npys: Vec<_> = served.npy.iter().map(npy_json).collect();
    let parts = o
        .parts
        .iter()
        .enumerate()
        .map(|(j, p)| {
            Value::Map(vec![
                (t("name"), t(&p.name)),
                (t("dtype"), t(p.ty.dtype.name())),
                (t("type"), opt(p.ty.logical.as_deref())),
                (t("encoding"), opt(p.encoding.as_deref())),
                (t("stored_length"), Value::Uint(p.blob.length)),
                (t("decoded_length"), Value::Uint(p.decoded_size())),
                (t("digest"), opt(digests[j].as_deref())),
                (t("shard"), opt(p.blob.shard.as_deref())),
                (t("available"), Value::Bool(part_available(model, p))),
                (
                    t("files"),
                    Value::Array(served.files[j].iter().map(|f| t(f)).collect()),
                ),
                (t("refused"), opt(served.refused[j].as_deref())),
                (t("npy"), npys[j].0.clone()),
                (t("no_npy"), npys[j].1.clone()),
            ])
        })
        .collect();
    let mut doc = vec![
        (t("name"), t(&o.name)),
        (t("shape"), uints(&o.shape)),
        (t("layout"), t(&o.layout)),
        (t("attributes"), attrs.unwrap_or(Value::Null)),
        (t("parts"), Value::Array(parts)),
    ];
    doc.push((t("view"), opt(served.view.map(|v| v.0))));
    let (view_npy, no_view_npy) = npy_json(&served.view_npy);
    doc.push((t("view_npy"), view_npy));
    doc.push((t("no_view_npy"), no_view_npy));
    let (st, no_st) = safetensors_json(o, &served.safetensors);
    doc.push((t("safetensors"), st));
    doc.push((t("no_safetensors"), no_st));
    let (values, no_values) = values_json(served);
    doc.push((t("values"), values));
    doc.push((t("no_values"), no_values));
    doc.push((t("stats"), opt(served.stats.then_some(STATS_JSON))));
    let layout = profiles::Layout::of(&o.layout);
    let table_note = profiles::gguf_table_mismatch(o);
    if let profiles::Layout::Gguf { ggml_type } = &layout {
        doc.push((t("ggml_type"), t(ggml_type)));
        doc.push((t("ggml_block_table"), opt(table_note.as_deref())));
    }
    let ggml_layout = matches!(layout, profiles::Layout::Gguf { .. });
    for (k, v) in format_fields(model.input(), object as usize, ggml_layout) {
        doc.push((t(k), v));
    }
    let mut s = String::new();
    json::to_json_pretty(&Value::Map(doc), &mut s);
    s.push('\n');
    s.into_bytes()
}

/// The fields the format adds to object `i`'s `meta.json`: a GGUF
/// tensor's info (and its ggml type, unless its layout, `ggml_layout`,
/// says it already); a PyTorch tensor's.
fn format_fields(input: &Input, i: usize, ggml_layout: bool) -> Vec<(&'static str, Value<'_>)> {
    match input {
        Input::Gguf(f) => {
            let info = &f.tensors[i];
            let mut fields = Vec::new();
            if !ggml_layout {
                fields.push(("ggml_type", Value::Text(info.ty.name)));
            }
            fields.push(("gguf", gguf::json::tensor(info)));
            fields
        }
        Input::Torch(f) => vec![("torch", pytorch::json::tensor(f, &f.tensors[i]))],
        Input::Zt(_) | Input::Hurray(_) | Input::Safetensors(_) | Input::Npz(_) => Vec::new(),
        Input::Onnx(f) => vec![("onnx", onnx::json::tensor(&f.model.tensors[f.tensor[i]]))],
        Input::OpenVino(f) => vec![(
            "openvino",
            openvino::json::constant(&f.model.consts[f.consts[i]]),
        )],
    }
}

/// A Hurray tensor's form: its true name, element type, shape and layout,
/// where its `data` comes from (or why there is none), its buffers and the
/// files serving them, and its descriptor decoded.
fn hurray_meta_json(
    model: &Model,
    object: u32,
    o: &Object,
    t: &hurray::Tensor,
    served: &Served,
) -> Vec<u8> {
    let d = &t.descriptor;
    let tx = Value::Text;
    let (data, why) = match objects::data_of(t) {
        objects::Data::Direct { offset, length } => (
            Value::Map(vec![
                (tx("file"), tx(objects::DATA)),
                (tx("from"), tx("buffer 0, as stored")),
                (tx("offset"), Value::Uint(offset)),
                (tx("length"), Value::Uint(length)),
            ]),
            None,
        ),
        objects::Data::Computed if served.view.is_some() => (
            Value::Map(vec![
                (tx("file"), tx(served.view.map_or(objects::DATA, |v| v.0))),
                (tx("from"), tx(computed_from(d))),
                (tx("length"), Value::Uint(served.view.map_or(0, |v| v.1))),
            ]),
            None,
        ),
        objects::Data::Computed => (Value::Null, Some(no_tensor_data(model, object))),
        objects::Data::Absent(why) => (Value::Null, Some(why)),
    };
    let no_file = Err("the tensor has no data file".to_string());
    let npy = match (o.parts.first(), served.view) {
        (_, Some(_)) => &served.view_npy,
        (Some(p), _) if p.name == objects::DATA => &served.npy[0],
        _ => &no_file,
    };
    let (npy, no_npy) = npy_json(npy);
    let (st, no_st) = safetensors_json(o, &served.safetensors);
    let buffers = (o.parts.iter().enumerate())
        .filter(|(_, p)| p.name != objects::DATA)
        .map(|(j, p)| {
            Value::Map(vec![
                (tx("name"), tx(&p.name)),
                (tx("offset"), Value::Uint(p.blob.offset)),
                (tx("byte_size"), Value::Uint(p.blob.length)),
                (
                    tx("files"),
                    Value::Array(served.files[j].iter().map(|f| tx(f)).collect()),
                ),
            ])
        })
        .collect();
    let shape = (d.shape.iter())
        .map(|&n| match n {
            u64::MAX => Value::Null,
            n => Value::Uint(n),
        })
        .collect();
    let doc = Value::Map(vec![
        (tx("name"), tx(&t.name)),
        (tx("format"), tx("hurray")),
        (tx("type"), tx(d.elem.name())),
        (tx("shape"), Value::Array(shape)),
        (tx("layout"), tx(hurray::layout_name(&d.layout))),
        (tx("data"), data),
        (tx("no_data"), opt_text(why.as_deref())),
        (tx("buffers"), Value::Array(buffers)),
        (tx("npy"), npy),
        (tx("no_npy"), no_npy),
        (tx("safetensors"), st),
        (tx("no_safetensors"), no_st),
        (tx("values"), values_json(served).0),
        (tx("stats"), opt_text(served.stats.then_some(STATS_JSON))),
        (tx("descriptor"), hurray::json::descriptor(d)),
    ]);
    hurray::json::render(&doc).into_bytes()
}

/// Why object `i` has no row-major tensor its format places.
fn no_tensor_data(model: &Model, i: u32) -> String {
    match model.tensor_data(i) {
        TensorData::Absent(why) => why,
        TensorData::ByLayout | TensorData::Stored { .. } | TensorData::Computed { .. } => {
            "no row-major view".to_string()
        }
    }
}

/// Where a Hurray tensor's computed `data` comes from.
fn computed_from(d: &hurray::Descriptor) -> &'static str {
    if d.quantization.is_some() {
        return "buffer 0's quantized storage, dequantized to float32 by its scheme's formula, by range";
    }
    match d.layout {
        hurray::Layout::Composite(_) => {
            "the partition's members, assembled in row-major order by range"
        }
        _ => "buffer 0, reordered to row-major by range",
    }
}
