//! Where each object's row-major tensor is, as its format defines it: the
//! one place the floors above learn that a tensor's data may be a part of
//! its own element type, computed by range from other bytes, or absent
//! for a reason of the format's. The tree's `data` and `data.npy`, the
//! safetensors plan, `ztfs cat` and `ztfs pack` ask [`Model::tensor_data`];
//! none of them tests which format the model is.
//!
//! Computed views are made once, on first use, for every tensor that has
//! one (a Hurray tensor in another dense layout or a partition), and kept:
//! each is a few hundred bytes of plan, never the tensor's bytes.

use std::sync::OnceLock;

use super::{Input, Model};
use crate::decode::dequant::torch;
use crate::decode::hurray::RowMajor;
use crate::format::hurray::{self, objects::Data, ElemType};
use crate::format::manifest::{Manifest, Object};
use crate::format::types::{DType, Interpretation, LogicalType};
use crate::format::{pytorch, safetensors};

/// The element type of a tensor file, as its format names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    /// A zTensor storage type with no logical type.
    Plain(DType),
    /// A registered zTensor logical type.
    Logical(LogicalType),
    /// A Hurray element type.
    Hurray(ElemType),
}

impl Elem {
    /// The element type of a zTensor part; `None` for an unknown logical
    /// type (never decoded).
    pub fn of_part(p: &crate::format::Part) -> Option<Elem> {
        match p.ty.interpretation() {
            Interpretation::Plain(d) => Some(Elem::Plain(d)),
            Interpretation::Registered(t) => Some(Elem::Logical(t)),
            Interpretation::Unknown => None,
        }
    }

    /// The zTensor type with the same bytes (its storage type and logical
    /// type name), if there is one: what `ztfs pack` writes.
    pub fn ztensor_type(self) -> Option<(DType, Option<&'static str>)> {
        match self {
            Elem::Plain(d) => Some((d, None)),
            Elem::Logical(t) => Some((t.dtype(), Some(t.name()))),
            Elem::Hurray(e) => hurray::objects::ztensor_type(e),
        }
    }

    /// The type's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Elem::Plain(d) => d.name(),
            Elem::Logical(t) => t.name(),
            Elem::Hurray(e) => e.name(),
        }
    }
}

/// The name of the file (and of the part, where it is one) holding an
/// object's row-major tensor when its format says where that is.
pub const DATA: &str = hurray::objects::DATA;

/// Where object `i`'s row-major tensor is.
#[derive(Debug)]
pub enum TensorData<'a> {
    /// The object's layout and parts say (zTensor, safetensors, GGUF): a
    /// dense object's first part, decoded, of its part's type.
    ByLayout,
    /// Part `part` holds it as stored, of element type `elem`.
    Stored { part: u32, elem: Elem },
    /// Computed by range from the root file's bytes, of element type
    /// `elem`; served as the object's view file [`DATA`].
    Computed { view: &'a RowMajor, elem: Elem },
    /// The format defines none for this object, or it cannot be made: why.
    Absent(String),
}

/// The computed views of a model's tensors, made once.
#[derive(Debug, Default)]
pub(super) struct Computed {
    /// By object (ascending), every tensor whose data is computed: its
    /// view, or why it cannot be made.
    views: Vec<(u32, Result<RowMajor, String>)>,
}

impl Computed {
    fn of(input: &Input, manifest: Option<&Manifest>) -> Computed {
        let file = match input {
            Input::Hurray(file) => file,
            Input::Torch(file) => return Computed::of_torch(file),
            Input::Zt(_) | Input::Gguf(_) => return Computed::of_blocks(manifest),
            Input::Safetensors(_) | Input::Npz(_) | Input::Onnx(_) | Input::OpenVino(_) => {
                return Computed::default()
            }
        };
        let members = hurray::composite_members(&file.tensors);
        let views = (0..file.tensors.len())
            .filter_map(|i| {
                let v = crate::decode::hurray::view(file, i, &members)?;
                Some((i as u32, v))
            })
            .collect();
        Computed { views }
    }

    /// The views of a PyTorch checkpoint's strided tensors, each over its
    /// storage's bytes.
    fn of_torch(file: &pytorch::File) -> Computed {
        let views = (file.tensors.iter().enumerate())
            .filter(|(_, t)| !t.in_place() || t.quant.is_some())
            .map(|(i, t)| {
                let s = &file.storages[t.storage];
                let bits = (t.width() * 8) as u32;
                let view =
                    RowMajor::strided(s.offset, s.len, &t.shape, bits, &t.stride, t.byte_offset())
                        .map(|v| v.with_sign_flip(t.sign_flip()));
                let view = match &t.quant {
                    Some(q) => view.map(|ints| RowMajor::torch_affine(ints, affine(file, t, q))),
                    None => view,
                };
                (i as u32, view)
            })
            .collect();
        Computed { views }
    }

    /// The values of every object of a ggml block type (a GGUF file's
    /// quantized tensors, or theirs packed into a `.zt`), each computed
    /// from its one part's blocks where they are stored as they are; and
    /// of every `zt.mx/1` and `zt.quant_group/1` object whose parts are
    /// stored as they are in one file (else its prepared view serves it).
    fn of_blocks(manifest: Option<&Manifest>) -> Computed {
        let Some(m) = manifest else {
            return Computed::default();
        };
        let profile = |o: &Object| crate::decode::views::by_range(o).map(RowMajor::profile);
        let views = (m.objects.iter().enumerate())
            .filter_map(|(i, o)| Some((i as u32, block_values(o).or_else(|| profile(o).map(Ok))?)))
            .collect();
        Computed { views }
    }

    fn get(&self, object: u32) -> Option<&Result<RowMajor, String>> {
        let i = (self.views).binary_search_by_key(&object, |r| r.0).ok()?;
        Some(&self.views[i].1)
    }
}

/// How quantized tensor `t` of `file` is dequantized.
fn affine(file: &pytorch::File, t: &pytorch::Tensor, q: &pytorch::Quant) -> torch::Affine {
    let at = |l: &pytorch::Located| torch::Params {
        start: file.storages[l.storage].offset + l.byte_offset,
        count: l.count,
    };
    let scheme = match &q.scheme {
        pytorch::Scheme::PerTensor { scale, zero_point } => torch::Scheme::PerTensor {
            scale: f64::from_bits(*scale),
            zero_point: *zero_point,
        },
        pytorch::Scheme::PerChannel {
            axis,
            scales,
            zero_points,
        } => torch::Scheme::PerChannel {
            scales: at(scales),
            zero_points: at(zero_points),
            // Within the element count, checked at open.
            inner: (t.shape[axis + 1..].iter()).fold(1u64, |a, &d| a.saturating_mul(d)),
            loaded: Default::default(),
        },
    };
    torch::Affine { ty: q.ty, scheme }
}

/// The values of object `o` when its layout is a ggml block type
/// (`gguf.<type>/1`, its blocks in its one part, stored as they are):
/// `None` for any other layout, and for blocks stored encoded (their
/// decoded part's view serves them, `decode::views`); an error when they
/// cannot be computed (a type ztfs does not dequantize, blocks that are not
/// the shape's).
fn block_values(o: &Object) -> Option<Result<RowMajor, String>> {
    let ty = crate::format::profiles::ggml_type_of(&o.layout)?;
    if o.parts.iter().any(|p| p.encoding.is_some()) {
        return None;
    }
    Some((|| {
        let [p] = &o.parts[..] else {
            return Err(format!(
                "{} parts, not the one part of blocks",
                o.parts.len()
            ));
        };
        let count = (o.shape.iter()).try_fold(1u64, |n, &d| n.checked_mul(d));
        let count = count.ok_or("its element count overflows")?;
        RowMajor::dequantized(ty, p.blob.offset, p.blob.length, count)
    })())
}

impl Model {
    /// Where object `i`'s row-major tensor is (see [`TensorData`]).
    pub fn tensor_data(&self, i: u32) -> TensorData<'_> {
        let file = match &self.input {
            Input::Hurray(file) => file,
            Input::Torch(file) => return self.torch_data(file, i),
            Input::Zt(_) | Input::Gguf(_) => return self.block_data(i),
            Input::Safetensors(_) | Input::Npz(_) | Input::Onnx(_) | Input::OpenVino(_) => {
                return TensorData::ByLayout
            }
        };
        let Some(t) = file.tensors.get(i as usize) else {
            return TensorData::Absent("no such tensor".into());
        };
        let elem = Elem::Hurray(t.descriptor.elem);
        match hurray::objects::data_of(t) {
            // Its `data` part comes first (`hurray::objects`).
            Data::Direct { .. } => TensorData::Stored { part: 0, elem },
            Data::Absent(why) => TensorData::Absent(why),
            Data::Computed => match self.computed().get(i) {
                // A quantized tensor's values are float32.
                Some(Ok(view)) if view.dequantized_from().is_some() => TensorData::Computed {
                    view,
                    elem: Elem::Hurray(hurray::ElemType::F32),
                },
                Some(Ok(view)) => TensorData::Computed { view, elem },
                Some(Err(why)) => TensorData::Absent(why.clone()),
                None => TensorData::Absent("no row-major view".into()),
            },
        }
    }

    /// Where object `i` of a zTensor or GGUF file is: its values, when it
    /// is of a ggml block type; else where its layout says.
    fn block_data(&self, i: u32) -> TensorData<'_> {
        match self.computed().get(i) {
            Some(Ok(view)) => TensorData::Computed {
                view,
                elem: Elem::Plain(DType::F32),
            },
            Some(Err(why)) => TensorData::Absent(format!("no values: {why}")),
            None => TensorData::ByLayout,
        }
    }

    /// Where tensor `i` of a PyTorch checkpoint is: its `data` part, or
    /// its view of its storage.
    fn torch_data(&self, file: &pytorch::File, i: u32) -> TensorData<'_> {
        let Some(t) = file.tensors.get(i as usize) else {
            return TensorData::Absent("no such tensor".into());
        };
        let elem = match safetensors::objects::ztensor_type(t.dtype) {
            (d, None) => Elem::Plain(d),
            (_, Some(l)) => match LogicalType::parse(l) {
                Some(l) => Elem::Logical(l),
                None => return TensorData::Absent(format!("{l} has no registered zTensor type")),
            },
        };
        if t.in_place() && t.quant.is_none() {
            return TensorData::Stored { part: 0, elem };
        }
        match self.computed().get(i) {
            // A quantized tensor's values are float32.
            Some(Ok(view)) if t.quant.is_some() => TensorData::Computed {
                view,
                elem: Elem::Plain(DType::F32),
            },
            Some(Ok(view)) => TensorData::Computed { view, elem },
            Some(Err(why)) => TensorData::Absent(why.clone()),
            None => TensorData::Absent("no row-major view".into()),
        }
    }

    /// The file a computed view of object `i` reads: the one holding its
    /// first part (a sharded PyTorch checkpoint's file), else the root.
    pub fn view_store(&self, i: u32) -> crate::error::Result<&crate::store::Store> {
        let first = (self.manifest())
            .and_then(|m| m.objects.get(i as usize))
            .and_then(|o| o.parts.first());
        match first {
            Some(p) => self.store_of(p),
            None => Ok(self.root()),
        }
    }

    /// Object `i`'s computed view, when its format computes one and it
    /// could be made: [`TensorData::Computed`]'s view, found without
    /// asking the format again (the tree asks this on every lookup of an
    /// object's files).
    pub fn computed_view(&self, i: u32) -> Option<&RowMajor> {
        self.computed().get(i)?.as_ref().ok()
    }

    /// True when `ztfs pack` writes each tensor's row-major data
    /// ([`Model::tensor_data`]) rather than the model's objects: a Hurray
    /// file's objects are its buffers, which zTensor gives no meaning.
    pub fn packs_tensor_data(&self) -> bool {
        match &self.input {
            Input::Hurray(_) | Input::Torch(_) => true,
            Input::Zt(_)
            | Input::Safetensors(_)
            | Input::Gguf(_)
            | Input::Npz(_)
            | Input::Onnx(_)
            | Input::OpenVino(_) => false,
        }
    }

    fn computed(&self) -> &Computed {
        self.computed
            .get_or_init(|| Computed::of(&self.input, self.manifest()))
    }
}

/// A model's computed views, made on first use.
pub(super) type ComputedCell = OnceLock<Computed>;
