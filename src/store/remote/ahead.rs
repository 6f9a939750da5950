//! Read-ahead: sequential readers followed per object, and the window of
//! blocks fetched ahead of each (see [`Remote::read_ahead`]).

use super::grid::Grid;
use super::Remote;

/// Most blocks a sequential reader is kept ahead by.
const AHEAD: u64 = 64;
/// Most blocks one read-ahead request asks for: a window is fetched by
/// several requests at once, each served block by block as it arrives.
const PIECE: u64 = 16;
/// Sequential readers followed per object, and read-ahead requests at once.
const STREAMS: usize = 8;
const AHEAD_THREADS: usize = 4;

/// A sequential reader: the last block it read, how far ahead of it to
/// fetch, and where fetching ahead has got to.
#[derive(Clone, Copy)]
pub(super) struct Stream {
    grid: Grid,
    last: u64,
    window: u64,
    ahead_to: u64,
}

impl Remote {
    /// Notes a read of blocks `first..=last`; a reader that has read three
    /// blocks in a row is kept ahead by a window of blocks fetched in the
    /// background, which doubles with each block up to [`AHEAD`] blocks (as
    /// mountpoint-s3 and hf-mount do). The window is topped up when less
    /// than half of it is left, by requests of at most [`PIECE`] blocks,
    /// [`AHEAD_THREADS`] of them at once. Others fetch only what they read.
    pub(super) fn read_ahead(&self, grid: Grid, first: u64, last: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let blocks = grid.count(self.len);
        let mut todo = Vec::new();
        {
            let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
            // A read that touches a stream's last block or the next one
            // continues it (a part need not start on a block, so its reads
            // may straddle two); the kernel may send a reader's reads a
            // little out of order, so one a block or two behind still is.
            let near = |s: &Stream| s.grid == grid && first <= s.last + 1 && last + 2 >= s.last;
            let Some(i) = streams.iter().position(near) else {
                if streams.len() >= STREAMS {
                    streams.remove(0);
                }
                streams.push(Stream {
                    grid,
                    last,
                    window: 0,
                    ahead_to: last + 1,
                });
                return;
            };
            let mut s = streams.remove(i);
            // A second block in a row may be chance (the model's header,
            // then a part's start); a third is a reader.
            if last > s.last {
                s.window = (s.window * 2).clamp(1, AHEAD);
            }
            s.last = s.last.max(last);
            s.ahead_to = s.ahead_to.max(s.last + 1);
            let want = (s.last + 1 + s.window).min(blocks);
            if s.window >= 2 && s.ahead_to - s.last - 1 <= s.window / 2 {
                while s.ahead_to < want && self.ahead.fetch_add(1, Relaxed) < AHEAD_THREADS {
                    let n = (want - s.ahead_to).min(PIECE);
                    todo.push((s.ahead_to, n));
                    s.ahead_to += n;
                }
                if s.ahead_to < want {
                    // The loop's last count found every thread busy.
                    self.ahead.fetch_sub(1, Relaxed);
                }
            }
            streams.push(s); // most recent last
        }
        for (from, count) in todo {
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
