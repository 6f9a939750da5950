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
