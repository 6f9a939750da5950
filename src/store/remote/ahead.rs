//! Read-ahead: sequential readers followed per object and per open file
//! (a FUSE file handle, see `store::Reader`), and the window of blocks
//! fetched ahead of each (see [`Remote::read_ahead`]). Each open file has
//! streams of its own: two readers of one file, interleaved, each keep
//! theirs, and one that jumps about pushes out only its own. A walk across
//! the model's parts is followed per thread, since a loader opens one
//! tensor's file after another: the streams it makes for the next parts
//! are the thread's until an open file's read takes them up.

use std::ops::Range;

use super::grid::Grid;
use super::{Reach, Remote};

/// The owner of the streams thread `pid`'s walk makes: apart from every
/// file handle (a counter, far below 2^63).
fn walk_key(pid: u32) -> u64 {
    1 << 63 | u64::from(pid)
}

/// Makes room in `streams` (oldest first) for one more of `reader`'s: its
/// own oldest goes when it has [`STREAMS`], else the oldest of all when
/// the object has [`ALL_STREAMS`].
fn make_room(streams: &mut Vec<Stream>, reader: u64) {
    let mine = streams.iter().filter(|s| s.reader == reader).count();
    if mine >= STREAMS {
        if let Some(i) = streams.iter().position(|s| s.reader == reader) {
            streams.remove(i);
        }
    } else if streams.len() >= ALL_STREAMS {
        streams.remove(0);
    }
}

/// Most blocks a sequential reader is kept ahead by, when the block
/// cache is big enough (see [`Remote::most_ahead`]).
const AHEAD: u64 = 128;
/// Most and fewest blocks one read-ahead request asks for: a window is
/// fetched by several requests at once (as many as the object's pace
/// allows, see `pace`), each served block by block as it arrives; the
/// more at once, the smaller each, so that they fit the window.
const PIECE: u64 = 16;
const PIECE_MIN: u64 = 4;
/// Streams followed per open file (its own reads' and its walk's)...
const STREAMS: usize = 32;
/// ...and per object, of all open files together, the oldest going first.
const ALL_STREAMS: usize = 4 * STREAMS;
/// Threads whose walk across the parts is followed per object.
const WALKS: usize = 16;
/// Parts after the one being read that a walk fetches ahead, at most:
/// each gets a stream, and the reader keeps one. The walk is bounded by
/// blocks ([`AHEAD`]) before this for parts of 4 MiB or more. Six parts
/// ahead kept a model of 1-16 MiB tensors loaded in file order at 0.6x
/// of a link of 30 ms and 400 MB/s; 15 or 31 at 0.8-0.9x
/// (scripts/bench-remote-link.sh, 2026-12-04).
const WALK_PARTS: usize = STREAMS - 1;

/// A thread walking the parts in the object's order: the index (in
/// `Object::parts`) of the part it began last, and whether the one it
/// began before was the part just before that.
pub(super) struct Walk {
    pid: u32,
    last: Option<usize>,
    walking: bool,
}

/// A sequential reader of an open file (or a part a thread's walk fetches
/// ahead, see [`walk_key`]): the last block it read, how far ahead of it
/// to fetch, and where fetching ahead has got to.
#[derive(Clone, Copy)]
pub(super) struct Stream {
    reader: u64,
    grid: Grid,
    last: u64,
    window: u64,
    ahead_to: u64,
}

/// A part being read: its blocks on its grid, and where it begins.
pub(super) struct PartRead {
    pub(super) blocks: Range<u64>,
    pub(super) offset: u64,
}

impl Remote {
    /// Notes a read of blocks `first..=last`, of a part whose blocks are
    /// `part` when the caller knows it. A read of a part's first block
    /// starts a reader of the part at once: the rest of the part (up to
    /// [`AHEAD`] blocks) is fetched in the background by requests spread
    /// over as many as the object's pace allows, so a part costs one
    /// round trip and not one per block. Elsewhere, a reader that has read
    /// three blocks in a row is kept ahead by a window of blocks, which
    /// doubles with each block up to [`AHEAD`] blocks (as mountpoint-s3
    /// and hf-mount do). The window is topped up when less than half of it
    /// is left, by requests of [`PIECE_MIN`] to [`PIECE`] blocks. Others
    /// fetch only what they read. Nothing is fetched past the part. A read
    /// that `waits` for several blocks has those after its first fetched
    /// in the background while it fetches its first: at once, not one by
    /// one (a read at hand leaves them to the read that waits after it).
    /// An exact reader's reads (`Reader::exact`) fetch their own blocks and
    /// nothing ahead.
    pub(super) fn read_ahead(
        &self,
        grid: Grid,
        (first, last): (u64, u64),
        part: Option<PartRead>,
        reach: Reach,
    ) {
        let (reader, waits) = (reach.reader.handle, !reach.at_hand);
        let walker = walk_key(reach.reader.pid);
        let blocks = grid.count(self.len);
        let end = part.as_ref().map_or(blocks, |p| p.blocks.end.min(blocks));
        let starts = part.as_ref().is_some_and(|p| p.blocks.start == first) && !reach.reader.exact;
        let walk = (part.as_ref()).and_then(|p| self.walk_step(reach.reader.pid, p.offset, starts));
        let at_once = self.pace().limit();
        let most = self.most_ahead();
        let piece = (most / at_once as u64).clamp(PIECE_MIN, PIECE);
        let mut todo = Vec::new();
        {
            let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
            // A read that touches a stream's last block or the next one
            // continues it (a part need not start on a block, so its reads
            // may straddle two); the kernel may send a reader's reads a
            // little out of order, so one a block or two behind still is.
            // The open file's own, or one its thread's walk made.
            let near = |s: &Stream| {
                (s.reader == reader || s.reader == walker)
                    && s.grid == grid
                    && first <= s.last + 1
                    && last + 2 >= s.last
            };
            let s = match streams.iter().position(near) {
                Some(i) => {
                    let mut s = streams.remove(i);
                    s.reader = reader;
                    // A second block in a row may be chance (the model's
                    // header, then a part's start); a third is a reader.
                    if last > s.last {
                        s.window = (s.window * 2).clamp(1, most);
                    }
                    s.ahead_to = s.ahead_to.max(first + 1);
                    if waits {
                        self.take(grid, &mut s, last + 1, piece, at_once, &mut todo);
                    }
                    s.last = s.last.max(last);
                    s.ahead_to = s.ahead_to.max(s.last + 1);
                    let want = (s.last + 1 + s.window).min(end);
                    let exact = reach.reader.exact;
                    if !exact && s.window >= 2 && s.ahead_to - s.last - 1 <= s.window / 2 {
                        self.take(grid, &mut s, want, piece, at_once, &mut todo);
                    }
                    s
                }
                None => {
                    make_room(&mut streams, reader);
                    let mut s = Stream {
                        reader,
                        grid,
                        last,
                        window: 0,
                        ahead_to: first + 1,
                    };
                    if starts {
                        // A part read from its start: all of it, in pieces
                        // that keep every allowed request busy.
                        s.window = (end - first).min(most);
                        let rest = (first + s.window).saturating_sub(s.ahead_to);
                        let spread = rest.div_ceil(at_once as u64).clamp(1, piece);
                        let want = first + s.window;
                        self.take(grid, &mut s, want, spread, at_once, &mut todo);
                    }
                    if waits {
                        self.take(grid, &mut s, last + 1, piece, at_once, &mut todo);
                    }
                    // The read's own blocks are its, fetched or not (as for
                    // a stream continued above).
                    s.ahead_to = s.ahead_to.max(s.last + 1);
                    s
                }
            };
            let ahead = s.ahead_to - s.last - 1;
            streams.push(s); // most recent last
            if let Some(k) = walk {
                let s = (walker, k, ahead);
                self.walk_ahead(&mut streams, s, piece, at_once, &mut todo);
            }
        }
        self.spawn_fills(todo);
    }

    /// Most blocks a reader is kept ahead by: [`AHEAD`], or half the
    /// block cache when that is less, so that blocks fetched ahead are
    /// still held when their reader comes (`--cache-mib`).
    fn most_ahead(&self) -> u64 {
        AHEAD.min(self.blocks.budget() / super::BLOCK / 2).max(1)
    }

    /// Notes a read by thread `pid` of the part at `offset` (`starts`:
    /// from its start); returns its index in the object's parts while that
    /// thread walks them in order (it began this part right after the one
    /// before).
    fn walk_step(&self, pid: u32, offset: u64, starts: bool) -> Option<usize> {
        let parts = self.parts.get()?;
        let k = parts.binary_search_by_key(&offset, |p| p.0).ok()?;
        let mut walks = self.walks.lock().unwrap_or_else(|e| e.into_inner());
        let i = match walks.iter().position(|w| w.pid == pid) {
            Some(i) => i,
            None => {
                if walks.len() >= WALKS {
                    walks.remove(0);
                }
                walks.push(Walk {
                    pid,
                    last: None,
                    walking: false,
                });
                walks.len() - 1
            }
        };
        // Most recent last.
        let w = walks.remove(i);
        walks.push(w);
        let w = walks.last_mut().expect("pushed");
        if starts && w.last != Some(k) {
            w.walking = k > 0 && w.last == Some(k - 1);
            w.last = Some(k);
        }
        (w.walking && w.last == Some(k)).then_some(k)
    }

    /// For a walk (its streams' owner `reader`, a [`walk_key`]) in part `k`
    /// with `ahead` blocks of it fetched or asked for ahead: the parts
    /// after it, each on its own grid, until [`AHEAD`] blocks are ahead,
    /// [`WALK_PARTS`] parts, or every allowed request runs. Each gets a
    /// stream that the first read of the part continues.
    fn walk_ahead(
        &self,
        streams: &mut Vec<Stream>,
        (reader, k, ahead): (u64, usize, u64),
        piece: u64,
        at_once: usize,
        todo: &mut Vec<(Grid, u64, u64)>,
    ) {
        let Some(parts) = self.parts.get() else {
            return;
        };
        let most = self.most_ahead();
        let mut budget = most.saturating_sub(ahead);
        for &(offset, len) in parts.iter().skip(k + 1).take(WALK_PARTS) {
            if budget == 0 {
                break;
            }
            let (grid, blocks) = super::grid::of_blob(offset, len, self.len);
            let n = blocks.end - blocks.start;
            let mine = |s: &Stream| {
                s.reader == reader
                    && s.grid == grid
                    && s.last <= blocks.start + 1
                    && s.ahead_to >= blocks.start
            };
            let mut s = match streams.iter().position(mine) {
                Some(i) => streams.remove(i),
                None => Stream {
                    reader,
                    grid,
                    last: blocks.start,
                    window: n.min(most),
                    ahead_to: blocks.start,
                },
            };
            let want = blocks.end.min(s.ahead_to + budget);
            let busy = !self.take(grid, &mut s, want, piece, at_once, todo);
            make_room(streams, reader);
            streams.insert(streams.len().saturating_sub(1), s);
            budget = budget.saturating_sub(n);
            if busy {
                break;
            }
        }
    }

    /// Takes pieces of at most `piece` blocks from `s.ahead_to` up to
    /// `want`, while fewer than `at_once` read-ahead requests run; false
    /// when they all run before `want`.
    fn take(
        &self,
        grid: Grid,
        s: &mut Stream,
        want: u64,
        piece: u64,
        at_once: usize,
        todo: &mut Vec<(Grid, u64, u64)>,
    ) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        while s.ahead_to < want && self.ahead.fetch_add(1, Relaxed) < at_once {
            let n = (want - s.ahead_to).min(piece);
            todo.push((grid, s.ahead_to, n));
            s.ahead_to += n;
        }
        if s.ahead_to < want {
            // The loop's last count found every request busy.
            self.ahead.fetch_sub(1, Relaxed);
            return false;
        }
        true
    }

    /// Fetches each `(grid, from, count)` run of blocks in a thread of its
    /// own.
    fn spawn_fills(&self, todo: Vec<(Grid, u64, u64)>) {
        use std::sync::atomic::Ordering::Relaxed;
        for (grid, from, count) in todo {
            log::debug!(
                "{}: reading ahead blocks [{from}, {})",
                self.url,
                from + count
            );
            let object = self.0.clone();
            let spawned = std::thread::Builder::new()
                .name("ztfs-ahead".into())
                .spawn(move || {
                    object.fill(grid, from, count);
                    object.ahead.fetch_sub(1, Relaxed);
                });
            if spawned.is_err() {
                self.ahead.fetch_sub(1, Relaxed);
            }
        }
    }
}
