//! A GGUF's exported files as transformers loads the GGUF: with
//! `--dequantize`, a mount (and `ztfs pack --to-folder`) of a GGUF whose
//! architecture ztfs maps gets `config.json` at the root, and
//! `model.safetensors` names each tensor as the model's parameter and
//! serves its values as `from_pretrained(dir, gguf_file=...)` has them
//! (`format::gguf::transformers`): q and k rows of llama un-permuted, by
//! range, row by row; Gemma's norms less one, value by value. Tensors the
//! loader drops are left out. The tensors' directories keep the file's
//! names and bytes.
//!
//! The form is all or nothing: a tensor the model has a parameter for that
//! `model.safetensors` cannot hold (a type without values), or whose
//! change this module cannot make exactly as the loader does (a norm not
//! stored as f32 or f16), drops the whole form, logged, rather than serve
//! a model that loads with one parameter missing or wrong.

use crate::decode::views::DEQUANTIZED_VIEW;
use crate::format::gguf::transformers::{self as form, Change, Form};
use crate::format::types::DType;
use crate::model::{Elem, Input};
use crate::store::Reader;
use crate::tree::{Data, FsError, Node, Tree};

/// The config's file name.
pub const CONFIG: &str = "config.json";
/// Why a tensor the loader drops is not in `model.safetensors`.
pub const DROPPED: &str =
    "transformers' GGUF loader does not load it (the model has no such parameter)";

impl Tree {
    /// The transformers form of the model, when the mount asks for
    /// dequantized values and the model is a GGUF that has one.
    pub(in crate::tree) fn transformers_form(&self) -> Option<Form> {
        self.opts.dequantize?;
        let Input::Gguf(file) = self.model.input() else {
            return None;
        };
        let why = match form::form(file) {
            Ok(f) => match self.form_unservable(&f) {
                None if self.folder_has(CONFIG) => format!("the folder has a {CONFIG} of its own"),
                None => return Some(f),
                Some(why) => why,
            },
            Err(why) => why,
        };
        log::warn!("no {CONFIG}: model.safetensors keeps the GGUF's names: {why}");
        None
    }

    /// Why `f` cannot be served exactly, if it cannot: a tensor the model
    /// has a parameter for that `model.safetensors` cannot hold (the model
    /// would load with that parameter left as initialised), or a change
    /// this module cannot make as the loader does.
    fn form_unservable(&self, f: &Form) -> Option<String> {
        let to = self.opts.dequantize?;
        for (i, t) in f.tensors.iter().enumerate() {
            let Some(t) = t else { continue };
            let name = &self.object(i as u32).name;
            if let Err(why) = self.safetensors_of(i as u32) {
                return Some(format!("{name:?} cannot be in model.safetensors: {why}"));
            }
            let (_, elem, _) = self.tensor_file(i as u32).ok()?;
            if t.change != Change::LessOne {
                continue;
            }
            let values = (self.view_of(i as u32)).is_some_and(|v| v.0 == DEQUANTIZED_VIEW);
            // The loader subtracts in the type it holds: f32 for
            // dequantized values, the file's own type for f32 and f16.
            let exact = match elem {
                Elem::Plain(DType::F32) => true,
                Elem::Plain(DType::F16) => !values,
                _ => false,
            };
            if !exact {
                return Some(format!(
                    "{name:?}: ztfs subtracts one from it only as f32 or f16 (dequantized to {to:?})"
                ));
            }
        }
        None
    }

    /// `config.json` when the tree serves one at its root.
    pub fn config_file(&self) -> Option<&'static str> {
        self.transformers.as_ref().map(|_| CONFIG)
    }

    fn folder_has(&self, name: &str) -> bool {
        self.folder_file_inodes().iter().any(|f| f.0 == name)
    }

    /// Object `i`'s name in `model.safetensors`.
    pub(in crate::tree) fn export_name(&self, i: u32) -> &str {
        match self
            .transformers
            .as_ref()
            .and_then(|f| f.tensors[i as usize].as_ref())
        {
            Some(t) => &t.name,
            None => &self.object(i).name,
        }
    }

    /// Why object `i` is not in `model.safetensors` under the form.
    pub(in crate::tree) fn dropped_by_form(&self, i: u32) -> Option<&'static str> {
        let f = self.transformers.as_ref()?;
        f.tensors[i as usize].is_none().then_some(DROPPED)
    }

    /// `len` bytes of object `i`'s exported values from `offset`, changed
    /// as the form says, from its tensor file `(node, elem, size)`.
    pub(in crate::tree) fn read_changed(
        &self,
        i: u32,
        (node, elem, size): (Node, Elem, u64),
        offset: u64,
        len: u64,
        reader: Reader,
    ) -> Result<Data<'_>, FsError> {
        let read = |offset, len| self.read_tensor_file(i, node, offset, len, reader);
        let change = (self.transformers.as_ref())
            .and_then(|f| f.tensors[i as usize].as_ref())
            .map_or(Change::Same, |t| t.change);
        match change {
            Change::Same => read(offset, len),
            Change::LessOne => {
                let w = if elem == Elem::Plain(DType::F16) {
                    2
                } else {
                    4
                };
                let (first, end) = (offset / w * w, (offset + len).div_ceil(w) * w);
                let mut v = read(first, end - first)?.to_vec();
                less_one(&mut v, w == 2);
                let from = (offset - first) as usize;
                Ok(Data::Owned(v[from..from + len as usize].to_vec()))
            }
            Change::Unpermute { .. } => {
                let rows = self.object(i).shape.first().copied().unwrap_or(1).max(1);
                let row = size / rows;
                if row == 0 {
                    return read(offset, len);
                }
                let mut out = Vec::with_capacity(len as usize);
                let mut at = offset;
                while at < offset + len {
                    let (r, within) = (at / row, at % row);
                    let n = (row - within).min(offset + len - at);
                    let src = change.source_row(r, rows) * row + within;
                    out.extend_from_slice(&read(src, n)?);
                    at += n;
                }
                Ok(Data::Owned(out))
            }
        }
    }
}

/// Each little-endian f32 (or f16) value of `v` less one, rounded to
/// nearest even as numpy's `x - 1` in that type.
fn less_one(v: &mut [u8], half: bool) {
    if half {
        for c in v.chunks_exact_mut(2) {
            let x = crate::decode::dequant::f16(u16::from_le_bytes([c[0], c[1]]));
            let y = crate::decode::dequant::narrow::f16_bits(x - 1.0);
            c.copy_from_slice(&y.to_le_bytes());
        }
    } else {
        for c in v.chunks_exact_mut(4) {
            let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            c.copy_from_slice(&(x - 1.0).to_le_bytes());
        }
    }
}
