//! The Hurray file format (`HRRYFILE`, ADR-011; pgillet/hurray
//! `docs/spec/file-format.md`, `metadata.md`, `buffer-protocol.md`): pure
//! bytes in, a validated container out.
//!
//! [`read_file`] takes the bytes of a whole file ([`read_file_from`] a
//! file read by range, [`crate::format::Ranges`]) and either returns every
//! tensor, descriptor and KV entry, or the first rule the bytes break
//! (`Rule::Hurray*`). Everything is checked at once (header, trailer,
//! index and its CRC-32C, KV section, every descriptor, placement, padding,
//! bounds and overlap of every buffer), with checked arithmetic and no
//! allocation sized by an unchecked count, so a caller may serve any
//! buffer's bytes straight from the map afterwards. [`read_descriptor`]
//! checks one descriptor on its own (the conformance vectors).
//!
//! Files: `container` (header, trailer, index and its CRC), `kv`,
//! `descriptor` (fixed header, buffer table, the checks of one descriptor),
//! `sections` (statistics, extension type, composite member), `layout`,
//! `buffers` (handles and layout sizes), `quant`, `elem`, `placement` (the
//! walk over the whole file), `composite`, `bytes` (the bounds-checked
//! cursor).
//!
//! What is valid but not interpreted is not an error here: extension
//! element types (sized from their section), private layouts (at least one
//! buffer, fields kept as written), block-paged, quantized and non-CPU
//! tensors all parse; whether a tensor gets a byte view is decided above
//! this layer. Data contents are not read: scale values, MXFP scale bytes
//! 0x00/0xFF, bool and nibble padding bits, sparse indices.
//!
//! # Decisions
//!
//! Where the reference writer (pyhurray / hurray-io 0.1.0) breaks a MUST
//! that cannot mislead a reader, or the spec contradicts itself, this
//! reader decides as follows (each has a test named `decision_*`):
//!
//! - **KV without its flag.** pyhurray never sets HAS_KV_METADATA but
//!   writes the section and locates it in the trailer: the trailer decides
//!   (file-format.md § File Flags ties the flag to non-zero trailer
//!   fields). The flag with `kv_length` 0 is refused; `kv_offset` 0 iff
//!   `kv_length` 0.
//! - **After a tensor**, the next descriptor (or the KV section, or the
//!   index) may start at the next 8-byte boundary (§ Descriptor Placement)
//!   or at the next `data_buffer_alignment` boundary (§ Writer Protocol
//!   step 2e pads after the last buffer to the alignment; pyhurray pads to
//!   8). Nothing else: any other gap is HurrayPlacement, and every gap byte
//!   must be 0x00.
//! - **After a composite head** pyhurray pads to the full alignment,
//!   which § Composite Tensors forbids ("MUST NOT insert
//!   data_buffer_alignment padding after a composite head"): tolerated by
//!   the rule above. A head's index entry says `data_length = 0` and a
//!   `data_offset` where the next structure may start: `align_up(descriptor
//!   end, data_buffer_alignment)` as pyhurray writes, or `align_up(descriptor
//!   end, 8)` where a writer follows the spec (which names no value).
//! - **An index `data_offset`** other than where placement puts buffer 0 is
//!   HurrayPlacement (the buffer is misplaced); a wrong `data_length` is
//!   HurrayIndex.
//! - **An empty tensor's** zero-byte buffer sits at `align_up(descriptor
//!   end, alignment)`, which may be where the next descriptor starts.
//! - **The trailer** follows the index directly (pyhurray) or at the next
//!   8-byte boundary; the spec only says it is the last 40 bytes.
//! - **Private KV tags** (`0xF0..=0xFE`) are refused: their payload has no
//!   defined length, so the section cannot be delimited.
//! - **A higher descriptor minor** skips the bytes after the fields this
//!   reader knows (versioning.md, R.minor < W.minor); reserved flag bits are
//!   still refused, as versioning.md requires for descriptor flags.
//! - **A higher container minor** is read like 1.0, reserved file flag bits
//!   included (file-format.md § File Flags: reject), although versioning.md's
//!   table says a lower-minor reader ignores flag bits it does not know.
//! - **Per-block SYMMETRIC**: the zero-point index is ignored, as the field
//!   table says ("writers SHOULD set it to 0xFFFFFFFF"), not refused as the
//!   flag table says (MUST). Per-channel keeps the MUST (no contradiction).
//! - **6-bit types** take `ceil(n / 4) * 3` bytes (element-types.md also
//!   writes `ceil(n * 6 / 8)`, which differs for n mod 4 != 0; the 4-in-3
//!   packing and pyhurray agree on the former).
//! - **Sizes**: exact for row-/column-major (per-block and NF4 storing full
//!   trailing blocks along the axis), Morton, Hilbert, COO, CSR, CSC,
//!   block-paged pool and `seq_ptr`, and quantization parameter buffers
//!   (over the logical shape for dense and sparse layouts alike, per page
//!   slot for block-paged per-block); a minimum where the spec gives one
//!   (strided: every addressed element; tiled: full boundary tiles;
//!   block-paged `block_table`: a page slot per token, none without
//!   sequences); CSF level arrays against each other, `nnz` and the shape
//!   (their node counts are data); not checked for tiles ordered by
//!   strides, private layouts, extension widths with no formula, NF4/MXFP
//!   parameters of block-paged tensors (the spec gives no size), or any
//!   shape with a dynamic dimension (whose shard bounds are skipped in that
//!   dimension too; CSF level arrays are still checked).
//! - **Block-paged per-block** `block_size` equals `page_size`
//!   (block-paged.md) even past a batch shorter than one page, where
//!   per-block-affine.md's `block_size <= shape[axis]` would refuse it: the
//!   layout's rule is the specific one, and the parameters are per page
//!   slot, not per logical block.
//! - **A buffer's declared alignment** above the file's must hold at its
//!   file offset (HurrayBuffer): the handle promises it.
//! - **A file without tensors** may start its KV section or index at
//!   `first_descriptor_offset` as well.

pub mod data_rules;
pub mod json;
pub mod objects;

mod buffers;
mod bytes;
mod composite;
mod container;
mod descriptor;
mod elem;
mod kv;
mod layout;
mod placement;
pub(crate) mod quant;
mod sections;
#[cfg(test)]
mod tests;

use crate::error::{Error, Result, Rule};
use crate::format::prefetch::Prefetched;
use crate::format::Ranges;

pub use composite::{members as composite_members, MAX_COMPOSITE_DEPTH};
pub use container::{HAS_INDEX_CRC32C, HAS_KV_METADATA, SORTED_INDEX};
pub use descriptor::MAX_RANK;
pub use layout::{layout_name, MAX_TILE_DEPTH};

/// The container's first eight bytes.
pub const FILE_MAGIC: [u8; 8] = *b"HRRYFILE";
/// A descriptor's (and the streaming format's) first four bytes, and the
/// trailer's last four.
pub const MAGIC: [u8; 4] = *b"HRRY";
/// Header length in bytes.
pub const HEADER_LEN: u64 = 64;
/// Trailer length in bytes.
pub const TRAILER_LEN: u64 = 40;

/// A validated Hurray file.
#[derive(Debug, Clone, PartialEq)]
pub struct File {
    pub header: Header,
    pub trailer: Trailer,
    /// Tensors in index order.
    pub tensors: Vec<Tensor>,
    /// The KV section's entries in file order; empty when there is none.
    pub kv: Vec<KvEntry>,
}

/// The 64-byte file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub version_major: u8,
    pub version_minor: u8,
    /// Bit 0 HAS_KV_METADATA, bit 1 SORTED_INDEX, bit 2 HAS_INDEX_CRC32C.
    pub flags: u32,
    pub data_buffer_alignment: u32,
    pub first_descriptor_offset: u64,
    /// `u64::MAX` when unknown; never trusted.
    pub tensor_count_hint: u64,
}

/// The 40-byte trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trailer {
    pub index_offset: u64,
    pub index_length: u64,
    pub kv_offset: u64,
    pub kv_length: u32,
    pub index_crc32c: u32,
}

/// One named tensor: its index entry and its decoded descriptor.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// The name as written (valid UTF-8, 1..=65,535 bytes, opaque).
    pub name: Box<str>,
    pub descriptor_offset: u64,
    pub descriptor_length: u32,
    pub data_offset: u64,
    pub data_length: u64,
    pub descriptor: Descriptor,
    /// Absolute file offset of each buffer of the descriptor's buffer
    /// table, in order (checked in bounds, aligned, not overlapping).
    pub buffer_offsets: Vec<u64>,
}

/// A tensor descriptor (`metadata.md`, with the buffer handle layout of
/// `buffer-protocol.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct Descriptor {
    pub version_major: u8,
    pub version_minor: u8,
    pub length: u32,
    pub flags: u32,
    pub elem: ElemType,
    /// `u64::MAX` is a dynamic dimension.
    pub shape: Vec<u64>,
    pub byte_offset: u64,
    pub layout: Layout,
    pub buffers: Vec<BufferHandle>,
    /// The quantization section, decoded.
    // The optional sections are boxed: most tensors have none, and a
    // mount keeps every descriptor (a million tensors, a million of these).
    pub quantization: Option<Box<Quantization>>,
    pub shard: Option<Box<ShardSection>>,
    pub stats: Option<Box<Stats>>,
    pub extension_type: Option<Box<ExtensionType>>,
    pub composite_member: Option<CompositeMember>,
}

/// An element type tag (`element-types.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElemType {
    F16,
    BF16,
    F32,
    F64,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    /// Bit-packed, LSB first.
    Bool,
    F8E4M3,
    F8E5M2,
    F8E8M0,
    F4E2M1,
    F6E2M3,
    F6E3M2,
    F128,
    I4,
    U4,
    I2,
    U2,
    C64,
    C128,
    /// `0xF0..=0xFE`, described by the extension type section.
    Extension(u8),
}

/// A layout tag and its fields (`metadata.md` § Layout-Specific Fields).
#[derive(Debug, Clone, PartialEq)]
pub enum Layout {
    RowMajor,
    ColumnMajor,
    /// Strides in logical elements, one per dimension.
    Strided(Vec<i64>),
    Tiled(Box<Tiled>),
    /// Bits per dimension.
    Morton(Vec<u32>),
    Coo {
        nnz: u64,
        sorted: bool,
    },
    Csr {
        nnz: u64,
    },
    Csc {
        nnz: u64,
    },
    Csf {
        nnz: u64,
        mode_order: Vec<u32>,
    },
    /// The 32 bytes of fields, kept as written (no view is defined).
    BlockPaged(BlockPaged),
    Composite(CompositeHead),
    Hilbert {
        order: u32,
    },
    /// `0xF0..=0xFE`.
    Private {
        tag: u8,
        id: u64,
        data: Vec<u8>,
    },
}

/// A tiled layout: tile shape, tile-grid order and in-tile order.
#[derive(Debug, Clone, PartialEq)]
pub struct Tiled {
    pub tile: Vec<u64>,
    pub outer: TileOrder,
    pub inner: TileInner,
}

/// How tiles (or elements of a tile) are ordered.
#[derive(Debug, Clone, PartialEq)]
pub enum TileOrder {
    RowMajor,
    ColumnMajor,
    Strided(Vec<i64>),
}

/// The order inside a tile, which may be tiled again.
#[derive(Debug, Clone, PartialEq)]
pub enum TileInner {
    Order(TileOrder),
    Tiled(Box<Tiled>),
}

/// Block-paged fields (`layouts/block-paged.md`), as decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockPaged {
    pub fields: [u8; 32],
}

/// A composite head's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompositeHead {
    /// 1 partition, 2 overlay, 3 group.
    pub rule: u8,
    /// Overlay only: 1 replace, 2 add; 0 otherwise.
    pub op: u8,
    pub members: u32,
}

/// A 16-byte buffer handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferHandle {
    pub size: u64,
    pub alignment: u32,
    pub device: u8,
    pub sync_mode: u8,
    pub memory_class: u8,
}

/// The quantization section: the scheme header and its payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantization {
    /// 1 per-tensor, 2 per-channel, 3 per-block, 4 NF4, 5 MXFP.
    pub scheme: u8,
    pub scheme_version: u8,
    /// The whole quantization descriptor as written (its header included),
    /// for `manifest.json`.
    pub bytes: Vec<u8>,
    /// How many parameter buffers the scheme adds after the layout's own
    /// buffers (after buffer 0 for a dense layout).
    pub parameter_buffers: u8,
}

/// The shard section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardSection {
    pub parent_shape: Vec<u64>,
    pub offset: Vec<u64>,
}

/// The 72-byte statistics section (advisory).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub computed_mask: u32,
    pub nnz: u64,
    pub sparsity_ratio: f64,
    pub value_min: f64,
    pub value_max: f64,
    pub value_abs_max: f64,
    pub value_mean: f64,
    pub value_stddev: f64,
    pub nm_n: u8,
    pub nm_m: u8,
    pub has_nan: u8,
    pub has_inf: u8,
}

/// The 20-byte extension type section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtensionType {
    pub bit_width: u32,
    pub packing_factor: u8,
    pub is_float: bool,
    pub is_signed: bool,
    pub sign_bits: u8,
    pub exponent_bits: u8,
    pub mantissa_bits: u8,
    pub exponent_bias: u32,
    pub has_nan: bool,
    pub has_inf: bool,
}

/// The 16-byte composite member section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompositeMember {
    /// 0 correction, 1 base.
    pub role: u8,
}

/// One KV entry.
#[derive(Debug, Clone, PartialEq)]
pub struct KvEntry {
    pub key: Box<str>,
    pub value: KvValue,
}

/// A typed KV value.
#[derive(Debug, Clone, PartialEq)]
pub enum KvValue {
    Str(String),
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Bytes(Vec<u8>),
    /// Elements of one scalar type (tag 1..=6); never nested.
    Array(Vec<KvValue>),
}

/// Validates a whole Hurray file held in memory: [`read_file_from`] of
/// its bytes.
pub fn read_file(file: &[u8]) -> Result<File> {
    read_file_from(&file)
}

/// Validates a Hurray file read by range.
///
/// Checks run in a fixed order, so the same bytes always give the same
/// rule: size, header, trailer magic and reserved bytes, index bounds,
/// index CRC-32C, index entries, KV section, each descriptor in index
/// order, the placement walk, composites.
///
/// It reads the header, the trailer, the index, the KV section, each
/// descriptor and the padding gaps, each once its bounds are checked
/// against the file's size, and never a buffer's bytes. From a map these
/// are borrowed slices. From a remote object (descriptors sit before
/// their buffers, spread through the file), each descriptor with the
/// padding on either side of it, where the index says they are, is
/// fetched ahead by a small read, several at a time
/// ([`crate::format::prefetch`]), not as the block around it.
pub fn read_file_from(file: &(dyn Ranges + Sync)) -> Result<File> {
    match file.in_memory() {
        // A map: its slices, without the store's bookkeeping per range.
        Some(bytes) => read_ranges(&bytes, false),
        None => read_ranges(file, true),
    }
}

fn read_ranges(file: &(dyn Ranges + Sync), ahead: bool) -> Result<File> {
    let header = container::parse_header(file)?;
    let trailer = container::parse_trailer(file)?;
    // In bounds: parse_trailer checked index_offset + index_length.
    let index = file.get(trailer.index_offset, trailer.index_length)?;
    container::check_crc(&header, &trailer, &index)?;
    let entries = container::parse_index(&index, trailer.index_offset, header.flags)?;
    let kv = kv::read_kv(file, &header, &trailer)?;
    let near;
    let file: &dyn Ranges = match ahead {
        true => {
            near = Prefetched::new(file, &around_descriptors(&entries))?;
            &near
        }
        false => file,
    };
    let mut tensors = Vec::with_capacity(entries.len());
    for e in entries {
        tensors.push(descriptor::read_tensor(file, e)?);
    }
    placement::walk(file, &header, &trailer, &mut tensors)?;
    composite::check(&tensors)?;
    Ok(File {
        header,
        trailer,
        tensors,
        kv,
    })
}

/// Where the index says each descriptor and the padding before and after
/// it lie: from the end of the data before it (the header's end for the
/// first) to its data's start. Hints for [`Prefetched`]: the index is
/// checked against the descriptors later, and a wrong hint costs a
/// bounded read, never a wrong byte.
fn around_descriptors(entries: &[container::Entry<'_>]) -> Vec<(u64, u64)> {
    let mut by_offset: Vec<&container::Entry<'_>> = entries.iter().collect();
    by_offset.sort_unstable_by_key(|e| e.descriptor_offset);
    let mut out = Vec::with_capacity(3 * by_offset.len());
    let mut before = HEADER_LEN;
    for e in by_offset {
        let (off, len) = (e.descriptor_offset, u64::from(e.descriptor_length));
        out.push((before, off.saturating_sub(before)));
        out.push((off, len));
        let end = off.saturating_add(len);
        out.push((end, e.data_offset.saturating_sub(end)));
        before = e.data_offset.saturating_add(e.data_length);
    }
    out
}

/// Decodes and checks one descriptor on its own (as in the conformance
/// vectors): `bytes` must be exactly one descriptor. File-level rules
/// (placement, index agreement, composites) do not apply.
pub fn read_descriptor(bytes: &[u8]) -> Result<Descriptor> {
    let len = bytes
        .get(6..10)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    if bytes.len() < descriptor::FIXED_LEN || len != Some(bytes.len()) {
        return Err(Error::reject(
            Rule::HurrayDescriptor,
            format!(
                "{} bytes are not one descriptor of its declared length {len:?}",
                bytes.len()
            ),
        ));
    }
    descriptor::parse(bytes, 0).map_err(|e| context(e, "descriptor"))
}

/// Prefixes a rejection's detail with where it happened.
pub(crate) fn context(e: Error, ctx: &str) -> Error {
    match e {
        Error::Reject { rule, detail } => Error::reject(rule, format!("{ctx}: {detail}")),
        e => e,
    }
}
