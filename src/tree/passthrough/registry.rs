//! The kernel's ids of the backing files in use, one per inode, shared by
//! every open handle of it and dropped (which closes it in the kernel)
//! with the last. Generic over the id so that the tree stays free of
//! fuser's types and the counting is tested without a kernel; the FUSE
//! adapter holds one `Registry<fuser::BackingId>`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Backing ids by inode, with how many open handles use each.
#[derive(Debug)]
pub struct Registry<Id> {
    ids: Mutex<HashMap<u64, (Arc<Id>, u32)>>,
}

impl<Id> Default for Registry<Id> {
    fn default() -> Self {
        Registry {
            ids: Mutex::new(HashMap::new()),
        }
    }
}

impl<Id> Registry<Id> {
    /// The id of `ino`'s backing file for one more open handle, made by
    /// `open` when no handle of `ino` holds one (a failure registers
    /// nothing). The lock is held across `open`, so two first opens of an
    /// inode register one id.
    pub fn acquire<E>(&self, ino: u64, open: impl FnOnce() -> Result<Id, E>) -> Result<Arc<Id>, E> {
        let mut ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((id, n)) = ids.get_mut(&ino) {
            *n += 1;
            return Ok(id.clone());
        }
        let id = Arc::new(open()?);
        ids.insert(ino, (id.clone(), 1));
        Ok(id)
    }

    /// One open handle of `ino` is gone; the id is dropped with the last.
    /// A release of an inode that holds none changes nothing.
    pub fn release(&self, ino: u64) {
        let mut ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, n)) = ids.get_mut(&ino) {
            *n -= 1;
            if *n == 0 {
                ids.remove(&ino);
            }
        }
    }

    /// How many inodes hold an id.
    pub fn len(&self) -> usize {
        self.ids.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// True when no inode holds an id.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An id that counts how many were made and dropped.
    struct Id(Arc<AtomicUsize>);

    impl Drop for Id {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn handles_of_one_inode_share_one_id_dropped_with_the_last() {
        let r = Registry::default();
        let (made, dropped) = (AtomicUsize::new(0), Arc::new(AtomicUsize::new(0)));
        let open = || -> Result<Id, ()> {
            made.fetch_add(1, Ordering::SeqCst);
            Ok(Id(dropped.clone()))
        };
        let a = r.acquire(7, open).unwrap();
        let b = r.acquire(7, open).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(made.load(Ordering::SeqCst), 1);
        drop((a, b));
        r.release(7);
        assert_eq!(dropped.load(Ordering::SeqCst), 0, "one handle still open");
        assert_eq!(r.len(), 1);
        r.release(7);
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        assert!(r.is_empty());
        // A later open registers a new id.
        drop(r.acquire(7, open).unwrap());
        assert_eq!(made.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn inodes_are_counted_apart() {
        let r = Registry::default();
        let dropped = Arc::new(AtomicUsize::new(0));
        let open = || -> Result<Id, ()> { Ok(Id(dropped.clone())) };
        drop(r.acquire(1, open).unwrap());
        drop(r.acquire(2, open).unwrap());
        r.release(1);
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        assert_eq!(r.len(), 1);
        r.release(2);
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_refused_open_registers_nothing() {
        let r: Registry<Id> = Registry::default();
        assert_eq!(r.acquire(3, || Err("refused")).err(), Some("refused"));
        assert!(r.is_empty());
        // Releasing what was never acquired (the adapter releases only
        // passthrough handles, but a stray release must not underflow).
        r.release(3);
        assert!(r.is_empty());
    }

    #[test]
    fn first_opens_at_once_register_one_id() {
        let r = Arc::new(Registry::default());
        let made = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (r, made, dropped) = (r.clone(), made.clone(), dropped.clone());
                std::thread::spawn(move || {
                    r.acquire(9, || -> Result<Id, ()> {
                        made.fetch_add(1, Ordering::SeqCst);
                        Ok(Id(dropped.clone()))
                    })
                    .map(drop)
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        assert_eq!(made.load(Ordering::SeqCst), 1);
        for _ in 0..8 {
            r.release(9);
        }
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        assert!(r.is_empty());
    }
}
