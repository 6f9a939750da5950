//! Helpers for the tests that run the real binary and mount for real, a
//! module per job: the binary run as an oracle (`binary.rs`), the corpus
//! and its table (`corpus.rs`), what `ztfs ls --json` and `meta.json` say
//! (`listing.rs`, through the small JSON reader of `json.rs`: the crate has
//! no JSON dependency to lend), mounts, their daemons and tree walks
//! (`mount.rs`), system calls std lacks (`system.rs`), assertions and
//! waits (`check.rs`), a user without privileges (`user.rs`), and the
//! servers of the remote tests (`http.rs`, `s3.rs`, the fault proxy
//! `proxy.rs`). Every name is re-exported here: `common::ztfs`,
//! `common::Mount`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub mod binary;
pub mod check;
pub mod corpus;
pub mod http;
pub mod hub;
pub mod json;
pub mod listing;
pub mod mount;
pub mod onnx;
pub mod proxy;
pub mod s3;
pub mod system;
pub mod user;
pub mod venv;
pub mod zip;

#[allow(unused_imports)]
pub use venv::venv;

// Each test binary uses some of these: a glob it does not use is no fault.
#[allow(unused_imports)]
pub use binary::*;
#[allow(unused_imports)]
pub use check::*;
#[allow(unused_imports)]
pub use corpus::*;
#[allow(unused_imports)]
pub use json::Json;
#[allow(unused_imports)]
pub use listing::*;
#[allow(unused_imports)]
pub use mount::*;
#[allow(unused_imports)]
pub use system::*;
#[allow(unused_imports)]
pub use user::*;
