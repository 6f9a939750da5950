//! What `ztfs check` says of an opened model, by format: its summary
//! line, what `--verify` established, and its notes. Rendering only: the
//! facts come from the model ([`Input`]'s methods, the manifest).

use super::{count, human, total};
use crate::format::{gguf, Manifest};
use crate::model::Input;
use crate::read::Report;

/// What `check --verify` says it established, after the summary line.
pub fn verified(input: &Input, report: &Report) -> String {
    match input {
        Input::Gguf(_) => "every structural rule holds; the format has no content digests and no rules on tensor bytes".into(),
        Input::Hurray(_) => "every structural rule, the index CRC (when present) and the MXFP scale bytes hold; the format has no content digests".into(),
        // Said as done: without digests, only bool tensors have a rule
        // on their bytes, so only they are read.
        Input::Safetensors(_) => "every structural rule holds and every bool tensor's bytes are 0 or 1; the format has no content digests, so the other tensors' bytes are not read".into(),
        Input::OpenVino(_) => "every structural rule holds, every constant's size and range fit the .bin, and every boolean constant's bytes are 0 or 1; the format has no content digests".into(),
        Input::Onnx(_) => "every structural rule holds, every typed field holds the values its dims make, every external file and range is there, and every bool tensor's bytes are 0 or 1; the format has no content digests".into(),
        Input::Npz(_) => "every array's .npy header holds, every member's CRC-32 matches (as Python's zipfile checks it when numpy reads the member) and every bool array's bytes are 0 or 1".into(),
        Input::Torch(_) => "the archive and its pickle (run by an interpreter that calls nothing) hold and every bool tensor's bytes are 0 or 1; the format has no content digests, so the other tensors' bytes are not read".into(),
        Input::Zt(_) => format!(
            "{} {}, {} no digest",
            count(report.verified, "digest"),
            if report.verified == 1 { "matches" } else { "match" },
            count(report.no_digest, "part")
                + if report.no_digest == 1 { " has" } else { " have" },
        ),
    }
}

/// One line about the opened model `m`: zTensor's objects and parts;
/// tensors, metadata entries and data bytes for a safetensors file;
/// tensors, KV entries and buffer bytes for a Hurray file (whose `data`
/// parts repeat buffer bytes, so parts are not counted); tensors, KV
/// pairs and data for GGUF.
pub fn summary(input: &Input, m: &Manifest) -> String {
    match input {
        Input::Zt(_) => super::summary(m),
        Input::Gguf(f) => {
            let kv = f.kv.len();
            let files = match f.split_files.len() {
                0 => String::new(),
                n => format!(", split model of {n} files"),
            };
            format!(
                "GGUF v{}{files}, {}, {kv} KV pair{}, {} of tensor data",
                f.version,
                count(f.tensors.len(), "tensor"),
                if kv == 1 { "" } else { "s" },
                human(total(f.tensors.iter().map(|t| t.len)))
            )
        }
        Input::Safetensors(st) => {
            let n = st.metadata_entries;
            let what = match st.index_files {
                Some(files) => {
                    format!("sharded safetensors checkpoint of {}", count(files, "file"))
                }
                None => "safetensors file".to_string(),
            };
            format!(
                "{what}, {}, {n} metadata entr{}, {} of tensor data",
                count(m.objects.len(), "tensor"),
                if n == 1 { "y" } else { "ies" },
                human(st.data_len)
            )
        }
        Input::Torch(f) => {
            let other = match f.other_values {
                0 => String::new(),
                n => format!(", {} besides", count(n, "other value")),
            };
            let what = match f.files.len() {
                0 => "PyTorch checkpoint (torch.save zip)".to_string(),
                n => format!("sharded PyTorch checkpoint of {}", count(n, "file")),
            };
            format!(
                "{what}, {}, {}{other}, {} of tensor data",
                count(f.tensors.len(), "tensor"),
                count(f.storages.len(), "storage"),
                human(total(f.storages.iter().map(|s| s.len)))
            )
        }
        Input::Onnx(f) => {
            let model = &f.model;
            let opset = (model.opsets.iter()).find(|(d, _)| d.is_empty() || d == "ai.onnx");
            let opset = opset.map_or(String::new(), |(_, v)| format!(", opset {v}"));
            let producer = match model.producer_name.is_empty() {
                true => String::new(),
                false => format!(", from {} {}", model.producer_name, model.producer_version)
                    .trim_end()
                    .to_string(),
            };
            let files = match f.locations.len() {
                0 => String::new(),
                n => format!(" ({} of external data)", count(n, "file")),
            };
            let left = match f.left_out.len() {
                0 => String::new(),
                n => format!(", {n} left out"),
            };
            let nodes = model.ops.values().fold(0u64, |a, n| a.saturating_add(*n));
            format!(
                "ONNX model{opset}{producer}, {} nodes, {}{left}, {} of tensor data{files}",
                nodes,
                count(f.tensor.len(), "tensor"),
                human(total(
                    (m.objects.iter())
                        .flat_map(|o| &o.parts)
                        .map(|p| p.blob.length)
                ))
            )
        }
        Input::OpenVino(f) => {
            let model = &f.model;
            let layers = model.ops.values().fold(0u64, |a, n| a.saturating_add(*n));
            let left = match f.left_out.len() {
                0 => String::new(),
                n => format!(", {n} left out"),
            };
            format!(
                "OpenVINO IR v{}, {layers} layers, {}{left}, {} of weights in {}",
                model.version,
                count(f.consts.len(), "constant"),
                human(total(
                    (m.objects.iter())
                        .flat_map(|o| &o.parts)
                        .map(|p| p.blob.length)
                )),
                f.bin
            )
        }
        Input::Npz(f) => {
            let deflated = f.arrays.iter().filter(|a| !a.is_stored()).count();
            format!(
                "NumPy .npz archive, {} ({deflated} deflated), {} of array data",
                count(f.arrays.len(), "array"),
                human(total(f.arrays.iter().map(|a| a.header.data_len)))
            )
        }
        Input::Hurray(file) => {
            let bytes = total(
                (file.tensors.iter())
                    .flat_map(|t| &t.descriptor.buffers)
                    .map(|b| b.size),
            );
            let kv = file.kv.len();
            format!(
                "Hurray container, {}, {kv} KV entr{}, {} of buffers",
                count(file.tensors.len(), "tensor"),
                if kv == 1 { "y" } else { "ies" },
                human(bytes)
            )
        }
    }
}

/// What `check` notes about an opened model besides its rules: a GGUF
/// file of a split model is read alone; elsewhere, the parts this
/// reader will refuse to decode.
pub fn notes(input: &Input, m: &Manifest) -> Vec<String> {
    match input {
        Input::Gguf(f) => (f.split_count().is_some() && f.split_files.is_empty())
            .then(|| gguf::json::SPLIT_NOTE.to_string())
            .into_iter()
            .collect(),
        Input::Zt(_)
        | Input::Hurray(_)
        | Input::Safetensors(_)
        | Input::Torch(_)
        | Input::Npz(_) => super::refusals(m),
        // Tensors that are no object (strings, sparse initializers) are
        // said too: `ls` does not list them.
        Input::Onnx(f) => {
            let left = (f.left_out.iter()).map(|(n, why)| format!("tensor {n:?} left out: {why}"));
            super::refusals(m).into_iter().chain(left).collect()
        }
        Input::OpenVino(f) => {
            let left =
                (f.left_out.iter()).map(|(n, why)| format!("constant {n:?} left out: {why}"));
            super::refusals(m).into_iter().chain(left).collect()
        }
    }
}
