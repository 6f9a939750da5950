//! Row-major views of dense Hurray tensors stored in another layout,
//! computed by range (Hurray `memory-layout.md`, `layouts/*.md`).
//!
//! A [`Relayout`] maps a byte range of the *view* (the tensor's elements in
//! row-major order, packed as a row-major Hurray buffer holds them) to the
//! elements of buffer 0 that the range overlaps, and copies just those. It
//! allocates nothing proportional to the tensor: a read walks the output
//! elements in order, keeping a multi-index and a running source offset.
//!
//! This module knows nothing of the Hurray parser: the caller converts a
//! validated descriptor into an [`Order`], a shape, an element bit width and
//! a `byte_offset`, and checks buffer 0 against [`Relayout::stored_extent`].
//! Buffer 0 is a slice in memory ([`Relayout::read_into`]) or any
//! [`Stored`] source ([`Relayout::read_from`], a file read by range), which
//! a read asks only for the runs of bytes it covers.
//!
//! # Addressing (one model for every bit width)
//!
//! Every order maps a logical index to a signed *linear element offset*
//! `o`; element `o` occupies bits `[8·byte_offset + o·bits, … + bits)` of
//! buffer 0, LSB-first. For widths ≥ 8 that is `byte_offset + o·bits/8`
//! (`memory-layout.md` § Whole-Byte Types); for 1, 2, 4 it is byte
//! `byte_offset + ⌊o/P⌋`, bit `(o mod P)·B` (§ Sub-Byte Types, with floor
//! division for negative strided offsets); for 6 it is slot `o mod 4` of the
//! 3-byte group `byte_offset + 3·⌊o/4⌋`, whose bits `element-types.md`
//! § 6-bit packing places at `6·slot` of the little-endian 24-bit group —
//! the same bits. Bounds are checked at the granularity the spec addresses:
//! the byte for 1/2/4, the whole 3-byte group for 6 ("MUST be accessed at
//! the group level").
//!
//! # Spec readings
//!
//! - Strided: negative and zero strides are valid ("A conforming
//!   implementation MUST support them"); `byte_offset` points at element
//!   `[0, …, 0]` and every element must lie in `[0, len)`. The buffer must
//!   cover `min_offset ..= max_offset` (§ Buffer Size; its example's "offset
//!   -8 to 0 (9 elements)" ignores the positive column stride, so the
//!   formula is followed, not the example).
//! - Tiled: tile `t` starts at `t · product(tile_shape)` elements (§ Element
//!   Address, whose step 3 says "byte offset" but whose example counts
//!   elements). Partial edge tiles are stored in full ("The buffer MUST
//!   contain storage for full tiles, including padding"), so the stored
//!   extent covers every padded tile; the view skips the padding. A nested
//!   tiling tiles the outer tile's index space; its tile shape must divide
//!   the outer tile shape, else its own padding would not fit in
//!   `product(tile_shape)` and tiles would overlap — refused. At most
//!   [`MAX_TILING_DEPTH`] levels, counting the outermost.
//! - Morton: exactly the pseudocode of § Morton Index Computation, bit `b`
//!   of `i_d` at bit `b·rank + d` of the code, also when `morton_bits`
//!   differ (then the codes leave holes, and the extent is the largest code
//!   of the padded box `2^morton_bits[k]` plus one, which equals the spec's
//!   `2^sum(morton_bits)` when the bits are equal).
//! - Hilbert: element `X` is stored at offset `CoordsToHilbert(X)`, with
//!   `X[d]` the index along dimension `d`, exactly as § Normative Index
//!   Mapping writes it (Skilling 2004).
//! - Rank 0: only row-major ("only row-major (`0x01`) is permitted for
//!   scalars", `data-model.md` § Scalar Tensors).
//! - View length: `count · bits/8` bytes, `⌈count·bits/8⌉` for 1/2/4 and
//!   `⌈count/4⌉·3` for 6 (`element-types.md` § Buffer Size Calculation);
//!   the view's unused high bits are 0.
//! - An empty tensor reads nothing; its stored extent is `byte_offset`
//!   ("MUST be ≤ the buffer's byte size").
//!
//! The address maps each order builds once are in `orders.rs`; the run
//! planner they all share (the positions of a view's runs in the stored
//! buffer, with checked arithmetic) stays here, in one piece.

mod orders;

use orders::{
    affine, axis_range, column_major, hilbert_map, morton_axes, row_major, separable, tiled_axes,
};
use std::ops::Range;

/// The element bit widths a view is defined for.
pub const ELEM_BITS: [u32; 9] = [1, 2, 4, 6, 8, 16, 32, 64, 128];

/// Most tiling levels, the outermost included (`layouts/tiled.md`:
/// "RECOMMENDED: 8 levels").
pub const MAX_TILING_DEPTH: usize = 8;

/// Most dimensions (Hurray ADR-008: a normative rank cap of 64).
pub const MAX_RANK: usize = 64;

/// The order elements are stored in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Order {
    /// `0x01`: last dimension fastest.
    RowMajor,
    /// `0x02`: first dimension fastest.
    ColumnMajor,
    /// `0x03`: signed strides in logical elements, one per dimension.
    Strided(Vec<i64>),
    /// `0x04`: tiles.
    Tiled(Tiling),
    /// `0x05`: `morton_bits`, one per dimension.
    Morton(Vec<u32>),
    /// `0x40`: a Hilbert curve of `hilbert_order`; its rank is the tensor's.
    Hilbert {
        /// `hilbert_order`: every dimension is `2^order`.
        order: u32,
    },
}

/// A tile-grid order, or an in-tile order that is not tiled again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Simple {
    /// Row-major over the grid (or the tile).
    RowMajor,
    /// Column-major over the grid (or the tile).
    ColumnMajor,
    /// Strides in tiles (outer) or in logical elements (inner).
    Strided(Vec<i64>),
}

/// The order inside a tile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inner {
    /// A simple order over the tile's elements.
    Simple(Simple),
    /// The tile is tiled again (`inner_layout = 0x04`).
    Tiled(Box<Tiling>),
}

/// A tiled layout's fields (`layouts/tiled.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tiling {
    /// `tile_shape`, one per dimension, each > 0.
    pub tile: Vec<u64>,
    /// `outer_layout`: the order of tiles.
    pub outer: Simple,
    /// `inner_layout`: the order within a tile.
    pub inner: Inner,
}

/// One dimension's share of the linear offset: the offset of index `i` is
/// the sum over dimensions of `Axis::offset(i_k)`, and `offset(0) = 0`.
#[derive(Debug, Clone)]
enum Axis {
    /// `i · stride`.
    Affine { stride: i64 },
    /// Per level `(tile, weight)`: `(x / tile) · weight`, then `x %= tile`;
    /// finally `x · stride`. Each tile divides the one before it.
    Tiled {
        levels: Vec<(u64, i64)>,
        stride: i64,
    },
    /// Bit `b` of `i` at bit `b·rank + d`, spread a byte at a time.
    /// Bit `b` of `i` at bit `b·rank + d`, spread a byte at a time; from
    /// an even `i` to the next the code steps by `step = 2^d`.
    Morton {
        table: Box<[u64; 256]>,
        byte_shift: u32,
        step: i64,
    },
}

impl Axis {
    fn offset(&self, i: u64) -> i64 {
        match self {
            Axis::Affine { stride } => i as i64 * stride,
            Axis::Tiled { levels, stride } => {
                let mut x = i;
                let mut sum = 0i64;
                for &(tile, weight) in levels {
                    sum += (x / tile) as i64 * weight;
                    x %= tile;
                }
                sum + x as i64 * stride
            }
            Axis::Morton {
                table, byte_shift, ..
            } => {
                let (mut x, mut shift, mut code) = (i, 0u32, 0u64);
                while x != 0 {
                    let spread = table[(x & 0xFF) as usize];
                    code |= spread.checked_shl(shift).unwrap_or(0);
                    x >>= 8;
                    shift += byte_shift;
                }
                code as i64
            }
        }
    }

    /// The end of the run from `i` over which the offset steps by `step()`.
    fn run_end(&self, i: u64) -> u64 {
        match self {
            Axis::Affine { .. } => u64::MAX,
            Axis::Tiled { levels, .. } => {
                let t = levels.last().map_or(1, |l| l.0);
                (i / t + 1).saturating_mul(t)
            }
            Axis::Morton { .. } => (i | 1) + 1,
        }
    }

    fn step(&self) -> i64 {
        match self {
            Axis::Affine { stride } | Axis::Tiled { stride, .. } => *stride,
            Axis::Morton { step, .. } => *step,
        }
    }
}

/// How a logical index becomes a linear element offset.
#[derive(Debug, Clone)]
enum Map {
    /// A sum of per-dimension offsets over `dims` (size-1 dimensions dropped,
    /// affine neighbours merged).
    Separable { dims: Vec<u64>, axes: Vec<Axis> },
    /// Skilling's `CoordsToHilbert` over `rank` dimensions of `2^order`.
    Hilbert { rank: usize, order: u32 },
}

/// Buffer 0's bytes as a read takes them: a slice in memory, or a source
/// that fetches each range it is asked for (a file read by range).
pub trait Stored {
    /// The buffer's length in bytes.
    fn size(&self) -> u64;
    /// Fills `out` with the bytes at `pos`; the caller has checked that
    /// `[pos, pos + out.len())` lies within [`Stored::size`].
    fn read(&self, pos: u64, out: &mut [u8]) -> Result<(), String>;
}

impl Stored for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read(&self, pos: u64, out: &mut [u8]) -> Result<(), String> {
        out.copy_from_slice(&self[pos as usize..][..out.len()]);
        Ok(())
    }
}

/// A row-major view of a tensor stored in another order.
#[derive(Debug, Clone)]
pub struct Relayout {
    bits: u32,
    count: u64,
    len: u64,
    byte_offset: u64,
    extent: u64,
    map: Map,
}

impl Relayout {
    /// A view of a tensor of `shape` with `elem_bits`-wide elements stored in
    /// `order`, element `[0, …, 0]` at `byte_offset` of buffer 0. Errs when
    /// the combination is not well defined (see the module docs), lies
    /// before the buffer start, or overflows.
    pub fn new(
        shape: &[u64],
        elem_bits: u32,
        order: Order,
        byte_offset: u64,
    ) -> Result<Relayout, String> {
        if !ELEM_BITS.contains(&elem_bits) {
            return Err(format!(
                "element width {elem_bits:?} bits is not one of {ELEM_BITS:?}"
            ));
        }
        if shape.len() > MAX_RANK {
            return Err(format!("rank {} exceeds {MAX_RANK}", shape.len()));
        }
        if let Some(k) = shape.iter().position(|&d| d == u64::MAX) {
            return Err(format!("dimension {k} is dynamic (unresolved)"));
        }
        if shape.is_empty() && order != Order::RowMajor {
            return Err(format!("a scalar must be row-major, not {order:?}"));
        }
        let count = shape
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .ok_or_else(|| format!("shape {shape:?} has more than 2^64 elements"))?;
        let len = view_len(count, elem_bits)
            .ok_or_else(|| format!("a view of {count} elements overflows"))?;
        let (axes, domain) = match order {
            Order::Hilbert { order } => {
                let map = hilbert_map(shape, order)?;
                let top = 1i128 << (shape.len() as u32 * order);
                return finish(shape, elem_bits, count, len, byte_offset, 0, top - 1, map);
            }
            Order::RowMajor => (affine(&row_major(shape)?), shape.to_vec()),
            Order::ColumnMajor => (affine(&column_major(shape)?), shape.to_vec()),
            Order::Strided(s) => {
                check_rank("strides", s.len(), shape.len())?;
                (affine(&s), shape.to_vec())
            }
            Order::Tiled(t) => tiled_axes(shape, &t)?,
            Order::Morton(b) => morton_axes(shape, &b)?,
        };
        let (mut min, mut max) = (0i128, 0i128);
        for (axis, &d) in axes.iter().zip(&domain) {
            let (lo, hi) = axis_range(axis, d);
            min += lo;
            max += hi;
        }
        let map = separable(shape, axes);
        finish(shape, elem_bits, count, len, byte_offset, min, max, map)
    }

    /// Bytes of the row-major view.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the view has no bytes (an empty tensor).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer length every element (and every padding element the spec
    /// says the buffer holds) lies within, in bytes from buffer start.
    pub fn stored_extent(&self) -> u64 {
        self.extent
    }

    /// Fills `out` with view bytes `[offset, offset + out.len())` from
    /// `stored` (buffer 0's bytes), reading only the elements the range
    /// covers. Errs, and never panics, when the range passes the view's
    /// end or `stored` is shorter than [`Relayout::stored_extent`].
    pub fn read_into(&self, stored: &[u8], offset: u64, out: &mut [u8]) -> Result<(), String> {
        self.read_from(stored, offset, out)
    }

    /// [`Relayout::read_into`] from buffer 0's bytes read by range.
    pub fn read_from<S: Stored + ?Sized>(
        &self,
        stored: &S,
        offset: u64,
        out: &mut [u8],
    ) -> Result<(), String> {
        let end = offset.checked_add(out.len() as u64);
        if end.is_none_or(|e| e > self.len) {
            return Err(format!(
                "range [{offset}, +{}) passes the end of the view ({})",
                out.len(),
                self.len
            ));
        }
        if stored.size() < self.extent {
            return Err(format!(
                "buffer 0 holds {} bytes; the layout needs {}",
                stored.size(),
                self.extent
            ));
        }
        if out.is_empty() {
            return Ok(());
        }
        if self.bits >= 8 {
            self.read_whole(stored, offset, out)
        } else {
            self.read_packed(stored, offset, out)
        }
    }

    /// Whole-byte elements: a partial element at each end through a small
    /// buffer, whole elements in between straight into `out`.
    fn read_whole<S: Stored + ?Sized>(
        &self,
        stored: &S,
        offset: u64,
        out: &mut [u8],
    ) -> Result<(), String> {
        let eb = (self.bits / 8) as u64;
        let mut tmp = [0u8; 16];
        let mut e = offset / eb;
        let mut out = out;
        let skip = (offset % eb) as usize;
        if skip != 0 {
            self.copy_elements(stored, e, &mut tmp[..eb as usize])?;
            let n = out.len().min(eb as usize - skip);
            out[..n].copy_from_slice(&tmp[skip..skip + n]);
            out = &mut out[n..];
            e += 1;
        }
        let whole = out.len() / eb as usize * eb as usize;
        let (body, tail) = out.split_at_mut(whole);
        self.copy_elements(stored, e, body)?;
        if !tail.is_empty() {
            self.copy_elements(stored, e + whole as u64 / eb, &mut tmp[..eb as usize])?;
            let n = tail.len();
            tail.copy_from_slice(&tmp[..n]);
        }
        Ok(())
    }

    /// Copies whole elements `first..` into `dst` (a multiple of the element
    /// size), a run at a time.
    fn copy_elements<S: Stored + ?Sized>(
        &self,
        stored: &S,
        first: u64,
        dst: &mut [u8],
    ) -> Result<(), String> {
        let eb = (self.bits / 8) as usize;
        let mut at = 0usize;
        self.for_each_run(first, (dst.len() / eb) as u64, &mut |src, n, step| {
            let pos = position(self.byte_offset as i64, src, 0, 0, eb as i64)?;
            let n = n as usize;
            if step == 1 || n == 1 {
                stored_read(stored, pos, &mut dst[at..at + n * eb])?;
                at += n * eb;
                return Ok(());
            }
            for j in 0..n as i64 {
                let pos = position(self.byte_offset as i64, src, j, step, eb as i64)?;
                stored_read(stored, pos, &mut dst[at..at + eb])?;
                at += eb;
            }
            Ok(())
        })
    }

    /// Sub-byte elements: the elements overlapping the range, each read from
    /// its stored bits and OR-ed into the view's bits, clipped to `out`.
    fn read_packed<S: Stored + ?Sized>(
        &self,
        stored: &S,
        offset: u64,
        out: &mut [u8],
    ) -> Result<(), String> {
        out.fill(0);
        let bits = self.bits as u64;
        let first = offset * 8 / bits;
        let end = ((offset + out.len() as u64) * 8)
            .div_ceil(bits)
            .min(self.count);
        if first >= end {
            return Ok(());
        }
        let mask = (1u16 << bits) - 1;
        let base = self.byte_offset as i64 * 8;
        let window = offset as i64 * 8..(offset + out.len() as u64) as i64 * 8;
        let mut e = first as i64;
        self.for_each_run(first, end - first, &mut |src, n, step| {
            for j in 0..n as i64 {
                let at = position(base, src, j, step, bits as i64)?;
                let v = stored_bits(stored, at, self.bits)? & mask;
                put_bits(out, &window, e * bits as i64, v);
                e += 1;
            }
            Ok(())
        })
    }

    /// Calls `f(source_offset, n, step)` for consecutive runs covering
    /// row-major elements `first .. first + count`: run element `j` is at
    /// linear offset `source_offset + j·step`.
    fn for_each_run(
        &self,
        first: u64,
        count: u64,
        f: &mut dyn FnMut(i64, u64, i64) -> Result<(), String>,
    ) -> Result<(), String> {
        if count == 0 {
            return Ok(());
        }
        match &self.map {
            Map::Separable { dims, axes } => separable_runs(dims, axes, first, count, f),
            Map::Hilbert { rank, order } => hilbert_runs(*rank, *order, first, count, f),
        }
    }
}

/// `base + (src + j·step)·unit`, or an error where it overflows: the view
/// was checked to stay within the buffer, so an overflow is a run the plan
/// got wrong, and a wrapped position would read wrong bytes (found by the
/// hurray fuzz target: a strided float4 view of 1.7e19 elements).
fn position(base: i64, src: i64, j: i64, step: i64, unit: i64) -> Result<i64, String> {
    j.checked_mul(step)
        .and_then(|o| o.checked_add(src))
        .and_then(|e| e.checked_mul(unit))
        .and_then(|b| b.checked_add(base))
        .ok_or_else(|| format!("element {src} + {j}·{step} overflows its position"))
}

/// Checks the offset range `[min, max]` against the buffer start and builds
/// the view.
#[allow(clippy::too_many_arguments)]
fn finish(
    shape: &[u64],
    bits: u32,
    count: u64,
    len: u64,
    byte_offset: u64,
    min: i128,
    max: i128,
    map: Map,
) -> Result<Relayout, String> {
    // The view's bit positions are i64 while reading (found by the hurray
    // fuzz target: a strided float4 view of 1.7e19 elements, 8.4e18 bytes,
    // whose offsets times 8 wrapped and read other elements' bits).
    if u128::from(len) * 8 > i64::MAX as u128 {
        return Err(format!(
            "a view of {len} bytes is past what its bit positions address (2^60 bytes)"
        ));
    }
    let extent = if count == 0 {
        byte_offset
    } else {
        let lo = group_start(byte_offset, min, bits);
        if lo < 0 {
            return Err(format!(
                "element offset {min} of shape {shape:?} lies {} bytes before buffer 0 (byte_offset {byte_offset})",
                -lo
            ));
        }
        let hi = group_start(byte_offset, max, bits) + group_bytes(bits);
        // Bit positions are kept in i64 while reading.
        let top_bit = i128::from(byte_offset) * 8 + (max + 1) * i128::from(bits);
        if top_bit > i128::from(i64::MAX) {
            return Err(format!("element offset {max} of shape {shape:?} overflows"));
        }
        hi as u64
    };
    Ok(Relayout {
        bits,
        count,
        len,
        byte_offset,
        extent,
        map,
    })
}

/// The first byte of the addressing unit (element, byte, or 3-byte group)
/// holding element `o`.
fn group_start(byte_offset: u64, o: i128, bits: u32) -> i128 {
    let b = i128::from(byte_offset);
    match bits {
        6 => b + 3 * o.div_euclid(4),
        1 | 2 | 4 => b + (o * i128::from(bits)).div_euclid(8),
        _ => b + o * i128::from(bits / 8),
    }
}

/// Bytes of the addressing unit [`group_start`] points at.
fn group_bytes(bits: u32) -> i128 {
    match bits {
        6 => 3,
        1 | 2 | 4 => 1,
        _ => i128::from(bits / 8),
    }
}

/// Bytes of a row-major buffer of `count` elements.
fn view_len(count: u64, bits: u32) -> Option<u64> {
    match bits {
        6 => count.div_ceil(4).checked_mul(3),
        1 | 2 | 4 => Some(count.div_ceil(u64::from(8 / bits))),
        _ => count.checked_mul(u64::from(bits / 8)),
    }
}

fn check_rank(what: &str, got: usize, rank: usize) -> Result<(), String> {
    if got != rank {
        return Err(format!("{got} {what} for rank {rank}"));
    }
    Ok(())
}

fn to_i64(v: i128, what: &str) -> Result<i64, String> {
    i64::try_from(v).map_err(|_| format!("{what} {v} overflows"))
}

fn separable_runs(
    dims: &[u64],
    axes: &[Axis],
    first: u64,
    count: u64,
    f: &mut dyn FnMut(i64, u64, i64) -> Result<(), String>,
) -> Result<(), String> {
    let Some(last) = dims.len().checked_sub(1) else {
        return f(0, 1, 1);
    };
    let mut idx = unravel(dims, first);
    // partial[k]: the offset of dimensions 0..k.
    let mut partial = vec![0i64; dims.len()];
    for k in 0..last {
        partial[k + 1] = partial[k] + axes[k].offset(idx[k]);
    }
    let mut left = count;
    loop {
        let i = idx[last];
        let n = (dims[last] - i).min(axes[last].run_end(i) - i).min(left);
        f(partial[last] + axes[last].offset(i), n, axes[last].step())?;
        left -= n;
        if left == 0 {
            return Ok(());
        }
        idx[last] += n;
        if idx[last] == dims[last] {
            let mut k = last;
            while idx[k] == dims[k] && k > 0 {
                idx[k] = 0;
                k -= 1;
                idx[k] += 1;
            }
            for j in k..last {
                partial[j + 1] = partial[j] + axes[j].offset(idx[j]);
            }
        }
    }
}

fn hilbert_runs(
    rank: usize,
    order: u32,
    first: u64,
    count: u64,
    f: &mut dyn FnMut(i64, u64, i64) -> Result<(), String>,
) -> Result<(), String> {
    let side = 1u64 << order;
    let dims = vec![side; rank];
    let mut idx = unravel(&dims, first);
    let mut x = vec![0u64; rank];
    for _ in 0..count {
        x.copy_from_slice(&idx);
        f(coords_to_hilbert(&mut x, order) as i64, 1, 1)?;
        let mut k = rank - 1;
        idx[k] += 1;
        while idx[k] == side && k > 0 {
            idx[k] = 0;
            k -= 1;
            idx[k] += 1;
        }
    }
    Ok(())
}

/// `CoordsToHilbert(X, r, p)` of `layouts/hilbert.md` § Normative Index
/// Mapping (Skilling 2004), line for line; `x` is overwritten.
fn coords_to_hilbert(x: &mut [u64], p: u32) -> u64 {
    let r = x.len();
    let m = 1u64 << (p - 1);
    let mut q = m;
    while q > 1 {
        let pm = q - 1;
        for i in 0..r {
            // Branch-free: when bit q of x[i] is set, invert the low bits of
            // x[0]; else exchange the low bits of x[0] and x[i] (t = 0 for
            // i = 0, as in the spec).
            let set = 0u64.wrapping_sub((x[i] & q != 0) as u64);
            let t = (x[0] ^ x[i]) & pm & !set;
            x[0] ^= t ^ (pm & set);
            x[i] ^= t;
        }
        q >>= 1;
    }
    for i in 1..r {
        x[i] ^= x[i - 1];
    }
    let mut t = 0;
    q = m;
    while q > 1 {
        if x[r - 1] & q != 0 {
            t ^= q - 1;
        }
        q >>= 1;
    }
    for xi in x.iter_mut() {
        *xi ^= t;
    }
    let mut h = 0u64;
    for b in 0..p as usize {
        for (d, &xd) in x.iter().enumerate() {
            h |= ((xd >> b) & 1) << (b * r + (r - 1 - d));
        }
    }
    h
}

/// The row-major multi-index of element `e` of `dims`.
fn unravel(dims: &[u64], mut e: u64) -> Vec<u64> {
    let mut idx = vec![0u64; dims.len()];
    for k in (0..dims.len()).rev() {
        idx[k] = e % dims[k];
        e /= dims[k];
    }
    idx
}

/// Fills `out` with the stored bytes at `pos`, after checking they lie
/// within the buffer.
fn stored_read<S: Stored + ?Sized>(stored: &S, pos: i64, out: &mut [u8]) -> Result<(), String> {
    let n = out.len();
    let inside = u64::try_from(pos)
        .ok()
        .filter(|&p| p.checked_add(n as u64).is_some_and(|e| e <= stored.size()));
    match inside {
        Some(p) => stored.read(p, out),
        None => Err(format!(
            "bytes [{pos}, +{n}) lie outside buffer 0 ({} bytes)",
            stored.size()
        )),
    }
}

/// The `bits`-wide field at bit `at` of `stored`, LSB-first.
fn stored_bits<S: Stored + ?Sized>(stored: &S, at: i64, bits: u32) -> Result<u16, String> {
    let byte = at.div_euclid(8);
    let shift = at.rem_euclid(8) as u32;
    let n = if shift + bits > 8 { 2 } else { 1 };
    let mut b = [0u8; 2];
    stored_read(stored, byte, &mut b[..n])?;
    let w = u16::from(b[0]) | (u16::from(b[1]) << 8);
    Ok(w >> shift)
}

/// ORs `v` into the view at view bit `at`, keeping only the bits inside
/// `window` (the view bits `out` holds).
fn put_bits(out: &mut [u8], window: &Range<i64>, at: i64, v: u16) {
    let byte = at.div_euclid(8);
    let w = u32::from(v) << at.rem_euclid(8);
    for j in 0..2 {
        let b = byte + j;
        if b * 8 >= window.start && b * 8 < window.end {
            let part = (w >> (8 * j)) as u8;
            out[((b * 8 - window.start) / 8) as usize] |= part;
        }
    }
}

#[cfg(test)]
mod tests;
