//! Strict deterministic CBOR (RFC 8949 §4.2.1 as zTensor v2 §3.1 narrows it).
//!
//! [`parse`] decodes one item that must span the whole input and accepts
//! only the deterministic encoding of it, so every accepted input is the
//! unique encoding of its value and [`encode`] gives back the same bytes.
//! It rejects, each under its [`Rule`]:
//!
//! * `CborSyntax`: truncated input, trailing bytes, reserved additional
//!   information (28–30), indefinite lengths and the break byte (31), any
//!   tag, any simple value but false, true and null, invalid UTF-8 text, and
//!   a declared length or count the remaining input cannot hold;
//! * `CborDeterminism`: a head longer than its argument needs (lengths and
//!   counts included), a NaN other than `f9 7e00`, an f32 that f16 holds
//!   exactly, an f64 that f32 holds exactly, map keys out of order;
//! * `CborDuplicateKey`: two equal keys in one map;
//! * `CborDepth`: an item deeper than [`MAX_DEPTH`], the root being depth 0.
//!
//! Key order is the bytewise order of the encoded keys, checked on the input
//! bytes themselves, so it holds for keys of any type. Within one head,
//! reserved and indefinite forms are reported before non-shortest ones.
//!
//! What it does not do: it knows nothing of the manifest schema, and it does
//! not check the 1 GiB manifest cap (the caller does, before parsing).
//!
//! Invariants handed on: text and bytes borrow from the input; maps keep
//! the input order, which is the deterministic order; every declared length
//! was checked against the remaining input before anything was allocated,
//! and recursion is bounded by [`MAX_DEPTH`], so hostile input can neither
//! exhaust memory ahead of its own size nor overflow the stack.

use std::cmp::Ordering;

use crate::error::{Error, Result, Rule};

/// Deepest item allowed, counted from the root item at depth 0 (§3.1).
pub const MAX_DEPTH: usize = 32;

/// The only NaN deterministic encoding allows, as f16 bits (`f9 7e00`).
const CANONICAL_NAN_F16: u16 = 0x7e00;

/// A decoded CBOR item, borrowing text and bytes from the input.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// Major type 0.
    Uint(u64),
    /// Major type 1: the value is `-1 - n`.
    Nint(u64),
    /// Major type 2.
    Bytes(&'a [u8]),
    /// Major type 3, valid UTF-8.
    Text(&'a str),
    /// Major type 4.
    Array(Vec<Value<'a>>),
    /// Major type 5, entries in the order of the input (which is the
    /// deterministic order, since the decoder rejects anything else).
    Map(Vec<(Value<'a>, Value<'a>)>),
    /// Simple values 20 and 21.
    Bool(bool),
    /// Simple value 22.
    Null,
    /// Major type 7 floats of any width, widened to f64.
    Float(f64),
}

impl<'a> Value<'a> {
    /// The text of a text string.
    pub fn as_text(&self) -> Option<&'a str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The value of an unsigned integer.
    pub fn as_uint(&self) -> Option<u64> {
        match self {
            Value::Uint(n) => Some(*n),
            _ => None,
        }
    }

    /// The entries of a map, in order.
    pub fn as_map(&self) -> Option<&[(Value<'a>, Value<'a>)]> {
        match self {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The elements of an array.
    pub fn as_array(&self) -> Option<&[Value<'a>]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The value under the text key `key`, when this is a map that has it.
    /// A linear scan: meant for the small maps of a schema, not for
    /// looking names up in a map of a million objects.
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_text() == Some(key))
            .map(|(_, v)| v)
    }

    /// The name of this item's type, for messages: "unsigned integer",
    /// "negative integer", "byte string", "text string", "array", "map",
    /// "boolean", "null" or "float".
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Uint(_) => "unsigned integer",
            Value::Nint(_) => "negative integer",
            Value::Bytes(_) => "byte string",
            Value::Text(_) => "text string",
            Value::Array(_) => "array",
            Value::Map(_) => "map",
            Value::Bool(_) => "boolean",
            Value::Null => "null",
            Value::Float(_) => "float",
        }
    }
}

/// The deterministic order of two text keys: the order of their encoded
/// bytes, which is shorter first, then bytewise (`"b" < "aa"`).
pub fn text_key_cmp(a: &str, b: &str) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// Decodes one item that must span all of `bytes`.
pub fn parse(bytes: &[u8]) -> Result<Value<'_>> {
    let mut decoder = Decoder {
        input: bytes,
        pos: 0,
    };
    let value = decoder.item(0)?;
    decoder.finish()?;
    Ok(value)
}

/// A map entry handed over one at a time: the map's entry count, the key
/// and the value.
pub type EntryFn<'f, 'a> = dyn FnMut(usize, &Value<'a>, &Value<'a>) -> Result<()> + 'f;

/// Decodes like [`parse`], with every check in the same order, but when the
/// root is a map whose entry `stream_key` (a text key) is itself a map,
/// hands that map's entries to `each` one at a time instead of keeping them:
/// a manifest's objects are never all held as one tree. The returned root
/// holds an empty map in that entry's place; the flag says whether it was
/// streamed. An error from `each` stops the decoding.
pub fn parse_streaming<'a>(
    bytes: &'a [u8],
    stream_key: &str,
    each: &mut EntryFn<'_, 'a>,
) -> Result<(Value<'a>, bool)> {
    let mut decoder = Decoder {
        input: bytes,
        pos: 0,
    };
    let (value, streamed) = decoder.root_streaming(stream_key, each)?;
    decoder.finish()?;
    Ok((value, streamed))
}

/// Encodes `value` in deterministic form: shortest heads, map entries in the
/// order given (callers sort), floats in the shortest exact width.
pub fn encode(value: &Value<'_>, out: &mut Vec<u8>) {
    match value {
        Value::Uint(n) => encode_head(0, *n, out),
        Value::Nint(n) => encode_head(1, *n, out),
        Value::Bytes(b) => {
            encode_head(2, b.len() as u64, out);
            out.extend_from_slice(b);
        }
        Value::Text(s) => {
            encode_head(3, s.len() as u64, out);
            out.extend_from_slice(s.as_bytes());
        }
        Value::Array(items) => {
            encode_head(4, items.len() as u64, out);
            for item in items {
                encode(item, out);
            }
        }
        Value::Map(entries) => {
            encode_head(5, entries.len() as u64, out);
            for (k, v) in entries {
                encode(k, out);
                encode(v, out);
            }
        }
        Value::Bool(false) => out.push(0xf4),
        Value::Bool(true) => out.push(0xf5),
        Value::Null => out.push(0xf6),
        Value::Float(x) => put_float(out, *x),
    }
}

/// Writes a head: major type and argument, shortest form. For callers that
/// stream an array or map whose items they encode themselves.
pub fn encode_head(major: u8, arg: u64, out: &mut Vec<u8>) {
    let mt = major << 5;
    if arg < 24 {
        out.push(mt | arg as u8);
    } else if arg <= 0xff {
        out.extend_from_slice(&[mt | 24, arg as u8]);
    } else if arg <= 0xffff {
        out.push(mt | 25);
        out.extend_from_slice(&(arg as u16).to_be_bytes());
    } else if arg <= 0xffff_ffff {
        out.push(mt | 26);
        out.extend_from_slice(&(arg as u32).to_be_bytes());
    } else {
        out.push(mt | 27);
        out.extend_from_slice(&arg.to_be_bytes());
    }
}

/// Writes `x` in the narrowest width that holds it exactly; NaN as `f9 7e00`.
fn put_float(out: &mut Vec<u8>, x: f64) {
    if x.is_nan() {
        out.push(0xf9);
        out.extend_from_slice(&CANONICAL_NAN_F16.to_be_bytes());
    } else if let Some(h) = f16_bits_exact(x) {
        out.push(0xf9);
        out.extend_from_slice(&h.to_be_bytes());
    } else if f64::from(x as f32) == x {
        out.push(0xfa);
        out.extend_from_slice(&(x as f32).to_bits().to_be_bytes());
    } else {
        out.push(0xfb);
        out.extend_from_slice(&x.to_bits().to_be_bytes());
    }
}

/// The value of the IEEE 754 binary16 number with bits `h`, exactly.
fn f16_to_f64(h: u16) -> f64 {
    let sign = u64::from(h >> 15) << 63;
    let exp = u64::from((h >> 10) & 0x1f);
    let frac = u64::from(h & 0x3ff);
    let magnitude = match exp {
        // Subnormal: frac * 2^-24, a product exact in f64.
        0 => frac as f64 * f64::from_bits((1023 - 24) << 52),
        0x1f if frac == 0 => f64::INFINITY,
        0x1f => f64::NAN,
        _ => f64::from_bits(((exp + 1023 - 15) << 52) | (frac << 42)),
    };
    f64::from_bits(sign | magnitude.to_bits())
}

/// The binary16 bits of `x` when f16 holds `x` exactly (NaN never does).
fn f16_bits_exact(x: f64) -> Option<u16> {
    let bits = x.to_bits();
    let sign = ((bits >> 48) & 0x8000) as u16;
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let frac = bits & ((1 << 52) - 1);
    if exp == 0x7ff {
        return (frac == 0).then_some(sign | 0x7c00);
    }
    if exp == 0 {
        // Zero, or an f64 subnormal, far below the smallest f16.
        return (frac == 0).then_some(sign);
    }
    let e = exp - 1023;
    if (-14..=15).contains(&e) {
        // f16 normal: the 42 fraction bits f16 lacks must be zero.
        let fits = frac & ((1 << 42) - 1) == 0;
        return fits.then_some(sign | (((e + 15) as u16) << 10) | (frac >> 42) as u16);
    }
    if (-24..=-15).contains(&e) {
        // f16 subnormal k * 2^-24: the significand shifted right by 28 - e.
        let significand = frac | (1 << 52);
        let shift = (28 - e) as u32;
        let fits = significand & ((1 << shift) - 1) == 0;
        return fits.then_some(sign | (significand >> shift) as u16);
    }
    None
}

/// A cursor over the input. Recursion depth is bounded by [`MAX_DEPTH`].
struct Decoder<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    fn remaining(&self) -> usize {
        self.input.len() - self.pos
    }

    /// Takes `n` bytes belonging to the item that starts at `start`.
    fn take(&mut self, n: usize, start: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.input.len());
        let Some(end) = end else {
            return Err(Error::reject(
                Rule::CborSyntax,
                format!(
                    "input ends at offset {} inside the item at offset {start}",
                    self.input.len()
                ),
            ));
        };
        let bytes = &self.input[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    /// Takes an `n`-byte big-endian number of the item at `start`.
    fn be(&mut self, n: usize, start: usize) -> Result<u64> {
        let bytes = self.take(n, start)?;
        Ok(bytes.iter().fold(0, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn item(&mut self, depth: usize) -> Result<Value<'a>> {
        let start = self.pos;
        if depth > MAX_DEPTH {
            return Err(Error::reject(
                Rule::CborDepth,
                format!(
                    "item at offset {start} is at depth {depth}, past the limit of {MAX_DEPTH}"
                ),
            ));
        }
        let initial = self.take(1, start)?[0];
        let info = initial & 0x1f;
        match initial >> 5 {
            6 => Err(Error::reject(
                Rule::CborSyntax,
                format!("tag at offset {start} (initial byte {initial:#04x})"),
            )),
            7 => self.simple(info, start),
            major => {
                let arg = self.argument(initial, start)?;
                match major {
                    0 => Ok(Value::Uint(arg)),
                    1 => Ok(Value::Nint(arg)),
                    2 => Ok(Value::Bytes(self.string(arg, start)?)),
                    3 => self.text(arg, start),
                    4 => self.array(arg, start, depth),
                    _ => self.map(arg, start, depth),
                }
            }
        }
    }

    /// Reads the argument of a major 0–5 head, requiring the shortest form.
    fn argument(&mut self, initial: u8, start: usize) -> Result<u64> {
        let (arg, min) = match initial & 0x1f {
            info @ 0..=23 => return Ok(u64::from(info)),
            24 => (self.be(1, start)?, 24),
            25 => (self.be(2, start)?, 0x100),
            26 => (self.be(4, start)?, 0x1_0000),
            27 => (self.be(8, start)?, 0x1_0000_0000),
            info => {
                let what = if info == 31 {
                    "indefinite length".to_string()
                } else {
                    format!("reserved additional information {info}")
                };
                return Err(Error::reject(
                    Rule::CborSyntax,
                    format!("{what} at offset {start} (initial byte {initial:#04x})"),
                ));
            }
        };
        if arg < min {
            return Err(Error::reject(
                Rule::CborDeterminism,
                format!(
                    "non-shortest head at offset {start}: argument {arg} encoded in {} bytes",
                    self.pos - start - 1
                ),
            ));
        }
        Ok(arg)
    }

    /// Checks a declared count of things, each at least `unit` bytes long,
    /// against the remaining input, before anything is allocated for them.
    /// `what` names the container and its things, e.g. `("map", "entries")`.
    fn count(&self, declared: u64, unit: usize, what: (&str, &str), start: usize) -> Result<usize> {
        let room = (self.remaining() / unit) as u64;
        if declared > room {
            let (container, things) = what;
            let each = match unit {
                1 => String::new(),
                _ => format!(" of at least {unit} bytes each"),
            };
            return Err(Error::reject(
                Rule::CborSyntax,
                format!(
                    "{container} at offset {start} declares {declared} {things}{each} \
                     but only {} bytes remain",
                    self.remaining()
                ),
            ));
        }
        Ok(declared as usize)
    }

    fn string(&mut self, len: u64, start: usize) -> Result<&'a [u8]> {
        let len = self.count(len, 1, ("string", "bytes"), start)?;
        self.take(len, start)
    }

    fn text(&mut self, len: u64, start: usize) -> Result<Value<'a>> {
        let bytes = self.string(len, start)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(Value::Text(s)),
            Err(e) => Err(Error::reject(
                Rule::CborSyntax,
                format!(
                    "invalid utf-8 in the text string at offset {start}: bad byte at offset {}",
                    self.pos - bytes.len() + e.valid_up_to()
                ),
            )),
        }
    }

    fn array(&mut self, count: u64, start: usize, depth: usize) -> Result<Value<'a>> {
        let n = self.count(count, 1, ("array", "items"), start)?;
        let mut items = Vec::with_capacity(super::reserve_ahead(n as u64));
        for _ in 0..n {
            items.push(self.item(depth + 1)?);
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, count: u64, start: usize, depth: usize) -> Result<Value<'a>> {
        let n = self.count(count, 2, ("map", "entries"), start)?;
        let mut entries: Vec<(Value<'a>, Value<'a>)> =
            Vec::with_capacity(super::reserve_ahead(n as u64));
        self.map_entries(n, depth, &mut |d, _| d.item(depth + 1), &mut |k, v| {
            entries.push((k, v));
            Ok(())
        })?;
        Ok(Value::Map(entries))
    }

    /// The `n` entries of a map at `depth`: each key decoded and required to
    /// sort strictly after the one before it (by encoded bytes), each value
    /// decoded by `value` (which sees the key), each pair given to `visit`.
    /// The one loop behind [`Decoder::map`] and the streaming decoders.
    fn map_entries(
        &mut self,
        n: usize,
        depth: usize,
        value: &mut dyn FnMut(&mut Self, &Value<'a>) -> Result<Value<'a>>,
        visit: &mut dyn FnMut(Value<'a>, Value<'a>) -> Result<()>,
    ) -> Result<()> {
        let mut prev: Option<((usize, usize), Value<'a>)> = None;
        for _ in 0..n {
            let key_start = self.pos;
            let key = self.item(depth + 1)?;
            let key_span = (key_start, self.pos);
            if let Some((prev_span, prev_key)) = &prev {
                self.check_key_order(*prev_span, key_span, prev_key, &key)?;
            }
            let v = value(self, &key)?;
            // Keys are almost always text, so keeping a copy is cheap.
            prev = Some((key_span, key.clone()));
            visit(key, v)?;
        }
        Ok(())
    }

    /// Reads a definite map head at the current position; its entry count.
    fn map_head(&mut self) -> Result<usize> {
        let start = self.pos;
        let initial = self.take(1, start)?[0];
        let count = self.argument(initial, start)?;
        self.count(count, 2, ("map", "entries"), start)
    }

    /// True when the next item is a map with a definite length (which
    /// `map_head` reads); anything else goes through [`Decoder::item`].
    fn at_definite_map(&self) -> bool {
        self.input
            .get(self.pos)
            .is_some_and(|&b| b >> 5 == 5 && b & 0x1f <= 27)
    }

    /// The root item, streaming the entries of the map under `stream_key`
    /// when the root is a map (see [`parse_streaming`]).
    fn root_streaming(
        &mut self,
        stream_key: &str,
        each: &mut EntryFn<'_, 'a>,
    ) -> Result<(Value<'a>, bool)> {
        if !self.at_definite_map() {
            return Ok((self.item(0)?, false));
        }
        let n = self.map_head()?;
        let mut entries: Vec<(Value<'a>, Value<'a>)> =
            Vec::with_capacity(super::reserve_ahead(n as u64));
        let mut streamed = false;
        let mut value = |d: &mut Self, key: &Value<'a>| {
            if key.as_text() == Some(stream_key) && d.at_definite_map() {
                streamed = true;
                d.map_streamed(1, each)?;
                Ok(Value::Map(Vec::new()))
            } else {
                d.item(1)
            }
        };
        self.map_entries(n, 0, &mut value, &mut |k, v| {
            entries.push((k, v));
            Ok(())
        })?;
        Ok((Value::Map(entries), streamed))
    }

    /// A map at `depth` whose entries go to `each` instead of into a Value;
    /// the same checks as [`Decoder::map`].
    fn map_streamed(&mut self, depth: usize, each: &mut EntryFn<'_, 'a>) -> Result<()> {
        let n = self.map_head()?;
        self.map_entries(n, depth, &mut |d, _| d.item(depth + 1), &mut |k, v| {
            each(n, &k, &v)
        })
    }

    /// Requires all of the input to have been consumed by the root item.
    fn finish(&self) -> Result<()> {
        if self.pos == self.input.len() {
            return Ok(());
        }
        Err(Error::reject(
            Rule::CborSyntax,
            format!(
                "trailing bytes after the root item, from offset {} to the end at {}",
                self.pos,
                self.input.len()
            ),
        ))
    }

    /// Requires the encoded key at `cur` to sort strictly after the one at
    /// `prev`; both are spans of the input.
    fn check_key_order(
        &self,
        prev: (usize, usize),
        cur: (usize, usize),
        prev_key: &Value<'_>,
        key: &Value<'_>,
    ) -> Result<()> {
        let (rule, relation) = match self.input[prev.0..prev.1].cmp(&self.input[cur.0..cur.1]) {
            Ordering::Less => return Ok(()),
            Ordering::Equal => (Rule::CborDuplicateKey, "repeats"),
            Ordering::Greater => (Rule::CborDeterminism, "sorts before"),
        };
        Err(Error::reject(
            rule,
            format!(
                "map key {} at offset {} {relation} the previous key {} at offset {}",
                describe(key),
                cur.0,
                describe(prev_key),
                prev.0
            ),
        ))
    }

    /// Major type 7: false, true, null and canonical floats only.
    fn simple(&mut self, info: u8, start: usize) -> Result<Value<'a>> {
        match info {
            20 => Ok(Value::Bool(false)),
            21 => Ok(Value::Bool(true)),
            22 => Ok(Value::Null),
            25 => self.float(2, start),
            26 => self.float(4, start),
            27 => self.float(8, start),
            _ => Err(self.bad_simple(info, start)),
        }
    }

    /// A float of `n` bytes (2, 4 or 8), which must be the one NaN or
    /// a value no narrower width holds exactly.
    fn float(&mut self, n: usize, start: usize) -> Result<Value<'a>> {
        let bits = self.be(n, start)?;
        let x = match n {
            2 => f16_to_f64(bits as u16),
            4 => f64::from(f32::from_bits(bits as u32)),
            _ => f64::from_bits(bits),
        };
        let problem = if x.is_nan() {
            (bits != u64::from(CANONICAL_NAN_F16) || n != 2)
                .then_some("the only NaN allowed is f9 7e00")
        } else if n == 4 && f16_bits_exact(x).is_some() {
            Some("f16 holds it exactly")
        } else if n == 8 && f64::from(x as f32) == x {
            Some("f32 holds it exactly")
        } else {
            None
        };
        match problem {
            None => Ok(Value::Float(x)),
            Some(why) => Err(Error::reject(
                Rule::CborDeterminism,
                format!(
                    "non-canonical {}-bit float {bits:#0w$x} ({x:?}) at offset {start}: {why}",
                    n * 8,
                    w = 2 + 2 * n
                ),
            )),
        }
    }

    fn bad_simple(&self, info: u8, start: usize) -> Error {
        let what = match info {
            0..=19 => format!("unassigned simple value {info}"),
            23 => "simple value 23 (undefined)".to_string(),
            24 => match self.input.get(start + 1) {
                Some(v) => format!("one-byte simple value {v}"),
                None => "truncated one-byte simple value".to_string(),
            },
            31 => "break byte 0xff outside an indefinite-length item".to_string(),
            _ => format!("reserved additional information {info} in major type 7"),
        };
        Error::reject(Rule::CborSyntax, format!("{what} at offset {start}"))
    }
}

/// A short rendering of a map key for messages.
fn describe(v: &Value<'_>) -> String {
    match v {
        Value::Text(s) if s.len() <= 80 => format!("{s:?}"),
        Value::Text(s) => format!("(text string of {} bytes)", s.len()),
        Value::Uint(n) => n.to_string(),
        Value::Nint(n) => (-1 - i128::from(*n)).to_string(),
        Value::Float(x) => format!("{x:?}"),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_string(),
        other => format!("({})", other.type_name()),
    }
}

#[cfg(test)]
mod tests;
