//! The opaque layout family `gguf.<type>/1` (notes §3.6): one `data` part
//! of plain u8 holding ggml blocks verbatim, sized by the required
//! attributes `elems_per_block` and `block_bytes`. Its structural checks
//! run at open and give `LayoutRule`. An id outside the listed ggml types is
//! an unknown layout: structural access only, no rule applies.

use super::layout::{byte_ramp, Spec};
use super::{reject, valid, Case};

pub fn cases() -> Vec<Case> {
    vec![
        valid("gguf-q8-0", q8_0().bytes()),
        // One q4_K super-block of 256 elements in 144 bytes per row.
        valid(
            "gguf-q4-k",
            Spec::new("gguf.q4_k/1", &[2, 256])
                .attr("elems_per_block", 256u64)
                .attr("block_bytes", 144u64)
                .part("data", "u8", byte_ramp(288))
                .bytes(),
        ),
        // Breaks every rule of the family, none of which applies to it.
        valid(
            "gguf-unknown-type-structural",
            Spec::new("gguf.q99_x/1", &[3])
                .part("data", "u8", byte_ramp(5))
                .part("extra", "f32", vec![0; 4])
                .bytes(),
        ),
        reject(
            "gguf-elems-per-block-missing",
            "LayoutRule",
            q8_0().without_attr("elems_per_block").bytes(),
        ),
        reject(
            "gguf-block-bytes-missing",
            "LayoutRule",
            q8_0().without_attr("block_bytes").bytes(),
        ),
        // Would divide by zero.
        reject(
            "gguf-elems-per-block-0",
            "LayoutRule",
            q8_0().attr("elems_per_block", 0u64).bytes(),
        ),
        // 48 divides neither the 128 elements nor the last dimension (a
        // divisor of the last dimension divides the product, so the two
        // cannot break apart); 2 whole blocks would be 68 bytes.
        reject(
            "gguf-elems-per-block-not-dividing",
            "LayoutRule",
            q8_0()
                .attr("elems_per_block", 48u64)
                .data("data", byte_ramp(68))
                .bytes(),
        ),
        // 4 blocks of 0 bytes: the size equation holds for an empty part.
        reject(
            "gguf-block-bytes-0",
            "LayoutRule",
            q8_0()
                .attr("block_bytes", 0u64)
                .data("data", Vec::new())
                .bytes(),
        ),
        reject(
            "gguf-size-mismatch",
            "LayoutRule",
            q8_0().data("data", byte_ramp(135)).bytes(),
        ),
        // 128 elements, 4 whole blocks, but rows of 2 elements.
        reject(
            "gguf-last-dim-not-divisible",
            "LayoutRule",
            q8_0().shape(&[64, 2]).bytes(),
        ),
        reject(
            "gguf-two-parts",
            "LayoutRule",
            q8_0().part("extra", "u8", byte_ramp(4)).bytes(),
        ),
        reject(
            "gguf-part-not-data",
            "LayoutRule",
            q8_0()
                .without("data")
                .part("blocks", "u8", byte_ramp(136))
                .bytes(),
        ),
        reject(
            "gguf-data-not-u8",
            "LayoutRule",
            q8_0().dtype("data", "i8").bytes(),
        ),
        // A registered type over u8, so no dtype pin applies first.
        reject(
            "gguf-data-typed",
            "LayoutRule",
            q8_0().typed("data", "f8_e4m3fn").bytes(),
        ),
    ]
}

/// q8_0 `[2, 64]`: 4 blocks of 32 elements in 34 bytes each.
fn q8_0() -> Spec {
    Spec::new("gguf.q8_0/1", &[2, 64])
        .attr("elems_per_block", 32u64)
        .attr("block_bytes", 34u64)
        .part("data", "u8", byte_ramp(136))
}
