//! A pickle interpreter that runs nothing: it reads the opcodes of
//! protocols 2-5 that `torch.save` writes and builds values only for the
//! globals `torch.load(weights_only=True)` keeps for a state dict.
//!
//! A global is a pair of names. Those on the allowlist ([`Global`]) become
//! a tag; any other (`os.system`, `builtins.eval`, a class of the program
//! that saved the file) is refused by name with its offset (`TorchGlobal`),
//! and nothing is ever looked up or called: `REDUCE` on a tag builds the
//! value the named function would return for a state dict (a tensor, an
//! ordered dict, a device string) or is refused.
//!
//! Values live in one arena ([`Obj`], addressed by [`Value::Obj`]), so a
//! memo fetch or `DUP` copies an index, never a container: a memo bomb costs
//! what its opcodes cost. Every count is bounded before it grows
//! (`MAX_OBJECTS`, `MAX_CELLS`, `MAX_MEMO`, `MAX_MARKS`), and so is the
//! memory they take together (`MAX_HELD`); a string or bytes opcode
//! allocates at most what the pickle holds after it.
//!
//! A persistent id (`BINPERSID`) must be the storage record `torch.save`
//! writes, `('storage', StorageType, key, location, numel)`; it becomes an
//! [`Obj::Storage`], whose bytes the archive's `data/KEY` member holds.

use crate::error::{Error, Result, Rule};
use crate::format::safetensors::Dtype;

/// Most objects (strings, containers, storages, tensors) one pickle makes.
pub const MAX_OBJECTS: usize = 1 << 22;
/// Most values all containers hold together.
pub const MAX_CELLS: usize = 1 << 24;
/// Most memo entries.
pub const MAX_MEMO: usize = 1 << 22;
/// Most marks open at once (nesting of `MARK ... TUPLE` and the like).
pub const MAX_MARKS: usize = 1024;
/// Most values on the stack.
pub const MAX_STACK: usize = 1 << 20;
/// Most bytes the values may take in memory together (objects, strings,
/// container cells, memo entries), whatever the counts above allow: an
/// empty tuple is one byte of pickle and a hundred in memory, so the
/// counts alone let a few MB of pickle hold about a GB. A state dict's
/// pickle holds names and numbers: a few MB for the largest models.
pub const MAX_HELD: usize = 256 << 20;

/// A value on the stack, in a container or in the memo.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// An object of the arena.
    Obj(u32),
}

/// An object of the arena.
#[derive(Debug, Clone, PartialEq)]
pub enum Obj {
    Str(String),
    Bytes(Vec<u8>),
    Tuple(Vec<Value>),
    /// A list, a set or a frozenset.
    List(Vec<Value>),
    /// A dict or an ordered dict, in insertion order; a key set again
    /// keeps its first place and takes the last value (Python's).
    Dict(Vec<(Value, Value)>),
    Global(Global),
    Storage(Storage),
    Tensor(Tensor),
}

/// A storage named by a persistent id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Storage {
    /// What its class holds.
    pub ty: StorageType,
    /// Its key: its bytes are the archive's `data/KEY`.
    pub key: String,
    /// Elements (bytes when untyped), as the id says.
    pub numel: u64,
}

/// A tensor: a view of a storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    /// The arena index of its [`Obj::Storage`].
    pub storage: u32,
    pub dtype: Dtype,
    /// In elements.
    pub offset: u64,
    pub shape: Vec<u64>,
    /// In elements.
    pub stride: Vec<u64>,
}

/// A global of the allowlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Global {
    OrderedDict,
    /// `torch._utils._rebuild_tensor`, `_v2` and `_v3`.
    RebuildTensor(u8),
    RebuildParameter,
    RebuildParameterWithState,
    RebuildFromTypeV2,
    /// A storage class.
    StorageType(StorageType),
    /// A dtype object such as `torch.float32`; `None` for one without a
    /// zTensor type (refused only if a tensor uses it).
    Dtype(Option<Dtype>),
    Device,
    Size,
    /// `torch.Tensor` or `torch.nn.Parameter`, as `_rebuild_from_type_v2`'s
    /// type.
    TensorType,
    Set,
    CodecsEncode,
}

/// What a storage class holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageType {
    /// `UntypedStorage`: bytes.
    Untyped,
    /// A typed storage of elements with a zTensor type.
    Typed(Dtype),
    /// A typed storage of elements with none (complex128, quantized).
    Other,
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
        "ComplexDoubleStorage"
        | "QInt8Storage"
        | "QInt32Storage"
        | "QUInt8Storage"
        | "QUInt4x2Storage"
        | "QUInt2x4Storage" => return Some(StorageType::Other),
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

/// Globals torch's weights_only loader allows that build tensors ztfs
/// does not serve (quantized, sparse, on a device, without storage): a
/// file naming one is refused as such (`TorchTensor`), not as hostile.
const UNSERVED: [(&str, &str); 7] = [
    ("torch._utils", "_rebuild_qtensor"),
    ("torch._utils", "_rebuild_sparse_tensor"),
    ("torch._utils", "_rebuild_meta_tensor_no_storage"),
    ("torch._utils", "_rebuild_device_tensor_from_cpu_tensor"),
    ("torch._utils", "_rebuild_device_tensor_from_numpy"),
    ("torch._utils", "_rebuild_wrapper_subclass"),
    ("torch.serialization", "_get_layout"),
];

/// The allowlisted global `module.name`, if it is one: the names
/// `torch.load(weights_only=True)` allows (torch 2.15's
/// `_get_allowed_globals`) that a state dict's values need.
pub fn allowed(module: &str, name: &str) -> Option<Global> {
    Some(match (module, name) {
        ("collections", "OrderedDict") => Global::OrderedDict,
        ("torch._utils", "_rebuild_tensor") => Global::RebuildTensor(1),
        ("torch._utils", "_rebuild_tensor_v2") => Global::RebuildTensor(2),
        ("torch._utils", "_rebuild_tensor_v3") => Global::RebuildTensor(3),
        ("torch._utils", "_rebuild_parameter") => Global::RebuildParameter,
        ("torch._utils", "_rebuild_parameter_with_state") => Global::RebuildParameterWithState,
        ("torch._tensor", "_rebuild_from_type_v2") => Global::RebuildFromTypeV2,
        ("torch", "device") => Global::Device,
        ("torch", "Size") => Global::Size,
        ("torch", "Tensor") | ("torch.nn.parameter", "Parameter") => Global::TensorType,
        ("builtins", "set") => Global::Set,
        ("_codecs", "encode") => Global::CodecsEncode,
        // Torch 2 names the untyped storage of `_rebuild_tensor_v3` so.
        ("torch.storage", "UntypedStorage") => Global::StorageType(StorageType::Untyped),
        ("torch", n) => match storage_dtype(n) {
            Some(d) => Global::StorageType(d),
            None => Global::Dtype(dtype_object(n)?),
        },
        _ => return None,
    })
}

fn bad(at: usize, what: impl std::fmt::Display) -> Error {
    Error::reject(Rule::TorchPickle, format!("data.pkl at byte {at}: {what}"))
}

/// The interpreter's state.
struct Vm<'a> {
    data: &'a [u8],
    pos: usize,
    /// Where the opcode being run starts, for messages.
    at: usize,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: std::collections::HashMap<u32, Value>,
    arena: Vec<Obj>,
    cells: usize,
    /// Bytes held by the values so far (see [`MAX_HELD`]).
    held: usize,
}

/// The value a pickle builds, and the arena its objects live in.
#[derive(Debug)]
pub struct Pickled {
    pub value: Value,
    pub arena: Vec<Obj>,
}

impl Pickled {
    /// Object `v` points at, if it is one.
    pub fn obj(&self, v: Value) -> Option<&Obj> {
        match v {
            Value::Obj(i) => self.arena.get(i as usize),
            _ => None,
        }
    }
}

/// Runs the pickle `data` to its `STOP`.
pub fn load(data: &[u8]) -> Result<Pickled> {
    let mut vm = Vm {
        data,
        pos: 0,
        at: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: Default::default(),
        arena: Vec::new(),
        cells: 0,
        held: 0,
    };
    loop {
        vm.at = vm.pos;
        let op = vm.take(1)?[0];
        if op == b'.' {
            let value = vm.pop()?;
            return Ok(Pickled {
                value,
                arena: vm.arena,
            });
        }
        vm.step(op)?;
    }
}

impl<'a> Vm<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        let Some(end) = end else {
            return Err(bad(
                self.at,
                format!(
                    "truncated: {n} bytes wanted, {} left",
                    self.data.len() - self.pos
                ),
            ));
        };
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn uint(&mut self, n: usize) -> Result<u64> {
        let b = self.take(n)?;
        Ok(b.iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x)))
    }

    /// A length read as `n` bytes, checked against what is left.
    fn len(&mut self, n: usize) -> Result<usize> {
        let len = self.uint(n)?;
        let left = (self.data.len() - self.pos) as u64;
        if len > left {
            return Err(bad(
                self.at,
                format!("a length of {len} bytes, {left} left"),
            ));
        }
        Ok(len as usize)
    }

    fn line(&mut self) -> Result<&'a str> {
        let rest = &self.data[self.pos..];
        let Some(n) = rest.iter().position(|&b| b == b'\n') else {
            return Err(bad(self.at, "truncated: a line without its newline"));
        };
        self.pos += n + 1;
        std::str::from_utf8(&rest[..n]).map_err(|_| bad(self.at, "a global's name is not UTF-8"))
    }

    fn push(&mut self, v: Value) -> Result<()> {
        if self.stack.len() >= MAX_STACK {
            return Err(bad(
                self.at,
                format!("more than {MAX_STACK} values on the stack"),
            ));
        }
        self.stack.push(v);
        Ok(())
    }

    fn pop(&mut self) -> Result<Value> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(bad(self.at, "the stack is empty"));
        }
        Ok(self.stack.pop().expect("checked above"))
    }

    fn top(&self) -> Result<Value> {
        let floor = self.marks.last().copied().unwrap_or(0);
        match self.stack.len() > floor {
            true => Ok(self.stack[self.stack.len() - 1]),
            false => Err(bad(self.at, "the stack is empty")),
        }
    }

    /// The values above the last mark, removing the mark.
    fn pop_mark(&mut self) -> Result<Vec<Value>> {
        let Some(m) = self.marks.pop() else {
            return Err(bad(self.at, "no mark on the stack"));
        };
        Ok(self.stack.split_off(m))
    }

    /// Counts `n` more bytes held, before they are allocated where the
    /// caller can: an error past [`MAX_HELD`].
    fn hold(&mut self, n: usize) -> Result<()> {
        self.held = self.held.saturating_add(n);
        match self.held > MAX_HELD {
            true => Err(bad(
                self.at,
                format!(
                    "the values would take more than {} MiB in memory",
                    MAX_HELD >> 20
                ),
            )),
            false => Ok(()),
        }
    }

    fn new_obj(&mut self, o: Obj) -> Result<Value> {
        if self.arena.len() >= MAX_OBJECTS {
            return Err(bad(self.at, format!("more than {MAX_OBJECTS} objects")));
        }
        let cells = match &o {
            Obj::Tuple(v) | Obj::List(v) => v.len(),
            Obj::Dict(v) => v.len(),
            _ => 0,
        };
        self.cells = self.cells.saturating_add(cells);
        self.check_cells()?;
        // A string's or bytes' own length was held before it was copied.
        let cell = std::mem::size_of::<(Value, Value)>();
        self.hold(std::mem::size_of::<Obj>() + cells * cell)?;
        self.arena.push(o);
        Ok(Value::Obj((self.arena.len() - 1) as u32))
    }

    fn check_cells(&self) -> Result<()> {
        match self.cells > MAX_CELLS {
            true => Err(bad(
                self.at,
                format!("more than {MAX_CELLS} values in containers"),
            )),
            false => Ok(()),
        }
    }

    fn obj_mut(&mut self, v: Value) -> Option<&mut Obj> {
        match v {
            Value::Obj(i) => self.arena.get_mut(i as usize),
            _ => None,
        }
    }

    fn obj(&self, v: Value) -> Option<&Obj> {
        match v {
            Value::Obj(i) => self.arena.get(i as usize),
            _ => None,
        }
    }

    fn str_of(&self, v: Value) -> Option<&str> {
        match self.obj(v) {
            Some(Obj::Str(s)) => Some(s),
            _ => None,
        }
    }

    fn memo_put(&mut self, key: u32, v: Value) -> Result<()> {
        if !self.memo.contains_key(&key) {
            if self.memo.len() >= MAX_MEMO {
                return Err(bad(self.at, format!("more than {MAX_MEMO} memo entries")));
            }
            // An entry, and about as much again for the map's spare room.
            self.hold(2 * std::mem::size_of::<(u32, Value)>())?;
        }
        self.memo.insert(key, v);
        Ok(())
    }

    fn memo_get(&mut self, key: u64) -> Result<()> {
        let v = u32::try_from(key)
            .ok()
            .and_then(|k| self.memo.get(&k).copied());
        let v = v.ok_or_else(|| bad(self.at, format!("memo entry {key} was never put")))?;
        self.push(v)
    }

    fn string(&mut self, n: usize) -> Result<()> {
        let len = self.len(n)?;
        self.hold(len)?;
        let b = self.take(len)?;
        let s = std::str::from_utf8(b).map_err(|_| bad(self.at, "a string is not UTF-8"))?;
        let v = self.new_obj(Obj::Str(s.to_string()))?;
        self.push(v)
    }

    fn bytes(&mut self, n: usize) -> Result<()> {
        let len = self.len(n)?;
        self.hold(len)?;
        let b = self.take(len)?.to_vec();
        let v = self.new_obj(Obj::Bytes(b))?;
        self.push(v)
    }

    fn tuple(&mut self, items: Vec<Value>) -> Result<()> {
        let v = self.new_obj(Obj::Tuple(items))?;
        self.push(v)
    }

    /// Appends `items` to the list (or set) `target`.
    fn extend(&mut self, target: Value, items: Vec<Value>) -> Result<()> {
        self.cells = self.cells.saturating_add(items.len());
        self.check_cells()?;
        self.hold(items.len() * std::mem::size_of::<(Value, Value)>())?;
        let at = self.at;
        match self.obj_mut(target) {
            Some(Obj::List(l)) => {
                l.extend(items);
                Ok(())
            }
            _ => Err(bad(at, "APPEND or ADDITEMS to what is not a list or a set")),
        }
    }

    fn set_items(&mut self, target: Value, items: Vec<Value>) -> Result<()> {
        if !items.len().is_multiple_of(2) {
            return Err(bad(self.at, "SETITEMS with an odd number of values"));
        }
        self.cells = self.cells.saturating_add(items.len() / 2);
        self.check_cells()?;
        self.hold(items.len() / 2 * std::mem::size_of::<(Value, Value)>())?;
        let at = self.at;
        match self.obj_mut(target) {
            Some(Obj::Dict(d)) => {
                d.extend(items.chunks(2).map(|kv| (kv[0], kv[1])));
                Ok(())
            }
            _ => Err(bad(at, "SETITEM to what is not a dict")),
        }
    }

    fn global(&mut self, module: &str, name: &str) -> Result<()> {
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

    fn step(&mut self, op: u8) -> Result<()> {
        match op {
            0x80 => {
                let p = self.uint(1)?;
                if !(2..=5).contains(&p) {
                    return Err(bad(
                        self.at,
                        format!("protocol {p}; this reader knows 2 to 5"),
                    ));
                }
            }
            0x95 => {
                self.uint(8)?; // FRAME: a hint of the next frame's length
            }
            b'(' => {
                if self.marks.len() >= MAX_MARKS {
                    return Err(bad(self.at, format!("more than {MAX_MARKS} marks open")));
                }
                self.marks.push(self.stack.len());
            }
            b'0' => {
                self.pop()?;
            }
            b'1' => {
                self.pop_mark()?;
            }
            b'2' => {
                let v = self.top()?;
                self.push(v)?;
            }
            b'N' => self.push(Value::None)?,
            0x88 => self.push(Value::Bool(true))?,
            0x89 => self.push(Value::Bool(false))?,
            b'J' => {
                let b = self.take(4)?;
                self.push(Value::Int(
                    i32::from_le_bytes(b.try_into().expect("4")).into(),
                ))?;
            }
            b'K' => {
                let v = self.uint(1)?;
                self.push(Value::Int(v as i64))?;
            }
            b'M' => {
                let v = self.uint(2)?;
                self.push(Value::Int(v as i64))?;
            }
            0x8a | 0x8b => {
                let n = self.len(if op == 0x8a { 1 } else { 4 })?;
                if n > 8 {
                    return Err(bad(
                        self.at,
                        format!("an integer of {n} bytes (at most 8 here)"),
                    ));
                }
                let b = self.take(n)?;
                let mut v: i64 = 0;
                for (k, &x) in b.iter().enumerate() {
                    v |= i64::from(x) << (8 * k);
                }
                if (1..8).contains(&n) && b[n - 1] & 0x80 != 0 {
                    v -= 1i64 << (8 * n);
                }
                self.push(Value::Int(v))?;
            }
            b'G' => {
                let b = self.take(8)?;
                self.push(Value::Float(f64::from_be_bytes(b.try_into().expect("8"))))?;
            }
            b'X' => self.string(4)?,
            0x8c => self.string(1)?,
            0x8d => self.string(8)?,
            b'B' | b'T' => self.bytes(4)?,
            b'C' | b'U' => self.bytes(1)?,
            0x8e | 0x96 => self.bytes(8)?,
            b')' => self.tuple(Vec::new())?,
            b't' => {
                let items = self.pop_mark()?;
                self.tuple(items)?;
            }
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                let mut items = (0..n).map(|_| self.pop()).collect::<Result<Vec<_>>>()?;
                items.reverse();
                self.tuple(items)?;
            }
            b']' | 0x8f => {
                let v = self.new_obj(Obj::List(Vec::new()))?;
                self.push(v)?;
            }
            b'l' | 0x91 => {
                let items = self.pop_mark()?;
                let v = self.new_obj(Obj::List(items))?;
                self.push(v)?;
            }
            b'a' => {
                let item = self.pop()?;
                let list = self.top()?;
                self.extend(list, vec![item])?;
            }
            b'e' | 0x90 => {
                let items = self.pop_mark()?;
                let list = self.top()?;
                self.extend(list, items)?;
            }
            b'}' => {
                let v = self.new_obj(Obj::Dict(Vec::new()))?;
                self.push(v)?;
            }
            b'd' => {
                let items = self.pop_mark()?;
                let v = self.new_obj(Obj::Dict(Vec::new()))?;
                self.set_items(v, items)?;
                self.push(v)?;
            }
            b's' => {
                let value = self.pop()?;
                let key = self.pop()?;
                let dict = self.top()?;
                self.set_items(dict, vec![key, value])?;
            }
            b'u' => {
                let items = self.pop_mark()?;
                let dict = self.top()?;
                self.set_items(dict, items)?;
            }
            b'q' | b'r' => {
                let key = self.uint(if op == b'q' { 1 } else { 4 })? as u32;
                let v = self.top()?;
                self.memo_put(key, v)?;
            }
            0x94 => {
                let key = u32::try_from(self.memo.len()).unwrap_or(u32::MAX);
                let v = self.top()?;
                self.memo_put(key, v)?;
            }
            b'h' => {
                let key = self.uint(1)?;
                self.memo_get(key)?;
            }
            b'j' => {
                let key = self.uint(4)?;
                self.memo_get(key)?;
            }
            b'c' => {
                let module = self.line()?;
                let name = self.line()?;
                self.global(module, name)?;
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                let (Some(m), Some(n)) = (self.str_of(module), self.str_of(name)) else {
                    return Err(bad(self.at, "STACK_GLOBAL of what are not two strings"));
                };
                let (m, n) = (m.to_string(), n.to_string());
                self.global(&m, &n)?;
            }
            b'R' => {
                let args = self.pop()?;
                let f = self.pop()?;
                let v = self.reduce(f, args)?;
                self.push(v)?;
            }
            b'b' => {
                let state = self.pop()?;
                let target = self.top()?;
                self.build(target, state)?;
            }
            b'Q' => {
                let id = self.pop()?;
                let v = self.persistent(id)?;
                self.push(v)?;
            }
            _ => return Err(self.unknown(op)),
        }
        Ok(())
    }

    fn unknown(&self, op: u8) -> Error {
        let name = match op {
            b'i' | b'o' | 0x81 | 0x92 => {
                "an instance made by calling its class (INST, OBJ, NEWOBJ)"
            }
            0x82..=0x84 => "an extension registry code (EXT1/2/4)",
            0x97 | 0x98 => "an out-of-band buffer",
            b'P' => "a text persistent id (protocol 0)",
            b'I' | b'L' | b'F' | b'S' | b'V' | b'p' | b'g' => "a protocol 0 text opcode",
            _ => "an unknown opcode",
        };
        bad(self.at, format!("opcode {op:#04x}: {name}, not read here"))
    }

    /// What calling the allowlisted `f` with `args` builds.
    fn reduce(&mut self, f: Value, args: Value) -> Result<Value> {
        let g = match self.obj(f) {
            Some(Obj::Global(g)) => *g,
            _ => return Err(bad(self.at, "REDUCE of what is not a global")),
        };
        let args = match self.obj(args) {
            Some(Obj::Tuple(a)) => a.clone(),
            _ => return Err(bad(self.at, "REDUCE with arguments that are not a tuple")),
        };
        let wrong = |vm: &Self, why: &str| {
            Error::reject(
                Rule::TorchGlobal,
                format!("data.pkl at byte {}: {g:?} {why}", vm.at),
            )
        };
        match g {
            Global::OrderedDict if args.is_empty() => self.new_obj(Obj::Dict(Vec::new())),
            Global::RebuildTensor(v) => self.rebuild_tensor(v, &args),
            Global::RebuildParameter | Global::RebuildParameterWithState => {
                match args.first().map(|&a| (a, self.obj(a))) {
                    Some((t, Some(Obj::Tensor(_)))) => Ok(t),
                    _ => Err(wrong(self, "of what is not a tensor")),
                }
            }
            Global::RebuildFromTypeV2 => {
                let ok_type = args.get(1).and_then(|&t| self.obj(t))
                    == Some(&Obj::Global(Global::TensorType));
                let (Some(&func), Some(&inner), true) = (args.first(), args.get(2), ok_type) else {
                    return Err(wrong(self, "not of a tensor type"));
                };
                // Torch wraps a tensor's own rebuild, never another wrap:
                // so the call below recurses once at most.
                let inner_ok = matches!(
                    self.obj(func),
                    Some(Obj::Global(
                        Global::RebuildTensor(_)
                            | Global::RebuildParameter
                            | Global::RebuildParameterWithState
                    ))
                );
                if !inner_ok {
                    return Err(wrong(self, "of what is not a tensor's rebuild"));
                }
                self.reduce(func, inner)
            }
            Global::Device => match args.first().and_then(|&a| self.str_of(a)) {
                Some(s) => {
                    let s = s.to_string();
                    self.new_obj(Obj::Str(s))
                }
                None => Err(wrong(self, "of what is not a device name")),
            },
            Global::Size | Global::Set => match args.first().map(|&a| self.obj(a)) {
                Some(Some(Obj::Tuple(x) | Obj::List(x))) => {
                    let x = x.clone();
                    self.new_obj(if g == Global::Size {
                        Obj::Tuple(x)
                    } else {
                        Obj::List(x)
                    })
                }
                None if g == Global::Set => self.new_obj(Obj::List(Vec::new())),
                _ => Err(wrong(self, "of what is not a sequence")),
            },
            Global::CodecsEncode => {
                let s = args.first().and_then(|&a| self.str_of(a));
                let enc = args.get(1).and_then(|&a| self.str_of(a));
                let bytes = match (s, enc) {
                    (Some(s), Some("latin1" | "latin-1")) => {
                        s.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect()
                    }
                    _ => None,
                };
                match bytes {
                    Some(b) => self.new_obj(Obj::Bytes(b)),
                    None => Err(wrong(self, "of what is not a latin-1 string")),
                }
            }
            _ => Err(wrong(self, "called: it builds nothing in a state dict")),
        }
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

    fn tensor_err(&self, why: String) -> Error {
        Error::reject(
            Rule::TorchTensor,
            format!("data.pkl at byte {}: a tensor: {why}", self.at),
        )
    }

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
                StorageType::Untyped | StorageType::Other => None,
            },
            _ => return Err(self.tensor_err("its storage is not a persistent storage".into())),
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
                _ => return Err(self.tensor_err("its dtype is not a torch dtype".into())),
            },
            _ => sdtype,
        };
        let Some(dtype) = dtype else {
            return Err(self.tensor_err(
                "its dtype has no zTensor type (complex128, quantized) or is untyped".into(),
            ));
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
        }))
    }

    fn build(&mut self, target: Value, state: Value) -> Result<()> {
        // An ordered dict's attributes (`_metadata` of a module's state
        // dict) and a tensor's Python attributes: kept out of the tensors.
        match (self.obj(target), state) {
            (Some(Obj::Dict(_) | Obj::Tensor(_)), _) => Ok(()),
            _ => Err(Error::reject(
                Rule::TorchGlobal,
                format!(
                    "data.pkl at byte {}: BUILD of what is not a dict or a tensor",
                    self.at
                ),
            )),
        }
    }

    fn persistent(&mut self, id: Value) -> Result<Value> {
        let fields = match self.obj(id) {
            Some(Obj::Tuple(f)) if f.len() == 5 => f.clone(),
            _ => return Err(bad(self.at, "a persistent id that is not a 5-tuple")),
        };
        let tag = self.str_of(fields[0]);
        let ty = match self.obj(fields[1]) {
            Some(Obj::Global(Global::StorageType(d))) => Some(*d),
            _ => None,
        };
        let key = self.str_of(fields[2]).map(str::to_string);
        let (Some("storage"), Some(ty), Some(key), Value::Int(numel)) = (tag, ty, key, fields[4])
        else {
            return Err(bad(
                self.at,
                "a persistent id that is not ('storage', StorageType, key, location, numel)",
            ));
        };
        if numel < 0 {
            return Err(bad(self.at, format!("a storage of {numel} elements")));
        }
        self.new_obj(Obj::Storage(Storage {
            ty,
            key,
            numel: numel as u64,
        }))
    }
}
