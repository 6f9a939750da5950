//! The only file access: open, map, and hand out bounded slices.
//!
//! A [`Store`] is one open file, mapped read-only. A mapping of a file that
//! is later replaced by rename keeps the old bytes, which is what a mount
//! wants. The one `unsafe` of the crate is here.

use std::fs::File;
use std::path::{Path, PathBuf};

use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};

use memmap2::Mmap;

use crate::error::{Error, Result};

/// What a file that is not a regular file is, for messages.
fn kind_of(t: &std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else {
        "special file"
    }
}

/// One open file, mapped read-only.
pub struct Store {
    path: PathBuf,
    file: File,
    bytes: Bytes,
}

enum Bytes {
    Map(Mmap),
    // An empty file cannot be mapped.
    Empty,
}

impl Store {
    /// Opens and maps `path`.
    pub fn open(path: &Path) -> Result<Store> {
        let ctx = || format!("{}", path.display());
        // O_NONBLOCK: opening a FIFO (or a symlink to one) for reading
        // would otherwise wait for a writer forever; the type is checked on
        // the open handle, so nothing can be swapped in between. The flag
        // changes nothing for a regular file, which is all we map.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|e| Error::io(ctx(), e))?;
        let meta = file.metadata().map_err(|e| Error::io(ctx(), e))?;
        if !meta.is_file() {
            return Err(Error::Usage(format!(
                "{}: not a regular file (a {})",
                path.display(),
                kind_of(&meta.file_type())
            )));
        }
        let bytes = if meta.len() == 0 {
            Bytes::Empty
        } else {
            // SAFETY: the map is read-only and private to this process. The
            // file may still change underneath (truncation, in-place writes);
            // ztfs treats the file as immutable, as the format says it is
            // (§2.5), and a reader of a truncated file may fault. Callers that
            // must survive truncation (the mount) check the length first.
            #[allow(unsafe_code)]
            let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(ctx(), e))?;
            Bytes::Map(map)
        };
        Ok(Store {
            path: path.to_path_buf(),
            file,
            bytes,
        })
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Map(m) => m,
            Bytes::Empty => &[],
        }
    }

    /// Length in bytes at open time.
    pub fn len(&self) -> u64 {
        self.bytes().len() as u64
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file's length now, which may be less than at open if it was
    /// truncated in place (a read of the map past the new end would fault).
    pub fn live_len(&self) -> Result<u64> {
        crate::sys::file_len(&self.file).map_err(|e| Error::io(self.path.display().to_string(), e))
    }

    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// `len` bytes at `offset`, or an error if the range is outside the file.
    pub fn slice(&self, offset: u64, len: u64) -> Result<&[u8]> {
        let end = offset.checked_add(len);
        let range = end
            .filter(|&e| e <= self.len())
            .map(|e| offset as usize..e as usize);
        range.map(|r| &self.bytes()[r]).ok_or_else(|| {
            Error::io(
                self.path.display().to_string(),
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "range [{offset}, +{len}) is outside the file ({} bytes)",
                        self.len()
                    ),
                ),
            )
        })
    }
}
