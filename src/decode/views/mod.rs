//! Layout views: the data rules of the interpreted layout profiles, and the
//! one extra file an interpreted object gets in the mount.
//!
//! * [`check_data`] checks a profile's rules over decoded parts
//!   (`LayoutData`): CSR index structure (notes §3.2), COO coordinates in
//!   range and naming distinct cells (§3.3), and the content rules of the
//!   logical types whose element count only the layout knows (`bool` and
//!   odd-count `f4_e2m1` values of a sparse object, `f4_e2m1` mx data).
//!   Dense content rules stay in `crate::decode::ContentCheck`.
//! * [`view`] names the view file of an object and gives its exact size
//!   from metadata alone: `dense` for sparse objects (row-major bytes of the
//!   values' type, zeros elsewhere), `dequantized` for `zt.mx/1` and
//!   `zt.quant_group/1` (f32 little-endian, one per element), and for a
//!   `gguf.<type>/1` object whose blocks are stored encoded (compressed:
//!   its values come from the decoded part; blocks stored as they are are
//!   computed by range from the file, `model::tensor`).
//! * [`prepare`] loads and checks the parts (after [`check_data`]'s rules,
//!   so a view of data that breaks its profile is never served) and
//!   indexes them; [`Prepared::read_into`] then computes any byte range of
//!   the view, and only that range.
//! * [`render`] materialises the whole view, the obvious way (`naive`): the
//!   oracle the range reads are tested against, and a convenience for
//!   small views (it refuses views above [`MAX_RENDER_BYTES`]).
//!
//! A view exists only where the decoder is unambiguous and this reader can
//! produce it. [`view`] decides from metadata alone; [`prepare`] and
//! [`render`] refuse (`Unsupported`, saying why) every object [`view`]
//! gives `None`, before reading any part, and otherwise either fail on the
//! parts (a part that cannot be decoded, data that breaks the profile), with
//! the same error from both, or give exactly the size [`view`] announced.
//! No view: `dense` (its `data` part is the tensor), `gguf.*` stored raw,
//! unknown layouts, sparse values of an unregistered type, mx data of a type
//! the profile does not decode, `zt.quant_group/1` with `group_size` 0 (see
//! `dequant`), and anything larger than [`MAX_VIEW_BYTES`].
//!
//! Memory: a view is never materialised to be read. [`prepare`] loads each
//! part it needs whole through the caller's `part` function, so the caller
//! bounds each part (their decoded sizes are in the manifest before any is
//! read), and keeps them. Besides the parts, a [`Prepared`] COO view holds
//! its cells sorted, 8 bytes per stored element (while it is prepared, 16
//! more per element and the coords part); nothing else allocates in
//! proportion to the data, and [`Prepared::heap_bytes`] reports what is
//! held. A read computes only the elements its range overlaps and
//! allocates nothing beyond its output. Only [`render`] holds a whole view.
//!
//! What it relies on: the object passed `crate::format::profiles::
//! check_metadata` at open. Each profile's metadata is re-parsed here (it is
//! small), and every part is checked to decode to its declared size before
//! it is indexed, so a caller that skipped validation gets an error, not a
//! panic.

mod by_range;
mod dequant;
pub mod elements;
mod naive;
mod prepared;
mod sparse;

pub use by_range::{by_range, ByRange};
pub use prepared::Prepared;

use crate::error::{Error, Result, Rule};
use crate::format::manifest::Object;
use crate::format::profiles::{self, Coo, Csr, Layout, Mx, MxElement, QuantGroup};
use crate::format::types::{ElementType, Interpretation, LogicalType};

/// Largest view this reader offers, in bytes: the largest file size
/// (`off_t`, an i64) the kernel and the FUSE protocol can express. Views
/// are read by range, never held whole, so their size bounds no memory.
pub const MAX_VIEW_BYTES: u64 = i64::MAX as u64;

/// Largest view [`render`] materialises, in bytes: the memory one call can
/// take. Range reads through [`prepare`] have no such limit.
pub const MAX_RENDER_BYTES: u64 = 4 << 30;

/// The view file of a sparse object.
pub const DENSE_VIEW: &str = "dense";
/// The view file of a quantized object.
pub const DEQUANTIZED_VIEW: &str = "dequantized";

/// How the caller supplies a part's decoded bytes, by part name.
pub type PartFn<'a> = &'a dyn Fn(&str) -> Result<Vec<u8>>;

/// Checks the profile's data rules over the decoded parts (`LayoutData`).
/// Layouts without data rules (dense, whose content rules are
/// `ContentCheck`'s; quant_group; gguf; unknown) pass.
pub fn check_data(o: &Object, part: PartFn<'_>) -> Result<()> {
    match Layout::of(&o.layout) {
        Layout::SparseCsr => {
            let c = profiles::parse_csr(o)?;
            let [values, indices, indptr] = load(o, part, ["values", "indices", "indptr"])?;
            sparse::check_csr(o, &c, &values, &indices, &indptr)
        }
        Layout::SparseCoo => {
            let c = profiles::parse_coo(o)?;
            let [values, coords] = load(o, part, ["values", "coords"])?;
            sparse::check_coo(o, &c, &values, &coords).map(drop)
        }
        Layout::Mx => {
            let m = profiles::parse_mx(o)?;
            let [data] = load(o, part, ["data"])?;
            dequant::check_mx(o, &m, &data)
        }
        Layout::Dense
        | Layout::QuantGroup
        | Layout::Gguf { .. }
        | Layout::File
        | Layout::Hurray
        | Layout::Torch
        | Layout::Unknown => Ok(()),
    }
}

/// The name of the view file this object gets in the mount and its exact
/// byte size, or `None` when it has no view (see the module doc).
pub fn view(o: &Object) -> Option<(&'static str, u64)> {
    plan(o).ok().map(|p| (p.name, p.size))
}

/// Loads, checks and indexes the parts of the object's view, ready for
/// [`Prepared::read_into`] at any range. Refuses what [`view`] does not
/// offer, before reading any part; otherwise fails exactly as [`render`]
/// does on the same parts (a part error, a part of the wrong decoded size,
/// a `LayoutData` rejection).
pub fn prepare(o: &Object, part: PartFn<'_>) -> Result<Prepared> {
    let p = plan(o)?;
    let parts = load_checked(o, p.kind, part)?;
    Prepared::new(&o.name, p.size, parts).ok_or_else(|| internal(o))
}

/// Renders the whole view: row-major dense bytes (sparse: the values'
/// element bytes, zeros elsewhere) or f32 little-endian dequantized values.
/// Checks the data rules first; refuses what [`view`] does not offer, and
/// views above [`MAX_RENDER_BYTES`], before reading any part.
pub fn render(o: &Object, part: PartFn<'_>) -> Result<Vec<u8>> {
    let p = plan(o)?;
    if p.size > MAX_RENDER_BYTES {
        return Err(Error::Unsupported(format!(
            "the {} view of object {:?} is {} bytes, above the {MAX_RENDER_BYTES}-byte limit for a view rendered whole (read it by range)",
            p.name, o.name, p.size
        )));
    }
    let parts = load_checked(o, p.kind, part)?;
    let out = naive::render(&parts, p.size).ok_or_else(|| internal(o))?;
    if out.len() as u64 != p.size {
        return Err(internal(o));
    }
    Ok(out)
}

/// The checked parts of a view, before any range index is built.
enum Loaded {
    Csr(sparse::CsrParts),
    Coo(sparse::CooParts),
    Mx(dequant::MxParts),
    Quant(dequant::QuantParts),
    /// ggml blocks, decoded, and how to dequantize them.
    Ggml(crate::decode::dequant::values::Values, Vec<u8>),
}

/// Loads the parts a view is made from and checks the profile's data rules
/// over them: the one path [`prepare`] and [`render`] share.
fn load_checked(o: &Object, kind: Kind, part: PartFn<'_>) -> Result<Loaded> {
    Ok(match kind {
        Kind::Csr(c, e) => {
            let [values, indices, indptr] = load(o, part, ["values", "indices", "indptr"])?;
            sparse::check_csr(o, &c, &values, &indices, &indptr)?;
            Loaded::Csr(sparse::CsrParts {
                rows: c.rows,
                cols: c.cols,
                index: c.index,
                e,
                values,
                indices,
                indptr,
            })
        }
        Kind::Coo(c, e) => {
            let [values, coords] = load(o, part, ["values", "coords"])?;
            let cells = sparse::check_coo(o, &c, &values, &coords)?;
            Loaded::Coo(sparse::CooParts { e, values, cells })
        }
        Kind::Mx(m, e) => {
            let [data, scales] = load(o, part, ["data", "scales"])?;
            dequant::check_mx(o, &m, &data)?;
            Loaded::Mx(dequant::MxParts {
                e,
                block_size: m.block_size,
                dims: dequant::split(&o.shape, m.axis),
                data,
                scales,
            })
        }
        Kind::Quant(q) => {
            let [data, scales] = load(o, part, ["data", "scales"])?;
            let zeros = match q.zeros {
                Some(_) => load_one(o, part, "zeros")?,
                None => Vec::new(),
            };
            Loaded::Quant(dequant::QuantParts {
                dims: dequant::split(&o.shape, q.axis),
                q,
                data,
                scales,
                zeros,
            })
        }
        Kind::Ggml(values) => Loaded::Ggml(values, load_one(o, part, "data")?),
    })
}

/// What the view of an object is made from.
enum Kind {
    Csr(Csr, Elem),
    Coo(Coo, Elem),
    Mx(Mx, MxElement),
    Quant(QuantGroup),
    /// A `gguf.<type>/1` object whose blocks are stored encoded (blocks
    /// stored as they are are computed from the file by the model).
    Ggml(crate::decode::dequant::values::Values),
}

struct Plan {
    name: &'static str,
    size: u64,
    kind: Kind,
}

/// How one element of a sparse object's values is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Elem {
    /// A whole number of bytes per element.
    Bytes(usize),
    /// `f4_e2m1`: a nibble, two per byte, low first.
    Nibble,
}

/// Decides from metadata alone whether the object has a view and what it
/// is; the refusal says why not.
fn plan(o: &Object) -> Result<Plan> {
    let layout = Layout::of(&o.layout);
    let (name, size, kind) = match layout {
        Layout::SparseCsr => {
            let c = profiles::parse_csr(o)?;
            let (e, size) = sparse_cells(o, &c.values)?;
            (DENSE_VIEW, size, Kind::Csr(c, e))
        }
        Layout::SparseCoo => {
            let c = profiles::parse_coo(o)?;
            let (e, size) = sparse_cells(o, &c.values)?;
            (DENSE_VIEW, size, Kind::Coo(c, e))
        }
        Layout::Mx => {
            let m = profiles::parse_mx(o)?;
            let e = m.element.ok_or_else(|| mx_refusal(o))?;
            (DEQUANTIZED_VIEW, f32_bytes(o, m.elements)?, Kind::Mx(m, e))
        }
        Layout::QuantGroup => {
            let q = profiles::parse_quant_group(o)?;
            if q.group_size == 0 {
                return Err(Error::Unsupported(format!(
                    "object {:?} ({}) has group_size 0, where the profile's size equation gives one scale per code (groups = shape[axis]) but its text says per channel (one scale per lane); with the two in contradiction there is no unambiguous decoder, so there is no dequantized view (the parts are available raw)",
                    o.name, o.layout
                )));
            }
            (DEQUANTIZED_VIEW, f32_bytes(o, q.codes)?, Kind::Quant(q))
        }
        Layout::Gguf { .. } if o.parts.iter().any(|p| p.encoding.is_some()) => {
            let values = ggml_values(o)?;
            (DEQUANTIZED_VIEW, values.len(), Kind::Ggml(values))
        }
        Layout::Dense
        | Layout::Gguf { .. }
        | Layout::File
        | Layout::Hurray
        | Layout::Torch
        | Layout::Unknown => {
            let why = match layout {
                Layout::Dense => "its data part is the tensor",
                Layout::File => "it is a file of the model's folder, served at its path",
                Layout::Hurray => "a Hurray tensor's data is served by the tree",
                Layout::Torch => "a strided PyTorch tensor's data is served by the tree",
                Layout::Gguf { .. } => {
                    "its blocks, stored as they are, are dequantized by the model"
                }
                _ => "this reader does not interpret the layout",
            };
            return Err(Error::Unsupported(format!(
                "object {:?} has layout {:?}, which has no view: {why}",
                o.name, o.layout
            )));
        }
    };
    if size > MAX_VIEW_BYTES {
        return Err(Error::Unsupported(format!(
            "the {name} view of object {:?} would be {size} bytes, above the {MAX_VIEW_BYTES}-byte limit of a file size",
            o.name
        )));
    }
    Ok(Plan { name, size, kind })
}

/// How the values of a `gguf.<type>/1` object come from its one part's
/// decoded blocks.
fn ggml_values(o: &Object) -> Result<crate::decode::dequant::values::Values> {
    let refuse = |why: String| {
        Error::Unsupported(format!(
            "object {:?} ({}) has no values: {why}",
            o.name, o.layout
        ))
    };
    let ty = profiles::ggml_type_of(&o.layout)
        .ok_or_else(|| refuse("not a gguf.<type>/1 layout".into()))?;
    let [p] = &o.parts[..] else {
        return Err(refuse(format!(
            "{} parts, not the one part of blocks",
            o.parts.len()
        )));
    };
    let count = o
        .num_elements()
        .ok_or_else(|| refuse("its element count overflows".into()))?;
    crate::decode::dequant::values::Values::new(ty, 0, p.decoded_size(), count).map_err(refuse)
}

/// The element layout of sparse values and the dense view's size.
fn sparse_cells(o: &Object, values: &ElementType) -> Result<(Elem, u64)> {
    let e = match values.interpretation() {
        Interpretation::Plain(d) => Elem::Bytes(d.width() as usize),
        Interpretation::Registered(LogicalType::F4E2M1) => Elem::Nibble,
        Interpretation::Registered(t) => Elem::Bytes(t.size(1).unwrap_or(0) as usize),
        Interpretation::Unknown => {
            return Err(Error::Unsupported(format!(
                "object {:?}: part \"values\" has logical type {:?}, which this reader does not know, so there is no dense view",
                o.name,
                values.type_name()
            )))
        }
    };
    let cells = o.num_elements().unwrap_or(u64::MAX);
    let size = values.size(cells).unwrap_or(u64::MAX);
    Ok((e, size))
}

fn f32_bytes(o: &Object, elements: u64) -> Result<u64> {
    elements.checked_mul(4).ok_or_else(|| {
        Error::Unsupported(format!(
            "object {:?}: {elements} f32 values overflow u64 bytes",
            o.name
        ))
    })
}

fn mx_refusal(o: &Object) -> Error {
    let ty = o
        .part("data")
        .map_or(String::new(), |p| match &p.ty.logical {
            Some(t) => format!("{} with type {t:?}", p.ty.dtype),
            None => format!("{} with no type", p.ty.dtype),
        });
    Error::Unsupported(format!(
        "object {:?} ({}): data is {ty}, which the profile does not decode (it decodes u8 f4_e2m1, f8_e4m3fn, f8_e5m2 and plain i8); the parts are available raw",
        o.name, o.layout
    ))
}

/// Loads the named parts, each checked to decode to its declared size.
fn load<const N: usize>(o: &Object, part: PartFn<'_>, names: [&str; N]) -> Result<[Vec<u8>; N]> {
    let mut out: [Vec<u8>; N] = std::array::from_fn(|_| Vec::new());
    for (slot, name) in out.iter_mut().zip(names) {
        *slot = load_one(o, part, name)?;
    }
    Ok(out)
}

fn load_one(o: &Object, part: PartFn<'_>, name: &str) -> Result<Vec<u8>> {
    let declared = o.part(name).map(|p| p.decoded_size());
    let bytes = part(name)?;
    if declared != Some(bytes.len() as u64) {
        return Err(Error::reject(
            Rule::Encoding,
            format!(
                "part {:?}/{name:?} decoded to {} bytes, its declared decoded size is {declared:?}",
                o.name,
                bytes.len()
            ),
        ));
    }
    Ok(bytes)
}

/// A `LayoutData` rejection of `o`, prefixed with the object and layout.
fn data_violation(o: &Object, detail: impl std::fmt::Display) -> Error {
    Error::reject(
        Rule::LayoutData,
        format!("object {:?} ({}): {detail}", o.name, o.layout),
    )
}

/// A renderer found its checked invariants broken: a bug, reported rather
/// than a panic in the daemon.
fn internal(o: &Object) -> Error {
    internal_error(&o.name)
}

fn internal_error(object: &str) -> Error {
    Error::Unsupported(format!(
        "object {object:?}: internal error rendering its view (parts inconsistent with checked metadata)"
    ))
}

/// The content rules of the values' logical type over `n` stored elements:
/// `bool` bytes are 0 or 1, and an odd count of `f4_e2m1` leaves the final
/// high nibble zero (Appendix A).
fn check_content(o: &Object, part: &str, ty: &ElementType, bytes: &[u8], n: u64) -> Result<()> {
    match ty.interpretation() {
        Interpretation::Registered(LogicalType::Bool) => match bytes.iter().position(|&b| b > 1) {
            Some(i) => Err(data_violation(
                o,
                format!(
                    "bool part {part:?} holds byte {:#04x} at offset {i}; only 0x00 and 0x01 are allowed",
                    bytes[i]
                ),
            )),
            None => Ok(()),
        },
        Interpretation::Registered(LogicalType::F4E2M1) if n % 2 == 1 => match bytes.last() {
            Some(&b) if b & 0xF0 != 0 => Err(data_violation(
                o,
                format!(
                    "f4_e2m1 part {part:?} holds an odd count ({n}), but its final high nibble is {:#x}, not 0",
                    b >> 4
                ),
            )),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
