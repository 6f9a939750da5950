//! Tensors and their storages, as torch's weights-only loader (torch
//! 2.x's `torch._utils` and `torch._tensor`) rebuilds them for a state
//! dict: the storage record a persistent id names (`BINPERSID`) and the
//! rebuild calls over one (`_rebuild_tensor` and its `_v2` and `_v3`,
//! `_rebuild_qtensor`, `_rebuild_parameter` and `Parameter`,
//! `_rebuild_from_type_v2`).
//!
//! Every argument of every rebuild is read: one that would change a
//! tensor's values (the negative and conjugate bits, a state setting
//! `.data`) is applied (the bits, served as a computed view) or refused,
//! never ignored; one that cannot (`requires_grad`, empty backward hooks)
//! is checked as torch checks it.

use super::{bad, Global, Obj, QScheme, Storage, StorageType, Tensor, Value, Vm};
use crate::error::Result;
use crate::format::safetensors::Dtype;

/// True for a dtype whose tensors may require gradients (torch: floating
/// point and complex).
fn is_float(d: Dtype) -> bool {
    matches!(
        d,
        Dtype::F16
            | Dtype::BF16
            | Dtype::F32
            | Dtype::F64
            | Dtype::C64
            | Dtype::F8_E4M3
            | Dtype::F8_E5M2
            | Dtype::F8_E4M3FNUZ
            | Dtype::F8_E5M2FNUZ
            | Dtype::F8_E8M0
    )
}

impl Vm<'_> {
    /// True when `v` is falsy to Python.
    fn falsy(&self, v: Value) -> bool {
        match v {
            Value::None => true,
            Value::Bool(b) => !b,
            Value::Int(i) => i == 0,
            Value::Float(f) => f == 0.0,
            Value::Other => false,
            Value::Obj(_) => match self.obj(v) {
                Some(Obj::Str(s)) => s.is_empty(),
                Some(Obj::Tuple(x) | Obj::List(x) | Obj::Set(x)) => x.is_empty(),
                Some(Obj::Dict(d) | Obj::OrderedDict(d)) => d.is_empty(),
                _ => false,
            },
        }
    }

    /// Checks a tensor's Python state (`torch._utils._set_obj_state`'s
    /// `state` or `(dict_state, slots_state)`) sets nothing: an attribute
    /// set on a tensor may be `data` (another tensor's values), `real` or
    /// `imag`; a state setting any is refused by its names.
    fn no_state(&self, state: Value) -> Result<()> {
        let parts = match self.obj(state) {
            Some(Obj::Tuple(x)) if x.len() == 2 => x.clone(),
            Some(Obj::Tuple(_)) => {
                return Err(self.tensor_err("its state is a tuple, not (dict, slots)"))
            }
            _ => vec![state],
        };
        for p in parts {
            if self.falsy(p) {
                continue;
            }
            let names: Vec<String> = match self.obj(p) {
                Some(Obj::Dict(d) | Obj::OrderedDict(d)) => (d.iter().take(4))
                    .map(|&(k, _)| match self.str_of(k) {
                        Some(s) => format!("{s:?}"),
                        None => format!("{k:?}"),
                    })
                    .collect(),
                _ => return Err(self.tensor_err("its state is not a dict")),
            };
            return Err(self.tensor_err(format!(
                "its state sets attributes {} on it after its rebuild (torch applies them: \"data\" replaces its values); not read here",
                names.join(", ")
            )));
        }
        Ok(())
    }

    /// Checks `requires_grad` and the backward hooks of a tensor of
    /// `dtype` as torch's setters do: a bool, true only for a floating
    /// point or complex dtype; hooks none or empty.
    fn grad_and_hooks(&self, dtype: Dtype, grad: Value, hooks: Value) -> Result<()> {
        match grad {
            Value::Bool(false) => {}
            Value::Bool(true) if is_float(dtype) => {}
            Value::Bool(true) => {
                return Err(self.tensor_err(format!(
                    "it requires gradients, which torch allows only for floating point and complex dtypes ({dtype:?})"
                )))
            }
            x => return Err(self.tensor_err(format!("its requires_grad is {x:?}, not a bool"))),
        }
        match (hooks, self.obj(hooks)) {
            (Value::None, _) => Ok(()),
            (_, Some(Obj::Dict(d) | Obj::OrderedDict(d))) if d.is_empty() => Ok(()),
            _ => {
                Err(self
                    .tensor_err("its backward hooks are not empty (torch.save never writes hooks)"))
            }
        }
    }

    fn tensor_of(&self, v: Value) -> Option<&Tensor> {
        match self.obj(v) {
            Some(Obj::Tensor(t)) => Some(t),
            _ => None,
        }
    }

    /// `_rebuild_parameter(data, requires_grad, hooks)` and its `_with_state`
    /// (and `Parameter(data, requires_grad)`): the tensor `data`.
    pub(super) fn parameter(
        &mut self,
        data: Value,
        grad: Value,
        hooks: Value,
        state: Value,
    ) -> Result<Value> {
        let Some(t) = self.tensor_of(data) else {
            return Err(self.tensor_err(
                "a parameter of what is not a tensor of the archive (Parameter() without data has no storage)",
            ));
        };
        self.grad_and_hooks(t.dtype, grad, hooks)?;
        self.no_state(state)?;
        Ok(data)
    }

    /// `_rebuild_from_type_v2(func, type, args, state)`: `func(*args)`,
    /// as a `torch.Tensor` or a `Parameter`, its state set. Torch wraps a
    /// tensor's own rebuild, never another wrap: the call recurses once at
    /// most.
    pub(super) fn rebuild_from_type(
        &mut self,
        func: Value,
        ty: Value,
        inner: Value,
        state: Value,
    ) -> Result<Value> {
        let g = Global::RebuildFromTypeV2;
        let ty = self.global_of(ty, "_rebuild_from_type_v2")?;
        if !matches!(ty, Global::Tensor | Global::Parameter) {
            return Err(self.wrong(g, format!("of type {ty:?}, not a tensor or a parameter")));
        }
        let f = self.global_of(func, "_rebuild_from_type_v2")?;
        if !matches!(
            f,
            Global::RebuildTensor(_) | Global::RebuildParameter | Global::RebuildParameterWithState
        ) {
            return Err(self.wrong(g, "of what is not a tensor's rebuild"));
        }
        let args = self.args(inner, "_rebuild_from_type_v2")?;
        let t = self.call(f, &args)?;
        self.no_state(state)?;
        Ok(t)
    }

    /// A small non-negative int, or a tuple (or `torch.Size`) of them.
    fn ints(&self, v: Value, what: &str) -> Result<Vec<u64>> {
        let items = match self.obj(v) {
            Some(Obj::Tuple(x) | Obj::List(x)) => x,
            _ => return Err(self.tensor_err(format!("its {what} is not a tuple"))),
        };
        if items.len() > crate::decode::relayout::MAX_RANK {
            return Err(self.tensor_err(format!("its {what} has {} dimensions", items.len())));
        }
        items
            .iter()
            .map(|&x| match x {
                Value::Int(i) if i >= 0 => Ok(i as u64),
                _ => Err(self.tensor_err(format!("its {what} holds {x:?}"))),
            })
            .collect()
    }

    /// `_rebuild_tensor(storage, offset, size, stride)`, `_v2(..,
    /// requires_grad, hooks[, metadata])`, `_v3(.., requires_grad, hooks,
    /// dtype[, metadata])`.
    pub(super) fn rebuild_tensor(&mut self, version: u8, args: &[Value]) -> Result<Value> {
        let wanted = match version {
            1 => 4..=4,
            2 => 6..=7,
            _ => 7..=8,
        };
        if !wanted.contains(&args.len()) {
            return Err(self.tensor_err(format!(
                "_rebuild_tensor (version {version}) with {} arguments",
                args.len()
            )));
        }
        let storage = args[0];
        let sdtype = match self.obj(storage) {
            Some(Obj::Storage(s)) => match s.ty {
                StorageType::Typed(d) => Some(d),
                // Torch loads an untyped storage as a uint8 one.
                StorageType::Untyped => Some(Dtype::U8),
                StorageType::Quant(_) | StorageType::Other(_) => None,
            },
            _ => return Err(self.tensor_err("its storage is not a persistent storage")),
        };
        let offset = match args[1] {
            Value::Int(i) if i >= 0 => i as u64,
            x => return Err(self.tensor_err(format!("its storage offset is {x:?}"))),
        };
        let shape = self.ints(args[2], "size")?;
        let stride = self.ints(args[3], "stride")?;
        if stride.len() != shape.len() {
            return Err(self.tensor_err(format!(
                "size {shape:?} and stride {stride:?} differ in rank"
            )));
        }
        let dtype = match version {
            3 => match self.obj(args[6]) {
                Some(Obj::Global(Global::Dtype(d))) => *d,
                _ => return Err(self.tensor_err("its dtype is not a torch dtype")),
            },
            _ => sdtype,
        };
        let Some(dtype) = dtype else {
            return Err(self.tensor_err("its dtype has no zTensor type (complex128, quantized)"));
        };
        if version > 1 {
            self.grad_and_hooks(dtype, args[4], args[5])?;
        }
        let metadata = match version {
            2 => args.get(6),
            _ => args.get(7),
        };
        let (neg, conj) = match metadata {
            Some(&m) => self.math_bits(m, dtype)?,
            None => (false, false),
        };
        let Value::Obj(storage) = storage else {
            unreachable!("matched an object above")
        };
        self.new_obj(Obj::Tensor(Tensor {
            storage,
            dtype,
            offset,
            shape,
            stride,
            neg,
            conj,
            quant: None,
        }))
    }

    /// `_rebuild_qtensor(storage, offset, size, stride, quantizer_params,
    /// requires_grad, backward_hooks)`: a quantized tensor over a
    /// quantized storage, of scheme `(per_tensor_affine, scale,
    /// zero_point)` or `(per_channel_affine, scales, zero_points, axis)`.
    pub(super) fn rebuild_qtensor(
        &mut self,
        [storage, offset, size, stride]: [Value; 4],
        params: Value,
        grad: Value,
        hooks: Value,
    ) -> Result<Value> {
        let q = match self.obj(storage) {
            Some(Obj::Storage(s)) => match s.ty {
                StorageType::Quant(q) => q,
                _ => {
                    return Err(
                        self.tensor_err("a quantized tensor of a storage that is not quantized")
                    )
                }
            },
            _ => return Err(self.tensor_err("its storage is not a persistent storage")),
        };
        let offset = match offset {
            Value::Int(i) if i >= 0 => i as u64,
            x => return Err(self.tensor_err(format!("its storage offset is {x:?}"))),
        };
        let shape = self.ints(size, "size")?;
        let stride = self.ints(stride, "stride")?;
        if stride.len() != shape.len() {
            return Err(self.tensor_err(format!(
                "size {shape:?} and stride {stride:?} differ in rank"
            )));
        }
        // An integer dtype: torch refuses requires_grad on it.
        self.grad_and_hooks(q.dtype(), grad, hooks)?;
        let p = match self.obj(params) {
            Some(Obj::Tuple(p)) => p.clone(),
            _ => return Err(self.tensor_err("its quantizer parameters are not a tuple")),
        };
        let scheme = match (p.first().map(|&v| self.obj(v)), &p[..]) {
            (Some(Some(Obj::Global(Global::QScheme { per_channel: false }))), &[_, scale, Value::Int(zero_point)]) => {
                let scale = match scale {
                    Value::Float(f) => f,
                    Value::Int(i) => i as f64,
                    x => return Err(self.tensor_err(format!("its scale is {x:?}"))),
                };
                QScheme::PerTensor { scale: scale.to_bits(), zero_point }
            }
            (Some(Some(Obj::Global(Global::QScheme { per_channel: true }))), &[_, Value::Obj(scales), Value::Obj(zero_points), Value::Int(axis)]) => {
                let tensors = [scales, zero_points].map(|t| matches!(self.obj(Value::Obj(t)), Some(Obj::Tensor(_))));
                if tensors != [true, true] || axis < 0 || axis as usize >= shape.len() {
                    return Err(self.tensor_err(format!(
                        "per-channel parameters that are not two tensors and an axis of its {} dimensions",
                        shape.len()
                    )));
                }
                QScheme::PerChannel { scales, zero_points, axis: axis as usize }
            }
            _ => {
                return Err(self.tensor_err(
                    "its quantizer parameters are not (per_tensor_affine, scale, zero_point) or (per_channel_affine, scales, zero_points, axis)",
                ))
            }
        };
        let Value::Obj(storage) = storage else {
            unreachable!("matched an object above")
        };
        self.new_obj(Obj::Tensor(Tensor {
            storage,
            dtype: q.dtype(),
            offset,
            shape,
            stride,
            neg: false,
            conj: false,
            quant: Some((q, scheme)),
        }))
    }

    /// The negative and conjugate bits a rebuild's `metadata` sets, as
    /// torch's `set_tensor_metadata` sets them: a key present sets its bit
    /// (whatever its bool says); other keys are for other devices'
    /// backends, which a CPU load ignores. A negative bit is refused on a
    /// dtype whose negation is not its sign bit flipped.
    fn math_bits(&self, m: Value, dtype: Dtype) -> Result<(bool, bool)> {
        if self.falsy(m) {
            return Ok((false, false));
        }
        let Some(Obj::Dict(d) | Obj::OrderedDict(d)) = self.obj(m) else {
            return Err(self.tensor_err(format!("its metadata {m:?} is not a dict")));
        };
        let (mut neg, mut conj) = (false, false);
        for &(k, v) in d {
            let (Some(k), Value::Bool(_)) = (self.str_of(k), v) else {
                return Err(self.tensor_err("its metadata is not a dict of strings to bools"));
            };
            match k {
                "neg" => neg = true,
                "conj" => conj = true,
                _ => {}
            }
        }
        // Floats whose negation is their sign bit flipped: not the fnuz
        // kinds (0x80 is their NaN, so -0 is not a flip) nor e8m0 (no sign).
        let signed = is_float(dtype)
            && !matches!(
                dtype,
                Dtype::F8_E4M3FNUZ | Dtype::F8_E5M2FNUZ | Dtype::F8_E8M0
            );
        if neg && !signed {
            return Err(self.tensor_err(format!(
                "its negative bit on a {dtype:?} tensor, whose negation ztfs does not compute"
            )));
        }
        Ok((neg, conj))
    }

    pub(super) fn persistent(&mut self, id: Value) -> Result<Value> {
        let fields = match self.obj(id) {
            Some(Obj::Tuple(f)) if f.len() == 5 => f.clone(),
            _ => return Err(bad(self.at, "a persistent id that is not a 5-tuple")),
        };
        let tag = self.str_of(fields[0]);
        let ty = match self.obj(fields[1]) {
            Some(Obj::Global(Global::StorageType(d))) => Some(*d),
            _ => None,
        };
        let key_len = self.str_of(fields[2]).map(str::len);
        // The location (`cpu`, `cuda:0`) says where torch puts the storage,
        // not its values; it must be a name, as torch's restore needs one.
        let location = self.str_of(fields[3]);
        let (Some("storage"), Some(ty), Some(key_len), Some(_), Value::Int(numel)) =
            (tag, ty, key_len, location, fields[4])
        else {
            return Err(bad(
                self.at,
                "a persistent id that is not ('storage', StorageType, key, location, numel)",
            ));
        };
        if numel < 0 {
            return Err(bad(self.at, format!("a storage of {numel} elements")));
        }
        self.hold(key_len)?;
        let key = self.str_of(fields[2]).unwrap_or_default().to_string();
        self.new_obj(Obj::Storage(Storage {
            ty,
            key,
            numel: numel as u64,
        }))
    }
}
