//! A header's or index's `manifest.json`, written straight from its text.
//!
//! The text is `serde_json`'s to read, event by event, and each event goes
//! to the one renderer every `manifest.json` uses ([`Writer`]), so the
//! bytes are those of [`Json::to_value`] rendered whole, without either
//! tree: both cost about 40 times the text (a 10 MB header took 400 MB to
//! render), while this costs the nesting's depth and one pending value.
//!
//! One case needs a look ahead: an object whose first key begins with `$`
//! is written in the general form when it has no other key (the module
//! table of `crate::format::json`). Its first value is kept until the next
//! key says which form: near the top, where the forms indent it
//! differently, as the text it is (a borrowed slice, read again); deeper,
//! where both write it compactly, written once into a string (so a chain
//! of such objects 127 deep reads its innermost value four times, not 127).
//!
//! [`Json::to_value`]: super::json::Json::to_value

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::format::cbor::Value;
use crate::format::json::{Sink, Writer};

/// Writes the pretty JSON of `text`, one JSON document, to `out`, without
/// a final newline.
pub fn write_pretty(text: &str, out: &mut dyn Sink) -> Result<(), serde_json::Error> {
    let mut w = Writer::new(out, true);
    transcode(text, &mut w, 0)
}

/// Writes `text`, which sits `level` deep, with `w`.
fn transcode(
    text: &str,
    w: &mut Writer<'_, dyn Sink + '_>,
    level: usize,
) -> serde_json::Result<()> {
    let mut de = serde_json::Deserializer::from_str(text);
    Item {
        w,
        level,
        index: None,
    }
    .deserialize(&mut de)?;
    de.end()
}

/// The value of an object's first key, when that key begins with `$`,
/// kept until the next key says which form the object takes.
enum Pending<'de> {
    /// Near the top, where the two forms indent it differently: its text,
    /// to be read again (at most three levels deep, so a value is read at
    /// most four times however its `$` objects nest).
    Raw(&'de RawValue),
    /// Deeper, where both forms write it compactly, the same: written.
    Written(String),
}

impl<'de> Pending<'de> {
    fn read<A: MapAccess<'de>>(map: &mut A, level: usize) -> Result<Pending<'de>, A::Error> {
        if level + 1 < crate::format::json::MAX_PRETTY_LEVEL {
            return Ok(Pending::Raw(map.next_value()?));
        }
        let mut text = String::new();
        let mut w = Writer::new(&mut text as &mut dyn Sink, true);
        map.next_value_seed(Item {
            w: &mut w,
            level: level + 1,
            index: None,
        })?;
        Ok(Pending::Written(text))
    }

    /// Writes it `level` deep.
    fn write(&self, w: &mut Writer<'_, dyn Sink + '_>, level: usize) -> serde_json::Result<()> {
        match self {
            Pending::Raw(raw) => transcode(raw.get(), w, level),
            Pending::Written(text) => {
                w.raw(text);
                Ok(())
            }
        }
    }
}

/// One value to write `level` deep; as item `index` of its parent array
/// (which opened one level up), whose separator it writes first, when it
/// is one.
struct Item<'w, 'o, 's> {
    w: &'w mut Writer<'o, dyn Sink + 's>,
    level: usize,
    index: Option<usize>,
}

impl<'de> DeserializeSeed<'de> for Item<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if let Some(i) = self.index {
            self.w.item(i, self.level - 1);
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Item<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.w.value(&Value::Null, self.level);
        Ok(())
    }

    fn visit_bool<E>(self, b: bool) -> Result<(), E> {
        self.w.value(&Value::Bool(b), self.level);
        Ok(())
    }

    fn visit_u64<E>(self, n: u64) -> Result<(), E> {
        self.w.value(&Value::Uint(n), self.level);
        Ok(())
    }

    fn visit_i64<E>(self, n: i64) -> Result<(), E> {
        // Called for negative numbers only; the tree keeps them as CBOR does.
        let v = match u64::try_from(n) {
            Ok(u) => Value::Uint(u),
            Err(_) => Value::Nint(!(n as u64)),
        };
        self.w.value(&v, self.level);
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<(), E> {
        if !x.is_finite() {
            return Err(E::custom("a number that is not finite"));
        }
        self.w.value(&Value::Float(x), self.level);
        Ok(())
    }

    fn visit_str<E>(self, s: &str) -> Result<(), E> {
        self.w.value(&Value::Text(s), self.level);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let level = self.level;
        let mut w = self.w.at(level);
        w.open('[');
        let mut n = 0;
        loop {
            let item = Item {
                w: &mut w,
                level: level + 1,
                index: Some(n),
            };
            if seq.next_element_seed(item)?.is_none() {
                break;
            }
            n += 1;
        }
        w.close(']', n, level);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let level = self.level;
        let mut w = self.w.at(level);
        let Some(first) = map.next_key::<String>()? else {
            w.open('{');
            w.close('}', 0, level);
            return Ok(());
        };
        let mut next = None;
        if first.starts_with('$') {
            let value = Pending::read(&mut map, level)?;
            next = map.next_key::<String>()?;
            if next.is_none() {
                let mut again = Ok(());
                w.general_map(&[()], level, |w, (), which, l| match which {
                    0 => w.value(&Value::Text(&first), l),
                    _ => again = value.write(w, l),
                });
                return again.map_err(de::Error::custom);
            }
            w.open('{');
            w.item(0, level);
            w.key(&first);
            value.write(&mut w, level + 1).map_err(de::Error::custom)?;
        } else {
            w.open('{');
            w.item(0, level);
            w.key(&first);
            map.next_value_seed(Item {
                w: &mut w,
                level: level + 1,
                index: None,
            })?;
        }
        let mut n = 1;
        loop {
            let key = match next.take() {
                Some(key) => key,
                None => match map.next_key::<String>()? {
                    Some(key) => key,
                    None => break,
                },
            };
            w.item(n, level);
            w.key(&key);
            map.next_value_seed(Item {
                w: &mut w,
                level: level + 1,
                index: None,
            })?;
            n += 1;
        }
        w.close('}', n, level);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::safetensors::json::Json;

    fn streamed(text: &str) -> String {
        let mut s = String::new();
        write_pretty(text, &mut s).unwrap();
        s
    }

    fn whole(text: &str) -> String {
        let mut s = String::new();
        crate::format::json::to_json_pretty(&Json::parse(text).unwrap().to_value(), &mut s);
        s
    }

    #[test]
    fn writes_what_the_tree_renders() {
        let cases = [
            r#"{}"#,
            r#"[]"#,
            r#"{"a": 1}"#,
            r#"{"$a": 1}"#,
            r#"{"$a": {"$b": [1, 2]}, "c": 3}"#,
            r#"{"$a": [{"$x": {}}], "$b": {"$c": {"$d": {"$e": [[[]]]}}}}"#,
            r#"{"x": {"$int": "5"}, "y": {"$float": "NaN"}}"#,
            r#"[[[[[[[1, {"a": [2, {"$b": 3}]}]]]]]]]"#,
            r#"[9007199254740991, 9007199254740992, 18446744073709551615, 18446744073709551616]"#,
            r#"[-1, -9007199254740991, -9007199254740992, -9223372036854775808, -0, 0, -0.0]"#,
            r#"[1e2, 1.5, 1E-7, 5e-324, 1.7976931348623157e308, 0.1]"#,
            r#"["\u0000\"\\\n\t\u007f\u00e9\ud83d\ude00", "plain"]"#,
            r#"{"k\"ey": null, "": true, "\u0024x": false}"#,
            r#"  {"a": [ ] , "b" : { } }  "#,
        ];
        for text in cases {
            assert_eq!(streamed(text), whole(text), "{text}");
        }
        for (key, depth) in [("$a", 124), ("b", 124), ("$", 3), ("$", 5)] {
            let chain = format!(
                "{}[1, {{\"c\": 2}}]{}",
                format!("{{\"{key}\": ").repeat(depth),
                "}".repeat(depth)
            );
            assert_eq!(streamed(&chain), whole(&chain), "{chain}");
            let two = chain.replacen(": [1", ": [1], \"z\": [1", 1);
            assert_eq!(streamed(&two), whole(&two), "{two}");
        }
    }

    /// Random documents: nesting past the pretty levels, `$` keys alone and
    /// with others, every kind of scalar.
    #[test]
    fn random_documents_agree_with_the_tree() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        fn doc(next: &mut dyn FnMut(u64) -> u64, depth: u32, out: &mut String) {
            let scalars = [
                "0",
                "-3",
                "1.25",
                "1e300",
                "\"s\"",
                "null",
                "true",
                "18446744073709551616",
            ];
            match if depth > 8 { 2 } else { next(4) } {
                0 => {
                    out.push('[');
                    for i in 0..next(4) {
                        if i > 0 {
                            out.push(',');
                        }
                        doc(next, depth + 1, out);
                    }
                    out.push(']');
                }
                1 => {
                    out.push('{');
                    for i in 0..next(4) {
                        if i > 0 {
                            out.push(',');
                        }
                        let dollar = if next(2) == 0 { "$" } else { "" };
                        out.push_str(&format!("\"{dollar}k{i}\":"));
                        doc(next, depth + 1, out);
                    }
                    out.push('}');
                }
                _ => out.push_str(scalars[next(scalars.len() as u64) as usize]),
            }
        }
        for _ in 0..2000 {
            let mut text = String::new();
            doc(&mut next, 0, &mut text);
            assert_eq!(streamed(&text), whole(&text), "{text}");
        }
    }

    #[test]
    fn invalid_text_is_an_error() {
        for text in ["{", "[1,]", "{\"a\" 1}", "1 2", "[1e400]"] {
            assert!(write_pretty(text, &mut String::new()).is_err(), "{text}");
        }
    }
}
