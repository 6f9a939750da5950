//! ztfs: read tensor model files exactly (zTensor v2, Hurray, safetensors,
//! GGUF, PyTorch checkpoints, `.npz`; local or by URL), mount them as
//! directory trees, and read their tensors in-process ([`Model`]).
//!
//! Layers, each using only those before it: `format` (pure bytes to typed
//! values), `store` (files and maps), `decode` (the bytes a part denotes,
//! from bytes read by range), `model` (a validated root and its shards:
//! the one adapter of the formats to the floors above), `read` (whole-part
//! operations), `report` (text and JSON about a model), `tree` (what a
//! model's files hold and how each is read), then the front ends over it:
//! `fuse` and `mount` (the filesystem), `library` (tensors read in-process,
//! and the Python binding over it), `view` (the local web page), `cli`.
//! `stats` (value statistics by range) serves the tree and the library.
#![deny(unsafe_code)]

pub mod cli;
pub mod decode;
pub mod digest;
pub mod error;
pub mod format;
pub mod fstab;
pub mod fuse;
pub mod library;
pub mod model;
pub mod mount;
pub mod mounts;
pub mod pack;
#[cfg(feature = "python")]
mod python;
pub mod read;
pub mod report;
pub mod shards;
pub mod stats;
pub mod store;
pub mod sys;
pub mod tree;
#[cfg(feature = "view")]
pub mod view;

pub use library::Model;
