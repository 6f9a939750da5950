//! One test per index rule, and the decisions the module states.

use super::*;

fn rule_of(r: Result<impl std::fmt::Debug>) -> Rule {
    r.expect_err("refused").rule().expect("a rule")
}

const TWO: &str =
    r#"{"metadata": {"total_size": 3}, "weight_map": {"a.b": "one", "c": "two", "d": "one"}}"#;

#[test]
fn a_valid_index_maps_tensors_to_files_in_document_order() {
    let i = parse_index(TWO).unwrap();
    assert_eq!(i.files, ["one", "two"]);
    let map: Vec<(&str, usize)> = i.weight_map.iter().map(|(t, f)| (t.as_str(), *f)).collect();
    assert_eq!(map, [("a.b", 0), ("c", 1), ("d", 0)]);
    assert_eq!(i.metadata_entries, Some(1));
    i.check_file(0, &["d", "a.b"]).unwrap();
    i.check_file(1, &["c"]).unwrap();
}

#[test]
fn metadata_is_optional_and_unknown_keys_are_allowed() {
    let i = parse_index(r#" {"weight_map": {"x": "f"}, "other": [1, null]}"#).unwrap();
    assert_eq!(i.metadata_entries, None);
    assert_eq!(i.files, ["f"]);
}

#[test]
fn an_index_of_no_tensors_is_a_model_of_no_files() {
    let i = parse_index(r#"{"weight_map": {}}"#).unwrap();
    assert!(i.files.is_empty() && i.weight_map.is_empty());
}

#[test]
fn too_large() {
    check_len(MAX_INDEX_LEN).unwrap();
    assert_eq!(
        rule_of(check_len(MAX_INDEX_LEN + 1)),
        Rule::SafetensorsIndexTooLarge
    );
}

#[test]
fn not_utf8_not_json_not_an_object() {
    assert_eq!(
        rule_of(index_text(b"{\"\xff\": 1}".to_vec())),
        Rule::SafetensorsIndexJson
    );
    for text in [
        r#"{"weight_map": {}"#,
        r#"{"weight_map": {}} x"#,
        "[1]",
        "\"s\"",
    ] {
        assert_eq!(
            rule_of(parse_index(text)),
            Rule::SafetensorsIndexJson,
            "{text}"
        );
    }
}

#[test]
fn duplicate_keys_anywhere() {
    for text in [
        r#"{"weight_map": {"a": "f", "a": "g"}}"#,
        r#"{"weight_map": {"a": "f"}, "weight_map": {"a": "g"}}"#,
        r#"{"metadata": {"k": 1, "k": 2}, "weight_map": {}}"#,
    ] {
        assert_eq!(
            rule_of(parse_index(text)),
            Rule::SafetensorsIndexDuplicateKey,
            "{text}"
        );
    }
}

#[test]
fn weight_map_missing_or_not_an_object_of_strings() {
    for text in [
        r#"{"metadata": {}}"#,
        r#"{"weight_map": ["a", "f"]}"#,
        r#"{"weight_map": null}"#,
        r#"{"weight_map": {"a": 1}}"#,
        r#"{"weight_map": {"a": ["f"]}}"#,
    ] {
        assert_eq!(
            rule_of(parse_index(text)),
            Rule::SafetensorsIndexWeightMap,
            "{text}"
        );
    }
}

#[test]
fn metadata_not_an_object() {
    for m in ["null", "[]", "\"x\"", "3"] {
        let text = format!(r#"{{"metadata": {m}, "weight_map": {{}}}}"#);
        assert_eq!(
            rule_of(parse_index(&text)),
            Rule::SafetensorsIndexMetadata,
            "{text}"
        );
    }
}

#[test]
fn file_names_are_one_path_component() {
    for name in ["", ".", "..", "a/b", "/abs", "..\\\\x", "a\\u0000b"] {
        let text = format!(r#"{{"weight_map": {{"t": "{name}"}}}}"#);
        assert_eq!(
            rule_of(parse_index(&text)),
            Rule::SafetensorsIndexFileName,
            "{text}"
        );
    }
    for name in ["model-00001-of-00002.safetensors", "...", ".hidden", "a b"] {
        check_file_name(name).unwrap();
    }
}

#[test]
fn too_many_files() {
    let entries: Vec<String> = (0..=MAX_INDEX_FILES)
        .map(|i| format!(r#""t{i}":"f{i}""#))
        .collect();
    let text = format!(r#"{{"weight_map": {{{}}}}}"#, entries.join(","));
    assert_eq!(
        rule_of(parse_index(&text)),
        Rule::SafetensorsIndexTooManyFiles
    );
    let ok = format!(r#"{{"weight_map": {{{}}}}}"#, entries[1..].join(","));
    assert_eq!(parse_index(&ok).unwrap().files.len(), MAX_INDEX_FILES);
}

#[test]
fn a_mapped_tensor_missing_from_its_file() {
    let i = parse_index(TWO).unwrap();
    assert_eq!(
        rule_of(i.check_file(0, &["a.b"])),
        Rule::SafetensorsIndexMissingTensor
    );
    assert_eq!(
        rule_of(i.check_file(1, &[])),
        Rule::SafetensorsIndexMissingTensor
    );
}

#[test]
fn a_tensor_unlisted_or_mapped_to_another_file() {
    let i = parse_index(TWO).unwrap();
    // Not in weight_map at all.
    let e = i.check_file(1, &["c", "e"]);
    assert_eq!(rule_of(e), Rule::SafetensorsIndexUnlisted);
    // In two files: "d" is mapped to "one" but also present in "two".
    let e = i.check_file(1, &["c", "d"]);
    assert_eq!(rule_of(e), Rule::SafetensorsIndexUnlisted);
}

#[test]
fn manifest_is_the_index_in_document_order() {
    let m = manifest_text(TWO).unwrap();
    let keys: Vec<usize> = [
        "metadata",
        "total_size",
        "weight_map",
        "a.b",
        "\"c\"",
        "\"d\"",
    ]
    .iter()
    .map(|k| m.find(k).unwrap())
    .collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{m}");
}

proptest::proptest! {
    /// Seeded edits of a valid index (a byte replaced, the text cut) never
    /// panic: each is accepted or refused under a `SafetensorsIndex*` rule,
    /// and an accepted one agrees with itself.
    #[test]
    fn edited_indexes_are_accepted_or_refused_by_rule(
        at in 0usize..TWO.len(),
        byte in proptest::prelude::any::<u8>(),
        cut in 0usize..=TWO.len(),
    ) {
        let mut b = TWO.as_bytes().to_vec();
        b[at] = byte;
        b.truncate(cut.max(1));
        match index_text(b).and_then(|t| parse_index(&t)) {
            Ok(i) => {
                for (t, f) in &i.weight_map {
                    proptest::prop_assert_eq!(i.file_of(t), Some(*f));
                }
            }
            Err(e) => {
                let rule = e.rule().expect("a rule").name();
                proptest::prop_assert!(rule.starts_with("SafetensorsIndex"), "{}", e);
            }
        }
    }
}

#[test]
fn manifest_of_a_deeply_nested_metadata_is_within_a_constant_factor() {
    let nested = crate::format::safetensors::tests::nested(120, 20_000);
    let index = format!(r#"{{"metadata": {{"x": {nested}}}, "weight_map": {{"a": "one"}}}}"#);
    let m = manifest_text(&index).unwrap();
    let k = crate::format::json::MAX_GROWTH;
    assert!(
        m.len() as u64 <= k * index.len() as u64,
        "{} > {k} x {}",
        m.len(),
        index.len()
    );
    let back: serde_json::Value = serde_json::from_str(&m).unwrap();
    let orig: serde_json::Value = serde_json::from_str(&index).unwrap();
    assert_eq!(back, orig);
}

/// `manifest.json` of an index as one string.
fn manifest_text(text: &str) -> crate::error::Result<String> {
    let mut s = String::new();
    write_manifest(text, &mut s).map(|()| s)
}
