//! A Hurray file as the objects and parts every command and the mount
//! serve, so a `.hrry` file gets the same tree, listing and `cat` as a
//! `.zt` file.
//!
//! Each tensor is an object named by its index name, of layout
//! `hurray:<layout>` (which no zTensor profile claims). Its parts:
//!
//! * `data`, when the tensor's row-major elements are a range of buffer 0
//!   ([`Data::Direct`]): unquantized, row-major, no dynamic dimension,
//!   not an extension type. Served straight from the map.
//! * `buffer<i>` for each buffer of the descriptor: the stored bytes,
//!   always (`buffer<i>.raw` in the mount).
//!
//! Tensors whose row-major elements are well defined but stored in
//! another order, or assembled from the members of a partition
//! ([`Data::Computed`]), get their `data` as a view computed by range
//! (`crate::decode::hurray`); the rest have no `data`, and [`Data::Absent`]
//! says why.

use super::{ElemType, File, Layout, Tensor};
use crate::format::manifest::{Object, Part};
use crate::format::text::Texts;
use crate::format::types::{DType, ElementType};

/// The prefix of a Hurray tensor's layout id.
pub const LAYOUT_PREFIX: &str = "hurray:";
/// The part (and file) holding the row-major elements.
pub const DATA: &str = "data";

/// Where a tensor's row-major elements come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    /// Bytes `[offset, offset + length)` of the file, as stored.
    Direct { offset: u64, length: u64 },
    /// Computed by range: from buffer 0 in another dense layout, or from
    /// the members of a partition composite (whose own views decide).
    Computed,
    /// No unambiguous row-major view; the reason, for `meta.json`.
    Absent(String),
}

/// Element count of a shape without dynamic dimensions, counted as the
/// parser counts it; `None` when a dimension is dynamic.
pub fn static_count(shape: &[u64]) -> Option<u64> {
    if shape.contains(&u64::MAX) {
        return None;
    }
    super::descriptor::element_count(shape).ok()
}

/// Where tensor `t`'s row-major elements come from.
pub fn data_of(t: &Tensor) -> Data {
    let d = &t.descriptor;
    let absent = |why: &str| Data::Absent(why.to_string());
    if d.quantization.is_some() {
        // The schemes define float32 values (quantization/*.md §
        // Dequantization Formula), computed from row-major storage.
        return match (&d.layout, static_count(&d.shape)) {
            (Layout::RowMajor, Some(_)) => Data::Computed,
            (Layout::RowMajor, None) => {
                absent("quantized, with a dynamic dimension: the element count is not known")
            }
            _ => Data::Absent(format!(
                "quantized, in layout {}: values are computed from row-major storage only",
                super::layout_name(&d.layout)
            )),
        };
    }
    if let ElemType::Extension(tag) = d.elem {
        return Data::Absent(format!(
            "extension element type 0x{tag:02x}: its values have no agreed meaning"
        ));
    }
    let Some(count) = static_count(&d.shape) else {
        return absent("a dimension is dynamic: the element count is not known");
    };
    match &d.layout {
        Layout::RowMajor => {}
        Layout::ColumnMajor
        | Layout::Strided(_)
        | Layout::Tiled(_)
        | Layout::Morton(_)
        | Layout::Hilbert { .. } => return Data::Computed,
        Layout::Coo { .. } | Layout::Csr { .. } | Layout::Csc { .. } | Layout::Csf { .. } => {
            return absent(
                "sparse layout: no dense view is offered (its stored arrays are the buffers)",
            )
        }
        Layout::BlockPaged(_) => {
            return absent("block-paged: the per-sequence token counts are not stored")
        }
        Layout::Composite(h) if h.rule == 1 => return Data::Computed,
        Layout::Composite(_) => {
            return absent("overlay or group composite: the format defines no single row-major view (see the members' directories)")
        }
        Layout::Private { .. } => return absent("private layout: not defined by the spec"),
    }
    let (Some(length), Some(&start)) = (
        d.elem.buffer_size(count, d.extension_type.as_deref()),
        t.buffer_offsets.first(),
    ) else {
        return absent("the element count has no buffer size");
    };
    match start.checked_add(d.byte_offset) {
        Some(offset) => Data::Direct { offset, length },
        None => absent("the data offset overflows"),
    }
}

/// The objects of a Hurray file, in index order.
pub fn objects(file: &File) -> Vec<Object> {
    let mut texts = Texts::default();
    let u8_type = ElementType {
        dtype: DType::U8,
        logical: None,
    };
    let buffer_names: Vec<_> = (0..=u8::MAX as usize)
        .map(|i| texts.get(&format!("buffer{i}")))
        .collect();
    let data_name = texts.get(DATA);
    file.tensors
        .iter()
        .map(|t| {
            let d = &t.descriptor;
            let mut parts = Vec::with_capacity(d.buffers.len() + 1);
            if let Data::Direct { offset, length } = data_of(t) {
                parts.push(Part::raw(
                    data_name.clone(),
                    u8_type.clone(),
                    offset,
                    length,
                ));
            }
            for (i, (b, &offset)) in d.buffers.iter().zip(&t.buffer_offsets).enumerate() {
                parts.push(Part::raw(
                    buffer_names[i].clone(),
                    u8_type.clone(),
                    offset,
                    b.size,
                ));
            }
            let layout = texts.get(&format!("{LAYOUT_PREFIX}{}", super::layout_name(&d.layout)));
            Object {
                name: t.name.clone(),
                shape: texts.shape(&d.shape),
                layout,
                attributes: None,
                parts: parts.into(),
            }
        })
        .collect()
}

/// True for the object of a Hurray tensor.
pub fn is_hurray(o: &Object) -> bool {
    o.layout.starts_with(LAYOUT_PREFIX)
}

/// The zTensor storage type and logical type name with the same bytes as
/// Hurray element type `e` (App. A), for writing a tensor's row-major
/// data as a dense zTensor object; `None` where zTensor has none: Hurray
/// bool is bit-packed (zTensor's is a byte), and f6, f128, the 2- and
/// 4-bit integers and extension types are not registered.
pub fn ztensor_type(e: ElemType) -> Option<(DType, Option<&'static str>)> {
    Some(match e {
        ElemType::F16 => (DType::F16, None),
        ElemType::BF16 => (DType::BF16, None),
        ElemType::F32 => (DType::F32, None),
        ElemType::F64 => (DType::F64, None),
        ElemType::I8 => (DType::I8, None),
        ElemType::U8 => (DType::U8, None),
        ElemType::I16 => (DType::I16, None),
        ElemType::U16 => (DType::U16, None),
        ElemType::I32 => (DType::I32, None),
        ElemType::U32 => (DType::U32, None),
        ElemType::I64 => (DType::I64, None),
        ElemType::U64 => (DType::U64, None),
        // OCP OFP8 E4M3 (no infinities): zTensor's f8_e4m3fn.
        ElemType::F8E4M3 => (DType::U8, Some("f8_e4m3fn")),
        ElemType::F8E5M2 => (DType::U8, Some("f8_e5m2")),
        ElemType::F8E8M0 => (DType::U8, Some("f8_e8m0")),
        // Two a byte, low nibble first in both formats.
        ElemType::F4E2M1 => (DType::U8, Some("f4_e2m1")),
        ElemType::C64 => (DType::F32, Some("complex64")),
        ElemType::C128 => (DType::F64, Some("complex128")),
        ElemType::Bool
        | ElemType::F6E2M3
        | ElemType::F6E3M2
        | ElemType::F128
        | ElemType::I4
        | ElemType::U4
        | ElemType::I2
        | ElemType::U2
        | ElemType::Extension(_) => return None,
    })
}
