//! Hugging Face sharded checkpoints: `safetensors/sharded/<case>/`, a
//! folder holding an index (`model.safetensors.index.json`, written here
//! as text) and the safetensors files it names. The index's row carries
//! the case's outcome; each file's row its own (valid, but for the file
//! that breaks a safetensors rule). Rule names are `Rule::SafetensorsIndex*`
//! of `src/error.rs`; a file is checked, in order of first mention in
//! `weight_map`, for the safetensors rules and then its agreement with the
//! index.
//!
//! `SafetensorsIndexTooLarge` (an index over 64 MiB) and
//! `SafetensorsIndexTooManyFiles` (over 100,000 files) need files too large
//! to check in; `tests/hf_sharded.rs` makes them, as it does a missing file
//! (an I/O error, exit 2, which the table has no outcome for).

use super::{model, Case, Dir, Outcome};

const INDEX: &str = "model.safetensors.index.json";
const F1: &str = "model-00001-of-00002.safetensors";
const F2: &str = "model-00002-of-00002.safetensors";

fn case(folder: &str, file: &str, bytes: Vec<u8>, outcome: Outcome) -> Case {
    Case {
        name: Box::leak(format!("{folder}/{file}").into_boxed_str()),
        dir: Dir::SafetensorsSharded,
        bytes,
        open: outcome,
        verify: outcome,
    }
}

/// The two usual files: three tensors in the first (with `__metadata__`),
/// two in the second, dotted names.
fn usual_files() -> [(&'static str, Vec<u8>); 2] {
    [
        (
            F1,
            model(
                Some(r#"{"format":"pt"}"#),
                &[
                    ("model.embed_tokens.weight", "F32", &[4, 2]),
                    ("model.layers.0.self_attn.q_proj.weight", "F16", &[2, 2]),
                    ("model.norm.weight", "BF16", &[2]),
                ],
            ),
        ),
        (
            F2,
            model(
                None,
                &[
                    ("model.layers.1.mlp.up_proj.weight", "F16", &[3, 2]),
                    ("lm_head.weight", "I8", &[5]),
                ],
            ),
        ),
    ]
}

/// `weight_map` entries: tensor name, file name.
type Map = Vec<(&'static str, &'static str)>;

/// The usual `weight_map` entries, sorted as transformers writes them.
fn usual_map() -> Map {
    vec![
        ("lm_head.weight", F2),
        ("model.embed_tokens.weight", F1),
        ("model.layers.0.self_attn.q_proj.weight", F1),
        ("model.layers.1.mlp.up_proj.weight", F2),
        ("model.norm.weight", F1),
    ]
}

/// An index as transformers writes it (indent 2, `total_size`: the usual
/// files hold 44 and 17 bytes of tensor data).
fn index(map: &[(&str, &str)]) -> String {
    let entries: Vec<String> = (map.iter())
        .map(|(t, f)| format!("    \"{t}\": \"{f}\""))
        .collect();
    format!(
        "{{\n  \"metadata\": {{\n    \"total_size\": 61\n  }},\n  \"weight_map\": {{\n{}\n  }}\n}}\n",
        entries.join(",\n")
    )
}

/// A folder: the usual files (valid) and this index, whose row is `outcome`.
fn folder(name: &str, index_text: String, outcome: Outcome) -> Vec<Case> {
    let mut cases = vec![case(name, INDEX, index_text.into_bytes(), outcome)];
    for (file, bytes) in usual_files() {
        cases.push(case(name, file, bytes, Outcome::Valid));
    }
    cases
}

fn reject(name: &str, rule: &'static str, index_text: String) -> Vec<Case> {
    folder(name, index_text, Outcome::Reject(rule))
}

/// Every sharded case.
pub fn all() -> Vec<Case> {
    let mut cases = valid_cases();
    cases.extend(reject_cases());
    cases
}

fn valid_cases() -> Vec<Case> {
    let mut cases = folder("two-files", index(&usual_map()), Outcome::Valid);
    // No `metadata`, an unknown top-level key, weight_map not sorted.
    let mut map = usual_map();
    map.reverse();
    let text = index(&map).replacen(
        "\"metadata\": {\n    \"total_size\": 61\n  }",
        "\"format_version\": [1, \"x\"]",
        1,
    );
    cases.extend(folder("no-metadata-unsorted", text, Outcome::Valid));
    // Decision: no tensors is a valid model of no files.
    cases.extend(folder("no-tensors", index(&[]), Outcome::Valid));
    cases
}

fn reject_cases() -> Vec<Case> {
    let usual = index(&usual_map());
    let map_with = |edit: &dyn Fn(&mut Map)| {
        let mut map = usual_map();
        edit(&mut map);
        index(&map)
    };
    let mut cases = Vec::new();
    cases.extend(reject(
        "index-json-truncated",
        "SafetensorsIndexJson",
        usual[..usual.len() - 3].to_string(),
    ));
    cases.extend(reject(
        "index-duplicate-key",
        "SafetensorsIndexDuplicateKey",
        map_with(&|m| m.push(("lm_head.weight", F1))),
    ));
    cases.extend(reject(
        "index-weight-map-missing",
        "SafetensorsIndexWeightMap",
        usual.replacen("weight_map", "weights", 1),
    ));
    cases.extend(reject(
        "index-weight-map-not-strings",
        "SafetensorsIndexWeightMap",
        usual.replacen(&format!("\"{F2}\""), "2", 1),
    ));
    cases.extend(reject(
        "index-metadata-not-object",
        "SafetensorsIndexMetadata",
        usual.replacen("{\n    \"total_size\": 61\n  }", "[61]", 1),
    ));
    cases.extend(reject(
        "index-file-name-parent",
        "SafetensorsIndexFileName",
        usual.replacen(&format!("\"{F2}\""), &format!("\"../{F2}\""), 1),
    ));
    cases.extend(reject(
        "index-missing-tensor",
        "SafetensorsIndexMissingTensor",
        map_with(&|m| m.push(("model.extra", F2))),
    ));
    cases.extend(reject(
        "index-unlisted-tensor",
        "SafetensorsIndexUnlisted",
        map_with(&|m| m.retain(|(t, _)| *t != "model.norm.weight")),
    ));
    cases.extend(reject(
        "index-tensor-mapped-to-other-file",
        "SafetensorsIndexUnlisted",
        // The up projection, held by the second file, is mapped to the
        // first; the second is checked first (`lm_head.weight` names it).
        map_with(&|m| m[3].1 = F1),
    ));
    cases.extend(file_breaking_a_rule());
    cases
}

/// The second file has a byte after its last tensor: it is rejected alone,
/// and so is the checkpoint, under the safetensors rule.
fn file_breaking_a_rule() -> Vec<Case> {
    let name = "file-coverage";
    let rule = Outcome::Reject("SafetensorsCoverage");
    let [(f1, b1), (f2, mut b2)] = usual_files();
    b2.push(0);
    vec![
        case(name, INDEX, index(&usual_map()).into_bytes(), rule),
        case(name, f1, b1, Outcome::Valid),
        case(name, f2, b2, rule),
    ]
}
