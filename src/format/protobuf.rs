//! The protobuf wire format, read as it is written
//! (<https://protobuf.dev/programming-guides/encoding/>), bounded: the
//! ground ONNX's `ModelProto` is read on (issue 42), with no schema of its
//! own. A message is a run of fields, each a tag (a varint: field number
//! and wire type) and a value: a varint, 8 or 4 little-endian bytes, or a
//! length and that many bytes (a nested message, a string, packed
//! repeated numbers, raw tensor bytes). Fields may come in any order, and
//! a field may repeat; a reader of a message takes the last of a singular
//! field and every one of a repeated field, as protobuf defines.
//!
//! Hand-written rather than prost's generated decoders: a tensor's
//! `raw_data` is served by range from the file, so its offset in the file
//! is what a reader needs, not a copy of its bytes (prost decodes a message
//! whole, `bytes` fields copied); and every count here is bounded by the
//! bytes present, never trusted to size an allocation.
//!
//! Bounds: a varint is at most 10 bytes and fits in 64 bits; a length runs
//! within its message; field number 0 and wire types 6 and 7 do not exist;
//! groups (wire types 3 and 4, which protobuf 3 dropped and ONNX never
//! uses) are skipped as unknown fields, their nesting bounded by
//! [`MAX_GROUP_DEPTH`]. A message's nesting is its reader's to bound
//! (each nested message is read by a call of its own).

/// Deepest nesting of groups skipped inside one field.
pub const MAX_GROUP_DEPTH: u32 = 32;

/// Why bytes are not protobuf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    /// Where, from the start of the bytes read.
    pub offset: u64,
    /// What is wrong there.
    pub what: &'static str,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.what, self.offset)
    }
}

/// A field's value, as the wire type says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1: eight bytes, little-endian.
    I64(u64),
    /// Wire type 5: four bytes, little-endian.
    I32(u32),
    /// Wire type 2: the bytes, and their offset from the start of the
    /// outermost bytes read (a file's offset when those are the file).
    Len(&'a [u8], u64),
}

/// One field of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    /// Its number, 1 to 2^29 - 1.
    pub number: u32,
    /// Its value.
    pub value: Value<'a>,
}

/// The fields of one message, in the order they are written; a field
/// that cannot be read ends the iteration with its error.
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    /// The offset of `buf` in the outermost bytes.
    base: u64,
    failed: bool,
}

/// The fields of the message `buf`, which starts at `base` in the
/// outermost bytes read (0 for those bytes themselves).
pub fn fields(buf: &[u8], base: u64) -> Fields<'_> {
    Fields {
        buf,
        pos: 0,
        base,
        failed: false,
    }
}

impl<'a> Fields<'a> {
    fn err(&mut self, at: usize, what: &'static str) -> Option<Result<Field<'a>, WireError>> {
        self.failed = true;
        Some(Err(WireError {
            offset: self.base + at as u64,
            what,
        }))
    }

    /// A field whose tag starts at `self.pos`, or its error.
    fn field(&mut self) -> Result<Field<'a>, (usize, &'static str)> {
        let start = self.pos;
        let tag = varint(self.buf, &mut self.pos).map_err(|e| (start, e))?;
        let (number, wire) = split_tag(tag).map_err(|e| (start, e))?;
        let value = match wire {
            0 => Value::Varint(varint(self.buf, &mut self.pos).map_err(|e| (start, e))?),
            1 => Value::I64(u64::from_le_bytes(self.take::<8>()?)),
            5 => Value::I32(u32::from_le_bytes(self.take::<4>()?)),
            2 => {
                let at = self.pos;
                let len = varint(self.buf, &mut self.pos).map_err(|e| (at, e))?;
                let body = self.pos;
                let left = (self.buf.len() - body) as u64;
                if len > left {
                    return Err((at, "a length runs past the end of its message"));
                }
                self.pos = body + len as usize;
                Value::Len(&self.buf[body..self.pos], self.base + body as u64)
            }
            3 => {
                self.skip_group(number)?;
                return self.next_or_end();
            }
            4 => return Err((start, "an end of group with no group open")),
            _ => return Err((start, "a wire type protobuf does not have (6 or 7)")),
        };
        Ok(Field { number, value })
    }

    /// After a skipped group: the next field, or the end of the message.
    fn next_or_end(&mut self) -> Result<Field<'a>, (usize, &'static str)> {
        if self.pos >= self.buf.len() {
            return Err((self.pos, END));
        }
        self.field()
    }

    /// `N` bytes at `self.pos`.
    fn take<const N: usize>(&mut self) -> Result<[u8; N], (usize, &'static str)> {
        let at = self.pos;
        let bytes = (self.buf.get(at..at + N)).ok_or((at, "a fixed-width value cut short"))?;
        self.pos = at + N;
        Ok(bytes.try_into().expect("N bytes"))
    }

    /// Skips the group of field `number` whose start tag was just read, up
    /// to and with its end tag, groups inside it included.
    fn skip_group(&mut self, number: u32) -> Result<(), (usize, &'static str)> {
        let mut open = vec![number];
        while let Some(&inner) = open.last() {
            let start = self.pos;
            if start >= self.buf.len() {
                return Err((start, "a group with no end"));
            }
            let tag = varint(self.buf, &mut self.pos).map_err(|e| (start, e))?;
            let (n, wire) = split_tag(tag).map_err(|e| (start, e))?;
            match wire {
                0 => drop(varint(self.buf, &mut self.pos).map_err(|e| (start, e))?),
                1 => drop(self.take::<8>()?),
                5 => drop(self.take::<4>()?),
                2 => {
                    let at = self.pos;
                    let len = varint(self.buf, &mut self.pos).map_err(|e| (at, e))?;
                    if len > (self.buf.len() - self.pos) as u64 {
                        return Err((at, "a length runs past the end of its message"));
                    }
                    self.pos += len as usize;
                }
                3 if open.len() as u32 >= MAX_GROUP_DEPTH => {
                    return Err((start, "groups nested too deep"))
                }
                3 => open.push(n),
                4 if n == inner => drop(open.pop()),
                4 => return Err((start, "an end of group that is not the open group's")),
                _ => return Err((start, "a wire type protobuf does not have (6 or 7)")),
            }
        }
        Ok(())
    }
}

/// Not an error: a skipped group was the message's last field.
const END: &str = "";

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        match self.field() {
            Ok(f) => Some(Ok(f)),
            Err((_, END)) => None,
            Err((at, what)) => self.err(at, what),
        }
    }
}

/// A tag's field number and wire type.
fn split_tag(tag: u64) -> Result<(u32, u8), &'static str> {
    let number = tag >> 3;
    if number == 0 {
        return Err("field number 0");
    }
    if number > (1 << 29) - 1 {
        return Err("a field number above 2^29 - 1");
    }
    Ok((number as u32, (tag & 7) as u8))
}

/// The varint at `*pos`, moving `*pos` past it: at most 10 bytes, its
/// value within 64 bits.
pub fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, &'static str> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(*pos + i).ok_or("a varint cut short")?;
        if i == 9 && b > 1 {
            return Err("a varint past 64 bits");
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *pos += i + 1;
            return Ok(v);
        }
    }
    Err("a varint longer than 10 bytes")
}

/// The varints of a packed repeated field's bytes, in order.
pub fn packed_varints(buf: &[u8]) -> impl Iterator<Item = Result<u64, &'static str>> + '_ {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= buf.len() {
            return None;
        }
        let r = varint(buf, &mut pos);
        if r.is_err() {
            pos = buf.len();
        }
        Some(r)
    })
}

/// The `N`-byte little-endian values of a packed repeated field's bytes;
/// an error when its length is not a whole number of them.
pub fn packed_fixed<const N: usize>(
    buf: &[u8],
) -> Result<std::slice::ChunksExact<'_, u8>, &'static str> {
    if !buf.len().is_multiple_of(N) {
        return Err("a packed field of fixed-width values with a part value");
    }
    Ok(buf.chunks_exact(N))
}

#[cfg(test)]
mod tests;

/// Protobuf written by hand, for the tests of the readers built on this
/// one (ONNX's), here and in `tests/`; not an encoder for anything else.
#[doc(hidden)]
pub mod encode {
    /// A varint's bytes, canonical.
    pub fn v(mut n: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    /// A tag: field `number`, wire type `wire`.
    pub fn tag(number: u64, wire: u64) -> Vec<u8> {
        v(number << 3 | wire)
    }

    /// Field `number` as a varint.
    pub fn varint_field(number: u64, value: u64) -> Vec<u8> {
        [tag(number, 0), v(value)].concat()
    }

    /// Field `number` as length-delimited `body`.
    pub fn len_field(number: u64, body: &[u8]) -> Vec<u8> {
        [tag(number, 2), v(body.len() as u64), body.to_vec()].concat()
    }
}
