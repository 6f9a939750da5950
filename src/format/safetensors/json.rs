//! The safetensors header as a JSON tree that keeps what `serde_json::Value`
//! drops: the order of an object's keys and its repeated keys (the format
//! forbids them, so they must be seen to be refused).
//!
//! Parsing is `serde_json`'s, the parser the `safetensors` crate uses, so the
//! two agree on what JSON is: escapes, numbers (an integer beyond u64 or
//! with a fraction or exponent is a float), trailing characters (only JSON
//! whitespace), and the nesting limit (127 levels). The input is bounded by
//! the header length, which the caller checked against the file first.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::format::cbor::Value;

/// A JSON value with object entries in document order, repeats included.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// Parses `text` as one JSON document.
    pub fn parse(text: &str) -> Result<Json, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The JSON type's name, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }

    /// The first key that occurs twice in one object, anywhere in the tree.
    pub fn repeated_key(&self) -> Option<&str> {
        match self {
            Json::Array(items) => items.iter().find_map(Json::repeated_key),
            Json::Object(entries) => {
                let mut seen = std::collections::HashSet::with_capacity(entries.len());
                for (k, _) in entries {
                    if !seen.insert(k.as_str()) {
                        return Some(k);
                    }
                }
                entries.iter().find_map(|(_, v)| v.repeated_key())
            }
            _ => None,
        }
    }

    /// The value as the CBOR value the lossless JSON renderer takes
    /// (`crate::format::json`): integers as integers, other numbers as
    /// floats, objects as text-keyed maps in document order.
    pub fn to_value(&self) -> Value<'_> {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Value::Uint(u),
                (None, Some(i)) => Value::Nint(!(i as u64)),
                _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Json::String(s) => Value::Text(s),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(entries) => Value::Map(
                entries
                    .iter()
                    .map(|(k, v)| (Value::Text(k), v.to_value()))
                    .collect(),
            ),
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(n)
            .map(Json::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_string()))
    }

    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        // No capacity from the input: JSON gives no length ahead.
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            entries.push((k, v));
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_repeats() {
        let j = Json::parse(r#"{"b": 1, "a": [true, null], "b": "x"}"#).unwrap();
        let Json::Object(e) = &j else { panic!() };
        let keys: Vec<&str> = e.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "b"]);
        assert_eq!(j.repeated_key(), Some("b"));
    }

    #[test]
    fn finds_repeats_in_nested_objects() {
        let j = Json::parse(r#"{"a": [{"x": 1, "x": 2}]}"#).unwrap();
        assert_eq!(j.repeated_key(), Some("x"));
    }

    #[test]
    fn numbers_as_serde_json_reads_them() {
        let j = Json::parse("[1, -1, 1.5, 1e2, 18446744073709551616, -0]").unwrap();
        let Json::Array(items) = j else { panic!() };
        let u: Vec<Option<u64>> = items
            .iter()
            .map(|i| match i {
                Json::Number(n) => n.as_u64(),
                _ => None,
            })
            .collect();
        assert_eq!(u, [Some(1), None, None, None, None, None]);
    }

    #[test]
    fn the_nesting_limit_is_serde_json_s() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(Json::parse(&deep(127)).is_ok());
        assert!(Json::parse(&deep(128)).is_err());
    }
}
