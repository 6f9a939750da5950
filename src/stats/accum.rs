//! The two passes over a tensor's numbers, each a piece at a time and
//! merged in order: the first counts and finds the range and the mean;
//! the second, knowing them, the histogram and the squared deviations
//! (the population variance, as `np.std` computes it: two passes).
//!
//! Sums are compensated (Neumaier) in f64, so that the mean and the
//! deviation are within a few units in the last place of the exact ones,
//! whatever the order of the pieces; numpy's pairwise sums are within
//! `log2(n)` units, so the two agree to far better than 1e-12 of the
//! values' scale.

use super::values::BLOCK;
use super::wide::{self, FirstLanes, L};

/// A compensated sum (Neumaier's variant of Kahan's).
#[derive(Debug, Clone, Copy, Default)]
pub struct Sum {
    sum: f64,
    comp: f64,
}

impl Sum {
    #[inline]
    pub fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if self.sum.abs() >= x.abs() {
            self.comp += (self.sum - t) + x;
        } else {
            self.comp += (x - t) + self.sum;
        }
        self.sum = t;
    }

    pub fn merge(&mut self, o: Sum) {
        self.add(o.sum);
        if o.sum.is_finite() {
            self.add(o.comp);
        }
    }

    /// The sum; past float64, the plain sum's infinity (the compensation
    /// is then a NaN of inf - inf).
    pub fn value(self) -> f64 {
        match self.sum.is_finite() {
            true => self.sum + self.comp,
            false => self.sum,
        }
    }
}

/// The sum of `L` lanes, in a fixed order.
#[inline(always)]
fn lanes_sum(mut s: [f64; L]) -> f64 {
    // Halves added lane to lane until one is left: a fixed tree.
    let mut n = L;
    while n > 1 {
        n /= 2;
        for l in 0..n {
            s[l] += s[l + n];
        }
    }
    s[0]
}

/// True when every value of `v` is finite: one wide pass, no branch.
fn all_finite(v: &[f64]) -> bool {
    v.iter().fold(true, |all, &x| all & x.is_finite())
}

/// What the first pass finds in a piece.
#[derive(Debug, Clone, Copy)]
pub struct First {
    pub count: u64,
    pub nan: u64,
    pub posinf: u64,
    pub neginf: u64,
    pub zero: u64,
    pub finite: u64,
    pub min: f64,
    pub max: f64,
    pub sum: Sum,
}

impl Default for First {
    fn default() -> First {
        First {
            count: 0,
            nan: 0,
            posinf: 0,
            neginf: 0,
            zero: 0,
            finite: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            sum: Sum::default(),
        }
    }
}

impl First {
    #[inline]
    pub fn add(&mut self, x: f64) {
        self.count += 1;
        if x.is_finite() {
            self.finite += 1;
            self.zero += u64::from(x == 0.0);
            self.min = self.min.min(x);
            self.max = self.max.max(x);
            self.sum.add(x);
        } else if x.is_nan() {
            self.nan += 1;
        } else if x > 0.0 {
            self.posinf += 1;
        } else {
            self.neginf += 1;
        }
    }

    /// [`First::add`] of each of `v`, by [`wide::first_lanes`]: the sum
    /// plain in lanes then added compensated (a block of 512 loses at most
    /// a few units of its own last place). A block with a value that is
    /// not finite (its lanes' sum then is not) is done again one value at
    /// a time, as is one whose sum passes float64.
    pub fn add_block(&mut self, v: &[f64]) {
        if !self.add_lanes(v.len(), wide::first_lanes(v)) {
            v.iter().for_each(|&x| self.add(x));
        }
    }

    /// [`First::add_block`] of little-endian f32 values, the same
    /// numbers.
    pub fn add_block32(&mut self, v: &[[u8; 4]]) {
        if !self.add_lanes(v.len(), wide::first_lanes32(v)) {
            v.iter()
                .for_each(|&x| self.add(f64::from(f32::from_le_bytes(x))));
        }
    }

    /// Adds a block's lanes of `n` values, if its sum is finite.
    fn add_lanes<T: Into<f64> + Copy>(&mut self, n: usize, lanes: FirstLanes<T>) -> bool {
        if !all_finite(&lanes.sum) {
            return false;
        }
        self.count += n as u64;
        self.finite += n as u64;
        self.zero += lanes.zero.iter().sum::<u64>();
        for l in 0..L {
            self.min = self.min.min(lanes.lo[l].into());
            self.max = self.max.max(lanes.hi[l].into());
        }
        self.sum.add(lanes_sum(lanes.sum));
        true
    }

    pub fn merge(&mut self, o: &First) {
        self.count += o.count;
        self.nan += o.nan;
        self.posinf += o.posinf;
        self.neginf += o.neginf;
        self.zero += o.zero;
        self.finite += o.finite;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum.merge(o.sum);
    }

    /// The mean of the finite values, when there is one.
    pub fn mean(&self) -> Option<f64> {
        (self.finite > 0).then(|| self.sum.value() / self.finite as f64)
    }
}

/// The bins of a histogram as `numpy.histogram(values, bins=n,
/// range=(min, max))` makes them in float64: `n` equal bins over
/// `[min, max]` (widened by 0.5 each side when the two are equal), each
/// value's bin computed and then corrected against the edges exactly as
/// numpy does, so that a value on an edge falls where numpy puts it.
/// Where numpy has no histogram (edges that do not rise, the range too
/// narrow for as many bins or too wide for a float64), neither has this.
#[derive(Debug, Clone)]
pub struct Bins {
    first: f64,
    denom: f64,
    /// `n / denom`: the index within rounding, for [`Bins::index_block`].
    scale: f64,
    /// Within this of a whole number `k`, `(x - first) * scale` may be on
    /// the wrong side of edge `k` (see [`Bins::index_block`]); infinite
    /// where rounding can move a value across an edge wherever it is.
    near: f64,
    /// `first`, `scale` and `near` for f32 values, computed in f32
    /// ([`Bins::index_block32`]), where `first` is an f32 and rounding in
    /// f32 leaves most values clear of the edges.
    narrow: Option<(f32, f32, f32)>,
    n: usize,
    /// The `n + 1` edges, as `np.linspace` makes them.
    edges: Vec<f64>,
}

impl Bins {
    /// `n` (at least 1) bins over `[min, max]`, both finite; `None` when
    /// their edges would not rise (numpy: "Too many bins for data range").
    pub fn new(min: f64, max: f64, n: usize) -> Option<Bins> {
        let n = n.max(1);
        let (first, last) = match min == max {
            true => (min - 0.5, max + 0.5),
            false => (min, max),
        };
        let delta = last - first;
        let step = delta / n as f64;
        let mut edges: Vec<f64> = (0..=n)
            .map(|i| match step == 0.0 {
                true => i as f64 / n as f64 * delta + first,
                false => i as f64 * step + first,
            })
            .collect();
        edges[n] = last;
        // Compared as numpy compares them: a NaN edge (an infinite step)
        // passes, an infinite one equal to the next does not.
        if edges.windows(2).any(|w| w[0] >= w[1]) {
            return None;
        }
        // The error of `(x - first) * scale` against the exact
        // `(x - first) / delta * n` (three roundings), plus how far an
        // edge of linspace's lies from its exact place (the step's two
        // roundings and the edge's own, up to the larger end's ulp), in
        // units of a bin; four times that, to be sure.
        // A subnormal step's error is absolute, not relative: no bound
        // here, every value numpy's way.
        let ends = first.abs().max(last.abs());
        let edges_err = match step >= f64::MIN_POSITIVE {
            true => f64::EPSILON * (3.0 + ends / delta),
            false => f64::INFINITY,
        };
        let err = 4.0 * n as f64 * edges_err;
        // In f32: three roundings in f32 (the difference, the scale, the
        // product), the edges' as above.
        let err32 = 4.0 * n as f64 * (2.0 * f64::from(f32::EPSILON) + edges_err);
        let scale32 = (n as f64 / delta) as f32;
        let narrow = (first as f32 as f64 == first && scale32.is_normal() && err32 < 0.25)
            .then_some((first as f32, scale32, err32 as f32));
        Some(Bins {
            first,
            denom: delta,
            scale: n as f64 / delta,
            near: match err < 0.25 {
                true => err,
                false => f64::INFINITY,
            },
            narrow,
            n,
            edges,
        })
    }

    /// Each value of `v`'s bin into `index`, wide: `(x - first) * scale`
    /// rounded to the nearest whole number (by adding 1.5 x 2^52, whose
    /// low bits are then that number), less one when it rounded up. That
    /// is numpy's bin wherever the product is farther than `near` from a
    /// whole number: no edge lies between. Within `near` of one (a value
    /// on or beside an edge, `max`, or a product past float64) the index
    /// is `u32::MAX`: the caller asks [`Bins::of`].
    pub fn index_block(&self, v: &[f64], index: &mut [u32]) -> u32 {
        wide::bin_index(v, self.first, self.scale, self.near, index)
    }

    /// [`Bins::index_block`] of little-endian f32 values: in f32 where the
    /// bins allow, else widened.
    pub fn index_block32(&self, v: &[[u8; 4]], index: &mut [u32]) -> u32 {
        if let Some((first, scale, near)) = self.narrow {
            return wide::bin_index32(v, first, scale, near, index);
        }
        let mut wide = [0f64; BLOCK];
        let mut top = 0;
        for (v, index) in v.chunks(BLOCK).zip(index.chunks_mut(BLOCK)) {
            let w = &mut wide[..v.len()];
            w.iter_mut()
                .zip(v)
                .for_each(|(w, &x)| *w = f64::from(f32::from_le_bytes(x)));
            top = top.max(self.index_block(w, index));
        }
        top
    }

    /// The bin of `x` whose [`Bins::index_block`] index is `i`.
    #[inline]
    fn checked(&self, i: u32, x: f64) -> usize {
        match (i as usize) < self.n {
            true => i as usize,
            false => self.of(x),
        }
    }

    /// The bin of finite value `x` in `[min, max]`.
    #[inline]
    pub fn of(&self, x: f64) -> usize {
        let f = (x - self.first) / self.denom * self.n as f64;
        // As numpy's cast to intp: toward zero (a NaN from an infinite
        // width goes to bin 0).
        let mut i = (f as usize).min(self.n - 1);
        if i > 0 && x < self.edges[i] {
            i -= 1;
        }
        if i != self.n - 1 && x >= self.edges[i + 1] {
            i += 1;
        }
        i
    }
}

/// What the second pass finds in a piece.
#[derive(Debug, Clone)]
pub struct Second {
    pub counts: Vec<u64>,
    /// Four more counts a bin, for [`Second::add_block`]'s values in turn;
    /// folded into `counts` by [`Second::merge`].
    lanes: Vec<[u64; 4]>,
    /// A block's bins, kept from block to block (not made anew, zeroed,
    /// for each).
    index: Vec<u32>,
    /// The sum of the squared deviations from the mean.
    pub squares: Sum,
}

impl Second {
    pub fn new(bins: usize) -> Second {
        Second {
            counts: vec![0; bins],
            lanes: vec![[0; 4]; bins],
            index: vec![0; BLOCK],
            squares: Sum::default(),
        }
    }

    #[inline]
    pub fn add(&mut self, x: f64, mean: f64, bins: Option<&Bins>) {
        if x.is_finite() {
            let d = x - mean;
            self.squares.add(d * d);
            if let Some(b) = bins {
                self.counts[b.of(x)] += 1;
            }
        }
    }

    /// [`Second::add`] of each of `v`: the squares summed plain in lanes
    /// then added compensated, as [`First::add_block`] sums (and a block
    /// with a value not finite done one value at a time); the bins
    /// found wide by [`Bins::index_block`], numpy's way only for the
    /// values within rounding of an edge.
    pub fn add_block(&mut self, v: &[f64], mean: f64, bins: Option<&Bins>) {
        // A value not finite makes its lane's sum not finite; so does a
        // square past float64 (then counted one at a time, to the same inf).
        let sq = wide::square_lanes(v, mean);
        if !all_finite(&sq) {
            return v.iter().for_each(|&x| self.add(x, mean, bins));
        }
        self.squares.add(lanes_sum(sq));
        if let Some(b) = bins {
            self.count_blocks(v, b, |v, i| b.index_block(v, i), |x| x);
        }
    }

    /// [`Second::add_block`] of little-endian f32 values, the same
    /// numbers.
    pub fn add_block32(&mut self, v: &[[u8; 4]], mean: f64, bins: Option<&Bins>) {
        let value = |x: [u8; 4]| f64::from(f32::from_le_bytes(x));
        let sq = wide::square_lanes32(v, mean);
        if !all_finite(&sq) {
            return v.iter().for_each(|&x| self.add(value(x), mean, bins));
        }
        self.squares.add(lanes_sum(sq));
        if let Some(b) = bins {
            self.count_blocks(v, b, |v, i| b.index_block32(v, i), value);
        }
    }

    /// Counts `v`'s values in `b`'s bins a block at a time: `index` finds
    /// a block's bins wide (and returns the largest), `value` is a value
    /// as f64 for those [`Bins::checked`] finds numpy's way.
    #[inline(always)]
    fn count_blocks<E: Copy>(
        &mut self,
        v: &[E],
        b: &Bins,
        index: impl Fn(&[E], &mut [u32]) -> u32,
        value: impl Fn(E) -> f64,
    ) {
        let mut buf = std::mem::take(&mut self.index);
        for v in v.chunks(BLOCK) {
            let buf = &mut buf[..v.len()];
            let top = index(v, buf);
            self.count(b, buf, top, |k| value(v[k]));
        }
        self.index = buf;
    }

    /// Counts each value in the bin `index` gives it (`x(k)` value `k`,
    /// for those whose bin [`Bins::checked`] finds numpy's way; `top` the
    /// largest index), four values at a time into four sets of counts: a
    /// run of values in one bin adds to four counters, not one (each add
    /// waits for the last to the same counter).
    #[inline(always)]
    fn count(&mut self, b: &Bins, index: &[u32], top: u32, x: impl Fn(usize) -> f64) {
        let quads = index.chunks_exact(4);
        let rest = quads.remainder();
        let done = index.len() - rest.len();
        let lanes = &mut self.lanes[..];
        if (top as usize) < lanes.len() {
            // Every index a bin (the usual): no value to ask about.
            for q in quads {
                lanes[q[0] as usize][0] += 1;
                lanes[q[1] as usize][1] += 1;
                lanes[q[2] as usize][2] += 1;
                lanes[q[3] as usize][3] += 1;
            }
            rest.iter().for_each(|&i| lanes[i as usize][0] += 1);
            return;
        }
        for (k, q) in quads.enumerate() {
            for (j, &i) in q.iter().enumerate() {
                lanes[b.checked(i, x(4 * k + j))][j] += 1;
            }
        }
        for (k, &i) in index.iter().enumerate().skip(done) {
            lanes[b.checked(i, x(k))][0] += 1;
        }
    }

    pub fn merge(&mut self, o: &Second) {
        for (i, a) in self.counts.iter_mut().enumerate() {
            *a += o.counts[i] + o.lanes[i].iter().sum::<u64>();
        }
        self.squares.merge(o.squares);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compensated_sums_keep_the_small_parts() {
        let mut s = Sum::default();
        for x in [1e16, 1.0, -1e16, 1.0] {
            s.add(x);
        }
        assert_eq!(s.value(), 2.0);
        let mut big = Sum::default();
        big.add(f64::MAX);
        big.add(f64::MAX);
        assert_eq!(big.value(), f64::INFINITY, "overflows as a plain sum does");
        let mut merged = Sum::default();
        merged.merge(big);
        assert_eq!(merged.value(), f64::INFINITY);
    }

    #[test]
    fn bins_put_edges_where_numpy_does() {
        let b = Bins::new(0.0, 1.0, 4).unwrap();
        let got: Vec<usize> = [0.0, 0.25, 0.4999, 0.5, 0.75, 1.0]
            .iter()
            .map(|&x| b.of(x))
            .collect();
        assert_eq!(got, [0, 1, 1, 2, 3, 3], "the last bin holds its right edge");
        // Equal ends: numpy widens the range by 0.5 each side.
        assert_eq!(Bins::new(3.0, 3.0, 64).unwrap().of(3.0), 32);
        assert_eq!(Bins::new(3.0, 3.0, 1).unwrap().of(3.0), 0);
        // Where numpy makes no bins: too narrow, too wide.
        let next = f64::from_bits(1f64.to_bits() + 1);
        assert!(Bins::new(1.0, next, 2).is_none());
        assert!(Bins::new(1.0, next, 1).is_some());
        assert!(Bins::new(f64::MIN, f64::MAX, 4).is_none());
    }

    /// A xorshift generator from `seed`.
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// The bin [`Second::add_block`] counts a value in.
    fn fast(b: &Bins, x: f64) -> usize {
        let mut i = [0];
        b.index_block(&[x], &mut i);
        b.checked(i[0], x)
    }

    /// The wide bin is numpy's bin (the edge-corrected one) for values on
    /// and beside every edge, and anywhere between, of ranges of many
    /// sizes, places and bin counts.
    #[test]
    fn the_wide_bin_is_numpys_bin() {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15u64);
        // A range of subnormals: n / width is past float64.
        let tiny = Bins::new(-5e-324, 2.2250738585072014e-308, 64).unwrap();
        for x in [-5e-324, 0.0, 5e-324, 1e-310, 2.2250738585072014e-308] {
            assert_eq!(fast(&tiny, x), tiny.of(x), "{x:e}");
        }
        assert_eq!(fast(&tiny, 2.2250738585072014e-308), 63);
        // Subnormal steps: their edges are off by whole units of the
        // smallest subnormal, not by a relative error.
        for (a, w, n) in [
            (0.0, 1e-310, 64),
            (-3e-312, 1e-309, 1000),
            (1e-320, 4e-321, 7),
        ] {
            let b = Bins::new(a, a + w, n).unwrap();
            for k in 0..20_000u64 {
                let x = a + w * (k as f64 / 20_000.0);
                assert_eq!(fast(&b, x), b.of(x), "x {x:e} in [{a:e}, +{w:e}] of {n}");
            }
            for &e in &b.edges {
                for x in [
                    e,
                    f64::from_bits(e.to_bits() + 1),
                    f64::from_bits(e.to_bits().wrapping_sub(1)),
                ] {
                    if (a..=a + w).contains(&x) {
                        assert_eq!(fast(&b, x), b.of(x), "x {x:e} in [{a:e}, +{w:e}] of {n}");
                    }
                }
            }
        }
        let mut wide = 0;
        for _ in 0..600 {
            let a = (next() % 2000) as f64 / 7.0 - 150.0;
            let a = a * [1.0, 1e-300, 1e300, 1e6][(next() % 4) as usize];
            let w = [1e-9, 0.3, 1.0, 77.7, 1e12, 3e-13][(next() % 6) as usize] * a.abs().max(1.0);
            let n = [1, 2, 3, 7, 64, 1000, 1 << 20][(next() % 7) as usize];
            let Some(b) = Bins::new(a, a + w, n) else {
                continue;
            };
            wide += usize::from(b.near.is_finite());
            let step = (b.edges.len() / 200).max(1);
            for e in b.edges.iter().step_by(step).copied().chain([a + w]) {
                for x in [
                    e,
                    f64::from_bits(e.to_bits() + 1),
                    f64::from_bits(e.to_bits().wrapping_sub(1)),
                    f64::from_bits(e.to_bits() + 2),
                    f64::from_bits(e.to_bits().wrapping_sub(2)),
                ] {
                    if (a..=a + w).contains(&x) {
                        assert_eq!(fast(&b, x), b.of(x), "x {x} in [{a}, {}] of {n}", a + w);
                    }
                }
            }
            for _ in 0..200 {
                let x = a + w * ((next() >> 11) as f64 / (1u64 << 53) as f64);
                if (a..=a + w).contains(&x) {
                    assert_eq!(fast(&b, x), b.of(x), "x {x} in [{a}, {}] of {n}", a + w);
                }
            }
        }
        assert!(wide > 200, "the wide path was tried ({wide} ranges)");
    }

    /// f32 values in their own loops give the numbers of the same values
    /// widened to f64, bit for bit: blocks with and without values that
    /// are not finite, short blocks, values on the edges.
    #[test]
    fn f32_loops_give_the_f64_numbers() {
        let mut next = xorshift(0x2545_F491_4F6C_DD1Du64);
        let mut v: Vec<f32> = (0..5000)
            .map(|_| ((next() >> 40) as f32 / (1u64 << 24) as f32 - 0.3) * 7.0)
            .collect();
        v[10] = f32::NAN;
        v[700] = f32::INFINITY;
        v[701] = -0.0;
        v[702] = 0.0;
        for (block, bins) in [(512, 64), (37, 7), (513, 1000), (8, 1)] {
            let (mut a, mut b) = (First::default(), First::default());
            for c in v.chunks(block) {
                let wide: Vec<f64> = c.iter().map(|&x| f64::from(x)).collect();
                let bytes: Vec<[u8; 4]> = c.iter().map(|x| x.to_le_bytes()).collect();
                a.add_block(&wide);
                b.add_block32(&bytes);
            }
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
            let bins = Bins::new(a.min, a.max, bins).unwrap();
            let mean = a.mean().unwrap();
            let (mut p, mut q) = (Second::new(bins.n), Second::new(bins.n));
            // The values on every edge, and every value in turn.
            let edges: Vec<f32> = bins.edges.iter().map(|&e| e as f32).collect();
            for c in v.chunks(block).chain(edges.chunks(block)) {
                let wide: Vec<f64> = c.iter().map(|&x| f64::from(x)).collect();
                let bytes: Vec<[u8; 4]> = c.iter().map(|x| x.to_le_bytes()).collect();
                p.add_block(&wide, mean, Some(&bins));
                q.add_block32(&bytes, mean, Some(&bins));
            }
            let (mut pm, mut qm) = (Second::new(bins.n), Second::new(bins.n));
            pm.merge(&p);
            qm.merge(&q);
            assert_eq!(pm.counts, qm.counts, "blocks of {block}");
            assert_eq!(pm.squares.value().to_bits(), qm.squares.value().to_bits());
            assert!(bins.narrow.is_some() || bins.n == 1000);
            for (k, &x) in v.iter().chain(&edges).enumerate() {
                if x.is_finite() && f64::from(x) <= a.max {
                    let mut i = [0];
                    bins.index_block32(&[x.to_le_bytes()], &mut i);
                    assert_eq!(
                        bins.checked(i[0], f64::from(x)),
                        bins.of(f64::from(x)),
                        "{k}: {x}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_first_pass_counts_what_is_not_finite() {
        let mut f = First::default();
        for x in [1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 3.0] {
            f.add(x);
        }
        assert_eq!(
            (f.count, f.nan, f.posinf, f.neginf, f.zero),
            (6, 1, 1, 1, 1)
        );
        assert_eq!((f.min, f.max, f.mean()), (-0.0, 3.0, Some(4.0 / 3.0)));
    }
}
