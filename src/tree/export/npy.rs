//! `.npy` headers: version 1.0, padded with spaces so the data starts on a
//! 4096-byte boundary (a page: the whole file can later be one backing
//! file for kernel passthrough, header page and data after it).

use crate::tree::forms::Npy;

/// Where the data starts unless the header needs more room.
pub const DATA_ALIGN: u64 = 4096;
/// The longest header text numpy reads without `allow_pickle`
/// (`numpy.lib.format._MAX_HEADER_SIZE`).
const NUMPY_MAX_HEADER: usize = 10_000;
/// Magic, version 1.0, and the u16 header length.
const PREAMBLE: usize = 10;

/// The header of `form`: preamble, dict, spaces, `\n`; its length is a
/// multiple of [`DATA_ALIGN`]. Refused when numpy would not read it (a
/// shape of thousands of dimensions).
pub fn header(form: &Npy) -> Result<Vec<u8>, String> {
    let dict = dict(form);
    let total = total_len(dict.len())?;
    let text = total - PREAMBLE;
    let mut h = Vec::with_capacity(total);
    h.extend_from_slice(b"\x93NUMPY\x01\x00");
    h.extend_from_slice(&(text as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h.resize(total - 1, b' ');
    h.push(b'\n');
    Ok(h)
}

/// The length of [`header`]'s result, without making it (asked on every
/// read of the file).
pub fn header_len(form: &Npy) -> Result<u64, String> {
    let digits = |d: u64| d.checked_ilog10().map_or(1, |l| l as usize + 1);
    let dims: usize = form.shape.iter().map(|&d| digits(d)).sum::<usize>()
        + 2 * form.shape.len().saturating_sub(1)
        + usize::from(form.shape.len() == 1);
    let dict = DICT_FIXED + form.descr.len() + dims;
    total_len(dict).map(|t| t as u64)
}

/// The dict's characters other than the descr and the dimensions.
const DICT_FIXED: usize = "{'descr': '', 'fortran_order': False, 'shape': (), }".len();

fn dict(form: &Npy) -> String {
    let dims: Vec<String> = form.shape.iter().map(u64::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        form.descr
    )
}

/// The header's length for a dict of `dict` bytes: the dict, at least one
/// space and the newline, padded to a page; refused past numpy's limit.
fn total_len(dict: usize) -> Result<usize, String> {
    let total = (PREAMBLE + dict + 2).next_multiple_of(DATA_ALIGN as usize);
    let text = total - PREAMBLE;
    if text > NUMPY_MAX_HEADER {
        return Err(format!(
            "its header would be {text} bytes, more than numpy reads ({NUMPY_MAX_HEADER})"
        ));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(descr: &'static str, shape: &[u64]) -> Npy {
        Npy {
            descr,
            shape: shape.to_vec(),
        }
    }

    #[test]
    fn header_is_a_page_of_numpy_v1() {
        let h = header(&form("<f4", &[2, 3])).unwrap();
        assert_eq!(h.len(), 4096);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(u16::from_le_bytes([h[8], h[9]]) as usize, 4086);
        let text = std::str::from_utf8(&h[10..]).unwrap();
        assert!(text.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
        assert!(text.ends_with(" \n"));
        let text = |h: Vec<u8>| String::from_utf8(h[10..].to_vec()).unwrap();
        assert!(text(header(&form("|b1", &[7])).unwrap()).contains("'shape': (7,)"));
        assert!(text(header(&form("<f8", &[])).unwrap()).contains("'shape': ()"));
    }

    #[test]
    fn header_len_is_the_rendered_length() {
        for n in [0usize, 1, 2, 3, 100, 1000, 1500, 2000, 3000] {
            for d in [0u64, 7, 10, 99, 100, u64::MAX] {
                let f = form("bfloat16", &vec![d; n]);
                let rendered = header(&f).map(|h| h.len() as u64);
                let dict_len = dict(&f).len();
                assert_eq!(header_len(&f), rendered, "{n} dims of {d}");
                assert!(rendered.is_err() || dict_len + 12 <= rendered.clone().unwrap() as usize);
            }
        }
    }

    #[test]
    fn long_shapes_take_another_page_then_are_refused() {
        let h = header(&form("<f4", &[1; 1500])).unwrap();
        assert_eq!(h.len(), 8192);
        assert_eq!(u16::from_le_bytes([h[8], h[9]]) as usize, 8182);
        assert!(header(&form("<f4", &[1; 4000])).is_err());
    }
}
