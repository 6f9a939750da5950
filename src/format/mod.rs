//! The format layer: pure bytes in, typed values out. No files, no mmap.
pub mod cbor;
