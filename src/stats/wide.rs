//! The statistics' inner loops, each compiled for AVX2 too and run so
//! where the CPU has it (`sys::wide!`): small loops over a block of
//! values that the compiler makes wide. A float32 tensor (and every
//! dequantized one) has loops of its own, on its little-endian f32
//! values where they lie (a map, a read buffer: no copy): the same lanes,
//! the same sums in f64 and so the same numbers as its values widened to
//! f64, at twice the values a register.

/// Lanes of the wide loops: as many independent sums as keep the adds
/// busy (each waits for its lane's last), four AVX2 registers of f64.
pub const L: usize = 16;

/// The [`L`] lanes of [`first_lanes`] over values of type `T`.
pub struct FirstLanes<T> {
    pub lo: [T; L],
    pub hi: [T; L],
    pub sum: [f64; L],
    pub zero: [u64; L],
}

/// The first pass's and the squares' loops over elements `$e`, each the
/// number `$get(element)` of type `$t`.
macro_rules! lanes {
    ($first:ident, $squares:ident, $e:ty, $t:ty, $get:expr) => {
        crate::sys::wide! {
            /// The first pass's wide loop: value `k` of `v` into lane
            /// `k % L`'s minimum, maximum, plain f64 sum and count of
            /// zeros (the values past the last whole `L`, lane 0's).
            /// `min` and `max`, not a compare and a select, which the
            /// compiler makes one wide instruction each.
            pub fn $first(v: &[$e]) -> FirstLanes<$t> {
                let mut o = FirstLanes {
                    lo: [<$t>::INFINITY; L],
                    hi: [<$t>::NEG_INFINITY; L],
                    sum: [0.0; L],
                    zero: [0; L],
                };
                let chunks = v.chunks_exact(L);
                let rest = chunks.remainder();
                for c in chunks {
                    for l in 0..L {
                        let x: $t = $get(c[l]);
                        o.lo[l] = o.lo[l].min(x);
                        o.hi[l] = o.hi[l].max(x);
                        o.sum[l] += f64::from(x);
                        o.zero[l] += u64::from(x == 0.0);
                    }
                }
                for &x in rest {
                    let x: $t = $get(x);
                    o.lo[0] = o.lo[0].min(x);
                    o.hi[0] = o.hi[0].max(x);
                    o.sum[0] += f64::from(x);
                    o.zero[0] += u64::from(x == 0.0);
                }
                o
            }
        }

        crate::sys::wide! {
            /// The second pass's squares: `(x - mean)^2` in f64 of value
            /// `k` of `v` summed plain into lane `k % L` (the values past
            /// the last whole `L`, lane 0's).
            pub fn $squares(v: &[$e], mean: f64) -> [f64; L] {
                let mut sq = [0.0; L];
                let chunks = v.chunks_exact(L);
                let rest = chunks.remainder();
                for c in chunks {
                    for l in 0..L {
                        let d = f64::from($get(c[l])) - mean;
                        sq[l] += d * d;
                    }
                }
                for &x in rest {
                    let d = f64::from($get(x)) - mean;
                    sq[0] += d * d;
                }
                sq
            }
        }
    };
}

lanes!(first_lanes, square_lanes, f64, f64, |x| x);
lanes!(
    first_lanes32,
    square_lanes32,
    [u8; 4],
    f32,
    f32::from_le_bytes
);

crate::sys::wide! {
    /// Each value's bin by `(x - first) * scale` in f64 (see
    /// `Bins::index_block`): rounded to the nearest whole number by
    /// adding 1.5 x 2^52, whose low bits are then that number, less one
    /// where it rounded up; `u32::MAX` within `near` of a whole number.
    /// Returns the largest index.
    pub fn bin_index(v: &[f64], first: f64, scale: f64, near: f64, index: &mut [u32]) -> u32 {
        const MAGIC: f64 = 6_755_399_441_055_744.0;
        for (o, &x) in index.iter_mut().zip(v) {
            let f = (x - first) * scale;
            let t = f + MAGIC;
            let d = f - (t - MAGIC);
            let i = (t.to_bits() as u32).wrapping_sub(u32::from(d < 0.0));
            // Not `d.abs() <= near`: a NaN is near too.
            *o = if d.abs() > near { i } else { u32::MAX };
        }
        index.iter().fold(0, |m, &i| m.max(i))
    }
}

crate::sys::wide! {
    /// [`bin_index`] in f32, for little-endian f32 values and an f32
    /// `first`: eight values a register and the index straight from each
    /// lane's bits (1.5 x 2^23 added; the product is below 2^22).
    pub fn bin_index32(
        v: &[[u8; 4]],
        first: f32,
        scale: f32,
        near: f32,
        index: &mut [u32],
    ) -> u32 {
        const MAGIC: f32 = 12_582_912.0;
        for (o, &x) in index.iter_mut().zip(v) {
            let f = (f32::from_le_bytes(x) - first) * scale;
            let t = f + MAGIC;
            let d = f - (t - MAGIC);
            let i = (t.to_bits() & 0x3F_FFFF).wrapping_sub(u32::from(d < 0.0));
            *o = if d.abs() > near { i } else { u32::MAX };
        }
        index.iter().fold(0, |m, &i| m.max(i))
    }
}
