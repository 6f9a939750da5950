//! A Hugging Face sharded checkpoint's index (`model.safetensors.index.json`,
//! as transformers' `save_pretrained` writes it and `load_sharded_checkpoint`
//! reads it): pure text in, a validated [`Index`] out.
//!
//! The index is a JSON object: `weight_map`, tensor name → file name, says
//! which safetensors file holds each tensor; `metadata` (transformers
//! writes `{"total_size": N}`) is optional and kept only for
//! `manifest.json`; other top-level keys are allowed and ignored.
//!
//! This module does no I/O: the model opens the files the index names and
//! hands each header to [`Index::check_file`], which checks that the index
//! and the file agree tensor for tensor.
//!
//! # Decisions
//!
//! - **Repeated keys** are refused anywhere in the index (Python's
//!   `json.load` keeps the last), as they are in a safetensors header.
//! - **`metadata`**, when present, must be an object (of anything);
//!   transformers requires it, ztfs does not. Its `total_size` is not
//!   checked (transformers does not use it either).
//! - **An index of no tensors** (`"weight_map": {}`) is a valid model of no
//!   tensors and no files.
//! - **A file name is one path component**: it comes from a file and
//!   becomes a path beside the index (or a URL beside the index's URL).

use std::collections::HashMap;

use super::json::Json;
use crate::error::{Error, Result, Rule};
use crate::format::json::Sink;

/// The largest index, in bytes, checked before it is read.
pub const MAX_INDEX_LEN: u64 = 64 << 20;
/// The most files an index may name, checked before any is opened.
pub const MAX_INDEX_FILES: usize = 100_000;
/// The key of the tensor name → file name map.
pub const WEIGHT_MAP: &str = "weight_map";
/// The key of the optional free-form metadata.
pub const METADATA: &str = "metadata";

/// A valid index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    /// `weight_map` in document order: a tensor's name and the position of
    /// its file in [`Index::files`].
    pub weight_map: Vec<(String, usize)>,
    /// The distinct file names, in order of first appearance.
    pub files: Vec<String>,
    /// Entries in `metadata`; `None` when absent.
    pub metadata_entries: Option<usize>,
    /// Per file, how many tensors `weight_map` maps to it.
    counts: Vec<usize>,
    /// Tensor name → position in `weight_map`.
    by_name: HashMap<String, usize>,
}

fn reject(rule: Rule, detail: impl Into<String>) -> Error {
    Error::reject(rule, detail)
}

/// Checks an index's length, `len` bytes, before it is read.
pub fn check_len(len: u64) -> Result<()> {
    if len > MAX_INDEX_LEN {
        return Err(reject(
            Rule::SafetensorsIndexTooLarge,
            format!("the index is {len} bytes, over the limit of {MAX_INDEX_LEN}"),
        ));
    }
    Ok(())
}

/// The index bytes as UTF-8 text.
pub fn index_text(bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        reject(
            Rule::SafetensorsIndexJson,
            format!(
                "the index is not UTF-8: invalid byte at offset {}",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Parses the index text as JSON: valid, no repeated key.
fn parse_json(text: &str) -> Result<Json> {
    super::json_of(
        text,
        "index",
        Rule::SafetensorsIndexJson,
        Rule::SafetensorsIndexDuplicateKey,
    )
}

/// Parses and validates an index's text (see the module's rules).
pub fn parse_index(text: &str) -> Result<Index> {
    let Json::Object(top) = parse_json(text)? else {
        return Err(reject(
            Rule::SafetensorsIndexJson,
            "the index is not a JSON object",
        ));
    };
    let field = |key: &str| top.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let metadata_entries = match field(METADATA) {
        None => None,
        Some(Json::Object(m)) => Some(m.len()),
        Some(other) => {
            return Err(reject(
                Rule::SafetensorsIndexMetadata,
                format!("{METADATA} is {}, not an object", other.type_name()),
            ))
        }
    };
    let map = match field(WEIGHT_MAP) {
        Some(Json::Object(m)) => m,
        Some(other) => {
            let what = format!("{WEIGHT_MAP} is {}, not an object", other.type_name());
            return Err(weight_map(what));
        }
        None => {
            let what = format!("the JSON object has no {WEIGHT_MAP}: not a Hugging Face index");
            return Err(weight_map(what));
        }
    };
    let mut index = Index {
        weight_map: Vec::with_capacity(map.len()),
        files: Vec::new(),
        metadata_entries,
        counts: Vec::new(),
        by_name: HashMap::with_capacity(map.len()),
    };
    let mut file_pos: HashMap<&str, usize> = HashMap::new();
    for (tensor, file) in map {
        let Json::String(file) = file else {
            let what = format!(
                "{WEIGHT_MAP} entry {:?} is {}, not a string",
                truncate(tensor),
                file.type_name()
            );
            return Err(weight_map(what));
        };
        let pos = match file_pos.get(file.as_str()) {
            Some(&p) => p,
            None => {
                check_file_name(file)?;
                if index.files.len() == MAX_INDEX_FILES {
                    return Err(reject(
                        Rule::SafetensorsIndexTooManyFiles,
                        format!("weight_map names more than {MAX_INDEX_FILES} files"),
                    ));
                }
                index.files.push(file.clone());
                index.counts.push(0);
                file_pos.insert(file, index.files.len() - 1);
                index.files.len() - 1
            }
        };
        index.counts[pos] += 1;
        index.by_name.insert(tensor.clone(), index.weight_map.len());
        index.weight_map.push((tensor.clone(), pos));
    }
    Ok(index)
}

fn weight_map(what: String) -> Error {
    reject(
        Rule::SafetensorsIndexWeightMap,
        format!("{what} ({WEIGHT_MAP} maps tensor names to file name strings)"),
    )
}

/// A file name from `weight_map` is one path component: not empty, not
/// `.` or `..`, no `/`, `\` or NUL.
pub fn check_file_name(name: &str) -> Result<()> {
    let bad = name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']);
    if bad {
        return Err(reject(
            Rule::SafetensorsIndexFileName,
            format!(
                "file name {:?} in {WEIGHT_MAP} is not a single path component (non-empty, not . or .., no /, \\ or NUL)",
                truncate(name)
            ),
        ));
    }
    Ok(())
}

impl Index {
    /// Where `weight_map` lists `tensor`, if it does.
    pub fn position(&self, tensor: &str) -> Option<usize> {
        self.by_name.get(tensor).copied()
    }

    /// The file `weight_map` maps `tensor` to, if it lists it.
    pub fn file_of(&self, tensor: &str) -> Option<usize> {
        self.by_name.get(tensor).map(|&i| self.weight_map[i].1)
    }

    /// Checks that file `file`'s valid header and the index agree: every
    /// tensor of the file is mapped to it, and every tensor mapped to it
    /// is in it.
    pub fn check_file(&self, file: usize, tensors: &[&str]) -> Result<()> {
        let name = &self.files[file];
        for t in tensors {
            let other = match self.file_of(t) {
                Some(f) if f == file => continue,
                Some(f) => format!("is mapped to {:?}", self.files[f]),
                None => format!("is not in {WEIGHT_MAP}"),
            };
            return Err(reject(
                Rule::SafetensorsIndexUnlisted,
                format!("tensor {:?} of {name:?} {other}", truncate(t)),
            ));
        }
        // Every tensor of the file is mapped to it and names are unique in
        // a header, so equal counts mean every mapped tensor was found.
        if tensors.len() == self.counts[file] {
            return Ok(());
        }
        let present: std::collections::HashSet<&str> = tensors.iter().copied().collect();
        let missing = (self.weight_map.iter())
            .find(|(t, f)| *f == file && !present.contains(t.as_str()))
            .map_or("", |(t, _)| t.as_str());
        Err(reject(
            Rule::SafetensorsIndexMissingTensor,
            format!(
                "tensor {:?} is mapped to {name:?} by {WEIGHT_MAP}, but the file has no such tensor",
                truncate(missing)
            ),
        ))
    }
}

/// A name cut for a message.
fn truncate(s: &str) -> &str {
    crate::format::truncate(s, 80)
}

/// Writes `manifest.json` of a sharded checkpoint: its index as pretty
/// JSON through the lossless mapping every `manifest.json` uses, keys in
/// document order. `text` is a valid index.
pub fn write_manifest(text: &str, out: &mut dyn Sink) -> Result<()> {
    super::refuse_bom(text, "index", Rule::SafetensorsIndexJson)?;
    super::pretty::write_pretty(text, out).map_err(|e| {
        reject(
            Rule::SafetensorsIndexJson,
            format!("the index is not valid JSON: {e}"),
        )
    })?;
    out.push('\n');
    Ok(())
}

#[cfg(test)]
mod tests;
