use super::*;

fn compact(value: &Value<'_>) -> String {
    let mut out = String::new();
    to_json(value, &mut out);
    out
}

fn pretty(value: &Value<'_>) -> String {
    let mut out = String::new();
    to_json_pretty(value, &mut out);
    out
}

fn text_map<'a>(entries: &[(&'a str, Value<'a>)]) -> Value<'a> {
    Value::Map(
        entries
            .iter()
            .map(|(k, v)| (Value::Text(k), v.clone()))
            .collect(),
    )
}

#[test]
fn integers_within_double_precision_are_plain_and_beyond_are_escaped() {
    let cases = [
        (Value::Uint(0), "0"),
        (Value::Uint(MAX_SAFE_INTEGER), "9007199254740991"),
        (Value::Uint(1 << 53), r#"{"$int":"9007199254740992"}"#),
        (Value::Uint(u64::MAX), r#"{"$int":"18446744073709551615"}"#),
        (Value::Nint(0), "-1"),
        (Value::Nint(MAX_SAFE_INTEGER - 1), "-9007199254740991"),
        (
            Value::Nint(MAX_SAFE_INTEGER),
            r#"{"$int":"-9007199254740992"}"#,
        ),
        (Value::Nint(u64::MAX), r#"{"$int":"-18446744073709551616"}"#),
    ];
    for (value, expected) in cases {
        assert_eq!(compact(&value), expected, "{value:?}");
    }
}

#[test]
fn floats_always_look_like_floats_and_read_back_exactly() {
    let cases = [
        (1.0, "1.0"),
        (0.1, "0.1"),
        (-0.0, "-0.0"),
        (0.0, "0.0"),
        (1e300, "1e300"),
        (1e-7, "1e-7"),
        (1e16, "1e16"),
        (-2.5, "-2.5"),
        (65504.0, "65504.0"),
        (f64::MAX, "1.7976931348623157e308"),
        (5e-324, "5e-324"),
    ];
    for (x, expected) in cases {
        assert_eq!(compact(&Value::Float(x)), expected);
    }
    assert_eq!(compact(&Value::Float(f64::NAN)), r#"{"$float":"NaN"}"#);
    assert_eq!(
        compact(&Value::Float(f64::INFINITY)),
        r#"{"$float":"Infinity"}"#
    );
    assert_eq!(
        compact(&Value::Float(f64::NEG_INFINITY)),
        r#"{"$float":"-Infinity"}"#
    );
    // Every f32 bit pattern with a stride, and some f64 ones.
    let f32s = (0..=u32::MAX)
        .step_by(9973)
        .map(|b| f64::from(f32::from_bits(b)));
    let f64s = (0..=u64::MAX)
        .step_by(0x1_0000_0000_0001)
        .map(f64::from_bits);
    for x in f32s.chain(f64s).filter(|x| x.is_finite()) {
        let json = compact(&Value::Float(x));
        assert!(json.contains(['.', 'e']), "{json}");
        assert!(is_json_number(&json), "{json}");
        let back: f64 = json.parse().unwrap();
        assert_eq!(back.to_bits(), x.to_bits(), "{json}");
    }
}

/// The JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
fn is_json_number(s: &str) -> bool {
    let s = s.strip_prefix('-').unwrap_or(s);
    let (mantissa, exponent) = match s.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['+', '-']).unwrap_or(e))),
        None => (s, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    digits(int)
        && (int == "0" || !int.starts_with('0'))
        && frac.is_none_or(digits)
        && exponent.is_none_or(digits)
}

#[test]
fn bytes_are_lowercase_hex() {
    assert_eq!(
        compact(&Value::Bytes(&[0x00, 0xff, 0x1a])),
        r#"{"$bytes":"00ff1a"}"#
    );
    assert_eq!(compact(&Value::Bytes(&[])), r#"{"$bytes":""}"#);
}

#[test]
fn text_is_escaped_as_json_requires_and_no_more() {
    let text = "a\"b\\c/\n\t\r\u{8}\u{c}\u{0}\u{1f}\u{7f} é😀";
    assert_eq!(
        compact(&Value::Text(text)),
        r#""a\"b\\c/\n\t\r\b\f\u0000\u001f\u007f é😀""#
    );
    assert_eq!(compact(&Value::Text("")), r#""""#);
    // Keys are escaped the same way.
    assert_eq!(compact(&text_map(&[("\n", Value::Null)])), r#"{"\n":null}"#);
}

#[test]
fn scalars_and_empty_containers() {
    assert_eq!(compact(&Value::Bool(true)), "true");
    assert_eq!(compact(&Value::Bool(false)), "false");
    assert_eq!(compact(&Value::Null), "null");
    assert_eq!(compact(&Value::Array(vec![])), "[]");
    assert_eq!(compact(&Value::Map(vec![])), "{}");
    assert_eq!(pretty(&Value::Array(vec![])), "[]");
    assert_eq!(pretty(&Value::Map(vec![])), "{}");
}

#[test]
fn text_keyed_maps_are_objects_in_map_order() {
    let value = text_map(&[
        ("b", Value::Uint(1)),
        ("aa", Value::Uint(2)),
        ("a", Value::Null),
    ]);
    assert_eq!(compact(&value), r#"{"b":1,"aa":2,"a":null}"#);
}

#[test]
fn maps_with_other_keys_take_the_general_form() {
    let value = Value::Map(vec![
        (Value::Uint(1), Value::Text("x")),
        (Value::Text("a"), Value::Bool(true)),
    ]);
    assert_eq!(compact(&value), r#"{"$map":[[1,"x"],["a",true]]}"#);
    let bytes_key = Value::Map(vec![(Value::Bytes(&[1]), Value::Null)]);
    assert_eq!(compact(&bytes_key), r#"{"$map":[[{"$bytes":"01"},null]]}"#);
}

#[test]
fn a_single_dollar_key_cannot_pass_for_an_escape_object() {
    for key in ["$int", "$float", "$bytes", "$map", "$", "$other"] {
        let value = text_map(&[(key, Value::Text("5"))]);
        assert_eq!(compact(&value), format!(r#"{{"$map":[["{key}","5"]]}}"#));
    }
    // With a second key, or a `$` that does not lead, it is an object.
    let two = text_map(&[("$int", Value::Uint(5)), ("x", Value::Uint(6))]);
    assert_eq!(compact(&two), r#"{"$int":5,"x":6}"#);
    let inner = text_map(&[("a$", Value::Uint(5))]);
    assert_eq!(compact(&inner), r#"{"a$":5}"#);
    // The escape of a real integer differs from the map that mimics it.
    let mimic = text_map(&[("$int", Value::Text("18446744073709551615"))]);
    assert_ne!(compact(&mimic), compact(&Value::Uint(u64::MAX)));
}

fn nested() -> Value<'static> {
    text_map(&[
        ("shape", Value::Array(vec![Value::Uint(2), Value::Uint(3)])),
        ("dtype", Value::Text("f32")),
        (
            "attributes",
            text_map(&[
                ("scale", Value::Float(0.5)),
                ("raw", Value::Bytes(&[0xab])),
                ("e", Value::Array(vec![])),
            ]),
        ),
        ("odd", Value::Map(vec![(Value::Nint(4), Value::Null)])),
    ])
}

#[test]
fn a_nested_value_renders_exactly() {
    assert_eq!(
        compact(&nested()),
        r#"{"shape":[2,3],"dtype":"f32","attributes":{"scale":0.5,"raw":{"$bytes":"ab"},"e":[]},"odd":{"$map":[[-5,null]]}}"#
    );
}

#[test]
fn pretty_output_indents_by_two_and_ends_without_a_newline() {
    let expected = r#"{
  "shape": [
    2,
    3
  ],
  "dtype": "f32",
  "attributes": {
    "scale": 0.5,
    "raw": {"$bytes": "ab"},
    "e": []
  },
  "odd": {
    "$map": [
      [
        -5,
        null
      ]
    ]
  }
}"#;
    assert_eq!(pretty(&nested()), expected);
    assert_eq!(pretty(&Value::Uint(1)), "1");
}

/// Arrays nested `depth` deep, the innermost holding `width` zeros.
fn deep(depth: usize, width: usize) -> Value<'static> {
    let mut v = Value::Array(vec![Value::Uint(0); width]);
    for i in 0..depth {
        v = if i % 2 == 0 {
            Value::Array(vec![v, Value::Null])
        } else {
            text_map(&[("k", v), ("j", Value::Bool(true))])
        };
    }
    v
}

#[test]
fn pretty_output_is_within_a_constant_factor_of_compact_at_any_depth() {
    for (depth, width) in [(0, 1000), (3, 1000), (10, 1000), (100, 1000)] {
        let v = deep(depth, width);
        let (c, p) = (compact(&v), pretty(&v));
        assert!(
            p.len() as u64 <= MAX_GROWTH * c.len() as u64,
            "depth {depth}: {} bytes pretty, {} compact",
            p.len(),
            c.len()
        );
        let a: serde_json::Value = serde_json::from_str(&p).unwrap();
        let b: serde_json::Value = serde_json::from_str(&c).unwrap();
        assert_eq!(a, b);
        assert!(p
            .lines()
            .all(|l| l.len() - l.trim_start().len() <= 2 * MAX_PRETTY_LEVEL));
    }
}

#[test]
fn output_is_appended_and_identical_for_identical_input() {
    let mut out = String::from("x");
    to_json(&nested(), &mut out);
    assert_eq!(out, format!("x{}", compact(&nested())));
    assert_eq!(compact(&nested()), compact(&nested().clone()));
}

/// Writes `v` as `object_with` and `items` would, walking every map and
/// array itself: what a writer of a document too big to hold does.
fn walked(w: &mut Writer<'_, String>, v: &Value<'_>, level: usize) {
    match v {
        Value::Array(items) => w.items(items, level, |w, x, l| walked(w, x, l)),
        Value::Map(e) if is_object(e.len(), e.iter().map(|(k, _)| k.as_text())) => {
            w.object_with(v, level, |w, key, l| {
                let (_, x) = e.iter().find(|(k, _)| k.as_text() == Some(key)).unwrap();
                walked(w, x, l);
                true
            })
        }
        v => w.value(v, level),
    }
}

#[test]
fn a_document_walked_piece_by_piece_is_the_one_rendered_whole() {
    let docs = [
        nested(),
        deep(7, 2),
        text_map(&[
            ("a", deep(6, 1)),
            ("b", Value::Array(vec![nested(), deep(3, 3)])),
        ]),
        Value::Array(vec![]),
        text_map(&[]),
    ];
    for doc in &docs {
        for level in [0, 3, 4, 5] {
            let mut want = String::new();
            to_json_pretty_at(doc, level, &mut want);
            let mut got = String::new();
            walked(&mut Writer::new(&mut got, true), doc, level);
            assert_eq!(got, want, "level {level}");
        }
    }
}

#[test]
fn pieces_and_count_see_the_text_a_string_gets() {
    let doc = Value::Array(vec![nested(); 2000]);
    let mut want = String::new();
    to_json_pretty(&doc, &mut want);
    let mut pieces = Pieces::new(Vec::new());
    to_json_pretty(&doc, &mut pieces);
    assert_eq!(pieces.finish().unwrap(), want.as_bytes());
    let mut count = Count::default();
    to_json_pretty(&doc, &mut count);
    assert_eq!(count.0, want.len() as u64);
    assert!(
        want.len() > Pieces::<Vec<u8>>::PIECE,
        "the text spans pieces"
    );
}
