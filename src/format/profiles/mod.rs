//! Layout profiles (§5.1, §5.2): which layout an object uses, and the
//! metadata rules of each layout this reader interprets, checked at open for
//! every object (§3.6 item 5).
//!
//! Pure: an [`Object`] in, `Ok` or the first rule it breaks out. The profile
//! texts are summarised in IMPLEMENTER-NOTES §3.2–§3.6; where those texts
//! leave a point open, the submodule that implements the profile says in its
//! own doc how it is settled here.
//!
//! | layout id | kind | here |
//! | --- | --- | --- |
//! | `dense` | core | [`check_dense`] |
//! | `zt.sparse_csr/1`, `zt.sparse_coo/1` | parametric | [`sparse`] |
//! | `zt.quant_group/1`, `zt.mx/1` | parametric | [`quant`] |
//! | `gguf.<type>/1` | opaque | [`gguf`] |
//! | `ztfs.file/1` | ztfs's own: a file of a model's folder | [`check_file`] |
//!
//! Every violation is a [`Rule::LayoutRule`] rejection, except the dense size
//! equation ([`Rule::DenseSize`]) and a CSR `indptr` size that overflows u64
//! ([`Rule::Shape`]). Messages name the object, the attribute or part, and
//! the offending value beside what is allowed.
//!
//! What it deliberately does not do:
//! * look at data: the rules over decoded bytes (sorted sparse indices, the
//!   f4 padding nibble of a sparse or mx part) are
//!   `crate::decode::views::check_data`, run when the object is assembled or
//!   verified;
//! * check parts one by one (alignment, bounds, logical-type dtype pins):
//!   `validate` does that before calling [`check_metadata`], so a profile can
//!   rely on every registered logical type sitting on its required dtype;
//! * reject unknown attribute keys: a profile reads the keys it defines and
//!   ignores the rest, as the manifest does (§3.1), so `zt.sparse_csr/1`
//!   ("attributes: none") accepts an object that has some.
//!
//! Invariants handed on, for an object that passed [`check_metadata`]: the
//! parts a profile names exist with the dtypes and types it allows, and each
//! decoded size is the one its size equation gives, so a decoder may index
//! parts by those equations once it has checked that the decoded bytes have
//! their declared length.
//!
//! Unlike the public implementation, which interprets only `dense` and
//! `zt.sparse_csr/1` and treats the other registered layouts as unknown
//! (notes §1), this reader checks all of them. A file that breaks a metadata
//! rule of `zt.sparse_coo/1`, `zt.quant_group/1`, `zt.mx/1` or a `gguf`
//! profile therefore opens there and is rejected here, as §3.6 item 5 asks
//! of a reader that interprets the layout.

pub mod gguf;
pub mod quant;
pub mod sparse;

pub use gguf::{gguf_block, gguf_table_mismatch, parse_gguf, Gguf, GGML_TYPES};
pub use quant::{
    parse_mx, parse_quant_group, Mx, MxElement, Order, QuantGroup, ScaleForm, ZeroPacking,
    ZeroPoint,
};
pub use sparse::{parse_coo, parse_csr, Coo, Csr};

use super::cbor::{self, Value};
use super::manifest::{Object, Part};
use super::types::{DType, Interpretation};
use crate::error::{Error, Result, Rule};

/// The core layout id (§5.1).
pub const DENSE: &str = "dense";
/// Compressed sparse rows (notes §3.2).
pub const SPARSE_CSR: &str = "zt.sparse_csr/1";
/// Coordinate-list sparse (notes §3.3).
pub const SPARSE_COO: &str = "zt.sparse_coo/1";
/// Affine group quantization (notes §3.4).
pub const QUANT_GROUP: &str = "zt.quant_group/1";
/// OCP microscaling (notes §3.5).
pub const MX: &str = "zt.mx/1";
/// A file of a model's folder, packed by `ztfs pack` (docs/folders.md):
/// ztfs's own profile, in its own namespace (§5.2).
pub const FILE: &str = "ztfs.file/1";

/// The layout an object declares, as far as this reader knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// `dense` (§5.1).
    Dense,
    /// `zt.sparse_csr/1`.
    SparseCsr,
    /// `zt.sparse_coo/1`.
    SparseCoo,
    /// `zt.quant_group/1`.
    QuantGroup,
    /// `zt.mx/1`.
    Mx,
    /// `gguf.<ggml_type>/1` for one of the quantized types in [`GGML_TYPES`].
    Gguf {
        /// The lowercase ggml type name, e.g. `q4_k`.
        ggml_type: String,
    },
    /// `ztfs.file/1`: a file of the model's folder ([`check_file`]).
    File,
    /// `hurray:<layout>`: a tensor of a Hurray file, whose rules were
    /// checked by the Hurray reader (`crate::format::hurray`); its parts
    /// are its `data` range and its buffers, plain bytes.
    Hurray,
    /// `torch:strided` or `torch:quantized`: a strided view of a PyTorch
    /// checkpoint's storage, or a quantized tensor's integers in one
    /// (`crate::format::pytorch`), checked by its reader; its one part is
    /// the storage's bytes.
    Torch,
    /// Any other id, including a `gguf.` id for a type that is not a listed
    /// quantized ggml type, or a registered profile at another version.
    Unknown,
}

impl Layout {
    /// Classifies a layout id. Ids are compared exactly: `zt.mx/2` and
    /// `GGUF.q4_0/1` are unknown.
    pub fn of(id: &str) -> Layout {
        match id {
            DENSE => Layout::Dense,
            SPARSE_CSR => Layout::SparseCsr,
            SPARSE_COO => Layout::SparseCoo,
            QUANT_GROUP => Layout::QuantGroup,
            MX => Layout::Mx,
            FILE => Layout::File,
            _ if id.starts_with(crate::format::hurray::objects::LAYOUT_PREFIX) => Layout::Hurray,
            crate::format::pytorch::objects::STRIDED
            | crate::format::pytorch::objects::QUANTIZED => Layout::Torch,
            _ => match ggml_type_of(id) {
                Some(t) if GGML_TYPES.contains(&t) => Layout::Gguf {
                    ggml_type: t.to_string(),
                },
                _ => Layout::Unknown,
            },
        }
    }

    /// True when this reader interprets objects of this layout: assembles
    /// them into a tensor or a view. False for `gguf` (opaque: its metadata
    /// is checked, its payload is not interpreted) and for unknown layouts
    /// (structural only, §5.2).
    pub fn is_interpreted(&self) -> bool {
        !matches!(self, Layout::Gguf { .. } | Layout::Unknown)
    }
}

/// The ggml type a `gguf.<type>/1` layout id names, listed or not (a GGUF
/// file's newer types, `tq1_0`, `nvfp4`..., are named so too).
pub fn ggml_type_of(layout: &str) -> Option<&str> {
    layout.strip_prefix("gguf.")?.strip_suffix("/1")
}

/// Checks an object's metadata against its layout's rules (§3.6 item 5).
/// Unknown layouts get no checks (§5.2).
pub fn check_metadata(o: &Object) -> Result<()> {
    match Layout::of(&o.layout) {
        Layout::Dense => check_dense(o),
        Layout::SparseCsr => parse_csr(o).map(drop),
        Layout::SparseCoo => parse_coo(o).map(drop),
        Layout::QuantGroup => parse_quant_group(o).map(drop),
        Layout::Mx => parse_mx(o).map(drop),
        Layout::Gguf { .. } => parse_gguf(o).map(drop),
        Layout::File => check_file(o),
        Layout::Hurray | Layout::Torch | Layout::Unknown => Ok(()),
    }
}

/// True for a file of a model's folder, packed (a `ztfs.file/1`
/// object): served at its path, listed as a file, no tensor.
pub fn is_file(o: &Object) -> bool {
    Layout::of(&o.layout) == Layout::File
}

/// The rules of `ztfs.file/1`, a file of a model's folder: the object's
/// name is the file's path in the folder, `/`-separated components of 1
/// to 255 bytes other than `.` and `..` (each becomes a file name in a
/// mount); its shape is `[n]`; its one part `data` is `u8` of no logical
/// type and decodes to `n` bytes. A reader that does not know the profile
/// sees an object of one `u8` part: the file's bytes.
pub fn check_file(o: &Object) -> Result<()> {
    let [p] = o.parts.as_slice() else {
        return Err(violation(
            o,
            format!(
                "must have exactly one part named \"data\", has {:?}",
                part_names(o)
            ),
        ));
    };
    if p.name != "data" {
        return Err(violation(
            o,
            format!(
                "must have exactly one part named \"data\", has {:?}",
                part_names(o)
            ),
        ));
    }
    if p.ty.dtype != DType::U8 || p.ty.logical.is_some() {
        return Err(violation(
            o,
            "its part \"data\" must be u8 with no logical type",
        ));
    }
    let &[n] = &**o.shape else {
        return Err(violation(
            o,
            format!("its shape must be [length], is {:?}", o.shape),
        ));
    };
    if p.decoded_size() != n {
        return Err(violation(
            o,
            format!(
                "its shape says {n} bytes, its part decodes to {}",
                p.decoded_size()
            ),
        ));
    }
    let bad = |c: &str| c.is_empty() || c == "." || c == ".." || c.len() > 255;
    if o.name.split('/').any(bad) {
        return Err(violation(
            o,
            "its name must be a relative path whose components are 1 to 255 bytes, not . or ..",
        ));
    }
    Ok(())
}

/// The dense rules (§5.1): exactly one part, named `data` (`LayoutRule`),
/// whose decoded size is the size function of the element count
/// (`DenseSize`). The equation is skipped for an unregistered logical type,
/// whose size function is unknown; decoding it is refused later (notes §1,
/// corpus `unknown-ltype-structural`).
pub fn check_dense(o: &Object) -> Result<()> {
    let [p] = o.parts.as_slice() else {
        return Err(dense_parts(o));
    };
    if p.name != "data" {
        return Err(dense_parts(o));
    }
    if matches!(p.ty.interpretation(), Interpretation::Unknown) {
        return Ok(());
    }
    let n = o.num_elements().unwrap_or(0);
    match p.ty.size(n) {
        Some(want) if want == p.decoded_size() => Ok(()),
        want => Err(Error::reject(
            Rule::DenseSize,
            format!(
                "dense object {:?}: {} elements of {} need {} bytes, the part decodes to {}",
                o.name,
                n,
                p.ty.type_name(),
                bytes_or_overflow(want),
                p.decoded_size()
            ),
        )),
    }
}

fn dense_parts(o: &Object) -> Error {
    Error::reject(
        Rule::LayoutRule,
        format!(
            "dense object {:?} must have exactly one part named \"data\", has {:?}",
            o.name,
            part_names(o)
        ),
    )
}

// ---- helpers shared by the profile submodules ----

/// A `LayoutRule` rejection of `o`, prefixed with the object and layout.
fn violation(o: &Object, detail: impl std::fmt::Display) -> Error {
    Error::reject(
        Rule::LayoutRule,
        format!("object {:?} ({}): {detail}", o.name, o.layout),
    )
}

fn part_names(o: &Object) -> Vec<&str> {
    o.parts.iter().map(|p| p.name.as_str()).collect()
}

fn bytes_or_overflow(n: Option<u64>) -> String {
    n.map_or("more than 2^64".to_string(), |n| n.to_string())
}

/// Requires the object's parts to be exactly `want` (in any order), and
/// returns them in the order of `want`.
fn exact_parts<'o, const N: usize>(o: &'o Object, want: [&str; N]) -> Result<[&'o Part; N]> {
    let wrong = || {
        violation(
            o,
            format!(
                "parts {:?}, the profile needs exactly {want:?}",
                part_names(o)
            ),
        )
    };
    // Part names are unique (they are map keys), so N parts that include
    // each wanted name are exactly the wanted ones.
    if o.parts.len() != N {
        return Err(wrong());
    }
    let mut found = Vec::with_capacity(N);
    for name in want {
        found.push(o.part(name).ok_or_else(wrong)?);
    }
    found.try_into().map_err(|_| wrong())
}

/// `u8 with type "f8_e8m0"`, or `u32 with no type`, for messages.
fn type_desc(p: &Part) -> String {
    match &p.ty.logical {
        Some(t) => format!("{} with type {t:?}", p.ty.dtype),
        None => format!("{} with no type", p.ty.dtype),
    }
}

/// Requires a part's decoded size to be `want` (`None`: past u64).
fn check_size(o: &Object, p: &Part, want: Option<u64>, why: &str) -> Result<()> {
    if want == Some(p.decoded_size()) {
        return Ok(());
    }
    Err(violation(
        o,
        format!(
            "part {:?} decodes to {} bytes, {why} needs {}",
            p.name,
            p.decoded_size(),
            bytes_or_overflow(want)
        ),
    ))
}

/// Requires a plain index part: `u32` or `u64`, no logical type.
fn index_dtype(o: &Object, p: &Part) -> Result<DType> {
    match (p.ty.dtype, &p.ty.logical) {
        (d @ (DType::U32 | DType::U64), None) => Ok(d),
        _ => Err(violation(
            o,
            format!(
                "part {:?} is {}, must be u32 or u64 with no type",
                p.name,
                type_desc(p)
            ),
        )),
    }
}

/// The object's attributes, parsed; `None` when it has none.
fn attributes(o: &Object) -> Result<Option<Value<'_>>> {
    o.attributes().map(cbor::parse).transpose()
}

/// A required attribute (or field of one, `path` like `packing.word`).
fn required<'v, 'a>(o: &Object, path: &str, v: Option<&'v Value<'a>>) -> Result<&'v Value<'a>> {
    v.ok_or_else(|| missing(o, path))
}

fn missing(o: &Object, path: &str) -> Error {
    violation(
        o,
        format!("attribute {path:?} is missing, the profile requires it"),
    )
}

/// A short rendering of an attribute value for messages: scalars as
/// values, containers by their type and length.
fn show(v: &Value<'_>) -> String {
    match v {
        Value::Uint(n) => n.to_string(),
        Value::Nint(n) => format!("-{}", u128::from(*n) + 1),
        Value::Text(s) => format!("{:?}", super::truncate(s, 64)),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_string(),
        Value::Float(x) => format!("{x:?}"),
        Value::Bytes(b) => format!("a byte string of {} bytes", b.len()),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Map(m) => format!("a map of {} entries", m.len()),
    }
}

fn uint_attr(o: &Object, path: &str, v: &Value<'_>) -> Result<u64> {
    v.as_uint().ok_or_else(|| {
        violation(
            o,
            format!(
                "attribute {path:?} is {}, must be an unsigned integer",
                show(v)
            ),
        )
    })
}

/// A text attribute that must be one of `allowed`; returns its index there.
fn choice_attr(o: &Object, path: &str, v: &Value<'_>, allowed: &[&str]) -> Result<usize> {
    match v.as_text() {
        Some(s) => allowed.iter().position(|a| *a == s).ok_or_else(|| {
            violation(
                o,
                format!(
                    "attribute {path:?} is {}, must be one of {allowed:?}",
                    show(v)
                ),
            )
        }),
        None => Err(violation(
            o,
            format!(
                "attribute {path:?} is {}, must be one of {allowed:?}",
                show(v)
            ),
        )),
    }
}

fn map_attr<'v, 'a>(o: &Object, path: &str, v: &'v Value<'a>) -> Result<&'v Value<'a>> {
    match v {
        Value::Map(_) => Ok(v),
        _ => Err(violation(
            o,
            format!("attribute {path:?} is {}, must be a map", show(v)),
        )),
    }
}

/// The product of all dims but `axis`, which is `product / shape[axis]`
/// without dividing by a zero dim.
fn lanes(shape: &[u64], axis: usize) -> u64 {
    shape
        .iter()
        .enumerate()
        .filter(|&(d, _)| d != axis)
        .fold(1u64, |acc, (_, &n)| acc.saturating_mul(n))
}

/// The axis attribute, below the rank. When absent it is an error, or the
/// last dim when `default_last` (an error still for rank 0, which has none).
fn axis_attr(o: &Object, v: Option<&Value<'_>>, default_last: bool) -> Result<usize> {
    let rank = o.shape.len();
    let axis = match v {
        Some(v) => uint_attr(o, "axis", v)?,
        None if !default_last => return Err(missing(o, "axis")),
        None if rank == 0 => {
            return Err(violation(
                o,
                "attribute \"axis\" is absent and shape [] has rank 0, so there is no last axis to default to",
            ))
        }
        None => rank as u64 - 1,
    };
    if axis >= rank as u64 {
        return Err(violation(
            o,
            format!(
                "attribute \"axis\" is {axis}, must be below the rank {rank} of shape {:?}",
                o.shape
            ),
        ));
    }
    Ok(axis as usize)
}

#[cfg(test)]
pub(crate) mod testing {
    //! Builders for objects in tests: parts with given sizes, attribute maps
    //! encoded deterministically.

    use super::*;
    use crate::format::manifest::BlobRef;
    use crate::format::types::ElementType;

    /// A part of `len` decoded bytes; `ty` is `"dtype"` or `"dtype:type"`.
    pub fn part(name: &str, ty: &str, len: u64) -> Part {
        let (dtype, logical) = match ty.split_once(':') {
            Some((d, t)) => (d, Some(t.into())),
            None => (ty, None),
        };
        Part {
            name: name.into(),
            ty: ElementType {
                dtype: DType::parse(dtype).expect("test dtype"),
                logical,
            },
            blob: BlobRef {
                offset: 4096,
                length: len,
                shard: None,
            },
            encoding: None,
            decoded: 0,
            digest: None,
        }
    }

    /// An object of `layout` with `shape`, `parts` and attribute bytes.
    pub fn object(layout: &str, shape: &[u64], parts: Vec<Part>, attrs: Option<Vec<u8>>) -> Object {
        Object {
            name: "t".into(),
            shape: crate::format::shape(shape),
            layout: layout.into(),
            attributes: attrs.map(crate::format::manifest::boxed_attributes),
            parts: parts.into(),
        }
    }

    /// A CBOR map value with its keys in deterministic order.
    pub fn map<'a>(entries: &[(&'a str, Value<'a>)]) -> Value<'a> {
        let mut v: Vec<(Value<'a>, Value<'a>)> = entries
            .iter()
            .map(|(k, v)| (Value::Text(k), v.clone()))
            .collect();
        v.sort_by(|a, b| {
            cbor::text_key_cmp(a.0.as_text().unwrap_or(""), b.0.as_text().unwrap_or(""))
        });
        Value::Map(v)
    }

    /// Encodes an attribute map.
    pub fn attrs(entries: &[(&str, Value<'_>)]) -> Vec<u8> {
        let mut out = Vec::new();
        cbor::encode(&map(entries), &mut out);
        out
    }

    /// The rule an error rejects under, for assertions.
    pub fn rule_of<T: std::fmt::Debug>(r: Result<T>) -> Option<Rule> {
        r.expect_err("expected a rejection").rule()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

    #[test]
    fn layout_ids_are_classified_exactly() {
        assert_eq!(Layout::of("dense"), Layout::Dense);
        assert_eq!(Layout::of("zt.sparse_csr/1"), Layout::SparseCsr);
        assert_eq!(Layout::of("zt.sparse_coo/1"), Layout::SparseCoo);
        assert_eq!(Layout::of("zt.quant_group/1"), Layout::QuantGroup);
        assert_eq!(Layout::of("zt.mx/1"), Layout::Mx);
        assert_eq!(
            Layout::of("gguf.q4_k/1"),
            Layout::Gguf {
                ggml_type: "q4_k".into()
            }
        );
        for id in [
            "Dense",
            "zt.mx/2",
            "zt.mx",
            "gguf.f16/1",
            "gguf.q4_k/2",
            "gguf.Q4_K/1",
            "gguf./1",
            "pie.paged_kv/1",
            "",
        ] {
            assert_eq!(Layout::of(id), Layout::Unknown, "{id:?}");
        }
    }

    #[test]
    fn gguf_and_unknown_are_not_interpreted() {
        assert!(Layout::Dense.is_interpreted());
        assert!(Layout::SparseCsr.is_interpreted());
        assert!(Layout::Mx.is_interpreted());
        assert!(!Layout::of("gguf.q8_0/1").is_interpreted());
        assert!(!Layout::Unknown.is_interpreted());
    }

    #[test]
    fn unknown_layouts_get_no_checks() {
        let o = object("vendor.thing/1", &[3], vec![part("x", "u8", 99)], None);
        assert!(check_metadata(&o).is_ok());
    }

    #[test]
    fn dense_accepts_the_size_equation() {
        let o = object("dense", &[2, 3], vec![part("data", "f32", 24)], None);
        assert!(check_metadata(&o).is_ok());
        let o = object("dense", &[5], vec![part("data", "u8:f4_e2m1", 3)], None);
        assert!(check_metadata(&o).is_ok());
        let o = object("dense", &[], vec![part("data", "f64", 8)], None);
        assert!(check_metadata(&o).is_ok());
        let o = object("dense", &[4, 0], vec![part("data", "f64", 0)], None);
        assert!(check_metadata(&o).is_ok());
    }

    #[test]
    fn dense_rejects_a_wrong_size_as_dense_size() {
        let o = object("dense", &[2, 3], vec![part("data", "f32", 20)], None);
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::DenseSize));
        let o = object(
            "dense",
            &[u64::MAX],
            vec![part("data", "f32:complex64", 0)],
            None,
        );
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::DenseSize));
    }

    #[test]
    fn dense_skips_the_equation_for_an_unregistered_type() {
        let o = object("dense", &[999], vec![part("data", "u8:nf4", 8)], None);
        assert!(check_metadata(&o).is_ok());
    }

    #[test]
    fn dense_needs_exactly_one_part_named_data() {
        let o = object("dense", &[1], vec![part("values", "u8", 1)], None);
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
        let two = vec![part("data", "u8", 1), part("more", "u8", 1)];
        let o = object("dense", &[1], two, None);
        assert_eq!(rule_of(check_metadata(&o)), Some(Rule::LayoutRule));
    }

    #[test]
    fn lanes_never_divides_by_a_zero_dim() {
        assert_eq!(lanes(&[3, 0, 5], 1), 15);
        assert_eq!(lanes(&[3, 0, 5], 0), 0);
        assert_eq!(lanes(&[7], 0), 1);
    }
}
