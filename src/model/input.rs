//! What an opened root file is: one variant per format, carrying the
//! facts of that format the floors above need. They ask it ([`Input`]'s
//! methods); they do not test which format it is. Every `match` on it is
//! exhaustive, so a new format is a compile error wherever it must be
//! decided.

use super::SafetensorsFile;
use crate::format::{gguf, hurray, Footer};

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
}

impl Input {
    /// The format's name, for messages.
    pub fn format_name(&self) -> &'static str {
        match self {
            Input::Zt(_) => "zTensor",
            Input::Hurray(_) => "Hurray",
            Input::Safetensors(_) => "safetensors",
            Input::Gguf(_) => "GGUF",
        }
    }

    /// True when parts carry content digests (`digest`, `MNT/digest`).
    pub fn has_digests(&self) -> bool {
        match self {
            Input::Zt(_) => true,
            Input::Hurray(_) | Input::Safetensors(_) | Input::Gguf(_) => false,
        }
    }
}
