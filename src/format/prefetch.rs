//! Small ranges fetched before a parser asks for them, several at a time,
//! for a file read by URL: each [`Ranges::get`] of a remote store is a
//! round trip for the 1 MiB block around it, so a parser reading a few
//! bytes here and there across a large file (a Hurray file's descriptors
//! and the padding around them) would wait for one block per read. Given
//! the ranges it will read (from an index, before it reads them),
//! [`Prefetched`] fetches each by [`Ranges::get_small`] (just its bytes),
//! up to [`AT_ONCE`] at a time, and serves the parser's reads inside them
//! from memory; any other read goes to the file as before.
//!
//! Ranges are hints: a wrong one (a hostile index) costs at most a
//! bounded fetch ([`MOST`] bytes in all, each range at most [`LONGEST`]),
//! never a wrong byte, since a read is served from a prefetched range only
//! when it lies wholly inside it.

use std::borrow::Cow;

use crate::error::Result;
use crate::format::Ranges;

/// Small reads made at once from a file not in memory.
pub const AT_ONCE: usize = 16;
/// Longest range fetched ahead; a longer one is left to the file's reads.
pub const LONGEST: u64 = 256 << 10;
/// Most bytes fetched ahead in all; ranges past it are left to the file.
pub const MOST: u64 = 64 << 20;
/// Where more than [`DENSE`] ranges start within one span of this many
/// bytes, one read of the span (a remote store's block) beats a request
/// each: those ranges are left to the file's reads.
pub const SPAN: u64 = 1 << 20;
/// See [`SPAN`].
pub const DENSE: usize = 8;

/// A file, with some of its ranges already in memory.
pub struct Prefetched<'a> {
    file: &'a (dyn Ranges + Sync),
    /// Disjoint ranges by start: (start, bytes).
    held: Vec<(u64, Vec<u8>)>,
}

impl<'a> Prefetched<'a> {
    /// `file` with the ranges `(offset, len)` fetched ahead, as the module
    /// says which: merged where they touch, inside the file, not too long,
    /// not too dense, within the budget. An error when a fetch fails.
    pub fn new(file: &'a (dyn Ranges + Sync), ranges: &[(u64, u64)]) -> Result<Prefetched<'a>> {
        let wanted = plan(file.size(), ranges);
        let fetched = at_once(wanted.len(), &|i| {
            let (start, end) = wanted[i];
            file.get_small(start, end - start).map(Cow::into_owned)
        });
        let mut held = Vec::with_capacity(wanted.len());
        for (&(start, _), bytes) in wanted.iter().zip(fetched) {
            held.push((start, bytes?));
        }
        Ok(Prefetched { file, held })
    }

    /// How many ranges are held.
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

/// The ranges to fetch, as `[start, end)`, disjoint and by start.
fn plan(size: u64, ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut spans: Vec<(u64, u64)> = (ranges.iter())
        .filter_map(|&(off, len)| Some((off, off.checked_add(len)?)))
        .filter(|&(start, end)| start < end && end <= size && end - start <= LONGEST)
        .collect();
    spans.sort_unstable();
    // Touching or overlapping ranges merge while the whole stays within
    // LONGEST; a read lies in one asked range, so in one merged range.
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 && end.max(last.1) - last.0 <= LONGEST => {
                last.1 = last.1.max(end)
            }
            _ => merged.push((start, end)),
        }
    }
    // Dense regions: count the ranges starting in each span.
    let mut keep = vec![true; merged.len()];
    let mut i = 0;
    while i < merged.len() {
        let span = merged[i].0 / SPAN;
        let j = i + merged[i..].partition_point(|r| r.0 / SPAN == span);
        if j - i > DENSE {
            keep[i..j].fill(false);
        }
        i = j;
    }
    let mut total = 0;
    let mut wanted = Vec::new();
    for (r, kept) in merged.into_iter().zip(keep) {
        if kept && total + (r.1 - r.0) <= MOST {
            total += r.1 - r.0;
            wanted.push(r);
        }
    }
    wanted
}

impl Ranges for Prefetched<'_> {
    fn size(&self) -> u64 {
        self.file.size()
    }

    fn get(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        let i = self.held.partition_point(|(start, _)| *start <= offset);
        if let Some((start, bytes)) = i.checked_sub(1).map(|i| &self.held[i]) {
            let at = offset - start;
            if at
                .checked_add(len)
                .is_some_and(|end| end <= bytes.len() as u64)
            {
                return Ok(Cow::Borrowed(&bytes[at as usize..(at + len) as usize]));
            }
        }
        self.file.get(offset, len)
    }

    fn get_small(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        self.file.get_small(offset, len)
    }
}

/// `f` of `0..n`, up to [`AT_ONCE`] at a time, in order.
pub fn at_once<T: Send>(n: usize, f: &(dyn Fn(usize) -> T + Sync)) -> Vec<T> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<T>>> =
        (0..n).map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..AT_ONCE.min(n) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = f(i);
                *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        }
    });
    (slots.into_iter())
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .map(|r| r.expect("every index is taken by one thread"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touching_ranges_merge_and_long_dense_or_outside_ones_are_left() {
        let size = 100 << 20;
        // Two touching ranges become one; one past the file's end and an
        // empty one are dropped; an overlong one is left to the file.
        let got = plan(
            size,
            &[
                (10, 5),
                (15, 5),
                (size - 1, 2),
                (7, 0),
                (1 << 20, LONGEST + 1),
            ],
        );
        assert_eq!(got, vec![(10, 20)]);
        // Touching ranges stop merging at LONGEST.
        let half = LONGEST / 2;
        let got = plan(size, &[(0, half), (half, half), (LONGEST, 1)]);
        assert_eq!(got, vec![(0, LONGEST), (LONGEST, LONGEST + 1)]);
        // More than DENSE starting in one span: all of that span's left.
        let dense: Vec<(u64, u64)> = (0..DENSE as u64 + 1)
            .map(|k| ((2 << 20) + 100 * k, 10))
            .collect();
        let sparse: Vec<(u64, u64)> = (0..DENSE as u64)
            .map(|k| ((3 << 20) + 100 * k, 10))
            .collect();
        let got = plan(size, &[dense, sparse.clone()].concat());
        let want: Vec<(u64, u64)> = sparse.iter().map(|&(o, n)| (o, o + n)).collect();
        assert_eq!(got, want);
        // An offset whose end overflows is dropped, not wrapped.
        assert_eq!(plan(size, &[(u64::MAX - 1, 5)]), vec![]);
    }

    #[test]
    fn the_budget_bounds_what_is_fetched() {
        let size = 1 << 40;
        let many: Vec<(u64, u64)> = (0..1000u64).map(|k| (k * (4 << 20), LONGEST)).collect();
        let got = plan(size, &many);
        assert_eq!(got.len() as u64, MOST / LONGEST);
    }

    /// A file that counts its reads of each kind.
    struct Counted<'a> {
        bytes: &'a [u8],
        gets: std::sync::atomic::AtomicUsize,
        smalls: std::sync::atomic::AtomicUsize,
    }

    impl Ranges for Counted<'_> {
        fn size(&self) -> u64 {
            self.bytes.len() as u64
        }
        fn get(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
            self.gets.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ranges::get(&self.bytes, offset, len)
        }
        fn get_small(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
            self.smalls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ranges::get(&self.bytes, offset, len)
        }
    }

    #[test]
    fn reads_inside_a_held_range_come_from_it_and_others_from_the_file() {
        use std::sync::atomic::Ordering::Relaxed;
        let bytes: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        let file = Counted {
            bytes: &bytes,
            gets: 0.into(),
            smalls: 0.into(),
        };
        let p = Prefetched::new(&file, &[(100, 50), (5000, 10)]).unwrap();
        assert_eq!((p.held(), file.smalls.load(Relaxed)), (2, 2));
        let each = |reads: &[(u64, u64)]| {
            for &(off, len) in reads {
                let want = &bytes[off as usize..(off + len) as usize];
                assert_eq!(&*p.get(off, len).unwrap(), want, "{off} +{len}");
            }
        };
        each(&[(100, 50), (120, 10), (149, 1), (5005, 5)]);
        assert_eq!(file.gets.load(Relaxed), 0, "reads inside held ranges");
        each(&[(140, 20), (0, 10), (5005, 6), (9990, 10), (99, 2)]);
        assert_eq!(file.gets.load(Relaxed), 5, "reads reaching outside them");
        assert!(p.get(9995, 10).is_err());
    }
}
