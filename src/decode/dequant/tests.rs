//! The kernels against gguf-py's output (tests/data/dequant, written by
//! scripts/dequant-vectors.py), and against arbitrary bytes.

use super::{block, dequantize, f16, Block};
use std::path::PathBuf;

fn data(name: &str) -> Vec<u8> {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests/data/dequant", name]
        .iter()
        .collect();
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// (name, values, bytes) of every type in the vectors, from gguf-py's
/// GGML_QUANT_SIZES.
fn sizes() -> Vec<(String, usize, usize)> {
    let text = String::from_utf8(data("sizes.txt")).unwrap();
    text.lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect()
}

/// Every type in the vectors: all of gguf-py's quantized block types.
fn implemented() -> Vec<(String, Block)> {
    sizes()
        .into_iter()
        .map(|(name, _, _)| {
            let b = block(&name).unwrap_or_else(|| panic!("{name} has no block type"));
            (name, b)
        })
        .collect()
}

#[test]
fn block_sizes_agree_with_gguf_py() {
    for (name, values, bytes) in sizes() {
        let b = block(&name).unwrap_or_else(|| panic!("{name} has no block type"));
        assert_eq!((b.values, b.bytes), (values, bytes), "{name}");
    }
    assert!(block("f32").is_none() && block("Q4_0").is_none() && block("").is_none());
}

/// Whether a value is the oracle's. The vectors were made on x86-64, whose
/// NaN rules the kernels share with numpy there (a NaN operand is returned
/// quieted, the first of two; inf × 0 gives the default NaN 0xFFC00000).
/// Other targets make other NaNs (Arm's default NaN is 0x7FC00000, as
/// numpy's would be on Arm), so there a NaN need only be a NaN.
fn same(got: f32, want: u32) -> bool {
    got.to_bits() == want
        || (!cfg!(target_arch = "x86_64") && got.is_nan() && f32::from_bits(want).is_nan())
}

/// Bit for bit, NaN payloads and signs included, in debug and release
/// builds alike (the optimizer may not change a NaN the kernels return).
#[test]
fn dequantize_is_bit_exact_with_gguf_py() {
    let mut failures = Vec::new();
    for (name, b) in implemented() {
        let blocks = data(&format!("{name}.bin"));
        let want: Vec<u32> = data(&format!("{name}.f32"))
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let mut got = vec![0f32; want.len()];
        assert!(dequantize(b, &blocks, &mut got), "{name}");
        let bad: Vec<String> = got
            .iter()
            .zip(&want)
            .enumerate()
            .filter(|(_, (g, w))| !same(**g, **w))
            .take(4)
            .map(|(i, (g, w))| format!("[{i}] {:#010x} want {w:#010x}", g.to_bits()))
            .collect();
        if !bad.is_empty() {
            failures.push(format!("{name}: {}", bad.join(", ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A seeded xorshift64, for bytes that need no distribution.
struct XorShift(u64);

impl XorShift {
    fn fill(&mut self, buf: &mut [u8]) {
        for x in buf {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            *x = self.0 as u8;
        }
    }
}

#[test]
fn kernels_never_panic_on_arbitrary_bytes() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    for (name, b) in implemented() {
        let mut blocks = vec![0u8; b.bytes * 64];
        let mut out = vec![0f32; b.values * 64];
        for _ in 0..64 {
            rng.fill(&mut blocks);
            assert!(dequantize(b, &blocks, &mut out), "{name}");
        }
        // All-ones and all-zero bytes: the largest indices and shifts.
        for fill in [0x00, 0xFF] {
            blocks.fill(fill);
            assert!(dequantize(b, &blocks, &mut out), "{name}");
        }
        // Wrong lengths are refused, and a kernel given them writes nothing.
        assert!(!dequantize(b, &blocks[1..], &mut out), "{name}");
        assert!(!dequantize(b, &blocks, &mut out[1..]), "{name}");
        assert!(dequantize(b, &[], &mut []), "{name}");
        out[0] = 7.0;
        (b.dequantize)(&blocks[..1], &mut out[..1]);
        assert_eq!(out[0], 7.0, "{name}");
        // A hand-made Block whose lengths disagree with its kernel.
        let odd = Block {
            values: b.values * 2,
            ..b
        };
        let mut twice = vec![7f32; out.len() * 2];
        assert!(dequantize(odd, &blocks, &mut twice), "{name}");
        assert!(twice.iter().all(|&x| x == 7.0), "{name}");
    }
}

#[test]
fn f16_is_numpys_conversion() {
    assert_eq!(f16(0x3C00), 1.0);
    assert_eq!(f16(0xC000), -2.0);
    assert_eq!(f16(0x0001).to_bits(), 0x3380_0000);
    assert_eq!(f16(0x8000).to_bits(), 0x8000_0000);
    assert_eq!(f16(0x7BFF), 65504.0);
    assert_eq!(f16(0xFC00), f32::NEG_INFINITY);
    // numpy keeps a signalling NaN's payload and does not quiet it.
    assert_eq!(f16(0x7C01).to_bits(), 0x7F80_2000);
    assert_eq!(f16(0xFE05).to_bits(), 0xFFC0_A000);
}

/// The vector directory holds sizes.txt and a .bin and .f32 per listed
/// type, of the lengths the sizes give, and nothing else.
#[test]
fn vectors_are_complete_and_nothing_stray() {
    let dir: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests/data/dequant"]
        .iter()
        .collect();
    let mut expected = vec!["sizes.txt".to_string()];
    for (name, values, bytes) in sizes() {
        let n = data(&format!("{name}.bin")).len();
        assert!(n > 0 && n.is_multiple_of(bytes), "{name}.bin is {n} bytes");
        let f = data(&format!("{name}.f32")).len();
        assert_eq!(f, n / bytes * values * 4, "{name}.f32");
        expected.extend([format!("{name}.bin"), format!("{name}.f32")]);
    }
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    expected.sort();
    assert_eq!(found, expected);
}

/// An IQ sign bit multiplies by −1 as numpy does: a NaN keeps its sign
/// (x86's multiply returns the NaN operand), a number is negated.
#[test]
fn iq_sign_leaves_a_nan_as_it_is() {
    // IQ2_XXS block: d = NaN, first group's signs index 1 (0x81: values
    // 0 and 7 negative), scale 0.
    let mut b = [0u8; 66];
    b[..2].copy_from_slice(&0x7E00u16.to_le_bytes());
    b[6] = 1;
    let mut out = [0f32; 256];
    super::iquants::iq2_xxs(&b, &mut out);
    assert_eq!(out[0].to_bits(), 0x7FC0_0000);
    assert_eq!(out[1].to_bits(), 0x7FC0_0000);
    b[..2].copy_from_slice(&0x3C00u16.to_le_bytes());
    super::iquants::iq2_xxs(&b, &mut out);
    // d × 0.5 × 0.25 × 8 = 1.
    assert_eq!((out[0], out[1], out[7]), (-1.0, 1.0, -1.0));
}

/// Q8_1 and Q8_K, which gguf-py does not dequantize, from ggml's
/// definition of their blocks (`block_q8_1`: f16 d, f16 s, 32 i8;
/// `block_q8_K`: f32 d, 256 i8, 16 i16 sums), on blocks made by hand:
/// each value is d × q, and the sums (s, bsums) are not values.
#[test]
fn q8_1_and_q8_k_are_ggmls_definition() {
    let q8_1 = block("q8_1").unwrap();
    assert_eq!((q8_1.values, q8_1.bytes), (32, 36));
    let mut b = vec![0x00, 0x38, 0xAB, 0xCD]; // d = 0.5 (f16 0x3800), s = garbage
    b.extend((0..32).map(|i| (i as i8 - 16) as u8));
    let mut out = [0f32; 32];
    assert!(dequantize(q8_1, &b, &mut out));
    for (i, v) in out.iter().enumerate() {
        assert_eq!(*v, (i as f32 - 16.0) * 0.5, "q8_1 value {i}");
    }
    let q8_k = block("q8_k").unwrap();
    assert_eq!((q8_k.values, q8_k.bytes), (256, 292));
    let mut b = 0.25f32.to_le_bytes().to_vec();
    b.extend((0..256).map(|i| (i as u8).wrapping_add(128)));
    b.extend([0x5A; 32]); // bsums: not values
    let mut out = [0f32; 256];
    assert!(dequantize(q8_k, &b, &mut out));
    for (i, v) in out.iter().enumerate() {
        assert_eq!(
            *v,
            f32::from((i as u8).wrapping_add(128) as i8) * 0.25,
            "q8_k value {i}"
        );
    }
    // A NaN scale gives NaN values, as the other kernels.
    b[..4].copy_from_slice(&f32::NAN.to_le_bytes());
    assert!(dequantize(q8_k, &b, &mut out));
    assert!(out.iter().all(|v| v.is_nan()));
}
