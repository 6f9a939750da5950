//! The mount, for real, one test binary with a module per theme: every
//! corpus file mounted and read back against `ztfs cat` (`corpus.rs`),
//! names and the nested view (`names.rs`), range reads, mmap and
//! concurrent readers (`reads.rs`), what a read-only tree refuses
//! (`refused.rs`), xattrs (`xattrs.rs`), signals (`signals.rs`), stale
//! mounts (`stale.rs`), a backing file truncated or replaced under the
//! mount (`truncation.rs`), `--verify` and degraded families
//! (`verify.rs`), the command's words (`commands.rs`), Hurray files
//! (`hurray.rs`), the exported `.npy` and safetensors files
//! (`views.rs`), and a checkpoint folder's other files (`folders.rs`).
//!
//! Each test mounts its own temporary directories through
//! [`common::Mount`], which unmounts on drop even when the test fails. The
//! oracles are the other subcommands: `ls --json`, `cat`, `manifest`,
//! `digest` and `check`.

#[path = "../common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "../../examples/gen_manifest.rs"]
mod gen_manifest;

mod commands;
mod corpus;
mod folders;
mod hurray;
mod naming;
mod reads;
mod refused;
mod signals;
mod stale;
mod truncation;
mod verify;
mod views;
mod xattrs;

// The helpers each theme's tests share.
#[allow(unused_imports)]
use {
    commands::*, corpus::*, naming::*, reads::*, refused::*, signals::*, stale::*, truncation::*,
    verify::*, xattrs::*,
};

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use ztfs::tree::names::{self, Reserved, NAME_MAX};

pub(crate) const ZSTD: &str = "zt.zstd-seekable/1";
pub(crate) const FIVE_S: Duration = Duration::from_secs(5);

use ztfs::tree::{PART_NAME_MAX, PART_RESERVED, ROOT_RESERVED};
