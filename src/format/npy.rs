//! Reading a `.npy` file's header (NEP 1, format versions 1.0 to 3.0),
//! for `ztfs pack`: the array's zTensor type, shape and where its data
//! lies. Pure: bytes in, a header out.
//!
//! The header is a Python dict literal; this reads exactly what numpy's
//! `np.save` writes (`{'descr': '<f4', 'fortran_order': False, 'shape':
//! (3, 4), }`, keys in any order, any spacing), and refuses anything else:
//! object arrays, structured dtypes, big-endian data, Fortran order (the
//! bytes are not row-major), and types zTensor has no type with the same
//! bytes for (`<V2` says only "two bytes").

use crate::error::{Error, Result};
use crate::format::types::DType;

/// The magic string.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Longest header this reads (numpy itself reads up to 10,000 bytes
/// without `allow_pickle`, more for version 2.0 files it wrote).
pub const MAX_HEADER_LEN: u64 = 1 << 20;

/// A `.npy` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// zTensor storage type and logical type name.
    pub dtype: DType,
    /// The logical type, if any.
    pub logical: Option<&'static str>,
    /// Dimensions, row-major; `[]` for a 0-d array.
    pub shape: Vec<u64>,
    /// Where the data starts.
    pub data_offset: u64,
    /// The data's length: the element count times the width.
    pub data_len: u64,
}

fn bad(why: impl Into<String>) -> Error {
    Error::Unsupported(format!("not a .npy file ztfs can read: {}", why.into()))
}

/// Reads the header of a `.npy` file of `file_len` bytes whose first
/// bytes are `head` (at least the whole header: 12 + [`MAX_HEADER_LEN`]
/// bytes, or the whole file if shorter). The data must fill the rest of
/// the file exactly.
pub fn read_header(head: &[u8], file_len: u64) -> Result<Header> {
    if !head.starts_with(MAGIC) || head.len() < 10 {
        return Err(bad("no \\x93NUMPY magic"));
    }
    let (len_bytes, start) = match head[6] {
        1 => (2, 10),
        2 | 3 => (4, 12),
        v => {
            return Err(bad(format!(
                "format version {v}.{} (1.0 to 3.0 are known)",
                head[7]
            )))
        }
    };
    let n = head
        .get(8..8 + len_bytes)
        .map(|b| b.iter().rev().fold(0u64, |a, &x| a << 8 | u64::from(x)))
        .ok_or_else(|| bad("truncated header"))?;
    if n > MAX_HEADER_LEN {
        return Err(bad(format!("header of {n} bytes, above {MAX_HEADER_LEN}")));
    }
    let end = start as u64 + n;
    let text = head
        .get(start..end as usize)
        .ok_or_else(|| bad(format!("header of {n} bytes past the file's end")))?;
    let text = std::str::from_utf8(text).map_err(|_| bad("header is not UTF-8"))?;
    let dict = parse_dict(text)?;
    let (dtype, logical, width) = ztensor_type(&dict.descr)?;
    if dict.fortran_order {
        return Err(bad(
            "Fortran order: the data is not row-major (save it with np.ascontiguousarray)",
        ));
    }
    let count = (dict.shape.iter()).try_fold(1u64, |a, &d| a.checked_mul(d));
    let data_len = count
        .and_then(|c| c.checked_mul(width))
        .ok_or_else(|| bad("the element count overflows"))?;
    if file_len.checked_sub(end) != Some(data_len) {
        return Err(bad(format!(
            "{} bytes of data after the header; shape {:?} of {} needs {data_len}",
            file_len.saturating_sub(end),
            dict.shape,
            dict.descr
        )));
    }
    Ok(Header {
        dtype,
        logical,
        shape: dict.shape,
        data_offset: end,
        data_len,
    })
}

/// The zTensor type of a numpy `descr`, and its width.
fn ztensor_type(descr: &str) -> Result<(DType, Option<&'static str>, u64)> {
    use DType::*;
    let t = match descr {
        "<f8" => (F64, None),
        "<f4" => (F32, None),
        "<f2" => (F16, None),
        "<i8" => (I64, None),
        "<i4" => (I32, None),
        "<i2" => (I16, None),
        "|i1" | "<i1" => (I8, None),
        "<u8" => (U64, None),
        "<u4" => (U32, None),
        "<u2" => (U16, None),
        "|u1" | "<u1" => (U8, None),
        "|b1" => (U8, Some("bool")),
        "<c8" => (F32, Some("complex64")),
        "<c16" => (F64, Some("complex128")),
        // ml_dtypes' names, as `np.save` writes them after `import ml_dtypes`.
        "bfloat16" | "<bfloat16" => (BF16, None),
        "float8_e4m3fn" => (U8, Some("f8_e4m3fn")),
        "float8_e5m2" => (U8, Some("f8_e5m2")),
        "float8_e4m3fnuz" => (U8, Some("f8_e4m3fnuz")),
        "float8_e5m2fnuz" => (U8, Some("f8_e5m2fnuz")),
        "float8_e8m0fnu" => (U8, Some("f8_e8m0")),
        d if d.starts_with('>') => return Err(bad(format!("big-endian dtype {d:?}"))),
        d => {
            return Err(bad(format!(
                "dtype {d:?} has no zTensor type with the same bytes"
            )))
        }
    };
    let width = match t.1 {
        Some("complex64") => 8,
        Some("complex128") => 16,
        _ => t.0.width(),
    };
    Ok((t.0, t.1, width))
}

#[derive(Debug)]
struct Dict {
    descr: String,
    fortran_order: bool,
    shape: Vec<u64>,
}

/// Parses `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`
/// followed by spaces and a newline: the three keys once each, in any
/// order, string descr only.
fn parse_dict(text: &str) -> Result<Dict> {
    let mut p = Cursor(text.trim_end_matches([' ', '\n', '\0']));
    p.expect("{")?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    while !p.eat("}") {
        let key = p.quoted()?;
        p.expect(":")?;
        let seen = match key.as_str() {
            "descr" => descr.replace(p.quoted()?).is_some(),
            "fortran_order" => fortran.replace(p.boolean()?).is_some(),
            "shape" => shape.replace(p.tuple()?).is_some(),
            k => return Err(bad(format!("header key {k:?}"))),
        };
        if seen {
            return Err(bad(format!("header key {key:?} twice")));
        }
        if !p.eat(",") {
            p.expect("}")?;
            break;
        }
    }
    if !p.0.trim().is_empty() {
        return Err(bad("text after the header dict"));
    }
    match (descr, fortran, shape) {
        (Some(descr), Some(fortran_order), Some(shape)) => Ok(Dict {
            descr,
            fortran_order,
            shape,
        }),
        _ => Err(bad("the header lacks descr, fortran_order or shape")),
    }
}

struct Cursor<'a>(&'a str);

impl Cursor<'_> {
    fn skip(&mut self) {
        self.0 = self.0.trim_start();
    }

    fn eat(&mut self, s: &str) -> bool {
        self.skip();
        match self.0.strip_prefix(s) {
            Some(rest) => {
                self.0 = rest;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, s: &str) -> Result<()> {
        match self.eat(s) {
            true => Ok(()),
            false => Err(bad(format!(
                "expected {s:?} in the header at {:?}",
                head(self.0)
            ))),
        }
    }

    /// A string in single or double quotes, without escapes.
    fn quoted(&mut self) -> Result<String> {
        self.skip();
        let q = self.0.chars().next().filter(|c| *c == '\'' || *c == '"');
        let q = q.ok_or_else(|| bad(format!("expected a string at {:?}", head(self.0))))?;
        let rest = &self.0[1..];
        let end = rest.find(q).ok_or_else(|| bad("unterminated string"))?;
        let s = &rest[..end];
        if s.contains('\\') {
            return Err(bad(format!("escaped string {s:?}")));
        }
        self.0 = &rest[end + 1..];
        Ok(s.to_string())
    }

    fn boolean(&mut self) -> Result<bool> {
        if self.eat("True") {
            return Ok(true);
        }
        if self.eat("False") {
            return Ok(false);
        }
        Err(bad(format!("expected True or False at {:?}", head(self.0))))
    }

    /// `()`, `(3,)`, `(3, 4)`, `(3, 4,)`.
    fn tuple(&mut self) -> Result<Vec<u64>> {
        self.expect("(")?;
        let mut dims = Vec::new();
        while !self.eat(")") {
            self.skip();
            let digits = self.0.len()
                - self
                    .0
                    .trim_start_matches(|c: char| c.is_ascii_digit())
                    .len();
            let n = self.0[..digits]
                .parse::<u64>()
                .map_err(|_| bad(format!("expected a dimension at {:?}", head(self.0))))?;
            self.0 = &self.0[digits..];
            dims.push(n);
            if dims.len() > crate::format::MAX_RANK {
                return Err(bad(format!(
                    "more than {} dimensions",
                    crate::format::MAX_RANK
                )));
            }
            if !self.eat(",") {
                self.expect(")")?;
                break;
            }
        }
        Ok(dims)
    }
}

fn head(s: &str) -> &str {
    crate::format::truncate(s, 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut h = dict.to_string();
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut f = MAGIC.to_vec();
        f.extend_from_slice(&[1, 0]);
        f.extend_from_slice(&(h.len() as u16).to_le_bytes());
        f.extend_from_slice(h.as_bytes());
        f.extend_from_slice(data);
        f
    }

    fn read(f: &[u8]) -> Result<Header> {
        read_header(f, f.len() as u64)
    }

    #[test]
    fn what_np_save_writes_is_read() {
        let f = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
            &[0; 24],
        );
        let h = read(&f).unwrap();
        assert_eq!(
            (h.dtype, h.logical, h.shape.clone()),
            (DType::F32, None, vec![2, 3])
        );
        assert_eq!((h.data_offset, h.data_len), (f.len() as u64 - 24, 24));
        assert_eq!(h.data_offset % 64, 0);
        let f = npy(
            "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
            &[0, 1, 1],
        );
        assert_eq!(read(&f).unwrap().logical, Some("bool"));
        let f = npy(
            "{'shape': (), 'descr': '<c8', 'fortran_order': False}",
            &[0; 8],
        );
        let h = read(&f).unwrap();
        assert_eq!((h.shape.len(), h.logical), (0, Some("complex64")));
    }

    #[test]
    fn what_is_not_row_major_little_endian_and_known_is_refused() {
        for (dict, data) in [
            ("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24),
            ("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8),
            ("{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }", 4),
            ("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 16),
            ("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 9),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 7),
            ("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8),
            ("{'descr': '<f4', 'shape': (2,), }", 8),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 99999999999), }", 8),
        ] {
            let f = npy(dict, &vec![0; data]);
            assert!(matches!(read(&f), Err(Error::Unsupported(_))), "{dict} {data}");
        }
    }

    #[test]
    fn truncated_and_foreign_bytes_are_refused_without_panic() {
        let f = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
            &[0; 24],
        );
        for n in 0..f.len() {
            assert!(read_header(&f[..n], n as u64).is_err());
        }
        assert!(read(b"PK\x03\x04").is_err());
    }
}
