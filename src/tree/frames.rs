//! Decoded frames of compressed parts, shared by all readers: bounded by a
//! byte budget, evicted oldest first, and decoded once even when several
//! readers (or a reader and the prefetch behind it) want the same frame.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::error::Result;

/// A frame's key: (flat part index, frame index).
pub type Key = (u32, u32);

/// The shared cache.
pub struct FrameCache {
    budget: u64,
    inner: Mutex<Inner>,
    ready: Condvar,
}

#[derive(Default)]
struct Inner {
    bytes: u64,
    map: HashMap<Key, Arc<Vec<u8>>>,
    order: VecDeque<Key>,
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
    fn recycle(&mut self, frame: Arc<Vec<u8>>) {
        if let Ok(buf) = Arc::try_unwrap(frame) {
            if self.spare.len() < SPARE_BUFFERS {
                self.spare.push(buf);
            }
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

    /// The decoded frame `key`: from the cache, from a decode already under
    /// way, or decoded now (outside the lock) into a recycled buffer.
    pub fn get_or_decode(
        &self,
        key: Key,
        decode: impl FnOnce(Vec<u8>) -> Result<Vec<u8>>,
    ) -> Result<Arc<Vec<u8>>> {
        let mut c = self.lock();
        loop {
            if let Some(f) = c.map.get(&key) {
                return Ok(f.clone());
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
            self.insert(&mut c, key, frame.clone());
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
            if c.map.contains_key(&key) || c.decoding.contains(&key) {
                return;
            }
        }
        let _ = self.get_or_decode(key, decode);
    }

    /// Drops `key` from the cache, if it is there.
    pub fn forget(&self, key: Key) {
        let mut c = self.lock();
        if let Some(f) = c.map.remove(&key) {
            c.bytes -= f.len() as u64;
            c.order.retain(|k| *k != key);
            c.recycle(f);
        }
    }

    /// True when `key` is cached.
    #[cfg(test)]
    pub fn contains(&self, key: Key) -> bool {
        self.lock().map.contains_key(&key)
    }

    fn insert(&self, c: &mut Inner, key: Key, frame: Arc<Vec<u8>>) {
        if c.map.contains_key(&key) {
            return;
        }
        c.bytes += frame.len() as u64;
        c.map.insert(key, frame);
        c.order.push_back(key);
        while c.bytes > self.budget && c.order.len() > 1 {
            let Some(old) = c.order.pop_front() else {
                break;
            };
            if let Some(f) = c.map.remove(&old) {
                c.bytes -= f.len() as u64;
                c.recycle(f);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves the maps consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn decodes_each_frame_once_and_stays_in_budget() {
        let cache = FrameCache::new(10);
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
        // 12 bytes exceed the budget of 10: the oldest frame went.
        assert!(!cache.contains((0, 0)));
        assert!(cache.contains((0, 1)) && cache.contains((0, 2)));
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
