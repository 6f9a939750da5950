//! Hurray quantized tensors' values (`ztfs cat --values`, and `data.npy`
//! through a mount), against values worked out by hand from the spec's
//! formulas (hurray `docs/spec/quantization/*.md`): each scheme, the
//! storage types packed below a byte (int4, int2, float4, float6), the
//! float8 kinds, a partial trailing block, an f16 and a bf16 scale, a
//! scale and zero-point array sharing one buffer, uint32 storage whose
//! difference passes i32; and the parameters a reader must refuse on use.
//! The interop suite checks pyhurray-written files against numpy.

mod common;
#[allow(dead_code)]
#[path = "corpus/hurray/writer.rs"]
mod writer;

use std::fs;
use std::path::Path;

use common::*;
use writer::{dense, tensor, u32s, Descriptor, File, HAS_QUANTIZATION};

// Element type tags (element-types.md).
const I8: u8 = 0x10;
const U8: u8 = 0x11;
const U32: u8 = 0x15;
const F8E4M3: u8 = 0x40;
const F8E5M2: u8 = 0x41;
const F4E2M1: u8 = 0x43;
const F6E3M2: u8 = 0x45;
const I4: u8 = 0x48;
const U4: u8 = 0x49;
const I2: u8 = 0x4A;

/// A quantization section of scheme bytes `s`.
fn quant(s: &[u8]) -> Vec<u8> {
    let mut out = (s.len() as u32).to_le_bytes().to_vec();
    out.extend(s);
    out
}

fn per_tensor(scale: f32, zero: i32) -> Vec<u8> {
    let mut s = vec![0x01, 0x01, 0, 0];
    s.extend(scale.to_le_bytes());
    s.extend(zero.to_le_bytes());
    s.extend([0; 4]);
    quant(&s)
}

/// Per-channel affine, f32 scales in buffer 1, zero points in `zeros`.
fn per_channel(axis: u32, zeros: Option<u32>) -> Vec<u8> {
    let mut s = vec![0x02, 0x01, u8::from(zeros.is_none()), 0];
    s.extend(u32s(&[axis, 1, zeros.unwrap_or(u32::MAX)]));
    s.extend([0x03, 0, 0, 0]);
    quant(&s)
}

/// Per-block affine, scales of `scale_type` in buffer 1.
fn per_block(axis: u32, block: u32, zeros: Option<u32>, scale_type: u8) -> Vec<u8> {
    let mut s = vec![0x03, 0x01, u8::from(zeros.is_none()), 0];
    s.extend(u32s(&[axis, block, 1, zeros.unwrap_or(u32::MAX)]));
    s.extend([scale_type, 0, 0, 0]);
    quant(&s)
}

/// NF4 (0x04) or MXFP (0x05), scales in buffer 1.
fn blocked(tag: u8, axis: u32, block: u32) -> Vec<u8> {
    let mut s = vec![tag, 0x01, 0, 0];
    s.extend(u32s(&[axis, block, 1]));
    quant(&s)
}

/// `values` of `bits` each, packed LSB first (element-types.md).
fn pack(bits: u32, values: &[i32]) -> Vec<u8> {
    let mut out = vec![0u8; (values.len() * bits as usize).div_ceil(8)];
    for (i, &v) in values.iter().enumerate() {
        let v = (v as u32) & ((1 << bits) - 1);
        for b in 0..bits {
            let at = i * bits as usize + b as usize;
            out[at / 8] |= (((v >> b) & 1) as u8) << (at % 8);
        }
    }
    out
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Writes `d` as tensor "w" of a file in `dir`; its path.
fn file(dir: &Path, name: &str, d: Descriptor) -> std::path::PathBuf {
    let path = dir.join(format!("{name}.hrry"));
    fs::write(&path, File::new(vec![tensor("w", d)]).bytes()).unwrap();
    path
}

/// `ztfs cat --values` of tensor "w", as f32.
fn values(path: &Path) -> Result<Vec<f32>, String> {
    let out = ztfs(&[
        Path::new("cat"),
        Path::new("--values"),
        path,
        Path::new("w"),
    ]);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let b = out.stdout;
    Ok(b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

#[test]
fn every_scheme_gives_the_values_its_formula_gives() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let f16 = |bits: u16| bits.to_le_bytes();
    let mut cases: Vec<(&str, Descriptor, Vec<f32>)> = Vec::new();

    // Per-block, asymmetric, along axis 0 of int4 [3, 2] in blocks of 2:
    // the storage is [4, 2] (the last block padded); blocks are column
    // by column (outer = the column); f16 scales and the zero points
    // share buffer 1 as [scales | zero points].
    let storage = pack(4, &[1, -2, 3, 7, -8, 0, 0, 0]);
    let mut shared: Vec<u8> = [0x3C00, 0x3800, 0x4000, 0xB400]
        .iter()
        .flat_map(|&s| f16(s))
        .collect();
    shared.extend(i32s(&[1, 0, -1, 2]));
    let desc = dense(I4, &[3, 2], storage)
        .with_buffer(shared)
        .section(HAS_QUANTIZATION, per_block(0, 2, Some(1), 0x01));
    cases.push((
        "per-block-i4-padded-shared",
        desc,
        vec![0.0, -2.0, 2.0, 16.0, -4.0, 0.5],
    ));

    // Per-block, symmetric, bf16 scales 1.0 and 3.0 over u8 [4].
    let scales = [0x3F80u16, 0x4040].iter().flat_map(|&s| f16(s)).collect();
    let desc = dense(U8, &[4], vec![1, 2, 3, 4])
        .with_buffer(scales)
        .section(HAS_QUANTIZATION, per_block(0, 2, None, 0x02));
    cases.push(("per-block-bf16", desc, vec![1.0, 2.0, 9.0, 12.0]));

    // Per-channel, asymmetric, along axis 1 of int2 [2, 4]: zero points
    // in a buffer of their own.
    let desc = dense(I2, &[2, 4], pack(2, &[-2, -1, 0, 1, 1, 0, -1, -2]))
        .with_buffer(f32s(&[1.0, 2.0, 3.0, 4.0]))
        .with_buffer(i32s(&[0, 1, -1, 0]))
        .section(HAS_QUANTIZATION, per_channel(1, Some(2)));
    cases.push((
        "per-channel-i2",
        desc,
        vec![-2.0, -4.0, 3.0, 4.0, 1.0, -2.0, 0.0, -8.0],
    ));

    // Per-tensor over uint32: the difference is exact before it is f32
    // (4294967295 - 2147483647 = 2^31; 0 - 2147483647 rounds to -2^31).
    let storage = [u32::MAX, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let desc = dense(U32, &[2], storage).section(HAS_QUANTIZATION, per_tensor(1.0, i32::MAX));
    cases.push(("per-tensor-u32", desc, vec![2147483648.0, -2147483648.0]));

    // Per-tensor over int8, zero point -3.
    let desc = dense(I8, &[3], vec![0x80, 0, 0x7F]).section(HAS_QUANTIZATION, per_tensor(0.5, -3));
    cases.push(("per-tensor-i8", desc, vec![-62.5, 1.5, 65.0]));

    // NF4 over uint4 [16], one block, absmax 2: twice the spec's levels.
    let levels = [
        -1.0,
        -0.6961928009986877,
        -0.5250730514526367,
        -0.39491748809814453,
        -0.28444138169288635,
        -0.18477343022823334,
        -0.09105003625154495,
        0.0,
        0.07958029955625534,
        0.16093020141124725,
        0.24611230194568634,
        0.33791524171829224,
        0.44070982933044434,
        0.5626170039176941,
        0.7229568362236023,
        1.0,
    ];
    let desc = dense(U4, &[16], pack(4, &(0..16).collect::<Vec<_>>()))
        .with_buffer(f32s(&[2.0]))
        .section(HAS_QUANTIZATION, blocked(0x04, 0, 16));
    cases.push((
        "nf4",
        desc,
        levels.iter().map(|&l: &f64| 2.0 * l as f32).collect(),
    ));

    // MXFP4 (float4_e2m1) [32], scale 2^(128-127) = 2.
    let e2m1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let codes: Vec<i32> = (0..16).chain((0..16).rev()).collect();
    let want = codes
        .iter()
        .map(|&c| {
            2.0 * if c >= 8 {
                -e2m1[(c - 8) as usize]
            } else {
                e2m1[c as usize]
            }
        })
        .collect();
    let desc = dense(F4E2M1, &[32], pack(4, &codes))
        .with_buffer(vec![0x80])
        .section(HAS_QUANTIZATION, blocked(0x05, 0, 32));
    cases.push(("mxfp4", desc, want));

    // MXFP6 (float6_e3m2) [16], scale 0.5: a subnormal (1/4 × 2^-2), 16,
    // -0.25 and 0.875.
    let codes: Vec<i32> = [0b000001, 0b011100, 0b100100, 0b001011].repeat(4);
    let want = [0.0625f32, 16.0, -0.25, 0.875]
        .repeat(4)
        .iter()
        .map(|v| v * 0.5)
        .collect();
    let desc = dense(F6E3M2, &[16], pack(6, &codes))
        .with_buffer(vec![0x7E])
        .section(HAS_QUANTIZATION, blocked(0x05, 0, 16));
    cases.push(("mxfp6-e3m2", desc, want));

    // MXFP8 e5m2 [16] (the top byte of an f16), scale 1: 1, -2, 2^-16, 57344.
    let desc = dense(F8E5M2, &[16], [0x3C, 0xC0, 0x01, 0x7B].repeat(4))
        .with_buffer(vec![0x7F])
        .section(HAS_QUANTIZATION, blocked(0x05, 0, 16));
    cases.push((
        "mxfp8-e5m2",
        desc,
        [1.0, -2.0, 2f32.powi(-16), 57344.0].repeat(4),
    ));

    // MXINT4 [16], scale 4: -8..7 times 4.
    let desc = dense(I4, &[16], pack(4, &(-8..8).collect::<Vec<_>>()))
        .with_buffer(vec![0x81])
        .section(HAS_QUANTIZATION, blocked(0x05, 0, 16));
    cases.push(("mxint4", desc, (-8..8).map(|v| 4.0 * v as f32).collect()));

    for (name, desc, want) in cases {
        let path = file(dir, name, desc);
        let got = values(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, want, "{name}");
        // Through a mount: data.npy holds them, in the tensor's shape.
        let m = Mount::new(&path, &[]);
        let npy = fs::read(m.join("w/data.npy")).unwrap();
        let payload: Vec<f32> = npy[npy.len() - want.len() * 4..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(payload, want, "{name}: data.npy");
        let meta = meta(&m.join("w"));
        assert!(
            meta["values"]["dequantized_from"]
                .text()
                .starts_with("hurray "),
            "{name}"
        );
    }

    // e4m3's NaN (0x7F) is a NaN value.
    let desc = dense(F8E4M3, &[16], vec![0x7F; 16])
        .with_buffer(vec![0x7F])
        .section(HAS_QUANTIZATION, blocked(0x05, 0, 16));
    assert!(values(&file(dir, "e4m3-nan", desc))
        .unwrap()
        .iter()
        .all(|v| v.is_nan()));
}

#[test]
fn parameters_the_spec_forbids_fail_the_read_that_meets_them() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let cases = [
        (
            "zero-scale",
            dense(U8, &[4], vec![1, 2, 3, 4])
                .with_buffer(f32s(&[1.0, 0.0]))
                .section(HAS_QUANTIZATION, per_block(0, 2, None, 0x03)),
            "not finite and non-zero",
        ),
        (
            "negative-absmax",
            dense(U4, &[16], vec![0; 8])
                .with_buffer(f32s(&[-1.0]))
                .section(HAS_QUANTIZATION, blocked(0x04, 0, 16)),
            "not finite and non-negative",
        ),
        (
            "zero-point-out-of-range",
            dense(U8, &[2], vec![1, 2])
                .with_buffer(f32s(&[1.0, 1.0]))
                .with_buffer(i32s(&[0, 300]))
                .section(HAS_QUANTIZATION, per_channel(0, Some(2))),
            "outside 0..=255",
        ),
    ];
    for (name, desc, said) in cases {
        let path = file(dir, name, desc);
        let err = values(&path).expect_err(name);
        assert!(err.contains("\"w\"") && err.contains(said), "{name}: {err}");
        let m = Mount::new(&path, &[]);
        let e = fs::read(m.join("w/data.npy")).expect_err(name);
        assert_eq!(e.raw_os_error(), Some(libc::EIO), "{name}");
    }
}
