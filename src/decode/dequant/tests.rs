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
/// type, of the lengths the sizes give, the narrowing vectors, and
/// nothing else.
#[test]
fn vectors_are_complete_and_nothing_stray() {
    let dir: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests/data/dequant"]
        .iter()
        .collect();
    let mut expected = ["sizes.txt", "narrow.f32", "narrow.f16", "narrow.bf16"]
        .map(String::from)
        .to_vec();
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

/// f16 and bf16 from f32 as numpy's `astype(float16)` and ml_dtypes'
/// `bfloat16` (tests/data/dequant/narrow.*, scripts/narrow-vectors.py):
/// every bit, NaNs included.
#[test]
fn narrowing_agrees_with_numpy_and_ml_dtypes() {
    use super::narrow::{bf16_bits, f16_bits, Float};
    let inputs = data("narrow.f32");
    let (f16s, bf16s) = (data("narrow.f16"), data("narrow.bf16"));
    assert!(inputs.len() > 4000 * 4);
    for (k, b) in inputs.chunks_exact(4).enumerate() {
        let v = f32::from_le_bytes(b.try_into().unwrap());
        let want16 = u16::from_le_bytes([f16s[2 * k], f16s[2 * k + 1]]);
        let want_bf = u16::from_le_bytes([bf16s[2 * k], bf16s[2 * k + 1]]);
        assert_eq!(f16_bits(v), want16, "f16 of {:#010x}", v.to_bits());
        assert_eq!(bf16_bits(v), want_bf, "bf16 of {:#010x}", v.to_bits());
    }
    let mut out = vec![0; inputs.len() / 2];
    Float::F16.narrow(&inputs, &mut out);
    assert_eq!(out, f16s);
    Float::Bf16.narrow(&inputs, &mut out);
    assert_eq!(out, bf16s);
}

/// The values by range: any byte range of a tensor's values (cut inside
/// a value, across blocks, the whole) is those bytes of gguf-py's output,
/// from a map and from a reader that fetches ranges alike, and one thread
/// or many.
#[test]
fn values_by_range_are_the_oracles_bytes() {
    use super::values::Values;
    for (name, b) in implemented() {
        let blocks = data(&format!("{name}.bin"));
        let want = data(&format!("{name}.f32"));
        // The blocks 7 bytes into a file, as a tensor is.
        let mut file = vec![0xAB; 7];
        file.extend_from_slice(&blocks);
        let count = (blocks.len() / b.bytes * b.values) as u64;
        let v = Values::new(&name, 7, blocks.len() as u64, count).unwrap();
        assert_eq!(v.len(), want.len() as u64);
        let len = want.len() as u64;
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut ranges = vec![(0, len), (1, len - 1), (len - 3, 3), (0, 0)];
        for _ in 0..64 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let a = seed % len;
            ranges.push((a, (seed >> 32) % (len - a + 1)));
        }
        let fetched = Fetch(&file);
        for (a, n) in ranges {
            let want = &want[a as usize..(a + n) as usize];
            let mut got = vec![0; n as usize];
            v.read_into(&file.as_slice(), a, &mut got).unwrap();
            assert!(same_bytes(&got, want), "{name} [{a}, +{n}) from memory");
            got.fill(0);
            v.read_into(&fetched, a, &mut got).unwrap();
            assert!(same_bytes(&got, want), "{name} [{a}, +{n}) fetched");
            got.fill(0);
            v.read_parallel(&fetched, a, &mut got).unwrap();
            assert!(same_bytes(&got, want), "{name} [{a}, +{n}) in parallel");
        }
        let mut one = [0u8; 1];
        assert!(v.read_into(&file.as_slice(), len, &mut one).is_err());
        assert!(
            v.read_into(&&file[..file.len() - 1], 0, &mut one).is_err(),
            "{name}: a cut file"
        );
    }
    assert!(Values::new("q4_0", 0, 18, 33).is_err(), "not whole blocks");
    assert!(
        Values::new("q4_0", 0, 17, 32).is_err(),
        "bytes not the blocks'"
    );
    assert!(Values::new("f32", 0, 4, 1).is_err(), "not a block type");
}

/// Bytes equal, except that a NaN's bits need only be a NaN off x86-64
/// (see [`same`]).
fn same_bytes(got: &[u8], want: &[u8]) -> bool {
    got == want || !cfg!(target_arch = "x86_64")
}

/// A file read by range requests: [`Ranges::in_memory`] says nothing.
struct Fetch<'a>(&'a [u8]);

impl crate::format::Ranges for Fetch<'_> {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn get(&self, offset: u64, len: u64) -> crate::error::Result<std::borrow::Cow<'_, [u8]>> {
        let s = self.0;
        s.get(offset as usize..(offset + len) as usize)
            .map(|b| std::borrow::Cow::Owned(b.to_vec()))
            .ok_or_else(|| crate::error::Error::Unsupported("past the end".into()))
    }
}
