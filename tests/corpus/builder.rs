//! A writer of zTensor v2 bytes for the conformance corpus.
//!
//! It is independent of the ztfs library on purpose: the corpus is an oracle
//! for the reader, so it must not share the reader's code or its mistakes.
//! It writes whatever it is told, valid or not: blobs go at any offset, every
//! footer field can be overridden, map entries are written in the order given
//! (use [`Fields::sorted`] for deterministic order), and hand-made CBOR can be
//! spliced in with [`CborItem::Raw`]. What it does not do is check anything.

use sha2::{Digest as _, Sha256};
use xxhash_rust::xxh3::xxh3_64;

/// The 8 bytes at offset 0 and at the end of the footer (§2.2).
pub const MAGIC: [u8; 8] = [0x89, b'Z', b'T', b'2', 0x0D, 0x0A, 0x1A, 0x0A];
/// Footer length in bytes (§2.3).
pub const FOOTER_LEN: usize = 40;
/// The alignment floor of every blob offset, in bytes (§2.4).
pub const ALIGN: u64 = 4096;
/// Canonical placement, in bytes (§6.3).
pub const CANONICAL_ALIGN: u64 = 65536;
/// The footer version this format defines (§2.3).
pub const VERSION: u32 = 2;

// ---------------------------------------------------------------------------
// CBOR

/// A CBOR item as the corpus writes it. Heads are always shortest; anything
/// else (non-shortest heads, indefinite lengths, tags, bad UTF-8) is spliced
/// with `Raw`.
#[derive(Clone, Debug, PartialEq)]
pub enum CborItem {
    /// Major type 0.
    Uint(u64),
    /// Major type 1, holding `n` for the value `-1 - n`.
    Nint(u64),
    /// Major type 2.
    Bytes(Vec<u8>),
    /// Major type 3.
    Text(String),
    /// Major type 4.
    Array(Vec<CborItem>),
    /// Major type 5, entries written in the order given.
    Map(Vec<(CborItem, CborItem)>),
    /// Simple values 20 and 21.
    Bool(bool),
    /// Simple value 22.
    Null,
    /// Half precision, by bits.
    F16(u16),
    /// Single precision, by bits.
    F32(u32),
    /// Double precision, by bits.
    F64(u64),
    /// Bytes written as they are.
    Raw(Vec<u8>),
}

impl CborItem {
    /// The item's encoding.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            CborItem::Uint(n) => write_head(0, *n, out),
            CborItem::Nint(n) => write_head(1, *n, out),
            CborItem::Bytes(b) => {
                write_head(2, b.len() as u64, out);
                out.extend_from_slice(b);
            }
            CborItem::Text(s) => {
                write_head(3, s.len() as u64, out);
                out.extend_from_slice(s.as_bytes());
            }
            CborItem::Array(items) => {
                write_head(4, items.len() as u64, out);
                items.iter().for_each(|i| i.write(out));
            }
            CborItem::Map(entries) => {
                write_head(5, entries.len() as u64, out);
                for (k, v) in entries {
                    k.write(out);
                    v.write(out);
                }
            }
            CborItem::Bool(b) => out.push(if *b { 0xF5 } else { 0xF4 }),
            CborItem::Null => out.push(0xF6),
            CborItem::F16(bits) => {
                out.push(0xF9);
                out.extend_from_slice(&bits.to_be_bytes());
            }
            CborItem::F32(bits) => {
                out.push(0xFA);
                out.extend_from_slice(&bits.to_be_bytes());
            }
            CborItem::F64(bits) => {
                out.push(0xFB);
                out.extend_from_slice(&bits.to_be_bytes());
            }
            CborItem::Raw(bytes) => out.extend_from_slice(bytes),
        }
    }
}

/// The shortest head for `major` with argument `arg`.
pub fn head(major: u8, arg: u64) -> Vec<u8> {
    let mut out = Vec::new();
    write_head(major, arg, &mut out);
    out
}

fn write_head(major: u8, arg: u64, out: &mut Vec<u8>) {
    let m = major << 5;
    if arg < 24 {
        out.push(m | arg as u8);
    } else if arg <= 0xFF {
        out.extend_from_slice(&[m | 24, arg as u8]);
    } else if arg <= 0xFFFF {
        out.push(m | 25);
        out.extend_from_slice(&(arg as u16).to_be_bytes());
    } else if arg <= 0xFFFF_FFFF {
        out.push(m | 26);
        out.extend_from_slice(&(arg as u32).to_be_bytes());
    } else {
        out.push(m | 27);
        out.extend_from_slice(&arg.to_be_bytes());
    }
}

/// A float in the narrowest width that holds it exactly, as deterministic
/// encoding requires (§3.1); every NaN becomes the one canonical `f97e00`.
pub fn float(x: f64) -> CborItem {
    if let Some(bits) = f16_bits_exact(x) {
        CborItem::F16(bits)
    } else if (x as f32) as f64 == x {
        CborItem::F32((x as f32).to_bits())
    } else {
        CborItem::F64(x.to_bits())
    }
}

/// The half-precision bits of `x` when it is exactly representable.
fn f16_bits_exact(x: f64) -> Option<u16> {
    if x.is_nan() {
        return Some(0x7E00);
    }
    let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
    if x == 0.0 {
        return Some(sign);
    }
    if x.is_infinite() {
        return Some(sign | 0x7C00);
    }
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7FF) as i32 - 1023;
    // f64 subnormals are far below the f16 range, so the significand has its
    // implicit bit here.
    let significand = (bits & ((1 << 52) - 1)) | (1 << 52);
    if (-14..=15).contains(&exp) {
        let low = significand & ((1 << 42) - 1);
        let frac = ((significand >> 42) & 0x3FF) as u16;
        return (low == 0).then_some(sign | (((exp + 15) as u16) << 10) | frac);
    }
    if (-24..-14).contains(&exp) {
        // A subnormal half: value = k · 2^-24 with k < 1024.
        let shift = 42 + (-14 - exp) as u32;
        let low = significand & ((1 << shift) - 1);
        return (low == 0).then_some(sign | (significand >> shift) as u16);
    }
    None
}

impl From<&str> for CborItem {
    fn from(s: &str) -> CborItem {
        CborItem::Text(s.to_string())
    }
}

impl From<String> for CborItem {
    fn from(s: String) -> CborItem {
        CborItem::Text(s)
    }
}

impl From<u64> for CborItem {
    fn from(n: u64) -> CborItem {
        CborItem::Uint(n)
    }
}

impl From<Vec<CborItem>> for CborItem {
    fn from(items: Vec<CborItem>) -> CborItem {
        CborItem::Array(items)
    }
}

impl From<Fields> for CborItem {
    fn from(f: Fields) -> CborItem {
        f.sorted()
    }
}

/// Map entries under construction. [`Fields::sorted`] gives the
/// deterministic order; [`Fields::in_order`] keeps the order given.
#[derive(Clone, Debug, Default)]
pub struct Fields(pub Vec<(CborItem, CborItem)>);

impl Fields {
    /// No entries.
    pub fn new() -> Fields {
        Fields(Vec::new())
    }

    /// Sets `key` to `value`, replacing an entry with an equal key.
    pub fn set(mut self, key: impl Into<CborItem>, value: impl Into<CborItem>) -> Fields {
        let (key, value) = (key.into(), value.into());
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => self.0.push((key, value)),
        }
        self
    }

    /// Appends an entry even when the key is already there.
    pub fn push(mut self, key: impl Into<CborItem>, value: impl Into<CborItem>) -> Fields {
        self.0.push((key.into(), value.into()));
        self
    }

    /// Removes the entry with text key `key`.
    pub fn remove(mut self, key: &str) -> Fields {
        let key = CborItem::from(key);
        self.0.retain(|(k, _)| *k != key);
        self
    }

    /// A map in deterministic order: ascending encoded key bytes. For text
    /// keys that is shorter first, then bytewise (`"b"` < `"aa"`, and
    /// `"objects"` < `"attributes"`), because the length is in the head.
    pub fn sorted(mut self) -> CborItem {
        self.0.sort_by_cached_key(|(k, _)| k.encode());
        CborItem::Map(self.0)
    }

    /// A map with the entries in the order given.
    pub fn in_order(self) -> CborItem {
        CborItem::Map(self.0)
    }
}

// ---------------------------------------------------------------------------
// Manifest pieces

/// A blob reference `[offset, length]` (§2.4, §3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlobRef {
    pub offset: u64,
    pub length: u64,
}

impl BlobRef {
    pub fn new(offset: u64, length: u64) -> BlobRef {
        BlobRef { offset, length }
    }

    /// The `[offset, length]` array.
    pub fn item(self) -> CborItem {
        CborItem::Array(vec![self.offset.into(), self.length.into()])
    }
}

/// A part with a dtype and a blob, the two required fields (§3.4).
pub fn part(dtype: &str, blob: BlobRef) -> Fields {
    Fields::new().set("dtype", dtype).set("blob", blob.item())
}

/// An object with a shape, a layout and its parts (§3.3).
pub fn object(shape: &[u64], layout: &str, parts: Fields) -> Fields {
    let shape: Vec<CborItem> = shape.iter().map(|&d| d.into()).collect();
    Fields::new()
        .set("shape", shape)
        .set("layout", layout)
        .set("parts", parts)
}

/// A dense object whose one part is `data` (§5.1).
pub fn dense(shape: &[u64], data: Fields) -> Fields {
    object(shape, "dense", Fields::new().set("data", data))
}

/// A root manifest with these objects (§3.2).
pub fn root(objects: Fields) -> Fields {
    Fields::new().set("objects", objects)
}

/// Encodes a manifest that refers to its own blob at `offset`: `make` is
/// given the manifest's reference and must be monotone in its length, which
/// is found by iterating to the fixed point.
pub fn self_referencing(offset: u64, make: impl Fn(BlobRef) -> CborItem) -> Vec<u8> {
    let mut length = 0;
    for _ in 0..16 {
        let bytes = make(BlobRef::new(offset, length)).encode();
        if bytes.len() as u64 == length {
            return bytes;
        }
        length = bytes.len() as u64;
    }
    panic!("manifest length at {offset} does not converge");
}

/// Encodes the item `make(n)` for the smallest `n` that makes the encoding
/// exactly `len` bytes long; `make` pads with `n` bytes somewhere.
pub fn padded_to(len: usize, make: impl Fn(usize) -> CborItem) -> Vec<u8> {
    (0..len)
        .map(&make)
        .map(|item| item.encode())
        .find(|bytes| bytes.len() == len)
        .unwrap_or_else(|| panic!("no padding reaches {len} bytes"))
}

// ---------------------------------------------------------------------------
// Digests

/// `xxh3:` and the 16 lowercase hex digits of XXH3-64, seed 0.
pub fn xxh3_digest(bytes: &[u8]) -> String {
    format!("xxh3:{:016x}", xxh3_64(bytes))
}

/// `sha256:` and 64 lowercase hex digits.
pub fn sha256_digest(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

// ---------------------------------------------------------------------------
// zt.zstd-seekable/1 (implementer notes §3.1)

/// The skippable-frame magic that opens the seek table.
pub const SEEK_TABLE_MAGIC: u32 = 0x184D_2A5E;
/// The seekable magic, the last 4 bytes of the stored blob.
pub const SEEKABLE_MAGIC: u32 = 0x8F92_EAB1;

/// `data` as zstd frames of `frame_len` decoded bytes each (level 3, content
/// checksum on, no content size, like the public writer) and the seek table.
pub fn zstd_seekable(data: &[u8], frame_len: usize) -> Vec<u8> {
    let frames: Vec<(Vec<u8>, usize)> = data
        .chunks(frame_len)
        .map(|chunk| (zstd_frame(chunk), chunk.len()))
        .collect();
    let entries: Vec<(u32, u32)> = frames
        .iter()
        .map(|(f, n)| (f.len() as u32, *n as u32))
        .collect();
    let mut out: Vec<u8> = frames.into_iter().flat_map(|(f, _)| f).collect();
    out.extend_from_slice(&seek_table(&entries));
    out
}

/// One zstd frame of `data`, level 3, with the content checksum and without
/// the content size.
pub fn zstd_frame(data: &[u8]) -> Vec<u8> {
    zstd_frame_with(data, true)
}

/// One zstd frame of `data`, level 3, without the content size, and with
/// the content checksum when `checksum` is set.
pub fn zstd_frame_with(data: &[u8], checksum: bool) -> Vec<u8> {
    let mut c = zstd::bulk::Compressor::new(3).expect("zstd compressor");
    c.include_checksum(checksum).expect("zstd checksum flag");
    c.include_contentsize(false)
        .expect("zstd content size flag");
    c.compress(data).expect("zstd compress")
}

/// The checksum of a decoded frame as zstd and the seek table's checksum
/// column define it: the low 32 bits of XXH64, seed 0.
pub fn frame_checksum(decoded: &[u8]) -> u32 {
    xxhash_rust::xxh64::xxh64(decoded, 0) as u32
}

/// A seek table with descriptor 0 (no checksum column) for `entries` of
/// (compressed size, decompressed size).
pub fn seek_table(entries: &[(u32, u32)]) -> Vec<u8> {
    let entries: Vec<SeekEntry> = entries
        .iter()
        .map(|&(compressed, decompressed)| SeekEntry {
            compressed,
            decompressed,
            checksum: 0,
        })
        .collect();
    seek_table_with(&entries, 0)
}

/// One seek-table entry.
#[derive(Clone, Copy, Debug)]
pub struct SeekEntry {
    pub compressed: u32,
    pub decompressed: u32,
    /// Written only when the descriptor sets bit 7 (`Checksum_Flag`).
    pub checksum: u32,
}

/// The bit of the seek-table descriptor that adds the checksum column.
pub const CHECKSUM_FLAG: u8 = 0x80;

/// A seek table for `entries` with `descriptor` as given: 12-byte entries
/// when it sets [`CHECKSUM_FLAG`], else 8-byte ones; other bits are written
/// and mean nothing to this writer.
pub fn seek_table_with(entries: &[SeekEntry], descriptor: u8) -> Vec<u8> {
    let entry_len: u32 = if descriptor & CHECKSUM_FLAG != 0 {
        12
    } else {
        8
    };
    let mut out = Vec::new();
    out.extend_from_slice(&SEEK_TABLE_MAGIC.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u32 * entry_len + 9).to_le_bytes());
    for e in entries {
        out.extend_from_slice(&e.compressed.to_le_bytes());
        out.extend_from_slice(&e.decompressed.to_le_bytes());
        if entry_len == 12 {
            out.extend_from_slice(&e.checksum.to_le_bytes());
        }
    }
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    out.push(descriptor);
    out.extend_from_slice(&SEEKABLE_MAGIC.to_le_bytes());
    out
}

// ---------------------------------------------------------------------------
// The container

/// The 40-byte footer, every field settable (§2.3).
#[derive(Clone, Copy, Debug)]
pub struct Footer {
    pub manifest_offset: u64,
    pub manifest_length: u64,
    pub manifest_hash: u64,
    pub version: u32,
    pub reserved: u32,
    pub magic: [u8; 8],
}

impl Footer {
    /// The correct footer for `manifest` stored at `blob`.
    pub fn for_manifest(blob: BlobRef, manifest: &[u8]) -> Footer {
        Footer {
            manifest_offset: blob.offset,
            manifest_length: blob.length,
            manifest_hash: xxh3_64(manifest),
            ..Footer::data_shard()
        }
    }

    /// The footer of a data shard: no manifest (§7.2).
    pub fn data_shard() -> Footer {
        Footer {
            manifest_offset: 0,
            manifest_length: 0,
            manifest_hash: 0,
            version: VERSION,
            reserved: 0,
            magic: MAGIC,
        }
    }

    /// The footer's 40 bytes.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER_LEN);
        out.extend_from_slice(&self.manifest_offset.to_le_bytes());
        out.extend_from_slice(&self.manifest_length.to_le_bytes());
        out.extend_from_slice(&self.manifest_hash.to_le_bytes());
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.reserved.to_le_bytes());
        out.extend_from_slice(&self.magic);
        out
    }
}

/// A file under construction: the magic, then blobs, then a footer.
pub struct FileBuilder {
    bytes: Vec<u8>,
    filler: u8,
    align: u64,
}

impl Default for FileBuilder {
    fn default() -> FileBuilder {
        FileBuilder::new()
    }
}

impl FileBuilder {
    /// The magic alone, placing blobs at 4096 with 0x00 padding.
    pub fn new() -> FileBuilder {
        FileBuilder {
            bytes: MAGIC.to_vec(),
            filler: 0,
            align: ALIGN,
        }
    }

    /// Pads with `filler` instead of 0x00.
    pub fn with_filler(mut self, filler: u8) -> FileBuilder {
        self.filler = filler;
        self
    }

    /// Places automatic blobs at multiples of `align` (a multiple of 4096).
    pub fn with_align(mut self, align: u64) -> FileBuilder {
        assert!(align > 0 && align.is_multiple_of(ALIGN));
        self.align = align;
        self
    }

    /// The bytes written so far.
    pub fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Where [`FileBuilder::blob`] would place the next blob: the first
    /// multiple of the alignment at or after the end, and never below it.
    pub fn next_offset(&self) -> u64 {
        self.len().div_ceil(self.align).max(1) * self.align
    }

    /// Places `data` at the next aligned offset.
    pub fn blob(&mut self, data: &[u8]) -> BlobRef {
        self.blob_at(self.next_offset(), data)
    }

    /// Places `data` at `offset`, which may be anything at or after the end.
    pub fn blob_at(&mut self, offset: u64, data: &[u8]) -> BlobRef {
        assert!(offset >= self.len(), "blob at {offset} behind the end");
        self.bytes.resize(offset as usize, self.filler);
        self.bytes.extend_from_slice(data);
        BlobRef::new(offset, data.len() as u64)
    }

    /// Appends bytes at the end with no padding: an intermediate footer,
    /// trailing garbage.
    pub fn append(&mut self, raw: &[u8]) {
        self.bytes.extend_from_slice(raw);
    }

    /// Places `manifest` at the next aligned offset and closes the file with
    /// the correct footer.
    pub fn finish(self, manifest: &[u8]) -> Vec<u8> {
        self.finish_with(manifest, |_| {})
    }

    /// Like [`FileBuilder::finish`], with the footer edited by `edit`.
    pub fn finish_with(mut self, manifest: &[u8], edit: impl FnOnce(&mut Footer)) -> Vec<u8> {
        let blob = self.blob(manifest);
        let mut footer = Footer::for_manifest(blob, manifest);
        edit(&mut footer);
        self.finish_footer(&footer)
    }

    /// Closes the file with `footer` as it is.
    pub fn finish_footer(mut self, footer: &Footer) -> Vec<u8> {
        self.append(&footer.bytes());
        self.bytes
    }
}

// ---------------------------------------------------------------------------
// Deterministic data

/// A 64-bit LCG (Knuth's MMIX constants): fixed seed, fixed output.
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        Lcg(seed)
    }

    /// The next 32 pseudo-random bits (the high half of the state).
    pub fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 32) as u32
    }

    /// `n` pseudo-random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u32() as u8).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_shortest() {
        assert_eq!(head(0, 23), [0x17]);
        assert_eq!(head(0, 24), [0x18, 24]);
        assert_eq!(head(0, 255), [0x18, 0xFF]);
        assert_eq!(head(0, 256), [0x19, 1, 0]);
        assert_eq!(head(0, 65536), [0x1A, 0, 1, 0, 0]);
        assert_eq!(head(1, 1 << 32), [0x3B, 0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(CborItem::from("dense").encode(), b"\x65dense");
    }

    #[test]
    fn sorted_maps_put_shorter_keys_first() {
        let m = Fields::new()
            .set("attributes", 1u64)
            .set("aa", 2u64)
            .set("objects", 3u64)
            .set("b", 4u64)
            .sorted();
        let keys: Vec<CborItem> = match m {
            CborItem::Map(entries) => entries.into_iter().map(|(k, _)| k).collect(),
            _ => unreachable!(),
        };
        let want: Vec<CborItem> = ["b", "aa", "objects", "attributes"]
            .into_iter()
            .map(CborItem::from)
            .collect();
        assert_eq!(keys, want);
    }

    #[test]
    fn floats_take_the_narrowest_exact_width() {
        assert_eq!(float(1.0).encode(), [0xF9, 0x3C, 0x00]);
        assert_eq!(float(-0.0).encode(), [0xF9, 0x80, 0x00]);
        assert_eq!(float(f64::INFINITY).encode(), [0xF9, 0x7C, 0x00]);
        assert_eq!(float(f64::NAN).encode(), [0xF9, 0x7E, 0x00]);
        assert_eq!(float(5.960464477539063e-8).encode(), [0xF9, 0x00, 0x01]);
        assert_eq!(float(10000.0).encode(), [0xF9, 0x70, 0xE2]);
        assert_eq!(float(0.1f32 as f64).encode()[0], 0xFA);
        assert_eq!(float(0.1).encode()[0], 0xFB);
        assert_eq!(float(65536.0).encode(), [0xFA, 0x47, 0x80, 0x00, 0x00]);
    }

    #[test]
    fn zstd_seekable_round_trips_through_the_zstd_crate() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let stored = zstd_seekable(&data, 4096);
        let n = stored.len();
        assert_eq!(stored[n - 4..], SEEKABLE_MAGIC.to_le_bytes());
        let frames = u32::from_le_bytes(stored[n - 9..n - 5].try_into().unwrap()) as usize;
        assert_eq!(frames, 3);
        let table_start = n - (17 + 8 * frames);
        let mut decoded = Vec::new();
        let mut at = 0;
        for i in 0..frames {
            let e = table_start + 8 + 8 * i;
            let c = u32::from_le_bytes(stored[e..e + 4].try_into().unwrap()) as usize;
            let d = u32::from_le_bytes(stored[e + 4..e + 8].try_into().unwrap()) as usize;
            let frame = zstd::bulk::decompress(&stored[at..at + c], d).unwrap();
            assert_eq!(frame.len(), d);
            decoded.extend(frame);
            at += c;
        }
        assert_eq!(at, table_start);
        assert_eq!(decoded, data);
        assert_eq!(zstd_seekable(&[], 4096).len(), 17);
    }

    #[test]
    fn footer_layout_is_little_endian_with_trailing_magic() {
        let f = Footer::for_manifest(BlobRef::new(4096, 3), b"abc").bytes();
        assert_eq!(f.len(), FOOTER_LEN);
        assert_eq!(f[0..8], 4096u64.to_le_bytes());
        assert_eq!(f[8..16], 3u64.to_le_bytes());
        assert_eq!(f[16..24], xxh3_64(b"abc").to_le_bytes());
        assert_eq!(f[24..28], 2u32.to_le_bytes());
        assert_eq!(f[28..32], [0; 4]);
        assert_eq!(f[32..40], MAGIC);
    }

    #[test]
    fn blobs_are_placed_at_aligned_offsets() {
        let mut f = FileBuilder::new();
        assert_eq!(f.blob(b"x"), BlobRef::new(4096, 1));
        assert_eq!(f.blob(&[]), BlobRef::new(8192, 0));
        assert_eq!(f.blob(b"y"), BlobRef::new(8192, 1));
        let mut g = FileBuilder::new().with_align(CANONICAL_ALIGN);
        assert_eq!(g.blob(b"x"), BlobRef::new(65536, 1));
    }
}
