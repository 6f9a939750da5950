//! Decoded frames of compressed parts and prepared views, shared by all
//! readers under one byte budget (`--cache-mib`), evicted oldest first.
//! A frame is decoded once even when several readers (or a reader and the
//! prefetch behind it) want it; a view is prepared once by a job
//! (`crate::tree::jobs` is its single flight) and inserted here.
//!
//! Each entry is charged its bytes plus [`ENTRY_OVERHEAD`], so a file of
//! many tiny frames cannot hold more memory than the budget in bookkeeping.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::decode::views::Prepared;
use crate::error::Result;
use crate::tree::listing::Listing;

/// A frame's key: (flat part index, frame index).
pub type Key = (u32, u32);

/// Bytes charged per entry besides its contents: the map slot, the order
/// slot, the `Arc` and `Vec` headers, the allocator's rounding.
pub const ENTRY_OVERHEAD: u64 = 128;

/// What the cache holds, by what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    Frame(Key),
    /// An object's prepared view.
    View(u32),
    /// An object's rendered meta.json.
    Meta(u32),
    /// An object's stats.json, once computed.
    Stats(u32),
    /// A large directory's listing, by the directory's inode.
    Listing(u32),
}

enum Entry {
    Frame(Arc<Vec<u8>>),
    View(Arc<Prepared>),
    Meta(Arc<Vec<u8>>),
    Listing(Arc<Listing>),
}

impl Entry {
    fn charge(&self) -> u64 {
        ENTRY_OVERHEAD
            + match self {
                Entry::Frame(f) | Entry::Meta(f) => f.len() as u64,
                Entry::View(v) => v.heap_bytes(),
                Entry::Listing(l) => l.heap_bytes(),
            }
    }
}

/// The shared cache.
pub struct FrameCache {
    budget: u64,
    inner: Mutex<Inner>,
    ready: Condvar,
}

#[derive(Default)]
struct Inner {
    bytes: u64,
    /// Bytes promised to work under way (a view being prepared), not yet
    /// in the cache; entries are evicted to keep them free.
    reserved: u64,
    map: HashMap<Slot, Entry>,
    order: VecDeque<Slot>,
    decoding: HashSet<Key>,
    /// Buffers of frames that left the cache, for the next decodes: a
    /// streaming reader then decodes into memory already faulted in instead
    /// of fresh pages for every frame.
    spare: Vec<Vec<u8>>,
}

/// Buffers kept for reuse.
const SPARE_BUFFERS: usize = 8;

impl Inner {
    /// Keeps the buffer of a frame leaving the cache, if no reader holds it.
    fn recycle(&mut self, entry: Entry) {
        let Entry::Frame(frame) = entry else {
            return;
        };
        if let Ok(buf) = Arc::try_unwrap(frame) {
            if self.spare.len() < SPARE_BUFFERS {
                self.spare.push(buf);
            }
        }
    }

    fn frame(&self, key: Key) -> Option<Arc<Vec<u8>>> {
        match self.map.get(&Slot::Frame(key)) {
            Some(Entry::Frame(f)) => Some(f.clone()),
            _ => None,
        }
    }

    fn remove(&mut self, slot: Slot) {
        if let Some(e) = self.map.remove(&slot) {
            self.bytes -= e.charge();
            self.order.retain(|k| *k != slot);
            self.recycle(e);
        }
    }
}

impl FrameCache {
    /// A cache holding up to `budget` decoded bytes (always at least one frame).
    pub fn new(budget: u64) -> FrameCache {
        FrameCache {
            budget,
            inner: Mutex::new(Inner::default()),
            ready: Condvar::new(),
        }
    }

    /// The budget, in bytes.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// The decoded frame `key`: from the cache, from a decode already under
    /// way, or decoded now (outside the lock) into a recycled buffer.
    pub fn get_or_decode(
        &self,
        key: Key,
        decode: impl FnOnce(Vec<u8>) -> Result<Vec<u8>>,
    ) -> Result<Arc<Vec<u8>>> {
        let mut c = self.lock();
        loop {
            if let Some(f) = c.frame(key) {
                return Ok(f);
            }
            if !c.decoding.contains(&key) {
                break;
            }
            c = self.ready.wait(c).unwrap_or_else(|p| p.into_inner());
        }
        c.decoding.insert(key);
        let buf = c.spare.pop().unwrap_or_default();
        drop(c);
        let result = decode(buf).map(Arc::new);
        let mut c = self.lock();
        c.decoding.remove(&key);
        if let Ok(frame) = &result {
            self.insert(&mut c, Slot::Frame(key), Entry::Frame(frame.clone()));
        }
        drop(c);
        self.ready.notify_all();
        result
    }

    /// Decodes `key` into the cache unless it is there or under way; for
    /// reading ahead of a sequential reader. Errors are left for the read
    /// that needs the frame to report.
    pub fn prefetch(&self, key: Key, decode: impl FnOnce(Vec<u8>) -> Result<Vec<u8>>) {
        {
            let c = self.lock();
            if c.map.contains_key(&Slot::Frame(key)) || c.decoding.contains(&key) {
                return;
            }
        }
        let _ = self.get_or_decode(key, decode);
    }

    /// Drops `key` from the cache, if it is there.
    pub fn forget(&self, key: Key) {
        self.lock().remove(Slot::Frame(key));
    }

    /// The prepared view of `object`, if it is cached.
    pub fn view(&self, object: u32) -> Option<Arc<Prepared>> {
        match self.lock().map.get(&Slot::View(object)) {
            Some(Entry::View(v)) => Some(v.clone()),
            _ => None,
        }
    }

    /// The stats.json of `object`, if it is cached.
    pub fn stats(&self, object: u32) -> Option<Arc<Vec<u8>>> {
        match self.lock().map.get(&Slot::Stats(object)) {
            Some(Entry::Meta(m)) => Some(m.clone()),
            _ => None,
        }
    }

    /// Caches the stats.json of `object` (dropped as any entry is, and
    /// computed again on the next read).
    pub fn insert_stats(&self, object: u32, text: Arc<Vec<u8>>) {
        let mut c = self.lock();
        self.insert(&mut c, Slot::Stats(object), Entry::Meta(text));
    }

    /// The rendered meta.json of `object`, from the cache or rendered now
    /// and cached: `stat` and every read of it would otherwise render it
    /// again, in proportion to the object's parts.
    pub fn meta(&self, object: u32, render: impl FnOnce() -> Vec<u8>) -> Arc<Vec<u8>> {
        if let Some(Entry::Meta(m)) = self.lock().map.get(&Slot::Meta(object)) {
            return m.clone();
        }
        let m = Arc::new(render());
        let mut c = self.lock();
        self.insert(&mut c, Slot::Meta(object), Entry::Meta(m.clone()));
        m
    }

    /// The listing of the large directory `ino`, from the cache or
    /// derived now and cached.
    pub fn listing(&self, ino: u32, derive: impl FnOnce() -> Listing) -> Arc<Listing> {
        if let Some(Entry::Listing(l)) = self.lock().map.get(&Slot::Listing(ino)) {
            return l.clone();
        }
        let l = Arc::new(derive());
        let mut c = self.lock();
        self.insert(&mut c, Slot::Listing(ino), Entry::Listing(l.clone()));
        l
    }

    /// Caches the prepared view of `object`, evicting older entries.
    pub fn insert_view(&self, object: u32, view: Arc<Prepared>) {
        let mut c = self.lock();
        self.insert(&mut c, Slot::View(object), Entry::View(view));
    }

    /// Promises `bytes` of the budget to work that is about to hold them
    /// (decoded parts for a view or a data-rule check), evicting cached
    /// entries to make room and waiting while other promises fill the
    /// budget. Call on a job thread only: it may wait. The promise ends
    /// when the returned value is dropped.
    pub fn reserve(&self, bytes: u64) -> Reservation<'_> {
        let bytes = bytes.min(self.budget);
        let mut c = self.lock();
        loop {
            while c.bytes + c.reserved + bytes > self.budget && !c.order.is_empty() {
                let Some(old) = c.order.pop_front() else {
                    break;
                };
                if let Some(e) = c.map.remove(&old) {
                    c.bytes -= e.charge();
                    c.recycle(e);
                }
            }
            if c.reserved + bytes <= self.budget {
                break;
            }
            c = self.ready.wait(c).unwrap_or_else(|p| p.into_inner());
        }
        c.reserved += bytes;
        Reservation { cache: self, bytes }
    }

    /// Bytes charged to the budget now.
    #[cfg(test)]
    pub fn charged(&self) -> u64 {
        self.lock().bytes
    }

    /// True when `key` is cached.
    #[cfg(test)]
    pub fn contains(&self, key: Key) -> bool {
        self.lock().map.contains_key(&Slot::Frame(key))
    }

    fn insert(&self, c: &mut Inner, slot: Slot, entry: Entry) {
        if c.map.contains_key(&slot) {
            return;
        }
        c.bytes += entry.charge();
        c.map.insert(slot, entry);
        c.order.push_back(slot);
        while c.bytes + c.reserved > self.budget && c.order.len() > 1 {
            let Some(old) = c.order.pop_front() else {
                break;
            };
            if let Some(e) = c.map.remove(&old) {
                c.bytes -= e.charge();
                c.recycle(e);
            }
        }
    }

    fn release(&self, bytes: u64) {
        self.lock().reserved -= bytes;
        self.ready.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves the maps consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Budget promised by [`FrameCache::reserve`], given back on drop.
pub struct Reservation<'a> {
    cache: &'a FrameCache,
    bytes: u64,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.cache.release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn decodes_each_frame_once_and_stays_in_budget() {
        let cache = FrameCache::new(10 + 2 * ENTRY_OVERHEAD);
        let decodes = AtomicUsize::new(0);
        let frame = |n: u8| {
            decodes.fetch_add(1, Ordering::SeqCst);
            Ok(vec![n; 4])
        };
        for _ in 0..3 {
            assert_eq!(
                *cache.get_or_decode((0, 0), |_| frame(0)).unwrap(),
                vec![0; 4]
            );
        }
        assert_eq!(decodes.load(Ordering::SeqCst), 1);
        cache.prefetch((0, 1), |_| frame(1));
        cache.prefetch((0, 1), |_| frame(1));
        assert_eq!(decodes.load(Ordering::SeqCst), 2);
        cache.get_or_decode((0, 2), |_| frame(2)).unwrap();
        // Three frames exceed a budget of two and a bit: the oldest went.
        assert!(!cache.contains((0, 0)));
        assert!(cache.contains((0, 1)) && cache.contains((0, 2)));
    }

    #[test]
    fn a_reservation_evicts_to_make_room_and_waits_for_others() {
        let cache = Arc::new(FrameCache::new(1000));
        for i in 0..4 {
            cache.get_or_decode((0, i), |_| Ok(vec![0; 100])).unwrap();
        }
        let first = cache.reserve(600);
        assert!(cache.charged() <= 400, "entries made room");
        let (tx, rx) = std::sync::mpsc::channel();
        let c2 = cache.clone();
        let waiter = std::thread::spawn(move || {
            let _second = c2.reserve(600);
            tx.send(()).unwrap();
        });
        assert!(rx
            .recv_timeout(std::time::Duration::from_millis(200))
            .is_err());
        drop(first);
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        waiter.join().unwrap();
    }

    #[test]
    fn concurrent_readers_share_one_decode() {
        let cache = Arc::new(FrameCache::new(1 << 20));
        let decodes = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (cache, decodes) = (cache.clone(), decodes.clone());
                std::thread::spawn(move || {
                    cache
                        .get_or_decode((1, 1), |_| {
                            decodes.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            Ok(vec![7; 1000])
                        })
                        .unwrap()
                        .len()
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), 1000);
        }
        assert_eq!(decodes.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_failed_decode_is_not_cached() {
        let cache = FrameCache::new(100);
        let e = cache.get_or_decode((0, 0), |_| Err(crate::error::Error::Usage("x".into())));
        assert!(e.is_err());
        assert!(cache.get_or_decode((0, 0), |_| Ok(vec![1])).is_ok());
    }

    #[test]
    fn frames_leaving_the_cache_lend_their_buffers_to_the_next_decode() {
        let cache = FrameCache::new(1 << 20);
        cache
            .get_or_decode((0, 0), |_| Ok(Vec::with_capacity(4096)))
            .unwrap();
        cache.forget((0, 0));
        let mut lent = 0;
        cache
            .get_or_decode((0, 1), |buf| {
                lent = buf.capacity();
                Ok(buf)
            })
            .unwrap();
        assert_eq!(lent, 4096, "the forgotten frame's buffer is reused");
        // A frame a reader still holds is not recycled.
        let held = cache
            .get_or_decode((0, 2), |_| Ok(Vec::with_capacity(64)))
            .unwrap();
        cache.forget((0, 2));
        cache
            .get_or_decode((0, 3), |buf| {
                assert_eq!(buf.capacity(), 0, "a held frame is not lent");
                Ok(buf)
            })
            .unwrap();
        drop(held);
    }
}
