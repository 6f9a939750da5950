//! A pickle interpreter that runs nothing: it reads exactly the opcodes
//! `torch.load(weights_only=True)` reads ([`OPCODES`]) and builds values
//! only for the globals that loader allows (`globals.rs`), by the calls it
//! allows on them (`calls.rs`, and `rebuild.rs` for tensors).
//!
//! A global is a pair of names. Those on the allowlist ([`Global`]) become
//! a tag; any other (`os.system`, `builtins.eval`, a class of the program
//! that saved the file) is refused by name with its offset (`TorchGlobal`),
//! and nothing is ever looked up or called: `REDUCE`, `NEWOBJ` and `BUILD`
//! on a tag build the value the named function would return for a state
//! dict (a tensor, an ordered dict) or are refused.
//!
//! Values live in one arena ([`Obj`], addressed by [`Value::Obj`]), so a
//! memo fetch copies an index, never a container, and a call reads its
//! arguments in place: a memo bomb, or one big tuple passed to a thousand
//! calls, costs what its opcodes cost. Every count is bounded before it
//! grows (`MAX_OBJECTS`, `MAX_CELLS`, `MAX_MEMO`, `MAX_MARKS`), and so is
//! the memory they take together (`MAX_HELD`), counted before anything is
//! allocated; a string opcode allocates at most what the pickle holds
//! after it.
//!
//! A persistent id (`BINPERSID`) must be the storage record `torch.save`
//! writes, `('storage', StorageType, key, location, numel)`; it becomes an
//! [`Obj::Storage`], whose bytes the archive's `data/KEY` member holds.

mod calls;
mod globals;
mod rebuild;

pub use globals::{allowed, Global, QType, StorageType};

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
/// pickle holds names and numbers: about 550 bytes a tensor, so a
/// training checkpoint of 240,000 tensors (a large model's parameters and
/// their optimizer state in one file) holds about 128 MiB.
pub const MAX_HELD: usize = 256 << 20;

/// Every opcode of pickle protocols 0 to 5, with its name and whether
/// `torch.load(weights_only=True)` reads it (torch 2.x's
/// `_weights_only_unpickler`, which refuses any other as "Unsupported
/// operand"). This reader reads exactly those marked, so that the two
/// agree on which pickles are checkpoints: protocol 4's framing, the
/// memo's `MEMOIZE` and `STACK_GLOBAL` among the refused (a checkpoint
/// saved with `pickle_protocol=4` does not load in torch either).
pub const OPCODES: [(u8, &str, bool); 68] = [
    (b'(', "MARK", true),
    (b'.', "STOP", true),
    (b'0', "POP", false),
    (b'1', "POP_MARK", false),
    (b'2', "DUP", false),
    (b'F', "FLOAT", false),
    (b'I', "INT", false),
    (b'J', "BININT", true),
    (b'K', "BININT1", true),
    (b'L', "LONG", false),
    (b'M', "BININT2", true),
    (b'N', "NONE", true),
    (b'P', "PERSID", false),
    (b'Q', "BINPERSID", true),
    (b'R', "REDUCE", true),
    (b'S', "STRING", false),
    (b'T', "BINSTRING", false),
    (b'U', "SHORT_BINSTRING", true),
    (b'V', "UNICODE", false),
    (b'X', "BINUNICODE", true),
    (b'a', "APPEND", true),
    (b'b', "BUILD", true),
    (b'c', "GLOBAL", true),
    (b'd', "DICT", false),
    (b'}', "EMPTY_DICT", true),
    (b'e', "APPENDS", true),
    (b'g', "GET", false),
    (b'h', "BINGET", true),
    (b'i', "INST", false),
    (b'j', "LONG_BINGET", true),
    (b'l', "LIST", false),
    (b']', "EMPTY_LIST", true),
    (b'o', "OBJ", false),
    (b'p', "PUT", false),
    (b'q', "BINPUT", true),
    (b'r', "LONG_BINPUT", true),
    (b's', "SETITEM", true),
    (b't', "TUPLE", true),
    (b')', "EMPTY_TUPLE", true),
    (b'u', "SETITEMS", true),
    (b'G', "BINFLOAT", true),
    (0x80, "PROTO", true),
    (0x81, "NEWOBJ", true),
    (0x82, "EXT1", false),
    (0x83, "EXT2", false),
    (0x84, "EXT4", false),
    (0x85, "TUPLE1", true),
    (0x86, "TUPLE2", true),
    (0x87, "TUPLE3", true),
    (0x88, "NEWTRUE", true),
    (0x89, "NEWFALSE", true),
    (0x8a, "LONG1", true),
    (0x8b, "LONG4", false),
    (b'B', "BINBYTES", false),
    (b'C', "SHORT_BINBYTES", false),
    (0x8c, "SHORT_BINUNICODE", false),
    (0x8d, "BINUNICODE8", false),
    (0x8e, "BINBYTES8", false),
    (0x8f, "EMPTY_SET", true),
    (0x90, "ADDITEMS", false),
    (0x91, "FROZENSET", false),
    (0x92, "NEWOBJ_EX", false),
    (0x93, "STACK_GLOBAL", false),
    (0x94, "MEMOIZE", false),
    (0x95, "FRAME", false),
    (0x96, "BYTEARRAY8", false),
    (0x97, "NEXT_BUFFER", false),
    (0x98, "READONLY_BUFFER", false),
];

/// A value on the stack, in a container or in the memo.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// A value torch builds that is neither a name nor a tensor nor a
    /// container: an int past 64 bits, a complex number, bytes, a
    /// device. Counted as another value, never read.
    Other,
    /// An object of the arena.
    Obj(u32),
}

/// An object of the arena.
#[derive(Debug, Clone, PartialEq)]
pub enum Obj {
    Str(String),
    Tuple(Vec<Value>),
    List(Vec<Value>),
    Set(Vec<Value>),
    /// A plain dict, in insertion order; a key set again keeps its first
    /// place and takes the last value (Python's).
    Dict(Vec<(Value, Value)>),
    /// A `collections.OrderedDict` or `Counter`: a dict that `BUILD` may
    /// give attributes (a module state dict's `_metadata`).
    OrderedDict(Vec<(Value, Value)>),
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
    /// Torch's negative bit: its values are the stored ones negated.
    pub neg: bool,
    /// Torch's conjugate bit: its values are the stored ones conjugated
    /// (for a complex dtype; no change for a real one).
    pub conj: bool,
    /// A quantized tensor's integer type and scheme (its `dtype` is the
    /// integers'; its values are computed from them).
    pub quant: Option<(QType, QScheme)>,
}

/// A quantized tensor's scheme, as pickled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QScheme {
    /// The scale's bits (an f64) and the zero point.
    PerTensor { scale: u64, zero_point: i64 },
    /// The scales' and zero points' tensors (arena indexes of
    /// [`Obj::Tensor`]s) and the channel dimension.
    PerChannel {
        scales: u32,
        zero_points: u32,
        axis: usize,
    },
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
    /// The bytes its values were counted to take (see [`MAX_HELD`]).
    pub held: usize,
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
                held: vm.held,
            });
        }
        vm.step(op)?;
    }
}

/// The name of opcode `op`, and whether torch's weights-only loader reads
/// it (see [`OPCODES`]).
pub fn opcode(op: u8) -> Option<(&'static str, bool)> {
    (OPCODES.iter().find(|o| o.0 == op)).map(|&(_, name, read)| (name, read))
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

    /// Counts `n` more bytes held, before they are allocated: an error
    /// past [`MAX_HELD`].
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

    /// Counts `cells` more container cells (and the memory they take),
    /// before they are allocated.
    fn hold_cells(&mut self, cells: usize) -> Result<()> {
        self.cells = self.cells.saturating_add(cells);
        if self.cells > MAX_CELLS {
            return Err(bad(
                self.at,
                format!("more than {MAX_CELLS} values in containers"),
            ));
        }
        self.hold(cells.saturating_mul(std::mem::size_of::<(Value, Value)>()))
    }

    /// Puts `o` in the arena. Its cells and any string's bytes were held
    /// by the caller before they were allocated.
    fn new_obj(&mut self, o: Obj) -> Result<Value> {
        if self.arena.len() >= MAX_OBJECTS {
            return Err(bad(self.at, format!("more than {MAX_OBJECTS} objects")));
        }
        self.hold(std::mem::size_of::<Obj>())?;
        self.arena.push(o);
        Ok(Value::Obj((self.arena.len() - 1) as u32))
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

    /// A string of a length read as `n` bytes, UTF-8 as torch decodes it.
    fn string(&mut self, n: usize) -> Result<()> {
        let len = self.len(n)?;
        self.hold(len)?;
        let b = self.take(len)?;
        let s = std::str::from_utf8(b).map_err(|_| bad(self.at, "a string is not UTF-8"))?;
        let v = self.new_obj(Obj::Str(s.to_string()))?;
        self.push(v)
    }

    /// A container of `items` (already allocated by a pop): held, then
    /// made.
    fn container(&mut self, items: Vec<Value>, make: fn(Vec<Value>) -> Obj) -> Result<Value> {
        self.hold_cells(items.len())?;
        self.new_obj(make(items))
    }

    /// Appends `items` to the list `target`.
    fn extend(&mut self, target: Value, items: Vec<Value>) -> Result<()> {
        if !matches!(self.obj(target), Some(Obj::List(_))) {
            return Err(bad(self.at, "APPEND or APPENDS to what is not a list"));
        }
        self.hold_cells(items.len())?;
        if let Some(Obj::List(l)) = self.obj_mut(target) {
            l.extend(items);
        }
        Ok(())
    }

    fn set_items(&mut self, target: Value, items: Vec<Value>) -> Result<()> {
        if !items.len().is_multiple_of(2) {
            return Err(bad(self.at, "SETITEMS with an odd number of values"));
        }
        if !matches!(self.obj(target), Some(Obj::Dict(_) | Obj::OrderedDict(_))) {
            return Err(bad(self.at, "SETITEM or SETITEMS to what is not a dict"));
        }
        self.hold_cells(items.len() / 2)?;
        if let Some(Obj::Dict(d) | Obj::OrderedDict(d)) = self.obj_mut(target) {
            d.extend(items.chunks(2).map(|kv| (kv[0], kv[1])));
        }
        Ok(())
    }

    fn step(&mut self, op: u8) -> Result<()> {
        match op {
            // Torch reads any protocol number (and warns past 2): the
            // opcodes it reads are the same whatever it says.
            0x80 => {
                self.uint(1)?;
            }
            b'(' => {
                if self.marks.len() >= MAX_MARKS {
                    return Err(bad(self.at, format!("more than {MAX_MARKS} marks open")));
                }
                self.marks.push(self.stack.len());
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
            0x8a => {
                let n = self.len(1)?;
                let b = self.take(n)?;
                self.push(long(b))?;
            }
            b'G' => {
                let b = self.take(8)?;
                self.push(Value::Float(f64::from_be_bytes(b.try_into().expect("8"))))?;
            }
            b'X' => self.string(4)?,
            // Torch decodes a protocol 2 str as UTF-8 (torch.load's
            // default `encoding`).
            b'U' => self.string(1)?,
            b')' => {
                let v = self.container(Vec::new(), Obj::Tuple)?;
                self.push(v)?;
            }
            b't' => {
                let items = self.pop_mark()?;
                let v = self.container(items, Obj::Tuple)?;
                self.push(v)?;
            }
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                let mut items = (0..n).map(|_| self.pop()).collect::<Result<Vec<_>>>()?;
                items.reverse();
                let v = self.container(items, Obj::Tuple)?;
                self.push(v)?;
            }
            b']' => {
                let v = self.container(Vec::new(), Obj::List)?;
                self.push(v)?;
            }
            0x8f => {
                let v = self.container(Vec::new(), Obj::Set)?;
                self.push(v)?;
            }
            b'}' => {
                let v = self.new_obj(Obj::Dict(Vec::new()))?;
                self.push(v)?;
            }
            b'a' => {
                let item = self.pop()?;
                let list = self.top()?;
                self.extend(list, vec![item])?;
            }
            b'e' => {
                let items = self.pop_mark()?;
                let list = self.top()?;
                self.extend(list, items)?;
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
            b'R' => {
                let args = self.pop()?;
                let f = self.pop()?;
                let v = self.reduce(f, args)?;
                self.push(v)?;
            }
            0x81 => {
                let args = self.pop()?;
                let cls = self.pop()?;
                let v = self.new_instance(cls, args)?;
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

    /// The refusal of an opcode torch's weights-only loader does not read,
    /// by name; `INST` names the global it would call.
    fn unknown(&mut self, op: u8) -> Error {
        let Some((name, _)) = opcode(op) else {
            return bad(self.at, format!("opcode {op:#04x}: not a pickle opcode"));
        };
        if op == b'i' {
            if let (Ok(m), Ok(n)) = (self.line(), self.line()) {
                return Error::reject(
                    Rule::TorchGlobal,
                    format!(
                        "data.pkl at byte {}: opcode INST makes an instance by calling {m}.{n}, which torch.load(weights_only=True) refuses (never looked up)",
                        self.at
                    ),
                );
            }
        }
        bad(
            self.at,
            format!("opcode {op:#04x} ({name}): not one torch.load(weights_only=True) reads"),
        )
    }
}

/// The int a `LONG1` of little-endian two's-complement bytes `b` holds:
/// [`Value::Other`] past 64 bits (Python's ints have no bound).
fn long(b: &[u8]) -> Value {
    let negative = b.last().is_some_and(|&x| x & 0x80 != 0);
    // Sign extension bytes past the 8th do not widen the value.
    let pad = if negative { 0xff } else { 0 };
    let (low, high) = b.split_at(b.len().min(8));
    if high.iter().any(|&x| x != pad) {
        return Value::Other;
    }
    let mut v = [pad; 8];
    v[..low.len()].copy_from_slice(low);
    let v = i64::from_le_bytes(v);
    // The 8th byte's top bit must agree with the sign of the whole.
    match (b.len() > 8, (v < 0) == negative) {
        (true, false) => Value::Other,
        _ => Value::Int(v),
    }
}
