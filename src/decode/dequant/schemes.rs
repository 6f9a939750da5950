//! A Hurray quantized tensor's values as a file: little-endian f32 in
//! row-major order, computed by range with the normative formula of its
//! scheme (hurray `docs/spec/quantization/*.md`):
//!
//! * per-tensor, per-channel and per-block affine: `scale × (q − zero_point)`,
//!   the difference made exactly (in i64: DECISION, the spec's "signed
//!   32-bit" subtraction would wrap for uint32 and int32 storage, where
//!   any two sane readers give the exact difference), cast to f32, then
//!   multiplied in f32; an f16 or bf16 per-block scale widened first;
//! * NF4: `absmax × nf4[q]`, the spec's 16 levels verbatim;
//! * MXFP: `2^(e − 127) × v`, `v` the storage element's value (OCP
//!   float8 e4m3 and e5m2, float6 e2m3 and e3m2, float4 e2m1, int8, int4).
//!
//! The storage buffer is row-major over the storage shape: the logical
//! shape, the quantized axis padded to whole blocks for per-block and NF4
//! (quantization.md § Partial Block Policy; the padding is skipped).
//! Sub-byte elements are packed LSB first (element-types.md). A block's
//! index is `outer × ⌈S / K⌉ + i_axis / K`, `outer` the row-major index
//! over the other dimensions; a scale and zero-point array sharing one
//! buffer is `[scales | zero_points]` (quantization.md, rule 3).
//!
//! A read of bytes `[a, b)` computes the values under it only: it fetches
//! the storage bytes they span and each parameter it needs. The parameter
//! values the spec lets a reader check on first use (scales finite and
//! non-zero, NF4's non-negative, MXFP's scale bytes neither 0x00 nor
//! 0xFF, zero points within the storage type's range) fail the read that
//! meets them, naming the tensor's element and the rule.

use super::values::copy_le;
use crate::decode::hurray::{ravel, unravel};
use crate::format::hurray::quant::{decode, int_range, storage_shape, Scheme};
use crate::format::hurray::{ElemType, Tensor};
use crate::format::Ranges;
use std::borrow::Cow;

/// The spec's NF4 levels, verbatim (quantization/nf4.md § Lookup Table:
/// the decimal expansions as written, each the f32 it names).
#[allow(clippy::excessive_precision)]
const NF4: [f32; 16] = [
    -1.0,
    -0.696_192_800_998_687_7,
    -0.525_073_051_452_636_7,
    -0.394_917_488_098_144_53,
    -0.284_441_381_692_886_35,
    -0.184_773_430_228_233_34,
    -0.091_050_036_251_544_95,
    0.0,
    0.079_580_299_556_255_34,
    0.160_930_201_411_247_25,
    0.246_112_301_945_686_34,
    0.337_915_241_718_292_24,
    0.440_709_829_330_444_34,
    0.562_617_003_917_694_1,
    0.722_956_836_223_602_3,
    1.0,
];

/// How a storage element is read.
#[derive(Debug, Clone, Copy)]
enum Storage {
    Int { bits: u32, signed: bool },
    F8E4M3,
    F8E5M2,
    F4E2M1,
    F6E2M3,
    F6E3M2,
}

/// A parameter array's place in the file.
#[derive(Debug, Clone, Copy)]
enum ScaleType {
    F16,
    Bf16,
    F32,
}

#[derive(Debug, Clone)]
enum Params {
    Tensor {
        scale: f32,
        zero: i64,
    },
    /// Per-channel (block 1, no padding) and per-block affine.
    Affine {
        scales: u64,
        ty: ScaleType,
        zeros: Option<u64>,
    },
    Nf4 {
        scales: u64,
    },
    Mxfp {
        scales: u64,
    },
}

/// The values of one Hurray quantized tensor.
#[derive(Debug, Clone)]
pub struct Quantized {
    shape: Vec<u64>,
    storage_shape: Vec<u64>,
    /// Absolute offset of storage element 0.
    start: u64,
    /// Bytes of storage from `start`.
    stored: u64,
    storage: Storage,
    /// The quantized axis and the block size along it (1 per channel).
    axis: usize,
    block: u64,
    params: Params,
    zero_range: (i64, i64),
    name: &'static str,
}

impl Quantized {
    /// The values of tensor `t` (quantized, row-major, static shape), or
    /// why they cannot be computed.
    pub fn new(t: &Tensor) -> Result<Quantized, String> {
        let d = &t.descriptor;
        let q = d.quantization.as_deref().ok_or("not quantized")?;
        let scheme = decode(&q.bytes, d.elem).map_err(|e| e.to_string())?;
        let storage_shape = storage_shape(d, q).ok_or("the storage shape overflows")?;
        let count = crate::format::hurray::objects::static_count(&storage_shape)
            .ok_or("a dimension is dynamic")?;
        let storage = storage_of(d.elem)?;
        let bits = d.elem.bits();
        let stored = count
            .checked_mul(u64::from(bits))
            .map(|b| b.div_ceil(8))
            .ok_or("the storage size overflows")?;
        let (Some(b0), Some(&off0)) = (d.buffers.first(), t.buffer_offsets.first()) else {
            return Err("no buffer 0".into());
        };
        if d.byte_offset
            .checked_add(stored)
            .is_none_or(|e| e > b0.size)
        {
            return Err(format!(
                "buffer 0 holds {} bytes; the storage needs {stored} from byte {}",
                b0.size, d.byte_offset
            ));
        }
        let buffer = |k: u32| -> Result<u64, String> {
            (t.buffer_offsets.get(k as usize).copied()).ok_or(format!("no buffer {k}"))
        };
        let along = |axis: u32| d.shape.get(axis as usize).copied().unwrap_or(0);
        let outer = |axis: u32| -> u64 {
            (d.shape.iter().enumerate())
                .filter(|(j, _)| *j != axis as usize)
                .fold(1u64, |n, (_, &s)| n.saturating_mul(s))
        };
        let (axis, block, params, name) = match scheme {
            Scheme::PerTensor => {
                let b = &q.bytes;
                let scale = f32::from_le_bytes([b[4], b[5], b[6], b[7]]);
                let zero = i64::from(i32::from_le_bytes([b[8], b[9], b[10], b[11]]));
                (
                    0,
                    1,
                    Params::Tensor { scale, zero },
                    "hurray per-tensor affine",
                )
            }
            Scheme::PerChannel {
                axis,
                scale,
                zero_point,
            } => {
                let scales = buffer(scale)?;
                let zeros = match zero_point {
                    Some(z) if z == scale => Some(scales + along(axis) * 4),
                    Some(z) => Some(buffer(z)?),
                    None => None,
                };
                let p = Params::Affine {
                    scales,
                    ty: ScaleType::F32,
                    zeros,
                };
                // Each channel a block of its own: index i_axis.
                (axis, 0, p, "hurray per-channel affine")
            }
            Scheme::PerBlock {
                axis,
                block,
                scale,
                zero_point,
                scale_bytes,
            } => {
                let ty = match (scale_bytes, q.bytes[20]) {
                    (4, _) => ScaleType::F32,
                    (_, 0x01) => ScaleType::F16,
                    _ => ScaleType::Bf16,
                };
                let scales = buffer(scale)?;
                let blocks = outer(axis).saturating_mul(along(axis).div_ceil(u64::from(block)));
                let zeros = match zero_point {
                    Some(z) if z == scale => Some(scales + blocks.saturating_mul(scale_bytes)),
                    Some(z) => Some(buffer(z)?),
                    None => None,
                };
                let p = Params::Affine { scales, ty, zeros };
                (axis, u64::from(block), p, "hurray per-block affine")
            }
            Scheme::Nf4 { axis, block, scale } => {
                let p = Params::Nf4 {
                    scales: buffer(scale)?,
                };
                (axis, u64::from(block), p, "hurray nf4")
            }
            Scheme::Mxfp { axis, block, scale } => {
                let p = Params::Mxfp {
                    scales: buffer(scale)?,
                };
                (axis, u64::from(block), p, "hurray mxfp")
            }
        };
        let values = crate::format::hurray::objects::static_count(&d.shape)
            .ok_or("a dimension is dynamic")?;
        if values.checked_mul(4).is_none_or(|l| l > i64::MAX as u64) {
            return Err(format!("{values} values are too many for one file"));
        }
        Ok(Quantized {
            shape: d.shape.clone(),
            storage_shape,
            start: off0 + d.byte_offset,
            stored,
            storage,
            axis: axis as usize,
            block,
            params,
            zero_range: int_range(d.elem),
            name,
        })
    }

    /// What the values are dequantized from, for `meta.json`.
    pub fn scheme(&self) -> &'static str {
        self.name
    }

    /// Bytes of the values (4 a value).
    pub fn len(&self) -> u64 {
        self.shape.iter().product::<u64>() * 4
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills `out` with the values' bytes from `offset` (within
    /// [`Quantized::len`]), computed from the storage and parameters
    /// read from `file`.
    pub fn read_into(&self, file: &dyn Ranges, offset: u64, out: &mut [u8]) -> Result<(), String> {
        if out.is_empty() {
            return Ok(());
        }
        if offset
            .checked_add(out.len() as u64)
            .is_none_or(|e| e > self.len())
        {
            return Err(format!("range past the values' {} bytes", self.len()));
        }
        let (first, end) = (offset / 4, (offset + out.len() as u64).div_ceil(4));
        let rank = self.shape.len();
        let mut idx = vec![0u64; rank];
        unravel(first, &self.shape, &mut idx);
        let bits = u64::from(self.bits());
        // The storage bytes the range spans (storage order follows the
        // logical order, the padding aside).
        let s_first = ravel(&idx, &self.storage_shape);
        let mut last = vec![0u64; rank];
        unravel(end - 1, &self.shape, &mut last);
        let s_last = ravel(&last, &self.storage_shape);
        let byte0 = s_first * bits / 8;
        let byte_end = ((s_last + 1) * bits).div_ceil(8).min(self.stored);
        let data = file
            .get(self.start + byte0, byte_end - byte0)
            .map_err(|e| e.to_string())?;
        let mut params = Cache::default();
        let mut values = Vec::with_capacity((end - first) as usize);
        for _ in first..end {
            let s = ravel(&idx, &self.storage_shape);
            let bit = s * bits - byte0 * 8;
            let q = element(&data, bit, self.bits());
            let v = self.value(file, &idx, q, &mut params)?;
            values.push(v);
            increment(&mut idx, &self.shape);
        }
        copy_le(&values, (offset - first * 4) as usize, out);
        Ok(())
    }

    fn bits(&self) -> u32 {
        match self.storage {
            Storage::Int { bits, .. } => bits,
            Storage::F8E4M3 | Storage::F8E5M2 => 8,
            Storage::F4E2M1 => 4,
            Storage::F6E2M3 | Storage::F6E3M2 => 6,
        }
    }

    /// The value of storage element `q` at logical index `idx`.
    fn value(
        &self,
        file: &dyn Ranges,
        idx: &[u64],
        q: u32,
        cache: &mut Cache,
    ) -> Result<f32, String> {
        let block = match self.params {
            Params::Tensor { .. } => 0,
            _ => self.block_of(idx),
        };
        let at = |what: &str| format!("{what} of block {block}");
        match &self.params {
            Params::Tensor { scale, zero } => Ok(self.affine(q, *scale, *zero)),
            Params::Affine { scales, ty, zeros } => {
                let (scale, zero) = cache.get(block, || {
                    let width = match ty {
                        ScaleType::F32 => 4,
                        ScaleType::F16 | ScaleType::Bf16 => 2,
                    };
                    let b = param(file, scales + block * width, width)?;
                    let scale = match ty {
                        ScaleType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                        ScaleType::F16 => super::f16(u16::from_le_bytes([b[0], b[1]])),
                        ScaleType::Bf16 => {
                            f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16)
                        }
                    };
                    if !scale.is_finite() || scale == 0.0 {
                        return Err(format!(
                            "{}: {scale:?} is not finite and non-zero",
                            at("the scale")
                        ));
                    }
                    let zero = match zeros {
                        Some(z) => {
                            let b = param(file, z + block * 4, 4)?;
                            i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        }
                        None => 0,
                    };
                    let (lo, hi) = self.zero_range;
                    if zero < lo || zero > hi {
                        return Err(format!(
                            "{}: {zero} is outside {lo}..={hi}",
                            at("the zero point")
                        ));
                    }
                    Ok((scale, zero))
                })?;
                Ok(self.affine(q, scale, zero))
            }
            Params::Nf4 { scales } => {
                let (s, _) = cache.get(block, || {
                    let b = param(file, scales + block * 4, 4)?;
                    let s = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    if !s.is_finite() || s < 0.0 {
                        return Err(format!(
                            "{}: {s:?} is not finite and non-negative",
                            at("the absmax")
                        ));
                    }
                    Ok((s, 0))
                })?;
                Ok(s * NF4[(q & 15) as usize])
            }
            Params::Mxfp { scales } => {
                let (s, _) = cache.get(block, || {
                    let e = param(file, scales + block, 1)?[0];
                    if e == 0x00 || e == 0xFF {
                        return Err(format!(
                            "{}: {e:#04x} is a reserved float8_e8m0 pattern",
                            at("the scale")
                        ));
                    }
                    Ok((f32::from_bits(u32::from(e) << 23), 0))
                })?;
                Ok(s * self.element_value(q))
            }
        }
    }

    /// `scale × (q − zero)`: the difference exact, then f32.
    fn affine(&self, q: u32, scale: f32, zero: i64) -> f32 {
        scale * ((self.int_value(q) - zero) as f32)
    }

    fn int_value(&self, q: u32) -> i64 {
        match self.storage {
            Storage::Int { bits, signed: true } => {
                let shift = 64 - bits;
                (i64::from(q) << shift) >> shift
            }
            _ => i64::from(q),
        }
    }

    /// An MXFP storage element's value.
    fn element_value(&self, q: u32) -> f32 {
        match self.storage {
            Storage::Int { .. } => self.int_value(q) as f32,
            Storage::F8E5M2 => super::f16((q as u16) << 8),
            Storage::F8E4M3 => minifloat(q, 4, 3, 7, q & 0x7F == 0x7F),
            Storage::F6E2M3 => minifloat(q, 2, 3, 1, false),
            Storage::F6E3M2 => minifloat(q, 3, 2, 3, false),
            Storage::F4E2M1 => minifloat(q, 2, 1, 1, false),
        }
    }

    /// The block (or channel) of logical index `idx`.
    fn block_of(&self, idx: &[u64]) -> u64 {
        let i = idx[self.axis];
        if self.block == 0 {
            return i;
        }
        let per_axis = self.shape[self.axis].div_ceil(self.block);
        let outer = (idx.iter().zip(&self.shape).enumerate())
            .filter(|(j, _)| *j != self.axis)
            .fold(0u64, |acc, (_, (&i, &n))| acc * n + i);
        outer * per_axis + i / self.block
    }
}

/// The last block's parameters, kept while a run of its elements is read.
#[derive(Default)]
struct Cache {
    last: Option<(u64, (f32, i64))>,
}

impl Cache {
    fn get(
        &mut self,
        block: u64,
        load: impl FnOnce() -> Result<(f32, i64), String>,
    ) -> Result<(f32, i64), String> {
        match self.last {
            Some((b, v)) if b == block => Ok(v),
            _ => {
                let v = load()?;
                self.last = Some((block, v));
                Ok(v)
            }
        }
    }
}

/// `len` bytes of a parameter at `at` (from a map, without a copy).
fn param(file: &dyn Ranges, at: u64, len: u64) -> Result<Cow<'_, [u8]>, String> {
    file.get(at, len).map_err(|e| e.to_string())
}

/// The `bits`-wide element at bit `bit` of `data`, LSB first.
fn element(data: &[u8], bit: u64, bits: u32) -> u32 {
    let byte = (bit / 8) as usize;
    let mut word = 0u64;
    for k in 0..5 {
        word |= u64::from(data.get(byte + k).copied().unwrap_or(0)) << (8 * k);
    }
    ((word >> (bit % 8)) & ((1u64 << bits) - 1)) as u32
}

/// The value of an OCP minifloat of `e` exponent and `m` mantissa bits
/// (a sign bit above them), exponent bias `bias`, NaN when `nan`; no
/// infinities.
fn minifloat(q: u32, e: u32, m: u32, bias: i32, nan: bool) -> f32 {
    let sign = if q >> (e + m) & 1 == 1 { -1.0f32 } else { 1.0 };
    if nan {
        return f32::NAN.copysign(sign);
    }
    let exp = ((q >> m) & ((1 << e) - 1)) as i32;
    let man = (q & ((1 << m) - 1)) as f32 / (1u32 << m) as f32;
    let v = match exp {
        0 => man * 2f32.powi(1 - bias),
        _ => (1.0 + man) * 2f32.powi(exp - bias),
    };
    sign * v
}

fn storage_of(e: ElemType) -> Result<Storage, String> {
    Ok(match e {
        ElemType::I8 => Storage::Int {
            bits: 8,
            signed: true,
        },
        ElemType::U8 => Storage::Int {
            bits: 8,
            signed: false,
        },
        ElemType::I16 => Storage::Int {
            bits: 16,
            signed: true,
        },
        ElemType::U16 => Storage::Int {
            bits: 16,
            signed: false,
        },
        ElemType::I32 => Storage::Int {
            bits: 32,
            signed: true,
        },
        ElemType::U32 => Storage::Int {
            bits: 32,
            signed: false,
        },
        ElemType::I4 => Storage::Int {
            bits: 4,
            signed: true,
        },
        ElemType::U4 => Storage::Int {
            bits: 4,
            signed: false,
        },
        ElemType::I2 => Storage::Int {
            bits: 2,
            signed: true,
        },
        ElemType::U2 => Storage::Int {
            bits: 2,
            signed: false,
        },
        ElemType::F8E4M3 => Storage::F8E4M3,
        ElemType::F8E5M2 => Storage::F8E5M2,
        ElemType::F4E2M1 => Storage::F4E2M1,
        ElemType::F6E2M3 => Storage::F6E2M3,
        ElemType::F6E3M2 => Storage::F6E3M2,
        other => return Err(format!("{} is no quantized storage type", other.name())),
    })
}

fn increment(idx: &mut [u64], shape: &[u64]) {
    for k in (0..shape.len()).rev() {
        idx[k] += 1;
        if idx[k] < shape[k] {
            return;
        }
        idx[k] = 0;
    }
}
