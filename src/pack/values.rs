//! `ztfs pack --dequantize DTYPE`: every quantized tensor of the model
//! written as a dense tensor of its values in DTYPE (f32, f16 or bf16),
//! the values its `data.npy` serves in a mount, narrowed as
//! `--dequantize` narrows them there. The other objects are packed as
//! they are.
//!
//! A quantized tensor is one whose values ztfs computes: a ggml block type
//! (a GGUF file's, or a `.zt`'s `gguf.<type>/1` object; from its blocks by
//! range) or a `.zt` object of an interpreted quantization profile
//! (`zt.mx/1`, `zt.quant_group/1`; from its parts, prepared whole as the
//! mount prepares them). A quantized tensor whose values cannot be
//! computed (a ggml type ztfs does not dequantize, compressed blocks) is
//! refused, naming it and why: the output is a float model or nothing.

use crate::decode::dequant::narrow::Float;
use crate::decode::views::{self, DEQUANTIZED_VIEW};
use crate::error::{Error, Result};
use crate::format::manifest::{Object, Part};
use crate::format::text::Texts;
use crate::format::types::ElementType;
use crate::model::{Model, TensorData, DATA};

/// Fills a buffer with the f32 values from a byte offset.
type ReadAt<'a> = dyn FnMut(u64, &mut [u8]) -> Result<()> + 'a;

/// Values computed at once (f32), before narrowing.
const CHUNK: u64 = 8 << 20;

/// The dense objects that replace the model's quantized ones.
pub struct Values {
    /// The type they are written in.
    pub to: Float,
    /// Each replacement and its object's index in the model, by name.
    objects: Vec<(Object, u32)>,
}

impl Values {
    /// The replacements of `model`'s quantized objects, in type `to`.
    pub fn of(model: &Model, to: Float) -> Result<Values> {
        let m = model.manifest().expect("checked at open");
        let mut texts = Texts::default();
        let (data, dense) = (texts.get(DATA), texts.get("dense"));
        let mut objects = Vec::new();
        for (i, o) in m.objects.iter().enumerate() {
            let count = match model.tensor_data(i as u32) {
                TensorData::Computed { view, .. } if view.dequantized_from().is_some() => {
                    view.len() / 4
                }
                TensorData::Absent(why) if o.layout.starts_with("gguf.") => {
                    return Err(Error::Unsupported(format!(
                        "tensor {:?} cannot be dequantized: {why}",
                        o.name
                    )))
                }
                _ => match views::view(o) {
                    Some((DEQUANTIZED_VIEW, len)) => len / 4,
                    _ => continue,
                },
            };
            let ty = ElementType {
                dtype: to.dtype(),
                logical: None,
            };
            let len = count.checked_mul(to.width()).ok_or_else(|| {
                Error::Unsupported(format!("tensor {:?}: its values overflow", o.name))
            })?;
            let object = Object {
                name: o.name.clone(),
                shape: o.shape.clone(),
                layout: dense.clone(),
                attributes: None,
                parts: smallvec::smallvec![Part::raw(data.clone(), ty, 0, len)],
            };
            objects.push((object, i as u32));
        }
        objects.sort_by(|a, b| a.0.name.as_bytes().cmp(b.0.name.as_bytes()));
        Ok(Values { to, objects })
    }

    /// The replacement of the model's object `name`, if it is quantized.
    pub fn get(&self, name: &str) -> Option<&Object> {
        self.index(name).map(|k| &self.objects[k].0)
    }

    fn index(&self, name: &str) -> Option<usize> {
        (self
            .objects
            .binary_search_by(|(o, _)| o.name.as_bytes().cmp(name.as_bytes())))
        .ok()
    }

    /// The model's object index of replacement `name`.
    pub fn model_index(&self, name: &str) -> Option<u32> {
        self.index(name).map(|k| self.objects[k].1)
    }

    /// Streams the values of the model's object `i` in the output type to
    /// `sink`, a chunk at a time.
    pub fn stream(
        &self,
        model: &Model,
        i: u32,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let o = &model.manifest().expect("checked at open").objects[i as usize];
        let fail = |e: String| Error::Unsupported(format!("{:?}: values: {e}", o.name));
        let prepared;
        let mut read: Box<ReadAt<'_>> = match model.tensor_data(i) {
            TensorData::Computed { view, .. } => {
                let store = model.view_store(i)?;
                Box::new(move |at, out| view.read_parallel(store, at, out).map_err(fail))
            }
            _ => {
                prepared = views::prepare(o, &|name| crate::read::decoded_vec(model, o, name))?;
                let p = &prepared;
                Box::new(move |at, out| {
                    let n = p.read_into(at, out)?;
                    match n == out.len() {
                        true => Ok(()),
                        false => Err(fail(format!("{n} bytes of {} at {at}", out.len()))),
                    }
                })
            }
        };
        let total = self
            .get(&o.name)
            .map_or(0, |r| r.parts[0].blob.length / self.to.width() * 4);
        let mut narrow = vec![0u8; total.min(CHUNK) as usize / 4 * self.to.width() as usize];
        crate::read::in_chunks(total, CHUNK, &mut read, &mut |wide| {
            let out = &mut narrow[..wide.len() / 4 * self.to.width() as usize];
            self.to.narrow(wide, out);
            sink(out)
        })
    }
}
