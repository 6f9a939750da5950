//! A rendered text the mount serves (`manifest.json`), kept as it is
//! written: in memory up to a bound, past it in an unlinked file of
//! `$TMPDIR` (tempfile's spooled file), so that a text many times larger
//! than the daemon's cache costs it no memory; the kernel's page cache
//! holds the file's pages, and reads come from it by `pread`.

use std::os::unix::fs::FileExt;

use crate::error::{Error, Result};
use crate::format::json::{Pieces, Sink};
use crate::tree::content::{clip, Data};

const WHAT: &str = "the spool file of manifest.json";

/// What `write` writes, kept: in memory up to `in_memory` bytes, else in
/// a file.
pub fn spool(in_memory: usize, write: impl FnOnce(&mut dyn Sink) -> Result<()>) -> Result<Spooled> {
    let mut pieces = Pieces::new(tempfile::spooled_tempfile(in_memory));
    write(&mut pieces)?;
    let file = pieces.finish().map_err(|e| Error::io(WHAT, e))?;
    Ok(match file.into_inner() {
        tempfile::SpooledData::InMemory(c) => {
            let mut v = c.into_inner();
            v.shrink_to_fit();
            Spooled::Memory(v)
        }
        tempfile::SpooledData::OnDisk(f) => {
            let len = f.metadata().map_err(|e| Error::io(WHAT, e))?.len();
            Spooled::File(f, len)
        }
    })
}

/// A text [`spool`]ed: its bytes, or a file and its length.
pub enum Spooled {
    Memory(Vec<u8>),
    File(std::fs::File, u64),
}

impl Spooled {
    pub fn len(&self) -> u64 {
        match self {
            Spooled::Memory(v) => v.len() as u64,
            Spooled::File(_, len) => *len,
        }
    }

    /// Up to `size` bytes at `offset`, short at the end.
    pub fn read(&self, offset: u64, size: u32) -> Result<Data<'_>> {
        let range = clip(self.len(), offset, size);
        match self {
            Spooled::Memory(v) => Ok(Data::Borrowed(&v[range])),
            Spooled::File(f, _) => {
                let mut buf = vec![0; range.len()];
                f.read_exact_at(&mut buf, range.start as u64)
                    .map_err(|e| Error::io(WHAT, e))?;
                Ok(Data::Owned(buf))
            }
        }
    }
}
