//! One test (at least) per container rule, plus the container DECISIONs
//! of the module doc; helpers for `descriptor_rules`.

use super::builder::*;
use crate::error::Rule;
use crate::format::hurray::read_file;

#[track_caller]
pub(super) fn rejects(bytes: &[u8], rule: Rule) {
    match read_file(bytes) {
        Ok(_) => panic!("accepted, expected {rule}"),
        Err(e) => assert_eq!(e.rule(), Some(rule), "{e}"),
    }
}

#[track_caller]
pub(super) fn accepts(bytes: &[u8]) -> crate::format::hurray::File {
    read_file(bytes).unwrap_or_else(|e| panic!("{e}"))
}

/// A file holding one tensor with descriptor `d`.
pub(super) fn one(d: D) -> Built {
    file(vec![t("a.b", d)]).build()
}

#[track_caller]
pub(super) fn desc_rejects(d: D, rule: Rule) {
    rejects(&one(d).bytes, rule);
}

#[test]
fn the_builder_writes_valid_files() {
    let f = accepts(&one(D::f32x4()).bytes);
    assert_eq!(f.tensors[0].buffer_offsets, [4096]);
    let mut b = file(vec![t("x", D::f32x4()), t("y", D::dense(0x10, &[3], 3))]);
    b.kv = kv(&[entry("k", 1, &[1, 0, 0, 0, b'v'])]);
    b.flags = 1 | 2 | 4;
    accepts(&b.build().bytes);
}

#[test]
fn too_small() {
    rejects(&[0; 103], Rule::HurrayTooSmall);
}

#[test]
fn container_major_other_than_1() {
    for major in [0, 2] {
        let mut b = file(vec![t("a", D::f32x4())]);
        b.major = major;
        rejects(&b.build().bytes, Rule::HurrayVersion);
    }
}

#[test]
fn header_fields() {
    let mut bad = one(D::f32x4()).bytes;
    bad[10] = 1;
    rejects(&bad, Rule::HurrayHeader);
    let mut bad = one(D::f32x4()).bytes;
    bad[63] = 1;
    rejects(&bad, Rule::HurrayHeader);
    let mut b = file(vec![t("a", D::f32x4())]);
    b.flags = 8 | 4;
    rejects(&b.build().bytes, Rule::HurrayHeader);
    for a in [2048, 4096 * 3, 4 << 20, 0] {
        let mut bad = one(D::f32x4()).bytes;
        bad[16..20].copy_from_slice(&(a as u32).to_le_bytes());
        rejects(&bad, Rule::HurrayHeader);
    }
    for fdo in [56u64, 68] {
        let mut bad = one(D::f32x4()).bytes;
        bad[20..28].copy_from_slice(&fdo.to_le_bytes());
        rejects(&bad, Rule::HurrayHeader);
    }
    let mut bad = one(D::f32x4()).bytes;
    bad[0] = b'X';
    rejects(&bad, Rule::HurrayHeader);
}

#[test]
fn trailer_magic_and_reserved() {
    let mut bad = one(D::f32x4()).bytes;
    let n = bad.len();
    bad[n - 1] = b'Z';
    rejects(&bad, Rule::HurrayTrailer);
    let mut bad = one(D::f32x4()).bytes;
    bad[n - 8] = 1;
    rejects(&bad, Rule::HurrayTrailer);
}

#[test]
fn bounds() {
    let mut f = one(D::f32x4());
    let tr = f.trailer();
    f.bytes[tr..tr + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    rejects(&f.bytes, Rule::HurrayBounds);
    let mut f = one(D::f32x4());
    f.bytes[tr + 8..tr + 16].copy_from_slice(&1000u64.to_le_bytes());
    rejects(&f.bytes, Rule::HurrayBounds);
    // A KV section running into the trailer.
    let mut b = file(vec![t("a", D::f32x4())]);
    b.kv = kv(&[entry("k", 2, &[0; 8])]);
    let mut f = b.build();
    let tr = f.trailer();
    f.bytes[tr + 24..tr + 28].copy_from_slice(&1000u32.to_le_bytes());
    rejects(&f.bytes, Rule::HurrayBounds);
    // A descriptor past the end (index edited, CRC fixed).
    let mut f = one(D::f32x4());
    let at = f.index_offset as usize + 8 + 2 + 3;
    f.bytes[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    f.fix_crc();
    rejects(&f.bytes, Rule::HurrayBounds);
    // A buffer running past the trailer.
    let mut f = one(D::dense(0x11, &[16], 16));
    let (shape, size) = (f.desc(0, 20), f.desc(0, 37));
    f.bytes[shape..shape + 8].copy_from_slice(&(1u64 << 20).to_le_bytes());
    f.bytes[size..size + 8].copy_from_slice(&(1u64 << 20).to_le_bytes());
    rejects(&f.bytes, Rule::HurrayBounds);
}

#[test]
fn index_crc() {
    let mut f = one(D::f32x4());
    let tr = f.trailer();
    f.bytes[tr + 28] ^= 1;
    rejects(&f.bytes, Rule::HurrayIndexCrc);
    let mut b = file(vec![t("a", D::f32x4())]);
    b.flags = 0;
    let mut f = b.build();
    accepts(&f.bytes);
    let tr = f.trailer();
    f.bytes[tr + 28] = 1;
    rejects(&f.bytes, Rule::HurrayIndexCrc);
}

#[test]
fn index_structure() {
    let mut b = file(vec![t("a", D::f32x4())]);
    b.index_extra = vec![0];
    rejects(&b.build().bytes, Rule::HurrayIndex);
    let mut b = file(vec![t("a", D::f32x4())]);
    b.index_count = Some(u64::MAX);
    rejects(&b.build().bytes, Rule::HurrayIndex);
    b.index_count = Some(2);
    rejects(&b.build().bytes, Rule::HurrayIndex);
    // Entry flags, descriptor_length, data_length; a data_offset that is
    // not where placement puts buffer 0 is a placement error.
    let base = |f: &Built| f.index_offset as usize + 8 + 2 + 1;
    for (at, value, rule) in [
        (28usize, 1u64, Rule::HurrayIndex),
        (8, 60, Rule::HurrayIndex),
        (12, 8192, Rule::HurrayPlacement),
        (20, 17, Rule::HurrayIndex),
    ] {
        let mut f = file(vec![t("a", D::f32x4())]).build();
        let p = base(&f) + at;
        let width = if at == 8 || at == 28 { 4 } else { 8 };
        f.bytes[p..p + width].copy_from_slice(&value.to_le_bytes()[..width]);
        f.fix_crc();
        rejects(&f.bytes, rule);
    }
}

#[test]
fn names() {
    rejects(
        &file(vec![t("", D::f32x4())]).build().bytes,
        Rule::HurrayName,
    );
    let mut bad = t("a", D::f32x4());
    bad.name = vec![0xFF];
    rejects(&file(vec![bad]).build().bytes, Rule::HurrayName);
    rejects(
        &file(vec![t("a", D::f32x4()), t("a", D::f32x4())])
            .build()
            .bytes,
        Rule::HurrayName,
    );
    // Opaque: a slash and non-ASCII are fine, and so is a 65535-byte name.
    let long = "x".repeat(65535);
    accepts(
        &file(vec![
            t("a/b", D::f32x4()),
            t("é", D::f32x4()),
            t(&long, D::f32x4()),
        ])
        .build()
        .bytes,
    );
}

#[test]
fn sorted_index() {
    let mut b = file(vec![t("b", D::f32x4()), t("a", D::f32x4())]);
    b.flags = 2 | 4;
    rejects(&b.build().bytes, Rule::HurraySorted);
    b.tensors.swap(0, 1);
    accepts(&b.build().bytes);
    // A repeated name is a name error even when the order is wrong too.
    b.tensors.push(t("a", D::f32x4()));
    rejects(&b.build().bytes, Rule::HurrayName);
}

#[test]
fn kv_section() {
    let with = |entries: &[Vec<u8>]| {
        let mut b = file(vec![t("a", D::f32x4())]);
        b.kv = kv(entries);
        b.build().bytes
    };
    let f = accepts(&with(&[
        entry("s", 1, &[2, 0, 0, 0, b'h', b'i']),
        entry("i", 2, &(-3i64).to_le_bytes()),
        entry("u", 3, &u64::MAX.to_le_bytes()),
        entry("f", 4, &0.5f64.to_le_bytes()),
        entry("b", 5, &[1]),
        entry("y", 6, &[1, 0, 0, 0, 9]),
        entry("a", 7, &[5, 2, 0, 0, 0, 0, 1]),
    ]));
    assert_eq!(f.kv.len(), 7);
    for bad in [
        entry("t", 8, &[]),
        entry("t", 0xEF, &[]),
        entry("t", 0xF0, &[0; 8]),
        entry("t", 0xFF, &[]),
        entry("b", 5, &[2]),
        entry("a", 7, &[7, 0, 0, 0, 0]),
        entry("a", 7, &[5, 0xFF, 0xFF, 0xFF, 0xFF]),
        entry("s", 1, &[1, 0, 0, 0, 0xFF]),
        entry("", 5, &[0]),
    ] {
        rejects(&with(&[bad]), Rule::HurrayKv);
    }
    let mut trailing = kv(&[entry("b", 5, &[1])]);
    trailing.push(0);
    let mut b = file(vec![t("a", D::f32x4())]);
    b.kv = trailing;
    rejects(&b.build().bytes, Rule::HurrayKv);
    rejects(
        &with(&[entry("k", 5, &[1]), entry("k", 5, &[0])]),
        Rule::HurrayKvDuplicate,
    );
}

#[test]
fn kv_flag_and_offsets() {
    let mut b = file(vec![t("a", D::f32x4())]);
    b.flags = 1 | 4;
    rejects(&b.build().bytes, Rule::HurrayKv);
    let mut f = file(vec![t("a", D::f32x4())]).build();
    let tr = f.trailer();
    f.bytes[tr + 16] = 8;
    rejects(&f.bytes, Rule::HurrayKv);
}

#[test]
fn decision_kv_without_its_flag_is_read() {
    let mut b = file(vec![t("a", D::f32x4())]);
    b.kv = kv(&[entry("k", 5, &[1])]);
    assert_eq!(b.flags & 1, 0);
    assert_eq!(accepts(&b.build().bytes).kv.len(), 1);
}

#[test]
fn placement() {
    let mut b = file(vec![t("a", D::f32x4()), t("b", D::f32x4())]);
    b.tensors[1].gap = 8;
    rejects(&b.build().bytes, Rule::HurrayPlacement);
    let mut b = file(vec![t("a", D::f32x4())]);
    b.fdo = 128;
    let mut f = b.build();
    f.bytes[20..28].copy_from_slice(&64u64.to_le_bytes());
    rejects(&f.bytes, Rule::HurrayPlacement);
    // Two entries naming one descriptor overlap.
    let mut f = file(vec![t("a", D::f32x4()), t("b", D::f32x4())]).build();
    let second = f.index_offset as usize + 8 + (2 + 1 + 32) + 2 + 1;
    let first = f.desc_offsets[0].to_le_bytes();
    f.bytes[second..second + 8].copy_from_slice(&first);
    f.fix_crc();
    rejects(&f.bytes, Rule::HurrayPlacement);
    // The index not after the tensors.
    let mut f = one(D::f32x4());
    let tr = f.trailer();
    let io = f.index_offset;
    let mut moved = f.bytes[..io as usize].to_vec();
    moved.extend_from_slice(&[0; 16]);
    moved.extend_from_slice(&f.bytes[io as usize..]);
    let t2 = tr + 16;
    moved[t2..t2 + 8].copy_from_slice(&(io + 16).to_le_bytes());
    f.bytes = moved;
    rejects(&f.bytes, Rule::HurrayPlacement);
}

#[test]
fn padding_bytes() {
    let mut f = file(vec![t("a", D::f32x4()), t("b", D::f32x4())]).build();
    f.bytes[200] = 1; // between descriptor 0 and its buffer
    rejects(&f.bytes, Rule::HurrayPadding);
    let mut f = file(vec![t("a", D::f32x4()), t("b", D::f32x4())]).build();
    let end = f.buffer_offsets[0][0] as usize + 16;
    assert_eq!(f.desc_offsets[1] as usize, end);
    let mut f2 = file(vec![t("a", D::dense(0x10, &[3], 3)), t("b", D::f32x4())]).build();
    f2.bytes[f2.buffer_offsets[0][0] as usize + 4] = 1;
    rejects(&f2.bytes, Rule::HurrayPadding);
    f.bytes[63] = 0;
    accepts(&f.bytes);
}

#[test]
fn decisions_on_placement() {
    // Padding to the buffer alignment after a last buffer.
    let mut b = file(vec![t("a", D::f32x4()), t("b", D::f32x4())]);
    b.tensors[0].pad_to_alignment = true;
    b.tensors[1].pad_to_alignment = true;
    accepts(&b.build().bytes);
    // The trailer 8-aligned after the index, or right after it.
    let mut b = file(vec![t("abc", D::f32x4())]);
    let f = b.build();
    assert_ne!(f.trailer() % 8, 0);
    accepts(&f.bytes);
    b.trailer_aligned = true;
    accepts(&b.build().bytes);
    // An empty tensor's zero-size buffer sits where the next descriptor
    // starts when that is aligned.
    let mut b = file(vec![t("e", D::dense(0x03, &[0, 4], 0)), t("x", D::f32x4())]);
    b.tensors[0].pad_to_alignment = true;
    let f = b.build();
    assert_eq!(f.buffer_offsets[0][0], f.desc_offsets[1]);
    accepts(&f.bytes);
}
