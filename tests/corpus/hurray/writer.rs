//! A small Hurray `HRRYFILE` writer, independent of the ztfs reader, with a
//! knob for each rule a case breaks.
//!
//! By default it writes what the spec says (file-format.md § Writer
//! Protocol) with one exception: the header, descriptors on 8-byte
//! boundaries, every buffer on a `data_buffer_alignment` boundary, the KV
//! section, the index, and the trailer right after the index, with
//! `HAS_INDEX_CRC32C` set and the CRC filled in. The exception is the
//! padding after a tensor's last buffer: to 8 bytes, as both reference
//! writers do (and every Hurray file in existence has), not to the buffer
//! alignment as the spec says, which would double the size of every case
//! ([`Tail`]; the spec's form has cases of its own). The other habits of
//! the reference writers (full padding after a composite head, no
//! `HAS_KV_METADATA` flag) are knobs, each shown in one case.
//!
//! All integers are little-endian.

/// `HRRYFILE`.
pub const FILE_MAGIC: &[u8; 8] = b"HRRYFILE";
/// The descriptor and trailer magic.
pub const MAGIC: &[u8; 4] = b"HRRY";
/// The trailer's length.
pub const TRAILER_LEN: usize = 40;

/// File flag bit 0.
pub const HAS_KV_METADATA: u32 = 1;
/// File flag bit 1.
pub const SORTED_INDEX: u32 = 2;
/// File flag bit 2.
pub const HAS_INDEX_CRC32C: u32 = 4;

/// Descriptor flag bits (metadata.md § Flags).
pub const HAS_QUANTIZATION: u32 = 1;
pub const HAS_SHARD: u32 = 2;
pub const HAS_EXTENSION_TYPE: u32 = 4;
pub const HAS_STATISTICS: u32 = 8;
pub const HAS_COMPOSITE_MEMBER: u32 = 16;

/// CRC-32C (Castagnoli), bitwise: reflected polynomial 0x82F63B78.
pub fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// The 64-byte file header, field by field.
#[derive(Clone, Debug)]
pub struct Header {
    pub magic: [u8; 8],
    pub major: u8,
    pub minor: u8,
    pub reserved: [u8; 2],
    pub flags: u32,
    pub alignment: u32,
    pub first_descriptor_offset: u64,
    pub count_hint: u64,
    pub reserved_tail: [u8; 28],
}

impl Default for Header {
    fn default() -> Header {
        Header {
            magic: *FILE_MAGIC,
            major: 1,
            minor: 0,
            reserved: [0; 2],
            flags: HAS_INDEX_CRC32C,
            alignment: 4096,
            first_descriptor_offset: 64,
            count_hint: u64::MAX,
            reserved_tail: [0; 28],
        }
    }
}

impl Header {
    fn encode(&self) -> Vec<u8> {
        let mut out = self.magic.to_vec();
        out.extend([self.major, self.minor]);
        out.extend(self.reserved);
        out.extend(self.flags.to_le_bytes());
        out.extend(self.alignment.to_le_bytes());
        out.extend(self.first_descriptor_offset.to_le_bytes());
        out.extend(self.count_hint.to_le_bytes());
        out.extend(self.reserved_tail);
        out
    }
}

/// One 16-byte buffer handle (buffer-protocol.md) and the bytes written for
/// it. `size` is what the handle declares; `data` is what lands in the file.
#[derive(Clone, Debug)]
pub struct Buffer {
    pub data: Vec<u8>,
    pub size: u64,
    pub alignment: u32,
    pub device: u8,
    pub sync_mode: u8,
    pub memory_class: u8,
    pub reserved: u8,
}

/// A CPU buffer holding `data`, declared 64-byte aligned (1 when empty, as
/// pyhurray writes it).
pub fn buffer(data: Vec<u8>) -> Buffer {
    Buffer {
        size: data.len() as u64,
        alignment: if data.is_empty() { 1 } else { 64 },
        data,
        device: 0,
        sync_mode: 0,
        memory_class: 0,
        reserved: 0,
    }
}

impl Buffer {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend(self.size.to_le_bytes());
        out.extend(self.alignment.to_le_bytes());
        out.extend([
            self.device,
            self.sync_mode,
            self.memory_class,
            self.reserved,
        ]);
    }
}

/// A tensor descriptor (metadata.md), its parts kept apart so a case can
/// break one. `layout` and `sections` are encoded fields, in order.
#[derive(Clone, Debug)]
pub struct Descriptor {
    pub magic: [u8; 4],
    pub major: u8,
    pub minor: u8,
    /// The declared length; `None` for the encoded length.
    pub length: Option<u32>,
    pub flags: u32,
    pub type_tag: u8,
    pub layout_tag: u8,
    /// The declared rank; `None` for `shape.len()`.
    pub rank: Option<u32>,
    pub shape: Vec<u64>,
    pub byte_offset: u64,
    pub layout: Vec<u8>,
    pub buffers: Vec<Buffer>,
    /// The optional sections, already in flag order.
    pub sections: Vec<u8>,
    /// Bytes after the last field, counted in the length.
    pub extra: Vec<u8>,
}

/// A row-major tensor of `type_tag` over one buffer holding `data`.
pub fn dense(type_tag: u8, shape: &[u64], data: Vec<u8>) -> Descriptor {
    Descriptor {
        magic: *MAGIC,
        major: 1,
        minor: 0,
        length: None,
        flags: 0,
        type_tag,
        layout_tag: 0x01,
        rank: None,
        shape: shape.to_vec(),
        byte_offset: 0,
        layout: Vec::new(),
        buffers: vec![buffer(data)],
        sections: Vec::new(),
        extra: Vec::new(),
    }
}

impl Descriptor {
    /// Sets `layout_tag` and its fields.
    pub fn layout(mut self, tag: u8, fields: Vec<u8>) -> Descriptor {
        self.layout_tag = tag;
        self.layout = fields;
        self
    }

    /// Appends a buffer.
    pub fn with_buffer(mut self, data: Vec<u8>) -> Descriptor {
        self.buffers.push(buffer(data));
        self
    }

    /// Sets `flag` and appends its section (callers keep flag order).
    pub fn section(mut self, flag: u32, bytes: Vec<u8>) -> Descriptor {
        self.flags |= flag;
        self.sections.extend(bytes);
        self
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.magic.to_vec();
        out.extend([self.major, self.minor]);
        out.extend([0; 4]);
        out.extend(self.flags.to_le_bytes());
        out.extend([self.type_tag, self.layout_tag]);
        let rank = self.rank.unwrap_or(self.shape.len() as u32);
        out.extend(rank.to_le_bytes());
        self.shape.iter().for_each(|d| out.extend(d.to_le_bytes()));
        out.extend(self.byte_offset.to_le_bytes());
        out.extend(&self.layout);
        out.push(self.buffers.len() as u8);
        self.buffers.iter().for_each(|b| b.encode(&mut out));
        out.extend(&self.sections);
        out.extend(&self.extra);
        let length = self.length.unwrap_or(out.len() as u32);
        out[6..10].copy_from_slice(&length.to_le_bytes());
        out
    }
}

/// How a tensor's region ends after its last buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    /// To the next `data_buffer_alignment` boundary (the spec).
    Alignment,
    /// To the next 8-byte boundary only (hurray-io and pyhurray).
    Eight,
}

/// A named tensor and how it is placed.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub name: Vec<u8>,
    pub desc: Descriptor,
    /// Zero bytes inserted before the descriptor, after its 8-byte
    /// alignment.
    pub gap_before: usize,
    /// Zero bytes inserted before buffer 0, after its alignment.
    pub gap_before_data: usize,
    pub tail: Tail,
    /// For a composite head: pad to the buffer alignment after it, as
    /// pyhurray does (the spec forbids it).
    pub head_padded: bool,
}

pub fn tensor(name: impl AsRef<[u8]>, desc: Descriptor) -> Tensor {
    Tensor {
        name: name.as_ref().to_vec(),
        desc,
        gap_before: 0,
        gap_before_data: 0,
        tail: Tail::Eight,
        head_padded: false,
    }
}

/// One index entry.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: Vec<u8>,
    pub descriptor_offset: u64,
    pub descriptor_length: u32,
    pub data_offset: u64,
    pub data_length: u64,
    pub flags: u32,
}

impl Entry {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend((self.name.len() as u16).to_le_bytes());
        out.extend(&self.name);
        out.extend(self.descriptor_offset.to_le_bytes());
        out.extend(self.descriptor_length.to_le_bytes());
        out.extend(self.data_offset.to_le_bytes());
        out.extend(self.data_length.to_le_bytes());
        out.extend(self.flags.to_le_bytes());
    }
}

/// The index as it will be encoded; a case may edit it before.
#[derive(Clone, Debug)]
pub struct Index {
    pub entries: Vec<Entry>,
    /// The declared count; `None` for `entries.len()`.
    pub count: Option<u64>,
    /// Bytes after the last entry, inside `index_length`.
    pub extra: Vec<u8>,
}

/// The 40-byte trailer.
#[derive(Clone, Debug)]
pub struct Trailer {
    pub index_offset: u64,
    pub index_length: u64,
    pub kv_offset: u64,
    pub kv_length: u32,
    pub index_crc32c: u32,
    pub reserved: [u8; 4],
    pub magic: [u8; 4],
}

impl Trailer {
    fn encode(&self) -> Vec<u8> {
        let mut out = self.index_offset.to_le_bytes().to_vec();
        out.extend(self.index_length.to_le_bytes());
        out.extend(self.kv_offset.to_le_bytes());
        out.extend(self.kv_length.to_le_bytes());
        out.extend(self.index_crc32c.to_le_bytes());
        out.extend(self.reserved);
        out.extend(self.magic);
        out
    }
}

/// A whole file.
#[derive(Clone, Debug, Default)]
pub struct File {
    pub header: Header,
    pub tensors: Vec<Tensor>,
    /// The encoded KV section, if any.
    pub kv: Option<Vec<u8>>,
    /// Zero bytes inserted before the KV section, after its 8-byte
    /// alignment.
    pub gap_before_kv: usize,
    /// Zero bytes inserted before the index, after its 8-byte alignment.
    pub gap_before_index: usize,
}

/// Where things landed, for cases that patch bytes afterwards.
#[derive(Clone, Debug)]
pub struct Placed {
    pub bytes: Vec<u8>,
    pub kv_offset: u64,
    pub index_offset: u64,
}

fn pad_to(out: &mut Vec<u8>, align: usize) {
    while !out.len().is_multiple_of(align) {
        out.push(0);
    }
}

impl File {
    pub fn new(tensors: Vec<Tensor>) -> File {
        File {
            tensors,
            ..File::default()
        }
    }

    /// With the KV section `kv`; sets `HAS_KV_METADATA`.
    pub fn kv(mut self, kv: Vec<u8>) -> File {
        self.header.flags |= HAS_KV_METADATA;
        self.kv = Some(kv);
        self
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.place(|_| {}, |_| {}).bytes
    }

    /// The file with its index edited before encoding.
    pub fn with_index(&self, edit: impl FnOnce(&mut Index)) -> Vec<u8> {
        self.place(edit, |_| {}).bytes
    }

    /// The file with its trailer edited after the CRC is computed.
    pub fn with_trailer(&self, edit: impl FnOnce(&mut Trailer)) -> Vec<u8> {
        self.place(|_| {}, edit).bytes
    }

    /// Lays the file out; `index` edits the index before it is encoded and
    /// checksummed, `trailer` edits the trailer last.
    pub fn place(
        &self,
        index: impl FnOnce(&mut Index),
        trailer: impl FnOnce(&mut Trailer),
    ) -> Placed {
        let align = self.header.alignment.max(1) as usize;
        let mut out = self.header.encode();
        out.resize(
            out.len().max(self.header.first_descriptor_offset as usize),
            0,
        );
        let mut entries = Vec::new();
        for t in &self.tensors {
            pad_to(&mut out, 8);
            out.resize(out.len() + t.gap_before, 0);
            let descriptor_offset = out.len() as u64;
            let desc = t.desc.encode();
            out.extend(&desc);
            let data_offset;
            let mut data_length = 0;
            if t.desc.buffers.is_empty() {
                pad_to(&mut out, if t.head_padded { align } else { 8 });
                data_offset = out.len() as u64;
            } else {
                pad_to(&mut out, align);
                out.resize(out.len() + t.gap_before_data, 0);
                data_offset = out.len() as u64;
                for (i, b) in t.desc.buffers.iter().enumerate() {
                    if i > 0 {
                        pad_to(&mut out, align);
                    }
                    data_length = out.len() as u64 - data_offset + b.size;
                    out.extend(&b.data);
                }
                pad_to(&mut out, if t.tail == Tail::Alignment { align } else { 8 });
            }
            entries.push(Entry {
                name: t.name.clone(),
                descriptor_offset,
                descriptor_length: desc.len() as u32,
                data_offset,
                data_length,
                flags: 0,
            });
        }
        let (mut kv_offset, mut kv_length) = (0, 0);
        if let Some(kv) = &self.kv {
            pad_to(&mut out, 8);
            out.resize(out.len() + self.gap_before_kv, 0);
            kv_offset = out.len() as u64;
            kv_length = kv.len() as u32;
            out.extend(kv);
        }
        pad_to(&mut out, 8);
        out.resize(out.len() + self.gap_before_index, 0);
        let mut ix = Index {
            entries: entries.clone(),
            count: None,
            extra: Vec::new(),
        };
        index(&mut ix);
        let index_offset = out.len() as u64;
        let mut encoded = ix
            .count
            .unwrap_or(ix.entries.len() as u64)
            .to_le_bytes()
            .to_vec();
        ix.entries.iter().for_each(|e| e.encode(&mut encoded));
        encoded.extend(&ix.extra);
        out.extend(&encoded);
        let mut t = Trailer {
            index_offset,
            index_length: encoded.len() as u64,
            kv_offset,
            kv_length,
            index_crc32c: if self.header.flags & HAS_INDEX_CRC32C != 0 {
                crc32c(&encoded)
            } else {
                0
            },
            reserved: [0; 4],
            magic: *MAGIC,
        };
        trailer(&mut t);
        out.extend(t.encode());
        Placed {
            bytes: out,
            kv_offset,
            index_offset,
        }
    }
}

/// A KV section (file-format.md § KV Metadata Section) built entry by
/// entry; `count` overrides the declared count.
#[derive(Clone, Debug, Default)]
pub struct Kv {
    pub count: Option<u32>,
    pub entries: Vec<u8>,
    n: u32,
    pub extra: Vec<u8>,
}

impl Kv {
    pub fn new() -> Kv {
        Kv::default()
    }

    /// An entry with a raw tag and payload.
    pub fn raw(mut self, key: impl AsRef<[u8]>, tag: u8, payload: &[u8]) -> Kv {
        let key = key.as_ref();
        self.entries.extend((key.len() as u16).to_le_bytes());
        self.entries.extend(key);
        self.entries.push(tag);
        self.entries.extend(payload);
        self.n += 1;
        self
    }

    pub fn string(self, key: &str, value: &str) -> Kv {
        self.raw(key, 0x01, &kv_string(value.as_bytes()))
    }

    pub fn i64(self, key: &str, value: i64) -> Kv {
        self.raw(key, 0x02, &value.to_le_bytes())
    }

    pub fn u64(self, key: &str, value: u64) -> Kv {
        self.raw(key, 0x03, &value.to_le_bytes())
    }

    pub fn f64(self, key: &str, value: f64) -> Kv {
        self.raw(key, 0x04, &value.to_bits().to_le_bytes())
    }

    pub fn bool(self, key: &str, value: bool) -> Kv {
        self.raw(key, 0x05, &[u8::from(value)])
    }

    pub fn bytes(self, key: &str, value: &[u8]) -> Kv {
        self.raw(key, 0x06, &kv_string(value))
    }

    /// An array of `count` elements of `tag`, their payloads concatenated.
    pub fn array(self, key: &str, tag: u8, count: u32, payloads: &[u8]) -> Kv {
        let mut p = vec![tag];
        p.extend(count.to_le_bytes());
        p.extend(payloads);
        self.raw(key, 0x07, &p)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.count.unwrap_or(self.n).to_le_bytes().to_vec();
        out.extend(&self.entries);
        out.extend(&self.extra);
        out
    }
}

/// A length-prefixed (u32) string or byte payload.
pub fn kv_string(bytes: &[u8]) -> Vec<u8> {
    let mut out = (bytes.len() as u32).to_le_bytes().to_vec();
    out.extend(bytes);
    out
}

/// Little-endian u64s, concatenated.
pub fn u64s(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Little-endian u32s, concatenated.
pub fn u32s(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Little-endian i64s, concatenated.
pub fn i64s(values: &[i64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Little-endian f32s, concatenated.
pub fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_check_value() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn worked_example_descriptor() {
        // metadata.md § Worked Example: f32 [3, 4], 192 bytes, 61 bytes long.
        let d = dense(0x03, &[3, 4], vec![0; 48]).encode();
        assert_eq!(d.len(), 61);
        assert_eq!(&d[6..10], &61u32.to_le_bytes());
    }
}
