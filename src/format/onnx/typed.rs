//! A tensor's values from its typed field (`float_data`, `int32_data`,
//! `int64_data`, `double_data`, `uint64_data`), as the little-endian bytes
//! `raw_data` would hold (onnx.proto's `TensorProto` comments): the same
//! bytes, whichever way a writer stored them.
//!
//! `int32_data` carries every type narrower than 32 bits: INT8, UINT8,
//! INT16, UINT16 and BOOL as their values, FLOAT16, BFLOAT16 and the
//! float8 types as their bit patterns; each is cut to its width as numpy's
//! `astype` does (`onnx.numpy_helper.to_array` converts them so). Complex
//! types take two values an element. 4-bit and 2-bit types, strings and
//! types this reader does not know are not converted (their callers leave
//! them out, saying why).

use super::OnnxError;
use crate::error::{Error, Result, Rule};
use crate::format::protobuf::{fields, packed_fixed, packed_varints, Field, Value};

/// The typed field a data type's values are in and the bits each value
/// takes in `raw_data`; `None` for a type with no typed field this reader
/// converts (STRING's `string_data` holds no fixed-width values).
pub fn layout(data_type: i32) -> Option<(u32, u32)> {
    Some(match data_type {
        1 | 14 => (4, 32),                  // FLOAT, COMPLEX64
        6 => (5, 32),                       // INT32
        5 | 4 | 10 | 16 => (5, 16),         // INT16, UINT16, FLOAT16, BFLOAT16
        3 | 2 | 9 | 17..=20 | 24 => (5, 8), // INT8, UINT8, BOOL, FLOAT8 kinds, FLOAT8E8M0
        21..=23 | 25 | 26 => (5, 8),        // 4- and 2-bit kinds: a packed byte a value
        27 | 28 => (5, 6),                  // FLOAT6 kinds: one 6-bit value each
        7 => (7, 64),                       // INT64
        11 | 15 => (10, 64),                // DOUBLE, COMPLEX128
        12 => (11, 32),                     // UINT32
        13 => (11, 64),                     // UINT64
        _ => return None,
    })
}

/// The values the typed field holds for `count` elements of `data_type`
/// (onnx.proto: two a complex element; a 4-bit pair, or four 2-bit
/// elements, to a value).
fn values_for(data_type: i32, count: u64) -> Option<u64> {
    match data_type {
        14 | 15 => count.checked_mul(2),
        21..=23 => Some(count.div_ceil(2)),
        25 | 26 => Some(count.div_ceil(4)),
        _ => Some(count),
    }
}

/// Converted bytes handed to a sink at a time.
pub const CHUNK: usize = 64 << 10;

/// The `count` elements of data type `data_type` in the typed field of the
/// tensor message `msg` (at `base` in the file), as `raw_data` bytes,
/// handed to `sink` [`CHUNK`] bytes at a time (the last chunk shorter).
/// Refused: a type with no such field here, values in another field, or
/// not exactly `count` elements' worth of them ([`Rule::OnnxLength`]);
/// a packed run that is not protobuf ([`Rule::OnnxProtobuf`]). Nothing
/// is allocated past a chunk, and nothing before the count is known to
/// fit in the message's bytes; an error from `sink` stops the work.
pub fn convert(
    msg: &[u8],
    base: u64,
    data_type: i32,
    count: u64,
    sink: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let refuse = |e: OnnxError| Error::reject(e.rule, e.to_string());
    let err = |what: String| OnnxError {
        rule: Rule::OnnxLength,
        ..OnnxError::at(base, what)
    };
    let (field, bits) = layout(data_type).ok_or_else(|| {
        refuse(err(format!(
            "data type {data_type} has no typed field this reader converts"
        )))
    })?;
    let values = values_for(data_type, count)
        .filter(|&n| n <= msg.len() as u64)
        .ok_or_else(|| {
            refuse(err(format!(
                "{count} elements cannot be in a tensor message of {} bytes",
                msg.len()
            )))
        })?;
    // Bounded by the message's length, checked above.
    let bytes = (values * u64::from(bits)).div_ceil(8) as usize;
    let mut out = Out {
        buf: Vec::with_capacity(CHUNK.min(bytes)),
        bits,
        acc: (0, 0),
        left: values,
        sink,
    };
    for f in fields(msg, base) {
        let Field { number, value } = f.map_err(|e| refuse(e.into()))?;
        if number != field {
            continue;
        }
        let wire = |at: u64| move |w: &str| refuse(OnnxError::wire(at, w));
        match (field, value) {
            (4, Value::I32(x)) => out.push(x.into())?,
            (10, Value::I64(x)) => out.push(x)?,
            (5 | 7 | 11, Value::Varint(x)) => out.push(x)?,
            (4, Value::Len(b, at)) => {
                for c in packed_fixed::<4>(b).map_err(wire(at))? {
                    out.push(u32::from_le_bytes(c.try_into().expect("4 bytes")).into())?;
                }
            }
            (10, Value::Len(b, at)) => {
                for c in packed_fixed::<8>(b).map_err(wire(at))? {
                    out.push(u64::from_le_bytes(c.try_into().expect("8 bytes")))?;
                }
            }
            (5 | 7 | 11, Value::Len(b, at)) => {
                for x in packed_varints(b) {
                    out.push(x.map_err(wire(at))?)?;
                }
            }
            // Another wire type: an unknown field, as protobuf reads it.
            _ => {}
        }
        if out.left == u64::MAX {
            return Err(refuse(err(format!(
                "more values in its typed field than the {values} its dims make"
            ))));
        }
    }
    if out.left != 0 {
        return Err(refuse(err(format!(
            "{} values in its typed field where its dims make {values}",
            values - out.left
        ))));
    }
    out.flush()
}

/// Where converted values go: a chunk, handed on when full.
struct Out<'a> {
    buf: Vec<u8>,
    /// The bits of a value in `raw_data`: 8, 16, 32 or 64, each value cut
    /// to its width as numpy's `astype` does; or 6, a bit stream.
    bits: u32,
    /// A 6-bit stream's bits not yet a byte, and how many.
    acc: (u32, u32),
    /// Values still expected; `u64::MAX` once one more came.
    left: u64,
    sink: &'a mut dyn FnMut(&[u8]) -> Result<()>,
}

impl Out<'_> {
    /// One value.
    fn push(&mut self, v: u64) -> Result<()> {
        if self.left == 0 || self.left == u64::MAX {
            self.left = u64::MAX;
            return Ok(());
        }
        self.left -= 1;
        if self.bits == 6 {
            if v > 0x3f {
                return Err(Error::reject(
                    Rule::OnnxModel,
                    format!("a FLOAT6 value {v:#x} in int32_data: its bits past the sixth MUST be zero (onnx.proto)"),
                ));
            }
            // LSB first, as onnx.proto packs FLOAT6 in raw_data.
            let (acc, n) = self.acc;
            let (mut acc, mut n) = (acc | ((v as u32 & 0x3f) << n), n + 6);
            while n >= 8 {
                self.buf.push(acc as u8);
                (acc, n) = (acc >> 8, n - 8);
            }
            self.acc = (acc, n);
        } else {
            let width = self.bits as usize / 8;
            self.buf.extend_from_slice(&v.to_le_bytes()[..width]);
        }
        match self.buf.len() >= CHUNK {
            true => self.flush(),
            false => Ok(()),
        }
    }

    /// Hands on what is held, and once every value came the last partial
    /// byte of a bit stream (zero-padded).
    fn flush(&mut self) -> Result<()> {
        if self.left == 0 && self.acc.1 > 0 {
            self.buf.push(self.acc.0 as u8);
            self.acc = (0, 0);
        }
        if !self.buf.is_empty() {
            (self.sink)(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

/// [`convert`] into one vector: for tests and small tensors.
pub fn bytes(msg: &[u8], base: u64, data_type: i32, count: u64) -> Result<Vec<u8>> {
    let mut all = Vec::new();
    convert(msg, base, data_type, count, &mut |b| {
        all.extend_from_slice(b);
        Ok(())
    })?;
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::protobuf::encode::{len_field, v};

    #[test]
    fn typed_values_as_raw_bytes() {
        // float_data packed, then one more unpacked (a split field).
        let f: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let msg = [len_field(4, &f), v(4 << 3 | 5), 3f32.to_le_bytes().to_vec()].concat();
        let want: Vec<u8> = [1.5f32, -2.0, 3.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(bytes(&msg, 0, 1, 3).unwrap(), want);
        // int32_data of INT8: -1 is written as a 10-byte varint, cut to a byte.
        let msg = len_field(5, &[v(u64::MAX), v(5), v(300)].concat());
        assert_eq!(bytes(&msg, 0, 3, 3).unwrap(), [0xff, 5, 300u16 as u8]);
        // FLOAT16 bit patterns.
        let msg = len_field(5, &[v(0x3c00), v(0xc000)].concat());
        assert_eq!(bytes(&msg, 0, 10, 2).unwrap(), [0x00, 0x3c, 0x00, 0xc0]);
        // int64 unpacked; uint64 of UINT32.
        let msg = [v(7 << 3), v(u64::MAX), v(7 << 3), v(2)].concat();
        assert_eq!(
            bytes(&msg, 0, 7, 2).unwrap(),
            [u64::MAX.to_le_bytes(), 2u64.to_le_bytes()].concat()
        );
        let msg = len_field(11, &v(7));
        assert_eq!(bytes(&msg, 0, 12, 1).unwrap(), 7u32.to_le_bytes());
        // COMPLEX128: two doubles an element.
        let d: Vec<u8> = [1.0f64, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(bytes(&len_field(10, &d), 0, 15, 1).unwrap(), d);
    }

    #[test]
    fn packed_kinds_in_int32_data() {
        // INT4: each value a byte of two elements; 3 elements, 2 values.
        let msg = len_field(5, &[v(0x21), v(0x03)].concat());
        assert_eq!(bytes(&msg, 0, 22, 3).unwrap(), [0x21, 0x03]);
        // UINT2: four to a value.
        assert_eq!(bytes(&len_field(5, &v(0xe4)), 0, 25, 4).unwrap(), [0xe4]);
        // FLOAT6: one 6-bit value each, packed LSB first as raw_data packs
        // them: byte0 = x0 | (x1 & 3) << 6, byte1 = x1 >> 2 | (x2 & 0xf) << 4.
        let msg = len_field(5, &[v(0x3f), v(0x01), v(0x2a)].concat());
        assert_eq!(bytes(&msg, 0, 27, 3).unwrap(), [0x7f, 0xa0, 0x02]);
        let wide = len_field(5, &v(0x40));
        assert!(bytes(&wide, 0, 28, 1)
            .unwrap_err()
            .to_string()
            .contains("MUST be zero"));
    }

    #[test]
    fn counts_must_match_and_are_never_trusted() {
        let msg = len_field(5, &[v(1), v(2)].concat());
        assert!(bytes(&msg, 0, 6, 3)
            .unwrap_err()
            .to_string()
            .contains("2 values"));
        assert!(bytes(&msg, 0, 6, 1)
            .unwrap_err()
            .to_string()
            .contains("values"));
        // A count far past what the message can hold allocates nothing.
        assert!(bytes(&msg, 0, 6, u64::MAX)
            .unwrap_err()
            .to_string()
            .contains("cannot be in"));
        assert!(bytes(&msg, 0, 8, 1)
            .unwrap_err()
            .to_string()
            .contains("no typed field"));
        assert!(bytes(&len_field(4, &[0; 5]), 0, 1, 1).is_err());
    }
}
