//! A tensor's bytes as numbers: each element type's values as f64, in
//! the order numpy's `astype(np.float64)` gives them (a complex element as
//! its real then its imaginary part; a bool as 0 or 1).

use crate::decode::views::elements;

/// How a tensor's bytes are numbers: each variant a little-endian number
/// of its width.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    F64,
    F32,
    F16,
    BF16,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Bool,
    /// A one-byte float, by its 256 values.
    Byte(fn(u8) -> f64),
}

impl Kind {
    /// The numbers of numpy dtype `descr` (a `descr` or an `ml_dtypes`
    /// name, as [`crate::library::Tensor::dtype`] gives it); `None` for one
    /// that holds no numbers here (`|V16`, a record).
    pub fn of(descr: &str) -> Option<Kind> {
        Some(match descr {
            "<f8" | "<c16" => Kind::F64,
            "<f4" | "<c8" => Kind::F32,
            "<f2" => Kind::F16,
            "bfloat16" => Kind::BF16,
            "|i1" => Kind::I8,
            "<i2" => Kind::I16,
            "<i4" => Kind::I32,
            "<i8" => Kind::I64,
            "|u1" => Kind::U8,
            "<u2" => Kind::U16,
            "<u4" => Kind::U32,
            "<u8" => Kind::U64,
            "|b1" => Kind::Bool,
            "float8_e4m3fn" => Kind::Byte(elements::f8_e4m3fn),
            "float8_e5m2" => Kind::Byte(elements::f8_e5m2),
            "float8_e4m3fnuz" => Kind::Byte(elements::f8_e4m3fnuz),
            "float8_e5m2fnuz" => Kind::Byte(elements::f8_e5m2fnuz),
            "float8_e8m0fnu" => Kind::Byte(elements::e8m0),
            _ => return None,
        })
    }

    /// Bytes a number.
    pub fn width(self) -> usize {
        match self {
            Kind::F64 | Kind::I64 | Kind::U64 => 8,
            Kind::F32 | Kind::I32 | Kind::U32 => 4,
            Kind::F16 | Kind::BF16 | Kind::I16 | Kind::U16 => 2,
            Kind::I8 | Kind::U8 | Kind::Bool | Kind::Byte(_) => 1,
        }
    }
}

/// Values decoded at a time by [`blocks`].
pub const BLOCK: usize = 512;

/// Calls `f` with the numbers of `bytes` (whole numbers of `kind`), in
/// order, [`BLOCK`] at a time as f64: one decoding loop a kind, which the
/// compiler makes wide, and the callers' loops over a block wide too.
pub fn blocks(kind: Kind, bytes: &[u8], mut f: impl FnMut(&[f64])) {
    let w = kind.width();
    let table = match kind {
        Kind::Byte(d) => elements::table(d),
        _ => [0.0; 256],
    };
    let mut out = [0f64; BLOCK];
    for piece in bytes.chunks(BLOCK * w) {
        let n = piece.len() / w;
        decode(kind, &table, &piece[..n * w], &mut out[..n]);
        f(&out[..n]);
    }
}

/// [`blocks`] of f32 numbers where they lie, as little-endian words,
/// for the loops of their own (`stats::wide`): neither widened nor copied.
#[inline(always)]
pub fn blocks32(bytes: &[u8], f: impl FnMut(&[[u8; 4]])) {
    bytes.as_chunks::<4>().0.chunks(BLOCK).for_each(f);
}

/// `bytes` (exactly `out.len()` numbers of `kind`) into `out`; `table`
/// the values of a one-byte kind.
fn decode(kind: Kind, table: &[f64; 256], bytes: &[u8], out: &mut [f64]) {
    macro_rules! le {
        ($t:ty, $n:literal, $conv:expr) => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact($n)) {
                let v = <$t>::from_le_bytes(c.try_into().expect("chunks of the width"));
                *o = $conv(v);
            }
        };
    }
    match kind {
        Kind::F64 => le!(f64, 8, |v: f64| v),
        Kind::F32 => le!(f32, 4, f64::from),
        Kind::F16 => {
            let t = half_table();
            le!(u16, 2, |v: u16| t[usize::from(v)])
        }
        Kind::BF16 => le!(u16, 2, |v: u16| f64::from(f32::from_bits(
            u32::from(v) << 16
        ))),
        Kind::I8 => le!(i8, 1, f64::from),
        Kind::I16 => le!(i16, 2, f64::from),
        Kind::I32 => le!(i32, 4, f64::from),
        Kind::I64 => le!(i64, 8, |v: i64| v as f64),
        Kind::U8 => le!(u8, 1, f64::from),
        Kind::U16 => le!(u16, 2, f64::from),
        Kind::U32 => le!(u32, 4, f64::from),
        Kind::U64 => le!(u64, 8, |v: u64| v as f64),
        Kind::Bool => {
            for (o, &b) in out.iter_mut().zip(bytes) {
                *o = f64::from(u8::from(b != 0));
            }
        }
        Kind::Byte(_) => {
            for (o, &b) in out.iter_mut().zip(bytes) {
                *o = table[usize::from(b)];
            }
        }
    }
}

/// Every f16 value by its bits, made once.
fn half_table() -> &'static [f64] {
    static TABLE: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| (0..=u16::MAX).map(elements::f16).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(kind: Kind, bytes: &[u8]) -> Vec<f64> {
        let mut v = Vec::new();
        blocks(kind, bytes, |b| v.extend_from_slice(b));
        v
    }

    #[test]
    fn numbers_of_each_kind() {
        assert_eq!(all(Kind::F32, &1.5f32.to_le_bytes()), [1.5]);
        assert_eq!(all(Kind::I16, &(-3i16).to_le_bytes()), [-3.0]);
        assert_eq!(all(Kind::U64, &u64::MAX.to_le_bytes()), [u64::MAX as f64]);
        assert_eq!(all(Kind::Bool, &[0, 1, 7]), [0.0, 1.0, 1.0]);
        assert_eq!(all(Kind::F16, &0x3c00u16.to_le_bytes()), [1.0]);
        assert_eq!(all(Kind::BF16, &0xbf80u16.to_le_bytes()), [-1.0]);
        assert_eq!(all(Kind::of("float8_e4m3fn").unwrap(), &[0x38]), [1.0]);
        // A complex64 is two f32 numbers; a trailing part is ignored.
        let c: Vec<u8> = [1.0f32, -2.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(all(Kind::of("<c8").unwrap(), &c), [1.0, -2.0]);
        assert_eq!(all(Kind::F32, &c[..7]), [1.0]);
        assert!(Kind::of("|V16").is_none());
        // Past one block, in order.
        let many: Vec<u8> = (0..1500u16).flat_map(|i| i.to_le_bytes()).collect();
        let want: Vec<f64> = (0..1500).map(f64::from).collect();
        assert_eq!(all(Kind::U16, &many), want);
    }
}
