//! A 2-D tensor as an image of at most [`MAX_SIDE`] pixels a side, each
//! pixel the mean of the finite values of its block of the tensor, read
//! by range once; a PNG.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::library::{Model, Tensor};
use crate::stats::{values, Kind, PIECE};

/// Most pixels a side.
pub const MAX_SIDE: u64 = 512;

/// The image's size for a tensor of `shape`: `None` unless it has two
/// dimensions, neither zero.
pub fn size(shape: &[u64]) -> Option<(u64, u64)> {
    match shape {
        &[rows, cols] if rows > 0 && cols > 0 => Some((rows.min(MAX_SIDE), cols.min(MAX_SIDE))),
        _ => None,
    }
}

/// Tensor `t`'s heatmap as a PNG (height, width as [`size`] says);
/// `stop` ends the work early with [`Error::Interrupted`].
pub fn png(m: &Model, t: &Tensor, kind: Kind, stop: &AtomicBool) -> Result<Vec<u8>> {
    let (h, w) = size(t.shape()).ok_or_else(|| Error::Usage("not a 2-D tensor".into()))?;
    let (rows, cols) = (t.shape()[0], t.shape()[1]);
    let width = kind.width() as u64;
    // Numbers an element (a complex element is two).
    let elements = rows.saturating_mul(cols);
    let per = (t.len() / width / elements).max(1);
    let mut sums = vec![0f64; (h * w) as usize];
    let mut counts = vec![0u32; (h * w) as usize];
    let piece = PIECE - PIECE % (width * per);
    let mut buf = Vec::new();
    let mut at = 0;
    let mut place = Place::new((rows, cols), (h, w), per);
    while at < t.len() {
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        let n = piece.min(t.len() - at);
        buf.resize(n as usize, 0);
        m.read(t, at, &mut buf)?;
        values::blocks(kind, &buf, |v| {
            for &x in v {
                let p = place.pixel as usize;
                place.step();
                if !x.is_finite() {
                    continue;
                }
                if let (Some(s), Some(k)) = (sums.get_mut(p), counts.get_mut(p)) {
                    *s += x;
                    *k += 1;
                }
            }
        });
        at += n;
    }
    let means: Vec<f64> = (sums.iter().zip(&counts))
        .map(|(&s, &k)| if k > 0 { s / f64::from(k) } else { f64::NAN })
        .collect();
    encode(&means, w as u32, h as u32)
}

/// Where the numbers of a `rows` x `cols` tensor (`per` numbers an
/// element) fall in an `h` x `w` image: element (r, c) in pixel
/// (r * h / rows, c * w / cols), rounded down. Followed number by number,
/// a division only where a pixel's column or row begins (a value's own
/// took five, two of them of 128 bits).
struct Place {
    /// The pixel of the number at hand (row-major index).
    pixel: u64,
    size: (u64, u64),
    image: (u64, u64),
    per: u64,
    /// The number's place within its element, its column and row, and
    /// the pixel's column and row.
    sub: u64,
    col: u64,
    row: u64,
    pixel_col: u64,
    pixel_row: u64,
    /// The column and the row where the next pixel column and row begin.
    next_col: u64,
    next_row: u64,
}

impl Place {
    fn new(size: (u64, u64), image: (u64, u64), per: u64) -> Place {
        Place {
            pixel: 0,
            size,
            image,
            per: per.max(1),
            sub: 0,
            col: 0,
            row: 0,
            pixel_col: 0,
            pixel_row: 0,
            next_col: start(1, size.1, image.1),
            next_row: start(1, size.0, image.0),
        }
    }

    /// On to the next number.
    fn step(&mut self) {
        self.sub += 1;
        if self.sub < self.per {
            return;
        }
        self.sub = 0;
        self.col += 1;
        if self.col == self.size.1 {
            (self.col, self.pixel_col) = (0, 0);
            self.next_col = start(1, self.size.1, self.image.1);
            self.row += 1;
            if self.row == self.next_row {
                self.pixel_row += 1;
                self.next_row = start(self.pixel_row + 1, self.size.0, self.image.0);
            }
        } else if self.col == self.next_col {
            self.pixel_col += 1;
            self.next_col = start(self.pixel_col + 1, self.size.1, self.image.1);
        }
        self.pixel = self.pixel_row * self.image.1 + self.pixel_col;
    }
}

/// The first of `n` indices whose pixel of `out` (index * out / n,
/// rounded down) is `k` or more: k * n / out rounded up.
fn start(k: u64, n: u64, out: u64) -> u64 {
    (u128::from(k) * u128::from(n)).div_ceil(u128::from(out.max(1))) as u64
}

/// `means` (row-major, NaN where a block has no finite value) as an RGB
/// PNG: blue through white to red around zero when the values have both
/// signs, else dark to light over their range; NaN grey. The scale ends
/// at the 99th percentile of the magnitudes (of the range: the 1st and
/// 99th), so that a few outlying blocks do not wash out the rest; beyond
/// it, the colour of the end.
fn encode(means: &[f64], w: u32, h: u32) -> Result<Vec<u8>> {
    let mut finite: Vec<f64> = means.iter().copied().filter(|x| x.is_finite()).collect();
    finite.sort_unstable_by(f64::total_cmp);
    let at = |q: f64| match finite.len() {
        0 => 0.0,
        n => finite[((n - 1) as f64 * q).round() as usize],
    };
    let (lo, hi) = (at(0.01), at(0.99));
    let diverging =
        finite.first().is_some_and(|&a| a < 0.0) && finite.last().is_some_and(|&b| b > 0.0);
    let m = lo.abs().max(hi.abs());
    let mut rgb = Vec::with_capacity(means.len() * 3);
    for &x in means {
        let px = if !x.is_finite() {
            [160, 160, 160]
        } else if diverging && m > 0.0 {
            let t = (x / m).clamp(-1.0, 1.0);
            let fade = |c: f64| (255.0 - (255.0 - c) * t.abs()).round() as u8;
            match t < 0.0 {
                true => [fade(33.0), fade(102.0), fade(172.0)],
                false => [fade(178.0), fade(24.0), fade(43.0)],
            }
        } else {
            let t = if hi > lo { (x - lo) / (hi - lo) } else { 0.5 };
            ramp(t)
        };
        rgb.extend_from_slice(&px);
    }
    let mut out = Vec::new();
    {
        let mut e = png::Encoder::new(&mut out, w, h);
        e.set_color(png::ColorType::Rgb);
        e.set_depth(png::BitDepth::Eight);
        let mut writer = e
            .write_header()
            .map_err(|e| Error::io("heatmap", std::io::Error::other(e.to_string())))?;
        writer
            .write_image_data(&rgb)
            .map_err(|e| Error::io("heatmap", std::io::Error::other(e.to_string())))?;
    }
    Ok(out)
}

/// A dark-to-light ramp (viridis' ends and middle) at `t` in [0, 1].
fn ramp(t: f64) -> [u8; 3] {
    const STOPS: [[f64; 3]; 3] = [
        [68.0, 1.0, 84.0],
        [33.0, 145.0, 140.0],
        [253.0, 231.0, 37.0],
    ];
    let t = t.clamp(0.0, 1.0) * 2.0;
    let i = (t as usize).min(1);
    let f = t - i as f64;
    let mix = |k: usize| (STOPS[i][k] + (STOPS[i + 1][k] - STOPS[i][k]) * f).round() as u8;
    [mix(0), mix(1), mix(2)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_capped_and_only_for_matrices() {
        assert_eq!(size(&[4096, 100]), Some((512, 100)));
        assert_eq!(size(&[3, 4, 5]), None);
        assert_eq!(size(&[0, 5]), None);
    }

    /// The pixel of every number, followed step by step, is the one the
    /// formula gives: on and beside every boundary, images as large as the
    /// tensor and smaller, one or two numbers an element.
    #[test]
    fn each_number_falls_in_the_pixel_of_its_element() {
        for (rows, cols) in [(1, 1), (1, 700), (3, 5), (512, 512), (513, 1000), (1030, 3)] {
            for per in [1, 2] {
                let (h, w) = size(&[rows, cols]).unwrap();
                let mut place = Place::new((rows, cols), (h, w), per);
                for n in 0..rows * cols * per {
                    let e = n / per;
                    let (r, c) = (e / cols, e % cols);
                    let want = r * h / rows * w + c * w / cols;
                    assert_eq!(
                        place.pixel, want,
                        "{rows}x{cols}, {per} a value, number {n}"
                    );
                    place.step();
                }
            }
        }
    }

    #[test]
    fn a_png_of_the_size_asked() {
        let png = encode(&[1.0, -1.0, f64::NAN, 0.0, 0.5, 2.0], 3, 2).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 3);
        assert_eq!(u32::from_be_bytes(png[20..24].try_into().unwrap()), 2);
    }
}
