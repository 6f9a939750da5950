//! CBOR values rendered as JSON, losslessly and byte-stably.
//!
//! The same [`Value`] always renders to the same bytes: maps keep their
//! order (for a parsed manifest, the deterministic order), numbers have one
//! spelling, and [`to_json`] emits no whitespace at all. [`to_json_pretty`]
//! indents by two spaces, puts `": "` after keys, and adds no final newline
//! (that is the caller's choice). The table shows the pretty spelling of
//! the escape objects; compact output drops the space after the colon.
//!
//! | CBOR | JSON |
//! | --- | --- |
//! | unsigned or negative integer within ±(2^53−1) | integer: `42`, `-7` |
//! | integer beyond that | `{"$int": "18446744073709551615"}`, exact decimal |
//! | finite float | number that always has a `.` or an `e`, the shortest that reads back to the same f64: `1.0`, `0.1`, `-0.0`, `1e300`, `5e-324` |
//! | NaN, +∞, −∞ | `{"$float": "NaN"}`, `{"$float": "Infinity"}`, `{"$float": "-Infinity"}` |
//! | byte string | `{"$bytes": "<lowercase hex>"}` |
//! | text string | string; `"`, `\` and U+0000–U+001F escaped (`\b \t \n \f \r`, else `\u00XX`), U+007F as `\u007f`, the rest as UTF-8 |
//! | false, true, null | `false`, `true`, `null` |
//! | array | array |
//! | map whose keys are all text | object, keys in map order |
//! | any other map | `{"$map": [[key, value], ...]}`, entries in map order |
//!
//! A text-keyed map with exactly one key that starts with `$` would read
//! like one of the escape objects above, so it takes the general form:
//! `{"$int": "5"}` as a CBOR map renders as `{"$map": [["$int", "5"]]}`.
//! An object with two or more keys is never an escape object, so such
//! keys are left alone there.
//!
//! Integers beyond ±(2^53−1) are escaped because a JSON reader that uses
//! doubles would round them silently. In pretty output the one-key escape
//! objects stay on one line, as the scalars they stand for.
//!
//! Pretty output indents [`MAX_PRETTY_LEVEL`] levels at most: a container
//! that opens deeper is written compactly on one line, so no line is
//! indented by more than 8 spaces and the pretty text is at most
//! [`MAX_GROWTH`] times the compact one whatever the nesting (each item
//! gains a newline, its indent and a space after a colon: at most 10 bytes
//! over an item of at least 1).

use std::fmt::Write as _;
use std::io;

use crate::format::cbor::Value;

/// 2^53 − 1: a double holds every integer up to this magnitude, and its
/// neighbours, exactly.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Pretty output indents at most this many levels: a container that opens
/// this deep is written compactly, on one line.
pub const MAX_PRETTY_LEVEL: usize = 4;

/// Pretty output is at most this many times the compact form's length.
pub const MAX_GROWTH: u64 = 16;

/// Where rendered text goes: a `String`, or [`Pieces`] handing it to a
/// writer a piece at a time, so that a large document is never one string.
pub trait Sink {
    fn push_str(&mut self, s: &str);

    fn push(&mut self, c: char) {
        self.push_str(c.encode_utf8(&mut [0; 4]));
    }
}

impl Sink for String {
    fn push_str(&mut self, s: &str) {
        String::push_str(self, s);
    }

    fn push(&mut self, c: char) {
        String::push(self, c);
    }
}

/// A [`Sink`] that writes to `W` in pieces of about [`Pieces::PIECE`]
/// bytes. A write error is kept and returned by [`Pieces::finish`]; what
/// comes after it is dropped.
pub struct Pieces<W: io::Write> {
    piece: String,
    out: W,
    error: Option<io::Error>,
}

impl<W: io::Write> Pieces<W> {
    pub const PIECE: usize = 64 << 10;

    pub fn new(out: W) -> Pieces<W> {
        Pieces {
            piece: String::new(),
            out,
            error: None,
        }
    }

    fn drain(&mut self) {
        if self.error.is_none() {
            self.error = self.out.write_all(self.piece.as_bytes()).err();
        }
        self.piece.clear();
    }

    /// Writes what is left and gives the writer back, or the first error.
    pub fn finish(mut self) -> io::Result<W> {
        self.drain();
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.out),
        }
    }
}

impl<W: io::Write> Sink for Pieces<W> {
    fn push_str(&mut self, s: &str) {
        self.piece.push_str(s);
        if self.piece.len() >= Self::PIECE {
            self.drain();
        }
    }
}

/// A [`Sink`] that only counts: the length of a text without keeping it.
#[derive(Default)]
pub struct Count(pub u64);

impl Sink for Count {
    fn push_str(&mut self, s: &str) {
        self.0 += s.len() as u64;
    }
}

/// Appends the compact JSON form of `value` to `out`.
pub fn to_json(value: &Value<'_>, out: &mut (impl Sink + ?Sized)) {
    Writer::new(out, false).value(value, 0);
}

/// Appends the JSON form of `value` to `out`, indented by two spaces per
/// level, without a final newline.
pub fn to_json_pretty(value: &Value<'_>, out: &mut (impl Sink + ?Sized)) {
    to_json_pretty_at(value, 0, out);
}

/// Appends `value` as [`to_json_pretty`] writes it when it sits `level`
/// containers deep, for a caller that renders a large document one piece
/// at a time.
pub fn to_json_pretty_at(value: &Value<'_>, level: usize, out: &mut (impl Sink + ?Sized)) {
    Writer::new(out, true).value(value, level);
}

/// The length of the pretty form of a map at `level` whose `n` entries are
/// all text-keyed, given the total length `entries` of their pretty keys
/// and values (each rendered at `level + 1`). Needs `n >= 2`: a map of one
/// `$`-led key takes another form.
pub fn pretty_map_len(n: u64, entries: u64, level: u64) -> u64 {
    // "{", per entry a comma (all but the first), a newline, the indent, the
    // key, ": " and the value; then a newline, the indent and "}".
    let per_entry = 1 + 2 * (level + 1) + 2;
    1 + n.saturating_sub(1) + n * per_entry + entries + 1 + 2 * level + 1
}

/// The length of the pretty form of an array at `level` of `n` items,
/// given the total length `items` of their pretty forms (each rendered at
/// `level + 1`).
pub fn pretty_array_len(n: u64, items: u64, level: u64) -> u64 {
    if n == 0 {
        return "[]".len() as u64;
    }
    // "[", per item a comma (all but the first), a newline and the indent,
    // then the items, a newline, the indent and "]".
    let per_item = 1 + 2 * (level + 1);
    1 + (n - 1) + n * per_item + items + 1 + 2 * level + 1
}

/// The renderer, for a value held whole ([`Writer::value`]) or for a
/// caller that walks a large document itself and writes it in the same
/// spelling, event by event: [`Writer::open`], then per item
/// [`Writer::item`] (and [`Writer::key`] in an object) and the item, then
/// [`Writer::close`]; a container that opens at `level` is written by
/// [`Writer::at`]`(level)`.
pub struct Writer<'o, S: Sink + ?Sized> {
    out: &'o mut S,
    pretty: bool,
}

impl<'o, S: Sink + ?Sized> Writer<'o, S> {
    pub fn new(out: &'o mut S, pretty: bool) -> Writer<'o, S> {
        Writer { out, pretty }
    }

    /// The writer of a container that opens `level` deep: compact from
    /// [`MAX_PRETTY_LEVEL`] on, since deeper indents would make the text
    /// grow with depth × lines.
    pub fn at(&mut self, level: usize) -> Writer<'_, S> {
        Writer {
            out: &mut *self.out,
            pretty: self.pretty && level < MAX_PRETTY_LEVEL,
        }
    }

    pub fn value(&mut self, value: &Value<'_>, level: usize) {
        match value {
            Value::Uint(n) if *n <= MAX_SAFE_INTEGER => push_display(self.out, n),
            Value::Uint(n) => self.escape("$int", &n.to_string()),
            // -1 - n, which is at most 2^53 - 1 in magnitude when n < 2^53 - 1.
            Value::Nint(n) if *n < MAX_SAFE_INTEGER => push_display(self.out, -1 - *n as i64),
            Value::Nint(n) => self.escape("$int", &(-1 - i128::from(*n)).to_string()),
            Value::Float(x) => self.float(*x),
            Value::Bytes(b) => self.escape("$bytes", &hex(b)),
            Value::Text(s) => push_string(self.out, s),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Null => self.out.push_str("null"),
            Value::Array(items) => {
                (self.at(level)).list("[]", items, level, |w, item, l| w.value(item, l))
            }
            Value::Map(entries) => self.at(level).map(entries, level),
        }
    }

    /// Writes `text` as it is: what this writer wrote elsewhere.
    pub fn raw(&mut self, text: &str) {
        self.out.push_str(text);
    }

    /// Opens a container: `bracket` is `[` or `{`.
    pub fn open(&mut self, bracket: char) {
        self.out.push(bracket);
    }

    /// Begins item `i` (from 0) of the container open at `level`.
    pub fn item(&mut self, i: usize, level: usize) {
        if i > 0 {
            self.out.push(',');
        }
        self.newline(level + 1);
    }

    /// Writes an object's key and its colon, the value to follow.
    pub fn key(&mut self, key: &str) {
        push_string(self.out, key);
        self.colon();
    }

    /// Closes the container open at `level` after its `n` items: `bracket`
    /// is `]` or `}`.
    pub fn close(&mut self, bracket: char, n: usize, level: usize) {
        if n > 0 {
            self.newline(level);
        }
        self.out.push(bracket);
    }

    /// Writes `doc` `level` deep, a map of text keys that is an object in
    /// the module's table (not one `$` key, which a caller building its
    /// own document never uses), letting `fill(w, key, l)` write the value
    /// of an entry instead of the one `doc` holds (it says true when it
    /// did): for a document too large to hold whole, its big entries
    /// written as they are walked.
    pub fn object_with(
        &mut self,
        doc: &Value<'_>,
        level: usize,
        mut fill: impl FnMut(&mut Writer<'_, S>, &str, usize) -> bool,
    ) {
        let Some(entries) = object_entries(doc) else {
            debug_assert!(false, "object_with takes what renders as an object");
            return self.value(doc, level);
        };
        let mut w = self.at(level);
        w.open('{');
        for (i, (key, value)) in entries.iter().enumerate() {
            w.item(i, level);
            w.key(key);
            if !fill(&mut w, key, level + 1) {
                w.value(value, level + 1);
            }
        }
        w.close('}', entries.len(), level);
    }

    /// Writes what `items` gives as an array `level` deep, each item by
    /// `each(w, item, l)`: an array written as it is walked.
    pub fn items<T>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        level: usize,
        mut each: impl FnMut(&mut Writer<'_, S>, T, usize),
    ) {
        let mut w = self.at(level);
        w.open('[');
        let mut n = 0;
        for item in items {
            w.item(n, level);
            each(&mut w, item, level + 1);
            n += 1;
        }
        w.close(']', n, level);
    }

    /// A map that cannot be an object (see the module's table) at `level`,
    /// in its general form `{"$map": [[key, value], ...]}`: `half(w, entry,
    /// 0 or 1, l)` writes an entry's key or value, `l` deep.
    pub fn general_map<T>(
        &mut self,
        entries: &[T],
        level: usize,
        mut half: impl FnMut(&mut Writer<'_, S>, &T, usize, usize),
    ) {
        self.open('{');
        self.item(0, level);
        self.key("$map");
        self.list("[]", entries, level + 1, |w, entry, l| {
            w.list("[]", &[0, 1], l, |w, &which, l| half(w, entry, which, l));
        });
        self.close('}', 1, level);
    }

    fn float(&mut self, x: f64) {
        if x.is_nan() {
            self.escape("$float", "NaN");
        } else if x.is_infinite() {
            self.escape("$float", if x > 0.0 { "Infinity" } else { "-Infinity" });
        } else {
            // `{:?}` is the shortest spelling that reads back exactly, and
            // for finite values it is valid JSON: `1.0`, `1e300`, `1e-7`.
            let mut w = Written {
                out: &mut *self.out,
                looks_float: false,
            };
            let _ = write!(w, "{x:?}");
            if !w.looks_float {
                self.out.push_str(".0");
            }
        }
    }

    fn map(&mut self, entries: &[(Value<'_>, Value<'_>)], level: usize) {
        if is_object(entries.len(), entries.iter().map(|(k, _)| k.as_text())) {
            self.list("{}", entries, level, |w, (key, value), l| {
                w.value(key, l);
                w.colon();
                w.value(value, l);
            });
            return;
        }
        self.general_map(entries, level, |w, (key, value), which, l| {
            w.value(if which == 0 { key } else { value }, l)
        });
    }

    /// Writes `items` with `each`, comma-separated, between the two
    /// characters of `brackets`; `level` is the nesting of the brackets.
    fn list<T>(
        &mut self,
        brackets: &str,
        items: &[T],
        level: usize,
        mut each: impl FnMut(&mut Writer<'_, S>, &T, usize),
    ) {
        let (open, close) = (brackets.as_bytes()[0], brackets.as_bytes()[1]);
        self.open(char::from(open));
        for (i, item) in items.iter().enumerate() {
            self.item(i, level);
            each(self, item, level + 1);
        }
        self.close(char::from(close), items.len(), level);
    }

    /// A one-key escape object, always on one line.
    fn escape(&mut self, key: &str, text: &str) {
        self.out.push('{');
        push_string(self.out, key);
        self.colon();
        push_string(self.out, text);
        self.out.push('}');
    }

    fn colon(&mut self) {
        self.out.push_str(if self.pretty { ": " } else { ":" });
    }

    fn newline(&mut self, level: usize) {
        if self.pretty {
            self.out.push('\n');
            for _ in 0..level {
                self.out.push_str("  ");
            }
        }
    }
}

/// Writes, pretty with a final newline, a container's `manifest.json`
/// (Hurray, GGUF): `doc` with its `kv` entry a list of `{"key", "type",
/// "value"}` per item of `kv` (`kv_entry` gives an item's key and type
/// name, `kv_value` writes its value, an array an item at a time) and its
/// `tensors` entry one `tensor(item)` per item of `tensors`, each made and
/// written in turn, so that neither list is ever held as JSON values.
pub fn write_kv_document<K, T>(
    out: &mut dyn Sink,
    doc: &Value<'_>,
    kv: &[K],
    kv_entry: impl Fn(&K) -> (&str, &str),
    kv_value: impl Fn(&mut Writer<'_, dyn Sink + '_>, &K, usize),
    tensors: &[T],
    tensor: impl for<'t> Fn(&'t T) -> Value<'t>,
) {
    Writer::new(out, true).object_with(doc, 0, |w, key, l| match key {
        "kv" => {
            w.items(kv, l, |w, e, l| {
                let (key, ty) = kv_entry(e);
                let entry = Value::Map(vec![
                    (Value::Text("key"), Value::Text(key)),
                    (Value::Text("type"), Value::Text(ty)),
                    (Value::Text("value"), Value::Null),
                ]);
                w.object_with(&entry, l, |w, key, l| {
                    key == "value" && {
                        kv_value(w, e, l);
                        true
                    }
                })
            });
            true
        }
        "tensors" => {
            w.items(tensors, l, |w, x, l| w.value(&tensor(x), l));
            true
        }
        _ => false,
    });
    out.push('\n');
}

/// True when a map of `n` entries with these keys (`None`: not text) is
/// written as a JSON object: every key text, and not one key that begins
/// with `$` (which would read as an escape object).
pub fn is_object<'k>(n: usize, mut keys: impl Iterator<Item = Option<&'k str>>) -> bool {
    let mut first = true;
    keys.all(|k| {
        let one_dollar =
            std::mem::take(&mut first) && n == 1 && k.is_some_and(|k| k.starts_with('$'));
        k.is_some() && !one_dollar
    })
}

/// The entries of `doc` with their keys as text when it is written as an
/// object.
fn object_entries<'v, 'a>(doc: &'v Value<'a>) -> Option<Vec<(&'v str, &'v Value<'a>)>> {
    let Value::Map(entries) = doc else {
        return None;
    };
    is_object(entries.len(), entries.iter().map(|(k, _)| k.as_text())).then(|| {
        entries
            .iter()
            .map(|(k, v)| (k.as_text().unwrap_or_default(), v))
            .collect()
    })
}

/// `fmt::Write` into a [`Sink`], noting whether a `.` or an `e` went by.
struct Written<'o, S: Sink + ?Sized> {
    out: &'o mut S,
    looks_float: bool,
}

impl<S: Sink + ?Sized> std::fmt::Write for Written<'_, S> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.looks_float |= s.contains(['.', 'e']);
        self.out.push_str(s);
        Ok(())
    }
}

fn push_display(out: &mut (impl Sink + ?Sized), n: impl std::fmt::Display) {
    // Writing to a Sink cannot fail.
    let mut w = Written {
        out,
        looks_float: false,
    };
    let _ = write!(w, "{n}");
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

/// Writes `s` as a JSON string, copying unescaped runs whole.
pub fn push_string(out: &mut (impl Sink + ?Sized), s: &str) {
    out.push('"');
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        let short = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\t' => "\\t",
            b'\r' => "\\r",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f | 0x7f => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        run = i + 1;
        if short.is_empty() {
            push_display(out, format_args!("\\u{b:04x}"));
        } else {
            out.push_str(short);
        }
    }
    out.push_str(&s[run..]);
    out.push('"');
}

#[cfg(test)]
mod tests;
