//! What `REDUCE`, `NEWOBJ` and `BUILD` on an allowlisted global build, as
//! torch's weights-only loader (torch 2.x's `_weights_only_unpickler`)
//! builds them for a state dict: the dispatch on the call's [`Global`]
//! and its arguments, and the calls that build no tensor (an ordered dict,
//! a `torch.Size`, a set; a device, a complex number or bytes become
//! [`Value::Other`]). The tensor rebuilds are `rebuild.rs`'s.
//!
//! A call of a tag with arguments torch's function would not take, or
//! one that builds what a state dict does not hold, is refused, never
//! guessed at; calls torch allows that build a tensor from Python values
//! are refused by name (`TorchTensor`), and so is `BUILD` on a tensor,
//! which torch runs as `set_` and which would give it other values than
//! its rebuild's.

use super::{bad, Global, Obj, Value, Vm};
use crate::error::{Error, Result, Rule};

/// Most arguments a call of the allowlist takes (`_rebuild_tensor_v3`'s
/// eight): a call with more is refused before its arguments are read.
const MAX_ARGS: usize = 8;

impl Vm<'_> {
    /// The allowlisted global `f` is, for an `op` that calls it.
    pub(super) fn global_of(&self, f: Value, op: &str) -> Result<Global> {
        match self.obj(f) {
            Some(Obj::Global(g)) => Ok(*g),
            _ => Err(bad(self.at, format!("{op} of what is not a global"))),
        }
    }

    /// A call's arguments (a tuple or a list, as Python's `f(*args)`),
    /// copied only once their count is known to be small.
    pub(super) fn args(&self, args: Value, op: &str) -> Result<Vec<Value>> {
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

    pub(super) fn wrong(&self, g: Global, why: impl std::fmt::Display) -> Error {
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

    pub(super) fn call(&mut self, g: Global, args: &[Value]) -> Result<Value> {
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
}
