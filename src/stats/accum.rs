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

    /// [`First::add`] of each of `v`: a block all finite (the usual) in
    /// wide loops, its sum plain in lanes then added compensated (a block
    /// of 512 loses at most a few units of its own last place).
    pub fn add_block(&mut self, v: &[f64]) {
        if !all_finite(v) {
            return v.iter().for_each(|&x| self.add(x));
        }
        const L: usize = 4;
        let (mut lo, mut hi, mut sum, mut zero) = (
            [f64::INFINITY; L],
            [f64::NEG_INFINITY; L],
            [0.0; L],
            [0u64; L],
        );
        let chunks = v.chunks_exact(L);
        let rest = chunks.remainder();
        for c in chunks {
            for l in 0..L {
                let x = c[l];
                lo[l] = if x < lo[l] { x } else { lo[l] };
                hi[l] = if x > hi[l] { x } else { hi[l] };
                sum[l] += x;
                zero[l] += u64::from(x == 0.0);
            }
        }
        for &x in rest {
            lo[0] = if x < lo[0] { x } else { lo[0] };
            hi[0] = if x > hi[0] { x } else { hi[0] };
            sum[0] += x;
            zero[0] += u64::from(x == 0.0);
        }
        let n = v.len() as u64;
        self.count += n;
        self.finite += n;
        self.zero += zero.iter().sum::<u64>();
        for l in 0..L {
            self.min = self.min.min(lo[l]);
            self.max = self.max.max(hi[l]);
        }
        self.sum.add((sum[0] + sum[1]) + (sum[2] + sum[3]));
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
    /// `n / denom`: the index within rounding, for [`Bins::of_fast`].
    scale: f64,
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
        Some(Bins {
            first,
            denom: delta,
            scale: n as f64 / delta,
            n,
            edges,
        })
    }

    /// [`Bins::of`]: the same bin, found from a multiply rather than
    /// numpy's divide (within one bin of it) and then set by the edges as
    /// numpy's corrections set it (the bin whose edges hold `x`).
    /// Where `n / width` is past float64 (a range of subnormals), numpy's
    /// own divide ([`Bins::of`]).
    #[inline]
    pub fn of_fast(&self, x: f64) -> usize {
        let last = self.n - 1;
        let f = (x - self.first) * self.scale;
        // A NaN (0 x inf) too.
        if f.is_nan() || f >= self.n as f64 {
            return self.of(x);
        }
        let mut i = (f as usize).min(last);
        let e = &self.edges;
        if i > 0 && x < e[i] {
            i -= 1;
        } else if i != last && x >= e[i + 1] {
            i += 1;
        }
        i
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
    /// Four more counts a bin, for [`Second::add_block`]'s values in turn:
    /// a run of values in one bin then adds to four counters, not one
    /// (each add waits for the last to the same counter). Folded into
    /// `counts` by [`Second::merge`].
    lanes: Vec<u64>,
    /// The sum of the squared deviations from the mean.
    pub squares: Sum,
}

impl Second {
    pub fn new(bins: usize) -> Second {
        Second {
            counts: vec![0; bins],
            lanes: vec![0; 4 * bins],
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
    /// then added compensated, as [`First::add_block`] sums; a value's
    /// bin checked against numpy's edges only where it lies within
    /// rounding of one (the others' bins are numpy's without the check).
    pub fn add_block(&mut self, v: &[f64], mean: f64, bins: Option<&Bins>) {
        if !all_finite(v) {
            return v.iter().for_each(|&x| self.add(x, mean, bins));
        }
        const L: usize = 4;
        let mut sq = [0.0; L];
        let chunks = v.chunks_exact(L);
        let rest = chunks.remainder();
        for c in chunks {
            for l in 0..L {
                let d = c[l] - mean;
                sq[l] += d * d;
            }
        }
        for &x in rest {
            let d = x - mean;
            sq[0] += d * d;
        }
        self.squares.add((sq[0] + sq[1]) + (sq[2] + sq[3]));
        if let Some(b) = bins {
            let n = self.counts.len();
            let chunks = v.chunks_exact(L);
            let rest = chunks.remainder();
            for c in chunks {
                for (l, &x) in c.iter().enumerate() {
                    self.lanes[l * n + b.of_fast(x)] += 1;
                }
            }
            for &x in rest {
                self.counts[b.of_fast(x)] += 1;
            }
        }
    }

    pub fn merge(&mut self, o: &Second) {
        let n = self.counts.len();
        for (i, a) in self.counts.iter_mut().enumerate() {
            *a += o.counts[i] + (0..4).map(|l| o.lanes[l * n + i]).sum::<u64>();
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

    /// The fast bin is numpy's bin (the edge-corrected one) for values on
    /// and beside every edge of ranges of many sizes and bin counts.
    #[test]
    fn the_fast_bin_is_numpys_bin() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        // A range of subnormals: n / width is past float64.
        let tiny = Bins::new(-5e-324, 2.2250738585072014e-308, 64).unwrap();
        for x in [-5e-324, 0.0, 5e-324, 1e-310, 2.2250738585072014e-308] {
            assert_eq!(tiny.of_fast(x), tiny.of(x), "{x:e}");
        }
        assert_eq!(tiny.of_fast(2.2250738585072014e-308), 63);
        for _ in 0..300 {
            let a = (next() % 2000) as f64 / 7.0 - 150.0;
            let w = [1e-9, 0.3, 1.0, 77.7, 1e12][(next() % 5) as usize];
            let n = [1, 2, 3, 7, 64, 1000][(next() % 6) as usize];
            let Some(b) = Bins::new(a, a + w, n) else {
                continue;
            };
            for e in b.edges.clone() {
                for x in [
                    e,
                    f64::from_bits(e.to_bits() + 1),
                    f64::from_bits(e.to_bits().wrapping_sub(1)),
                ] {
                    if (a..=a + w).contains(&x) {
                        assert_eq!(b.of_fast(x), b.of(x), "x {x} in [{a}, {}] of {n}", a + w);
                    }
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
