//! Dequantization of ggml's quantized block types (the tensor types GGUF
//! files store), bit for bit what gguf-py's `gguf.quants.dequantize` gives.
//!
//! A block type is a fixed number of bytes that decode to a fixed number of
//! f32 values. Each kernel reproduces gguf-py's numpy expression in f32 and
//! in its order of operations (scale times sub-scale first, then times the
//! quant, then minus the offset), so the results agree to the bit, not just
//! to a rounding; the vectors in `tests/data/dequant` are gguf-py's output.
//!
//! NaNs: numpy's f16 to f32 keeps a NaN's payload, and its f32 operations
//! return the NaN operand quieted (the first of two) or, for inf × 0 and
//! inf − inf, the target's default NaN. The kernels keep numpy's operand
//! order, and spell out the one place the optimizer would change a NaN
//! (a multiply by −1), so on x86-64 even NaN bits agree, in debug and
//! release builds.
//!
//! Contract: a kernel takes any bytes. A NaN or infinite f16 scale gives
//! NaN or infinite values (as numpy would), an index into a grid or a
//! value table is masked to the table's size, and nothing here panics or
//! allocates. This module knows nothing of GGUF's tensor infos: the caller
//! finds the blocks and their type name.
//!
//! Q8_1 and Q8_K, ggml's intermediate dot-product types, have no
//! dequantizer in gguf-py: theirs here is ggml's definition of the block
//! (each value d × q; the sums the blocks carry are not values), tested on
//! blocks made by hand. Not here: Q1_0 and Q2_0 (no definition in gguf-py,
//! too new for ggml's table here), and the plain element types (f32, f16,
//! bf16, the integers), which are views, not blocks.
//!
//! The kernels are split by family: [`legacy`] (Q4_0 .. Q8_1), [`kquants`]
//! (Q2_K .. Q8_K), [`ternary`] (TQ1_0, TQ2_0), [`fp4`] (MXFP4, NVFP4) and
//! [`iquants`] (the IQ types, their grids in `grids`).

pub mod fp4;
mod grids;
pub mod iquants;
pub mod kquants;
pub mod legacy;
pub mod narrow;
pub mod schemes;
pub mod ternary;
pub mod torch;
pub mod values;

#[cfg(test)]
mod tests;

/// One ggml block type: how many bytes a block takes, how many values it holds, and its dequantizer.
#[derive(Clone, Copy)]
pub struct Block {
    /// The type's lowercase ggml name.
    pub name: &'static str,
    /// Bytes one block takes.
    pub bytes: usize,
    /// Values one block decodes to.
    pub values: usize,
    /// Fills `out` (`values` long) from one block's bytes (`bytes` long);
    /// with other lengths it writes nothing.
    pub dequantize: fn(block: &[u8], out: &mut [f32]),
}

/// Every block type: (name, bytes, values, kernel).
const TABLE: [(&str, usize, usize, Kernel); 25] = [
    ("q4_0", 18, 32, |b, o| fixed(b, o, legacy::q4_0)),
    ("q4_1", 20, 32, |b, o| fixed(b, o, legacy::q4_1)),
    ("q5_0", 22, 32, |b, o| fixed(b, o, legacy::q5_0)),
    ("q5_1", 24, 32, |b, o| fixed(b, o, legacy::q5_1)),
    ("q8_0", 34, 32, |b, o| fixed(b, o, legacy::q8_0)),
    ("q8_1", 36, 32, |b, o| fixed(b, o, legacy::q8_1)),
    ("q2_k", 84, 256, |b, o| fixed(b, o, kquants::q2_k)),
    ("q3_k", 110, 256, |b, o| fixed(b, o, kquants::q3_k)),
    ("q4_k", 144, 256, |b, o| fixed(b, o, kquants::q4_k)),
    ("q5_k", 176, 256, |b, o| fixed(b, o, kquants::q5_k)),
    ("q6_k", 210, 256, |b, o| fixed(b, o, kquants::q6_k)),
    ("q8_k", 292, 256, |b, o| fixed(b, o, kquants::q8_k)),
    ("tq1_0", 54, 256, |b, o| fixed(b, o, ternary::tq1_0)),
    ("tq2_0", 66, 256, |b, o| fixed(b, o, ternary::tq2_0)),
    ("mxfp4", 17, 32, |b, o| fixed(b, o, fp4::mxfp4)),
    ("nvfp4", 36, 64, |b, o| fixed(b, o, fp4::nvfp4)),
    ("iq2_xxs", 66, 256, |b, o| fixed(b, o, iquants::iq2_xxs)),
    ("iq2_xs", 74, 256, |b, o| fixed(b, o, iquants::iq2_xs)),
    ("iq2_s", 82, 256, |b, o| fixed(b, o, iquants::iq2_s)),
    ("iq3_xxs", 98, 256, |b, o| fixed(b, o, iquants::iq3_xxs)),
    ("iq3_s", 110, 256, |b, o| fixed(b, o, iquants::iq3_s)),
    ("iq1_s", 50, 256, |b, o| fixed(b, o, iquants::iq1_s)),
    ("iq1_m", 56, 256, |b, o| fixed(b, o, iquants::iq1_m)),
    ("iq4_nl", 18, 32, |b, o| fixed(b, o, iquants::iq4_nl)),
    ("iq4_xs", 136, 256, |b, o| fixed(b, o, iquants::iq4_xs)),
];

/// The block type of ggml type `name` (lowercase ggml name as GGUF layouts spell it: "q4_0", "q4_k", "iq2_xxs", "tq1_0", "mxfp4", ...), if this module dequantizes it.
pub fn block(name: &str) -> Option<Block> {
    let &(name, bytes, values, dequantize) = TABLE.iter().find(|t| t.0 == name)?;
    Some(Block {
        name,
        bytes,
        values,
        dequantize,
    })
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} bytes, {} values)",
            self.name, self.bytes, self.values
        )
    }
}

/// A kernel as [`Block`] holds it.
type Kernel = fn(block: &[u8], out: &mut [f32]);

/// Dequantizes whole blocks: `blocks.len()` a multiple of the block's bytes, `out.len()` = blocks × values (panics never: returns false if the lengths disagree).
pub fn dequantize(b: Block, blocks: &[u8], out: &mut [f32]) -> bool {
    if b.bytes == 0 || b.values == 0 || !blocks.len().is_multiple_of(b.bytes) {
        return false;
    }
    if (blocks.len() / b.bytes).checked_mul(b.values) != Some(out.len()) {
        return false;
    }
    for (block, values) in blocks
        .chunks_exact(b.bytes)
        .zip(out.chunks_exact_mut(b.values))
    {
        (b.dequantize)(block, values);
    }
    true
}

/// Calls a kernel on fixed-size arrays, so that its indexing is checked
/// at compile time rather than per element; wrong lengths write nothing
/// (not even a debug assertion: a hand-made [`Block`] with lengths that
/// disagree with its kernel must not make [`dequantize`] panic).
fn fixed<const B: usize, const V: usize>(
    block: &[u8],
    out: &mut [f32],
    kernel: impl FnOnce(&[u8; B], &mut [f32; V]),
) {
    if let (Ok(block), Ok(out)) = (block.try_into(), out.try_into()) {
        kernel(block, out);
    }
}

/// The f32 of an IEEE half from its bits, exactly as numpy's
/// `float16.astype(float32)`: every half is an f32, and a NaN keeps its
/// sign and payload (a signalling NaN stays signalling; the first f32
/// operation on it quiets it, as in numpy).
pub(crate) fn f16(bits: u16) -> f32 {
    let sign = u32::from(bits & 0x8000) << 16;
    let exp = u32::from(bits >> 10) & 0x1F;
    let man = u32::from(bits & 0x3FF);
    let magnitude = match exp {
        0x1F => 0x7F80_0000 | man << 13,
        // Subnormal (or zero): man × 2^−24 is exact in f32.
        0 => (man as f32 * f32::from_bits(0x3380_0000)).to_bits(),
        _ => (exp + 112) << 23 | man << 13,
    };
    f32::from_bits(sign | magnitude)
}

/// The little-endian u16 at `at` of a block, 0 past its end (the kernels
/// read only inside their fixed-size blocks).
pub(crate) fn le16(block: &[u8], at: usize) -> u16 {
    match block.get(at..).and_then(|b| b.get(..2)) {
        Some(&[a, b]) => u16::from_le_bytes([a, b]),
        _ => 0,
    }
}

/// The little-endian u32 at `at` of a block, 0 past its end.
pub(crate) fn le32(block: &[u8], at: usize) -> u32 {
    match block.get(at..).and_then(|b| b.get(..4)) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    }
}
