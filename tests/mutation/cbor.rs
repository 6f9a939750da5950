//! An owned CBOR tree with a deterministic encoder (RFC 8949 §4.2.1: shortest
//! heads and floats, map keys sorted by their encoded bytes), written here
//! rather than taken from the library so the test does not trust the code
//! under test to build its inputs.

use ztfs::format::cbor::Value;

#[derive(Clone, Debug, PartialEq)]
pub enum Cv {
    U(u64),
    N(u64),
    B(Vec<u8>),
    T(String),
    A(Vec<Cv>),
    M(Vec<(Cv, Cv)>),
    Bool(bool),
    Null,
    F(f64),
}

pub fn owned(v: &Value<'_>) -> Cv {
    match v {
        Value::Uint(n) => Cv::U(*n),
        Value::Nint(n) => Cv::N(*n),
        Value::Bytes(b) => Cv::B(b.to_vec()),
        Value::Text(s) => Cv::T(s.to_string()),
        Value::Array(a) => Cv::A(a.iter().map(owned).collect()),
        Value::Map(m) => Cv::M(m.iter().map(|(k, v)| (owned(k), owned(v))).collect()),
        Value::Bool(b) => Cv::Bool(*b),
        Value::Null => Cv::Null,
        Value::Float(x) => Cv::F(*x),
    }
}

fn head(out: &mut Vec<u8>, major: u8, arg: u64) {
    let mt = major << 5;
    match arg {
        0..=23 => out.push(mt | arg as u8),
        24..=0xff => out.extend_from_slice(&[mt | 24, arg as u8]),
        0x100..=0xffff => {
            out.push(mt | 25);
            out.extend_from_slice(&(arg as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(mt | 26);
            out.extend_from_slice(&(arg as u32).to_be_bytes());
        }
        _ => {
            out.push(mt | 27);
            out.extend_from_slice(&arg.to_be_bytes());
        }
    }
}

fn f16_value(h: u16) -> f64 {
    let (exp, frac) = (i32::from((h >> 10) & 0x1f), f64::from(h & 0x3ff));
    let mag = match exp {
        0 => frac * 2f64.powi(-24),
        0x1f if frac == 0.0 => f64::INFINITY,
        0x1f => f64::NAN,
        _ => (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    };
    if h & 0x8000 != 0 {
        -mag
    } else {
        mag
    }
}

/// The f16 bits that hold `x` exactly: positive f16 bit patterns up to
/// infinity are ordered like their values, so a binary search finds them.
fn f16_exact(x: f64) -> Option<u16> {
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let (mut lo, mut hi) = (0u16, 0x7c00u16);
    let a = x.abs();
    while lo <= hi {
        let mid = lo + (hi - lo) / 2;
        let v = f16_value(mid);
        if v == a {
            return Some(sign | mid);
        }
        if v < a {
            lo = mid + 1;
        } else if mid == 0 {
            return None;
        } else {
            hi = mid - 1;
        }
    }
    None
}

pub fn encode(v: &Cv, out: &mut Vec<u8>) {
    match v {
        Cv::U(n) => head(out, 0, *n),
        Cv::N(n) => head(out, 1, *n),
        Cv::B(b) => {
            head(out, 2, b.len() as u64);
            out.extend_from_slice(b);
        }
        Cv::T(s) => {
            head(out, 3, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        Cv::A(items) => {
            head(out, 4, items.len() as u64);
            items.iter().for_each(|i| encode(i, out));
        }
        Cv::M(entries) => {
            // Deterministic order: bytewise over the encoded keys.
            let mut sorted: Vec<(Vec<u8>, &Cv)> =
                entries.iter().map(|(k, v)| (to_bytes(k), v)).collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            head(out, 5, sorted.len() as u64);
            for (k, v) in sorted {
                out.extend_from_slice(&k);
                encode(v, out);
            }
        }
        Cv::Bool(b) => out.push(0xf4 + u8::from(*b)),
        Cv::Null => out.push(0xf6),
        Cv::F(x) if x.is_nan() => out.extend_from_slice(&[0xf9, 0x7e, 0x00]),
        Cv::F(x) => match f16_exact(*x) {
            Some(h) => {
                out.push(0xf9);
                out.extend_from_slice(&h.to_be_bytes());
            }
            None if f64::from(*x as f32) == *x => {
                out.push(0xfa);
                out.extend_from_slice(&(*x as f32).to_bits().to_be_bytes());
            }
            None => {
                out.push(0xfb);
                out.extend_from_slice(&x.to_bits().to_be_bytes());
            }
        },
    }
}

pub fn to_bytes(v: &Cv) -> Vec<u8> {
    let mut out = Vec::new();
    encode(v, &mut out);
    out
}

pub fn t(s: &str) -> Cv {
    Cv::T(s.to_string())
}

pub fn map(entries: Vec<(&str, Cv)>) -> Cv {
    Cv::M(entries.into_iter().map(|(k, v)| (t(k), v)).collect())
}

pub fn uints(ns: &[u64]) -> Cv {
    Cv::A(ns.iter().map(|&n| Cv::U(n)).collect())
}
