//! `model.safetensors`: the model's dense tensors as one safetensors file,
//! or as `model-0000i-of-0000n.safetensors` shards and their
//! `model.safetensors.index.json` when one header would pass the format's
//! limit, as Hugging Face writes sharded checkpoints.
//!
//! Nothing is copied: a shard is its header, then each tensor's bytes
//! served by range from the file that serves the tensor in its directory.
//! Headers are not kept either. The plan keeps, per tensor, its object,
//! dtype and data start (its end is the next one's start) and where its
//! entry ends in the header text, and in the index when sharded: 20 or 24
//! bytes a tensor; a read of the header renders only the entries it
//! covers. The safetensors reader's rules (`safetensors` crate,
//! `Metadata::validate`): tensors contiguous in offset order from 0, no
//! gaps or aliases (a tied weight is two ranges served from one blob), the
//! file ends where the last tensor does, the header at most 100,000,000
//! bytes. The header is padded with spaces so the data starts on a
//! 4096-byte boundary.

use crate::format::json::push_string;

/// The safetensors limit on the header's length.
pub const HEADER_MAX: u64 = 100_000_000;
/// The file when one header holds every tensor.
pub const FILE: &str = "model.safetensors";
/// The index of a sharded model.
pub const INDEX: &str = "model.safetensors.index.json";
/// Where tensor data starts: headers are padded to a page.
const DATA_ALIGN: u64 = 4096;

/// The dtype names the plan uses, so a tensor keeps a byte for it.
const DTYPES: [&str; 20] = [
    "BOOL",
    "U8",
    "I8",
    "I16",
    "U16",
    "I32",
    "U32",
    "I64",
    "U64",
    "F16",
    "BF16",
    "F32",
    "F64",
    "C64",
    "F8_E4M3",
    "F8_E5M2",
    "F8_E4M3FNUZ",
    "F8_E5M2FNUZ",
    "F8_E8M0",
    "F4",
];

/// A tensor of a shard as the plan keeps it: its end is where the next
/// begins (tensors are contiguous), or the shard's data length.
#[derive(Debug, Clone, Copy)]
struct Placed {
    start: u64,
    object: u32,
    dtype: u8,
}

/// A tensor of a shard: its object and its data range, relative to the
/// shard's data start.
#[derive(Debug, Clone, Copy)]
pub struct Tensor {
    /// The object (index in the manifest).
    pub object: u32,
    dtype: u8,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

impl Tensor {
    /// Its dtype name.
    pub fn dtype(&self) -> &'static str {
        DTYPES[usize::from(self.dtype)]
    }
}

/// A text rendered by range: a fixed head, one entry per item (formatted
/// when a read covers it), a fixed tail, then spaces to `len`.
#[derive(Debug)]
struct Pieced {
    head: Vec<u8>,
    /// Where each entry ends, counted from the end of the head (a header
    /// is within 100,000,000 bytes, an index within 4 GiB).
    ends: Vec<u32>,
    tail: Vec<u8>,
    len: u64,
}

impl Pieced {
    fn entries_len(&self) -> u64 {
        self.ends.last().map_or(0, |&e| e.into())
    }

    /// Bytes `[from, to)`, with `render(i, out)` appending entry `i`.
    fn read(&self, from: u64, to: u64, render: &dyn Fn(usize, &mut Vec<u8>)) -> Vec<u8> {
        let to = to.min(self.len);
        let mut out = Vec::with_capacity(to.saturating_sub(from) as usize);
        let mut copy = |piece: &[u8], at: u64| {
            let (s, e) = (from.max(at), to.min(at + piece.len() as u64));
            if s < e {
                out.extend_from_slice(&piece[(s - at) as usize..(e - at) as usize]);
            }
        };
        let head = self.head.len() as u64;
        copy(&self.head, 0);
        let first = self.ends.partition_point(|&e| head + u64::from(e) <= from);
        let mut scratch = Vec::new();
        for i in first..self.ends.len() {
            let at = head
                + if i == 0 {
                    0
                } else {
                    u64::from(self.ends[i - 1])
                };
            if at >= to {
                break;
            }
            scratch.clear();
            render(i, &mut scratch);
            copy(&scratch, at);
        }
        let tail_at = head + self.entries_len();
        copy(&self.tail, tail_at);
        let pad_at = tail_at + self.tail.len() as u64;
        let (s, e) = (from.max(pad_at), to);
        if s < e {
            out.resize(out.len() + (e - s) as usize, b' ');
        }
        out
    }
}

/// One safetensors file of the model.
#[derive(Debug)]
pub struct Shard {
    /// Its tensors in data order.
    placed: Vec<Placed>,
    /// Their bytes: the last one's end.
    data_len: u64,
    /// The object of its first tensor (a shard holds the objects of the
    /// plan from it to the next shard's first).
    first_object: Option<u32>,
    /// The length prefix, the header text and its padding.
    header: Pieced,
    /// True when the header has no `__metadata__`: its first entry then
    /// starts the object, without a comma.
    bare: bool,
}

impl Shard {
    /// Where tensor data begins: 8 + the header's length.
    pub fn data_start(&self) -> u64 {
        self.header.len
    }

    /// The file's length.
    pub fn len(&self) -> u64 {
        self.data_start() + self.data_len
    }

    /// How many tensors it holds.
    pub fn tensor_count(&self) -> usize {
        self.placed.len()
    }

    /// Its tensor `i`.
    pub fn tensor(&self, i: usize) -> Tensor {
        let p = self.placed[i];
        let end = self.placed.get(i + 1).map_or(self.data_len, |n| n.start);
        Tensor {
            object: p.object,
            dtype: p.dtype,
            start: p.start,
            end,
        }
    }

    /// Its tensors in data order.
    pub fn tensors(&self) -> impl Iterator<Item = Tensor> + '_ {
        (0..self.placed.len()).map(|i| self.tensor(i))
    }

    /// True when it holds no byte (never: a header is at least a page).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where a read's bytes come from.
#[derive(Debug)]
pub enum Segment {
    /// Rendered header bytes.
    Text(Vec<u8>),
    /// `len` bytes of object `object`'s tensor file from `offset`.
    Tensor {
        /// The object.
        object: u32,
        /// Offset in its tensor file.
        offset: u64,
        /// Bytes wanted.
        len: u64,
    },
}

/// A tensor to place: its object, dtype and byte length.
pub struct Candidate {
    /// The object.
    pub object: u32,
    /// Its safetensors dtype (`F32`, `BF16`, ...).
    pub dtype: &'static str,
    /// Bytes of its tensor file.
    pub len: u64,
}

/// What the header says of an object: its name and shape.
pub type Describe<'a> = &'a (dyn Fn(u32) -> (&'a str, &'a [u64]) + Sync);

/// The model's safetensors files.
#[derive(Debug)]
pub struct Plan {
    /// One shard (`model.safetensors`), or several and an index.
    pub shards: Vec<Shard>,
    index: Option<Pieced>,
    /// Sum of the tensors' bytes (the index's `metadata.total_size`).
    pub total_size: u64,
    /// What the first header's `__metadata__` leaves out to stay within
    /// the limit (`ztfs ls --safetensors` says it).
    pub notes: Vec<String>,
}

impl Plan {
    /// Places `tensors` (in this order) into as few shards as the header
    /// limit `max` allows, and with `shard_bytes` of at most that many
    /// bytes of tensors each (a larger tensor gets a shard of its own, as
    /// `save_pretrained`'s `max_shard_size` does); the first shard's
    /// `__metadata__` is `metadata` (a JSON object's text; none for
    /// `None`), the others' `{"format":"pt"}`. Fails when
    /// one tensor's entry alone does not fit.
    pub fn new(
        tensors: &[Candidate],
        describe: Describe<'_>,
        metadata: Option<&str>,
        max: u64,
        shard_bytes: Option<u64>,
    ) -> Result<Plan, String> {
        let mut shards: Vec<Shard> = Vec::new();
        let mut cur = Building::new(metadata);
        let mut entry = Vec::new();
        for c in tensors {
            let dtype = DTYPES.iter().position(|&d| d == c.dtype).ok_or_else(|| {
                format!("internal error: {:?} is not a dtype of the plan", c.dtype)
            })? as u8;
            let mut t = Tensor {
                object: c.object,
                dtype,
                start: cur.data,
                end: cur.data.saturating_add(c.len),
            };
            render_entry(&mut entry, describe, &t, cur.bare && cur.placed.is_empty());
            let full = shard_bytes.is_some_and(|b| cur.data.saturating_add(c.len) > b);
            if !cur.placed.is_empty() && (full || !fits(cur.text + entry.len() as u64, max)) {
                shards.push(cur.finish());
                cur = Building::new(Some(r#"{"format":"pt"}"#));
                (t.start, t.end) = (0, c.len);
                render_entry(&mut entry, describe, &t, false);
            }
            if !fits(cur.text + entry.len() as u64, max) {
                let (name, _) = describe(c.object);
                let need = padded(cur.text + entry.len() as u64) - 8;
                return Err(format!(
                    "a header holding {name:?} alone is {need} bytes (its text padded so the data starts on a {DATA_ALIGN}-byte page), more than the limit of {max}"
                ));
            }
            cur.push(t, entry.len() as u64)?;
        }
        // With no tensor, nothing above checked the metadata alone.
        if !fits(cur.text, max) {
            let need = padded(cur.text) - 8;
            return Err(format!(
                "a header of its metadata alone is {need} bytes, more than the limit of {max}"
            ));
        }
        shards.push(cur.finish());
        let total_size = (shards.iter())
            .map(|s| s.data_len)
            .fold(0u64, u64::saturating_add);
        let index = match shards.len() {
            1 => None,
            _ => Some(index(&shards, describe, total_size)?),
        };
        Ok(Plan {
            shards,
            index,
            total_size,
            notes: Vec::new(),
        })
    }

    /// The file name of shard `i`.
    pub fn shard_name(&self, i: usize) -> String {
        match self.shards.len() {
            1 => FILE.to_string(),
            n => shard_name(i, n),
        }
    }

    /// The index's length, when sharded.
    pub fn index_len(&self) -> Option<u64> {
        self.index.as_ref().map(|i| i.len)
    }

    /// Bytes `[offset, offset + size)` of the index.
    pub fn read_index(&self, offset: u64, size: u64, describe: Describe<'_>) -> Vec<u8> {
        let Some(index) = &self.index else {
            return Vec::new();
        };
        let n = self.shards.len();
        // Global entry i -> its shard, by the shards' first entries.
        let firsts: Vec<usize> = (self.shards.iter())
            .scan(0, |acc, s| {
                let first = *acc;
                *acc += s.tensor_count();
                Some(first)
            })
            .collect();
        let render = |i: usize, out: &mut Vec<u8>| {
            let s = firsts.partition_point(|&f| f <= i) - 1;
            let t = self.shards[s].tensor(i - firsts[s]);
            render_index_entry(out, describe, t.object, i == 0, &shard_name(s, n));
        };
        index.read(offset, offset.saturating_add(size), &render)
    }

    /// Where bytes `[offset, offset + size)` of shard `s` come from.
    pub fn segments(
        &self,
        s: usize,
        offset: u64,
        size: u64,
        describe: Describe<'_>,
    ) -> Vec<Segment> {
        let shard = &self.shards[s];
        let end = offset.saturating_add(size).min(shard.len());
        let mut out = Vec::new();
        let data = shard.data_start();
        if offset < data.min(end) {
            let render = |i: usize, out: &mut Vec<u8>| {
                render_entry(out, describe, &shard.tensor(i), shard.bare && i == 0);
            };
            out.push(Segment::Text(shard.header.read(
                offset,
                end.min(data),
                &render,
            )));
        }
        let (from, to) = (offset.max(data) - data, end.saturating_sub(data));
        for t in self.tensors_in(s, offset, size) {
            let (s, e) = (from.max(t.start), to.min(t.end));
            out.push(Segment::Tensor {
                object: t.object,
                offset: s - t.start,
                len: e - s,
            });
        }
        out
    }

    /// The tensors of shard `s` with bytes in `[offset, offset + size)`.
    pub fn tensors_in(
        &self,
        s: usize,
        offset: u64,
        size: u64,
    ) -> impl Iterator<Item = Tensor> + '_ {
        let shard = &self.shards[s];
        let data = shard.data_start();
        let end = offset.saturating_add(size).min(shard.len());
        let (from, to) = (offset.max(data) - data, end.saturating_sub(data));
        let (mut first, mut last) = (0, 0);
        if from < to {
            // Tensor i ends at or before `from` when the next one starts
            // there (the last one ends at the data's end, past `from`).
            first = shard.placed[1.min(shard.placed.len())..].partition_point(|t| t.start <= from);
            last = shard.placed.partition_point(|t| t.start < to);
        }
        // Empty tensors inside the range hold no byte of it.
        (first..last.max(first)).map(|i| shard.tensor(i))
    }

    /// The shard that holds `object` if the plan does (the caller knows
    /// whether it does: every object with a safetensors dtype): tensors
    /// are placed in object order, shard after shard. Needs no tables.
    pub fn shard_of(&self, object: u32) -> Option<usize> {
        let s = (self.shards).partition_point(|s| s.first_object.is_some_and(|f| f <= object));
        s.checked_sub(1)
    }

    /// The plan without its tables (where each tensor and header entry
    /// is), which reads of the files need and nothing else does: the
    /// files' names and lengths stay. A mount keeps this and makes the
    /// whole plan again on the first read of a file.
    pub fn without_tables(mut self) -> Plan {
        for s in &mut self.shards {
            s.placed = Vec::new();
            s.header.ends = Vec::new();
        }
        if let Some(index) = &mut self.index {
            index.ends = Vec::new();
        }
        self
    }

    /// True when `other` describes the same files (names and lengths).
    pub fn same_files(&self, other: &Plan) -> bool {
        let lens = |p: &Plan| p.shards.iter().map(Shard::len).collect::<Vec<_>>();
        lens(self) == lens(other) && self.index_len() == other.index_len()
    }

    /// Bytes the plan holds.
    pub fn heap_bytes(&self) -> u64 {
        let per = std::mem::size_of::<Placed>() + 4 + if self.index.is_some() { 4 } else { 0 };
        let tensors: usize = self.shards.iter().map(|s| s.tensor_count()).sum();
        let heads: usize = self.shards.iter().map(|s| s.header.head.len()).sum();
        (tensors * per + heads) as u64
    }
}

fn shard_name(i: usize, n: usize) -> String {
    format!("model-{:05}-of-{n:05}.safetensors", i + 1)
}

/// True when a header whose text (with the 8-byte prefix) is `text`
/// bytes long before its closing brace stays within `max` once padded.
fn fits(text: u64, max: u64) -> bool {
    padded(text) - 8 <= max
}

/// Where the data starts after `text` bytes and the closing brace.
fn padded(text: u64) -> u64 {
    (text + 1).next_multiple_of(DATA_ALIGN)
}

/// A shard being filled.
struct Building {
    head: Vec<u8>,
    placed: Vec<Placed>,
    ends: Vec<u32>,
    /// Header bytes so far, with the prefix.
    text: u64,
    /// Data bytes so far.
    data: u64,
    /// No `__metadata__`.
    bare: bool,
}

impl Building {
    fn new(metadata: Option<&str>) -> Building {
        let mut head = vec![0; 8];
        match metadata {
            Some(m) => {
                head.extend_from_slice(br#"{"__metadata__":"#);
                head.extend_from_slice(m.as_bytes());
            }
            None => head.push(b'{'),
        }
        Building {
            bare: metadata.is_none(),
            text: head.len() as u64,
            head,
            placed: Vec::new(),
            ends: Vec::new(),
            data: 0,
        }
    }

    fn push(&mut self, t: Tensor, entry: u64) -> Result<(), String> {
        self.text += entry;
        // Within the header limit, which `fits` checked.
        let end = u32::try_from(self.text - self.head.len() as u64)
            .map_err(|_| format!("internal error: a header of {} bytes", self.text))?;
        self.ends.push(end);
        self.data = t.end;
        self.placed.push(Placed {
            start: t.start,
            object: t.object,
            dtype: t.dtype,
        });
        Ok(())
    }

    fn finish(mut self) -> Shard {
        let len = padded(self.text);
        self.head[..8].copy_from_slice(&(len - 8).to_le_bytes());
        self.head.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.placed.shrink_to_fit();
        Shard {
            first_object: self.placed.first().map(|t| t.object),
            placed: self.placed,
            data_len: self.data,
            header: Pieced {
                head: self.head,
                ends: self.ends,
                tail: b"}".to_vec(),
                len,
            },
            bare: self.bare,
        }
    }
}

/// `,"name":{"dtype":..,"shape":[..],"data_offsets":[s,e]}` into `out`
/// (cleared first); without the comma when it is the `first` entry of a
/// header without `__metadata__`.
fn render_entry(out: &mut Vec<u8>, describe: Describe<'_>, t: &Tensor, first: bool) {
    let (name, shape) = describe(t.object);
    let mut s = String::with_capacity(name.len() + 80);
    if !first {
        s.push(',');
    }
    push_string(&mut s, name);
    s.push_str(r#":{"dtype":""#);
    s.push_str(t.dtype());
    s.push_str(r#"","shape":["#);
    for (i, d) in shape.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&d.to_string());
    }
    s.push_str(&format!(r#"],"data_offsets":[{},{}]}}"#, t.start, t.end));
    out.clear();
    out.extend_from_slice(s.as_bytes());
}

fn render_index_entry(
    out: &mut Vec<u8>,
    describe: Describe<'_>,
    object: u32,
    first: bool,
    file: &str,
) {
    let mut s = String::new();
    if !first {
        s.push(',');
    }
    push_string(&mut s, describe(object).0);
    s.push(':');
    push_string(&mut s, file);
    out.extend_from_slice(s.as_bytes());
}

/// The index of a sharded plan: `{"metadata":{"total_size":N},
/// "weight_map":{name: file, ...}}` and a newline.
fn index(shards: &[Shard], describe: Describe<'_>, total_size: u64) -> Result<Pieced, String> {
    let head =
        format!(r#"{{"metadata":{{"total_size":{total_size}}},"weight_map":{{"#).into_bytes();
    let n = shards.len();
    let mut ends = Vec::new();
    let (mut at, mut scratch) = (0u64, Vec::new());
    for (s, shard) in shards.iter().enumerate() {
        let file = shard_name(s, n);
        for t in shard.tensors() {
            scratch.clear();
            render_index_entry(&mut scratch, describe, t.object, ends.is_empty(), &file);
            at += scratch.len() as u64;
            let end = u32::try_from(at)
                .map_err(|_| format!("the index would pass 4 GiB ({} tensors)", ends.len()))?;
            ends.push(end);
        }
    }
    let tail = b"}}\n".to_vec();
    let len = head.len() as u64 + at + tail.len() as u64;
    Ok(Pieced {
        head,
        ends,
        tail,
        len,
    })
}

#[cfg(test)]
mod tests;
