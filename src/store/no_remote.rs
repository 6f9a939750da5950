//! The remote source of a build without the `remote` feature (the fuzz
//! targets' build): a URL is told from a path, and opening one says why it
//! cannot be read. No value of [`Remote`] can exist.

use crate::error::{Error, Result};

pub use super::url_of;

/// A range of a shared buffer, as the real source's reads give.
pub type Shared = (std::sync::Arc<Vec<u8>>, std::ops::Range<usize>);

/// No blocks to keep in this build.
pub fn set_cache_budget(_: u64) {}

/// A remote object; never made in this build.
pub enum Remote {}

impl Remote {
    pub fn open(url: &str, _: super::Open) -> Result<Remote> {
        Err(Error::at(
            url,
            Error::Usage("this ztfs was built without the `remote` feature".into()),
        ))
    }

    pub fn len(&self) -> u64 {
        match *self {}
    }

    pub fn is_empty(&self) -> bool {
        match *self {}
    }

    pub fn read(&self, _: u64, _: u64) -> Result<Shared> {
        match *self {}
    }

    pub fn read_small(&self, _: u64, _: u64) -> Result<Vec<u8>> {
        match *self {}
    }

    pub fn set_parts(&self, _: Vec<(u64, u64)>) {
        match *self {}
    }

    pub fn prepare(&self) {
        match *self {}
    }

    pub fn read_blob(
        &self,
        _: u64,
        _: u64,
        _: u64,
        _: u64,
        _: super::Reach,
    ) -> Result<Option<Shared>> {
        match *self {}
    }

    pub fn stream(&self, _: u64, _: u64, _: u64, _: &mut dyn FnMut(&[u8])) -> Result<()> {
        match *self {}
    }
}

/// Nothing to trust without remote reads.
pub fn trust_unversioned(_: bool) {}
