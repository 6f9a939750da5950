//! A Hurray file as JSON: `manifest.json` (header, trailer, KV metadata
//! with its types, and every index entry with its descriptor decoded) and
//! the descriptor part of a tensor's `meta.json`.
//!
//! Values go through the lossless JSON mapping of `crate::format::json`
//! (integers beyond 2^53 as `{"$int": ...}`, non-finite floats as
//! `{"$float": ...}`, bytes as `{"$bytes": hex}`). A dynamic dimension
//! (`u64::MAX` in the file) is `null`. KV entries are a list of
//! `{"key", "type", "value"}` in file order, so a key's type survives (an
//! `i64` 5 and a `u64` 5 differ) and nothing is reordered.

use super::{Descriptor, File, KvValue, Layout, Quantization, Tensor, TileInner, TileOrder, Tiled};
use crate::format::cbor::Value;
use crate::format::json;

fn t(s: &str) -> Value<'_> {
    Value::Text(s)
}

fn uint<'a>(n: u64) -> Value<'a> {
    Value::Uint(n)
}

fn int<'a>(n: i64) -> Value<'a> {
    if n >= 0 {
        Value::Uint(n as u64)
    } else {
        Value::Nint(!(n as u64))
    }
}

fn map<'a>(entries: Vec<(&'a str, Value<'a>)>) -> Value<'a> {
    Value::Map(entries.into_iter().map(|(k, v)| (t(k), v)).collect())
}

fn dims<'a>(d: &[u64]) -> Value<'a> {
    Value::Array(
        d.iter()
            .map(|&n| if n == u64::MAX { Value::Null } else { uint(n) })
            .collect(),
    )
}

fn ints<'a>(d: &[i64]) -> Value<'a> {
    Value::Array(d.iter().map(|&n| int(n)).collect())
}

/// The pretty JSON text of `value` with a final newline.
pub fn render(value: &Value<'_>) -> String {
    let mut s = String::new();
    json::to_json_pretty(value, &mut s);
    s.push('\n');
    s
}

/// Writes `manifest.json` of a Hurray file, with a final newline: the
/// document around its KVs and index entries, and those written one at a
/// time (the text is about 1 KiB per tensor, a gigabyte for a million).
pub fn write_manifest(file: &File, out: &mut dyn json::Sink) {
    json::write_kv_document(
        out,
        &document(file),
        &file.kv,
        |e| (&e.key, kv_type(&e.value)),
        |w, e, l| write_kv_value(w, &e.value, l),
        &file.tensors,
        tensor,
    );
}

/// A KV value, an array written an item at a time.
fn write_kv_value(w: &mut json::Writer<'_, dyn json::Sink + '_>, v: &KvValue, level: usize) {
    match v {
        KvValue::Array(a) => w.items(a, level, |w, x, l| write_kv_value(w, x, l)),
        v => w.value(&kv_value(v), level),
    }
}

/// The document with its KVs and index entries left for
/// [`write_manifest`] to write.
fn document(file: &File) -> Value<'_> {
    let h = &file.header;
    let tr = &file.trailer;
    let hint = match h.tensor_count_hint {
        u64::MAX => Value::Null,
        n => uint(n),
    };
    let header = map(vec![
        ("magic", t("HRRYFILE")),
        ("version_major", uint(h.version_major.into())),
        ("version_minor", uint(h.version_minor.into())),
        ("file_flags", uint(h.flags.into())),
        ("has_kv_metadata", Value::Bool(h.flags & 1 != 0)),
        ("sorted_index", Value::Bool(h.flags & 2 != 0)),
        ("has_index_crc32c", Value::Bool(h.flags & 4 != 0)),
        (
            "data_buffer_alignment",
            uint(h.data_buffer_alignment.into()),
        ),
        ("first_descriptor_offset", uint(h.first_descriptor_offset)),
        ("tensor_count_hint", hint),
    ]);
    let trailer = map(vec![
        ("index_offset", uint(tr.index_offset)),
        ("index_length", uint(tr.index_length)),
        ("kv_offset", uint(tr.kv_offset)),
        ("kv_length", uint(tr.kv_length.into())),
        ("index_crc32c", uint(tr.index_crc32c.into())),
    ]);
    map(vec![
        ("format", t("hurray")),
        ("header", header),
        ("trailer", trailer),
        ("kv", Value::Array(Vec::new())),
        ("tensors", Value::Array(Vec::new())),
    ])
}

/// One index entry with its descriptor.
fn tensor(x: &Tensor) -> Value<'_> {
    map(vec![
        ("name", t(&x.name)),
        ("descriptor_offset", uint(x.descriptor_offset)),
        ("descriptor_length", uint(x.descriptor_length.into())),
        ("data_offset", uint(x.data_offset)),
        ("data_length", uint(x.data_length)),
        ("descriptor", descriptor(&x.descriptor)),
    ])
}

/// The type name of a KV value, as `manifest.json` spells it.
pub fn kv_type(v: &KvValue) -> &'static str {
    match v {
        KvValue::Str(_) => "string",
        KvValue::I64(_) => "int64",
        KvValue::U64(_) => "uint64",
        KvValue::F64(_) => "float64",
        KvValue::Bool(_) => "bool",
        KvValue::Bytes(_) => "bytes",
        KvValue::Array(a) => match a.first() {
            None => "array",
            Some(e) => match e {
                KvValue::Str(_) => "array<string>",
                KvValue::I64(_) => "array<int64>",
                KvValue::U64(_) => "array<uint64>",
                KvValue::F64(_) => "array<float64>",
                KvValue::Bool(_) => "array<bool>",
                KvValue::Bytes(_) => "array<bytes>",
                KvValue::Array(_) => "array<array>",
            },
        },
    }
}

fn kv_value(v: &KvValue) -> Value<'_> {
    match v {
        KvValue::Str(s) => t(s),
        KvValue::I64(n) => int(*n),
        KvValue::U64(n) => uint(*n),
        KvValue::F64(x) => Value::Float(*x),
        KvValue::Bool(b) => Value::Bool(*b),
        KvValue::Bytes(b) => Value::Bytes(b),
        KvValue::Array(a) => Value::Array(a.iter().map(kv_value).collect()),
    }
}

/// A descriptor, every field decoded.
pub fn descriptor(d: &Descriptor) -> Value<'_> {
    let mut e = vec![
        ("version_major", uint(d.version_major.into())),
        ("version_minor", uint(d.version_minor.into())),
        ("descriptor_length", uint(d.length.into())),
        ("flags", uint(d.flags.into())),
        ("type", t(d.elem.name())),
        ("type_tag", uint(d.elem.tag().into())),
        ("shape", dims(&d.shape)),
        ("byte_offset", uint(d.byte_offset)),
        ("layout", layout(&d.layout)),
        (
            "buffers",
            Value::Array(
                d.buffers
                    .iter()
                    .map(|b| {
                        map(vec![
                            ("byte_size", uint(b.size)),
                            ("alignment", uint(b.alignment.into())),
                            ("device_tag", uint(b.device.into())),
                            ("sync_mode", uint(b.sync_mode.into())),
                            ("memory_class", uint(b.memory_class.into())),
                        ])
                    })
                    .collect(),
            ),
        ),
    ];
    e.push((
        "quantization",
        d.quantization.as_deref().map_or(Value::Null, quantization),
    ));
    e.push((
        "shard",
        d.shard.as_ref().map_or(Value::Null, |s| {
            map(vec![
                ("parent_shape", dims(&s.parent_shape)),
                ("shard_offset", dims(&s.offset)),
            ])
        }),
    ));
    e.push((
        "statistics",
        d.stats.as_ref().map_or(Value::Null, |s| {
            map(vec![
                ("computed_mask", uint(s.computed_mask.into())),
                ("nnz", uint(s.nnz)),
                ("sparsity_ratio", Value::Float(s.sparsity_ratio)),
                ("value_min", Value::Float(s.value_min)),
                ("value_max", Value::Float(s.value_max)),
                ("value_abs_max", Value::Float(s.value_abs_max)),
                ("value_mean", Value::Float(s.value_mean)),
                ("value_stddev", Value::Float(s.value_stddev)),
                ("nm_n", uint(s.nm_n.into())),
                ("nm_m", uint(s.nm_m.into())),
                ("has_nan", uint(s.has_nan.into())),
                ("has_inf", uint(s.has_inf.into())),
            ])
        }),
    ));
    e.push((
        "extension_type",
        d.extension_type.as_deref().map_or(Value::Null, |x| {
            map(vec![
                ("bit_width", uint(x.bit_width.into())),
                ("packing_factor", uint(x.packing_factor.into())),
                ("is_float", Value::Bool(x.is_float)),
                ("is_signed", Value::Bool(x.is_signed)),
                ("sign_bits", uint(x.sign_bits.into())),
                ("exponent_bits", uint(x.exponent_bits.into())),
                ("mantissa_bits", uint(x.mantissa_bits.into())),
                ("exponent_bias", uint(x.exponent_bias.into())),
                ("has_nan", Value::Bool(x.has_nan)),
                ("has_inf", Value::Bool(x.has_inf)),
            ])
        }),
    ));
    e.push((
        "composite_member",
        d.composite_member.as_ref().map_or(Value::Null, |m| {
            map(vec![("member_role", uint(m.role.into()))])
        }),
    ));
    map(e)
}

fn quantization(q: &Quantization) -> Value<'_> {
    map(vec![
        ("scheme_tag", uint(q.scheme.into())),
        ("scheme_version", uint(q.scheme_version.into())),
        ("parameter_buffers", uint(q.parameter_buffers.into())),
        ("descriptor", Value::Bytes(&q.bytes)),
    ])
}

fn layout(l: &Layout) -> Value<'_> {
    let mut e = vec![("name", t(super::layout_name(l)))];
    match l {
        Layout::RowMajor | Layout::ColumnMajor => {}
        Layout::Strided(s) => e.push(("strides", ints(s))),
        Layout::Tiled(x) => e.push(("tiling", tiled(x))),
        Layout::Morton(bits) => e.push((
            "morton_bits",
            Value::Array(bits.iter().map(|&b| uint(b.into())).collect()),
        )),
        Layout::Coo { nnz, sorted } => {
            e.push(("nnz", uint(*nnz)));
            e.push(("is_sorted", Value::Bool(*sorted)));
        }
        Layout::Csr { nnz } | Layout::Csc { nnz } => e.push(("nnz", uint(*nnz))),
        Layout::Csf { nnz, mode_order } => {
            e.push(("nnz", uint(*nnz)));
            e.push((
                "mode_order",
                Value::Array(mode_order.iter().map(|&m| uint(m.into())).collect()),
            ));
        }
        Layout::BlockPaged(b) => e.push(("fields", Value::Bytes(&b.fields))),
        Layout::Composite(c) => {
            e.push(("composition_rule", uint(c.rule.into())));
            e.push(("combine_op", uint(c.op.into())));
            e.push(("member_count", uint(c.members.into())));
        }
        Layout::Hilbert { order } => e.push(("hilbert_order", uint((*order).into()))),
        Layout::Private { tag, id, data } => {
            e.push(("tag", uint((*tag).into())));
            e.push(("extension_layout_id", uint(*id)));
            e.push(("extension_data", Value::Bytes(data)));
        }
    }
    map(e)
}

fn order(o: &TileOrder) -> Value<'_> {
    match o {
        TileOrder::RowMajor => t("row-major"),
        TileOrder::ColumnMajor => t("column-major"),
        TileOrder::Strided(s) => map(vec![("strided", ints(s))]),
    }
}

fn tiled(x: &Tiled) -> Value<'_> {
    let inner = match &x.inner {
        TileInner::Order(o) => order(o),
        TileInner::Tiled(t) => map(vec![("tiled", tiled(t))]),
    };
    map(vec![
        ("tile_shape", dims(&x.tile)),
        ("outer", order(&x.outer)),
        ("inner", inner),
    ])
}
