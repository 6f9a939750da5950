//! The entry points for opens and reads: answer at once what is at hand,
//! and hand what takes long (verifying a whole part, checking an object's
//! data rules, preparing a view, inflating an `.npz` member) to the job
//! threads ([`crate::tree::jobs`]), answering when it is done. A FUSE
//! worker thread never waits on them.
//!
//! Answers go to a callback, called exactly once, on the calling thread or
//! on a job thread. [`Tree::open_wait`] and [`Tree::read_wait`] wrap them
//! for callers that may block (tests, tools).

use std::sync::{mpsc, Arc};

use crate::decode::Encoding;
use crate::error::Error;
use crate::read;
use crate::store::{Reach, Reader};
use crate::tree::export::Wait;
use crate::tree::jobs::{Cancel, JobKey, Work};
use crate::tree::{Data, FsError, Ino, Node, OpenMode, Tree};

/// Where an open's answer goes.
pub type OpenReply = Box<dyn FnOnce(Result<OpenMode, FsError>) + Send>;
/// Where a read's answer goes; the bytes may borrow from the tree.
pub type ReadReply = Box<dyn for<'a> FnOnce(Result<Data<'a>, FsError>) + Send>;

/// Times a read waits again for what the cache let go between its wait
/// and its read (see [`Tree::read_resolved`]) before it answers EIO.
const READ_TRIES: u32 = 3;

impl Tree {
    /// Opens `ino` for the thread `tid` (0: unknown). A part's decoder is
    /// resolved on its first open; with `--verify` the part is verified
    /// whole (once, on a job thread) before its open succeeds; a view is
    /// prepared (on a job thread) before its open succeeds.
    pub fn open(self: &Arc<Self>, ino: Ino, tid: u32, reply: OpenReply) {
        let mode = OpenMode {
            keep_cache: !self.opts.direct_io,
            direct_io: self.opts.direct_io,
            backing: None,
        };
        let node = match self.node(ino) {
            Ok(n) => n,
            Err(e) => return reply(Err(e)),
        };
        // Everything below may read the part's stored bytes.
        if let Some((object, part)) = self.not_at_hand(node) {
            let tree = self.clone();
            let again = Box::new(move |r: Result<(), FsError>| match r {
                Ok(()) => tree.open(ino, tid, reply),
                Err(e) => reply(Err(e)),
            });
            return self.when_at_hand(object, part, tid, again);
        }
        let reply = self.with_backing(ino, node, tid, reply);
        match node {
            Node::Dir(_) => reply(Err(FsError::IsDir)),
            Node::Npy { object, part } if part == crate::tree::VIEW => {
                let done = Box::new(move |r: Result<(), FsError>| reply(r.map(|()| mode)));
                self.when_view_ready(object, tid, done);
            }
            Node::Part { object, part } | Node::Npy { object, part } => {
                if let Err(e) = self.decoder(object, part) {
                    return reply(Err(e));
                }
                if !self.opts.verify {
                    return reply(Ok(mode));
                }
                let done = Box::new(move |r: Result<(), FsError>| reply(r.map(|()| mode)));
                self.when_verified(object, part, tid, done);
            }
            Node::Raw { object, part } => {
                let (o, p) = self.part(object, part);
                let key = self.part_base[object as usize] + part;
                if let Err(e) = self.model.blob(p) {
                    return reply(Err(self.fail((key, "open"), o, p, &e)));
                }
                // A Hurray tensor's buffers are its bytes, served only raw:
                // --verify checks them (the MXFP scale rule) as it checks a
                // zTensor part, where `.raw` is structural access.
                if !(self.opts.verify && self.model.input().raw_is_data()) {
                    return reply(Ok(mode));
                }
                let done = Box::new(move |r: Result<(), FsError>| reply(r.map(|()| mode)));
                self.when_verified(object, part, tid, done);
            }
            Node::View { object } => {
                let done = Box::new(move |r: Result<(), FsError>| reply(r.map(|()| mode)));
                self.when_view_ready(object, tid, done);
            }
            Node::Manifest => {
                let done = Box::new(move |r: Result<(), FsError>| reply(r.map(|()| mode)));
                self.when_manifest_ready(tid, done);
            }
            // Each read waits for what the tensors it covers need.
            Node::Digest
            | Node::Config
            | Node::Meta { .. }
            | Node::Stats { .. }
            | Node::Safetensors { .. }
            | Node::SafetensorsIndex => reply(Ok(mode)),
            Node::FolderFile { file } if self.folder_file_is_remote(file) => {
                let done = Box::new(move |r: Result<(), FsError>| reply(r.map(|()| mode)));
                let tree = self.clone();
                let work: Work = Arc::new(move |_: &Cancel| tree.open_folder_file(file));
                (self.fetch_jobs).submit(JobKey::OpenFolderFile(file), tid, done, work);
            }
            Node::FolderFile { file } => reply(self.open_folder_file(file).map(|()| mode)),
        }
    }

    /// Answers `done` once manifest.json is rendered: a pass over the whole
    /// manifest (seconds for a million objects), so it runs as a job.
    pub(in crate::tree) fn when_manifest_ready(
        self: &Arc<Self>,
        tid: u32,
        done: crate::tree::jobs::Done,
    ) {
        if self.manifest_json.get().is_some() {
            return done(Ok(()));
        }
        let tree = self.clone();
        let work: Work = Arc::new(move |_: &Cancel| tree.manifest_json().map(drop));
        self.jobs.submit(JobKey::RenderManifest, tid, done, work);
    }

    /// Answers `done` once the safetensors plan's tables are made: a pass
    /// over every object, so it runs as a job.
    fn when_safetensors_tables_ready(self: &Arc<Self>, tid: u32, done: crate::tree::jobs::Done) {
        if self.safetensors_tables.get().is_some() {
            return done(Ok(()));
        }
        let tree = self.clone();
        let work: Work =
            Arc::new(move |_: &Cancel| tree.safetensors_tables().map(drop).ok_or(FsError::Io));
        self.jobs.submit(JobKey::PlanSafetensors, tid, done, work);
    }

    /// Reads up to `size` bytes of `ino` at `offset` for `caller`; short
    /// at the end. After a compressed part's read is answered, the next
    /// frame is decoded ahead of a sequential reader.
    pub fn read(
        self: &Arc<Self>,
        ino: Ino,
        offset: u64,
        size: u32,
        caller: Reader,
        reply: ReadReply,
    ) {
        match self.node(ino) {
            Ok(node) => self.read_resolved(ino, node, (offset, size), caller, reply, READ_TRIES),
            Err(e) => reply(Err(e)),
        }
    }

    /// [`Tree::read`] of `ino`, found to be `node`, of `size` bytes at
    /// `offset`: the node is resolved once per request and passed down.
    /// What `waits` found ready in the cache (a prepared view, a
    /// stats.json) can be let go before `read_node` takes it, by an insert
    /// past the budget: such a read waits for it again, `tries` times at
    /// most, rather than answer EIO.
    fn read_resolved(
        self: &Arc<Self>,
        ino: Ino,
        node: Node,
        (offset, size): (u64, u32),
        caller: Reader,
        reply: ReadReply,
        mut tries: u32,
    ) {
        let tid = caller.pid;
        let wait = match self.waits(node, offset, size) {
            Some(wait) => wait,
            None => {
                if self.fetches(node) {
                    return self.read_fetched(ino, node, offset, size, caller, reply);
                }
                let read = self.read_node(node, offset, size);
                let lost = match &read {
                    Err(FsError::Io) if tries > 0 => self.waits(node, offset, size),
                    _ => None,
                };
                let Some(wait) = lost else {
                    reply(read);
                    return self.read_ahead(node, offset, size);
                };
                tries -= 1;
                wait
            }
        };
        // Not ready: wait for the job, then read again.
        let tree = self.clone();
        let again = Box::new(move |r: Result<(), FsError>| match r {
            Ok(()) => tree.read_resolved(ino, node, (offset, size), caller, reply, tries),
            Err(e) => reply(Err(e)),
        });
        match wait {
            Wait::View(object) => self.when_view_ready(object, tid, again),
            Wait::Manifest => self.when_manifest_ready(tid, again),
            Wait::SafetensorsTables => self.when_safetensors_tables_ready(tid, again),
            Wait::Verified(object, part) => self.when_verified(object, part, tid, again),
            Wait::AtHand(object, part) => self.when_at_hand(object, part, tid, again),
            Wait::Stats(object) => self.when_stats_ready(object, tid, again),
        }
    }

    /// The part whose stored bytes `node` reads, when they are not at
    /// hand ([`crate::model::Model::at_hand`]): a FUSE worker must not
    /// make them so (an `.npz` member is inflated whole).
    pub(in crate::tree) fn not_at_hand(&self, node: Node) -> Option<(u32, u32)> {
        let (object, part) = match node {
            Node::Npy { part, .. } if part == crate::tree::VIEW => return None,
            Node::Part { object, part }
            | Node::Raw { object, part }
            | Node::Npy { object, part } => (object, part),
            Node::Dir(_)
            | Node::Manifest
            | Node::Digest
            | Node::Config
            | Node::Meta { .. }
            | Node::Stats { .. }
            | Node::View { .. }
            | Node::Safetensors { .. }
            | Node::SafetensorsIndex
            | Node::FolderFile { .. } => return None,
        };
        let (_, p) = self.part(object, part);
        (!self.model.at_hand(p)).then_some((object, part))
    }

    /// Answers `done` once part `part` of `object` has its stored bytes at
    /// hand: at once when it has, else after a job makes them so (an
    /// `.npz` member inflated, in time with its size). A failure is logged
    /// once and answered with EIO; the next request tries again.
    pub(in crate::tree) fn when_at_hand(
        self: &Arc<Self>,
        object: u32,
        part: u32,
        tid: u32,
        done: crate::tree::jobs::Done,
    ) {
        if self.model.at_hand(self.part(object, part).1) {
            return done(Ok(()));
        }
        let key = self.part_base[object as usize] + part;
        let tree = self.clone();
        let work: Work = Arc::new(move |c: &Cancel| {
            let (o, p) = tree.part(object, part);
            let made = crate::sys::map_read(|| tree.model.make_at_hand(p, &mut |_| c.keep_going()));
            match made {
                Ok(()) => Ok(()),
                Err(Error::Interrupted) => Err(FsError::Interrupted),
                Err(e) => Err(tree.fail((key, "prepare"), o, p, &e)),
            }
        });
        self.jobs.submit(JobKey::AtHand(key), tid, done, work);
    }

    /// True when a read of `node` may wait on a remote server: a file made
    /// of stored bytes, in a model read by range requests.
    fn fetches(&self, node: Node) -> bool {
        if let Node::FolderFile { file } = node {
            return self.folder_file_is_remote(file);
        }
        let stored = match node {
            Node::Raw { .. }
            | Node::Part { .. }
            | Node::Npy { .. }
            | Node::View { .. }
            | Node::Safetensors { .. } => true,
            Node::Dir(_)
            | Node::Manifest
            | Node::Digest
            | Node::Config
            | Node::Meta { .. }
            | Node::Stats { .. }
            | Node::SafetensorsIndex
            | Node::FolderFile { .. } => false,
        };
        stored && self.model.is_remote()
    }

    /// True when `node`'s bytes are stored bytes of one part (its raw file,
    /// a raw part, or such a part's `.npy`), whose reads keep no state: a
    /// read that finds them missing from the cache can be made again. A
    /// part counts once a job has found its encoding raw.
    fn stored_bytes(&self, node: Node) -> bool {
        let raw = |object: u32, part: u32| {
            // A view's `.npy` has no part (`VIEW`): none is found.
            let key = self.part_base[object as usize].checked_add(part);
            let state = key.and_then(|k| self.parts.get(k as usize)?.decoder().get());
            matches!(state.map(|s| s.as_ref()), Some(Ok(Encoding::Raw)))
        };
        match node {
            Node::Raw { .. } => true,
            Node::Part { object, part } | Node::Npy { object, part } => raw(object, part),
            Node::Dir(_)
            | Node::Manifest
            | Node::Digest
            | Node::Config
            | Node::Meta { .. }
            | Node::Stats { .. }
            | Node::View { .. }
            | Node::Safetensors { .. }
            | Node::SafetensorsIndex
            | Node::FolderFile { .. } => false,
        }
    }

    /// A read of a remote model's bytes: made by a job, which fills the
    /// block and frame caches, then answered from them. The FUSE worker
    /// never waits on the network.
    fn read_fetched(
        self: &Arc<Self>,
        ino: Ino,
        node: Node,
        offset: u64,
        size: u32,
        caller: Reader,
        reply: ReadReply,
    ) {
        if self.stored_bytes(node) {
            match self.read_reach(node, offset, size, Reach::AT_HAND.by(caller)) {
                Ok(Some(data)) => return reply(Ok(data)),
                Err(e) => return reply(Err(e)),
                Ok(None) => {} // not held now: a job fetches it
            }
        }
        let tree = self.clone();
        let done = Box::new(move |r: Result<(), FsError>| match r {
            Ok(()) => {
                reply(tree.read_node_for(node, offset, size, caller));
                tree.read_ahead(node, offset, size);
            }
            Err(e) => reply(Err(e)),
        });
        let tree = self.clone();
        let work: Work =
            Arc::new(move |_: &Cancel| tree.read_node_for(node, offset, size, caller).map(drop));
        (self.fetch_jobs).submit(JobKey::Read(ino, offset, size), caller.pid, done, work);
    }

    /// [`Tree::open`], waiting for the answer.
    pub fn open_wait(self: &Arc<Self>, ino: Ino) -> Result<OpenMode, FsError> {
        let (tx, rx) = mpsc::channel();
        self.open(
            ino,
            0,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx.recv().unwrap_or(Err(FsError::Io))
    }

    /// [`Tree::read`], waiting for the answer, as owned bytes.
    pub fn read_wait(
        self: &Arc<Self>,
        ino: Ino,
        offset: u64,
        size: u32,
    ) -> Result<Vec<u8>, FsError> {
        let (tx, rx) = mpsc::channel();
        let reply: ReadReply = Box::new(move |r: Result<Data<'_>, FsError>| {
            let _ = tx.send(r.map(|d| d.to_vec()));
        });
        self.read(ino, offset, size, Reader::default(), reply);
        rx.recv().unwrap_or(Err(FsError::Io))
    }

    /// Answers `done` once part `part` of `object` is verified (`--verify`):
    /// at once when it was, else after a job verifies its object.
    pub(in crate::tree) fn when_verified(
        self: &Arc<Self>,
        object: u32,
        part: u32,
        tid: u32,
        done: crate::tree::jobs::Done,
    ) {
        let key = (self.part_base[object as usize] + part) as usize;
        if let Some(state) = self.parts[key].verified() {
            return done(state.map_err(|()| FsError::Io));
        }
        let tree = self.clone();
        let work: Work = Arc::new(move |c: &Cancel| tree.verify_object(object, c));
        let tree = self.clone();
        let answer = Box::new(move |r: Result<(), FsError>| {
            done(r.and_then(|()| match tree.parts[key].verified() {
                Some(Ok(())) => Ok(()),
                Some(Err(())) | None => Err(FsError::Io),
            }))
        });
        self.jobs
            .submit(JobKey::VerifyObject(object), tid, answer, work);
    }

    /// A job: verifies an object as `check --verify` does
    /// ([`read::verify_object_all`]: the format's rules on its bytes, each
    /// part whole, its layout's data rules) and records each part's
    /// outcome, unless the work was abandoned. A part is served when it
    /// and its object's own rules are sound.
    fn verify_object(&self, object: u32, cancel: &Cancel) -> Result<(), FsError> {
        let base = self.part_base[object as usize] as usize;
        let o = self.object(object);
        // A request that raced the end of an earlier run of this job.
        if self.parts[base].verified().is_some() {
            return Ok(());
        }
        // The data rules hold every decoded part in memory at once.
        let room = match read::has_data_rules(o).then(|| self.fits_budget(object)) {
            None => None,
            Some(Ok(need)) => Some(self.frames.reserve(need)),
            Some(Err(e)) => {
                self.fail_object(object, &e);
                return self.set_verified(object, |_| false);
            }
        };
        // Parts whose bytes the backing file no longer holds (or whose shard
        // is missing) are not read, and not served.
        let dead: Vec<&str> = (o.parts.iter().enumerate())
            .filter_map(|(k, p)| {
                let e = self.live_blob(p).err()?;
                self.fail((base as u32 + k as u32, "verify"), o, p, &e);
                Some(p.name.as_str())
            })
            .collect();
        let skip = |p: &crate::format::Part| dead.contains(&p.name.as_str());
        let mut watch = Watched { tree: self, cancel };
        let r = crate::sys::map_read(|| {
            read::verify_object_all(&self.model, object as usize, &skip, &mut watch)
        });
        drop(room);
        match r {
            Err(Error::Interrupted) => Err(FsError::Interrupted),
            Err(e) => {
                self.fail_object(object, &e);
                self.set_verified(object, |_| false)
            }
            Ok(verdict) => self.set_verified(object, |p| verdict.serves(p)),
        }
    }

    /// Records each part of `object` as verified sound when `sound` says so,
    /// else as broken.
    fn set_verified(&self, object: u32, sound: impl Fn(usize) -> bool) -> Result<(), FsError> {
        let base = self.part_base[object as usize] as usize;
        for p in 0..self.object(object).parts.len() {
            let state = if sound(p) { Ok(()) } else { Err(()) };
            self.parts[base + p].set_verified(state);
        }
        Ok(())
    }

    /// Logs (once) an error about object `object` as a whole, found by
    /// `--verify`.
    fn fail_object(&self, object: u32, e: &Error) {
        let key = self.part_base[object as usize];
        self.failures.report((key, "verify object"), || {
            let o = self.object(object);
            format!("{}: {:?}: verify: {e}", self.model.root().name(), o.name)
        });
    }

    /// The bytes work on `object` holds with all its decoded parts in
    /// memory; refused when they exceed the cache budget (`--cache-mib`).
    pub(in crate::tree) fn fits_budget(&self, object: u32) -> crate::error::Result<u64> {
        let o = self.object(object);
        let need = crate::report::total(o.parts.iter().map(|p| p.decoded_size()));
        if need > self.opts.cache_bytes {
            return Err(Error::Unsupported(format!(
                "object {:?} needs its {need} decoded bytes in memory, more than the cache budget ({} bytes, --cache-mib)",
                o.name, self.opts.cache_bytes
            )));
        }
        Ok(need)
    }
}

/// A mount's verification: errors go to the log, and the job stops when no
/// request waits for it any more.
struct Watched<'a> {
    tree: &'a Tree,
    cancel: &'a Cancel<'a>,
}

impl read::Watch for Watched<'_> {
    fn read(&mut self, _: u64) -> crate::error::Result<()> {
        self.cancel.keep_going()
    }

    fn failed(&mut self, at: read::Place, e: &Error) {
        match at {
            read::Place::Part(o, p) => {
                let key = self.tree.part_base[o] + p as u32;
                let (obj, part) = self.tree.part(o as u32, p as u32);
                self.tree.fail((key, "verify"), obj, part, e);
            }
            read::Place::Object(o) => self.tree.fail_object(o as u32, e),
            read::Place::Model => {}
        }
    }
}
