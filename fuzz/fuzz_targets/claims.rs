//! Every reader on a file that claims far more than it holds: the input's
//! first half at the start of a 1 TiB file, its second half at the end,
//! zeros between (a sparse file, or a server's length). The readers must
//! reject or accept it without an allocation sized by a claim: memory may
//! follow what is read, never what is claimed. The file gives 16 MiB in
//! all (a read past that fails, as a server given up on), so a reader
//! whose memory passes 256 MiB (the common allocator aborts) sized it by a
//! claim, or by more than 16 times what it read. A rejection names a rule
//! or says a read failed.
#![no_main]

mod common;

use std::borrow::Cow;

use libfuzzer_sys::fuzz_target;
use ztfs::error::{Error, Result};
use ztfs::format::{self, gguf, hurray, safetensors, Ranges};

const SIZE: u64 = 1 << 40;
/// Bytes the file gives in all.
const READ_BUDGET: u64 = 16 << 20;

struct Claimed<'a> {
    head: &'a [u8],
    tail: &'a [u8],
    /// Bytes given so far (atomic: a reader may read from threads).
    read: std::sync::atomic::AtomicU64,
}

impl Ranges for Claimed<'_> {
    fn size(&self) -> u64 {
        SIZE
    }

    fn get(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        let end = offset.checked_add(len).filter(|&e| e <= SIZE);
        use std::sync::atomic::Ordering::Relaxed;
        let given = (self.read).fetch_update(Relaxed, Relaxed, |read| {
            Some(read.saturating_add(len)).filter(|&r| r <= READ_BUDGET)
        });
        let Some(end) = end.filter(|_| given.is_ok()) else {
            return Err(Error::Unsupported(format!(
                "fuzz: no read of [{offset}, +{len})"
            )));
        };
        let mut out = vec![0u8; len as usize];
        // The head's bytes in [offset, end), then the tail's.
        let h = self.head.len() as u64;
        if offset < h {
            let to = end.min(h);
            out[..(to - offset) as usize].copy_from_slice(&self.head[offset as usize..to as usize]);
        }
        let tail_at = SIZE - self.tail.len() as u64;
        if end > tail_at {
            let from = offset.max(tail_at);
            let src = &self.tail[(from - tail_at) as usize..(end - tail_at) as usize];
            out[(from - offset) as usize..].copy_from_slice(src);
        }
        Ok(Cow::Owned(out))
    }
}

fn named(e: &Error) -> bool {
    e.rule().is_some() || matches!(e, Error::Unsupported(_))
}

fuzz_target!(|data: &[u8]| {
    let (head, tail) = data.split_at(data.len() / 2);
    let file = || Claimed {
        head,
        tail,
        read: Default::default(),
    };
    if let Err(e) = format::read_container_from(&file()) {
        assert!(named(&e), "{e}");
    }
    if let Err(e) = hurray::read_file_from(&file()) {
        assert!(named(&e), "{e}");
    }
    if let Err(e) = gguf::read_file_from(&file()) {
        assert!(named(&e), "{e}");
    }
    if let Err(e) = safetensors::read_header_from(&file()) {
        assert!(named(&e), "{e}");
    }
});
