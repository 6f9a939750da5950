//! Slow work off the FUSE worker threads.
//!
//! Some answers take long to compute: verifying a whole part (`--verify`),
//! checking an object's layout data rules, preparing a view, inflating a
//! deflated `.npz` member. None of that may run on a FUSE worker thread,
//! or a few slow opens would leave no thread to answer `ls`. Such work runs here, on at most [`JOB_THREADS`]
//! threads started on demand, and each request that needs it waits as a
//! [`Waiter`] whose reply is sent when the work ends.
//!
//! Work is single-flight: requests that need the same [`JobKey`] while it
//! is queued or running wait on the one job. The work itself stores what it
//! established (in the tree), so a later request finds it done.
//!
//! A job whose every waiter has gone (the process exited, or is dying with
//! SIGKILL pending, which is what Ctrl-C of a reader blocked in a FUSE
//! request turns into) is abandoned at its next [`Cancel::check`], and its
//! waiters are answered with [`FsError::Interrupted`]: a reader that gives
//! up leaves no work running.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::tree::FsError;

/// Most job threads at once. Each holds at most a frame buffer and a
/// decoder's window besides what the work keeps in the tree's budgeted
/// cache, which bounds the memory of slow work however many readers wait.
pub const JOB_THREADS: usize = 4;

/// How often a running job asks whether anyone still waits for it.
const CHECK_EVERY: Duration = Duration::from_millis(50);

/// What a job establishes. Requests for the same key share one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKey {
    /// Verify an object (its index): the format's rules on its bytes, each
    /// part whole (decode, content rules, digest), its layout's data rules.
    VerifyObject(u32),
    /// Prepare an object's view.
    PrepareView(u32),
    /// Render manifest.json.
    RenderManifest,
    /// Make the safetensors plan's tables.
    PlanSafetensors,
    /// Make an inode's backing file for passthrough.
    Clone(u64),
    /// Read a range of an inode of a remote model (inode, offset, size).
    Read(u64, u64, u32),
    /// Open a file of the model's folder read from a server (one
    /// request).
    OpenFolderFile(u32),
    /// Make a part's stored bytes at hand (its key): inflate an `.npz`
    /// member into the archive's file.
    AtHand(u32),
    /// Compute an object's value statistics (`stats.json`).
    Stats(u32),
}

/// Where a request's answer goes once the work has ended.
pub type Done = Box<dyn FnOnce(Result<(), FsError>) + Send>;

/// The work of a job. It may be run again if it was abandoned while a new
/// waiter arrived, so it is `Fn`.
pub type Work = Arc<dyn Fn(&Cancel) -> Result<(), FsError> + Send + Sync>;

/// A request waiting for a job.
struct Waiter {
    /// The thread that made the FUSE request (0: unknown).
    tid: u32,
    done: Done,
}

/// The job threads, their queue and the waiters of each job.
pub struct Jobs {
    inner: Mutex<Inner>,
    /// Most threads at once.
    limit: usize,
}

impl Default for Jobs {
    fn default() -> Jobs {
        Jobs::with_threads(JOB_THREADS)
    }
}

#[derive(Default)]
struct Inner {
    waiting: HashMap<JobKey, Vec<Waiter>>,
    queue: VecDeque<(JobKey, Work)>,
    threads: usize,
}

/// Handed to running work: says when nobody waits for it any more.
pub struct Cancel<'a> {
    jobs: &'a Jobs,
    key: JobKey,
    next_check: std::cell::Cell<Instant>,
}

impl Cancel<'_> {
    /// True when every waiter has gone, so the work should stop and return
    /// [`FsError::Interrupted`]. Cheap to call often: it looks at the
    /// waiters at most every [`CHECK_EVERY`].
    pub fn check(&self) -> bool {
        let now = Instant::now();
        if now < self.next_check.get() {
            return false;
        }
        self.next_check.set(now + CHECK_EVERY);
        self.jobs.sweep_queue();
        self.jobs.all_gone(self.key)
    }

    /// [`Cancel::check`] as the progress callback of decoding and
    /// verifying: `Err(Error::Interrupted)` stops the work.
    pub fn keep_going(&self) -> crate::error::Result<()> {
        if self.check() {
            Err(crate::error::Error::Interrupted)
        } else {
            Ok(())
        }
    }
}

impl Jobs {
    /// Jobs run by at most `limit` threads.
    pub fn with_threads(limit: usize) -> Jobs {
        Jobs {
            inner: Mutex::default(),
            limit,
        }
    }

    /// Runs `work` for `key` unless it is already queued or running, and
    /// answers `done` when it ends. `tid` is the requesting thread.
    pub fn submit(self: &Arc<Self>, key: JobKey, tid: u32, done: Done, work: Work) {
        let mut inner = self.lock();
        let waiter = Waiter { tid, done };
        if let Some(w) = inner.waiting.get_mut(&key) {
            w.push(waiter);
            return;
        }
        inner.waiting.insert(key, vec![waiter]);
        inner.queue.push_back((key, work));
        self.start_thread(&mut inner);
    }

    /// Starts a thread to drain the queue, if fewer than the maximum run.
    fn start_thread(self: &Arc<Self>, inner: &mut Inner) {
        if inner.threads >= self.limit {
            return;
        }
        let jobs = self.clone();
        let started = std::thread::Builder::new()
            .name("ztfs-job".into())
            .spawn(move || jobs.run());
        match started {
            Ok(_) => inner.threads += 1,
            // The queue waits for a running thread; with none running the
            // next submit tries again.
            Err(e) => log::error!("cannot start a job thread: {e}"),
        }
    }

    /// A job thread: runs queued jobs until the queue is empty.
    fn run(self: Arc<Self>) {
        loop {
            let Some((key, work)) = ({
                let mut inner = self.lock();
                let next = inner.queue.pop_front();
                if next.is_none() {
                    inner.threads -= 1;
                }
                next
            }) else {
                return;
            };
            let cancel = Cancel {
                jobs: &self,
                key,
                next_check: std::cell::Cell::new(Instant::now()),
            };
            // Work abandoned in the queue costs nothing.
            let result = if cancel.check() {
                Err(FsError::Interrupted)
            } else {
                // A bug in the work must not leave its waiters blocked in
                // the kernel for ever: it becomes an I/O error.
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&cancel)))
                    .unwrap_or_else(|_| {
                        log::error!("{key:?}: the work panicked");
                        Err(FsError::Io)
                    })
            };
            self.finish(key, work, result);
        }
    }

    /// Answers the waiters of `key`. Work abandoned while a new waiter
    /// arrived is queued again for the waiters still there.
    fn finish(self: &Arc<Self>, key: JobKey, work: Work, result: Result<(), FsError>) {
        let mut inner = self.lock();
        let waiters = inner.waiting.remove(&key).unwrap_or_default();
        let (answer, requeue): (Vec<Waiter>, Vec<Waiter>) = if result == Err(FsError::Interrupted) {
            waiters
                .into_iter()
                .partition(|w| crate::sys::requester_gone(w.tid))
        } else {
            (waiters, Vec::new())
        };
        if !requeue.is_empty() {
            inner.waiting.insert(key, requeue);
            inner.queue.push_back((key, work));
            self.start_thread(&mut inner);
        }
        drop(inner);
        for w in answer {
            (w.done)(result);
        }
    }

    /// Answers the waiters of queued jobs that nobody waits for any more,
    /// so that readers who gave up are released while every job thread is
    /// busy with longer work.
    fn sweep_queue(&self) {
        let abandoned: Vec<Waiter> = {
            let mut inner = self.lock();
            let queued: Vec<JobKey> = inner.queue.iter().map(|(k, _)| *k).collect();
            let gone: Vec<JobKey> = queued
                .into_iter()
                .filter(|k| {
                    inner
                        .waiting
                        .get(k)
                        .is_none_or(|w| w.iter().all(|w| crate::sys::requester_gone(w.tid)))
                })
                .collect();
            inner.queue.retain(|(k, _)| !gone.contains(k));
            gone.iter()
                .flat_map(|k| inner.waiting.remove(k).unwrap_or_default())
                .collect()
        };
        for w in abandoned {
            (w.done)(Err(FsError::Interrupted));
        }
    }

    fn all_gone(&self, key: JobKey) -> bool {
        let tids: Vec<u32> = match self.lock().waiting.get(&key) {
            Some(w) => w.iter().map(|w| w.tid).collect(),
            None => return true,
        };
        tids.into_iter().all(crate::sys::requester_gone)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing panics while holding the lock; recover the state anyway.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    fn me() -> u32 {
        std::process::id()
    }

    #[test]
    fn requests_for_one_key_share_one_run() {
        let jobs = Arc::new(Jobs::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let r = runs.clone();
        let work: Work = Arc::new(move |_: &Cancel| {
            r.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(100));
            Ok(())
        });
        for _ in 0..5 {
            let tx = tx.clone();
            jobs.submit(
                JobKey::PrepareView(1),
                me(),
                Box::new(move |r| tx.send(r).unwrap()),
                work.clone(),
            );
        }
        for _ in 0..5 {
            assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), Ok(()));
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn work_nobody_waits_for_is_abandoned() {
        let jobs = Arc::new(Jobs::default());
        let gone = crate::sys::reaped_pid();
        let (tx, rx) = mpsc::channel();
        let work: Work = Arc::new(move |c: &Cancel| {
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(60) {
                if c.check() {
                    return Err(FsError::Interrupted);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(())
        });
        jobs.submit(
            JobKey::VerifyObject(0),
            gone,
            Box::new(move |r| tx.send(r).unwrap()),
            work,
        );
        let r = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(r, Err(FsError::Interrupted));
    }

    #[test]
    fn queued_work_nobody_waits_for_is_answered_while_threads_are_busy() {
        let jobs = Arc::new(Jobs::default());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (busy_tx, busy_rx) = mpsc::channel();
        for i in 0..JOB_THREADS as u32 {
            let (s, tx) = (stop.clone(), busy_tx.clone());
            let work: Work = Arc::new(move |c: &Cancel| {
                while !s.load(Ordering::SeqCst) {
                    c.check();
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(())
            });
            jobs.submit(
                JobKey::VerifyObject(i),
                me(),
                Box::new(move |r| tx.send(r).unwrap()),
                work,
            );
        }
        let gone = crate::sys::reaped_pid();
        let (tx, rx) = mpsc::channel();
        jobs.submit(
            JobKey::PrepareView(9),
            gone,
            Box::new(move |r| tx.send(r).unwrap()),
            Arc::new(|_: &Cancel| Ok(())),
        );
        let r = rx.recv_timeout(Duration::from_secs(10));
        stop.store(true, Ordering::SeqCst);
        assert_eq!(r.unwrap(), Err(FsError::Interrupted));
        for _ in 0..JOB_THREADS {
            assert_eq!(
                busy_rx.recv_timeout(Duration::from_secs(10)).unwrap(),
                Ok(())
            );
        }
    }

    #[test]
    fn a_panic_in_the_work_is_an_error_not_a_hang() {
        let jobs = Arc::new(Jobs::default());
        let (tx, rx) = mpsc::channel();
        jobs.submit(
            JobKey::RenderManifest,
            me(),
            Box::new(move |r| tx.send(r).unwrap()),
            Arc::new(|_: &Cancel| panic!("a bug")),
        );
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(10)).unwrap(),
            Err(FsError::Io)
        );
    }

    #[test]
    fn slow_jobs_do_not_hold_up_more_than_their_threads() {
        let jobs = Arc::new(Jobs::default());
        let (tx, rx) = mpsc::channel();
        let release = Arc::new(std::sync::Barrier::new(JOB_THREADS + 1));
        for i in 0..JOB_THREADS as u32 {
            let (tx, b) = (tx.clone(), release.clone());
            let work: Work = Arc::new(move |_: &Cancel| {
                b.wait();
                Ok(())
            });
            jobs.submit(
                JobKey::VerifyObject(i),
                me(),
                Box::new(move |r| tx.send(r).unwrap()),
                work,
            );
        }
        // All threads are busy; a further job waits in the queue and runs
        // once one is free.
        let (tx2, rx2) = mpsc::channel();
        jobs.submit(
            JobKey::PrepareView(0),
            me(),
            Box::new(move |r| tx2.send(r).unwrap()),
            Arc::new(|_: &Cancel| Ok(())),
        );
        assert!(rx2.recv_timeout(Duration::from_millis(200)).is_err());
        release.wait();
        for _ in 0..JOB_THREADS {
            assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), Ok(()));
        }
        assert_eq!(rx2.recv_timeout(Duration::from_secs(10)).unwrap(), Ok(()));
    }
}
