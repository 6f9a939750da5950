//! The dequantizers of `ztfs::decode::dequant` on any block bytes: the
//! first byte picks a block type, the rest are its blocks (whole ones,
//! then a cut one given alone, which must write nothing). Asserts no
//! panic, whole blocks accepted and cut ones refused; NaN and infinities
//! are values the format can give.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ztfs::decode::dequant::values::Values;
use ztfs::decode::dequant::{block, dequantize};

const TYPES: [&str; 25] = [
    "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1", "q8_k", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "tq1_0",
    "tq2_0", "mxfp4", "nvfp4", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m",
    "iq4_nl", "iq4_xs",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let b = block(TYPES[pick as usize % TYPES.len()]).expect("every listed type");
    let whole = rest.len() / b.bytes * b.bytes;
    let mut out = vec![0f32; whole / b.bytes * b.values];
    assert!(dequantize(b, &rest[..whole], &mut out), "whole blocks");
    if whole > 0 {
        assert!(!dequantize(b, &rest[..whole - 1], &mut out), "a cut block");
    }
    // The values by range are the same bytes: the whole, and a range cut
    // inside values at both ends.
    let name = TYPES[pick as usize % TYPES.len()];
    let v = Values::new(name, 0, whole as u64, out.len() as u64).expect("whole blocks");
    let want: Vec<u8> = out.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut got = vec![0u8; want.len()];
    v.read_into(&&rest[..whole], 0, &mut got).expect("the whole reads");
    assert!(got == want, "values by range");
    if want.len() > 6 {
        let mut part = vec![0u8; want.len() - 6];
        v.read_into(&&rest[..whole], 3, &mut part).expect("a cut range reads");
        assert!(part[..] == want[3..want.len() - 3], "a cut range");
    }
    // A kernel given a cut block writes nothing.
    let mut cut = vec![f32::from_bits(0x7fc0_1234); b.values];
    (b.dequantize)(&rest[whole..], &mut cut);
    assert!(cut.iter().all(|v| v.to_bits() == 0x7fc0_1234), "written from a cut block");
});
