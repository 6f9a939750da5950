//! The globals of the allowlist and what `REDUCE`, `NEWOBJ` and `BUILD`
//! on them build, as torch's weights-only loader (torch 2.x's
//! `_weights_only_unpickler`, `torch._utils` and `torch._tensor`) builds
//! them for a state dict.
//!
//! Every argument of every call is read: one that would change a
//! tensor's values (the negative and conjugate bits, a state setting
//! `.data`, `BUILD` on a tensor, which torch runs as `set_`) is applied
//! (the bits, served as a computed view) or refused, never ignored; one
//! that cannot (`requires_grad`, empty backward hooks) is checked as torch
//! checks it. Calls torch allows that build what ztfs does not serve (a
//! tensor made from Python values, a quantized or sparse tensor) are
//! refused by name (`TorchTensor`), and those that build no tensor (a
//! device, a complex number, bytes) become [`Value::Other`].

use super::{bad, Obj, QScheme, Storage, Tensor, Value, Vm};
use crate::error::{Error, Result, Rule};
use crate::format::safetensors::Dtype;

/// Most arguments a call of the allowlist takes (`_rebuild_tensor_v3`'s
/// eight): a call with more is refused before its arguments are read.
const MAX_ARGS: usize = 8;

/// A global of the allowlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Global {
    OrderedDict,
    Counter,
    /// `torch._utils._rebuild_tensor`, `_v2` and `_v3`.
    RebuildTensor(u8),
    RebuildParameter,
    RebuildParameterWithState,
    RebuildFromTypeV2,
    /// `torch.nn.parameter.Parameter`.
    Parameter,
    /// `torch.Tensor`.
    Tensor,
    /// A legacy tensor class (`torch.FloatTensor`, `torch.cuda.LongTensor`):
    /// calling one builds a tensor from Python values.
    LegacyTensor,
    /// A storage class.
    StorageType(StorageType),
    /// `torch.storage.TypedStorage`: allowed, builds nothing here.
    TypedStorage,
    /// A dtype object such as `torch.float32`; `None` for one without a
    /// zTensor type (refused only if a tensor uses it).
    Dtype(Option<Dtype>),
    Device,
    Size,
    Set,
    CodecsEncode,
    Bytearray,
    Complex,
    /// `torch._utils._rebuild_qtensor`.
    RebuildQTensor,
    /// `torch.per_tensor_affine` (false) or `torch.per_channel_affine`
    /// (true): the quantization schemes read here.
    QScheme {
        per_channel: bool,
    },
}

/// The integer type of a quantized storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QType {
    QInt8,
    QUInt8,
    QInt32,
}

impl QType {
    /// Bytes a value.
    pub fn width(self) -> u64 {
        match self {
            QType::QInt8 | QType::QUInt8 => 1,
            QType::QInt32 => 4,
        }
    }

    /// torch's name of the dtype (`torch.qint8`'s).
    pub fn torch_name(self) -> &'static str {
        match self {
            QType::QInt8 => "qint8",
            QType::QUInt8 => "quint8",
            QType::QInt32 => "qint32",
        }
    }

    /// The plain dtype of the same bytes (its `int_repr()`'s).
    pub fn dtype(self) -> Dtype {
        match self {
            QType::QInt8 => Dtype::I8,
            QType::QUInt8 => Dtype::U8,
            QType::QInt32 => Dtype::I32,
        }
    }
}

/// What a storage class holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageType {
    /// `UntypedStorage`: bytes.
    Untyped,
    /// A typed storage of elements with a zTensor type.
    Typed(Dtype),
    /// A quantized storage (`torch.QInt8Storage`...).
    Quant(QType),
    /// A typed storage of elements with none (complex128, 4- and 2-bit
    /// quantized), of this many bytes each.
    Other(u64),
}

/// The storage class `torch.NAME` is, if torch's weights_only loader
/// allows it (torch 2.x: its typed storages, none for float8 or uint16+,
/// which it saves untyped through `_rebuild_tensor_v3`).
fn storage_dtype(name: &str) -> Option<StorageType> {
    let d = match name {
        "DoubleStorage" => Dtype::F64,
        "FloatStorage" => Dtype::F32,
        "HalfStorage" => Dtype::F16,
        "BFloat16Storage" => Dtype::BF16,
        "LongStorage" => Dtype::I64,
        "IntStorage" => Dtype::I32,
        "ShortStorage" => Dtype::I16,
        "CharStorage" => Dtype::I8,
        "ByteStorage" => Dtype::U8,
        "BoolStorage" => Dtype::BOOL,
        "ComplexFloatStorage" => Dtype::C64,
        "ComplexDoubleStorage" => return Some(StorageType::Other(16)),
        "QInt32Storage" => return Some(StorageType::Quant(QType::QInt32)),
        "QInt8Storage" => return Some(StorageType::Quant(QType::QInt8)),
        "QUInt8Storage" => return Some(StorageType::Quant(QType::QUInt8)),
        "QUInt4x2Storage" | "QUInt2x4Storage" => return Some(StorageType::Other(1)),
        _ => return None,
    };
    Some(StorageType::Typed(d))
}

/// The dtype the dtype object `torch.NAME` is, if torch's weights_only
/// loader allows it: `Some(None)` for one with no zTensor type.
fn dtype_object(name: &str) -> Option<Option<Dtype>> {
    let d = match name {
        "float64" => Dtype::F64,
        "float32" => Dtype::F32,
        "float16" => Dtype::F16,
        "bfloat16" => Dtype::BF16,
        "int64" => Dtype::I64,
        "int32" => Dtype::I32,
        "int16" => Dtype::I16,
        "int8" => Dtype::I8,
        "uint8" => Dtype::U8,
        "bool" => Dtype::BOOL,
        "complex64" => Dtype::C64,
        "uint16" => Dtype::U16,
        "uint32" => Dtype::U32,
        "uint64" => Dtype::U64,
        "float8_e4m3fn" => Dtype::F8_E4M3,
        "float8_e5m2" => Dtype::F8_E5M2,
        "float8_e4m3fnuz" => Dtype::F8_E4M3FNUZ,
        "float8_e5m2fnuz" => Dtype::F8_E5M2FNUZ,
        "float8_e8m0fnu" => Dtype::F8_E8M0,
        "complex128" | "complex32" | "bcomplex32" | "qint8" | "qint32" | "quint8" | "quint4x2"
        | "quint2x4" | "float4_e2m1fn_x2" | "bits8" | "bits16" | "bits1x8" | "bits2x4"
        | "bits4x2" | "int1" | "int2" | "int3" | "int4" | "int5" | "int6" | "int7" | "uint1"
        | "uint2" | "uint3" | "uint4" | "uint5" | "uint6" | "uint7" => return Some(None),
        _ => return None,
    };
    Some(Some(d))
}

/// The legacy tensor classes of `torch._tensor_classes`, by element.
const LEGACY_TENSORS: [&str; 12] = [
    "Double",
    "Float",
    "Half",
    "BFloat16",
    "Long",
    "Int",
    "Short",
    "Char",
    "Byte",
    "Bool",
    "ComplexFloat",
    "ComplexDouble",
];

/// Globals torch's weights_only loader allows that build tensors ztfs
/// does not serve (quantized with symmetric or float zero-point schemes,
/// sparse, on a device, without storage): a file naming one is refused as
/// such (`TorchTensor`), not as hostile.
const UNSERVED: [(&str, &str); 9] = [
    ("torch._utils", "_rebuild_sparse_tensor"),
    ("torch._utils", "_rebuild_meta_tensor_no_storage"),
    ("torch._utils", "_rebuild_device_tensor_from_cpu_tensor"),
    ("torch._utils", "_rebuild_device_tensor_from_numpy"),
    ("torch._utils", "_rebuild_wrapper_subclass"),
    ("torch.serialization", "_get_layout"),
    ("torch", "per_tensor_symmetric"),
    ("torch", "per_channel_symmetric"),
    ("torch", "per_channel_affine_float_qparams"),
];

/// The allowlisted global `module.name`, if it is one: the names
/// `torch.load(weights_only=True)` allows (torch 2.15's
/// `_get_allowed_globals`), after its renaming of Python 2's
/// `__builtin__`.
pub fn allowed(module: &str, name: &str) -> Option<Global> {
    let module = match module {
        "__builtin__" => "builtins",
        m => m,
    };
    Some(match (module, name) {
        ("collections", "OrderedDict") => Global::OrderedDict,
        ("collections", "Counter") => Global::Counter,
        ("torch._utils", "_rebuild_tensor") => Global::RebuildTensor(1),
        ("torch._utils", "_rebuild_tensor_v2") => Global::RebuildTensor(2),
        ("torch._utils", "_rebuild_tensor_v3") => Global::RebuildTensor(3),
        ("torch._utils", "_rebuild_parameter") => Global::RebuildParameter,
        ("torch._utils", "_rebuild_qtensor") => Global::RebuildQTensor,
        ("torch", "per_tensor_affine") => Global::QScheme { per_channel: false },
        ("torch", "per_channel_affine") => Global::QScheme { per_channel: true },
        ("torch._utils", "_rebuild_parameter_with_state") => Global::RebuildParameterWithState,
        ("torch._tensor", "_rebuild_from_type_v2") => Global::RebuildFromTypeV2,
        ("torch.nn.parameter", "Parameter") => Global::Parameter,
        ("torch", "Tensor") => Global::Tensor,
        ("torch", "device") => Global::Device,
        ("torch", "Size") => Global::Size,
        ("builtins", "set") => Global::Set,
        ("builtins", "bytearray") => Global::Bytearray,
        ("builtins", "complex") => Global::Complex,
        ("_codecs", "encode") => Global::CodecsEncode,
        // Torch 2 names the untyped storage of `_rebuild_tensor_v3` so.
        ("torch.storage", "UntypedStorage") => Global::StorageType(StorageType::Untyped),
        ("torch.storage", "TypedStorage") => Global::TypedStorage,
        ("torch" | "torch.cuda" | "torch.sparse" | "torch.cuda.sparse", n)
            if (n.strip_suffix("Tensor")).is_some_and(|e| LEGACY_TENSORS.contains(&e)) =>
        {
            Global::LegacyTensor
        }
        ("torch", n) => match storage_dtype(n) {
            Some(d) => Global::StorageType(d),
            None => Global::Dtype(dtype_object(n)?),
        },
        _ => return None,
    })
}

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
    pub(super) fn global(&mut self, module: &str, name: &str) -> Result<()> {
        if UNSERVED.contains(&(module, name)) {
            return Err(self.tensor_err(format!(
                "{module}.{name} builds a tensor ztfs does not serve (quantized, sparse, on a device, or without storage)"
            )));
        }
        let Some(g) = allowed(module, name) else {
            return Err(Error::reject(
                Rule::TorchGlobal,
                format!(
                    "data.pkl at byte {}: global {module}.{name} is not one torch.load(weights_only=True) allows for a state dict (refused, never looked up)",
                    self.at
                ),
            ));
        };
        let v = self.new_obj(Obj::Global(g))?;
        self.push(v)
    }

    fn global_of(&self, f: Value, op: &str) -> Result<Global> {
        match self.obj(f) {
            Some(Obj::Global(g)) => Ok(*g),
            _ => Err(bad(self.at, format!("{op} of what is not a global"))),
        }
    }

    /// A call's arguments (a tuple or a list, as Python's `f(*args)`),
    /// copied only once their count is known to be small.
    fn args(&self, args: Value, op: &str) -> Result<Vec<Value>> {
        match self.obj(args) {
            Some(Obj::Tuple(a) | Obj::List(a)) if a.len() <= MAX_ARGS => Ok(a.clone()),
            Some(Obj::Tuple(a) | Obj::List(a)) => Err(bad(
                self.at,
                format!(
                    "{op} with {} arguments (no allowed call takes more than {MAX_ARGS})",
                    a.len()
                ),
            )),
            _ => Err(bad(
                self.at,
                format!("{op} with arguments that are not a tuple"),
            )),
        }
    }

    fn wrong(&self, g: Global, why: impl std::fmt::Display) -> Error {
        Error::reject(
            Rule::TorchGlobal,
            format!("data.pkl at byte {}: {g:?} {why}", self.at),
        )
    }

    pub(super) fn tensor_err(&self, why: impl std::fmt::Display) -> Error {
        Error::reject(
            Rule::TorchTensor,
            format!("data.pkl at byte {}: a tensor: {why}", self.at),
        )
    }

    /// `REDUCE`: what calling the allowlisted `f` with `args` builds.
    pub(super) fn reduce(&mut self, f: Value, args: Value) -> Result<Value> {
        let g = self.global_of(f, "REDUCE")?;
        let args = self.args(args, "REDUCE")?;
        self.call(g, &args)
    }

    fn call(&mut self, g: Global, args: &[Value]) -> Result<Value> {
        match (g, args) {
            (Global::OrderedDict | Global::Counter, []) => self.new_obj(Obj::OrderedDict(vec![])),
            (Global::OrderedDict, &[from]) => self.dict_from(g, from, true),
            (Global::Counter, &[from]) => self.dict_from(g, from, false),
            (Global::RebuildTensor(v), _) => self.rebuild_tensor(v, args),
            (Global::RebuildQTensor, &[storage, offset, size, stride, params, grad, hooks]) => {
                self.rebuild_qtensor([storage, offset, size, stride], params, grad, hooks)
            }
            (Global::RebuildParameter, &[data, grad, hooks]) => {
                self.parameter(data, grad, hooks, Value::None)
            }
            (Global::RebuildParameterWithState, &[data, grad, hooks, state]) => {
                self.parameter(data, grad, hooks, state)
            }
            (Global::RebuildFromTypeV2, &[func, ty, inner, state]) => {
                self.rebuild_from_type(func, ty, inner, state)
            }
            // Parameter(data=None, requires_grad=True).
            (Global::Parameter, &[data]) => {
                self.parameter(data, Value::Bool(true), Value::None, Value::None)
            }
            (Global::Parameter, &[data, grad]) => {
                self.parameter(data, grad, Value::None, Value::None)
            }
            (Global::Tensor | Global::LegacyTensor, _) => Err(self.tensor_err(format!(
                "{g:?} called: it builds a tensor from Python values, which ztfs does not read"
            ))),
            (Global::Device, &[name]) | (Global::Device, &[name, Value::Int(_)])
                if self.str_of(name).is_some() =>
            {
                Ok(Value::Other)
            }
            (Global::Size | Global::Set, []) => {
                let make = if g == Global::Size {
                    Obj::Tuple
                } else {
                    Obj::Set
                };
                self.container(Vec::new(), make)
            }
            (Global::Size | Global::Set, &[from]) => self.sequence_from(g, from),
            (Global::CodecsEncode, &[s]) => self.encode(g, s, "utf-8"),
            (Global::CodecsEncode, &[s, enc]) => match self.str_of(enc) {
                Some(e) => {
                    let e = e.to_ascii_lowercase();
                    self.encode(g, s, &e)
                }
                None => Err(self.wrong(g, "with an encoding that is not a string")),
            },
            (Global::Bytearray, []) | (Global::Bytearray, [Value::Other]) => Ok(Value::Other),
            (Global::Complex, _)
                if args.len() <= 2
                    && (args.iter())
                        .all(|a| matches!(a, Value::Int(_) | Value::Float(_) | Value::Bool(_))) =>
            {
                Ok(Value::Other)
            }
            _ => Err(self.wrong(
                g,
                format!(
                    "called with {} arguments: not a call that builds a value of a state dict",
                    args.len()
                ),
            )),
        }
    }

    /// `OrderedDict(from)` or `Counter(from)`: a copy of a mapping, or (an
    /// ordered dict only) of a sequence of pairs; its cells held first.
    fn dict_from(&mut self, g: Global, from: Value, pairs_too: bool) -> Result<Value> {
        let n = match self.obj(from) {
            Some(Obj::Dict(d) | Obj::OrderedDict(d)) => d.len(),
            Some(Obj::Tuple(x) | Obj::List(x)) if pairs_too => x.len(),
            _ => return Err(self.wrong(g, "of what is not a mapping or a sequence of pairs")),
        };
        self.hold_cells(n)?;
        let items: Option<Vec<(Value, Value)>> = match self.obj(from) {
            Some(Obj::Dict(d) | Obj::OrderedDict(d)) => Some(d.clone()),
            Some(Obj::Tuple(x) | Obj::List(x)) => (x.iter())
                .map(|&p| match self.obj(p) {
                    Some(Obj::Tuple(kv) | Obj::List(kv)) if kv.len() == 2 => Some((kv[0], kv[1])),
                    _ => None,
                })
                .collect(),
            _ => None,
        };
        match items {
            Some(items) => self.new_obj(Obj::OrderedDict(items)),
            None => Err(self.wrong(g, "of a sequence holding what is not a pair")),
        }
    }

    /// `torch.Size(from)` or `set(from)`: a copy of a sequence, its cells
    /// held first.
    fn sequence_from(&mut self, g: Global, from: Value) -> Result<Value> {
        let n = match self.obj(from) {
            Some(Obj::Tuple(x) | Obj::List(x) | Obj::Set(x)) => x.len(),
            _ => return Err(self.wrong(g, "of what is not a sequence")),
        };
        self.hold_cells(n)?;
        let Some(Obj::Tuple(x) | Obj::List(x) | Obj::Set(x)) = self.obj(from) else {
            unreachable!("matched above")
        };
        let x = x.clone();
        self.new_obj(match g {
            Global::Size => Obj::Tuple(x),
            _ => Obj::Set(x),
        })
    }

    /// `_codecs.encode(s, encoding)`: bytes, read as another value; the
    /// string must encode, as Python's codec would refuse it otherwise.
    fn encode(&mut self, g: Global, s: Value, encoding: &str) -> Result<Value> {
        let Some(s) = self.str_of(s) else {
            return Err(self.wrong(g, "of what is not a string"));
        };
        let top = match encoding {
            "latin1" | "latin-1" | "latin_1" | "iso-8859-1" | "iso8859-1" | "l1" => 0xff,
            "ascii" | "us-ascii" => 0x7f,
            "utf-8" | "utf8" | "utf_8" => u32::MAX,
            _ => {
                return Err(self.wrong(g, format!("with encoding {encoding:?}, not one read here")))
            }
        };
        match s.chars().all(|c| u32::from(c) <= top) {
            true => Ok(Value::Other),
            false => Err(self.wrong(g, format!("of a string that {encoding} cannot encode"))),
        }
    }

    /// `NEWOBJ`: `cls.__new__(cls, *args)` for an allowlisted class, as
    /// torch's loader runs it (`Parameter(*args)` for a parameter).
    pub(super) fn new_instance(&mut self, cls: Value, args: Value) -> Result<Value> {
        let g = self.global_of(cls, "NEWOBJ")?;
        let args = self.args(args, "NEWOBJ")?;
        match g {
            Global::Parameter => self.call(g, &args),
            // `dict.__new__`, `set.__new__` and `bytearray.__new__` ignore
            // their arguments (`__init__` would read them; NEWOBJ does not
            // call it); `tuple.__new__` and `complex.__new__` do not.
            Global::OrderedDict | Global::Counter => self.new_obj(Obj::OrderedDict(vec![])),
            Global::Set => self.container(Vec::new(), Obj::Set),
            Global::Bytearray => Ok(Value::Other),
            Global::Size | Global::Complex => self.call(g, &args),
            Global::Tensor | Global::LegacyTensor => Err(self.tensor_err(format!(
                "NEWOBJ of {g:?}: it builds a tensor without a storage of the archive, which ztfs does not read"
            ))),
            _ => Err(self.wrong(g, "made by NEWOBJ: not a class whose instance a state dict holds")),
        }
    }

    /// `BUILD`: torch's loader sets an ordered dict's attributes (a module
    /// state dict's `_metadata`), kept out of the tensors. On a tensor it
    /// runs `set_(*state)` or `__setstate__`, which would give it other
    /// values than its rebuild's: refused. On anything else it refuses.
    pub(super) fn build(&mut self, target: Value, state: Value) -> Result<()> {
        match (self.obj(target), self.obj(state)) {
            (Some(Obj::OrderedDict(_)), Some(Obj::Dict(_) | Obj::OrderedDict(_))) => Ok(()),
            (Some(Obj::OrderedDict(_)), _) => Err(bad(
                self.at,
                "BUILD of an ordered dict with a state that is not a dict",
            )),
            (Some(Obj::Tensor(_)), _) => Err(self.tensor_err(
                "BUILD of a tensor: torch would replace its storage or state with the pickle's (set_, __setstate__), so its values would not be its rebuild's; not read here",
            )),
            _ => Err(bad(
                self.at,
                "BUILD of what is not a tensor or an ordered dict (torch.load(weights_only=True) refuses it)",
            )),
        }
    }

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
    fn parameter(&mut self, data: Value, grad: Value, hooks: Value, state: Value) -> Result<Value> {
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
    fn rebuild_from_type(
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
    fn rebuild_tensor(&mut self, version: u8, args: &[Value]) -> Result<Value> {
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
    fn rebuild_qtensor(
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
