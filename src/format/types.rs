//! The type system: the 12 storage types (§4.1) and the registered logical
//! types of Appendix A with their dtype pins and size functions.

use std::fmt;

use super::Text;

/// A storage type: a closed set of 12 primitives, each a byte width and
/// little-endian order, with no invalid bit patterns (§4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F64,
    F32,
    F16,
    BF16,
    I64,
    I32,
    I16,
    I8,
    U64,
    U32,
    U16,
    U8,
}

impl DType {
    /// All twelve, in the order of §4.1.
    pub const ALL: [DType; 12] = [
        DType::F64,
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::U64,
        DType::U32,
        DType::U16,
        DType::U8,
    ];

    /// The name used in manifests.
    pub fn name(self) -> &'static str {
        match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::I16 => "i16",
            DType::I8 => "i8",
            DType::U64 => "u64",
            DType::U32 => "u32",
            DType::U16 => "u16",
            DType::U8 => "u8",
        }
    }

    /// Parses a manifest dtype string.
    pub fn parse(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }

    /// Width of one element in bytes.
    pub fn width(self) -> u64 {
        match self {
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::I8 | DType::U8 => 1,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A registered logical type (Appendix A).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogicalType {
    Bool,
    F8E4M3Fn,
    F8E5M2,
    F8E4M3Fnuz,
    F8E5M2Fnuz,
    F8E8M0,
    F4E2M1,
    Complex64,
    Complex128,
}

impl LogicalType {
    /// All registered logical types.
    pub const ALL: [LogicalType; 9] = [
        LogicalType::Bool,
        LogicalType::F8E4M3Fn,
        LogicalType::F8E5M2,
        LogicalType::F8E4M3Fnuz,
        LogicalType::F8E5M2Fnuz,
        LogicalType::F8E8M0,
        LogicalType::F4E2M1,
        LogicalType::Complex64,
        LogicalType::Complex128,
    ];

    /// The name used in manifests.
    pub fn name(self) -> &'static str {
        match self {
            LogicalType::Bool => "bool",
            LogicalType::F8E4M3Fn => "f8_e4m3fn",
            LogicalType::F8E5M2 => "f8_e5m2",
            LogicalType::F8E4M3Fnuz => "f8_e4m3fnuz",
            LogicalType::F8E5M2Fnuz => "f8_e5m2fnuz",
            LogicalType::F8E8M0 => "f8_e8m0",
            LogicalType::F4E2M1 => "f4_e2m1",
            LogicalType::Complex64 => "complex64",
            LogicalType::Complex128 => "complex128",
        }
    }

    /// Parses a registered logical type name; `None` for an unregistered one.
    pub fn parse(s: &str) -> Option<LogicalType> {
        LogicalType::ALL.into_iter().find(|t| t.name() == s)
    }

    /// The storage type this logical type requires.
    pub fn dtype(self) -> DType {
        match self {
            LogicalType::Complex64 => DType::F32,
            LogicalType::Complex128 => DType::F64,
            _ => DType::U8,
        }
    }

    /// Decoded byte size of `n` elements, `None` on overflow.
    pub fn size(self, n: u64) -> Option<u64> {
        match self {
            LogicalType::F4E2M1 => Some(n / 2 + n % 2),
            LogicalType::Complex64 => n.checked_mul(8),
            LogicalType::Complex128 => n.checked_mul(16),
            _ => Some(n),
        }
    }
}

/// A part's element type: its storage type and, if any, its logical type,
/// registered or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElementType {
    /// The storage type.
    pub dtype: DType,
    /// The `type` field as written, if present (shared between parts).
    pub logical: Option<Text>,
}

/// What a part's `type` field means to this reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interpretation {
    /// No `type`: the storage type itself.
    Plain(DType),
    /// A registered logical type.
    Registered(LogicalType),
    /// A type this reader does not know: refuse to decode (§4.2).
    Unknown,
}

impl ElementType {
    /// How this reader interprets the element type.
    pub fn interpretation(&self) -> Interpretation {
        match &self.logical {
            None => Interpretation::Plain(self.dtype),
            Some(t) => {
                LogicalType::parse(t).map_or(Interpretation::Unknown, Interpretation::Registered)
            }
        }
    }

    /// Decoded byte size of `n` elements under the size function, `None`
    /// when the type is unregistered or the size overflows.
    pub fn size(&self, n: u64) -> Option<u64> {
        match self.interpretation() {
            Interpretation::Plain(d) => n.checked_mul(d.width()),
            Interpretation::Registered(t) => t.size(n),
            Interpretation::Unknown => None,
        }
    }

    /// The logical type's name, or the dtype's when there is none.
    pub fn type_name(&self) -> &str {
        self.logical.as_deref().unwrap_or(self.dtype.name())
    }
}
