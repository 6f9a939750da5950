//! A bounded cursor over a file read by range ([`Ranges`]): the header,
//! key-value and tensor-info sections are read front to back in pieces of
//! at most [`CHUNK`] bytes, so a file by URL is read in a few requests and
//! no read is sized by an unchecked number (a length from the file is
//! first checked against the bytes left in the file).

use std::borrow::Cow;

use crate::error::{Error, Result, Rule};
use crate::format::Ranges;

/// Bytes fetched at once when the source is not in memory.
pub const CHUNK: u64 = 1 << 20;

/// A position in a file and a window of its bytes.
pub struct Cursor<'a> {
    src: &'a dyn Ranges,
    mem: Option<&'a [u8]>,
    size: u64,
    pos: u64,
    window: Vec<u8>,
    window_start: u64,
    /// The rule a read past the end of the file breaks (the section being read).
    pub rule: Rule,
    /// What is being read, for the message.
    pub what: &'static str,
}

impl<'a> Cursor<'a> {
    /// A cursor at offset 0 of `src`.
    pub fn new(src: &'a dyn Ranges, rule: Rule) -> Cursor<'a> {
        Cursor {
            src,
            mem: src.in_memory(),
            size: src.size(),
            pos: 0,
            window: Vec::new(),
            window_start: 0,
            rule,
            what: "header",
        }
    }

    /// The current offset.
    pub fn pos(&self) -> u64 {
        self.pos
    }

    /// The file's length.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes between the position and the end of the file.
    pub fn left(&self) -> u64 {
        self.size - self.pos
    }

    /// The next `n` bytes, advancing past them; an error under
    /// [`Cursor::rule`] when fewer are left.
    pub fn take(&mut self, n: u64) -> Result<Cow<'_, [u8]>> {
        if n > self.left() {
            return Err(Error::reject(
                self.rule,
                format!(
                    "{} at offset {} needs {n} bytes, the file ({} bytes) has {} left",
                    self.what,
                    self.pos,
                    self.size,
                    self.left()
                ),
            ));
        }
        let start = self.pos;
        self.pos += n;
        // In bounds: n <= size - start, and a map's size is its length.
        if let Some(mem) = self.mem {
            return Ok(Cow::Borrowed(&mem[start as usize..(start + n) as usize]));
        }
        let window_end = self.window_start + self.window.len() as u64;
        if start >= self.window_start && start + n <= window_end {
            let at = (start - self.window_start) as usize;
            return Ok(Cow::Borrowed(&self.window[at..at + n as usize]));
        }
        if n > CHUNK {
            // A long string: one read, bounded by the file's length above.
            return Ok(Cow::Owned(self.src.get(start, n)?.into_owned()));
        }
        let len = CHUNK.min(self.size - start);
        self.window = self.src.get(start, len)?.into_owned();
        self.window_start = start;
        Ok(Cow::Borrowed(&self.window[..n as usize]))
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let b = self.take(N as u64)?;
        let mut out = [0; N];
        out.copy_from_slice(&b);
        Ok(out)
    }

    /// A little-endian u32.
    pub fn u32(&mut self) -> Result<u32> {
        self.array().map(u32::from_le_bytes)
    }

    /// A little-endian u64.
    pub fn u64(&mut self) -> Result<u64> {
        self.array().map(u64::from_le_bytes)
    }

    /// The error for a string of `n` bytes at `at`, over ggml's limit.
    pub fn too_long(&self, what: &str, at: u64, n: u64) -> Error {
        Error::reject(
            self.rule,
            format!(
                "{what} at offset {at} is {n} bytes, more than the {} that ggml reads",
                super::MAX_STRING_LEN
            ),
        )
    }

    /// A GGUF string of at most `max` bytes: a u64 length and that many
    /// bytes of UTF-8, which `what` names in the message when they are
    /// not UTF-8; `Ok(Err(len))` for a longer one, whose bytes are not
    /// read.
    pub fn string_within(
        &mut self,
        what: &str,
        max: u64,
    ) -> Result<std::result::Result<Box<str>, u64>> {
        let at = self.pos;
        let n = self.u64()?;
        if n > max {
            return Ok(Err(n));
        }
        let rule = self.rule;
        let bytes = self.take(n)?;
        match std::str::from_utf8(&bytes) {
            Ok(s) => Ok(Ok(s.into())),
            Err(e) => Err(Error::reject(
                rule,
                format!("{what} at offset {at} is not UTF-8 ({e})"),
            )),
        }
    }
}
