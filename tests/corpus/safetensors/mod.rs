//! The safetensors corpus: `safetensors/valid/*.safetensors` and
//! `safetensors/reject/*.safetensors`, written here by hand (header text
//! and bytes), sharing no code with the reader. Rule names are those of
//! `src/error.rs` (`Rule::Safetensors*`); where a case could be claimed by
//! two rules, the reader's order decides: header length against the limit,
//! against the file, UTF-8, JSON, repeated keys, `__metadata__`, entries in
//! header order (name, fields, dtype), then offsets and sizes in offset
//! order, then coverage of the file.
//!
//! Every file is a few hundred bytes at most.

pub mod sharded;

use super::{Case, Dir, Outcome};

/// `name` with the `.safetensors` extension the table and the file keep.
fn st(name: &str) -> &'static str {
    Box::leak(format!("{name}.safetensors").into_boxed_str())
}

fn case(name: &str, dir: Dir, bytes: Vec<u8>, open: Outcome, verify: Outcome) -> Case {
    Case {
        name: st(name),
        dir,
        bytes,
        open,
        verify,
    }
}

fn valid(name: &str, bytes: Vec<u8>) -> Case {
    case(
        name,
        Dir::SafetensorsValid,
        bytes,
        Outcome::Valid,
        Outcome::Valid,
    )
}

fn reject(name: &str, rule: &'static str, bytes: Vec<u8>) -> Case {
    let r = Outcome::Reject(rule);
    case(name, Dir::SafetensorsReject, bytes, r, r)
}

/// A file: `N`, the header padded with spaces to a multiple of 8 (as the
/// `safetensors` crate writes it), the data.
pub fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.as_bytes().to_vec();
    while !h.len().is_multiple_of(8) {
        h.push(b' ');
    }
    raw(&h, data)
}

/// A file of exactly these header bytes.
fn raw(header: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header);
    out.extend_from_slice(data);
    out
}

/// A JSON string literal (the names here need only these escapes).
fn q(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One entry's text.
fn entry(dtype: &str, shape: &[u64], start: u64, end: u64) -> String {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!(
        r#"{{"dtype":{},"shape":[{}],"data_offsets":[{start},{end}]}}"#,
        q(dtype),
        dims.join(",")
    )
}

/// A header of `(name, entry)` pairs and optional metadata text.
fn header(metadata: Option<&str>, entries: &[(String, String)]) -> String {
    let mut parts: Vec<String> = metadata
        .map(|m| format!(r#""__metadata__":{m}"#))
        .into_iter()
        .collect();
    parts.extend(entries.iter().map(|(n, e)| format!("{}:{e}", q(n))));
    format!("{{{}}}", parts.join(","))
}

/// Bytes `0, 1, 2, ...` (mod 251), `n` of them.
fn bytes(n: u64) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// Tensors laid out back to back in the given order: (name, dtype, shape).
fn tensors(
    list: &[(&str, &str, &[u64])],
    bits: impl Fn(&str) -> u64,
) -> (Vec<(String, String)>, u64) {
    let mut at = 0;
    let mut out = Vec::new();
    for (name, dtype, shape) in list {
        let n = shape.iter().product::<u64>() * bits(dtype) / 8;
        out.push((name.to_string(), entry(dtype, shape, at, at + n)));
        at += n;
    }
    (out, at)
}

/// Bits per element of each dtype, as the format's README and the crate
/// list them.
pub fn bits(dtype: &str) -> u64 {
    match dtype {
        "F4" => 4,
        "F6_E2M3" | "F6_E3M2" => 6,
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" | "F8_E8M0" | "F8_E4M3FNUZ"
        | "F8_E5M2FNUZ" => 8,
        "I16" | "U16" | "F16" | "BF16" => 16,
        "I32" | "U32" | "F32" => 32,
        _ => 64,
    }
}

/// Every dtype a reader maps to a type it reads.
const READ_DTYPES: [&str; 20] = [
    "BOOL",
    "F4",
    "U8",
    "I8",
    "F8_E5M2",
    "F8_E4M3",
    "F8_E8M0",
    "F8_E4M3FNUZ",
    "F8_E5M2FNUZ",
    "I16",
    "U16",
    "F16",
    "BF16",
    "I32",
    "U32",
    "F32",
    "C64",
    "F64",
    "I64",
    "U64",
];

/// A file of these tensors, laid out in order, with data 0, 1, 2, ...
/// except that BOOL bytes are 0 and 1.
fn model(metadata: Option<&str>, list: &[(&str, &str, &[u64])]) -> Vec<u8> {
    let (entries, n) = tensors(list, bits);
    let mut data = bytes(n);
    let mut at = 0usize;
    for (_, dtype, shape) in list {
        let len = (shape.iter().product::<u64>() * bits(dtype) / 8) as usize;
        if *dtype == "BOOL" {
            data[at..at + len].iter_mut().for_each(|b| *b &= 1);
        }
        at += len;
    }
    file(&header(metadata, &entries), &data)
}

/// The usual one-tensor file: `w`, F32 `[2]`.
fn usual_header() -> String {
    header(None, &[("w".into(), entry("F32", &[2], 0, 8))])
}

/// Every safetensors case.
pub fn all() -> Vec<Case> {
    let mut cases = valid_cases();
    cases.extend(reject_cases());
    cases.extend(sharded::all());
    cases
}

fn valid_cases() -> Vec<Case> {
    let names: Vec<String> = READ_DTYPES.iter().map(|d| d.to_lowercase()).collect();
    let every: Vec<(&str, &str, &[u64])> = READ_DTYPES
        .iter()
        .zip(&names)
        .map(|(d, n)| (n.as_str(), *d, &[2u64, 2][..]))
        .collect();
    let long = "x".repeat(300);
    let odd_names: Vec<(&str, &str, &[u64])> = vec![
        ("a/b", "U8", &[1]),
        ("..", "U8", &[1]),
        (".hidden", "U8", &[1]),
        ("manifest.json", "U8", &[1]),
        ("tab\tand\u{1}", "U8", &[1]),
        ("ünïcødé", "U8", &[1]),
        (&long, "U8", &[1]),
    ];
    let (rev, n) = tensors(
        &[
            ("first", "U8", &[3]),
            ("second", "I16", &[2]),
            ("third", "F32", &[1]),
        ],
        bits,
    );
    let reversed: Vec<_> = rev.into_iter().rev().collect();
    let f6 = tensors(
        &[("e2m3", "F6_E2M3", &[4]), ("e3m2", "F6_E3M2", &[8])],
        bits,
    );
    let mut bool_bad = model(None, &[("flags", "BOOL", &[4])]);
    let last = bool_bad.len() - 1;
    bool_bad[last] = 2;
    vec![
        valid("every-dtype", model(None, &every)),
        valid(
            "scalars-and-empty",
            model(
                None,
                &[
                    ("scalar", "F64", &[]),
                    ("empty", "F32", &[0]),
                    ("empty-3d", "I32", &[2, 0, 3]),
                    ("one", "U8", &[1]),
                ],
            ),
        ),
        valid(
            "metadata",
            model(
                Some(r#"{"format":"pt","note":"ünïcødé \"quoted\"","$x":"dollar"}"#),
                &[("w", "BF16", &[3])],
            ),
        ),
        valid("no-tensors", file("{}", &[])),
        valid(
            "metadata-only",
            file(r#"{"__metadata__":{"format":"pt"}}"#, &[]),
        ),
        valid(
            "header-order-not-offset-order",
            file(&header(None, &reversed), &bytes(n)),
        ),
        valid("names", model(None, &odd_names)),
        // The crate reads it; a mount gives it the hashed form of the
        // empty name (refused before 2026-12-05, when a mount had no
        // component for it).
        valid(
            "name-empty",
            file(
                r#"{"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
                &bytes(1),
            ),
        ),
        valid(
            "decision-unknown-field",
            file(
                r#"{"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"quantized":{"by":"me","bits":[8,4.5]}}}"#,
                &bytes(2),
            ),
        ),
        valid(
            "decision-null-metadata",
            file(
                r#"{"__metadata__":null,"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
                &bytes(1),
            ),
        ),
        valid(
            "zero-length-at-one-offset",
            model(
                None,
                &[
                    ("a", "U8", &[0]),
                    ("b", "F16", &[0, 4]),
                    ("c", "U8", &[2]),
                    ("d", "U8", &[0]),
                ],
            ),
        ),
        valid(
            "whitespace-padding",
            raw(
                b"{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}\t\r\n ",
                &[9],
            ),
        ),
        case(
            "f6-types",
            Dir::SafetensorsValid,
            file(&header(None, &f6.0), &bytes(f6.1)),
            Outcome::Valid,
            Outcome::Refused,
        ),
        case(
            "bool-byte-2",
            Dir::SafetensorsValid,
            bool_bad,
            Outcome::Valid,
            Outcome::Reject("LayoutData"),
        ),
    ]
}

fn reject_cases() -> Vec<Case> {
    let usual = |data: &[u8]| file(&usual_header(), data);
    let with_len = |n: u64, rest: &[u8]| {
        let mut f = n.to_le_bytes().to_vec();
        f.extend_from_slice(rest);
        f
    };
    let one = |e: String, data: u64| file(&header(None, &[("t".into(), e)]), &bytes(data));
    let t = entry("U8", &[1], 0, 1);
    let mut not_utf8 = usual(&bytes(8));
    not_utf8[10] = 0xff;
    let deep = format!(
        r#"{{"t":{{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":{}{}}}}}"#,
        "[".repeat(129),
        "]".repeat(129)
    );
    vec![
        reject(
            "header-too-large",
            "SafetensorsHeaderTooLarge",
            with_len(100_000_001, b"{}      "),
        ),
        reject(
            "header-past-end",
            "SafetensorsHeaderBounds",
            with_len(4096, b"{\"w\":{}}"),
        ),
        reject("header-not-utf8", "SafetensorsUtf8", not_utf8),
        reject(
            "json-syntax",
            "SafetensorsJson",
            file(r#"{"t":{"dtype":"U8",}}"#, &[]),
        ),
        reject("json-trailing", "SafetensorsJson", file(r#"{} {}"#, &[])),
        reject("json-depth", "SafetensorsJson", file(&deep, &bytes(1))),
        reject(
            "json-leading-space",
            "SafetensorsJson",
            raw(format!(" {{\"t\":{t}}}").as_bytes(), &bytes(1)),
        ),
        reject(
            "duplicate-tensor",
            "SafetensorsDuplicateKey",
            file(&format!(r#"{{"t":{t},"t":{t}}}"#), &bytes(1)),
        ),
        reject(
            "duplicate-metadata-key",
            "SafetensorsDuplicateKey",
            file(r#"{"__metadata__":{"k":"1","k":"2"}}"#, &[]),
        ),
        reject(
            "duplicate-field",
            "SafetensorsDuplicateKey",
            file(
                r#"{"t":{"dtype":"U8","shape":[1],"shape":[1],"data_offsets":[0,1]}}"#,
                &bytes(1),
            ),
        ),
        reject(
            "entry-not-object",
            "SafetensorsEntry",
            file(r#"{"t":"U8"}"#, &[]),
        ),
        reject(
            "entry-array",
            "SafetensorsEntry",
            file(r#"{"t":["U8",[1],[0,1]]}"#, &bytes(1)),
        ),
        reject(
            "entry-missing-shape",
            "SafetensorsEntry",
            file(r#"{"t":{"dtype":"U8","data_offsets":[0,1]}}"#, &bytes(1)),
        ),
        reject(
            "entry-negative-dim",
            "SafetensorsEntry",
            file(
                r#"{"t":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}"#,
                &bytes(1),
            ),
        ),
        reject(
            "entry-float-offset",
            "SafetensorsEntry",
            file(
                r#"{"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1.0]}}"#,
                &bytes(1),
            ),
        ),
        reject(
            "entry-three-offsets",
            "SafetensorsEntry",
            file(
                r#"{"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1,1]}}"#,
                &bytes(1),
            ),
        ),
        reject(
            "entry-dtype-object",
            "SafetensorsEntry",
            file(
                r#"{"t":{"dtype":{"U8":null},"shape":[1],"data_offsets":[0,1]}}"#,
                &bytes(1),
            ),
        ),
        reject(
            "dtype-unknown",
            "SafetensorsDtype",
            one(entry("F128", &[1], 0, 16), 16),
        ),
        reject(
            "dtype-lowercase",
            "SafetensorsDtype",
            one(entry("f32", &[1], 0, 4), 4),
        ),
        reject(
            "metadata-number",
            "SafetensorsMetadata",
            file(r#"{"__metadata__":{"epoch":1}}"#, &[]),
        ),
        reject(
            "metadata-array",
            "SafetensorsMetadata",
            file(r#"{"__metadata__":["a"]}"#, &[]),
        ),
        reject(
            "offsets-gap",
            "SafetensorsOffsets",
            file(
                &header(
                    None,
                    &[
                        ("a".into(), entry("U8", &[1], 0, 1)),
                        ("b".into(), entry("U8", &[1], 2, 3)),
                    ],
                ),
                &bytes(3),
            ),
        ),
        reject(
            "offsets-overlap",
            "SafetensorsOffsets",
            file(
                &header(
                    None,
                    &[
                        ("a".into(), entry("U8", &[2], 0, 2)),
                        ("b".into(), entry("U8", &[2], 1, 3)),
                    ],
                ),
                &bytes(3),
            ),
        ),
        reject(
            "offsets-aliased",
            "SafetensorsOffsets",
            file(
                &header(
                    None,
                    &[
                        ("a".into(), entry("U8", &[2], 0, 2)),
                        ("b".into(), entry("U8", &[2], 0, 2)),
                    ],
                ),
                &bytes(2),
            ),
        ),
        reject(
            "offsets-not-from-zero",
            "SafetensorsOffsets",
            one(entry("U8", &[1], 1, 2), 2),
        ),
        reject(
            "offsets-reversed",
            "SafetensorsOffsets",
            one(entry("U8", &[0], 2, 0), 2),
        ),
        reject(
            "size-mismatch",
            "SafetensorsSize",
            one(entry("F32", &[2], 0, 4), 4),
        ),
        reject(
            "size-f4-odd",
            "SafetensorsSize",
            one(entry("F4", &[3], 0, 2), 2),
        ),
        reject(
            "size-overflow",
            "SafetensorsSize",
            one(entry("U64", &[4_294_967_296, 4_294_967_296], 0, 0), 0),
        ),
        reject(
            "coverage-trailing-bytes",
            "SafetensorsCoverage",
            usual(&bytes(9)),
        ),
        reject("coverage-short", "SafetensorsCoverage", usual(&bytes(7))),
    ]
}
