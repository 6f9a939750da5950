//! GGUF metadata values: the thirteen value types, arrays nested up to
//! [`MAX_ARRAY_DEPTH`], kept compactly (an array of scalars as its
//! little-endian bytes, an array of strings as one text and its ends), so
//! a tokenizer table costs about what it takes in the file.

use super::cursor::Cursor;
use crate::error::{Error, Result, Rule};

/// Deepest nesting of arrays in one value (an array of arrays is depth 2).
/// The format sets none; ggml's reader refuses any nesting.
pub const MAX_ARRAY_DEPTH: usize = 8;

/// Most bytes all the KV pairs may take in memory: keys, strings, scalars,
/// each string's end and each array's node. The format sets none (ggml
/// holds whatever it reads, up to 1 GiB a string); a tokenizer's tables,
/// the largest metadata models carry, take a few MB to a few tens. The
/// bound keeps a run of zeros from growing the reader: in a sparse file
/// each 12 bytes is an empty nested array of about 56 bytes in memory,
/// each 8 an empty string.
pub const MAX_KV_MEMORY: u64 = 256 << 20;

/// What is left of [`MAX_KV_MEMORY`] as a file's KV pairs are read.
pub struct Budget(u64);

impl Default for Budget {
    fn default() -> Self {
        Budget(MAX_KV_MEMORY)
    }
}

impl Budget {
    /// Takes `n` bytes, before they are allocated; an error naming `key`
    /// and the offset `at` when they are not left.
    pub fn take(&mut self, n: u64, key: &str, at: u64) -> Result<()> {
        if n > self.0 {
            return Err(over(&format!("key {key:?}"), at));
        }
        self.0 -= n;
        Ok(())
    }

    /// Reads a string (`what`, for messages) of at most what is left, and
    /// takes it; its bytes are not read when it is longer.
    pub fn string(&mut self, c: &mut Cursor<'_>, what: &str) -> Result<Box<str>> {
        let at = c.pos();
        match c.string_within(what, self.0.min(super::MAX_STRING_LEN))? {
            Ok(s) => {
                self.0 -= s.len() as u64;
                Ok(s)
            }
            Err(n) if n > super::MAX_STRING_LEN => Err(c.too_long(what, at, n)),
            Err(_) => Err(over(what, at)),
        }
    }
}

fn over(what: &str, at: u64) -> Error {
    Error::reject(
        Rule::GgufCount,
        format!(
            "{what} at offset {at}: the metadata would take more than {} MiB in memory (ztfs holds at most that much)",
            MAX_KV_MEMORY >> 20
        ),
    )
}

/// A value type (`gguf_metadata_value_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    String,
    Array,
    U64,
    I64,
    F64,
}

impl ValueType {
    /// The type of tag `tag`, or `None` for an unknown tag.
    pub fn of(tag: u32) -> Option<ValueType> {
        use ValueType::*;
        Some(match tag {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// The name `manifest.json` gives the type (gguf-py's enum names, lowercase).
    pub fn name(self) -> &'static str {
        use ValueType::*;
        match self {
            U8 => "uint8",
            I8 => "int8",
            U16 => "uint16",
            I16 => "int16",
            U32 => "uint32",
            I32 => "int32",
            F32 => "float32",
            Bool => "bool",
            String => "string",
            Array => "array",
            U64 => "uint64",
            I64 => "int64",
            F64 => "float64",
        }
    }

    /// Bytes of one value of a scalar type; `None` for string and array.
    pub fn width(self) -> Option<u64> {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            String | Array => None,
        }
    }

    /// The fewest bytes a value of this type takes: a string its length,
    /// an array its element type and count.
    pub fn min_len(self) -> u64 {
        match self {
            ValueType::String => 8,
            ValueType::Array => 12,
            t => t.width().unwrap_or(1),
        }
    }
}

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A scalar: its type and its little-endian bytes (a bool is 0 or 1).
    Scalar(ValueType, [u8; 8]),
    /// A string.
    String(Box<str>),
    /// An array.
    Array(Array),
}

/// An array value.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    /// The element type.
    pub elem: ValueType,
    /// The number of elements.
    pub len: u64,
    /// The elements.
    pub items: Items,
}

/// The elements of an array.
#[derive(Debug, Clone, PartialEq)]
pub enum Items {
    /// Scalars, little-endian, `len × width` bytes.
    Scalars(Box<[u8]>),
    /// Strings: all of them concatenated, and where each ends.
    Strings { text: Box<str>, ends: Box<[u64]> },
    /// Arrays.
    Arrays(Box<[Array]>),
}

impl Value {
    /// The value's type.
    pub fn ty(&self) -> ValueType {
        match self {
            Value::Scalar(t, _) => *t,
            Value::String(_) => ValueType::String,
            Value::Array(_) => ValueType::Array,
        }
    }

    /// The value of a `uint32` scalar.
    pub fn as_u32(&self) -> Option<u32> {
        match self {
            Value::Scalar(ValueType::U32, b) => Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            _ => None,
        }
    }

    /// The value of an unsigned or signed integer scalar of any width, as
    /// i128 (for reading counts like `split.count`).
    pub fn as_int(&self) -> Option<i128> {
        let Value::Scalar(t, b) = self else {
            return None;
        };
        scalar_int(*t, b)
    }
}

/// An integer scalar's value from its little-endian bytes.
pub fn scalar_int(t: ValueType, b: &[u8]) -> Option<i128> {
    use ValueType::*;
    let u = |n: usize| {
        let mut a = [0u8; 8];
        a[..n].copy_from_slice(&b[..n]);
        u64::from_le_bytes(a)
    };
    Some(match t {
        U8 => u(1) as i128,
        U16 => u(2) as i128,
        U32 => u(4) as i128,
        U64 => u(8) as i128,
        I8 => (u(1) as u8 as i8) as i128,
        I16 => (u(2) as u16 as i16) as i128,
        I32 => (u(4) as u32 as i32) as i128,
        I64 => (u(8) as i64) as i128,
        _ => return None,
    })
}

impl Array {
    /// The string at `i` of an array of strings.
    pub fn string(&self, i: usize) -> Option<&str> {
        let Items::Strings { text, ends } = &self.items else {
            return None;
        };
        let end = *ends.get(i)? as usize;
        let start = if i == 0 { 0 } else { ends[i - 1] as usize };
        text.get(start..end)
    }
}

fn kv_error(detail: String) -> Error {
    Error::reject(Rule::GgufKv, detail)
}

/// Reads a value type tag.
pub fn read_type(c: &mut Cursor<'_>, key: &str) -> Result<ValueType> {
    let at = c.pos();
    let tag = c.u32()?;
    ValueType::of(tag).ok_or_else(|| {
        kv_error(format!(
            "key {key:?}: value type {tag} at offset {at} is not one of the 13 GGUF types (0..=12)"
        ))
    })
}

/// Reads one value of type `ty` for `key`; `depth` is the array nesting
/// it sits at.
pub fn read_value(
    c: &mut Cursor<'_>,
    ty: ValueType,
    key: &str,
    depth: usize,
    budget: &mut Budget,
) -> Result<Value> {
    match ty {
        ValueType::String => {
            let s = budget.string(c, &format!("the value of {key:?}"))?;
            Ok(Value::String(s))
        }
        ValueType::Array => read_array(c, key, depth + 1, budget).map(Value::Array),
        t => {
            let at = c.pos();
            let width = t.width().unwrap_or(1) as usize;
            let mut b = [0u8; 8];
            b[..width].copy_from_slice(&c.take(width as u64)?);
            check_bools(t, &b[..width], key, at)?;
            Ok(Value::Scalar(t, b))
        }
    }
}

fn check_bools(t: ValueType, bytes: &[u8], key: &str, at: u64) -> Result<()> {
    if t != ValueType::Bool {
        return Ok(());
    }
    match bytes.iter().position(|&b| b > 1) {
        None => Ok(()),
        Some(i) => Err(kv_error(format!(
            "key {key:?}: bool byte {:#04x} at offset {} is neither 0 nor 1",
            bytes[i],
            at + i as u64
        ))),
    }
}

/// Reads an array (element type, count, elements) at nesting `depth`.
fn read_array(c: &mut Cursor<'_>, key: &str, depth: usize, budget: &mut Budget) -> Result<Array> {
    if depth > MAX_ARRAY_DEPTH {
        return Err(kv_error(format!(
            "key {key:?}: arrays nested deeper than {MAX_ARRAY_DEPTH} at offset {}",
            c.pos()
        )));
    }
    let elem = read_type(c, key)?;
    let at = c.pos();
    let len = c.u64()?;
    // Every element takes at least min_len bytes: the count must be backed
    // by the bytes left before anything is reserved for it.
    // ggml's bound first: past it the count is refused whatever the file.
    let need = len.checked_mul(elem.min_len());
    if len > super::MAX_ARRAY_LEN {
        return Err(Error::reject(
            Rule::GgufCount,
            format!(
                "key {key:?}: array of {len} {} at offset {at} has more than the {} elements that ggml reads",
                elem.name(),
                super::MAX_ARRAY_LEN
            ),
        ));
    }
    if need.is_none_or(|n| n > c.left()) {
        return Err(Error::reject(
            Rule::GgufCount,
            format!(
                "key {key:?}: array of {len} {} at offset {at} needs at least {} bytes, {} are left in the file",
                elem.name(),
                need.map_or("more than 2^64".to_string(), |n| n.to_string()),
                c.left()
            ),
        ));
    }
    // What the elements take in memory, before any is read: each string's
    // end (its text as it is read), each nested array's node, the scalars.
    let each = match elem {
        ValueType::String => 8,
        ValueType::Array => std::mem::size_of::<Array>() as u64,
        t => t.width().unwrap_or(1),
    };
    budget.take(len.saturating_mul(each), key, at)?;
    let cap = crate::format::reserve_ahead(len);
    let items = match elem {
        ValueType::String => {
            let (mut text, mut ends) = (String::new(), Vec::with_capacity(cap));
            for _ in 0..len {
                text.push_str(&budget.string(c, &format!("a string of {key:?}"))?);
                ends.push(text.len() as u64);
            }
            Items::Strings {
                text: text.into(),
                ends: ends.into(),
            }
        }
        ValueType::Array => {
            let mut arrays = Vec::with_capacity(cap);
            for _ in 0..len {
                arrays.push(read_array(c, key, depth + 1, budget)?);
            }
            Items::Arrays(arrays.into())
        }
        t => {
            // Within the file: checked above.
            let n = len * t.width().unwrap_or(1);
            let at = c.pos();
            let bytes = c.take(n)?;
            check_bools(t, &bytes, key, at)?;
            Items::Scalars(bytes.into_owned().into())
        }
    };
    Ok(Array { elem, len, items })
}
