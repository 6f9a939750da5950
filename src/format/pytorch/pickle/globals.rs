//! The allowlist: the globals torch's weights-only loader allows for a
//! state dict (torch 2.x's `_get_allowed_globals`), each a [`Global`] tag,
//! and `GLOBAL`, which pushes one. Nothing is ever looked up: a name off
//! the list is refused by name (`TorchGlobal`), and one torch allows that
//! builds a tensor ztfs does not serve (sparse, on a device, without
//! storage, quantized by a scheme not read here) is refused as such
//! (`TorchTensor`). What a call of a tag builds is `calls.rs`'s and
//! `rebuild.rs`'s.

use super::{Obj, Vm};
use crate::error::{Error, Result, Rule};
use crate::format::safetensors::Dtype;

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

impl Vm<'_> {
    /// `GLOBAL module name`: pushes the tag of an allowlisted global.
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
}
