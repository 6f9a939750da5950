//! Layouts (metadata.md § Layout-Specific Fields, layouts/): every dense
//! and sparse layout, block-paged and composites, valid and broken.

use super::writer::{
    dense, f32s, i64s, tensor, u32s, u64s, Descriptor, File, Tensor, HAS_COMPOSITE_MEMBER,
    HAS_SHARD,
};
use super::{one, reject, valid, Case, F16, F32, U8};

const HURRAY_LAYOUT: &str = "HurrayLayout";
const HURRAY_COMPOSITE: &str = "HurrayComposite";

pub fn cases() -> Vec<Case> {
    vec![
        valid("layout-column-major", one(column_major())),
        valid("layout-strided", one(strided(&[1, 3]))),
        // strided.md § Example: rows reversed, byte_offset at row 2.
        valid("layout-strided-negative", one(strided_negative())),
        valid("layout-tiled-partial-edge", one(tiled_partial())),
        valid("layout-tiled-nested", one(tiled_nested(1))),
        valid("layout-morton", one(morton(&[2, 2]))),
        valid("layout-hilbert", one(hilbert(2, 2))),
        valid("sparse-coo", one(coo())),
        valid("sparse-csr", one(csr(0x07))),
        valid("sparse-csc", one(csr(0x08))),
        valid("sparse-csf", one(csf(3))),
        valid("block-paged", one(block_paged(3))),
        valid("composite-partition", composite_partition(false)),
        valid("composite-overlay", composite_overlay()),
        valid("composite-group", composite_group(2, 2)),
        valid("composite-nested", composite_nested()),
        reject(
            "layout-tag-0x0c",
            HURRAY_LAYOUT,
            one(column_major().layout(0x0C, vec![])),
        ),
        reject(
            "layout-tag-0x00",
            HURRAY_LAYOUT,
            one(column_major().layout(0x00, vec![])),
        ),
        reject(
            "layout-scalar-column-major",
            HURRAY_LAYOUT,
            one(scalar_column_major()),
        ),
        reject(
            "layout-strided-scalar",
            HURRAY_LAYOUT,
            one(dense(F32, &[], f32s(&[1.0])).layout(0x03, vec![])),
        ),
        reject("layout-tiled-depth-9", HURRAY_LAYOUT, one(tiled_nested(8))),
        reject(
            "layout-tiled-tile-0",
            HURRAY_LAYOUT,
            one(tiled(&[0, 4], 0x01, 0x01, 192)),
        ),
        reject(
            "layout-tiled-outer-0x04",
            HURRAY_LAYOUT,
            one(tiled(&[2, 4], 0x04, 0x01, 192)),
        ),
        reject("layout-morton-bits-0", HURRAY_LAYOUT, one(morton(&[2, 0]))),
        reject(
            "layout-morton-shape-past-bits",
            HURRAY_LAYOUT,
            one(morton(&[1, 2])),
        ),
        reject(
            "layout-hilbert-rank-mismatch",
            HURRAY_LAYOUT,
            one(hilbert(2, 3)),
        ),
        reject("layout-hilbert-order-0", HURRAY_LAYOUT, one(hilbert(0, 2))),
        reject(
            "layout-dense-two-buffers",
            HURRAY_LAYOUT,
            one(column_major().with_buffer(vec![0; 64])),
        ),
        reject(
            "layout-coo-one-buffer",
            HURRAY_LAYOUT,
            one(coo_one_buffer()),
        ),
        reject("layout-csr-rank-3", HURRAY_LAYOUT, one(csr_rank_3())),
        reject("layout-csf-rank-2", HURRAY_LAYOUT, one(csf(2))),
        reject(
            "layout-block-paged-rank-2",
            HURRAY_LAYOUT,
            one(block_paged(2)),
        ),
        reject("composite-torn", HURRAY_COMPOSITE, composite_torn()),
        reject(
            "composite-open-count",
            HURRAY_COMPOSITE,
            composite_group(u32::MAX, 2),
        ),
        reject("composite-rule-0x00", HURRAY_LAYOUT, composite_rule(0x00)),
        reject(
            "composite-partition-gap",
            HURRAY_COMPOSITE,
            composite_partition_gap(),
        ),
        reject(
            "composite-partition-member-section",
            HURRAY_COMPOSITE,
            composite_partition_member_section(),
        ),
        reject(
            "composite-overlay-member-without-section",
            HURRAY_COMPOSITE,
            composite_overlay_bare(),
        ),
    ]
}

/// f32 `[3, 4]`, column-major.
fn column_major() -> Descriptor {
    dense(F32, &[3, 4], f32s(&[0.5; 12])).layout(0x02, vec![])
}

/// A scalar may only be row-major (data-model.md § Scalar Tensors).
fn scalar_column_major() -> Descriptor {
    dense(F32, &[], f32s(&[1.0])).layout(0x02, vec![])
}

/// f32 `[3, 4]` over exactly 12 elements, `strides` in elements.
fn strided(strides: &[i64]) -> Descriptor {
    dense(F32, &[3, 4], f32s(&[1.0; 12])).layout(0x03, i64s(strides))
}

/// f32 `[3, 4]`, strides `[-4, 1]`: offsets -8..=3 from element `[0, 0]`,
/// so 12 elements with `byte_offset` at element 8.
fn strided_negative() -> Descriptor {
    let mut d = dense(
        F32,
        &[3, 4],
        f32s(&(0..12).map(|i| i as f32).collect::<Vec<_>>()),
    );
    d.byte_offset = 32;
    d.layout(0x03, i64s(&[-4, 1]))
}

/// f32 `[5, 6]` in tiles `tile`, `bytes` of data.
fn tiled(tile: &[u64], outer: u8, inner: u8, bytes: usize) -> Descriptor {
    let fields = [u64s(tile), vec![outer, inner, 0, 0]].concat();
    dense(F32, &[5, 6], vec![0; bytes]).layout(0x04, fields)
}

/// `[5, 6]` in `[2, 4]` tiles: a 3 x 2 grid of 8-element tiles, partial at
/// both edges, 48 elements.
fn tiled_partial() -> Descriptor {
    tiled(&[2, 4], 0x01, 0x01, 48 * 4)
}

/// u8 `[8, 8]` in `[4, 4]` tiles, each recursively tiled `depth` times
/// more in `[2, 2]` tiles (then `[1, 1]`), 64 elements. `depth` 8 makes 9
/// tiled levels.
fn tiled_nested(depth: usize) -> Descriptor {
    let mut fields = [u64s(&[4, 4]), vec![0x01, 0x04, 0, 0]].concat();
    for level in 0..depth {
        let inner = if level + 1 == depth { 0x01 } else { 0x04 };
        let tile = if level == 0 { 2 } else { 1 };
        fields.extend([u64s(&[tile, tile]), vec![0x01, inner, 0, 0]].concat());
    }
    dense(U8, &[8, 8], (0..64).collect()).layout(0x04, fields)
}

/// f32 `[4, 3]` on a Morton curve of `bits` per dimension.
fn morton(bits: &[u32]) -> Descriptor {
    let n = 1usize << bits.iter().sum::<u32>();
    dense(F32, &[4, 3], vec![0; n * 4]).layout(0x05, u32s(bits))
}

/// f32 `[4, 4]` on a Hilbert curve of `order` and declared `rank`.
fn hilbert(order: u32, rank: u32) -> Descriptor {
    dense(F32, &[4, 4], vec![0; 64]).layout(0x40, u32s(&[order, rank]))
}

/// f32 `[3, 4]`, three non-zeros, sorted (coo.md § Example).
fn coo() -> Descriptor {
    let fields = [3u64.to_le_bytes().to_vec(), vec![1, 0, 0, 0, 0, 0, 0, 0]].concat();
    dense(F32, &[3, 4], f32s(&[1.5, -0.5, 2.0]))
        .layout(0x06, fields)
        .with_buffer(u64s(&[0, 1, 1, 3, 2, 0]))
}

fn coo_one_buffer() -> Descriptor {
    let mut d = coo();
    d.buffers.pop();
    d
}

/// CSR (`0x07`) or CSC (`0x08`) f32 `[3, 5]` (csr.md § Example for CSR; the
/// same arrays read as CSC of a `[5, 3]`... kept `[3, 5]` with its own
/// pointers).
fn csr(tag: u8) -> Descriptor {
    let fields = [5u64.to_le_bytes().to_vec(), vec![0; 8]].concat();
    let (indices, ptr, shape): (&[u64], &[u64], [u64; 2]) = if tag == 0x07 {
        (&[0, 3, 2, 1, 4], &[0, 2, 3, 5], [3, 5])
    } else {
        (&[0, 2, 1, 0, 2], &[0, 1, 2, 3, 4, 5], [3, 5])
    };
    dense(F32, &shape, f32s(&[1.0, 2.0, 3.0, 4.0, 5.0]))
        .layout(tag, fields)
        .with_buffer(u64s(indices))
        .with_buffer(u64s(ptr))
}

fn csr_rank_3() -> Descriptor {
    let mut d = csr(0x07);
    d.shape = vec![3, 5, 1];
    d
}

/// CSF of rank `rank` (csf.md § Example for rank 3: `[2, 3, 4]`, 3
/// non-zeros, identity mode order).
fn csf(rank: usize) -> Descriptor {
    let order: Vec<u32> = (0..rank as u32).collect();
    let fields = [3u64.to_le_bytes().to_vec(), u32s(&order), vec![0; 8]].concat();
    let shape = [2u64, 3, 4];
    let levels: [(&[u64], &[u64]); 3] = [
        (&[0, 2], &[0, 1]),
        (&[0, 2, 3], &[0, 2, 1]),
        (&[0, 1, 2, 3], &[3, 0, 2]),
    ];
    let mut d = dense(F32, &shape[..rank], f32s(&[1.0, 2.0, 3.0])).layout(0x09, fields);
    for (pos, crd) in &levels[..rank] {
        d = d.with_buffer(u64s(pos)).with_buffer(u64s(crd));
    }
    d
}

/// f16 `[5, 2, 4]` (5 tokens of one sequence) over 2 pages of 4 tokens,
/// u32 block table; `rank` 2 drops the last dimension.
fn block_paged(rank: usize) -> Descriptor {
    let mut fields = 4u32.to_le_bytes().to_vec(); // page_size
    fields.extend(2u64.to_le_bytes()); // num_pages
    fields.extend(u32s(&[0, 1])); // paged_axis, num_seqs
    fields.push(0); // kv_role: key
    fields.extend(7u32.to_le_bytes()); // layer_index
    fields.extend([0, 0, 0, 0, 0, 0, 0]); // u32 index type, reserved
    let shape = [5u64, 2, 4];
    dense(F16, &shape[..rank], vec![0; 2 * 4 * 2 * 4 * 2])
        .layout(0x0A, fields)
        .with_buffer(u32s(&[1, 0]))
        .with_buffer(u32s(&[0, 2]))
}

/// A composite head: f32 `shape`, `rule`, `op`, `count` members, no buffer.
fn head(shape: &[u64], rule: u8, op: u8, count: u32) -> Descriptor {
    let fields = [vec![rule, op, 0, 0], count.to_le_bytes().to_vec()].concat();
    let mut d = dense(F32, shape, vec![]).layout(0x0B, fields);
    d.buffers.clear();
    d
}

/// f32 `shape` member filled with `v`, a shard of `parent` at `offset`.
fn member(shape: &[u64], parent: &[u64], offset: &[u64], v: f32) -> Descriptor {
    let n = shape.iter().product::<u64>() as usize;
    let section = [u64s(parent), u64s(offset)].concat();
    dense(F32, shape, f32s(&vec![v; n])).section(HAS_SHARD, section)
}

/// A composite member section: `role` and 15 reserved bytes.
fn role(d: Descriptor, role: u8) -> Descriptor {
    let mut s = vec![0; 16];
    s[0] = role;
    d.section(HAS_COMPOSITE_MEMBER, s)
}

/// The head named `c` and its members `c.0`, `c.1`, ...
fn composite(head_desc: Descriptor, members: Vec<Descriptor>, head_padded: bool) -> File {
    let mut h = tensor("c", head_desc);
    h.head_padded = head_padded;
    let mut tensors: Vec<Tensor> = vec![h];
    tensors.extend(
        members
            .into_iter()
            .enumerate()
            .map(|(i, d)| tensor(format!("c.{i}"), d)),
    );
    File::new(tensors)
}

/// f32 `[4, 4]` as two `[2, 4]` row blocks. `head_padded` pads to the
/// buffer alignment after the head, as pyhurray does.
pub fn composite_partition(head_padded: bool) -> Vec<u8> {
    let members = vec![
        member(&[2, 4], &[4, 4], &[0, 0], 1.0),
        member(&[2, 4], &[4, 4], &[2, 0], 2.0),
    ];
    composite(head(&[4, 4], 0x01, 0x00, 2), members, head_padded).bytes()
}

fn composite_partition_gap() -> Vec<u8> {
    let members = vec![
        member(&[2, 4], &[4, 4], &[0, 0], 1.0),
        member(&[1, 4], &[4, 4], &[3, 0], 2.0),
    ];
    composite(head(&[4, 4], 0x01, 0x00, 2), members, false).bytes()
}

fn composite_partition_member_section() -> Vec<u8> {
    let members = vec![
        member(&[2, 4], &[4, 4], &[0, 0], 1.0),
        role(member(&[2, 4], &[4, 4], &[2, 0], 2.0), 0x00),
    ];
    composite(head(&[4, 4], 0x01, 0x00, 2), members, false).bytes()
}

/// f32 `[4]`: a base over the whole space plus a correction on `[1, 3)`,
/// combined by addition.
fn composite_overlay() -> Vec<u8> {
    let members = vec![
        role(member(&[4], &[4], &[0], 1.0), 0x01),
        role(member(&[2], &[4], &[1], 0.5), 0x00),
    ];
    composite(head(&[4], 0x02, 0x02, 2), members, false).bytes()
}

fn composite_overlay_bare() -> Vec<u8> {
    let members = vec![
        role(member(&[4], &[4], &[0], 1.0), 0x01),
        member(&[2], &[4], &[1], 0.5),
    ];
    composite(head(&[4], 0x02, 0x02, 2), members, false).bytes()
}

/// A group head declaring `count` members, followed by `present` unrelated
/// tensors.
fn composite_group(count: u32, present: usize) -> Vec<u8> {
    let members = [
        dense(U8, &[3], vec![1, 2, 3]),
        dense(F32, &[2, 2], f32s(&[1.0, 2.0, 3.0, 4.0])),
    ];
    composite(
        head(&[1], 0x03, 0x00, count),
        members[..present].to_vec(),
        false,
    )
    .bytes()
}

/// A head declaring 2 members with only one after it.
fn composite_torn() -> Vec<u8> {
    let members = vec![member(&[2, 4], &[4, 4], &[0, 0], 1.0)];
    composite(head(&[4, 4], 0x01, 0x00, 2), members, false).bytes()
}

fn composite_rule(rule: u8) -> Vec<u8> {
    composite(
        head(&[1], rule, 0x00, 1),
        vec![dense(U8, &[3], vec![1, 2, 3])],
        false,
    )
    .bytes()
}

/// A group whose second member is itself a partition head with two
/// members (pre-order).
fn composite_nested() -> Vec<u8> {
    let inner = head(&[4, 4], 0x01, 0x00, 2);
    let members = vec![
        dense(U8, &[3], vec![1, 2, 3]),
        inner,
        member(&[2, 4], &[4, 4], &[0, 0], 1.0),
        member(&[2, 4], &[4, 4], &[2, 0], 2.0),
    ];
    composite(head(&[1], 0x03, 0x00, 2), members, false).bytes()
}
