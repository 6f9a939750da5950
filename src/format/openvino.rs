//! An OpenVINO IR model (IR versions 10 and 11): the graph in `model.xml`
//! read for its constants (each `Const` layer's element type, shape and
//! byte range in `model.bin`) and the facts `manifest.json` is to say of
//! the graph (its name, its layers counted by type, its inputs and
//! outputs). Pure: the XML's bytes in, offsets into the `.bin` out; the
//! `.bin` is never read here, only its length checked against with
//! [`check_against_bin`]. Groundwork, not yet a format the commands read.
//!
//! The format is OpenVINO's serializer and deserializer (src/core/xml_util
//! and src/frontends/ir in the openvino repository; the operation spec
//! `Constant-1` for a Const's attributes). What is mirrored from the
//! deserializer:
//! - the root is `<net version="10|11">`, its layers the `<layer>`
//!   children of its first `<layers>`, its edges the `<edge>` children of
//!   `<edges>`; other elements (`rt_info`, legacy `meta_data`, ...) are
//!   stepped over;
//! - every `<layer>` has `id` (an unsigned number), `name`, `type` and
//!   `version`; a Const is `type="Const"` (its IR name) or any case of
//!   `Constant` (OpenVINO looks types up case-insensitively after
//!   translating `Const`); a Parameter and a Result are named exactly so;
//! - a Const's `<data>` has `element_type` (one of
//!   [`types::ELEMENT_TYPES`]), `shape` (comma-separated dims, spaces
//!   around each taken, as the serializer writes `"2, 3"`; empty for a
//!   scalar), `offset` and `size` (bytes into the `.bin`); numbers are
//!   whole, without sign, at most `i64::MAX` (OpenVINO reads them with
//!   `stoll`);
//! - a subgraph (the `body` of a Loop or TensorIterator, an If's
//!   `then_body` and `else_body`: any child of a layer whose name holds
//!   `body`, as the serializer names them) is a graph of its own: layer
//!   ids are unique within one graph, and its Consts are in the same
//!   `.bin`;
//! - a Const's bytes are `[offset, offset + size)` of the `.bin`.
//!
//! Stricter than OpenVINO, which lets these pass or reads them otherwise:
//! a DOCTYPE (pugixml skips one); a number with a sign, spaces or trailing
//! text, and a dim that is not a number (`stringstream` reads a prefix, or
//! 0); a layer id given twice in a graph (the last one wins there); an
//! edge naming a layer its graph lacks (only an error there when the layer
//! is reached); a Const's port dims that disagree with its `shape` (read
//! only for names there); a `size` other than the shape's bytes (there
//! only a smaller one is refused, and the first bytes are read); a second
//! `<layers>`, `<edges>` or `<data>` (the first is read); upper-case
//! element type spellings; text among structural elements.
//!
//! Not read: `<pre-process>` mean images of IR v10 (also ranges of the
//! `.bin`; OpenVINO applies them to an input), port precisions (a
//! compressed Const may say `f16` under an `FP32` port), rt_info, and what
//! a layer computes. Every Const is listed, reached from a Result or not
//! (OpenVINO builds only what the Results reach).
//!
//! Names: OpenVINO does not require layer names to be unique (they are
//! friendly names), so two Consts may share one; they are returned as
//! written, and a caller needing one name per tensor makes them unique.
//!
//! Bounded: the XML at most [`MAX_XML_LEN`] bytes, [`MAX_ELEMENTS`]
//! elements nested at most [`MAX_DEPTH`] deep with at most
//! [`MAX_ATTRIBUTES`] attributes each, a shape at most
//! [`crate::format::MAX_RANK`] dims. Read as a stream of events: what is
//! kept is what is returned, and nothing is allocated by a count read
//! from the file.

mod graph;
pub mod json;
pub mod objects;
pub mod types;
mod xml;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use types::{byte_len, element_width, ztensor_type, Width};

/// Largest `model.xml`, in bytes: an IR's XML holds no weights, and the
/// largest in use are tens of megabytes.
pub const MAX_XML_LEN: u64 = 256 << 20;
/// Deepest nesting of elements. A graph is three levels (`net`, `layers`,
/// `layer`) and each subgraph three more; rt_info nests a few.
pub const MAX_DEPTH: usize = 256;
/// Most elements in one XML: a real IR has one per 30 bytes or so, so
/// this is above what [`MAX_XML_LEN`] holds; it bounds the work on
/// hostile input of empty elements.
pub const MAX_ELEMENTS: u64 = 1 << 24;
/// Most attributes on one element (OpenVINO's widest operations have
/// about twenty).
pub const MAX_ATTRIBUTES: usize = 1024;

/// Why the XML is not an IR this reader takes, or a Const does not fit
/// the `.bin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrError {
    /// What is wrong.
    pub what: String,
    /// Where, in bytes from the start of the XML, when it is about the XML.
    pub offset: Option<u64>,
}

impl IrError {
    fn at(what: impl Into<String>, offset: u64) -> IrError {
        IrError {
            what: what.into(),
            offset: Some(offset),
        }
    }
}

impl std::fmt::Display for IrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offset {
            Some(at) => write!(f, "{} at byte {at} of the XML", self.what),
            None => f.write_str(&self.what),
        }
    }
}

/// What the graph says of the model, and its constants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Model {
    /// `<net name>` (empty when absent, as OpenVINO reads it).
    pub name: String,
    /// `<net version>`: 10 or 11.
    pub version: u32,
    /// Every Const layer of every graph, in document order.
    pub consts: Vec<Const>,
    /// Layers of every graph, counted by `type` as written.
    pub ops: BTreeMap<String, u64>,
    /// The main graph's Parameter layers, by name, in document order
    /// (OpenVINO's order of the model's inputs).
    pub inputs: Vec<String>,
    /// The main graph's Result layers, by name, in document order.
    pub outputs: Vec<String>,
}

/// One Const layer: a tensor stored in the `.bin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Const {
    /// Its layer `id`, unique within its graph only.
    pub id: u64,
    /// Its graph: 0 the main one, then each subgraph in the order its
    /// start tag comes in the document.
    pub graph: u32,
    /// Its layer `name`, as written (not unique: see the module doc).
    pub name: String,
    /// `element_type`, one of [`types::ELEMENT_TYPES`].
    pub element_type: String,
    /// `shape`, outermost first; empty for a scalar.
    pub shape: Vec<u64>,
    /// Where its bytes start in the `.bin`.
    pub offset: u64,
    /// How many bytes.
    pub size: u64,
}

impl Const {
    /// Its element count, `None` on overflow.
    pub fn count(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d))
    }

    /// Checks `size` against the shape and element type: the bytes the
    /// elements take ([`Width::byte_len`]; for `u3` and `u6` also
    /// [`Width::group_byte_len`]). A string Const's size is not a
    /// function of its shape, and is not checked.
    pub fn check_size(&self) -> Result<(), String> {
        let t = &self.element_type;
        let width = element_width(t).ok_or_else(|| format!("unknown element_type {t:?}"))?;
        if width == Width::Strings {
            return Ok(());
        }
        let shape = &self.shape;
        let count = self
            .count()
            .ok_or_else(|| format!("shape {shape:?} has more than 2^64 elements"))?;
        let want = width
            .byte_len(count)
            .ok_or_else(|| format!("{count} elements of {t} take more than 2^64 bytes"))?;
        if self.size == want || width.group_byte_len(count) == Some(self.size) {
            return Ok(());
        }
        Err(format!(
            "size {} but shape {shape:?} of {t} takes {want} bytes",
            self.size
        ))
    }

    /// What names this Const in a message: its id, graph and name.
    fn label(&self) -> String {
        match self.graph {
            0 => format!("Const layer {} ({:?})", self.id, self.name),
            g => format!("Const layer {} ({:?}) of subgraph {g}", self.id, self.name),
        }
    }
}

/// Reads `model.xml`: its graph's constants, layers, inputs and outputs,
/// or the first thing wrong with it.
pub fn parse(xml: &[u8]) -> Result<Model, IrError> {
    if xml.len() as u64 > MAX_XML_LEN {
        return Err(IrError {
            what: format!(
                "the XML is {} bytes, more than the {MAX_XML_LEN} this reader takes",
                xml.len()
            ),
            offset: None,
        });
    }
    let text = std::str::from_utf8(xml)
        .map_err(|e| IrError::at("the XML is not UTF-8", e.valid_up_to() as u64))?;
    graph::read(text)
}

/// Checks every Const against a `.bin` of `bin_len` bytes: its size is
/// its shape's ([`Const::check_size`]), and its bytes lie inside.
pub fn check_against_bin(model: &Model, bin_len: u64) -> Result<(), IrError> {
    for c in &model.consts {
        let fail = |what: String| IrError { what, offset: None };
        c.check_size()
            .map_err(|what| fail(format!("{}: {what}", c.label())))?;
        if c.offset.checked_add(c.size).is_none_or(|end| end > bin_len) {
            return Err(fail(format!(
                "{}: bytes [{}, +{}) end past the .bin ({bin_len} bytes)",
                c.label(),
                c.offset,
                c.size
            )));
        }
    }
    Ok(())
}
