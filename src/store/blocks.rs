//! The block cache of remote objects: fixed-size blocks of an object,
//! fetched once however many readers want one at the same time, and kept
//! within a byte budget, the least recently used block going first.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::Result;

/// Cached blocks of one object.
pub struct Blocks {
    inner: Mutex<Inner>,
    budget: u64,
}

#[derive(Default)]
struct Inner {
    slots: HashMap<u64, Arc<Slot>>,
    /// Bytes held by filled slots.
    held: u64,
    clock: u64,
}

#[derive(Default)]
struct Slot {
    /// Locked while the block is fetched: a second reader waits for the
    /// first one's request instead of making its own.
    data: Mutex<Option<Arc<Vec<u8>>>>,
    used: AtomicU64,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Blocks {
    /// An empty cache that keeps at most `budget` bytes (and always the
    /// block just fetched).
    pub fn new(budget: u64) -> Blocks {
        Blocks {
            inner: Mutex::new(Inner::default()),
            budget,
        }
    }

    /// Block `index`, from the cache or from `fetch`. A failed fetch is
    /// not remembered: the next reader tries again.
    pub fn get(&self, index: u64, fetch: impl FnOnce() -> Result<Vec<u8>>) -> Result<Arc<Vec<u8>>> {
        let slot = {
            let mut inner = locked(&self.inner);
            inner.clock += 1;
            let slot = inner.slots.entry(index).or_default().clone();
            slot.used.store(inner.clock, Ordering::Relaxed);
            slot
        };
        let mut data = locked(&slot.data);
        if let Some(d) = &*data {
            return Ok(d.clone());
        }
        match fetch() {
            Ok(bytes) => {
                let bytes = Arc::new(bytes);
                *data = Some(bytes.clone());
                drop(data);
                self.account(index, bytes.len() as u64);
                Ok(bytes)
            }
            Err(e) => {
                drop(data);
                self.forget_empty(&mut locked(&self.inner), index, &slot);
                Err(e)
            }
        }
    }

    /// Fetches the run of blocks from `first` on, up to `max` of them,
    /// that no one holds or fetches, with one call of `fetch(count)`,
    /// which returns their bytes back to back (the last block of the
    /// object may be short: `block` is the others' size). Readers of those
    /// blocks wait for it instead of asking themselves. For read-ahead:
    /// a failure leaves the blocks to their readers.
    pub fn fill_run(
        &self,
        first: u64,
        max: u64,
        block: u64,
        fetch: impl FnOnce(u64) -> Result<Vec<u8>>,
    ) {
        let slots: Vec<Arc<Slot>> = {
            let mut inner = locked(&self.inner);
            inner.clock += 1;
            let clock = inner.clock;
            (first..first + max)
                .map(|i| {
                    let s = inner.slots.entry(i).or_default().clone();
                    s.used.store(clock, Ordering::Relaxed);
                    s
                })
                .collect()
        };
        // The free prefix of the run, locked.
        let mut guards = Vec::new();
        for s in &slots {
            match s.data.try_lock() {
                Ok(g) if g.is_none() => guards.push(g),
                _ => break,
            }
        }
        if guards.is_empty() {
            return;
        }
        let n = guards.len() as u64;
        let Ok(bytes) = fetch(n) else {
            drop(guards);
            let mut inner = locked(&self.inner);
            for (i, s) in (first..).zip(&slots) {
                self.forget_empty(&mut inner, i, s);
            }
            return;
        };
        let mut filled = 0;
        for (k, mut g) in guards.into_iter().enumerate() {
            let at = (k as u64 * block) as usize;
            let piece = &bytes[at.min(bytes.len())..(at + block as usize).min(bytes.len())];
            *g = Some(Arc::new(piece.to_vec()));
            filled += piece.len() as u64;
        }
        self.account(first + n - 1, filled);
    }

    /// Takes `slot` out of the map as block `index` if it is still there
    /// and empty (its fetch failed): a failure is not remembered. A slot
    /// locked by a fetch now is left to it.
    fn forget_empty(&self, inner: &mut Inner, index: u64, slot: &Arc<Slot>) {
        let empty = (inner.slots.get(&index))
            .is_some_and(|s| Arc::ptr_eq(s, slot) && s.data.try_lock().is_ok_and(|d| d.is_none()));
        if empty {
            inner.slots.remove(&index);
        }
    }

    /// Counts a filled block, then drops the least recently used filled
    /// blocks other than `keep` until the cache is within its budget. A
    /// reader holding a dropped block keeps its bytes until it is done.
    fn account(&self, keep: u64, len: u64) {
        let mut inner = locked(&self.inner);
        inner.held += len;
        while inner.held > self.budget {
            let victim = (inner.slots.iter())
                .filter(|(&i, _)| i != keep)
                .filter_map(|(&i, s)| {
                    // A slot being fetched holds its lock; it is not counted yet.
                    let len = s.data.try_lock().ok()?.as_ref()?.len() as u64;
                    Some((s.used.load(Ordering::Relaxed), i, len))
                })
                .min();
            let Some((_, i, len)) = victim else {
                break;
            };
            inner.slots.remove(&i);
            inner.held -= len;
        }
    }

    /// Bytes held now.
    #[cfg(test)]
    pub fn held(&self) -> u64 {
        locked(&self.inner).held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_fetched_once_and_the_least_recently_used_goes_first() {
        let blocks = Blocks::new(3 * 10);
        let fetches = AtomicU64::new(0);
        let get = |i: u64| {
            blocks
                .get(i, || {
                    fetches.fetch_add(1, Ordering::Relaxed);
                    Ok(vec![i as u8; 10])
                })
                .unwrap()
        };
        for i in 0..3 {
            assert_eq!(*get(i), vec![i as u8; 10]);
        }
        get(0); // 1 is now the least recently used
        assert_eq!(fetches.load(Ordering::Relaxed), 3);
        get(3);
        assert_eq!(blocks.held(), 30);
        get(0);
        get(2);
        assert_eq!(fetches.load(Ordering::Relaxed), 4, "0 and 2 stayed");
        get(1);
        assert_eq!(fetches.load(Ordering::Relaxed), 5, "1 was dropped");
    }

    #[test]
    fn a_run_is_fetched_in_one_call_and_stops_at_a_block_already_held() {
        let blocks = Blocks::new(100);
        blocks.get(3, || Ok(vec![3; 4])).unwrap();
        let mut asked = None;
        blocks.fill_run(0, 5, 4, |n| {
            asked = Some(n);
            Ok((0..n * 4).map(|i| (i / 4) as u8).collect())
        });
        assert_eq!(asked, Some(3), "blocks 0, 1, 2: block 3 is held");
        for i in 0..4u64 {
            let b = blocks.get(i, || panic!("block {i} fetched again")).unwrap();
            assert_eq!(*b, vec![i as u8; 4]);
        }
        blocks.fill_run(4, 2, 4, |n| {
            assert_eq!(n, 2);
            Err(crate::error::Error::Unsupported("down".into()))
        });
        assert_eq!(
            *blocks.get(4, || Ok(vec![7])).unwrap(),
            vec![7],
            "left to the reader"
        );
    }

    #[test]
    fn a_failed_fetch_is_tried_again() {
        let blocks = Blocks::new(100);
        let e = blocks.get(7, || Err(crate::error::Error::Unsupported("down".into())));
        assert!(e.is_err());
        assert_eq!(*blocks.get(7, || Ok(vec![1])).unwrap(), vec![1]);
    }

    #[test]
    fn concurrent_readers_of_one_block_make_one_fetch() {
        let blocks = Blocks::new(100);
        let fetches = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    blocks
                        .get(1, || {
                            fetches.fetch_add(1, Ordering::Relaxed);
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            Ok(vec![9; 4])
                        })
                        .unwrap()
                });
            }
        });
        assert_eq!(fetches.load(Ordering::Relaxed), 1);
    }
}
