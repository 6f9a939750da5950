//! PyTorch's quantized tensors as values: `Tensor.dequantize()` of a
//! `qint8`, `quint8` or `qint32` tensor of scheme `per_tensor_affine` or
//! `per_channel_affine`, bit for bit as torch 2.15 computes it on a CPU
//! (checked against torch in the interop suite, `torch/quantized.py`):
//!
//! * per tensor: `f32(q − zero_point) × f32(scale)`, in f32 (ATen's
//!   vectorized path casts the scale to float);
//! * per channel: `f32((q − zero_point[c]) × scale[c])`, the product in
//!   f64 (its scales are a double tensor), then rounded once.
//!
//! `q − zero_point` is exact (i64 of an i32 less an i64 cannot overflow
//! i128). The integers come from the tensor's strided view of its
//! storage, read by range; a channel's scale and zero point from the two
//! small tensors the checkpoint pickles beside it, read once.

use std::sync::OnceLock;

use crate::format::Ranges;

pub use crate::format::pytorch::QType;

/// The integer of type `ty` at the front of `b`.
fn int(ty: QType, b: &[u8]) -> i64 {
    match ty {
        QType::QInt8 => i64::from(b[0] as i8),
        QType::QUInt8 => i64::from(b[0]),
        QType::QInt32 => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
    }
}

/// Where a per-channel parameter tensor's values are: `count` little-
/// endian 8-byte values at `start` of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Absolute offset of the first value.
    pub start: u64,
    /// Values.
    pub count: u64,
}

/// A per-channel tensor's scales and zero points, read.
pub type Loaded = (Vec<f64>, Vec<i64>);

/// How a quantized tensor's integers become values.
#[derive(Debug)]
pub enum Scheme {
    /// One scale and zero point.
    PerTensor { scale: f64, zero_point: i64 },
    /// A scale (f64) and zero point (i64) per index of one dimension:
    /// element `k` (row-major) is of channel `(k / inner) % count`.
    PerChannel {
        scales: Params,
        zero_points: Params,
        /// Elements of one step along the channel dimension.
        inner: u64,
        /// Read on the first read that needs them, and kept.
        loaded: OnceLock<Loaded>,
    },
}

/// A quantized tensor's dequantization.
#[derive(Debug)]
pub struct Affine {
    /// The integers' type.
    pub ty: QType,
    /// The scheme and its parameters.
    pub scheme: Scheme,
}

/// Most channels a per-channel tensor may have: its parameters are read
/// whole into memory (16 bytes a channel).
pub const MAX_CHANNELS: u64 = 1 << 24;

impl Affine {
    /// What `meta.json` says the values are dequantized from.
    pub fn name(&self) -> &'static str {
        match (&self.scheme, self.ty) {
            (Scheme::PerTensor { .. }, QType::QInt8) => "torch.per_tensor_affine/qint8",
            (Scheme::PerTensor { .. }, QType::QUInt8) => "torch.per_tensor_affine/quint8",
            (Scheme::PerTensor { .. }, QType::QInt32) => "torch.per_tensor_affine/qint32",
            (Scheme::PerChannel { .. }, QType::QInt8) => "torch.per_channel_affine/qint8",
            (Scheme::PerChannel { .. }, QType::QUInt8) => "torch.per_channel_affine/quint8",
            (Scheme::PerChannel { .. }, QType::QInt32) => "torch.per_channel_affine/qint32",
        }
    }

    /// Writes the f32 values of elements `first..` (as many as `out`
    /// holds, 4 bytes each) from `ints`, their integers in row-major
    /// order; reads a per-channel tensor's parameters from `file` once.
    pub fn values(
        &self,
        file: &dyn Ranges,
        first: u64,
        ints: &[u8],
        out: &mut [u8],
    ) -> Result<(), String> {
        let w = self.ty.width() as usize;
        let pairs = ints.chunks_exact(w).zip(out.chunks_exact_mut(4));
        match &self.scheme {
            Scheme::PerTensor { scale, zero_point } => {
                let scale = *scale as f32;
                for (q, v) in pairs {
                    let d = i128::from(int(self.ty, q)) - i128::from(*zero_point);
                    v.copy_from_slice(&(d as f32 * scale).to_le_bytes());
                }
            }
            Scheme::PerChannel {
                scales,
                zero_points,
                inner,
                loaded,
            } => {
                // Kept once read; a failed read (a remote file's server
                // down) is tried again by the next read.
                let (s, z) = match loaded.get() {
                    Some(l) => l,
                    None => {
                        let l = load(file, *scales, *zero_points)?;
                        loaded.get_or_init(|| l)
                    }
                };
                let n = s.len() as u64;
                for (k, (q, v)) in (first..).zip(pairs) {
                    let c = ((k / inner) % n) as usize;
                    let d = i128::from(int(self.ty, q)) - i128::from(z[c]);
                    v.copy_from_slice(&((d as f64 * s[c]) as f32).to_le_bytes());
                }
            }
        }
        Ok(())
    }
}

/// A per-channel tensor's scales and zero points, from the file.
fn load(file: &dyn Ranges, scales: Params, zeros: Params) -> Result<Loaded, String> {
    let read = |p: Params| -> Result<Vec<[u8; 8]>, String> {
        if p.count > MAX_CHANNELS {
            return Err(format!(
                "{} channels, above the {MAX_CHANNELS} read",
                p.count
            ));
        }
        let bytes = file.get(p.start, p.count * 8).map_err(|e| e.to_string())?;
        if bytes.len() as u64 != p.count * 8 {
            return Err("a per-channel parameter tensor ends past its file".into());
        }
        Ok(bytes
            .chunks_exact(8)
            .map(|c| c.try_into().unwrap_or([0; 8]))
            .collect())
    };
    let s = read(scales)?.into_iter().map(f64::from_le_bytes).collect();
    let z = read(zeros)?.into_iter().map(i64::from_le_bytes).collect();
    Ok((s, z))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-tensor product is in f32, the per-channel one in f64: the
    /// two differ where f32(scale) loses what f64 keeps.
    #[test]
    fn per_tensor_rounds_the_scale_and_per_channel_the_product() {
        let scale = 0.1f64;
        let a = Affine {
            ty: QType::QInt8,
            scheme: Scheme::PerTensor {
                scale,
                zero_point: 3,
            },
        };
        let ints = [(-128i8) as u8, 0, 127];
        let mut out = [0u8; 12];
        a.values(&[][..].as_ref(), 0, &ints, &mut out).unwrap();
        let got: Vec<f32> = out
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, [-131.0 * 0.1f32, -3.0 * 0.1f32, 124.0 * 0.1f32]);

        // Two channels of two elements: scales 0.1 and 3, zero points 1, -2.
        let mut file = Vec::new();
        for s in [0.1f64, 3.0] {
            file.extend(s.to_le_bytes());
        }
        for z in [1i64, -2] {
            file.extend(z.to_le_bytes());
        }
        let a = Affine {
            ty: QType::QUInt8,
            scheme: Scheme::PerChannel {
                scales: Params { start: 0, count: 2 },
                zero_points: Params {
                    start: 16,
                    count: 2,
                },
                inner: 2,
                loaded: OnceLock::new(),
            },
        };
        let mut out = [0u8; 8];
        // Elements 2 and 3: channel 1.
        a.values(&file.as_slice(), 2, &[200, 7], &mut out).unwrap();
        let got: Vec<f32> = out
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, [(202.0f64 * 3.0) as f32, (9.0f64 * 3.0) as f32]);
        let mut out = [0u8; 4];
        // Element 1: channel 0, q − zero point = 9.
        a.values(&file.as_slice(), 1, &[10], &mut out).unwrap();
        assert_eq!(f32::from_le_bytes(out), (9.0f64 * 0.1) as f32);
        assert_ne!(
            (9.0f64 * 0.1) as f32,
            9.0f32 * 0.1f32,
            "the two differ here"
        );
    }

    /// A file whose first read fails (a server down), then answers.
    struct Flaky(std::cell::Cell<bool>, Vec<u8>);

    impl Ranges for Flaky {
        fn size(&self) -> u64 {
            self.1.len() as u64
        }

        fn get(&self, offset: u64, len: u64) -> crate::error::Result<std::borrow::Cow<'_, [u8]>> {
            if self.0.replace(false) {
                return Err(crate::error::Error::Unsupported("down".into()));
            }
            let bytes = &self.1[offset as usize..(offset + len) as usize];
            Ok(std::borrow::Cow::Borrowed(bytes))
        }
    }

    /// Per-channel parameters that failed to read are read again by the
    /// next read, not kept as a failure.
    #[test]
    fn a_failed_parameter_read_is_tried_again() {
        let mut bytes = 2.0f64.to_le_bytes().to_vec();
        bytes.extend(1i64.to_le_bytes());
        let file = Flaky(std::cell::Cell::new(true), bytes);
        let a = Affine {
            ty: QType::QInt8,
            scheme: Scheme::PerChannel {
                scales: Params { start: 0, count: 1 },
                zero_points: Params { start: 8, count: 1 },
                inner: 1,
                loaded: OnceLock::new(),
            },
        };
        let mut out = [0u8; 4];
        assert!(a.values(&file, 0, &[4], &mut out).is_err());
        a.values(&file, 0, &[4], &mut out).unwrap();
        assert_eq!(f32::from_le_bytes(out), 6.0);
    }
}
