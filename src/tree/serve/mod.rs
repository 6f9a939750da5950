//! Serving reads: opens and reads answered (`requests.rs`), what each file
//! holds and how it is read (`content.rs`, `view.rs` for the view files),
//! the slow work run off the FUSE threads (`jobs.rs`), the one budgeted
//! cache of decoded frames, views and rendered text (`frames.rs`,
//! `spool.rs`), and failures logged once (`failures.rs`).

pub(in crate::tree) mod content;
pub(in crate::tree) mod direct;
pub(in crate::tree) mod failures;
pub(in crate::tree) mod frames;
pub(in crate::tree) mod jobs;
pub(in crate::tree) mod requests;
pub(in crate::tree) mod spool;
pub(in crate::tree) mod stats;
mod view;
