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
    let mut number = 0u64;
    while at < t.len() {
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        let n = piece.min(t.len() - at);
        buf.resize(n as usize, 0);
        m.read(t, at, &mut buf)?;
        values::blocks(kind, &buf, |v| {
            for &x in v {
                let e = number / per;
                number += 1;
                if !x.is_finite() {
                    continue;
                }
                let (r, c) = (e / cols, e % cols);
                let scale = |i: u64, n: u64, out: u64| {
                    (u128::from(i) * u128::from(out) / u128::from(n)) as u64
                };
                let p = (scale(r, rows, h) * w + scale(c, cols, w)) as usize;
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

    #[test]
    fn a_png_of_the_size_asked() {
        let png = encode(&[1.0, -1.0, f64::NAN, 0.0, 0.5, 2.0], 3, 2).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 3);
        assert_eq!(u32::from_be_bytes(png[20..24].try_into().unwrap()), 2);
    }
}
