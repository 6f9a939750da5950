//! Reads checked against the bytes they must return: one pread judged, and
//! the reader loops the fault tests run in threads.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

use crate::common::Lcg;
use crate::models;

/// How a reader's loop ended, when it did not find a wrong byte.
#[derive(Debug)]
pub enum End {
    /// Told to stop.
    Stopped,
    /// A call failed.
    Failed(io::Error),
}

/// `pread(fd, size, offset)` of a file whose bytes should be `want`,
/// continued after a short count as `read(2)` callers do: Ok with the bytes
/// read, or the error that ended it (a read that fails after some bytes
/// returns those first, as the page cache does when a later page cannot
/// be read). Wrong bytes are an `Err(String)` naming the first difference;
/// so is an end of file where the file has bytes: it would tell the reader
/// that the part ends where it does not.
pub fn pread_checked(
    f: &File,
    want: &[u8],
    offset: u64,
    size: usize,
) -> Result<io::Result<usize>, String> {
    let len = want.len() as u64;
    let (lo, hi) = (offset.min(len), (offset + size as u64).min(len));
    let expect = &want[lo as usize..hi as usize];
    let mut buf = vec![0u8; size];
    let mut n = 0;
    let failed = loop {
        match f.read_at(&mut buf[n..], offset + n as u64) {
            Ok(0) => break None,
            Ok(k) => n += k,
            Err(e) => break Some(e),
        }
    };
    let what = format!("pread({offset}, {size})");
    if let Some(i) = buf[..n.min(expect.len())]
        .iter()
        .zip(expect)
        .position(|(a, b)| a != b)
    {
        return Err(format!(
            "{what}: byte {} is {:#04x}, the original is {:#04x}",
            offset + i as u64,
            buf[i],
            expect[i]
        ));
    }
    match failed {
        Some(e) if n < expect.len() => Ok(Err(e)),
        _ if n == expect.len() => Ok(Ok(n)),
        _ => Err(format!(
            "{what}: {n} bytes until end of file, the file holds {} there",
            expect.len()
        )),
    }
}

/// How a reader treats its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Opens the file once and preads it until stopped or failed.
    Hold,
    /// Opens the file, preads it 8 times, closes it, and again.
    Reopen,
}

/// Reads `path` (whose bytes are `want`) in random ranges of up to
/// `max_size` bytes until `stop` or a failed call; `reads` counts the
/// successful ones. Wrong bytes end it with `Err`.
pub fn read_loop(
    path: &Path,
    want: &[u8],
    style: Style,
    seed: u64,
    max_size: u64,
    stop: &AtomicBool,
    reads: &AtomicU64,
) -> Result<End, String> {
    let mut rng = Lcg::new(seed);
    let mut held: Option<File> = None;
    loop {
        if stop.load(SeqCst) {
            return Ok(End::Stopped);
        }
        let f = match held.take() {
            Some(f) => f,
            None => match File::open(path) {
                Ok(f) => f,
                Err(e) => return Ok(End::Failed(e)),
            },
        };
        for _ in 0..8 {
            let offset = rng.below(want.len() as u64);
            let size = 1 + rng.below(max_size) as usize;
            if let Err(e) = pread_checked(&f, want, offset, size)? {
                return Ok(End::Failed(e));
            }
            reads.fetch_add(1, SeqCst);
        }
        if style == Style::Hold {
            held = Some(f);
        }
    }
}

/// Reads of up to 128 KiB, half anywhere in the part and half around the
/// cut points, until stopped; EIO is a fine answer, any other error or a
/// wrong byte ends it with `Err`. Returns how many reads succeeded and how
/// many failed with EIO.
pub fn cut_reader(
    f: &File,
    want: &[u8],
    cuts: &[u64],
    seed: u64,
    stop: &std::sync::atomic::AtomicBool,
    reads: &std::sync::atomic::AtomicU64,
) -> Result<(u64, u64), String> {
    let mut rng = Lcg::new(seed);
    let (mut ok, mut eio) = (0, 0);
    while !stop.load(SeqCst) {
        let size = 1 + rng.below(128 << 10) as usize;
        let offset = match rng.below(2) {
            0 => rng.below(want.len() as u64),
            _ => {
                (cuts[rng.below(cuts.len() as u64) as usize] + rng.below(8192)).saturating_sub(4096)
            }
        };
        match pread_checked(f, want, offset, size)? {
            Ok(_) => ok += 1,
            Err(e) if e.raw_os_error() == Some(libc::EIO) => eio += 1,
            Err(e) => return Err(format!("pread({offset}, {size}): {e}")),
        }
        reads.fetch_add(1, SeqCst);
    }
    Ok((ok, eio))
}

/// Reader 0 reads the first 256 MiB of the view in order, 1 MiB at a
/// time; the others read 64 ranges each: every other one random, of up to
/// 1 MiB, and the rest the first 4 KiB of a random row, which hold that
/// row's first value. Every byte is checked against the model: values
/// where placed, zeros elsewhere.
pub fn view_reader(
    view: &Path,
    model: &models::SparseModel,
    i: u64,
    reads: &std::sync::atomic::AtomicU64,
) -> Result<(), String> {
    let f = File::open(view).map_err(|e| format!("open: {e}"))?;
    let len = model.view_len();
    let mut rng = Lcg::new(0xD1E5 + i);
    let ranges: Vec<(u64, u64)> = match i {
        0 => (0..256).map(|k| (k << 20, 1 << 20)).collect(),
        _ => (0..64)
            .map(|k| match k % 2 {
                0 => (rng.below(len), 1 + rng.below(1 << 20)),
                _ => (rng.below(model.rows) * model.cols * 4, 4096),
            })
            .collect(),
    };
    for (offset, size) in ranges {
        let want = model.expected(offset, size);
        let mut buf = vec![0u8; size as usize];
        let n =
            read_full(&f, &mut buf, offset).map_err(|e| format!("pread({offset}, {size}): {e}"))?;
        if buf[..n] != want[..] {
            let at = buf.iter().zip(&want).position(|(a, b)| a != b);
            return Err(format!(
                "pread({offset}, {size}): {n} bytes, {} expected; first difference at {at:?}",
                want.len()
            ));
        }
        reads.fetch_add(1, SeqCst);
    }
    Ok(())
}

/// Reads until `buf` is full or the file ends.
fn read_full(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], offset + n as u64)? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}
