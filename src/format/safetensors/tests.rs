//! One test per attack, each on a file built here from a header text and
//! a byte buffer; `prop.rs` holds the reader against the `safetensors`
//! crate on mutated files.

mod prop;

use super::*;

/// A file of `header` (padded with spaces to a multiple of 8, as the crate
/// writes) and `data`.
pub(super) fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.as_bytes().to_vec();
    while !h.len().is_multiple_of(8) {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&h);
    out.extend_from_slice(data);
    out
}

fn rule_of(bytes: &[u8]) -> Option<Rule> {
    read_header(bytes).err().and_then(|e| e.rule())
}

fn assert_rule(bytes: &[u8], rule: Rule) {
    match read_header(bytes) {
        Ok(h) => panic!("accepted {h:?}, expected {rule}"),
        Err(e) => assert_eq!(e.rule(), Some(rule), "{e}"),
    }
}

const ONE: &str = r#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;

#[test]
fn reads_a_tensor_and_its_range() {
    let f = file(ONE, &[1; 8]);
    let h = read_header(&f).unwrap();
    assert_eq!(h.len, 56);
    assert_eq!(h.tensors.len(), 1);
    let t = &h.tensors[0];
    assert_eq!(
        (t.name.as_str(), t.dtype, &t.shape[..]),
        ("w", Dtype::F32, &[2][..])
    );
    assert_eq!(h.file_range(t), (64, 8));
    assert_eq!(h.metadata, None);
}

#[test]
fn reads_metadata_in_order() {
    let hdr =
        r#"{"__metadata__":{"z":"1","a":"2"},"w":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}"#;
    let h = read_header(&file(hdr, &[7])).unwrap();
    let m = h.metadata.unwrap();
    assert_eq!(m, [("z".into(), "1".into()), ("a".into(), "2".into())]);
}

#[test]
fn an_empty_header_object_is_a_file_of_no_tensors() {
    let h = read_header(&file("{}", &[])).unwrap();
    assert!(h.tensors.is_empty());
}

#[test]
fn header_length_over_the_limit_comes_before_the_file_length() {
    let mut f = (MAX_HEADER_LEN + 1).to_le_bytes().to_vec();
    f.extend_from_slice(b"{}");
    assert_rule(&f, Rule::SafetensorsHeaderTooLarge);
    let mut f = MAX_HEADER_LEN.to_le_bytes().to_vec();
    f.extend_from_slice(b"{}");
    assert_rule(&f, Rule::SafetensorsHeaderBounds);
}

#[test]
fn header_past_the_file() {
    let mut f = file(ONE, &[0; 8]);
    f[0] += 100;
    assert_rule(&f, Rule::SafetensorsHeaderBounds);
    assert_rule(&[1, 0, 0], Rule::SafetensorsHeaderBounds);
}

#[test]
fn header_length_of_u64_max_does_not_overflow() {
    let f = u64::MAX.to_le_bytes();
    assert_rule(&f, Rule::SafetensorsHeaderTooLarge);
}

#[test]
fn not_utf8() {
    let mut f = file(
        r#"{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
        &[0],
    );
    f[10] = 0xff;
    assert_rule(&f, Rule::SafetensorsUtf8);
}

#[test]
fn not_json() {
    assert_rule(&file("{\"w\":", &[]), Rule::SafetensorsJson);
    assert_rule(&file("{} x", &[]), Rule::SafetensorsJson);
    assert_rule(&file("{\"a\":\"\\ud800\"}", &[]), Rule::SafetensorsJson);
}

#[test]
fn the_header_begins_with_a_brace() {
    assert_rule(&file(" {}", &[]), Rule::SafetensorsJson);
    assert_rule(&file("[]", &[]), Rule::SafetensorsJson);
}

#[test]
fn nesting_past_the_limit() {
    let deep = format!(
        r#"{{"__x":{{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":{}{}}}}}"#,
        "[".repeat(130),
        "]".repeat(130)
    );
    assert_rule(&file(&deep, &[]), Rule::SafetensorsJson);
}

#[test]
fn repeated_keys() {
    let t = r#"{"dtype":"U8","shape":[0],"data_offsets":[0,0]}"#;
    assert_rule(
        &file(&format!(r#"{{"a":{t},"a":{t}}}"#), &[]),
        Rule::SafetensorsDuplicateKey,
    );
    assert_rule(
        &file(r#"{"__metadata__":{"k":"1","k":"2"}}"#, &[]),
        Rule::SafetensorsDuplicateKey,
    );
    assert_rule(
        &file(
            r#"{"a":{"dtype":"U8","dtype":"U8","shape":[0],"data_offsets":[0,0]}}"#,
            &[],
        ),
        Rule::SafetensorsDuplicateKey,
    );
}

#[test]
fn entries_that_are_not_tensor_infos() {
    for e in [
        r#""x""#,
        r#"["U8",[0],[0,0]]"#,
        r#"{"shape":[0],"data_offsets":[0,0]}"#,
        r#"{"dtype":"U8","data_offsets":[0,0]}"#,
        r#"{"dtype":"U8","shape":[0]}"#,
        r#"{"dtype":{"U8":null},"shape":[0],"data_offsets":[0,0]}"#,
        r#"{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}"#,
        r#"{"dtype":"U8","shape":[1.0],"data_offsets":[0,0]}"#,
        r#"{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,0]}"#,
        r#"{"dtype":"U8","shape":0,"data_offsets":[0,0]}"#,
        r#"{"dtype":"U8","shape":[0],"data_offsets":[0]}"#,
        r#"{"dtype":"U8","shape":[0],"data_offsets":[0,0,0]}"#,
    ] {
        let f = file(&format!(r#"{{"t":{e}}}"#), &[]);
        assert_eq!(rule_of(&f), Some(Rule::SafetensorsEntry), "{e}");
    }
}

#[test]
fn unknown_fields_of_an_entry_are_ignored() {
    let hdr = r#"{"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":{"a":[1.5,null]}}}"#;
    assert!(read_header(&file(hdr, &[3])).is_ok());
}

#[test]
fn unknown_dtype_names() {
    for d in ["F128", "f32", "C128", "", "BOOL "] {
        let f = file(
            &format!(r#"{{"t":{{"dtype":"{d}","shape":[0],"data_offsets":[0,0]}}}}"#),
            &[],
        );
        assert_eq!(rule_of(&f), Some(Rule::SafetensorsDtype), "{d:?}");
    }
}

#[test]
fn metadata_must_map_strings_to_strings() {
    for m in [
        r#"{"a":1}"#,
        r#"[]"#,
        r#""x""#,
        r#"{"a":null}"#,
        r#"{"a":{"b":"c"}}"#,
    ] {
        let f = file(&format!(r#"{{"__metadata__":{m}}}"#), &[]);
        assert_eq!(rule_of(&f), Some(Rule::SafetensorsMetadata), "{m}");
    }
    assert!(read_header(&file(r#"{"__metadata__":null}"#, &[])).is_ok());
}

/// An empty name is a name (the crate reads it; a mount gives it the
/// hashed form of the empty name as its directory).
#[test]
fn an_empty_name_is_read() {
    let f = file(
        r#"{"":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}"#,
        &[],
    );
    let h = read_header(&f).unwrap();
    assert_eq!(h.tensors.len(), 1);
    assert_eq!(h.tensors[0].name, "");
}

fn two(a: (u64, u64), b: (u64, u64), data: usize) -> Vec<u8> {
    file(
        &format!(
            r#"{{"a":{{"dtype":"U8","shape":[{}],"data_offsets":[{},{}]}},"b":{{"dtype":"U8","shape":[{}],"data_offsets":[{},{}]}}}}"#,
            a.1.saturating_sub(a.0),
            a.0,
            a.1,
            b.1.saturating_sub(b.0),
            b.0,
            b.1
        ),
        &vec![0; data],
    )
}

#[test]
fn offsets_gaps_overlaps_and_order() {
    assert!(read_header(&two((0, 2), (2, 5), 5)).is_ok());
    assert!(
        read_header(&two((2, 5), (0, 2), 5)).is_ok(),
        "header order is free"
    );
    assert_rule(&two((0, 2), (3, 5), 5), Rule::SafetensorsOffsets);
    assert_rule(&two((0, 3), (2, 5), 5), Rule::SafetensorsOffsets);
    assert_rule(&two((1, 3), (3, 5), 5), Rule::SafetensorsOffsets);
    assert_rule(&two((0, 2), (0, 2), 2), Rule::SafetensorsOffsets);
    let f = file(
        r#"{"a":{"dtype":"U8","shape":[0],"data_offsets":[3,1]}}"#,
        &[],
    );
    assert_rule(&f, Rule::SafetensorsOffsets);
}

#[test]
fn zero_length_tensors_may_share_an_offset() {
    assert!(read_header(&two((0, 0), (0, 0), 0)).is_ok());
    assert!(read_header(&two((0, 0), (0, 3), 3)).is_ok());
}

fn one(dtype: &str, shape: &str, len: u64) -> Vec<u8> {
    file(
        &format!(r#"{{"t":{{"dtype":"{dtype}","shape":{shape},"data_offsets":[0,{len}]}}}}"#),
        &vec![0; len as usize],
    )
}

#[test]
fn sizes_follow_shape_and_dtype_bits() {
    assert!(read_header(&one("F32", "[2,3]", 24)).is_ok());
    assert!(read_header(&one("F32", "[]", 4)).is_ok());
    assert!(read_header(&one("F32", "[4,0]", 0)).is_ok());
    assert!(read_header(&one("F4", "[2]", 1)).is_ok());
    assert!(read_header(&one("F6_E2M3", "[4]", 3)).is_ok());
    assert!(read_header(&one("C64", "[1]", 8)).is_ok());
    assert_rule(&one("F32", "[2,3]", 20), Rule::SafetensorsSize);
    assert_rule(&one("F4", "[3]", 2), Rule::SafetensorsSize);
    assert_rule(&one("F6_E3M2", "[2]", 2), Rule::SafetensorsSize);
    assert_rule(
        &one("U8", "[4294967296,4294967296]", 0),
        Rule::SafetensorsSize,
    );
    assert_rule(
        &one("U64", "[2305843009213693952]", 0),
        Rule::SafetensorsSize,
    );
}

#[test]
fn every_byte_is_a_tensor_s() {
    let mut f = one("U8", "[2]", 2);
    f.push(0);
    assert_rule(&f, Rule::SafetensorsCoverage);
    let mut f = one("U8", "[2]", 2);
    f.pop();
    assert_rule(&f, Rule::SafetensorsCoverage);
    let mut f = file("{}", &[]);
    f.push(0);
    assert_rule(&f, Rule::SafetensorsCoverage);
}

#[test]
fn huge_offsets_do_not_overflow() {
    let m = u64::MAX;
    let f = file(
        &format!(r#"{{"a":{{"dtype":"U8","shape":[{m}],"data_offsets":[0,{m}]}}}}"#),
        &[],
    );
    assert_rule(&f, Rule::SafetensorsSize);
    // Eight tensors of 2^61 - 1 bytes: the buffer's end is 2^64 - 8, and
    // adding the header's 8 + N overflows.
    let step = (1u64 << 61) - 1;
    let entries: Vec<String> = (0..8)
        .map(|i| {
            format!(
                r#""t{i}":{{"dtype":"U8","shape":[{step}],"data_offsets":[{},{}]}}"#,
                i * step,
                (i + 1) * step
            )
        })
        .collect();
    let f = file(&format!("{{{}}}", entries.join(",")), &[]);
    assert_rule(&f, Rule::SafetensorsCoverage);
}

#[test]
fn objects_are_dense_raw_parts_at_the_tensor_bytes() {
    let f = two((0, 2), (2, 5), 5);
    let h = read_header(&f).unwrap();
    let o = objects::objects(&h);
    assert_eq!(o.len(), 2);
    assert_eq!(&*o[1].name, "b");
    assert_eq!(&*o[1].layout, "dense");
    let p = &o[1].parts[0];
    assert_eq!(&*p.name, "data");
    assert_eq!((p.blob.offset, p.blob.length), (h.data_start() + 2, 3));
    assert_eq!(p.ty.dtype, crate::format::DType::U8);
}

#[test]
fn dtypes_map_to_types_of_the_same_size() {
    for d in Dtype::ALL {
        let (dtype, logical) = objects::ztensor_type(d);
        let ty = crate::format::types::ElementType {
            dtype,
            logical: logical.map(Into::into),
        };
        // Four elements: whole bytes for every dtype.
        let size = ty.size(4);
        match d {
            Dtype::F6_E2M3 | Dtype::F6_E3M2 => assert_eq!(size, None, "{d:?}"),
            _ => assert_eq!(size, Some(4 * d.bits() / 8), "{d:?}"),
        }
    }
}

#[test]
fn manifest_is_the_header_as_json() {
    let hdr =
        r#"{"__metadata__":{"k":"v"},"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1.5}}"#;
    let m = manifest_text(hdr).unwrap();
    let back: serde_json::Value = serde_json::from_str(&m).unwrap();
    let orig: serde_json::Value = serde_json::from_str(hdr).unwrap();
    assert_eq!(back, orig);
    assert!(m.find("__metadata__").unwrap() < m.find("\"w\"").unwrap());
}

/// A header whose entry keeps an unknown field nested `depth` deep, the
/// innermost array holding `width` zeros.
pub(super) fn nested(depth: usize, width: usize) -> String {
    let zeros = vec!["0"; width].join(",");
    format!("{}{zeros}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn manifest_of_a_deeply_nested_header_is_within_a_constant_factor() {
    let hdr = format!(
        r#"{{"w":{{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":{}}}}}"#,
        nested(120, 20_000)
    );
    let m = manifest_text(&hdr).unwrap();
    let k = crate::format::json::MAX_GROWTH;
    assert!(
        m.len() as u64 <= k * hdr.len() as u64,
        "{} > {k} x {}",
        m.len(),
        hdr.len()
    );
    let back: serde_json::Value = serde_json::from_str(&m).unwrap();
    let orig: serde_json::Value = serde_json::from_str(&hdr).unwrap();
    assert_eq!(back, orig);
}

/// `manifest.json` of a header as one string.
fn manifest_text(text: &str) -> crate::error::Result<String> {
    let mut s = String::new();
    write_manifest(text, &mut s).map(|()| s)
}
