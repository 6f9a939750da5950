//! ztfs: read zTensor v2 model files exactly, and mount them as directory trees.
//!
//! Layers, each using only those before it: `format` (pure bytes to typed
//! values), `store` (files and maps), `decode` (the bytes a part denotes,
//! from bytes read by range), `model` (a validated root and its shards:
//! the one adapter of the formats to the floors above), `read` (whole-part
//! operations), `report` (text and JSON about a model), `cli`.
#![deny(unsafe_code)]

pub mod cli;
pub mod decode;
pub mod digest;
pub mod error;
pub mod format;
pub mod fstab;
pub mod fuse;
pub mod model;
pub mod mount;
pub mod mounts;
pub mod pack;
pub mod read;
pub mod report;
pub mod shards;
pub mod store;
pub mod sys;
pub mod tree;
