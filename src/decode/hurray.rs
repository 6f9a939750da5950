//! The computed `data` of a Hurray tensor: its row-major elements when
//! they are not one range of the file ([`Data::Computed`]).
//!
//! * A dense tensor in another layout (column-major, strided, tiled,
//!   Morton, Hilbert): a [`Relayout`] over its buffer 0.
//! * A partition composite: its members' boxes tile the head's shape
//!   exactly (checked by the parser), so each run of the head's last
//!   dimension is a run of one member's own row-major data, read from
//!   that member's range of the file or its own view, recursively.
//!   Members must all have row-major data of whole-byte elements; a
//!   partition of sub-byte elements is not offered (its runs are not
//!   byte-aligned).
//! * A quantized tensor: its float32 values by its scheme's formula
//!   (`crate::decode::dequant::schemes`).
//!
//! [`RowMajor`] is also the view of every other tensor whose row-major
//! bytes are computed by range: a PyTorch tensor strided over its storage
//! ([`RowMajor::strided`]) and a ggml block tensor's values
//! ([`RowMajor::dequantized`]).
//!
//! A [`RowMajor`] reads any byte range of the head's data from the file's
//! bytes by range ([`Ranges`]), touching only the elements the range
//! covers, with no allocation in proportion to the tensor: from a map it
//! reads the mapped bytes in place; from a file read by range requests it
//! asks for each run of stored bytes (an element, for a layout whose
//! neighbours in the view lie apart), which the store's block cache
//! answers.

use super::relayout::{Inner, Order, Relayout, Simple, Stored, Tiling};
use crate::format::hurray::objects::{data_of, Data};
use crate::format::hurray::{File, Layout, Tensor, TileInner, TileOrder, Tiled};
use crate::format::Ranges;

/// A computed row-major view of one tensor.
#[derive(Debug)]
pub struct RowMajor {
    len: u64,
    kind: Kind,
    /// Sign bits flipped after reading ([`RowMajor::with_sign_flip`]).
    flip: Option<(u64, u8)>,
}

#[derive(Debug)]
enum Kind {
    /// Buffer 0 at `[start, start + len)` of the file, reordered.
    Relayout {
        start: u64,
        stored: u64,
        r: Relayout,
    },
    Partition(Partition),
    /// A quantized tensor's values, from its blocks.
    Values(crate::decode::dequant::values::Values),
    /// A Hurray quantized tensor's values, by its scheme.
    Quantized(crate::decode::dequant::schemes::Quantized),
    /// A zTensor quantization profile's values, from its raw parts.
    Profile(crate::decode::views::ByRange),
    /// A PyTorch quantized tensor's values, from its integers' view.
    Affine {
        ints: Box<RowMajor>,
        affine: crate::decode::dequant::torch::Affine,
    },
}

/// Where a partition member's row-major bytes are.
#[derive(Debug)]
enum Source {
    /// A range of the file, as stored.
    Direct { offset: u64 },
    /// The member's own computed view.
    Computed(Box<RowMajor>),
}

#[derive(Debug)]
struct Member {
    offset: Vec<u64>,
    shape: Vec<u64>,
    source: Source,
}

#[derive(Debug)]
struct Partition {
    shape: Vec<u64>,
    /// Bytes per element.
    width: u64,
    members: Vec<Member>,
}

/// The composite heads' direct members, by head (see
/// [`crate::format::hurray::composite_members`]).
pub type Members = [(usize, Vec<usize>)];

/// The computed view of tensor `i` of `file` (`None` when its data is a
/// range of the file or absent); an error says why a view that should
/// exist cannot be made. `members` is `composite_members(&file.tensors)`.
pub fn view(file: &File, i: usize, members: &Members) -> Option<Result<RowMajor, String>> {
    let t = &file.tensors[i];
    if data_of(t) != Data::Computed {
        return None;
    }
    if t.descriptor.quantization.is_some() {
        return Some(quantized(t));
    }
    Some(match &t.descriptor.layout {
        Layout::Composite(_) => partition(file, i, members, 0),
        _ => relayout(t),
    })
}

fn quantized(t: &Tensor) -> Result<RowMajor, String> {
    let q = crate::decode::dequant::schemes::Quantized::new(t)?;
    Ok(RowMajor {
        len: q.len(),
        kind: Kind::Quantized(q),
        flip: None,
    })
}

fn relayout(t: &Tensor) -> Result<RowMajor, String> {
    let d = &t.descriptor;
    let order = match &d.layout {
        Layout::ColumnMajor => Order::ColumnMajor,
        Layout::Strided(s) => Order::Strided(s.clone()),
        Layout::Tiled(x) => Order::Tiled(tiling(x)),
        Layout::Morton(bits) => Order::Morton(bits.clone()),
        Layout::Hilbert { order } => Order::Hilbert { order: *order },
        _ => return Err("not a dense layout".into()),
    };
    let (Some(b), Some(&start)) = (d.buffers.first(), t.buffer_offsets.first()) else {
        return Err("no buffer 0".into());
    };
    let r = Relayout::new(&d.shape, d.elem.bits(), order, d.byte_offset)?;
    if r.stored_extent() > b.size {
        return Err(format!(
            "buffer 0 holds {} bytes; the layout reaches byte {}",
            b.size,
            r.stored_extent()
        ));
    }
    Ok(RowMajor {
        len: r.len(),
        kind: Kind::Relayout {
            start,
            stored: b.size,
            r,
        },
        flip: None,
    })
}

fn partition(file: &File, i: usize, members: &Members, depth: usize) -> Result<RowMajor, String> {
    let t = &file.tensors[i];
    let d = &t.descriptor;
    let bits = d.elem.bits();
    if !bits.is_multiple_of(8) || bits == 0 {
        return Err(format!(
            "a partition of {} elements ({bits} bits) is not offered: its runs are not byte-aligned",
            d.elem.name()
        ));
    }
    let width = u64::from(bits / 8);
    let direct = members
        .binary_search_by_key(&i, |m| m.0)
        .map(|k| &members[k].1)
        .map_err(|_| "the composite's members are unknown".to_string())?;
    let mut out = Vec::with_capacity(direct.len());
    for &m in direct {
        let mt = &file.tensors[m];
        let md = &mt.descriptor;
        let shard = md.shard.as_ref().ok_or("a member has no shard section")?;
        if md.quantization.is_some() {
            return Err(format!(
                "member {:?} is quantized: a partition of quantized members is not offered",
                mt.name
            ));
        }
        let source = match data_of(mt) {
            Data::Direct { offset, .. } => Source::Direct { offset },
            Data::Computed if matches!(md.layout, Layout::Composite(_)) => {
                if depth >= crate::format::hurray::MAX_COMPOSITE_DEPTH {
                    return Err("composites nest too deep".into());
                }
                Source::Computed(Box::new(partition(file, m, members, depth + 1)?))
            }
            Data::Computed => Source::Computed(Box::new(relayout(mt)?)),
            Data::Absent(why) => {
                return Err(format!("member {:?} has no row-major data: {why}", mt.name))
            }
        };
        if md.elem != d.elem {
            return Err(format!("member {:?} is not of the head's type", mt.name));
        }
        out.push(Member {
            offset: shard.offset.clone(),
            shape: md.shape.clone(),
            source,
        });
    }
    let count =
        crate::format::hurray::objects::static_count(&d.shape).ok_or("a dimension is dynamic")?;
    let len = count.checked_mul(width).ok_or("the size overflows")?;
    Ok(RowMajor {
        len,
        kind: Kind::Partition(Partition {
            shape: d.shape.clone(),
            width,
            members: out,
        }),
        flip: None,
    })
}

impl RowMajor {
    /// The row-major view of a tensor of `shape` whose `elem_bits`-wide
    /// elements lie at `stride` elements apart, element `[0, …, 0]` at
    /// `byte_offset` of the `stored` bytes at `start` of the file (a
    /// PyTorch strided view of its storage).
    pub fn strided(
        start: u64,
        stored: u64,
        shape: &[u64],
        elem_bits: u32,
        stride: &[u64],
        byte_offset: u64,
    ) -> Result<RowMajor, String> {
        let stride = (stride.iter())
            .map(|&s| i64::try_from(s).map_err(|_| format!("stride {s} too large")))
            .collect::<Result<Vec<_>, _>>()?;
        let r = Relayout::new(shape, elem_bits, Order::Strided(stride), byte_offset)?;
        if r.stored_extent() > stored {
            return Err(format!(
                "the storage holds {stored} bytes; the view reaches byte {}",
                r.stored_extent()
            ));
        }
        Ok(RowMajor {
            len: r.len(),
            kind: Kind::Relayout { start, stored, r },
            flip: None,
        })
    }

    /// The same view with the top bit of byte `k` of every `period` bytes
    /// flipped, for each bit `k` of `mask`: a PyTorch tensor's negative or
    /// conjugate bit applied to its values (`period` at most 8).
    pub fn with_sign_flip(self, flip: Option<(u64, u8)>) -> RowMajor {
        RowMajor { flip, ..self }
    }

    /// The values of a quantized tensor: `count` elements of ggml block
    /// type `ty` whose blocks are the `stored` bytes at `start` of the
    /// file, as little-endian f32 ([`crate::decode::dequant::values`]).
    pub fn dequantized(ty: &str, start: u64, stored: u64, count: u64) -> Result<RowMajor, String> {
        let v = crate::decode::dequant::values::Values::new(ty, start, stored, count)?;
        Ok(RowMajor {
            len: v.len(),
            kind: Kind::Values(v),
            flip: None,
        })
    }

    /// The values of a `zt.mx/1` or `zt.quant_group/1` object, computed by
    /// range from its raw parts ([`crate::decode::views::by_range`]).
    pub fn profile(v: crate::decode::views::ByRange) -> RowMajor {
        RowMajor {
            len: v.len(),
            kind: Kind::Profile(v),
            flip: None,
        }
    }

    /// The values of a PyTorch quantized tensor whose integers are `ints`
    /// (its strided view of its storage), as `affine` dequantizes them.
    pub fn torch_affine(ints: RowMajor, affine: crate::decode::dequant::torch::Affine) -> RowMajor {
        RowMajor {
            len: ints.len() / affine.ty.width() * 4,
            kind: Kind::Affine {
                ints: Box::new(ints),
                affine,
            },
            flip: None,
        }
    }

    /// The block type the view dequantizes, for a quantized tensor's
    /// values ([`RowMajor::dequantized`]).
    pub fn dequantized_from(&self) -> Option<&'static str> {
        match &self.kind {
            Kind::Values(v) => Some(v.ty()),
            Kind::Quantized(q) => Some(q.scheme()),
            Kind::Profile(p) => Some(p.layout()),
            Kind::Affine { affine, .. } => Some(affine.name()),
            Kind::Relayout { .. } | Kind::Partition(_) => None,
        }
    }

    /// [`RowMajor::read_into`] for a large range (a command's, not a
    /// FUSE worker's): the dequantizing of a quantized tensor's values is
    /// split over the machine's cores.
    pub fn read_parallel(
        &self,
        file: &(dyn Ranges + Sync),
        offset: u64,
        out: &mut [u8],
    ) -> Result<(), String> {
        match &self.kind {
            Kind::Values(v) => v.read_parallel(file, offset, out),
            Kind::Relayout { .. }
            | Kind::Partition(_)
            | Kind::Quantized(_)
            | Kind::Profile(_)
            | Kind::Affine { .. } => self.read_into(file, offset, out),
        }
    }

    /// The view's size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for a view of no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Fills `out` with the view's bytes from `offset`, reading the
    /// stored bytes from `file` (the whole file, by range). The range must
    /// lie within the view.
    pub fn read_into(&self, file: &dyn Ranges, offset: u64, out: &mut [u8]) -> Result<(), String> {
        if offset
            .checked_add(out.len() as u64)
            .is_none_or(|e| e > self.len)
        {
            return Err(format!("range past the view's {} bytes", self.len));
        }
        let read = match &self.kind {
            Kind::Relayout { start, stored, r } => match file.in_memory() {
                Some(bytes) => r.read_into(slice(bytes, *start, *stored)?, offset, out),
                None => {
                    let end = start.checked_add(*stored).filter(|&e| e <= file.size());
                    if end.is_none() {
                        return Err(past_end(*start, *stored));
                    }
                    let fetched = Fetched {
                        file,
                        start: *start,
                        len: *stored,
                    };
                    r.read_from(&fetched, offset, out)
                }
            },
            Kind::Partition(p) => p.read_into(file, offset, out),
            Kind::Values(v) => v.read_into(file, offset, out),
            Kind::Quantized(q) => q.read_into(file, offset, out),
            Kind::Profile(p) => p.read_into(file, offset, out),
            Kind::Affine { ints, affine } => affine_into(ints, affine, file, offset, out),
        };
        if let (Ok(()), Some((period, mask))) = (&read, self.flip) {
            for (pos, b) in (offset..).zip(out.iter_mut()) {
                if mask & (1 << (pos % period)) != 0 {
                    *b ^= 0x80;
                }
            }
        }
        read
    }
}

/// Bytes `[offset, +out.len())` of a quantized tensor's f32 values: the
/// integers of the elements under the range, read from their view, then
/// dequantized.
fn affine_into(
    ints: &RowMajor,
    affine: &crate::decode::dequant::torch::Affine,
    file: &dyn Ranges,
    offset: u64,
    out: &mut [u8],
) -> Result<(), String> {
    let (first, end) = (offset / 4, (offset + out.len() as u64).div_ceil(4));
    let w = affine.ty.width();
    let mut q = vec![0u8; ((end - first) * w) as usize];
    ints.read_into(file, first * w, &mut q)?;
    let mut values = vec![0u8; ((end - first) * 4) as usize];
    affine.values(file, first, &q, &mut values)?;
    let from = (offset - first * 4) as usize;
    out.copy_from_slice(&values[from..from + out.len()]);
    Ok(())
}

fn slice(file: &[u8], start: u64, len: u64) -> Result<&[u8], String> {
    let end = start.checked_add(len).ok_or("range overflows")?;
    usize::try_from(start)
        .ok()
        .zip(usize::try_from(end).ok())
        .and_then(|(s, e)| file.get(s..e))
        .ok_or_else(|| past_end(start, len))
}

/// Fills `out` with the file's bytes at `start`: from memory, or
/// fetched.
fn copy_from(file: &dyn Ranges, start: u64, out: &mut [u8]) -> Result<(), String> {
    let len = out.len() as u64;
    if let Some(bytes) = file.in_memory() {
        out.copy_from_slice(slice(bytes, start, len)?);
        return Ok(());
    }
    if start.checked_add(len).is_none_or(|e| e > file.size()) {
        return Err(past_end(start, len));
    }
    let bytes = file.get(start, len).map_err(|e| e.to_string())?;
    out.copy_from_slice(&bytes);
    Ok(())
}

fn past_end(start: u64, len: u64) -> String {
    format!(
        "bytes [{start}, {}) are past the file's end",
        start.saturating_add(len)
    )
}

/// Buffer 0 of a file read by range: `[start, start + len)`, checked to
/// lie within the file.
struct Fetched<'a> {
    file: &'a dyn Ranges,
    start: u64,
    len: u64,
}

impl Stored for Fetched<'_> {
    fn size(&self) -> u64 {
        self.len
    }

    fn read(&self, pos: u64, out: &mut [u8]) -> Result<(), String> {
        copy_from(self.file, self.start + pos, out)
    }
}

impl Partition {
    fn read_into(&self, file: &dyn Ranges, offset: u64, out: &mut [u8]) -> Result<(), String> {
        let w = self.width;
        let rank = self.shape.len();
        let mut idx = vec![0u64; rank];
        let mut local = vec![0u64; rank];
        let (mut pos, mut done) = (offset, 0usize);
        while done < out.len() {
            let (e, intra) = (pos / w, pos % w);
            unravel(e, &self.shape, &mut idx);
            let m = self
                .members
                .iter()
                .find(|m| contains(m, &idx))
                .ok_or_else(|| format!("no member holds element {idx:?}"))?;
            for k in 0..rank {
                local[k] = idx[k] - m.offset[k];
            }
            // Elements left in this member's row, from idx on.
            let run = match rank {
                0 => 1,
                _ => m.offset[rank - 1] + m.shape[rank - 1] - idx[rank - 1],
            };
            let at = ravel(&local, &m.shape) * w + intra;
            let n = (run * w - intra).min((out.len() - done) as u64) as usize;
            let dst = &mut out[done..done + n];
            match &m.source {
                Source::Direct { offset } => {
                    let start = offset.checked_add(at).ok_or("offset overflows")?;
                    copy_from(file, start, dst)?;
                }
                Source::Computed(v) => v.read_into(file, at, dst)?,
            }
            done += n;
            pos += n as u64;
        }
        Ok(())
    }
}

fn contains(m: &Member, idx: &[u64]) -> bool {
    (m.offset.iter().zip(&m.shape).zip(idx)).all(|((&o, &n), &i)| i >= o && i - o < n)
}

/// The multi-index of row-major element `e` of `shape` into `idx`.
pub(crate) fn unravel(mut e: u64, shape: &[u64], idx: &mut [u64]) {
    for k in (0..shape.len()).rev() {
        let n = shape[k].max(1);
        idx[k] = e % n;
        e /= n;
    }
}

/// The row-major element number of `idx` in `shape`.
pub(crate) fn ravel(idx: &[u64], shape: &[u64]) -> u64 {
    idx.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}

fn simple(o: &TileOrder) -> Simple {
    match o {
        TileOrder::RowMajor => Simple::RowMajor,
        TileOrder::ColumnMajor => Simple::ColumnMajor,
        TileOrder::Strided(s) => Simple::Strided(s.clone()),
    }
}

fn tiling(x: &Tiled) -> Tiling {
    Tiling {
        tile: x.tile.clone(),
        outer: simple(&x.outer),
        inner: match &x.inner {
            TileInner::Order(o) => Inner::Simple(simple(o)),
            TileInner::Tiled(t) => Inner::Tiled(Box::new(tiling(t))),
        },
    }
}
