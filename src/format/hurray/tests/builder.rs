//! A tiny writer of valid containers, with knobs, for tests only. It lays
//! a file out the way the spec does (descriptor, buffers on the alignment,
//! 8-byte padding after the last buffer, KV, index, trailer right after
//! the index), computes the index CRC, and records where everything went so
//! a test can break one byte.

use crc::{Crc, CRC_32_ISCSI};

/// A buffer handle as written.
#[derive(Clone)]
pub struct H {
    pub size: u64,
    pub align: u32,
    pub device: u8,
    pub sync: u8,
    pub class: u8,
    pub reserved: u8,
}

/// A handle of `size` bytes, aligned 64, on the CPU.
pub fn h(size: u64) -> H {
    H {
        size,
        align: 64,
        device: 0,
        sync: 0,
        class: 0,
        reserved: 0,
    }
}

/// A descriptor as written.
#[derive(Clone)]
pub struct D {
    pub major: u8,
    pub minor: u8,
    pub flags: u32,
    pub elem: u8,
    pub layout: u8,
    pub shape: Vec<u64>,
    pub byte_offset: u64,
    pub layout_fields: Vec<u8>,
    pub handles: Vec<H>,
    /// The optional sections, already encoded, in flag order.
    pub sections: Vec<u8>,
    /// Bytes after the sections (counted in the length).
    pub trailing: Vec<u8>,
    /// Replaces the computed length field when set.
    pub length: Option<u32>,
}

impl D {
    /// A row-major `elem` tensor of `shape` with one buffer of `size`.
    pub fn dense(elem: u8, shape: &[u64], size: u64) -> D {
        D {
            major: 1,
            minor: 0,
            flags: 0,
            elem,
            layout: 1,
            shape: shape.to_vec(),
            byte_offset: 0,
            layout_fields: vec![],
            handles: vec![h(size)],
            sections: vec![],
            trailing: vec![],
            length: None,
        }
    }

    /// float32 [2, 2], 16 bytes.
    pub fn f32x4() -> D {
        D::dense(0x03, &[2, 2], 16)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"HRRY");
        b.push(self.major);
        b.push(self.minor);
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&self.flags.to_le_bytes());
        b.push(self.elem);
        b.push(self.layout);
        b.extend_from_slice(&(self.shape.len() as u32).to_le_bytes());
        for s in &self.shape {
            b.extend_from_slice(&s.to_le_bytes());
        }
        b.extend_from_slice(&self.byte_offset.to_le_bytes());
        b.extend_from_slice(&self.layout_fields);
        b.push(self.handles.len() as u8);
        for h in &self.handles {
            b.extend_from_slice(&h.size.to_le_bytes());
            b.extend_from_slice(&h.align.to_le_bytes());
            b.extend_from_slice(&[h.device, h.sync, h.class, h.reserved]);
        }
        b.extend_from_slice(&self.sections);
        b.extend_from_slice(&self.trailing);
        let len = self.length.unwrap_or(b.len() as u32);
        b[6..10].copy_from_slice(&len.to_le_bytes());
        b
    }
}

/// One tensor to write.
#[derive(Clone)]
pub struct T {
    pub name: Vec<u8>,
    pub desc: D,
    /// Extra zero bytes before this tensor's descriptor (beyond alignment).
    pub gap: u64,
    /// Pad to the buffer alignment, not 8, after this tensor.
    pub pad_to_alignment: bool,
}

pub fn t(name: &str, desc: D) -> T {
    T {
        name: name.as_bytes().to_vec(),
        desc,
        gap: 0,
        pad_to_alignment: false,
    }
}

/// A file to write.
pub struct B {
    pub major: u8,
    pub flags: u32,
    pub alignment: u32,
    pub fdo: u64,
    pub tensors: Vec<T>,
    /// The KV section's bytes (written when non-empty).
    pub kv: Vec<u8>,
    /// Bytes appended to the index after its entries.
    pub index_extra: Vec<u8>,
    /// Replaces the index entry count when set.
    pub index_count: Option<u64>,
    /// Pad the trailer to 8 bytes after the index.
    pub trailer_aligned: bool,
}

/// Where things went.
pub struct Built {
    pub bytes: Vec<u8>,
    pub desc_offsets: Vec<u64>,
    pub buffer_offsets: Vec<Vec<u64>>,
    pub index_offset: u64,
    pub index_length: u64,
}

impl Built {
    pub fn trailer(&self) -> usize {
        self.bytes.len() - 40
    }

    /// Recomputes the index CRC after an edit inside the index.
    pub fn fix_crc(&mut self) {
        let (o, n) = (self.index_offset as usize, self.index_length as usize);
        let crc = Crc::<u32>::new(&CRC_32_ISCSI).checksum(&self.bytes[o..o + n]);
        let t = self.trailer();
        self.bytes[t + 28..t + 32].copy_from_slice(&crc.to_le_bytes());
    }

    /// Absolute offset of the `i`th tensor's descriptor byte `at`.
    pub fn desc(&self, i: usize, at: usize) -> usize {
        self.desc_offsets[i] as usize + at
    }
}

pub fn file(tensors: Vec<T>) -> B {
    B {
        major: 1,
        flags: 4,
        alignment: 4096,
        fdo: 64,
        tensors,
        kv: vec![],
        index_extra: vec![],
        index_count: None,
        trailer_aligned: false,
    }
}

fn pad(b: &mut Vec<u8>, to: u64) {
    let n = (b.len() as u64).next_multiple_of(to);
    b.resize(n as usize, 0);
}

impl B {
    pub fn build(&self) -> Built {
        let a = u64::from(self.alignment);
        let mut b = Vec::new();
        b.extend_from_slice(b"HRRYFILE");
        b.extend_from_slice(&[self.major, 0, 0, 0]);
        b.extend_from_slice(&self.flags.to_le_bytes());
        b.extend_from_slice(&self.alignment.to_le_bytes());
        b.extend_from_slice(&self.fdo.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.resize(64, 0);
        b.resize(self.fdo as usize, 0);
        let mut index = Vec::new();
        index.extend_from_slice(
            &self
                .index_count
                .unwrap_or(self.tensors.len() as u64)
                .to_le_bytes(),
        );
        let (mut desc_offsets, mut buffer_offsets) = (vec![], vec![]);
        for t in &self.tensors {
            b.resize(b.len() + t.gap as usize, 0);
            let d_off = b.len() as u64;
            let enc = t.desc.encode();
            b.extend_from_slice(&enc);
            let mut offs = vec![];
            for h in &t.desc.handles {
                pad(&mut b, a);
                offs.push(b.len() as u64);
                // Buffer bytes: a recognisable non-zero pattern.
                b.extend((0..h.size).map(|i| (i % 251) as u8 + 1));
            }
            let (data_off, data_len) = match offs.first() {
                Some(&f) => (f, b.len() as u64 - f),
                None => ((b.len() as u64).next_multiple_of(a), 0),
            };
            pad(&mut b, if t.pad_to_alignment { a } else { 8 });
            index.extend_from_slice(&(t.name.len() as u16).to_le_bytes());
            index.extend_from_slice(&t.name);
            index.extend_from_slice(&d_off.to_le_bytes());
            index.extend_from_slice(&(enc.len() as u32).to_le_bytes());
            index.extend_from_slice(&data_off.to_le_bytes());
            index.extend_from_slice(&data_len.to_le_bytes());
            index.extend_from_slice(&0u32.to_le_bytes());
            desc_offsets.push(d_off);
            buffer_offsets.push(offs);
        }
        index.extend_from_slice(&self.index_extra);
        let mut kv_offset = 0u64;
        if !self.kv.is_empty() {
            kv_offset = b.len() as u64;
            b.extend_from_slice(&self.kv);
            pad(&mut b, 8);
        }
        let index_offset = b.len() as u64;
        b.extend_from_slice(&index);
        if self.trailer_aligned {
            pad(&mut b, 8);
        }
        b.extend_from_slice(&index_offset.to_le_bytes());
        b.extend_from_slice(&(index.len() as u64).to_le_bytes());
        b.extend_from_slice(&kv_offset.to_le_bytes());
        b.extend_from_slice(&(self.kv.len() as u32).to_le_bytes());
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(b"HRRY");
        let mut built = Built {
            bytes: b,
            desc_offsets,
            buffer_offsets,
            index_offset,
            index_length: index.len() as u64,
        };
        if self.flags & 4 != 0 {
            built.fix_crc();
        }
        built
    }
}

/// A KV section: count, then the given raw entries.
pub fn kv(entries: &[Vec<u8>]) -> Vec<u8> {
    let mut b = (entries.len() as u32).to_le_bytes().to_vec();
    for e in entries {
        b.extend_from_slice(e);
    }
    b
}

/// One raw KV entry: key, tag, payload.
pub fn entry(key: &str, tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut b = (key.len() as u16).to_le_bytes().to_vec();
    b.extend_from_slice(key.as_bytes());
    b.push(tag);
    b.extend_from_slice(payload);
    b
}

/// Little-endian bytes of u64s.
pub fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Little-endian bytes of u32s.
pub fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
