//! `.npy` headers: version 1.0, padded with spaces so the data starts on a
//! 4096-byte boundary (a page: the whole file can later be one backing
//! file for kernel passthrough, header page and data after it).

use super::forms::Npy;

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
    let dims: Vec<String> = form.shape.iter().map(u64::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        form.descr
    );
    // The dict, at least one space, and the newline.
    let total = (PREAMBLE + dict.len() + 2).next_multiple_of(DATA_ALIGN as usize);
    let text = total - PREAMBLE;
    if text > NUMPY_MAX_HEADER {
        return Err(format!(
            "its header would be {text} bytes, more than numpy reads ({NUMPY_MAX_HEADER})"
        ));
    }
    let mut h = Vec::with_capacity(total);
    h.extend_from_slice(b"\x93NUMPY\x01\x00");
    h.extend_from_slice(&(text as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h.resize(total - 1, b' ');
    h.push(b'\n');
    Ok(h)
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
    fn long_shapes_take_another_page_then_are_refused() {
        let h = header(&form("<f4", &[1; 1500])).unwrap();
        assert_eq!(h.len(), 8192);
        assert_eq!(u16::from_le_bytes([h[8], h[9]]) as usize, 8182);
        assert!(header(&form("<f4", &[1; 4000])).is_err());
    }
}
