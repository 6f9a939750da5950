//! A GGUF model split into several files, as llama.cpp's `gguf-split` and
//! gguf-py's `GGUFWriter` (`split_max_tensors`, `split_max_size`) write it:
//! `NAME-00001-of-00003.gguf`, `NAME-00002-of-00003.gguf`, ..., each a
//! whole GGUF file with the KVs `split.no` (0-based, `uint16`),
//! `split.count` (`uint16`) and `split.tensors.count` (`int32`, the
//! tensors of all the files), the first holding the model's other KVs.
//!
//! Opened from its first file, the model is the union of the files'
//! tensors, in file order then tensor order; the other files are found
//! beside the first by that naming (a local folder, or the URL's) and
//! opened and validated at open, as a sharded safetensors checkpoint's
//! are: each part's `blob.shard` names its file, and a missing file fails
//! the open. The model's KVs are the first file's: llama.cpp's loader
//! reads the model's metadata from the first split only, and `gguf-split`
//! writes only the `split.*` keys to the others (their other KVs, if any,
//! are validated with their file and not part of the model).
//!
//! A file with `split.count` > 1 that is not the first of such a family
//! (`split.no` not 0, or a name not `NAME-00001-of-N.gguf` with N its
//! `split.count`) is read alone, as before, with a note: llama.cpp refuses
//! to load from another split than the first, and gguf-py reads one file.

use std::path::Path;

use super::{hf, Input, Model};
use crate::error::{Error, Result, Rule};
use crate::format::gguf::{self, File};
use crate::format::text::Text;
use crate::store::{Open, Store};

/// `split.no`, `split.count`, `split.tensors.count`.
pub const SPLIT_NO: &str = "split.no";
pub const SPLIT_COUNT: &str = "split.count";
pub const SPLIT_TENSORS: &str = "split.tensors.count";

/// The most files of a split model: `split.count` is a `uint16`.
pub const MAX_FILES: u32 = u16::MAX as u32;

/// `name` as `PREFIX-NNNNN-of-MMMMM.gguf`, each number written as
/// llama.cpp prints it (`%05d`) and at most [`MAX_FILES`]: the prefix, the
/// file's number (1-based) and the count.
pub fn split_name(name: &str) -> Option<(&str, u32, u32)> {
    let stem = name.strip_suffix(".gguf")?;
    let (rest, count) = stem.rsplit_once("-of-")?;
    let (prefix, no) = rest.rsplit_once('-')?;
    let number = |s: &str| {
        let n = (s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()?;
        (format!("{n:05}") == s && n <= MAX_FILES).then_some(n)
    };
    let (no, count) = (number(no)?, number(count)?);
    (!prefix.is_empty() && (1..=count).contains(&no)).then_some((prefix, no, count))
}

/// The name of file `no` (1-based) of `count` with `prefix`.
pub fn split_file_name(prefix: &str, no: u32, count: u32) -> String {
    format!("{prefix}-{no:05}-of-{count:05}.gguf")
}

/// The family `first` opens, when it is the first file of a split model
/// named as such: its prefix and count.
fn family(path: &Path, first: &File) -> Option<(String, u32)> {
    let count = first.split_count()?;
    let no = first.get(SPLIT_NO).and_then(gguf::Value::as_int);
    let name = crate::store::plain_name(path, super::file_name(path)?);
    let (prefix, one, named) = split_name(&name)?;
    let prefix = prefix.to_string();
    (no == Some(0) && one == 1 && i128::from(named) == count).then_some((prefix, named))
}

/// A disagreement of file `name` with its split model.
fn split_error(name: &str, why: String) -> Error {
    Error::reject(Rule::GgufSplit, format!("{name:?}: {why}"))
}

impl Model {
    /// Opens a GGUF file whose tensors are `file`'s: alone, or with the
    /// other files of its split model when it is the first one.
    pub(super) fn open_gguf_file(root: Store, file: File) -> Result<Model> {
        let Some((prefix, count)) = family(root.path(), &file) else {
            let objects = gguf::objects::objects(&file);
            return Ok(Model::one_file(root, objects, Input::Gguf(file)));
        };
        let first_name = split_file_name(&prefix, 1, count);
        let total = file.get(SPLIT_TENSORS).and_then(gguf::Value::as_int);
        let mut merged = file;
        for t in &mut merged.tensors {
            t.split = Some(0);
        }
        let mut objects = gguf::objects::objects(&merged);
        let mut files = Vec::new();
        merged.split_files = vec![first_name.clone().into()];
        let mut names: std::collections::HashMap<Box<str>, u32> = (merged.tensors.iter())
            .map(|t| (t.name.clone(), 1))
            .collect();
        for no in 2..=count {
            let name = split_file_name(&prefix, no, count);
            let path = crate::store::beside(root.path(), &name);
            let store = Store::open_one_of(&path, count as usize, Open::Head)?;
            let other = gguf::read_file_from(&store).map_err(|e| hf::in_file(&name, e))?;
            let kv = |key: &str| other.get(key).and_then(gguf::Value::as_int);
            let expect = [
                (SPLIT_NO, Some(i128::from(no - 1))),
                (SPLIT_COUNT, Some(i128::from(count))),
                (SPLIT_TENSORS, total),
            ];
            for (key, want) in expect {
                if kv(key) != want {
                    let said = |v: Option<i128>| v.map_or("absent".to_string(), |n| n.to_string());
                    return Err(split_error(
                        &name,
                        format!(
                            "{key} is {}, where file {no} of the {count} of {first_name:?} must have {}",
                            said(kv(key)),
                            said(want)
                        ),
                    ));
                }
            }
            let shard = Text::from(name.as_str());
            for mut o in gguf::objects::objects(&other) {
                for p in &mut o.parts {
                    p.blob.shard = Some(shard.clone());
                }
                objects.push(o);
            }
            for mut t in other.tensors {
                if let Some(other) = names.insert(t.name.clone(), no) {
                    return Err(split_error(
                        &name,
                        format!("tensor {:?} is in file {other} of the split too", t.name),
                    ));
                }
                t.split = Some(no as u16 - 1);
                merged.tensors.push(t);
            }
            merged.split_files.push(name.clone().into());
            files.push((name, store));
        }
        if let Some(total) = total {
            if total != merged.tensors.len() as i128 {
                return Err(split_error(
                    &first_name,
                    format!(
                        "{SPLIT_TENSORS} is {total}, but the {count} files hold {} tensors",
                        merged.tensors.len()
                    ),
                ));
            }
        }
        let mut model = Model::one_file(root, objects, Input::Gguf(merged));
        model.files = files;
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_names_are_read_as_llama_cpp_writes_them() {
        assert_eq!(split_name("m-00001-of-00003.gguf"), Some(("m", 1, 3)));
        assert_eq!(split_name("a-b-00012-of-00020.gguf"), Some(("a-b", 12, 20)));
        assert_eq!(split_file_name("a-b", 12, 20), "a-b-00012-of-00020.gguf");
        for bad in [
            "m-1-of-3.gguf",
            "m-00004-of-00003.gguf",
            "m-00000-of-00003.gguf",
            "-00001-of-00003.gguf",
            "m-00001-of-00003.bin",
            "m-0000x-of-00003.gguf",
            "m-000001-of-000003.gguf",
            "m-01-of-03.gguf",
            "m-99999-of-99999.gguf",
            "m.gguf",
        ] {
            assert_eq!(split_name(bad), None, "{bad}");
        }
    }
}
