//! GGUF files (ggml's `docs/gguf.md`, versions 2 and 3): pure bytes in, a
//! validated file out.
//!
//! [`read_file_from`] reads a file by range ([`crate::format::Ranges`]):
//! the 24-byte header, the key-value pairs, the tensor infos, then checks
//! every tensor's place in the data section. It returns every KV (typed,
//! in file order) and tensor info, or the first rule the bytes break
//! (`Rule::Gguf*`), in file order as ggml's reader (`gguf.cpp`) meets them.
//! Every count from the file is checked against the bytes it needs before
//! anything is reserved for it, and all arithmetic is checked, so a caller
//! may serve a tensor's bytes straight from the map afterwards.
//! [`objects`] maps the tensors to the objects and parts the tree serves.
//!
//! Tensor data is never read: ggml defines no checksum and no content
//! rules, and quantized blocks are opaque here.
//!
//! # Decisions
//!
//! Where ggml's reader, gguf-py's `GGUFReader` and the spec differ, this
//! reader takes the stricter reading that every one of them can load,
//! except where noted:
//!
//! - **Version** 2 or 3. A byte-swapped (big-endian) file, whose version
//!   reads with its low 16 bits zero, is refused (`GgufVersion`): the
//!   format has no marker for it and this reader reads little-endian only.
//! - **`general.alignment`** must be a `uint32` power of two and, as the
//!   spec says, a multiple of 8 (ggml accepts 1, 2 and 4).
//! - **Bool** bytes other than 0 and 1 are refused (the spec: "anything
//!   else is invalid"; ggml reads any non-zero byte as true).
//! - **Strings** (keys, values, tensor names) must be UTF-8, as the spec
//!   says (ggml does not check; gguf-py decodes keys and names strictly).
//! - **Nested arrays** are read, up to [`MAX_ARRAY_DEPTH`] (the spec
//!   allows them; ggml refuses them; gguf-py reads them).
//! - **Tensor names** are at most 64 bytes without U+0000 (the spec's 64;
//!   ggml refuses 64 too, and an embedded U+0000 would shorten the name it
//!   keeps), and unique, checked as each info is read (as ggml does). An
//!   empty name is read, as ggml and gguf-py read it (the spec forbids it
//!   nowhere); the mount gives it the hashed form of the empty name.
//! - **Tensor offsets** need only be aligned, inside the file and not
//!   overlap (the spec); ggml also requires them in info order, each
//!   directly after the previous one padded to the alignment. Zero-length
//!   tensors are exempt from the overlap check, not from alignment.
//! - **Padding** bytes are not checked (the spec says 0x00, no reader
//!   checks), nor is anything after the last tensor.
//! - **A split model** (`split.count` > 1) opened from its first file,
//!   named `NAME-00001-of-0000N.gguf`, is the union of its files
//!   (`model::gguf_split`); any other file of a split is read alone: its
//!   own tensors, its KVs.

mod attributes;
pub mod json;
pub mod objects;

mod cursor;
mod ggml;
mod kv;
#[cfg(test)]
mod tests;
pub mod transformers;

pub use attributes::attributes;
pub use ggml::{ggml_type, GgmlType};
pub use kv::{scalar_int, Array, Items, Value, ValueType, MAX_ARRAY_DEPTH};

use crate::error::{Error, Result, Rule};
use crate::format::Ranges;
use cursor::Cursor;

/// The first four bytes.
pub const MAGIC: [u8; 4] = *b"GGUF";
/// Magic, version, tensor count and KV count, in bytes.
pub const HEADER_LEN: u64 = 24;
/// Highest dimension count (ggml's `GGML_MAX_DIMS`).
pub const MAX_DIMS: u32 = 4;
/// Longest tensor name, in bytes (the spec).
pub const MAX_NAME_LEN: u64 = 64;
/// The alignment when `general.alignment` is absent, in bytes.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Smallest `general.alignment`, in bytes (the spec: a multiple of 8).
pub const MIN_ALIGNMENT: u64 = 8;
/// The key holding the alignment.
pub const ALIGNMENT_KEY: &str = "general.alignment";
/// Longest string (key or value), in bytes: ggml's `GGUF_MAX_STRING_LENGTH`.
pub const MAX_STRING_LEN: u64 = 1 << 30;
/// Most elements of one array: ggml's `GGUF_MAX_ARRAY_ELEMENTS`.
pub const MAX_ARRAY_LEN: u64 = 1 << 30;
/// Fewest bytes of one KV pair: key length, a 1-byte key, type, a 1-byte value.
const MIN_KV_LEN: u64 = 8 + 1 + 4 + 1;
/// Fewest bytes of one tensor info: name length, a 1-byte name, dim
/// count (0 dims), type, offset.
const MIN_INFO_LEN: u64 = 8 + 1 + 4 + 4 + 8;

/// A validated GGUF file.
#[derive(Debug, Clone, PartialEq)]
pub struct File {
    /// 2 or 3.
    pub version: u32,
    /// Key-value pairs in file order (keys unique).
    pub kv: Vec<Kv>,
    /// Tensor infos in file order (names unique).
    pub tensors: Vec<TensorInfo>,
    /// The alignment in force, in bytes.
    pub alignment: u64,
    /// Where the data section starts (absolute offset).
    pub data_offset: u64,
    /// For a split model opened from its first file, every file's name in
    /// order (the tensors of all of them are in `tensors`); else empty.
    pub split_files: Vec<Box<str>>,
}

/// One key-value pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Kv {
    /// The key (non-empty UTF-8).
    pub key: Box<str>,
    /// The value.
    pub value: Value,
}

/// One tensor info, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// The name (1..=64 bytes of UTF-8, no U+0000).
    pub name: Box<str>,
    /// Dimensions as written: fastest-varying first (`ne[0]` is the row length).
    pub dims: Vec<u64>,
    /// The ggml type.
    pub ty: GgmlType,
    /// The offset as written, relative to the data section.
    pub offset: u64,
    /// Absolute offset of the tensor's bytes.
    pub start: u64,
    /// The tensor's length in bytes.
    pub len: u64,
    /// In a split model opened from its first file, the index of the file
    /// holding it (in `File::split_files`; offsets are in that file).
    pub split: Option<u16>,
}

impl TensorInfo {
    /// The row-major shape: the dimensions reversed (slowest first).
    pub fn shape(&self) -> Vec<u64> {
        self.dims.iter().rev().copied().collect()
    }

    /// The element count (checked at open).
    pub fn elements(&self) -> u64 {
        self.dims.iter().product()
    }
}

impl File {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.kv.iter().find(|e| &*e.key == key).map(|e| &e.value)
    }

    /// `split.count` when it says the file is one of several.
    pub fn split_count(&self) -> Option<i128> {
        self.get("split.count")
            .and_then(Value::as_int)
            .filter(|&n| n > 1)
    }
}

/// Validates a whole GGUF file held in memory.
pub fn read_file(file: &[u8]) -> Result<File> {
    read_file_from(&file)
}

/// Validates a GGUF file read by range.
pub fn read_file_from(src: &dyn Ranges) -> Result<File> {
    let mut c = Cursor::new(src, Rule::GgufMagic);
    if c.size() < HEADER_LEN {
        return Err(Error::reject(
            Rule::GgufMagic,
            format!(
                "{} bytes is shorter than the {HEADER_LEN}-byte GGUF header",
                c.size()
            ),
        ));
    }
    let magic: [u8; 4] = c.array()?;
    if magic != MAGIC {
        return Err(Error::reject(
            Rule::GgufMagic,
            format!("magic {magic:02x?} is not \"GGUF\""),
        ));
    }
    let version = c.u32()?;
    check_version(version)?;
    let tensor_count = c.u64()?;
    let kv_count = c.u64()?;
    check_count(kv_count, MIN_KV_LEN, "key-value pairs", c.left())?;
    c.rule = Rule::GgufKv;
    c.what = "a key-value pair";
    let kv = read_kvs(&mut c, kv_count)?;
    let alignment = alignment(&kv)?;
    check_count(tensor_count, MIN_INFO_LEN, "tensor infos", c.left())?;
    c.rule = Rule::GgufTensorInfo;
    c.what = "a tensor info";
    let mut infos = Vec::with_capacity(crate::format::reserve_ahead(tensor_count));
    // Names are checked for repeats as they are read (as ggml does): a run
    // of zeros is a valid info named "" then a repeat, so a sparse file
    // claiming 2^35 tensors ends at its second info.
    let mut names = std::collections::HashSet::with_capacity(infos.capacity());
    for _ in 0..tensor_count {
        let at = c.pos();
        let info = read_info(&mut c)?;
        if !names.insert(info.name.clone()) {
            return Err(info_error(&info.name, at, "the name is a duplicate"));
        }
        infos.push(info);
    }
    let data_offset = align_up(c.pos(), alignment).filter(|&d| d <= c.size() || infos.is_empty());
    let data_offset = data_offset.ok_or_else(|| {
        Error::reject(
            Rule::GgufData,
            format!(
                "the data section would start at the next multiple of {alignment} after {}, past the end of the file ({} bytes)",
                c.pos(),
                c.size()
            ),
        )
    })?;
    let tensors = place(infos, data_offset, alignment, c.size())?;
    Ok(File {
        version,
        kv,
        tensors,
        alignment,
        data_offset,
        split_files: Vec::new(),
    })
}

fn check_version(version: u32) -> Result<()> {
    let why = match version {
        2 | 3 => return Ok(()),
        1 => "GGUF v1 is no longer read (ggml dropped it too)".to_string(),
        v if v != 0 && v & 0xffff == 0 => format!(
            "a big-endian file (version {} byte-swapped): ztfs reads little-endian GGUF only",
            v.swap_bytes()
        ),
        _ => "ztfs reads versions 2 and 3".to_string(),
    };
    Err(Error::reject(
        Rule::GgufVersion,
        format!("version {version}: {why}"),
    ))
}

/// Refuses a count whose entries cannot fit in the bytes left.
fn check_count(n: u64, min_len: u64, what: &str, left: u64) -> Result<()> {
    match n.checked_mul(min_len) {
        Some(need) if need <= left => Ok(()),
        need => Err(Error::reject(
            Rule::GgufCount,
            format!(
                "{n} {what} need at least {} bytes ({min_len} each), {left} are left in the file",
                need.map_or("more than 2^64".to_string(), |n| n.to_string())
            ),
        )),
    }
}

fn read_kvs(c: &mut Cursor<'_>, n: u64) -> Result<Vec<Kv>> {
    let cap = crate::format::reserve_ahead(n);
    let mut kv: Vec<Kv> = Vec::with_capacity(cap);
    let mut seen = std::collections::HashSet::with_capacity(cap);
    let mut budget = kv::Budget::default();
    for i in 0..n {
        let at = c.pos();
        let key = budget.string(c, "a key")?;
        // The pair, and its key again in `seen`.
        let held = std::mem::size_of::<Kv>() as u64 + key.len() as u64;
        budget.take(held, &key, at)?;
        if key.is_empty() {
            return Err(Error::reject(
                Rule::GgufKv,
                format!("key {i} at offset {at} is empty"),
            ));
        }
        if !seen.insert(key.clone()) {
            return Err(Error::reject(
                Rule::GgufKv,
                format!("key {key:?} at offset {at} is a duplicate"),
            ));
        }
        let ty = kv::read_type(c, &key)?;
        let value = kv::read_value(c, ty, &key, 0, &mut budget)?;
        kv.push(Kv { key, value });
    }
    Ok(kv)
}

/// The alignment in force: `general.alignment` (a `uint32` power of two,
/// at least 8) or 32.
fn alignment(kv: &[Kv]) -> Result<u64> {
    let Some(e) = kv.iter().find(|e| &*e.key == ALIGNMENT_KEY) else {
        return Ok(DEFAULT_ALIGNMENT);
    };
    let Some(a) = e.value.as_u32() else {
        return Err(Error::reject(
            Rule::GgufAlignment,
            format!(
                "{ALIGNMENT_KEY:?} is {}, must be uint32",
                e.value.ty().name()
            ),
        ));
    };
    let a = u64::from(a);
    if !a.is_power_of_two() || a < MIN_ALIGNMENT {
        return Err(Error::reject(
            Rule::GgufAlignment,
            format!("{ALIGNMENT_KEY:?} is {a}, must be a power of two and a multiple of {MIN_ALIGNMENT}"),
        ));
    }
    Ok(a)
}

fn align_up(n: u64, a: u64) -> Option<u64> {
    n.checked_add(a - 1).map(|x| x / a * a)
}

fn info_error(name: &str, at: u64, detail: impl std::fmt::Display) -> Error {
    Error::reject(
        Rule::GgufTensorInfo,
        format!("tensor {name:?} (info at offset {at}): {detail}"),
    )
}

/// Reads one tensor info and checks its name, dims and type; its place
/// is checked by [`place`].
fn read_info(c: &mut Cursor<'_>) -> Result<TensorInfo> {
    let at = c.pos();
    // A name over the limit is refused before its bytes are read.
    let name = c
        .string_within("a tensor name", MAX_NAME_LEN)?
        .map_err(|n| {
            info_error(
                "",
                at,
                format!("the name is {n} bytes, must be at most {MAX_NAME_LEN} without U+0000"),
            )
        })?;
    if name.len() as u64 > MAX_NAME_LEN || name.contains('\0') {
        return Err(info_error(
            &name,
            at,
            format!(
                "the name is {} bytes{}, must be at most {MAX_NAME_LEN} without U+0000",
                name.len(),
                if name.contains('\0') {
                    " with U+0000"
                } else {
                    ""
                }
            ),
        ));
    }
    let n_dims = c.u32()?;
    if n_dims > MAX_DIMS {
        return Err(info_error(
            &name,
            at,
            format!("{n_dims} dimensions, at most {MAX_DIMS}"),
        ));
    }
    let mut dims = Vec::with_capacity(n_dims as usize);
    for _ in 0..n_dims {
        dims.push(c.u64()?);
    }
    let type_id = c.u32()?;
    let offset = c.u64()?;
    let ty = ggml_type(type_id)
        .ok_or_else(|| info_error(&name, at, format!("unknown ggml type {type_id}")))?;
    let len = check_dims(&dims, ty).map_err(|why| info_error(&name, at, why))?;
    Ok(TensorInfo {
        name,
        dims,
        ty,
        offset,
        start: 0,
        len,
        split: None,
    })
}

/// Checks dimensions against ggml's limits (each and their product below
/// 2^63, the row a whole number of blocks) and returns the byte size.
fn check_dims(dims: &[u64], ty: GgmlType) -> std::result::Result<u64, String> {
    let max = i64::MAX as u64;
    if let Some(d) = dims.iter().find(|&&d| d >= max) {
        return Err(format!("dimension {d} is not below 2^63 - 1 ({max})"));
    }
    // ggml pads to 4 dims with 1s and, unless a dim is 0, refuses
    // INT64_MAX / ne[j] <= ne[0] * .. * ne[j-1] for j in 1..4. Here a 0
    // counts as 1 instead, so the bound holds for a zero-size tensor too
    // (numpy refuses such a zero-size shape as well).
    let mut ne = [1u64; MAX_DIMS as usize];
    ne[..dims.len()].copy_from_slice(dims);
    let mut acc = ne[0].max(1);
    for &d in &ne[1..] {
        let d = d.max(1);
        if max / d <= acc {
            return Err(format!(
                "dims {dims:?}: the element count (a 0 counted as 1) is not below 2^63 - 1"
            ));
        }
        acc *= d;
    }
    let n = if dims.contains(&0) { 0 } else { acc };
    let row = ne[0];
    if row % ty.block_elems != 0 {
        return Err(format!(
            "row length {row} (dims[0]) of {} is not a multiple of its block of {} elements",
            ty.name, ty.block_elems
        ));
    }
    (n / ty.block_elems)
        .checked_mul(ty.block_bytes)
        .ok_or_else(|| format!("dims {dims:?}: the size in bytes overflows"))
}

/// Places each tensor: absolute start, alignment, bounds and no overlap
/// (zero-length tensors exempt).
fn place(
    mut infos: Vec<TensorInfo>,
    data_offset: u64,
    alignment: u64,
    size: u64,
) -> Result<Vec<TensorInfo>> {
    let data = |detail: String| Error::reject(Rule::GgufData, detail);
    for t in &mut infos {
        if t.offset % alignment != 0 {
            return Err(data(format!(
                "tensor {:?}: offset {} is not a multiple of the alignment {alignment}",
                t.name, t.offset
            )));
        }
        let end = (data_offset.checked_add(t.offset))
            .and_then(|s| Some((s, s.checked_add(t.len)?)))
            .filter(|&(_, e)| e <= size);
        let Some((start, _)) = end else {
            return Err(data(format!(
                "tensor {:?}: [{}, +{}) from the data section at {data_offset} ends past the end of the file ({size} bytes)",
                t.name, t.offset, t.len
            )));
        };
        t.start = start;
    }
    let mut order: Vec<&TensorInfo> = infos.iter().filter(|t| t.len > 0).collect();
    order.sort_by_key(|t| t.start);
    for w in order.windows(2) {
        if w[0].start + w[0].len > w[1].start {
            return Err(data(format!(
                "tensors {:?} [{}, +{}) and {:?} [{}, +{}) overlap",
                w[0].name, w[0].offset, w[0].len, w[1].name, w[1].offset, w[1].len
            )));
        }
    }
    Ok(infos)
}
