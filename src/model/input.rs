//! What an opened root file is: one variant per format, carrying the
//! facts of that format the floors above need. They ask it ([`Input`]'s
//! methods: names, kinds, counts, the model's attributes as CBOR); it
//! renders nothing and reads no tensor bytes, so what is said of a format
//! (`report`: `manifest.json`, listings, `meta.json` fields) and the
//! format's own checks on tensor bytes (`read`) match on it up there.
//! Every `match` on it is exhaustive, so a new format is a compile error
//! wherever it must be decided.

use super::{Model, SafetensorsFile};
use crate::error::Result;
use crate::format::{
    gguf, hurray, npz, onnx, openvino, pytorch, safetensors, Footer, Manifest, Object,
};

/// Which `meta.json` an object gets.
#[derive(Debug, Clone, Copy)]
pub enum MetaForm<'a> {
    /// The object's own: name, shape, layout, attributes and parts, with
    /// the fields its format adds (a GGUF tensor's info, a PyTorch
    /// tensor's).
    Object,
    /// A Hurray tensor's: its descriptor decoded, where its `data` comes
    /// from, its buffers.
    Hurray(&'a hurray::Tensor),
}

/// An opened root file, by format.
pub enum Input {
    /// A zTensor file: its footer (a data shard has no manifest).
    Zt(Footer),
    /// A Hurray container, whose tensors are the manifest's objects in the
    /// same order.
    Hurray(hurray::File),
    /// A safetensors file or sharded checkpoint: its header's length and
    /// counts; its tensors are the manifest's objects in header order.
    Safetensors(SafetensorsFile),
    /// A GGUF file, whose tensors are the manifest's objects in the same
    /// order.
    Gguf(gguf::File),
    /// A PyTorch checkpoint (`torch.save`'s zip), whose tensors are the
    /// manifest's objects in the same order.
    Torch(pytorch::File),
    /// A NumPy `.npz` archive, whose arrays are the manifest's objects in
    /// the same order.
    Npz(npz::File),
    /// An ONNX model, whose tensors served are the manifest's objects
    /// (`tensor` maps each to the model's).
    Onnx(Box<onnx::objects::File>),
    /// An OpenVINO IR, whose constants served are the manifest's objects
    /// (`consts` maps each to the graph's).
    OpenVino(Box<openvino::objects::File>),
}

impl Input {
    /// The format's name, for messages.
    pub fn format_name(&self) -> &'static str {
        match self {
            Input::Zt(_) => "zTensor",
            Input::Hurray(_) => "Hurray",
            Input::Safetensors(_) => "safetensors",
            Input::Gguf(_) => "GGUF",
            Input::Torch(_) => "PyTorch",
            Input::Npz(_) => "NumPy .npz",
            Input::Onnx(_) => "ONNX",
            Input::OpenVino(_) => "OpenVINO IR",
        }
    }

    /// True when parts carry content digests (`digest`, `MNT/digest`).
    pub fn has_digests(&self) -> bool {
        match self {
            Input::Zt(_) => true,
            Input::Hurray(_)
            | Input::Safetensors(_)
            | Input::Gguf(_)
            | Input::Torch(_)
            | Input::Npz(_)
            | Input::Onnx(_)
            | Input::OpenVino(_) => false,
        }
    }

    /// True when a part of a type this reader does not interpret is
    /// refused; GGUF's quantized block arrays are served as their bytes.
    pub fn refuses_uninterpreted(&self) -> bool {
        match self {
            Input::Zt(_)
            | Input::Hurray(_)
            | Input::Safetensors(_)
            | Input::Torch(_)
            | Input::Npz(_)
            | Input::Onnx(_)
            | Input::OpenVino(_) => true,
            Input::Gguf(_) => false,
        }
    }

    /// Which files part `j` of object `o` gets in the tree, (decoded,
    /// raw), where the format decides rather than zTensor's rules (a
    /// known encoding and an interpretable type): every GGUF tensor's
    /// bytes are its `data`, block arrays included; a Hurray tensor has
    /// its row-major `data` and its buffers as stored.
    pub fn part_files(&self, o: &Object, j: usize) -> Option<(bool, bool)> {
        match self {
            Input::Gguf(_) => Some((true, false)),
            Input::Hurray(_) => {
                let data = o.parts[j].name == hurray::objects::DATA;
                Some((data, !data))
            }
            // A strided view's storage is bytes; its `data` is computed.
            Input::Torch(_) if o.parts[j].name == pytorch::objects::STORAGE => Some((false, true)),
            Input::Zt(_)
            | Input::Safetensors(_)
            | Input::Torch(_)
            | Input::Npz(_)
            | Input::Onnx(_)
            | Input::OpenVino(_) => None,
        }
    }

    /// True when `--verify` reads and checks every part (content rules,
    /// decoded length, digest) and each object's layout data rules; a
    /// Hurray file's buffers are its bytes, checked by its own rule on
    /// them (`read::verify_format_rules`), and GGUF has none.
    pub fn verifies_parts(&self) -> bool {
        match self {
            Input::Zt(_)
            | Input::Safetensors(_)
            | Input::Torch(_)
            | Input::Npz(_)
            | Input::Onnx(_)
            | Input::OpenVino(_) => true,
            Input::Hurray(_) | Input::Gguf(_) => false,
        }
    }

    /// True when a part's stored bytes are the tensor's data, so that a
    /// mount with `--verify` checks them on a raw open too: a Hurray
    /// tensor's buffers; elsewhere `.raw` is structural access.
    pub fn raw_is_data(&self) -> bool {
        match self {
            Input::Hurray(_) => true,
            Input::Zt(_)
            | Input::Safetensors(_)
            | Input::Gguf(_)
            | Input::Torch(_)
            | Input::Npz(_)
            | Input::Onnx(_)
            | Input::OpenVino(_) => false,
        }
    }

    /// The format's own element type of part `part` of object `i`, where
    /// it has one its parts' storage types do not say: a Hurray tensor's
    /// `data` (its buffers are bytes).
    pub fn elem_name(&self, i: usize, part: &str) -> Option<&'static str> {
        match self {
            Input::Hurray(f) if part == hurray::objects::DATA => {
                Some(f.tensors[i].descriptor.elem.name())
            }
            Input::Hurray(_)
            | Input::Zt(_)
            | Input::Safetensors(_)
            | Input::Gguf(_)
            | Input::Torch(_)
            | Input::Npz(_)
            | Input::Onnx(_)
            | Input::OpenVino(_) => None,
        }
    }

    /// The form of object `i`'s `meta.json`.
    pub fn meta_form(&self, i: usize) -> MetaForm<'_> {
        match self {
            Input::Hurray(f) => MetaForm::Hurray(&f.tensors[i]),
            Input::Zt(_)
            | Input::Safetensors(_)
            | Input::Gguf(_)
            | Input::Torch(_)
            | Input::Npz(_)
            | Input::Onnx(_)
            | Input::OpenVino(_) => MetaForm::Object,
        }
    }

    /// The bytes `--verify` reads of the model `m` (its shards aside).
    pub fn verify_bytes(&self, m: &Manifest) -> u64 {
        match self {
            // A stored member is read for its CRC-32, then its part.
            Input::Npz(f) => {
                let stored = (f.arrays.iter().filter(|a| a.is_stored())).map(|a| a.member.len);
                let parts = (m.objects.iter().flat_map(|o| &o.parts)).map(|p| p.decoded_size());
                stored.chain(parts).fold(0, u64::saturating_add)
            }
            Input::Zt(_)
            | Input::Safetensors(_)
            | Input::Torch(_)
            | Input::Onnx(_)
            | Input::OpenVino(_) => (m.objects.iter())
                .flat_map(|o| &o.parts)
                .map(|p| p.decoded_size())
                .fold(0, u64::saturating_add),
            Input::Hurray(f) => hurray::data_rules::data_bytes(f),
            Input::Gguf(_) => 0,
        }
    }

    /// Object `i`'s size for listings: its parts' decoded bytes; for a
    /// Hurray tensor, its buffers' bytes (its `data` part repeats buffer 0).
    pub fn object_size(&self, i: usize, o: &Object) -> u64 {
        match self {
            Input::Hurray(f) => {
                (f.tensors[i].descriptor.buffers.iter()).fold(0, |n, b| n.saturating_add(b.size))
            }
            Input::Torch(f) => f.tensors[i].numel() * f.tensors[i].width(),
            Input::Zt(_)
            | Input::Safetensors(_)
            | Input::Gguf(_)
            | Input::Npz(_)
            | Input::Onnx(_)
            | Input::OpenVino(_) => {
                (o.parts.iter()).fold(0, |n, p| n.saturating_add(p.decoded_size()))
            }
        }
    }
}

impl Model {
    /// The model's file attributes as deterministic CBOR, as `ztfs pack`
    /// writes them: a zTensor manifest's; a GGUF file's KVs; a safetensors
    /// file's `__metadata__` (a sharded checkpoint's first file's, as the
    /// ztensor package keeps when it reads several files as one model);
    /// none for a Hurray file (its KVs are in `manifest.json`).
    pub fn file_attributes(&self) -> Result<Option<Vec<u8>>> {
        match &self.input {
            Input::Zt(_) | Input::Hurray(_) => {
                Ok(self.manifest().and_then(|m| m.attributes.clone()))
            }
            Input::Gguf(file) => gguf::attributes(file),
            Input::Torch(_) | Input::Npz(_) | Input::Onnx(_) | Input::OpenVino(_) => Ok(None),
            Input::Safetensors(_) => {
                let file = match self.checkpoint_files().first() {
                    Some((_, store)) => store,
                    None if self.is_checkpoint() => return Ok(None),
                    None => self.root(),
                };
                let header = safetensors::read_header_from(file)?;
                Ok(safetensors::objects::attributes(&header))
            }
        }
    }

    /// The attributes `model.safetensors`' `__metadata__` carries, as
    /// deterministic CBOR: a zTensor manifest's; a safetensors file's own
    /// `__metadata__`, so that a mount serves it back; none for a Hurray
    /// file or a GGUF file, whose key-values (typed, tokenizer arrays of
    /// tens of thousands of strings) are in `manifest.json` (and, for
    /// GGUF, in a packed `.zt`'s attributes).
    pub fn exported_attributes(&self) -> Result<Option<Vec<u8>>> {
        match &self.input {
            Input::Zt(_) | Input::Safetensors(_) => self.file_attributes(),
            Input::Hurray(_)
            | Input::Gguf(_)
            | Input::Torch(_)
            | Input::Npz(_)
            | Input::Onnx(_)
            | Input::OpenVino(_) => Ok(None),
        }
    }
}
