//! Descriptor rejects (metadata.md, buffer-protocol.md, element-types.md,
//! quantization/): fixed header, type, buffer handles, quantization,
//! shard, statistics, extension type, shape arithmetic.

use super::valid::{
    blocked, extension_section, per_block, per_channel, per_tensor, quant, stats_section,
};
use super::writer::{
    dense, f32s, u64s, Descriptor, HAS_EXTENSION_TYPE, HAS_QUANTIZATION, HAS_SHARD, HAS_STATISTICS,
};
use super::{one, packed, reject, with_desc, Case, F32, I8, U8};

pub fn cases() -> Vec<Case> {
    [fixed(), types(), buffers(), quants(), sections()]
        .into_iter()
        .flatten()
        .collect()
}

fn fixed() -> Vec<Case> {
    let d = "HurrayDescriptor";
    vec![
        reject("descriptor-magic", d, with_desc(|d| d.magic = *b"HRRX")),
        reject("descriptor-major-0", d, with_desc(|d| d.major = 0)),
        reject("descriptor-major-2", d, with_desc(|d| d.major = 2)),
        // Declared (and indexed) length 19: below the fixed header's 20.
        reject(
            "descriptor-length-19",
            d,
            with_desc(|d| d.length = Some(19)),
        ),
        // Declared 40 while the fields take 53; the index says 53, and the
        // index is checked against the descriptor's own length first.
        reject(
            "descriptor-length-short",
            "HurrayIndex",
            with_desc(|d| d.length = Some(40)),
        ),
        reject(
            "descriptor-trailing-bytes-minor0",
            d,
            with_desc(|d| d.extra = vec![0; 8]),
        ),
        reject(
            "descriptor-flags-reserved",
            d,
            with_desc(|d| d.flags |= 1 << 5),
        ),
        reject("descriptor-rank-65", d, one(dense(U8, &[1; 65], vec![1]))),
    ]
}

fn types() -> Vec<Case> {
    let t = "HurrayType";
    let ext = |tag: u8, width: u32, packing: u8, bytes: usize| {
        let section = extension_section(width, packing);
        one(dense(tag, &[6], vec![0; bytes]).section(HAS_EXTENSION_TYPE, section))
    };
    vec![
        reject("type-tag-0x47", t, with_desc(|d| d.type_tag = 0x47)),
        reject("type-tag-0x00", t, with_desc(|d| d.type_tag = 0x00)),
        reject("type-tag-0xff", t, with_desc(|d| d.type_tag = 0xFF)),
        reject("type-tag-0x80", t, with_desc(|d| d.type_tag = 0x80)),
        reject("type-tag-0x05", t, with_desc(|d| d.type_tag = 0x05)),
        reject(
            "type-extension-without-section",
            t,
            with_desc(|d| d.type_tag = 0xF0),
        ),
        reject("type-extension-section-on-builtin", t, ext(0x11, 8, 1, 6)),
        // A 3-bit private type: sub-byte widths must be 1, 2 or 4.
        reject("type-extension-bit-width-3", t, ext(0xF0, 3, 2, 3)),
        reject("type-extension-packing-mismatch", t, ext(0xF0, 4, 1, 3)),
    ]
}

fn buffers() -> Vec<Case> {
    let b = "HurrayBuffer";
    let handle = |edit: fn(&mut super::writer::Buffer)| with_desc(|d| edit(&mut d.buffers[0]));
    vec![
        reject("buffer-alignment-48", b, handle(|h| h.alignment = 48)),
        reject("buffer-alignment-32", b, handle(|h| h.alignment = 32)),
        reject("buffer-alignment-0", b, handle(|h| h.alignment = 0)),
        reject("buffer-device-ff", b, handle(|h| h.device = 0xFF)),
        reject(
            "buffer-device-reserved-0x09",
            b,
            handle(|h| h.device = 0x09),
        ),
        reject("buffer-sync-mode-on-cpu", b, handle(|h| h.sync_mode = 1)),
        reject(
            "buffer-memory-class-0x04",
            b,
            handle(|h| h.memory_class = 0x04),
        ),
        reject(
            "buffer-memory-class-ff",
            b,
            handle(|h| h.memory_class = 0xFF),
        ),
        // CPU has no PEER memory class (buffer-protocol.md § Memory Class).
        reject(
            "buffer-memory-class-peer-on-cpu",
            b,
            handle(|h| h.memory_class = 0x03),
        ),
        reject("buffer-reserved-byte", b, handle(|h| h.reserved = 1)),
        // f32 [4] in 15 bytes; the index agrees with the handle.
        reject("buffer-size-short", b, one(dense(F32, &[4], vec![0; 15]))),
        reject("buffer-size-long", b, one(dense(F32, &[4], vec![0; 17]))),
        reject(
            "buffer-byte-offset-past-buffer",
            b,
            with_desc(|d| d.byte_offset = 17),
        ),
        // Both buffers of a quantized tensor must sit on one device.
        reject("buffer-device-mismatch", b, {
            let mut d = per_channel_desc(0);
            d.buffers[1].device = 0x01;
            one(d)
        }),
    ]
}

/// i8 `[2, 4]`, per-channel along `axis`, two f32 scales.
fn per_channel_desc(axis: u32) -> Descriptor {
    dense(I8, &[2, 4], vec![1; 8])
        .with_buffer(f32s(&[0.5, 0.25]))
        .section(HAS_QUANTIZATION, per_channel(axis))
}

fn quants() -> Vec<Case> {
    let q = "HurrayQuant";
    let i8x8 = || dense(I8, &[8], vec![1; 8]);
    let with_scheme = |scheme: &[u8]| one(i8x8().section(HAS_QUANTIZATION, quant(scheme)));
    let mut per_tensor_v2 = per_tensor(0.5, 0);
    per_tensor_v2[5] = 2;
    let mut per_tensor_flags = per_tensor(0.5, 0);
    per_tensor_flags[6] = 1;
    let mut per_channel_scales_short = per_channel_desc(0);
    per_channel_scales_short.buffers[1].data.truncate(4);
    per_channel_scales_short.buffers[1].size = 4;
    let mut per_channel_missing_scales = per_channel_desc(0);
    per_channel_missing_scales.buffers.pop();
    vec![
        reject("quant-scheme-0x00", q, with_scheme(&[0x00, 0x01, 0, 0])),
        reject("quant-scheme-0xff", q, with_scheme(&[0xFF, 0x01, 0, 0])),
        reject(
            "quant-version-2",
            q,
            one(i8x8().section(HAS_QUANTIZATION, per_tensor_v2)),
        ),
        reject(
            "quant-flags-reserved",
            q,
            one(i8x8().section(HAS_QUANTIZATION, per_tensor_flags)),
        ),
        reject(
            "quant-per-tensor-scale-0",
            q,
            one(i8x8().section(HAS_QUANTIZATION, per_tensor(0.0, 0))),
        ),
        reject(
            "quant-per-tensor-scale-nan",
            q,
            one(i8x8().section(HAS_QUANTIZATION, per_tensor(f32::NAN, 0))),
        ),
        reject("quant-per-tensor-storage-f32", q, {
            one(dense(F32, &[2], f32s(&[1.0, 2.0])).section(HAS_QUANTIZATION, per_tensor(0.5, 0)))
        }),
        reject("quant-per-tensor-zero-point-past-u8", q, {
            one(dense(U8, &[8], vec![1; 8]).section(HAS_QUANTIZATION, per_tensor(0.5, 256)))
        }),
        reject(
            "quant-per-channel-axis-out-of-range",
            q,
            one(per_channel_desc(2)),
        ),
        reject(
            "quant-per-channel-scales-short",
            q,
            one(per_channel_scales_short),
        ),
        reject(
            "quant-per-channel-scale-buffer-missing",
            q,
            one(per_channel_missing_scales),
        ),
        reject("quant-per-block-block-size-3", q, {
            let d = dense(U8, &[2, 6], vec![1; 12]).with_buffer(f32s(&[1.0; 4]));
            one(d.section(HAS_QUANTIZATION, per_block(1, 3)))
        }),
        reject("quant-nf4-storage-u8", q, {
            let d = dense(U8, &[64], vec![1; 64]).with_buffer(f32s(&[1.0]));
            one(d.section(HAS_QUANTIZATION, blocked(0x04, 0, 64)))
        }),
        reject("quant-nf4-block-size-past-axis", q, {
            let d = dense(0x49, &[64], packed(4, 64)).with_buffer(f32s(&[1.0]));
            one(d.section(HAS_QUANTIZATION, blocked(0x04, 0, 128)))
        }),
        reject("quant-mxfp-block-size-8", q, {
            let d = dense(0x40, &[32], vec![1; 32]).with_buffer(vec![0x7F; 4]);
            one(d.section(HAS_QUANTIZATION, blocked(0x05, 0, 8)))
        }),
        reject("quant-mxfp-partial-block", q, {
            let d = dense(0x40, &[48], vec![1; 48]).with_buffer(vec![0x7F; 2]);
            one(d.section(HAS_QUANTIZATION, blocked(0x05, 0, 32)))
        }),
    ]
}

fn sections() -> Vec<Case> {
    let shard = |parent: &[u64], offset: &[u64]| {
        let s = [u64s(parent), u64s(offset)].concat();
        one(dense(F32, &[2, 4], f32s(&[1.0; 8])).section(HAS_SHARD, s))
    };
    let stats = |edit: fn(&mut Vec<u8>)| {
        let mut s = stats_section(0x3F);
        edit(&mut s);
        one(dense(F32, &[4], f32s(&[0.0, 1.0, 2.0, 3.0])).section(HAS_STATISTICS, s))
    };
    let st = "HurrayStats";
    let sh = "HurrayShape";
    vec![
        reject(
            "shard-out-of-parent",
            "HurrayShard",
            shard(&[4, 4], &[3, 0]),
        ),
        // offset + shape wraps around u64.
        reject(
            "shard-offset-overflow",
            "HurrayShard",
            shard(&[4, 4], &[u64::MAX, 0]),
        ),
        reject("stats-mask-reserved", st, stats(|s| s[0] |= 0x40)),
        reject("stats-reserved-nonzero", st, stats(|s| s[4] = 1)),
        reject("stats-reserved2-nonzero", st, stats(|s| s[71] = 1)),
        reject(
            "stats-stddev-negative",
            st,
            stats(|s| s[56..64].copy_from_slice(&(-1.0f64).to_le_bytes())),
        ),
        reject(
            "stats-nm-n-above-m",
            st,
            stats(|s| {
                s[64] = 4;
                s[65] = 2;
            }),
        ),
        // 2^32 x 2^32 x 2 elements: the count overflows u64.
        reject(
            "shape-overflow",
            sh,
            one(dense(U8, &[1 << 32, 1 << 32, 2], vec![0; 16])),
        ),
        // 2^62 f32 elements: the count fits, the byte size does not.
        reject(
            "shape-bytes-overflow",
            sh,
            one(dense(F32, &[1 << 62], vec![0; 16])),
        ),
    ]
}
