//! A thread that copies raw parts file to file, in the kernel, while the
//! pack's own thread checks and hashes the next parts from the source:
//! on two cores the copies and the hashing overlap instead of taking
//! turns. Jobs run in the order given; at most [`QUEUE`] wait.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::mpsc;

use super::out::Place;

/// Jobs that may wait behind the one being copied (each holds two
/// descriptors).
const QUEUE: usize = 2;

/// One range to copy: `len` bytes of `src` from `src_offset` to `dst` at
/// `place`.
pub struct Job {
    pub src: File,
    /// The source's path, and its name for messages.
    pub src_path: std::path::PathBuf,
    pub src_name: String,
    pub src_offset: u64,
    pub dst: File,
    pub place: Place,
    pub len: u64,
}

/// A job copied (or why not): where its bytes went, and how many.
pub struct Done {
    pub src_path: std::path::PathBuf,
    pub src_name: String,
    pub place: Place,
    pub len: u64,
    pub result: std::io::Result<()>,
}

/// The copying thread, started on the first job; it ends when this is
/// dropped (after the job it is in).
#[derive(Default)]
pub struct Copier {
    thread: Option<Thread>,
    /// Jobs given and not yet reported.
    pending: usize,
}

struct Thread {
    jobs: mpsc::SyncSender<Job>,
    done: mpsc::Receiver<Done>,
}

impl Copier {
    /// Queues `job`, waiting while the queue is full; returns the jobs
    /// finished meanwhile.
    pub fn send(&mut self, job: Job) -> Vec<Done> {
        let t = self.thread.get_or_insert_with(spawn);
        let mut finished = Vec::new();
        let mut job = job;
        loop {
            match t.jobs.try_send(job) {
                Ok(()) => break,
                Err(mpsc::TrySendError::Full(j)) => {
                    job = j;
                    // Room comes as a job finishes.
                    match t.done.recv() {
                        Ok(d) => {
                            self.pending -= 1;
                            finished.push(d);
                        }
                        Err(_) => return vec![stopped(job)],
                    }
                }
                Err(mpsc::TrySendError::Disconnected(j)) => return vec![stopped(j)],
            }
        }
        self.pending += 1;
        let before = finished.len();
        finished.extend(t.done.try_iter());
        self.pending -= finished.len() - before;
        finished
    }

    /// Waits for every job given; returns them (an error for any the
    /// thread did not report).
    pub fn wait_all(&mut self) -> Vec<Done> {
        let pending = std::mem::take(&mut self.pending);
        let Some(t) = &self.thread else {
            return Vec::new();
        };
        let mut finished: Vec<Done> = t.done.iter().take(pending).collect();
        if finished.len() < pending {
            finished.push(Done {
                src_path: Default::default(),
                src_name: String::new(),
                place: Place {
                    file: None,
                    offset: 0,
                },
                len: 0,
                result: Err(std::io::Error::other("the copying thread stopped")),
            });
        }
        finished
    }
}

/// A job that found no thread to run it.
fn stopped(job: Job) -> Done {
    Done {
        src_path: job.src_path,
        src_name: job.src_name,
        place: job.place,
        len: job.len,
        result: Err(std::io::Error::other("the copying thread stopped")),
    }
}

fn spawn() -> Thread {
    let (jobs, job_rx) = mpsc::sync_channel::<Job>(QUEUE);
    let (done_tx, done) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("ztfs-copy".into())
        .spawn(move || {
            for job in job_rx {
                let result = copy(&job);
                let d = Done {
                    src_path: job.src_path,
                    src_name: job.src_name,
                    place: job.place,
                    len: job.len,
                    result,
                };
                if done_tx.send(d).is_err() {
                    return;
                }
            }
        });
    // Without a thread the job channel is closed: each send says so.
    drop(spawned);
    Thread { jobs, done }
}

/// Copies `job`: in the kernel while it can; where it cannot (another
/// filesystem, one without the call), through a buffer. Fewer bytes than
/// asked (the source shrank) is an error.
fn copy(job: &Job) -> std::io::Result<()> {
    let mut n = 0;
    while n < job.len {
        let left = usize::try_from(job.len - n).unwrap_or(usize::MAX);
        match crate::sys::copy_file_range(
            &job.src,
            job.src_offset + n,
            &job.dst,
            job.place.offset + n,
            left,
        ) {
            // The end, or a file the kernel cannot tell: the buffer says.
            Ok(0) => break,
            Ok(k) => n += k as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if cannot_copy_in_kernel(&e) => break,
            Err(e) => return Err(e),
        }
    }
    let mut buf = Vec::new();
    while n < job.len {
        let len = (job.len - n).min(1 << 20) as usize;
        buf.resize(len, 0);
        let k = match job.src.read_at(&mut buf, job.src_offset + n) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "at offset {} gave {n} of {} bytes: it changed while it was packed",
                        job.src_offset, job.len
                    ),
                ))
            }
            Ok(k) => k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        job.dst.write_all_at(&buf[..k], job.place.offset + n)?;
        n += k as u64;
    }
    Ok(())
}

/// Errors that say the kernel will not copy between these two files, so
/// a buffer must.
fn cannot_copy_in_kernel(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSYS | libc::EXDEV | libc::EOPNOTSUPP | libc::EINVAL | libc::EPERM)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(src: &std::path::Path, src_offset: u64, dst: &std::path::Path, len: u64) -> Job {
        Job {
            src: File::open(src).unwrap(),
            src_path: src.to_path_buf(),
            src_name: "src".into(),
            src_offset,
            dst: std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(dst)
                .unwrap(),
            place: Place {
                file: None,
                offset: 4096,
            },
            len,
        }
    }

    fn noise(n: usize) -> Vec<u8> {
        (0..n as u64)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8)
            .collect()
    }

    /// Through the kernel on one filesystem, through the buffer from
    /// another (tmpfs to disk: `EXDEV`): the same bytes at the place.
    #[test]
    fn copies_within_and_across_filesystems() {
        let disk = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let shm = tempfile::tempdir_in("/dev/shm").unwrap();
        let bytes = noise(3 << 20);
        for src_dir in [disk.path(), shm.path()] {
            let src = src_dir.join("src");
            std::fs::write(&src, &bytes).unwrap();
            let dst = disk.path().join("dst");
            let _ = std::fs::remove_file(&dst);
            copy(&job(&src, 1000, &dst, (2 << 20) + 7)).unwrap();
            let got = std::fs::read(&dst).unwrap();
            assert_eq!(got.len(), 4096 + (2 << 20) + 7);
            assert!(got[..4096].iter().all(|&b| b == 0));
            assert!(got[4096..] == bytes[1000..1000 + (2 << 20) + 7]);
        }
    }

    /// A source shorter than the job (it shrank) is an error naming it.
    #[test]
    fn a_short_source_is_an_error() {
        let disk = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let src = disk.path().join("src");
        std::fs::write(&src, noise(5000)).unwrap();
        let e = copy(&job(&src, 1000, &disk.path().join("dst"), 8000)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{e}");
        assert!(e.to_string().contains("gave 4000 of 8000 bytes"), "{e}");
    }

    /// Jobs queue behind one another and every one is reported, the
    /// failed one with its error.
    #[test]
    fn every_job_is_reported() {
        let disk = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let src = disk.path().join("src");
        std::fs::write(&src, noise(1 << 20)).unwrap();
        let mut copier = Copier::default();
        let mut done = Vec::new();
        for i in 0..6u64 {
            let len = if i == 3 { 2 << 20 } else { 1000 };
            let mut j = job(&src, 0, &disk.path().join(format!("dst{i}")), len);
            j.place.offset = i;
            done.extend(copier.send(j));
        }
        done.extend(copier.wait_all());
        let mut offsets: Vec<u64> = done.iter().map(|d| d.place.offset).collect();
        offsets.sort_unstable();
        assert_eq!(offsets, [0, 1, 2, 3, 4, 5]);
        for d in &done {
            assert_eq!(d.result.is_err(), d.place.offset == 3);
        }
        assert!(copier.wait_all().is_empty());
    }
}
