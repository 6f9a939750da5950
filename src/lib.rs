//! ztfs: read zTensor v2 model files exactly, and mount them as directory trees.
#![deny(unsafe_code)]

pub mod error;
pub mod format;
