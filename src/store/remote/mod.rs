//! Remote objects read by range requests: `http://`, `https://` and
//! `s3://` URLs, through the Arrow project's `object_store` client (request
//! signing, retries with backoff, timeouts).
//!
//! Opening costs one round trip: a suffix range of the object's last
//! [`TAIL`] bytes, whose answer also gives the object's size and ETag
//! (the model's footer, and for most models its manifest, are in it),
//! and at the same time its first block (every format's header, the
//! format's magic, a safetensors header), kept when the same version of
//! the object answered both; both are then held in the block cache,
//! within its budget, as any block is. A file its model names (a
//! checkpoint's file: [`Open::Head`]) is opened by its first [`HEAD`]
//! bytes alone, whose answer gives its size and ETag as well: its format
//! is known to start with its header, and hundreds of such files must
//! not cost two megabytes each. Every later request is conditional on that ETag (`If-Match`; the modification
//! time where a server gives no ETag), so an object replaced under a mount
//! fails its reads instead of mixing two versions' bytes. Reads go through
//! a block cache (`blocks.rs`): a 4 KiB read costs one block request.
//!
//! The parts: this file opens an object (its pin) and reads it through
//! the block caches; `grid.rs` lays blocks from a big part's start;
//! `ahead.rs` follows sequential readers and fetches ahead of them;
//! `client.rs` turns a URL into a server and a key, makes the process's
//! client for a server and its runtime, and reads an answer's body
//! without trusting its length. The client is injected
//! ([`Remote::open_with`]): the unit tests (`tests.rs`) read objects of an
//! in-memory store through a wrapper that counts and fails requests, with
//! no server.
//!
//! The requests run on a tokio runtime of this module's own, made on
//! first use in each process: `ztfs mount` opens the model, then forks its
//! daemon, which has none of its parent's threads and so makes a new
//! runtime and new connections.

mod ahead;
mod client;
mod grid;
pub mod hub;
mod pace;
#[cfg(test)]
mod tests;
pub mod tier;

use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};

use object_store::path::Path as Key;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};

use super::blocks::{self, Blocks};
use super::disk;
use super::Reach;
use crate::error::{Error, Result};
use ahead::{PartRead, Stream, Walk};
use client::{
    bad_answer, changed, check_size, check_versioned, fail, get, parse, pieces, runtime,
    shared_client, Server,
};
use grid::Grid;

pub use client::trust_unversioned;

/// Bytes read from the end of the object at open.
pub const TAIL: u64 = 1 << 20;
/// Bytes read from the start of a file a model names, at its open
/// ([`Open::Head`]): a safetensors file's header of up to about 450
/// tensors (100-150 bytes each), a split GGUF part's tensor infos.
pub const HEAD: u64 = 64 << 10;
/// The tail's and the head's names among an object's blocks: no grid's
/// (their names are below 2^64 - 2: an index below 2^44 under a shift
/// below 2^20, and no object has 2^44 - 2 blocks).
const TAIL_KEY: u64 = u64::MAX;
const HEAD_KEY: u64 = u64::MAX - 1;
/// Bytes per cached block: what a small read fetches.
pub const BLOCK: u64 = 1 << 20;
/// Blocks one read-ahead request loads at once, each by itself, when
/// there is a shared cache tier (see [`Object::fill_each`]).
const TIER_AT_ONCE: u64 = 4;

/// What the shared cache tier says of a block not on disk
/// ([`Object::ask_tier`]).
enum Tiered {
    /// The block, from the tier.
    Got(Vec<u8>),
    /// This node fetches it from the origin, having claimed it or not.
    Fetch { claimed: bool },
}
/// Bytes of blocks kept by a process until [`set_cache_budget`] says
/// otherwise (`ztfs mount --cache-mib`).
const CACHE: u64 = 256 << 20;

/// The block cache every remote object of this process shares: one
/// budget however many objects (a sharded checkpoint's files) are read.
fn shared_blocks() -> Arc<Blocks> {
    static BLOCKS: std::sync::OnceLock<Arc<Blocks>> = std::sync::OnceLock::new();
    BLOCKS.get_or_init(|| Arc::new(Blocks::new(CACHE))).clone()
}

/// Keeps remote objects' blocks within `bytes` in all (at least two
/// blocks: one being read and one arriving).
pub fn set_cache_budget(bytes: u64) {
    shared_blocks().set_budget(bytes.max(2 * BLOCK));
}

pub use super::url_of;

/// A range of a shared buffer: what a read gives.
pub type Shared = (Arc<Vec<u8>>, Range<usize>);

pub use super::Open;

/// One remote object, pinned at open; shared with its read-ahead threads.
pub struct Remote(Arc<Object>);

impl std::ops::Deref for Remote {
    type Target = Object;
    fn deref(&self) -> &Object {
        &self.0
    }
}

/// What a [`Remote`] holds.
pub struct Object {
    /// As shown: without its query.
    url: String,
    server: Server,
    key: Key,
    len: u64,
    pin: Pin,
    /// The client of the process that made it (see the module's note).
    client: Mutex<Option<(u32, Arc<dyn ObjectStore>)>>,
    /// The URL's query (a signature), kept out of what is said.
    secret: Option<String>,
    /// Where the tail read at open begins (the object's length when none
    /// was); its bytes are a block of the cache ([`TAIL_KEY`]) while the
    /// budget keeps them.
    tail_start: u64,
    /// Where the head read at open ends (0 when none was); its bytes are
    /// a block of the cache ([`HEAD_KEY`]) while the budget keeps them.
    head_end: u64,
    /// What names its blocks in the disk cache.
    id: [u8; 32],
    /// The disk cache its blocks are kept in, if any.
    disk: Option<Arc<disk::Disk>>,
    /// The shared cache tier its blocks are asked of before the origin,
    /// and written to after, if any (`tier.rs`).
    tier: Option<Arc<tier::Tier>>,
    /// The block cache (shared with the process's other objects) and this
    /// object's number in it.
    blocks: Arc<Blocks>,
    number: u64,
    /// Sequential readers seen lately, for read-ahead.
    streams: Mutex<Vec<Stream>>,
    /// Read-ahead threads running now.
    ahead: std::sync::atomic::AtomicUsize,
    /// How many may run at once.
    pace: Mutex<pace::Pace>,
    /// Where the model's parts are (offset, length; sorted), when told:
    /// for the read-ahead of a reader walking them in order.
    parts: std::sync::OnceLock<Vec<(u64, u64)>>,
    /// Open files walking the parts lately, most recent last.
    walks: Mutex<Vec<Walk>>,
}

/// What an open asks for besides the object's size and version.
#[derive(Clone, Copy)]
enum Ask {
    /// Its last [`TAIL`] bytes, and its first block with them when
    /// `first_block` ([`Open::Any`]).
    Tail { first_block: bool },
    /// Its first [`HEAD`] bytes ([`Open::Head`]).
    Head,
}

/// What every request after the first must match.
struct Pin {
    etag: Option<String>,
    modified: object_store::ObjectMeta,
}

impl Remote {
    /// Opens `given`: one round trip for the object's size and ETag and
    /// the bytes `open` asks for. Messages, logs and the disk cache's
    /// names use the URL without its query (see `store::shown`).
    pub fn open(given: &str, open: Open) -> Result<Remote> {
        let (server, _, secret) = parse(given)?;
        let url = &super::shown(Path::new(given));
        let client = shared_client(&server).map_err(|e| fail(url, secret.as_deref(), e))?;
        let ask = match open {
            Open::Any => Ask::Tail { first_block: true },
            Open::Head => Ask::Head,
        };
        Remote::open_at(given, client, disk::cache(), shared_blocks(), ask)
    }

    /// [`Remote::open`] through `client`, which serves the URL's server
    /// (the process's own for it, or a test's), keeping blocks in `blocks`
    /// (the process's block cache, or a test's) and in `disk` (the
    /// process's disk cache, a test's, or none).
    pub fn open_with(
        given: &str,
        client: Arc<dyn ObjectStore>,
        disk: Option<Arc<disk::Disk>>,
        blocks: Arc<Blocks>,
    ) -> Result<Remote> {
        Remote::open_at(
            given,
            client,
            disk,
            blocks,
            Ask::Tail { first_block: false },
        )
    }

    /// [`Remote::open_with`], asking for `ask`: with the tail, the
    /// object's first block too, at once (see the module's note) when
    /// `first_block`, unless a disk cache may hold it (its name needs the
    /// tail's answer: with `--cache-dir`, a second open reads it from the
    /// disk instead).
    fn open_at(
        given: &str,
        client: Arc<dyn ObjectStore>,
        disk: Option<Arc<disk::Disk>>,
        blocks: Arc<Blocks>,
        ask: Ask,
    ) -> Result<Remote> {
        static NUMBERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let (server, key, secret) = parse(given)?;
        let url = &super::shown(Path::new(given));
        let fail = |e| fail(url, secret.as_deref(), e);
        let (range, limit) = match ask {
            Ask::Tail { .. } => (GetRange::Suffix(TAIL), TAIL),
            Ask::Head => (GetRange::Bounded(0..HEAD), HEAD),
        };
        let opts = GetOptions {
            range: Some(range),
            ..GetOptions::default()
        };
        // A cache tier may hold the first block: it is named by the tail's
        // answer, so it is asked for after it.
        let with_first = matches!(ask, Ask::Tail { first_block: true })
            && disk.is_none()
            && tier::shared().is_none();
        let first = GetOptions {
            range: Some(GetRange::Bounded(0..BLOCK)),
            ..GetOptions::default()
        };
        let ((meta, range, bytes), first) = runtime()?
            .block_on(async {
                // The tail, or the head ([`Ask`]).
                let tail = async {
                    match get(&*client, &key, opts, limit).await {
                        Ok(answer) => Ok(answer),
                        // An empty object has no range to ask for (416): it
                        // is refused as a file too small, like a local one.
                        Err(e) => match client.head(&key).await {
                            Ok(meta) if meta.size == 0 => Ok((meta, 0..0, Vec::new())),
                            _ => Err(e),
                        },
                    }
                };
                // Any failure of the first block's request only costs the
                // request a reader makes later; so does its slowness: once
                // the tail is in, it gets as long again as the tail took
                // (a server stalling it must not hold the open for the
                // client's timeout).
                let start = std::time::Instant::now();
                let mut first = std::pin::pin!(async {
                    match with_first {
                        true => get(&*client, &key, first, BLOCK).await.ok(),
                        false => None,
                    }
                });
                let (tail, done) =
                    match futures::future::select(std::pin::pin!(tail), &mut first).await {
                        futures::future::Either::Left((tail, _)) => (tail, None),
                        futures::future::Either::Right((got, tail)) => (tail.await, Some(got)),
                    };
                let first = match done {
                    Some(got) => got,
                    None => {
                        let grace = start.elapsed().max(std::time::Duration::from_millis(100));
                        tokio::time::timeout(grace, first).await.ok().flatten()
                    }
                };
                tail.map(|t| (t, first))
            })
            .map_err(fail)?;
        let len = meta.size;
        check_size(url, len)?;
        let unversioned =
            meta.e_tag.is_none() && meta.last_modified.timestamp_nanos_opt() == Some(0);
        check_versioned(url, unversioned)?;
        let asked = match ask {
            Ask::Tail { .. } => len - TAIL.min(len)..len,
            Ask::Head => 0..HEAD.min(len),
        };
        if range != asked {
            return Err(bad_answer(url, &range, asked));
        }
        log::debug!(
            "{url}: opened with 1 request: {len} bytes, ETag {:?}, bytes [{}, {}) read (and its first block with them, when asked and longer)",
            meta.e_tag,
            range.start,
            range.end
        );
        // Named without the query: the same object signed again shares it.
        let unsigned = super::url_query(Path::new(given)).map_or(given, |(base, _)| base);
        let id = disk::object_id(
            unsigned,
            meta.e_tag.as_deref(),
            len,
            meta.last_modified.timestamp_micros(),
        );
        // The first block, when the object is longer than its tail and the
        // answer is of the version the tail's was (same ETag and size).
        let first = first.filter(|(m, r, b)| {
            len > TAIL
                && meta.e_tag.is_some()
                && m.e_tag == meta.e_tag
                && m.size == len
                && *r == (0..BLOCK)
                && b.len() as u64 == BLOCK
        });
        let remote = Remote(Arc::new(Object {
            id,
            url: url.clone(),
            server,
            key,
            len,
            pin: Pin {
                etag: meta.e_tag.clone(),
                modified: meta,
            },
            client: Mutex::new(Some((std::process::id(), client))),
            secret,
            tail_start: match ask {
                Ask::Tail { .. } => range.start,
                Ask::Head => len,
            },
            head_end: match ask {
                Ask::Tail { .. } => 0,
                Ask::Head => range.end,
            },
            blocks,
            number: NUMBERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            disk,
            tier: tier::shared(),
            streams: Mutex::new(Vec::new()),
            ahead: Default::default(),
            pace: Mutex::new(pace::Pace::new()),
            parts: Default::default(),
            walks: Default::default(),
        }));
        // What was read is held as the cache holds blocks, within its
        // budget: a model of many files by URL (an index may name 100,000)
        // would otherwise keep it for its life. Once dropped, a read there
        // fetches grid 0's block like any other.
        let piece = match ask {
            Ask::Tail { .. } => TAIL_KEY,
            Ask::Head => HEAD_KEY,
        };
        let _ = remote
            .blocks
            .get(remote.piece_key(piece), || Ok(Arc::new(bytes)));
        if let Some((_, _, bytes)) = first {
            let key = remote.key(Grid::ZERO, 0);
            let _ = remote.blocks.get(key, || Ok(Arc::new(bytes)));
        }
        Ok(remote)
    }

    /// The object's size at open.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty object.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `[offset, offset + len)`: from the tail read at open, else from the
    /// block cache, fetching what it lacks. A range within the tail or one
    /// block is that buffer itself, not a copy (a FUSE read is); a longer
    /// one is a new buffer that grows block by block as bytes arrive, so a
    /// length the server's size claims is never allocated before the
    /// server has sent it.
    pub fn read(&self, offset: u64, len: u64) -> Result<Shared> {
        let read = self.read_on(Grid::ZERO, offset, len, Reach::WAIT, None)?;
        read.ok_or_else(|| super::unreachable_miss(&self.url))
    }

    /// The end of `[offset, offset + len)`, checked to lie in the object.
    fn end_of(&self, offset: u64, len: u64) -> Result<u64> {
        (offset.checked_add(len))
            .filter(|&e| e <= self.len)
            .ok_or_else(|| {
                let why = format!(
                    "range [{offset}, +{len}) is outside the object ({} bytes)",
                    self.len
                );
                Error::at(self.url.clone(), Error::OutOfRange(why))
            })
    }

    /// A few bytes far from where anything is read soon (a zip member's
    /// local header, a Hurray descriptor): from the tail read at open, a
    /// block held or one kept in the disk cache (a later open's, once the
    /// data around them was read), else by one request of exactly these
    /// bytes, past the block cache (a block would be a megabyte for thirty
    /// bytes).
    pub fn read_small(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let end = self.end_of(offset, len)?;
        if len == 0 {
            return Ok(Vec::new());
        }
        if let Some((piece, r)) = self.opened(offset, len) {
            return Ok(piece[r].to_vec());
        }
        let grid = Grid::ZERO;
        let j = grid.block_of(offset);
        if grid.block_of(end - 1) == j {
            let at = (offset - grid.start(j)) as usize;
            if let Some(b) = self.blocks.peek(self.key(grid, j)) {
                return Ok(b[at..at + len as usize].to_vec());
            }
            // Kept on disk: loaded into the block cache as any read would.
            let on_disk = |d: &disk::Disk| d.has(&disk::key(&self.id, grid.key(j)));
            if self.disk.as_deref().is_some_and(on_disk) {
                let b = (self.blocks).get(self.key(grid, j), || self.load(grid, j))?;
                return Ok(b[at..at + len as usize].to_vec());
            }
        }
        self.fetch(offset..end)
    }

    /// [`Remote::read`] of `[offset, offset + len)` within the blob at
    /// `blob_offset` of `blob_len` bytes: a big blob's on blocks laid from
    /// its start (see `Grid`). At hand ([`Reach::at_hand`]), only from what is
    /// held now: `None` where a block would have to be fetched.
    pub fn read_blob(
        &self,
        blob_offset: u64,
        blob_len: u64,
        offset: u64,
        len: u64,
        reach: Reach,
    ) -> Result<Option<Shared>> {
        // A small blob's blocks are the object's own (grid 0), shared with
        // its neighbours; it is still a part, whose reader's walk across
        // the parts goes on through it. A read at hand (a FUSE worker's)
        // starts the read-ahead as one that waits does: in the background.
        let (grid, blocks) = grid::of_blob(blob_offset, blob_len, self.len);
        let part = PartRead {
            blocks,
            offset: blob_offset,
        };
        self.read_on(grid, offset, len, reach, Some(part))
    }

    /// `[offset, offset + len)` on `grid`; `None` when `reach` is
    /// at hand only and a block is not held.
    fn read_on(
        &self,
        grid: Grid,
        offset: u64,
        len: u64,
        reach: Reach,
        part: Option<PartRead>,
    ) -> Result<Option<Shared>> {
        let end = self.end_of(offset, len)?;
        if len == 0 {
            return Ok(Some((Arc::default(), 0..0)));
        }
        if let Some(held) = self.opened(offset, len) {
            return Ok(Some(held));
        }
        let (first, last) = (grid.block_of(offset), grid.block_of(end - 1));
        self.read_ahead(grid, (first, last), part, reach);
        let block = |j: u64| match reach.at_hand {
            true => Ok(self.blocks.peek(self.key(grid, j))),
            false => {
                let (b, waited) =
                    (self.blocks).get_noting(self.key(grid, j), || self.load(grid, j))?;
                if waited {
                    // Not here yet (or on its way): reading ahead is behind.
                    self.pace().stalled();
                }
                Ok(Some(b))
            }
        };
        // Blocks read to their end go first from the cache.
        let done = |j: u64| {
            if end >= grid.range(j, self.len).end {
                self.blocks.done_with(self.key(grid, j));
            }
        };
        if first == last {
            let at = (offset - grid.start(first)) as usize;
            let read = block(first)?.map(|b| (b, at..at + len as usize));
            if read.is_some() {
                done(first);
            }
            return Ok(read);
        }
        let mut out = Vec::with_capacity(len.min(BLOCK) as usize);
        for j in first..=last {
            let Some(b) = block(j)? else {
                return Ok(None);
            };
            let r = grid.range(j, self.len);
            let from = offset.max(r.start) - r.start;
            let to = end.min(r.end) - r.start;
            out.extend_from_slice(&b[from as usize..to as usize]);
            done(j);
        }
        Ok(Some((Arc::new(out), 0..len as usize)))
    }

    /// Tells where the model's parts are (offset, length), once: a reader
    /// that reads them in the object's order is then fetched ahead across
    /// parts, not only within one.
    pub fn set_parts(&self, mut parts: Vec<(u64, u64)>) {
        parts.sort_unstable();
        parts.dedup_by_key(|p| p.0);
        let _ = self.parts.set(parts);
    }

    /// Makes this process's client for the object's server in the
    /// background (certificates loaded, pool made: 4 ms measured), so that
    /// a daemon's first read waits only for its request.
    pub fn prepare(&self) {
        let object = self.0.clone();
        let _ = std::thread::Builder::new()
            .name("ztfs-prepare".into())
            .spawn(move || object.client().map(drop));
    }

    /// Hands `[offset, offset + len)` to `f` in pieces of `chunk` bytes,
    /// one request each, past the block cache (a whole-file digest would
    /// only wash it out).
    pub fn stream(
        &self,
        offset: u64,
        len: u64,
        chunk: u64,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        let mut pos = offset;
        while pos < offset + len {
            let to = (pos + chunk).min(offset + len);
            f(&self.fetch(pos..to)?);
            pos = to;
        }
        Ok(())
    }
}

impl Object {
    /// Block `j` of `grid`'s name in the block cache.
    fn key(&self, grid: Grid, j: u64) -> blocks::Key {
        blocks::Key::from(self.number) << 64 | blocks::Key::from(grid.key(j))
    }

    /// The name in the block cache of the tail ([`TAIL_KEY`]) or the
    /// head ([`HEAD_KEY`]) read at open.
    fn piece_key(&self, piece: u64) -> blocks::Key {
        blocks::Key::from(self.number) << 64 | blocks::Key::from(piece)
    }

    /// `[offset, offset + len)` (inside the object) from the tail or the
    /// head read at open, while the block cache holds it.
    fn opened(&self, offset: u64, len: u64) -> Option<Shared> {
        if let Some(at) = offset.checked_sub(self.tail_start) {
            let tail = self.blocks.peek(self.piece_key(TAIL_KEY))?;
            return Some((tail, at as usize..(at + len) as usize));
        }
        if offset + len <= self.head_end {
            let head = self.blocks.peek(self.piece_key(HEAD_KEY))?;
            return Some((head, offset as usize..(offset + len) as usize));
        }
        None
    }

    /// Block `j` of `grid`: from the disk cache, else from the shared cache
    /// tier, else fetched (and kept in both).
    fn load(&self, grid: Grid, j: u64) -> Result<Arc<Vec<u8>>> {
        let range = grid.range(j, self.len);
        let key = disk::key(&self.id, grid.key(j));
        let disk = self.disk.as_deref();
        if let Some(d) = disk {
            if let Some(b) = d.get(&key, range.end - range.start, self.blocks.buffer()) {
                return Ok(Arc::new(b));
            }
        }
        let claimed = match self.ask_tier(&key, range.end - range.start) {
            Tiered::Got(b) => return Ok(Arc::new(b)),
            Tiered::Fetch { claimed } => claimed,
        };
        let mut fetched = Vec::new();
        let len = range.end - range.start;
        let buffer = &mut || self.blocks.buffer();
        match self.fetch_in(range, len, buffer, &mut |b| fetched = b) {
            Ok(()) => {
                let bytes = Arc::new(fetched);
                self.keep(&key, &bytes, claimed);
                Ok(bytes)
            }
            Err(e) => {
                self.release(&key, claimed);
                Err(e)
            }
        }
    }

    /// What the shared cache tier says of block `key` of `len` bytes, not
    /// on disk: the block (kept on disk too); or, when it lacks it, that
    /// this node fetches it from the origin, having claimed it or not. A
    /// block another node claimed is waited for, and fetched unclaimed if
    /// it does not come (and then not written: the claimer will). No
    /// tier: fetch, unclaimed.
    fn ask_tier(&self, key: &disk::Key, len: u64) -> Tiered {
        let Some(t) = &self.tier else {
            return Tiered::Fetch { claimed: false };
        };
        let got = |bytes: Vec<u8>| {
            if let Some(d) = self.disk.as_deref() {
                d.put(key, &bytes);
            }
            Tiered::Got(bytes)
        };
        if let Some(bytes) = t.get(key, len) {
            return got(bytes);
        }
        // A claim released without the block (its node could not fetch or
        // write it) is claimed again, once: someone is to write it.
        for _ in 0..2 {
            match t.claim(key) {
                tier::Claim::Mine => return Tiered::Fetch { claimed: true },
                tier::Claim::Unknown => break,
                tier::Claim::Theirs => match t.wait_for(key, len) {
                    tier::Waited::Got(bytes) => return got(bytes),
                    tier::Waited::Gone => continue,
                    tier::Waited::No => break,
                },
            }
        }
        Tiered::Fetch { claimed: false }
    }

    /// Keeps block `key`, fetched from the origin, on disk and (behind the
    /// reader, the cache's own bytes) in the shared cache tier, releasing
    /// this node's claim of it after.
    fn keep(&self, key: &disk::Key, bytes: &Arc<Vec<u8>>, claimed: bool) {
        if let Some(d) = self.disk.as_deref() {
            d.put(key, bytes);
        }
        if let Some(t) = &self.tier {
            t.put_behind(key, bytes.clone(), claimed);
        }
    }

    /// Releases this node's claim of block `key`, which it did not fetch.
    fn release(&self, key: &disk::Key, claimed: bool) {
        if let (Some(t), true) = (&self.tier, claimed) {
            t.release_behind(key);
        }
    }

    /// Read-ahead of blocks `from..from + count` into the block cache:
    /// those on disk are loaded from it, each run of the others fetched by
    /// one request, every block kept on disk too. With a shared cache tier
    /// see [`Object::fill_each`].
    fn fill(&self, grid: Grid, from: u64, count: u64) {
        if self.tier.is_some() {
            return self.fill_each(grid, from, count);
        }
        let disk = self.disk.as_deref();
        let on_disk = |j: u64| disk.is_some_and(|d| d.has(&disk::key(&self.id, grid.key(j))));
        // A first block cut short (block 0 of a shifted grid) is fetched
        // alone: a run is cut into whole blocks from its start.
        let short = |j: u64| j * BLOCK < grid.shift;
        let end = from + count;
        let mut j = from;
        while j < end {
            if on_disk(j) || short(j) {
                let _ = self.blocks.get(self.key(grid, j), || self.load(grid, j));
                j += 1;
                continue;
            }
            let run = (j..end).take_while(|&i| !on_disk(i)).count() as u64;
            let first = j;
            let filled = self.blocks.fill_run(self.key(grid, first), run, |n, put| {
                let mut i = first;
                let range = grid.start(first)..grid.start(first + n).min(self.len);
                self.fetch_blocks(range, &mut |bytes| {
                    (self.pace()).arrived(bytes.len() as u64, std::time::Instant::now());
                    let bytes = Arc::new(bytes);
                    self.keep(&disk::key(&self.id, grid.key(i)), &bytes, false);
                    i += 1;
                    put(bytes)
                })
            });
            // Past the blocks fetched, or one another reader holds.
            j += filled.max(1);
        }
    }

    /// Read-ahead with a shared cache tier: each block loaded by itself
    /// ([`Object::load`]: the disk, the tier, a claim, the origin),
    /// [`TIER_AT_ONCE`] at a time, in order. A block another node claimed
    /// is waited for here, in the background, as its reader would (one
    /// ask of the tier a block: the reader that comes meanwhile waits for
    /// this load), while the other loads go on to the next blocks, so
    /// that nodes reading together claim blocks apart. A block held or
    /// being loaded is passed over.
    fn fill_each(&self, grid: Grid, from: u64, count: u64) {
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        let next = AtomicU64::new(from);
        let end = from + count;
        let work = || loop {
            let j = next.fetch_add(1, Relaxed);
            if j >= end {
                return;
            }
            self.blocks.fill_run(self.key(grid, j), 1, |_, put| {
                let bytes = self.load(grid, j)?;
                (self.pace()).arrived(bytes.len() as u64, std::time::Instant::now());
                put(bytes);
                Ok(())
            });
        };
        std::thread::scope(|s| {
            for _ in 1..TIER_AT_ONCE.min(count) {
                s.spawn(work);
            }
            work();
        });
    }

    /// One conditional range request, its bytes in one buffer.
    fn fetch(&self, range: Range<u64>) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let len = range.end - range.start;
        self.fetch_in(range, len, &mut Vec::new, &mut |piece| out = piece)?;
        Ok(out)
    }

    /// One conditional range request, its bytes for a run of blocks handed
    /// to `put` a block at a time as they arrive, in the cache's buffers.
    fn fetch_blocks(&self, range: Range<u64>, put: &mut dyn FnMut(Vec<u8>)) -> Result<()> {
        self.fetch_in(range, BLOCK, &mut || self.blocks.buffer(), put)
    }

    /// One conditional range request whose answer must be of this object
    /// and range, its body handed to `put` in pieces of `piece` bytes (the
    /// last may be shorter).
    fn fetch_in(
        &self,
        range: Range<u64>,
        piece: u64,
        buffer: &mut dyn FnMut() -> Vec<u8>,
        put: &mut dyn FnMut(Vec<u8>),
    ) -> Result<()> {
        let client = self.client()?;
        let opts = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            if_match: self.pin.etag.clone(),
            // An unversioned object (trusted so) has no time to send.
            if_unmodified_since: match self.pin.etag {
                None if self.pin.modified.last_modified.timestamp_nanos_opt() != Some(0) => {
                    Some(self.pin.modified.last_modified)
                }
                _ => None,
            },
            ..GetOptions::default()
        };
        let url = &self.url;
        runtime()?.block_on(async {
            let r = (client.get_opts(&self.key, opts).await).map_err(|e| self.fail(e))?;
            // A server that ignores If-Match still names the version it sent.
            if r.meta.size != self.len || (self.pin.etag.is_some() && r.meta.e_tag != self.pin.etag)
            {
                return Err(changed(url));
            }
            if r.range != range {
                return Err(bad_answer(url, &r.range, range.clone()));
            }
            let want = range.end - range.start;
            pieces(r.into_stream(), want, piece, buffer, put)
                .await
                .map_err(|e| self.fail(e))
        })?;
        log::debug!("{url}: fetched [{}, {})", range.start, range.end);
        Ok(())
    }

    fn pace(&self) -> std::sync::MutexGuard<'_, pace::Pace> {
        self.pace.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn fail(&self, e: object_store::Error) -> Error {
        fail(&self.url, self.secret.as_deref(), e)
    }

    /// The client of this process, made again after a fork.
    fn client(&self) -> Result<Arc<dyn ObjectStore>> {
        let pid = std::process::id();
        let mut c = self.client.lock().unwrap_or_else(|e| e.into_inner());
        match &*c {
            Some((p, client)) if *p == pid => Ok(client.clone()),
            _ => {
                // The parent's client holds connections of a runtime whose
                // threads are not in this process: leave it be.
                std::mem::forget(c.take());
                let client = shared_client(&self.server).map_err(|e| self.fail(e))?;
                *c = Some((pid, client.clone()));
                Ok(client)
            }
        }
    }
}
