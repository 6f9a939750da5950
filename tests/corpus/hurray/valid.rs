//! Valid Hurray files: container features, element types, names, KV
//! values, optional descriptor sections, and the four decisions about what
//! the reference writers do that the spec does not say (HURRAY-NOTES.md).

use super::writer::{
    dense, f32s, tensor, u32s, u64s, File, Kv, Tail, HAS_EXTENSION_TYPE, HAS_INDEX_CRC32C,
    HAS_KV_METADATA, HAS_QUANTIZATION, HAS_SHARD, HAS_STATISTICS, SORTED_INDEX,
};
use super::{byte_size, empty, packed, usual, valid, w, Case, DATA, F32, I8, TYPES, U8};
use crate::corpus::Outcome;

pub fn cases() -> Vec<Case> {
    let mut cases = vec![
        valid("empty-file", File::new(Vec::new()).bytes()),
        valid("minimal", usual().bytes()),
        valid("conformance-basic", conformance_basic()),
        valid("types-all", types_all()),
        valid(
            "scalar",
            File::new(vec![tensor("s", dense(F32, &[], f32s(&[-42.0])))]).bytes(),
        ),
        valid("empty-tensor", File::new(vec![empty("e")]).bytes()),
        valid(
            "empty-tensor-rank-2",
            File::new(vec![tensor("e", dense(F32, &[0, 4], vec![]))]).bytes(),
        ),
        valid("dynamic-dimension", dynamic_dimension()),
        valid(
            "name-65535-bytes",
            File::new(vec![empty("n".repeat(65535))]).bytes(),
        ),
        valid("names-hostile", names_hostile()),
        valid("sorted-index", sorted_index()),
        valid("crc-unset", crc_unset()),
        valid(
            "kv-all-types",
            File::new(vec![w()]).kv(kv_all_types()).bytes(),
        ),
        valid(
            "kv-empty-section",
            File::new(Vec::new()).kv(Kv::new().encode()).bytes(),
        ),
        valid("alignment-4096", usual().bytes()),
        valid("alignment-65536", aligned(65536)),
        valid("first-descriptor-offset-128", first_descriptor_offset(128)),
        valid("container-minor-7", container_minor(7)),
        valid("count-hint-exact", count_hint(1)),
        valid("descriptor-minor-1-extra-bytes", descriptor_minor_1()),
        valid(
            "two-tensors",
            File::new(vec![w(), tensor("v", dense(F32, &[2], f32s(&[1.0, 2.0])))]).bytes(),
        ),
        valid("shard", shard()),
        valid("stats", stats()),
        valid("extension-type", extension_type()),
        valid("quant-per-tensor", quant_per_tensor()),
        valid("quant-per-channel", quant_per_channel()),
        valid("quant-per-block", quant_per_block()),
        valid("quant-nf4", quant_nf4()),
        valid("quant-mxfp", quant_mxfp()),
        // Valid to open: the scale byte is data, checked by --verify
        // (mxfp.md: 0x00 and 0xFF "MUST NOT appear in the scale buffer").
        Case {
            verify: Outcome::Reject("HurrayQuant"),
            ..valid("quant-mxfp-scale-0xff", quant_mxfp_scale(0xFF))
        },
        Case {
            verify: Outcome::Reject("HurrayQuant"),
            ..valid("quant-mxfp-scale-0x00", quant_mxfp_scale(0x00))
        },
    ];
    cases.extend(decisions());
    cases
}

/// The four decisions of HURRAY-NOTES.md, and what sits between the index
/// and the trailer: all must open.
fn decisions() -> Vec<Case> {
    let mut kv_unflagged = usual().kv(Kv::new().string("k", "v").encode());
    kv_unflagged.header.flags &= !HAS_KV_METADATA;
    let mut eight = usual();
    eight.tensors[0].tail = Tail::Eight;
    let two = || File::new(vec![w(), tensor("v", dense(F32, &[2], f32s(&[1.0, 2.0])))]);
    let mut full = usual();
    full.tensors[0].tail = Tail::Alignment;
    let mut two_full = two();
    two_full
        .tensors
        .iter_mut()
        .for_each(|t| t.tail = Tail::Alignment);
    vec![
        // HAS_KV_METADATA unset while the trailer locates a KV section: the
        // trailer is read anyway (both reference writers do this).
        valid("decision-kv-section-without-flag", kv_unflagged.bytes()),
        // Only 8-byte padding after a tensor's last buffer, so the next
        // descriptor (or the index) follows at the next 8-byte boundary:
        // the writer's default, named here for the decision.
        valid("decision-pad-8-after-last-buffer", eight.bytes()),
        valid("decision-pad-8-between-tensors", two().bytes()),
        // The spec's form: padding to the buffer alignment after the last
        // buffer, before the index and before the next descriptor.
        valid("padding-full-after-last-buffer", full.bytes()),
        valid("padding-full-between-tensors", two_full.bytes()),
        valid(
            "decision-composite-head-padded",
            super::layouts::composite_partition(true),
        ),
        // An empty tensor's buffer (0 bytes at the next alignment boundary)
        // starts where the next descriptor does.
        valid(
            "decision-empty-tensor-data-at-next-descriptor",
            File::new(vec![empty("e"), w()]).bytes(),
        ),
        // Both reference writers put the trailer right after the index, at
        // an offset that need not be a multiple of 8 (the index here is 43
        // bytes long).
        valid(
            "decision-trailer-right-after-index",
            File::new(vec![empty("abc")]).bytes(),
        ),
    ]
}

/// conformance/vectors/files/basic.hrry as hurray-io writes it: f32 `[2, 2]`
/// and i8 `[3]`, zero data, 8-byte padding after each tensor, a KV section
/// without HAS_KV_METADATA. Byte-identical to the vector.
pub fn conformance_basic() -> Vec<u8> {
    let mut weights = tensor("weights", dense(F32, &[2, 2], vec![0; 16]));
    let mut bias = tensor("bias", dense(I8, &[3], vec![0; 3]));
    weights.tail = Tail::Eight;
    bias.tail = Tail::Eight;
    let kv = Kv::new()
        .string("producer", "hurray-conformance")
        .i64("tensor_count", 2);
    let mut f = File::new(vec![weights, bias]).kv(kv.encode());
    f.header.flags = HAS_INDEX_CRC32C;
    f.bytes()
}

/// One tensor per element type, an odd element count (5) for each.
fn types_all() -> Vec<u8> {
    let tensors = TYPES
        .iter()
        .map(|&(name, tag, bits)| {
            let data = match (name, bits) {
                // 0x00 and 0xFF are not e8m0 values (element-types.md).
                ("f8-e8m0", _) => vec![0x7F; 5],
                (_, b) if b < 8 => packed(b, 5),
                (_, b) => (0..byte_size(b, 5)).map(|i| (i * 37 + 11) as u8).collect(),
            };
            tensor(name, dense(tag, &[5], data))
        })
        .collect();
    File::new(tensors).bytes()
}

/// A dynamic first dimension (`u64::MAX`): no size can be checked, no view.
fn dynamic_dimension() -> Vec<u8> {
    one_file(dense(F32, &[u64::MAX, 4], vec![0; 64]))
}

fn one_file(d: super::writer::Descriptor) -> Vec<u8> {
    super::one(d)
}

/// Names that are paths, dots, newlines, and 200 bytes of UTF-8, each an
/// empty tensor: a name is opaque bytes (file-format.md § Index Section).
fn names_hostile() -> Vec<u8> {
    let names: Vec<Vec<u8>> = vec![
        b"../x".to_vec(),
        b"a/b/c".to_vec(),
        b".".to_vec(),
        b"..".to_vec(),
        b"line\nbreak".to_vec(),
        b"meta.json".to_vec(),
        b"manifest.json".to_vec(),
        b"/abs".to_vec(),
        b"trailing/".to_vec(),
        "é".repeat(100).into_bytes(),
    ];
    File::new(names.into_iter().map(empty).collect()).bytes()
}

/// SORTED_INDEX with names in strictly increasing byte order, written in
/// another order in the tensor region.
fn sorted_index() -> Vec<u8> {
    let mut f = File::new(vec![empty("b"), empty("a"), empty("B"), empty("ab")]);
    f.header.flags |= SORTED_INDEX;
    f.with_index(|ix| ix.entries.sort_by(|a, b| a.name.cmp(&b.name)))
}

/// No HAS_INDEX_CRC32C and a zero CRC field.
fn crc_unset() -> Vec<u8> {
    let mut f = usual();
    f.header.flags &= !HAS_INDEX_CRC32C;
    f.bytes()
}

/// Every KV value type, the float specials, and arrays of each element
/// type, one of them empty.
fn kv_all_types() -> Vec<u8> {
    let strings = [
        super::writer::kv_string(b"a"),
        super::writer::kv_string(b""),
    ]
    .concat();
    Kv::new()
        .string("general.architecture", "llama")
        .string("empty.string", "")
        .i64("i64.min", i64::MIN)
        .u64("u64.max", u64::MAX)
        .f64("f64.half", 0.5)
        .f64("f64.nan", f64::NAN)
        .f64("f64.neg-zero", -0.0)
        .f64("f64.inf", f64::INFINITY)
        .f64("f64.neg-inf", f64::NEG_INFINITY)
        .bool("bool.true", true)
        .bool("bool.false", false)
        .bytes("bytes", &[0, 1, 0xFF])
        .array("array.string", 0x01, 2, &strings)
        .array(
            "array.i64",
            0x02,
            2,
            &[(-1i64).to_le_bytes(), 7i64.to_le_bytes()].concat(),
        )
        .array("array.u64", 0x03, 1, &u64s(&[u64::MAX]))
        .array(
            "array.f64",
            0x04,
            2,
            &[f64::NAN.to_le_bytes(), 1.5f64.to_le_bytes()].concat(),
        )
        .array("array.bool", 0x05, 3, &[1, 0, 1])
        .array("array.bytes", 0x06, 1, &super::writer::kv_string(b"\0\x01"))
        .array("array.empty", 0x02, 0, &[])
        .raw("key.é/with space", 0x05, &[1])
        .encode()
}

/// The usual tensor with `data_buffer_alignment` = `align`.
fn aligned(align: u32) -> Vec<u8> {
    let mut f = usual();
    f.header.alignment = align;
    f.bytes()
}

/// The usual tensor at `first_descriptor_offset` = `at`, zeros before it.
fn first_descriptor_offset(at: u64) -> Vec<u8> {
    let mut f = usual();
    f.header.first_descriptor_offset = at;
    f.bytes()
}

fn container_minor(minor: u8) -> Vec<u8> {
    let mut f = usual();
    f.header.minor = minor;
    f.bytes()
}

fn count_hint(n: u64) -> Vec<u8> {
    let mut f = usual();
    f.header.count_hint = n;
    f.bytes()
}

/// Descriptor minor version 1 with 8 bytes a 1.0 reader does not know,
/// inside the declared length (metadata.md § Version Compatibility).
fn descriptor_minor_1() -> Vec<u8> {
    let mut d = dense(U8, &[16], DATA.to_vec());
    d.minor = 1;
    d.extra = vec![0xAB; 8];
    one_file(d)
}

/// f32 `[2, 4]`, rows 2..4 of a `[4, 4]` parent.
fn shard() -> Vec<u8> {
    let section = [u64s(&[4, 4]), u64s(&[2, 0])].concat();
    one_file(dense(F32, &[2, 4], f32s(&[1.0; 8])).section(HAS_SHARD, section))
}

/// Every statistic valid and true of the data `[0, 1, 2, 3]`.
pub fn stats_section(mask: u32) -> Vec<u8> {
    let mut s = mask.to_le_bytes().to_vec();
    s.extend([0; 4]);
    s.extend(3u64.to_le_bytes());
    for v in [0.25, 0.0, 3.0, 3.0, 1.5, 1.25f64.sqrt()] {
        s.extend(f64::to_le_bytes(v));
    }
    s.extend([0, 0, 0, 0, 0, 0, 0, 0]);
    s
}

fn stats() -> Vec<u8> {
    let d = dense(F32, &[4], f32s(&[0.0, 1.0, 2.0, 3.0]));
    one_file(d.section(HAS_STATISTICS, stats_section(0x3F)))
}

/// A private 16-bit float type (tag 0xF0) described inline.
pub fn extension_section(bit_width: u32, packing: u8) -> Vec<u8> {
    let mut s = bit_width.to_le_bytes().to_vec();
    s.extend([packing, 1, 0, 1, 5, 10, 0, 0]);
    s.extend(15u32.to_le_bytes());
    s.extend([1, 1, 0, 0]);
    s
}

fn extension_type() -> Vec<u8> {
    let d = dense(0xF0, &[3], vec![0x00, 0x3C, 0x00, 0x40, 0x00, 0xC0]);
    one_file(d.section(HAS_EXTENSION_TYPE, extension_section(16, 1)))
}

/// A quantization section: the u32 length, then the scheme bytes.
pub fn quant(scheme: &[u8]) -> Vec<u8> {
    [
        (scheme.len() as u32).to_le_bytes().to_vec(),
        scheme.to_vec(),
    ]
    .concat()
}

/// Per-tensor affine (16 bytes): scale, zero point.
pub fn per_tensor(scale: f32, zero_point: i32) -> Vec<u8> {
    let mut s = vec![0x01, 0x01, 0, 0];
    s.extend(scale.to_le_bytes());
    s.extend(zero_point.to_le_bytes());
    s.extend([0; 4]);
    quant(&s)
}

fn quant_per_tensor() -> Vec<u8> {
    let d = dense(I8, &[8], vec![1, 2, 3, 4, 0xFF, 0xFE, 0, 9]);
    one_file(d.section(HAS_QUANTIZATION, per_tensor(0.5, 0)))
}

/// Per-channel affine, symmetric, axis 0 of i8 `[2, 4]`: scales in buffer 1.
pub fn per_channel(axis: u32) -> Vec<u8> {
    let mut s = vec![0x02, 0x01, 1, 0];
    s.extend(u32s(&[axis, 1, u32::MAX]));
    s.extend([0x03, 0, 0, 0]);
    quant(&s)
}

fn quant_per_channel() -> Vec<u8> {
    let d = dense(I8, &[2, 4], vec![1, 2, 3, 4, 5, 6, 7, 8]).with_buffer(f32s(&[0.5, 0.25]));
    one_file(d.section(HAS_QUANTIZATION, per_channel(0)))
}

/// Per-block affine, symmetric, f32 scales in buffer 1.
pub fn per_block(axis: u32, block: u32) -> Vec<u8> {
    let mut s = vec![0x03, 0x01, 1, 0];
    s.extend(u32s(&[axis, block, 1, u32::MAX]));
    s.extend([0x03, 0, 0, 0]);
    quant(&s)
}

/// u8 `[2, 8]` in blocks of 4 along axis 1: four scales.
fn quant_per_block() -> Vec<u8> {
    let d = dense(U8, &[2, 8], (0..16).collect()).with_buffer(f32s(&[1.0, 2.0, 0.5, 4.0]));
    one_file(d.section(HAS_QUANTIZATION, per_block(1, 4)))
}

/// NF4 or MXFP (16 bytes): axis, block size, scale buffer 1.
pub fn blocked(tag: u8, axis: u32, block: u32) -> Vec<u8> {
    let mut s = vec![tag, 0x01, 0, 0];
    s.extend(u32s(&[axis, block, 1]));
    quant(&s)
}

/// NF4 over u4 `[2, 64]`, blocks of 64 along axis 1: two absmax scales.
fn quant_nf4() -> Vec<u8> {
    let d = dense(0x49, &[2, 64], packed(4, 128)).with_buffer(f32s(&[0.5, 2.0]));
    one_file(d.section(HAS_QUANTIZATION, blocked(0x04, 1, 64)))
}

/// MXFP8 (e4m3) `[32]`, one block of 32, one e8m0 scale.
fn quant_mxfp() -> Vec<u8> {
    quant_mxfp_scale(0x7F)
}

fn quant_mxfp_scale(scale: u8) -> Vec<u8> {
    let d = dense(0x40, &[32], (0..32).collect()).with_buffer(vec![scale]);
    one_file(d.section(HAS_QUANTIZATION, blocked(0x05, 0, 32)))
}
