//! The block cache of remote objects: fixed-size blocks of objects,
//! fetched once however many readers want one at the same time, and kept
//! within a byte budget, the least recently used block going first. One
//! cache serves every object of a process (each names its blocks with a
//! [`Key`] of its own), so the budget bounds them all together.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The error of a fetch that failed lately, for a reader of its block.
fn failed_lately(why: &str) -> Error {
    Error::io(
        why.to_string(),
        std::io::Error::other(format!(
            "failed less than {} s ago; tried again after that",
            FAILED_FOR.as_secs()
        )),
    )
}

/// A block's name: its object's number in the high 64 bits, the block's
/// name within the object in the low ones.
pub type Key = u128;

/// Cached blocks.
pub struct Blocks {
    inner: Mutex<Inner>,
    budget: AtomicU64,
    /// Buffers of dropped blocks, for the next fetches: a fresh buffer
    /// costs a page fault and a cleared page per 4 KiB written.
    spare: Mutex<Vec<Vec<u8>>>,
}

/// Most spare buffers kept.
const SPARE: usize = 16;

#[derive(Default)]
struct Inner {
    slots: HashMap<Key, Arc<Slot>>,
    /// Bytes held by filled slots.
    held: u64,
    clock: u64,
}

#[derive(Default)]
struct Slot {
    /// Locked while the block is fetched: a second reader waits for the
    /// first one's request instead of making its own.
    data: Mutex<State>,
    used: AtomicU64,
}

/// What a slot holds.
#[derive(Default)]
enum State {
    #[default]
    Empty,
    Held(Arc<Vec<u8>>),
    /// The last fetch failed, when and why: the readers that waited for it,
    /// and those that come within [`FAILED_FOR`], get its error instead of
    /// each making a request of its own (against a server that hangs, each
    /// would wait out the client's timeouts one after another).
    Failed(Instant, Arc<str>),
}

impl State {
    fn held(&self) -> Option<&Arc<Vec<u8>>> {
        match self {
            State::Held(d) => Some(d),
            _ => None,
        }
    }

    /// True when a fetch may fill it.
    fn wants_fetch(&self) -> bool {
        match self {
            State::Empty => true,
            State::Held(_) => false,
            State::Failed(at, _) => at.elapsed() >= FAILED_FOR,
        }
    }
}

/// How long a failed fetch answers for its block.
const FAILED_FOR: Duration = Duration::from_secs(1);

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Blocks {
    /// An empty cache that keeps at most `budget` bytes (and always the
    /// block just fetched).
    pub fn new(budget: u64) -> Blocks {
        Blocks {
            inner: Mutex::new(Inner::default()),
            budget: AtomicU64::new(budget),
            spare: Mutex::new(Vec::new()),
        }
    }

    /// Keeps at most `budget` bytes from now on (fewer are dropped as
    /// blocks arrive).
    pub fn set_budget(&self, budget: u64) {
        self.budget.store(budget, Ordering::Relaxed);
    }

    /// The budget in bytes.
    pub fn budget(&self) -> u64 {
        self.budget.load(Ordering::Relaxed)
    }

    /// An empty buffer for a block's bytes: a dropped block's, or new.
    pub fn buffer(&self) -> Vec<u8> {
        locked(&self.spare).pop().unwrap_or_default()
    }

    /// Keeps the buffer of `bytes`, a block the cache has let go, for a
    /// next fetch, when no one else holds it.
    pub fn give_back(&self, bytes: Arc<Vec<u8>>) {
        if let Ok(buf) = Arc::try_unwrap(bytes) {
            self.spare(buf);
        }
    }

    fn spare(&self, mut buf: Vec<u8>) {
        let mut spare = locked(&self.spare);
        if spare.len() < SPARE {
            buf.clear();
            spare.push(buf);
        }
    }

    /// Block `index`, from the cache or from `fetch`. A failed fetch
    /// answers its waiters, and readers for [`FAILED_FOR`] after it; then
    /// the next reader tries again.
    pub fn get(
        &self,
        index: Key,
        fetch: impl FnOnce() -> Result<Arc<Vec<u8>>>,
    ) -> Result<Arc<Vec<u8>>> {
        self.get_noting(index, fetch).map(|(b, _)| b)
    }

    /// [`Blocks::get`], and whether the block was not ready at once: its
    /// caller waited for another's fetch or made its own.
    pub fn get_noting(
        &self,
        index: Key,
        fetch: impl FnOnce() -> Result<Arc<Vec<u8>>>,
    ) -> Result<(Arc<Vec<u8>>, bool)> {
        let slot = {
            let mut inner = locked(&self.inner);
            inner.clock += 1;
            let slot = inner.slots.entry(index).or_default().clone();
            slot.used.store(inner.clock, Ordering::Relaxed);
            slot
        };
        let (mut data, waited) = match slot.data.try_lock() {
            Ok(g) => (g, false),
            Err(std::sync::TryLockError::Poisoned(e)) => (e.into_inner(), false),
            Err(std::sync::TryLockError::WouldBlock) => (locked(&slot.data), true),
        };
        match &*data {
            State::Held(d) => return Ok((d.clone(), waited)),
            State::Failed(at, why) if at.elapsed() < FAILED_FOR => {
                return Err(failed_lately(why));
            }
            _ => {}
        }
        match fetch() {
            Ok(bytes) => {
                *data = State::Held(bytes.clone());
                drop(data);
                self.account(index, bytes.len() as u64);
                Ok((bytes, true))
            }
            Err(e) => {
                *data = State::Failed(Instant::now(), e.to_string().into());
                Err(e)
            }
        }
    }

    /// Fetches the run of blocks from `first` on, up to `max` of them,
    /// that no one holds or fetches, with one call of `fetch(count, put)`,
    /// which hands their bytes to `put` a block at a time, in order (the
    /// last block of the object may be short). Each block is served as
    /// soon as it is put: its readers wait for it, not for the whole run.
    /// Returns how many blocks the call was asked for (0 when the first
    /// was held or being fetched). For read-ahead: blocks a failure leaves
    /// unfilled are left to their readers.
    pub fn fill_run(
        &self,
        first: Key,
        max: u64,
        fetch: impl FnOnce(u64, &mut dyn FnMut(Arc<Vec<u8>>)) -> Result<()>,
    ) -> u64 {
        let slots: Vec<Arc<Slot>> = {
            let mut inner = locked(&self.inner);
            inner.clock += 1;
            let clock = inner.clock;
            (first..first + Key::from(max))
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
                Ok(g) if g.wants_fetch() => guards.push(g),
                _ => break,
            }
        }
        let n = guards.len() as u64;
        if n == 0 {
            // Slots made for blocks nobody fetches are not kept.
            let mut inner = locked(&self.inner);
            for (i, s) in (first..).zip(&slots) {
                self.forget_empty(&mut inner, i, s);
            }
            return 0;
        }
        let mut pending = guards.into_iter();
        let mut index = first;
        let fetched = fetch(n, &mut |bytes| {
            if let Some(mut g) = pending.next() {
                let len = bytes.len() as u64;
                *g = State::Held(bytes);
                drop(g);
                self.account(index, len);
                index += 1;
            }
        });
        // The readers waiting for the rest get the failure.
        if let Err(e) = fetched {
            let why: Arc<str> = e.to_string().into();
            for mut g in pending {
                *g = State::Failed(Instant::now(), why.clone());
            }
        } else {
            drop(pending);
        }
        let mut inner = locked(&self.inner);
        for (i, s) in (first..).zip(&slots) {
            self.forget_empty(&mut inner, i, s);
        }
        n
    }

    /// Marks block `index`, if held, as the first to drop: its reader has
    /// read it to its end. A sequential reader's blocks fetched ahead are
    /// kept before those it has read (by recency alone, a block read a
    /// moment ago would outlive one fetched ahead a second ago and not
    /// read yet).
    pub fn done_with(&self, index: Key) {
        if let Some(s) = locked(&self.inner).slots.get(&index) {
            s.used.store(0, Ordering::Relaxed);
        }
    }

    /// Block `index` if it is held now: never waits, never fetches.
    pub fn peek(&self, index: Key) -> Option<Arc<Vec<u8>>> {
        let slot = {
            let mut inner = locked(&self.inner);
            inner.clock += 1;
            let slot = inner.slots.get(&index)?.clone();
            slot.used.store(inner.clock, Ordering::Relaxed);
            slot
        };
        let data = slot.data.try_lock().ok()?;
        data.held().cloned()
    }

    /// Takes `slot` out of the map as block `index` if it is still there
    /// and empty (its fetch failed): a failure is not remembered. A slot
    /// locked by a fetch now is left to it.
    fn forget_empty(&self, inner: &mut Inner, index: Key, slot: &Arc<Slot>) {
        let empty = (inner.slots.get(&index)).is_some_and(|s| {
            Arc::ptr_eq(s, slot) && s.data.try_lock().is_ok_and(|d| matches!(*d, State::Empty))
        });
        if empty {
            inner.slots.remove(&index);
        }
    }

    /// Counts a filled block, then drops the least recently used filled
    /// blocks other than `keep` until the cache is within its budget. A
    /// reader holding a dropped block keeps its bytes until it is done.
    fn account(&self, keep: Key, len: u64) {
        let mut inner = locked(&self.inner);
        inner.held += len;
        while inner.held > self.budget() {
            let victim = (inner.slots.iter())
                .filter(|(&i, _)| i != keep)
                .filter_map(|(&i, s)| {
                    // A slot being fetched holds its lock; it is not counted yet.
                    let len = s.data.try_lock().ok()?.held()?.len() as u64;
                    Some((s.used.load(Ordering::Relaxed), i, len))
                })
                .min();
            let Some((_, i, len)) = victim else {
                break;
            };
            inner.held -= len;
            let slot = inner.slots.remove(&i);
            // Kept for a next fetch, unless a reader still holds it.
            let data = slot.and_then(|s| match std::mem::take(&mut *s.data.try_lock().ok()?) {
                State::Held(d) => Arc::try_unwrap(d).ok(),
                _ => None,
            });
            if let Some(buf) = data {
                self.spare(buf);
            }
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
        let get = |i: Key| {
            blocks
                .get(i, || {
                    fetches.fetch_add(1, Ordering::Relaxed);
                    Ok(Arc::new(vec![i as u8; 10]))
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

    /// A block read to its end goes before blocks fetched ahead and not
    /// read yet, however recent.
    #[test]
    fn a_block_done_with_goes_first() {
        let blocks = Blocks::new(3 * 10);
        for i in 0..3 {
            blocks.get(i, || Ok(Arc::new(vec![i as u8; 10]))).unwrap();
        }
        blocks.done_with(2);
        blocks.get(3, || Ok(Arc::new(vec![3; 10]))).unwrap();
        for i in [0, 1, 3] {
            blocks.get(i, || panic!("{i} was dropped")).unwrap();
        }
        let fetched = AtomicU64::new(0);
        (blocks.get(2, || {
            fetched.fetch_add(1, Ordering::Relaxed);
            Ok(Arc::new(vec![2; 10]))
        }))
        .unwrap();
        assert_eq!(fetched.load(Ordering::Relaxed), 1, "2 was dropped");
    }

    #[test]
    fn a_run_is_fetched_in_one_call_and_stops_at_a_block_already_held() {
        let blocks = Blocks::new(100);
        blocks.get(3, || Ok(Arc::new(vec![3; 4]))).unwrap();
        let n = blocks.fill_run(0, 5, |n, put| {
            for i in 0..n {
                put(Arc::new(vec![i as u8; 4]));
            }
            Ok(())
        });
        assert_eq!(n, 3, "blocks 0, 1, 2: block 3 is held");
        for i in 0..4 {
            let b = blocks.get(i, || panic!("block {i} fetched again")).unwrap();
            assert_eq!(*b, vec![i as u8; 4]);
        }
        assert_eq!(blocks.fill_run(3, 2, |_, _| panic!("3 is held")), 0);
        // A failure after the first block: that one is served, the other
        // answers with the failure for a while, then is fetched again.
        blocks.fill_run(4, 2, |n, put| {
            assert_eq!(n, 2);
            put(Arc::new(vec![4; 4]));
            Err(crate::error::Error::Unsupported("down".into()))
        });
        assert_eq!(*blocks.get(4, || panic!("4 was put")).unwrap(), vec![4; 4]);
        let e = blocks.get(5, || panic!("5 failed just now")).unwrap_err();
        assert!(e.to_string().contains("down"), "{e}");
        std::thread::sleep(FAILED_FOR);
        assert_eq!(*blocks.get(5, || Ok(Arc::new(vec![7]))).unwrap(), vec![7]);
    }

    #[test]
    fn a_run_serves_each_block_as_it_arrives() {
        let blocks = Blocks::new(100);
        let (first_read, go_on) = std::sync::mpsc::channel();
        let run = &blocks;
        std::thread::scope(|s| {
            s.spawn(move || {
                run.fill_run(0, 2, |_, put| {
                    put(Arc::new(vec![0; 4]));
                    // The rest of the run waits until block 0 was read.
                    go_on.recv().unwrap();
                    put(Arc::new(vec![1; 4]));
                    Ok(())
                })
            });
            let got = loop {
                if let Some(b) = blocks.peek(0) {
                    break b;
                }
                std::thread::yield_now();
            };
            assert_eq!(*got, vec![0; 4]);
            assert!(blocks.peek(1).is_none(), "block 1 is still on its way");
            first_read.send(()).unwrap();
            assert_eq!(
                *blocks.get(1, || panic!("fetched twice")).unwrap(),
                vec![1; 4]
            );
        });
    }

    #[test]
    fn a_failed_fetch_answers_its_waiters_then_is_tried_again() {
        let blocks = Blocks::new(100);
        let fetches = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let e = blocks.get(7, || {
                        fetches.fetch_add(1, Ordering::Relaxed);
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        Err(crate::error::Error::Unsupported("down".into()))
                    });
                    assert!(e.unwrap_err().to_string().contains("down"));
                });
            }
        });
        assert_eq!(
            fetches.load(Ordering::Relaxed),
            1,
            "one request for 4 readers"
        );
        std::thread::sleep(FAILED_FOR);
        assert_eq!(*blocks.get(7, || Ok(Arc::new(vec![1]))).unwrap(), vec![1]);
    }

    /// A block fetched by its reader, or waited for, was not ready at
    /// once; one held was.
    #[test]
    fn get_noting_says_whether_the_reader_waited() {
        let blocks = Blocks::new(1 << 20);
        let (b, waited) = blocks.get_noting(1, || Ok(Arc::new(vec![1; 4]))).unwrap();
        assert_eq!((*b == vec![1; 4], waited), (true, true));
        let (_, waited) = blocks.get_noting(1, || panic!("held")).unwrap();
        assert!(!waited);
        let blocks = std::sync::Arc::new(blocks);
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let other = blocks.clone();
        let fetcher = std::thread::spawn(move || {
            other.get(2, || {
                started_tx.send(()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(200));
                Ok(Arc::new(vec![2]))
            })
        });
        started_rx.recv().unwrap();
        let (b, waited) = blocks.get_noting(2, || panic!("fetched twice")).unwrap();
        assert_eq!((*b == vec![2], waited), (true, true));
        fetcher.join().unwrap().unwrap();
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
                            Ok(Arc::new(vec![9; 4]))
                        })
                        .unwrap()
                });
            }
        });
        assert_eq!(fetches.load(Ordering::Relaxed), 1);
    }
}
