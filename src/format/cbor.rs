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
mod tests {
    use super::*;

    fn rule_of(bytes: &[u8]) -> Option<Rule> {
        parse(bytes).err().and_then(|e| e.rule())
    }

    fn assert_rule(rule: Rule, cases: &[&[u8]]) {
        for case in cases {
            assert_eq!(rule_of(case), Some(rule), "input {case:02x?}");
        }
    }

    fn assert_ok(cases: &[&[u8]]) {
        for case in cases {
            if let Err(e) = parse(case) {
                panic!("input {case:02x?} rejected: {e}");
            }
        }
    }

    fn nested_arrays(prefix: &[u8], levels: usize) -> Vec<u8> {
        let mut bytes = prefix.to_vec();
        bytes.resize(bytes.len() + levels, 0x81);
        bytes.push(0x00);
        bytes
    }

    #[test]
    fn a_head_longer_than_its_argument_needs_is_not_deterministic() {
        assert_rule(
            Rule::CborDeterminism,
            &[
                &[0x18, 0x05],
                &[0x18, 0x17],
                &[0x19, 0x00, 0xff],
                &[0x1a, 0x00, 0x00, 0xff, 0xff],
                &[0x1b, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
                &[0x38, 0x00],                   // -1 in one byte
                &[0x58, 0x01, 0xaa],             // byte string length
                &[0x78, 0x01, b'a'],             // text length
                &[0x98, 0x00],                   // array count
                &[0xb9, 0x00, 0x00],             // map count
                &[0x81, 0x19, 0x00, 0x01],       // nested
                &[0x9a, 0x00, 0x00, 0x00, 0x01], // count, before the length check
            ],
        );
        assert_ok(&[
            &[0x17],
            &[0x18, 0x18],
            &[0x19, 0x01, 0x00],
            &[0x1a, 0x00, 0x01, 0x00, 0x00],
            &[0x1b, 0, 0, 0, 1, 0, 0, 0, 0],
            &[0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        ]);
    }

    #[test]
    fn reserved_and_indefinite_heads_are_syntax_errors_before_shortness() {
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for major in 0..8u8 {
            if major == 6 {
                continue;
            }
            for info in 28..=31u8 {
                cases.push(vec![(major << 5) | info, 0x00, 0x00]);
            }
        }
        cases.push(vec![0x9f, 0x00, 0xff]); // indefinite array
        cases.push(vec![0x5f, 0x41, 0x00, 0xff]); // indefinite bytes
        cases.push(vec![0xbf, 0xff]); // indefinite map
        cases.push(vec![0x81, 0xff]); // a bare break inside an array
        cases.push(vec![0x1c]); // reserved, even with nothing after it
        let refs: Vec<&[u8]> = cases.iter().map(Vec::as_slice).collect();
        assert_rule(Rule::CborSyntax, &refs);
    }

    #[test]
    fn any_tag_anywhere_is_a_syntax_error() {
        assert_rule(
            Rule::CborSyntax,
            &[
                &[0xc0, 0x60],
                &[0xc2, 0x41, 0x01],       // bignum
                &[0xd8, 0x18, 0x41, 0x00], // embedded CBOR
                &[0xdb, 0, 0, 0, 0, 0, 0, 0, 0, 0x00],
                &[0xd8, 0x00, 0x00], // a non-shortest tag is still a tag
                &[0xa1, 0x61, b'a', 0xc1, 0x00],
                &[0x82, 0x00, 0xc0, 0x60],
            ],
        );
    }

    #[test]
    fn simple_values_other_than_false_true_null_are_syntax_errors() {
        assert_ok(&[&[0xf4], &[0xf5], &[0xf6]]);
        assert_rule(
            Rule::CborSyntax,
            &[
                &[0xe0],
                &[0xf3],
                &[0xf7], // undefined
                &[0xf8, 0x20],
                &[0xf8, 0xff],
                &[0xf8, 0x14], // false, but as a non-canonical one-byte form
                &[0xf8],
                &[0xff],
            ],
        );
        assert_eq!(parse(&[0xf4]).unwrap(), Value::Bool(false));
        assert_eq!(parse(&[0xf5]).unwrap(), Value::Bool(true));
        assert_eq!(parse(&[0xf6]).unwrap(), Value::Null);
    }

    #[test]
    fn truncated_input_is_a_syntax_error() {
        assert_rule(
            Rule::CborSyntax,
            &[
                &[],
                &[0x18],
                &[0x19, 0x01],
                &[0x1b, 0x01, 0, 0, 0, 0, 0, 0],
                &[0x62, b'a'],
                &[0x82, 0x00],
                &[0xa1, 0x61, b'a'],
                &[0xa2, 0x00, 0x00, 0x01],
                &[0xf9, 0x7e],
                &[0xfa, 0x3f, 0x80, 0x00],
                &[0xfb, 0x3f, 0xb9, 0x99, 0x99],
            ],
        );
    }

    #[test]
    fn trailing_bytes_after_the_root_are_a_syntax_error() {
        assert_rule(
            Rule::CborSyntax,
            &[
                &[0x00, 0x00],
                &[0xa0, 0x00],
                &[0x80, 0xff],
                &[0x61, b'a', b'b'],
            ],
        );
    }

    #[test]
    fn invalid_utf8_text_is_a_syntax_error() {
        assert_rule(
            Rule::CborSyntax,
            &[
                &[0x61, 0xff],
                &[0x62, 0xc3, 0x28],
                &[0x63, 0xed, 0xa0, 0x80], // a surrogate
                &[0x62, 0xc0, 0x80],       // overlong NUL
                &[0x61, 0xc3],             // cut mid-character
            ],
        );
        // The same bytes are fine as a byte string.
        assert_eq!(parse(&[0x41, 0xff]).unwrap(), Value::Bytes(&[0xff]));
        assert_eq!(parse(&[0x62, 0xc3, 0xa9]).unwrap(), Value::Text("é"));
    }

    #[test]
    fn a_declared_length_is_checked_before_it_is_believed() {
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for major in 2..=5u8 {
            for declared in [u64::MAX, 1 << 40, 0x1_0000_0000, 1 << 20, 300, 25] {
                let mut input = Vec::new();
                encode_head(major, declared, &mut input);
                cases.push(input);
            }
        }
        cases.push(vec![0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        cases.push(vec![0x84, 0x00, 0x00, 0x00]); // four items, three bytes
        cases.push(vec![0xa3, 0x00, 0x00, 0x01, 0x00, 0x02]); // three entries, five bytes
        cases.push(vec![0x65, b'a', b'b', b'c', b'd']); // five bytes, four left
                                                        // Every level of a deep nest claims as many items as bytes remain.
        let mut deep = Vec::new();
        for _ in 0..MAX_DEPTH {
            deep.extend_from_slice(&[0x9a, 0x00, 0x01, 0x00, 0x00]);
        }
        deep.resize(deep.len() + 0xffff, 0x00);
        cases.push(deep);
        let refs: Vec<&[u8]> = cases.iter().map(Vec::as_slice).collect();
        assert_rule(Rule::CborSyntax, &refs);
    }

    #[test]
    fn floats_must_be_in_their_shortest_exact_width() {
        assert_ok(&[
            &[0xf9, 0x00, 0x01],                                     // smallest f16 subnormal
            &[0xf9, 0x03, 0xff],                                     // largest f16 subnormal
            &[0xf9, 0x7e, 0x00],                                     // the NaN
            &[0xf9, 0x7c, 0x00],                                     // +inf
            &[0xf9, 0xfc, 0x00],                                     // -inf
            &[0xf9, 0x80, 0x00],                                     // -0.0
            &[0xfa, 0x3f, 0x8c, 0xcc, 0xcd],                         // 1.1f32
            &[0xfa, 0x47, 0x7f, 0xf0, 0x00],                         // 65520, just past f16 max
            &[0xfb, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a], // 0.1
        ]);
        assert_rule(
            Rule::CborDeterminism,
            &[
                &[0xf9, 0x7e, 0x01],
                &[0xf9, 0xfe, 0x00], // a negative NaN
                &[0xf9, 0x7c, 0x01], // a signalling NaN
                &[0xfa, 0x7f, 0xc0, 0x00, 0x00],
                &[0xfa, 0x7f, 0x80, 0x00, 0x00],       // +inf in f32
                &[0xfa, 0x3f, 0x80, 0x00, 0x00],       // 1.0 in f32
                &[0xfa, 0x00, 0x00, 0x00, 0x00],       // 0.0 in f32
                &[0xfa, 0x33, 0x80, 0x00, 0x00],       // 2^-24, an f16 subnormal
                &[0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0], // 1.5 in f64
                &[0xfb, 0x3f, 0xf1, 0x99, 0x99, 0xa0, 0, 0, 0], // 1.1f32 in f64
                &[0xfb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0], // NaN in f64
                &[0xfb, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0], // +inf in f64
                &[0xfb, 0x80, 0, 0, 0, 0, 0, 0, 0],    // -0.0 in f64
            ],
        );
        assert!(matches!(parse(&[0xf9, 0x7e, 0x00]), Ok(Value::Float(x)) if x.is_nan()));
        let neg_zero = parse(&[0xf9, 0x80, 0x00]).unwrap();
        assert!(matches!(neg_zero, Value::Float(x) if x == 0.0 && x.is_sign_negative()));
        assert_eq!(
            parse(&[0xf9, 0x00, 0x01]).unwrap(),
            Value::Float(2f64.powi(-24))
        );
    }

    #[test]
    fn map_keys_ascend_by_their_encoded_bytes() {
        // {"b": 0, "aa": 0}: shorter first.
        assert_ok(&[&[0xa2, 0x61, b'b', 0x00, 0x62, b'a', b'a', 0x00]]);
        // {1: 0, -1: 0, "a": 0, h'00': 0} is ascending by encoded bytes too.
        assert_ok(&[&[0xa3, 0x01, 0x00, 0x20, 0x00, 0x61, b'a', 0x00]]);
        assert_ok(&[&[0xa2, 0x41, 0x00, 0x00, 0x61, b'a', 0x00]]);
        assert_rule(
            Rule::CborDeterminism,
            &[
                &[0xa2, 0x62, b'a', b'a', 0x00, 0x61, b'b', 0x00],
                &[0xa2, 0x61, b'b', 0x00, 0x61, b'a', 0x00],
                &[0xa2, 0x20, 0x00, 0x01, 0x00],
                &[0xa2, 0x81, 0x01, 0x00, 0x81, 0x00, 0x00],
            ],
        );
        assert_eq!(text_key_cmp("b", "aa"), Ordering::Less);
        assert_eq!(text_key_cmp("objects", "attributes"), Ordering::Less);
        assert_eq!(text_key_cmp("a", "b"), Ordering::Less);
        assert_eq!(text_key_cmp("x", "x"), Ordering::Equal);
    }

    #[test]
    fn a_repeated_map_key_is_a_duplicate() {
        assert_rule(
            Rule::CborDuplicateKey,
            &[
                &[0xa2, 0x61, b'a', 0x00, 0x61, b'a', 0x01],
                &[0xa2, 0x01, 0x00, 0x01, 0x00],
                &[0xa2, 0x80, 0x00, 0x80, 0x00],
                &[0xa2, 0xf9, 0x7e, 0x00, 0x00, 0xf9, 0x7e, 0x00, 0x00],
                // Only in a nested map.
                &[0x81, 0xa3, 0x00, 0x00, 0x61, b'z', 0x00, 0x61, b'z', 0x00],
            ],
        );
    }

    #[test]
    fn depth_is_counted_from_the_root_and_capped_at_32() {
        // Root map {"a": [[...[0]...]]}: the map is depth 0, 31 arrays put
        // the innermost 0 at depth 32.
        let map_prefix = [0xa1, 0x61, b'a'];
        assert_ok(&[&nested_arrays(&map_prefix, 31)]);
        assert_rule(Rule::CborDepth, &[&nested_arrays(&map_prefix, 32)]);
        // Bare arrays as the root: 32 levels pass, 33 and 40 do not.
        assert_ok(&[&nested_arrays(&[], 32)]);
        assert_rule(
            Rule::CborDepth,
            &[&nested_arrays(&[], 33), &nested_arrays(&[], 40)],
        );
        // A map key counts like a value: {[...[0]...]: 0}.
        let mut key_too_deep = nested_arrays(&[0xa1], 32);
        key_too_deep.push(0x00);
        assert_rule(Rule::CborDepth, &[&key_too_deep]);
        // Empty containers at depth 32 hold nothing deeper.
        let mut empty_at_limit = vec![0x81; 32];
        empty_at_limit.push(0xa0);
        assert_ok(&[&empty_at_limit]);
    }

    #[test]
    fn hostile_nesting_cannot_overflow_the_stack() {
        let deep = vec![0x81; 1_000_000];
        assert_eq!(rule_of(&deep), Some(Rule::CborDepth));
        let deep_maps = [0xa1, 0x00].repeat(500_000);
        assert_eq!(rule_of(&deep_maps), Some(Rule::CborDepth));
    }

    fn varied() -> Value<'static> {
        Value::Map(vec![
            (Value::Uint(7), Value::Null),
            (Value::Nint(0), Value::Bool(true)),
            (Value::Bytes(&[]), Value::Bool(false)),
            (Value::Text("b"), Value::Float(0.1)),
            (Value::Text("aa"), Value::Text("héllo\u{0}")),
            (
                Value::Text("nums"),
                Value::Array(vec![
                    Value::Uint(0),
                    Value::Uint(23),
                    Value::Uint(24),
                    Value::Uint(0xff),
                    Value::Uint(0x100),
                    Value::Uint(0xffff),
                    Value::Uint(0x1_0000),
                    Value::Uint(0xffff_ffff),
                    Value::Uint(0x1_0000_0000),
                    Value::Uint(u64::MAX),
                    Value::Nint(u64::MAX),
                    Value::Float(1.5),
                    Value::Float(1.1f32 as f64),
                    Value::Float(f64::INFINITY),
                    Value::Float(f64::NEG_INFINITY),
                    Value::Float(65504.0),
                    Value::Float(5.960464477539063e-8),
                    Value::Float(f64::MAX),
                    Value::Float(f64::MIN_POSITIVE / 4.0),
                ]),
            ),
            (Value::Text("bytes"), Value::Bytes(&[0u8; 300])),
            (Value::Array(vec![]), Value::Map(vec![])),
        ])
    }

    #[test]
    fn encode_then_parse_gives_back_the_value_and_the_bytes() {
        let value = varied();
        let mut bytes = Vec::new();
        encode(&value, &mut bytes);
        let back = parse(&bytes).expect("the encoder's output is deterministic");
        assert_eq!(back, value);
        let mut again = Vec::new();
        encode(&back, &mut again);
        assert_eq!(again, bytes);
    }

    #[test]
    fn the_encoder_picks_the_shortest_head_and_float() {
        let cases: &[(Value, &[u8])] = &[
            (Value::Uint(23), &[0x17]),
            (Value::Uint(24), &[0x18, 0x18]),
            (Value::Uint(256), &[0x19, 0x01, 0x00]),
            (Value::Nint(0), &[0x20]),
            (Value::Text("a"), &[0x61, b'a']),
            (Value::Float(1.0), &[0xf9, 0x3c, 0x00]),
            (Value::Float(-0.0), &[0xf9, 0x80, 0x00]),
            (Value::Float(f64::NAN), &[0xf9, 0x7e, 0x00]),
            (Value::Float(-f64::NAN), &[0xf9, 0x7e, 0x00]),
            (Value::Float(f64::INFINITY), &[0xf9, 0x7c, 0x00]),
            (Value::Float(1.1f32 as f64), &[0xfa, 0x3f, 0x8c, 0xcc, 0xcd]),
            (
                Value::Float(0.1),
                &[0xfb, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a],
            ),
            (
                Value::Map(vec![
                    (Value::Text("z"), Value::Uint(1)),
                    (Value::Uint(0), Value::Uint(2)),
                ]),
                &[0xa2, 0x61, b'z', 0x01, 0x00, 0x02], // the order given
            ),
        ];
        for (value, expected) in cases {
            let mut out = Vec::new();
            encode(value, &mut out);
            assert_eq!(out, *expected, "{value:?}");
        }
        let heads: &[(u8, u64, &[u8])] = &[
            (4, 0xffff, &[0x99, 0xff, 0xff]),
            (5, 0x1_0000, &[0xba, 0x00, 0x01, 0x00, 0x00]),
            (2, 0x1_0000_0000, &[0x5b, 0, 0, 0, 1, 0, 0, 0, 0]),
        ];
        for (major, arg, expected) in heads {
            let mut out = Vec::new();
            encode_head(*major, *arg, &mut out);
            assert_eq!(out, *expected, "major {major}, argument {arg}");
        }
    }

    /// Tiny xorshift, so the mutation test is seeded and repeatable.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn mutated_input_never_panics_and_what_parses_is_canonical() {
        let mut base = Vec::new();
        encode(&varied(), &mut base);
        let mut state = 0x2545_f491_4f6c_dd1d;
        let mut accepted = 0;
        for _ in 0..20_000 {
            let mut input = base.clone();
            for _ in 0..1 + next(&mut state) % 4 {
                let at = (next(&mut state) % input.len() as u64) as usize;
                input[at] = next(&mut state) as u8;
            }
            input.truncate(input.len() - (next(&mut state) % 3) as usize);
            if let Ok(value) = parse(&input) {
                let mut again = Vec::new();
                encode(&value, &mut again);
                assert_eq!(
                    again, input,
                    "accepted input is not the encoding of its value"
                );
                accepted += 1;
            }
        }
        // Enough mutants survive for the re-encoding check to mean something.
        assert!(accepted > 100, "only {accepted} mutants parsed");
    }

    fn naive_f16_to_f64(h: u16) -> f64 {
        let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
        let exp = i32::from((h >> 10) & 0x1f);
        let frac = f64::from(h & 0x3ff);
        match exp {
            0 => sign * frac / 1024.0 * 2f64.powi(-14),
            31 if frac == 0.0 => sign * f64::INFINITY,
            31 => f64::NAN,
            _ => sign * (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
        }
    }

    #[test]
    fn f16_conversion_matches_a_naive_reference_for_all_65536_patterns() {
        for h in 0..=u16::MAX {
            let x = f16_to_f64(h);
            let reference = naive_f16_to_f64(h);
            if reference.is_nan() {
                assert!(x.is_nan(), "{h:#06x}");
                assert_eq!(f16_bits_exact(x), None);
                continue;
            }
            assert_eq!(x.to_bits(), reference.to_bits(), "{h:#06x}");
            assert_eq!(f16_bits_exact(x), Some(h), "{h:#06x} back");
            // The f64 neighbours are never f16 values.
            if x.is_finite() {
                for bits in [x.to_bits() + 1, x.to_bits().wrapping_sub(1)] {
                    if bits & !(1 << 63) != 0 && bits != (1 << 63) - 1 {
                        assert_eq!(f16_bits_exact(f64::from_bits(bits)), None, "{h:#06x}±1");
                    }
                }
            }
            // The same value in a wider float is rejected.
            let mut wide = vec![0xfa];
            wide.extend_from_slice(&(x as f32).to_bits().to_be_bytes());
            assert_eq!(
                rule_of(&wide),
                Some(Rule::CborDeterminism),
                "{h:#06x} as f32"
            );
            let mut wide = vec![0xfb];
            wide.extend_from_slice(&x.to_bits().to_be_bytes());
            assert_eq!(
                rule_of(&wide),
                Some(Rule::CborDeterminism),
                "{h:#06x} as f64"
            );
        }
        // Midpoints between neighbouring f16 values and values out of range.
        for h in 0..0x7bffu16 {
            let mid = (f16_to_f64(h) + f16_to_f64(h + 1)) / 2.0;
            assert_eq!(f16_bits_exact(mid), None, "midpoint above {h:#06x}");
        }
        assert_eq!(f16_bits_exact(65520.0), None);
        assert_eq!(f16_bits_exact(2f64.powi(-25)), None);
        assert_eq!(f16_bits_exact(2f64.powi(16)), None);
    }

    #[test]
    fn helpers_read_the_value() {
        let value = varied();
        assert_eq!(value.get("b"), Some(&Value::Float(0.1)));
        assert_eq!(value.get("aa").and_then(Value::as_text), Some("héllo\u{0}"));
        assert_eq!(
            value.get("nums").and_then(Value::as_array).map(<[_]>::len),
            Some(19)
        );
        assert_eq!(value.get("missing"), None);
        assert_eq!(Value::Uint(3).get("b"), None);
        assert_eq!(value.as_map().map(<[_]>::len), Some(8));
        assert_eq!(Value::Uint(3).as_uint(), Some(3));
        assert_eq!(Value::Nint(3).as_uint(), None);
        assert_eq!(Value::Text("x").as_uint(), None);
        assert_eq!(Value::Uint(3).as_text(), None);
        let names: Vec<&str> = [
            Value::Uint(0),
            Value::Nint(0),
            Value::Bytes(&[]),
            Value::Text(""),
            Value::Array(vec![]),
            Value::Map(vec![]),
            Value::Bool(true),
            Value::Null,
            Value::Float(0.0),
        ]
        .iter()
        .map(Value::type_name)
        .collect();
        assert_eq!(
            names,
            [
                "unsigned integer",
                "negative integer",
                "byte string",
                "text string",
                "array",
                "map",
                "boolean",
                "null",
                "float"
            ]
        );
    }
}
