//! Models by URL, one test binary with a module per theme: what nginx's
//! answers do that the reads rely on (`nginx.rs`), models read by
//! `http(s)://` URL against the local file (`reads.rs`), through a fault
//! proxy (`faults.rs`: delays, 5xx, cut bodies, a server that hangs or
//! dies), by `s3://` URL from a real SeaweedFS (`s3.rs`), what is said
//! when a URL cannot be read for a reason outside the model (`said.rs`),
//! what opening a checkpoint of many files costs in memory (`memory.rs`),
//! and the benchmark's simulated object-storage link (`link.rs`). The
//! servers are started by the tests (`common::http`, `common::s3`,
//! `common::proxy`).

#[allow(dead_code)]
#[path = "../corpus/builder.rs"]
mod builder;
#[path = "../common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "../corpus/gguf/writer.rs"]
mod gguf_writer;
#[allow(dead_code)]
#[path = "../corpus/hurray/writer.rs"]
mod hurray_writer;

mod cache;
mod faults;
mod hub;
mod link;
mod memory;
mod nginx;
mod reads;
mod s3;
mod said;
mod tier;
