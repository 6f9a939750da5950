//! A tensor's statistics for the pages: one job a tensor, shared by every
//! request that wants it while it runs and kept once done; stopped when
//! the last request waiting for it goes (a closed tab), and started again
//! by the next.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::App;
use crate::stats::{self, Kind, Stats};

type Outcome = Option<Result<Stats, String>>;

/// The jobs, by tensor.
#[derive(Default)]
pub struct StatsJobs {
    map: Mutex<HashMap<usize, Arc<Job>>>,
}

struct Job {
    done: watch::Receiver<Outcome>,
    waiters: AtomicUsize,
    stop: Arc<AtomicBool>,
}

/// Sets its flag when dropped: a request's work stops with it.
pub struct StopOnDrop(pub Arc<AtomicBool>);

/// One waiter fewer when dropped; the last stops an unfinished job.
struct Leave(Arc<Job>);

impl Drop for Leave {
    fn drop(&mut self) {
        if self.0.waiters.fetch_sub(1, Ordering::AcqRel) == 1 && self.0.done.borrow().is_none() {
            self.0.stop.store(true, Ordering::Relaxed);
        }
    }
}

impl StatsJobs {
    /// Tensor `i`'s statistics (its numbers of `kind`), computed once.
    pub async fn get(&self, app: Arc<App>, i: usize, kind: Kind) -> Result<Stats, String> {
        let job = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            match map.get(&i) {
                Some(j) if !j.stop.load(Ordering::Relaxed) => {
                    j.waiters.fetch_add(1, Ordering::AcqRel);
                    j.clone()
                }
                _ => {
                    let (tx, rx) = watch::channel(None);
                    let stop = Arc::new(AtomicBool::new(false));
                    let job = Arc::new(Job {
                        done: rx,
                        waiters: AtomicUsize::new(1),
                        stop: stop.clone(),
                    });
                    map.insert(i, job.clone());
                    tokio::task::spawn_blocking(move || {
                        let r = compute(&app, i, kind, &stop);
                        if r.is_err() {
                            // Tried again by the next request.
                            let mut map = app.stats.map.lock().unwrap_or_else(|e| e.into_inner());
                            if map.get(&i).is_some_and(|j| Arc::ptr_eq(&j.stop, &stop)) {
                                map.remove(&i);
                            }
                        }
                        let _ = tx.send(Some(r));
                    });
                    job
                }
            }
        };
        let leave = Leave(job.clone());
        let mut rx = job.done.clone();
        let r = match rx.wait_for(Option::is_some).await {
            Ok(v) => v.clone().unwrap_or_else(|| Err("not computed".into())),
            Err(_) => Err("the statistics job ended without a result".into()),
        };
        drop(leave);
        r
    }
}

/// Tensor `i`'s statistics, on every core.
fn compute(app: &App, i: usize, kind: Kind, stop: &AtomicBool) -> Result<Stats, String> {
    let m = &app.model;
    let t = &m.tensors()[i];
    let read = |at: u64, buf: &mut [u8]| m.read(t, at, buf);
    let job = stats::Job {
        len: t.len(),
        kind,
        read: &read,
        bins: stats::DEFAULT_BINS,
        threads: crate::sys::cores(),
        keep: app.keep,
        progress: &|_| {},
        stop: Some(stop),
        bytes: m.mapped_bytes(t),
    };
    crate::sys::map_read(|| stats::compute(&job)).map_err(|e| e.to_string())
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
