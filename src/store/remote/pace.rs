//! How many read-ahead requests an object keeps in flight: as many as make
//! it faster. One connection to object storage carries tens of MB/s and
//! each answer starts tens of milliseconds late, so a link's speed comes
//! from many ranged requests at once; how many depends on the link, which
//! no constant knows. The object starts at [`MIN`] and, over intervals of
//! [`INTERVAL`], raises the limit by half while readers wait for blocks
//! and the bytes read ahead arrive faster than in the interval before
//! (by [`GAIN`]); when a raise brings no gain, it stays where it is. Up
//! to [`MAX`].

use std::time::{Duration, Instant};

/// Read-ahead requests at once to start with: on a link of 30 ms, 50
/// MB/s per connection and 400 MB/s in all (about 346 measured), a model
/// of 100 tensors loaded in file order came at 222-306 MB/s in five runs
/// from 4, at 309-324 MB/s in three from 8 (2026-12-04; the limit then
/// rose by half at most once or twice in a load of 3 s).
pub(super) const MIN: usize = 8;
/// The most read-ahead requests at once.
pub(super) const MAX: usize = 32;
/// How long a measure of the arrival rate runs.
const INTERVAL: Duration = Duration::from_millis(250);
/// The rise of the rate that counts as faster.
const GAIN: f64 = 1.1;

pub(super) struct Pace {
    limit: usize,
    /// The current interval: its start, bytes arrived, whether a reader
    /// waited for a block in it.
    since: Option<Instant>,
    bytes: u64,
    stalled: bool,
    /// The rate of the interval before, bytes/s.
    last: f64,
}

impl Pace {
    pub(super) fn new() -> Pace {
        Pace {
            limit: MIN,
            since: None,
            bytes: 0,
            stalled: false,
            last: 0.0,
        }
    }

    /// Read-ahead requests allowed at once now.
    pub(super) fn limit(&self) -> usize {
        self.limit
    }

    /// A reader waited for a block: reading ahead is behind.
    pub(super) fn stalled(&mut self) {
        self.stalled = true;
    }

    /// `n` bytes read ahead arrived at `now`.
    pub(super) fn arrived(&mut self, n: u64, now: Instant) {
        let since = *self.since.get_or_insert(now);
        self.bytes += n;
        let dt = now.saturating_duration_since(since);
        if dt < INTERVAL {
            return;
        }
        let rate = self.bytes as f64 / dt.as_secs_f64();
        if self.stalled && rate > self.last * GAIN {
            self.limit = (self.limit + self.limit / 2).min(MAX);
        }
        self.last = rate;
        self.since = Some(now);
        self.bytes = 0;
        self.stalled = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `pace` one interval at `rate` bytes/s, with or without a
    /// reader waiting; returns the limit after it.
    fn interval(pace: &mut Pace, t: &mut Instant, rate: f64, stalled: bool) -> usize {
        let step = INTERVAL / 10;
        for _ in 0..10 {
            if stalled {
                pace.stalled();
            }
            *t += step;
            pace.arrived((rate * step.as_secs_f64()) as u64, *t);
        }
        pace.limit()
    }

    /// A link where each request adds 50 MB/s up to 400 MB/s: the limit
    /// grows while the rate does, then stays.
    #[test]
    fn the_limit_grows_while_the_rate_does_then_stays() {
        let mut pace = Pace::new();
        let mut t = Instant::now();
        pace.arrived(0, t);
        let link = |limit: usize| (limit as f64 * 50e6).min(400e6);
        let mut seen = vec![pace.limit()];
        for _ in 0..12 {
            let l = pace.limit();
            seen.push(interval(&mut pace, &mut t, link(l), true));
        }
        let last = *seen.last().unwrap();
        assert!((8..=13).contains(&last), "{seen:?}");
        // It stopped: the last raises brought nothing.
        assert_eq!(seen[seen.len() - 4..], [last; 4], "{seen:?}");
    }

    /// No reader waiting: no raise, however fast the bytes come.
    #[test]
    fn no_raise_while_readers_do_not_wait() {
        let mut pace = Pace::new();
        let mut t = Instant::now();
        pace.arrived(0, t);
        for k in 1..10 {
            assert_eq!(interval(&mut pace, &mut t, k as f64 * 100e6, false), MIN);
        }
    }

    /// Never past MAX.
    #[test]
    fn never_past_the_most() {
        let mut pace = Pace::new();
        let mut t = Instant::now();
        pace.arrived(0, t);
        let mut rate = 1e6;
        for _ in 0..40 {
            rate *= 2.0;
            interval(&mut pace, &mut t, rate, true);
        }
        assert_eq!(pace.limit(), MAX);
    }
}
