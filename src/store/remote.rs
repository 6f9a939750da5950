//! Remote objects read by range requests: `http://`, `https://` and
//! `s3://` URLs, through the Arrow project's `object_store` client (request
//! signing, retries with backoff, timeouts).
//!
//! Opening costs one request: a suffix range of the object's last
//! [`TAIL`] bytes, whose answer also gives the object's size and ETag.
//! The model's footer, and for most models its manifest, are in it. Every
//! later request is conditional on that ETag (`If-Match`; the modification
//! time where a server gives no ETag), so an object replaced under a mount
//! fails its reads instead of mixing two versions' bytes. Reads go through
//! a block cache (`blocks.rs`): a 4 KiB read costs one block request.
//!
//! The requests run on a tokio runtime of this module's own, made on
//! first use in each process: `ztfs mount` opens the model, then forks its
//! daemon, which has none of its parent's threads and so makes a new
//! runtime and new connections.
//!
//! Over 800 lines, on purpose: opening, pinning, the grids of blocks and
//! the fetch path are one state machine over one client; `blocks.rs`,
//! `disk.rs` and `aws.rs` already hold what stands apart from it.

use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use object_store::path::Path as Key;
use object_store::{
    BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt, RetryConfig,
};

use super::blocks::Blocks;
use super::disk;
use crate::error::{Error, Result};

/// Bytes read from the end of the object at open.
pub const TAIL: u64 = 1 << 20;
/// Bytes per cached block: what a small read fetches.
pub const BLOCK: u64 = 1 << 20;
/// Bytes of blocks kept per object.
const CACHE: u64 = 256 << 20;
/// Most blocks a sequential reader is kept ahead by.
const AHEAD: u64 = 64;
/// Most blocks one read-ahead request asks for: a window is fetched by
/// several requests at once, each served block by block as it arrives.
const PIECE: u64 = 16;
/// Sequential readers followed per object, and read-ahead requests at once.
const STREAMS: usize = 8;
const AHEAD_THREADS: usize = 4;
/// How long one request may take, connecting included.
const TIMEOUT: Duration = Duration::from_secs(20);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Retries of a failed request (connection refused or reset, 5xx,
/// timeout), with exponential backoff, all within [`RETRY_TIME`].
const RETRIES: usize = 3;
const RETRY_TIME: Duration = Duration::from_secs(30);

pub use super::url_of;

/// A range of a shared buffer: what a read gives.
pub type Shared = (Arc<Vec<u8>>, Range<usize>);

/// Where an object's blocks begin: block `j` is `[j * BLOCK - shift,
/// (j + 1) * BLOCK - shift)` of the object (clipped to it). Reads use grid
/// 0, except those of a big blob ([`Remote::read_blob`]), which use the
/// grid one of whose blocks begins at the blob's start: a reader's reads of
/// a part come at block-sized steps from the part's start, and on that
/// grid each lies in one block, served as it is, where on grid 0 each
/// would straddle two and be joined by a copy.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Grid {
    shift: u64,
}

/// Blobs at least this long get a grid of their own.
const BIG_BLOB: u64 = 4 * BLOCK;

impl Grid {
    const ZERO: Grid = Grid { shift: 0 };

    /// The grid on which a block begins at `offset`.
    fn starting_at(offset: u64) -> Grid {
        Grid {
            shift: (BLOCK - offset % BLOCK) % BLOCK,
        }
    }

    /// The block holding byte `offset`.
    fn block_of(self, offset: u64) -> u64 {
        (offset + self.shift) / BLOCK
    }

    /// Where block `j` begins (0 for a first block cut short).
    fn start(self, j: u64) -> u64 {
        (j * BLOCK).saturating_sub(self.shift)
    }

    /// Block `j`'s bytes in an object of `len` bytes.
    fn range(self, j: u64, len: u64) -> Range<u64> {
        self.start(j).min(len)..self.start(j + 1).min(len)
    }

    /// Blocks in an object of `len` bytes.
    fn count(self, len: u64) -> u64 {
        (len + self.shift).div_ceil(BLOCK)
    }

    /// Block `j`'s name in the block caches: the shift above the index
    /// (an index is below 2^44, a shift below 2^20), so grid 0's names are
    /// its indices and a grid's consecutive blocks have consecutive names.
    fn key(self, j: u64) -> u64 {
        (self.shift << 44) | j
    }
}

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
    tail: (u64, Arc<Vec<u8>>),
    /// What names its blocks in the disk cache.
    id: [u8; 32],
    blocks: Blocks,
    /// Sequential readers seen lately, for read-ahead.
    streams: Mutex<Vec<Stream>>,
    /// Read-ahead threads running now.
    ahead: std::sync::atomic::AtomicUsize,
}

/// A sequential reader: the last block it read, how far ahead of it to
/// fetch, and where fetching ahead has got to.
#[derive(Clone, Copy)]
struct Stream {
    grid: Grid,
    last: u64,
    window: u64,
    ahead_to: u64,
}

/// Where the object lives.
#[derive(Clone)]
enum Server {
    /// An HTTP(S) server: scheme, host and port.
    Http(String),
    /// An S3 bucket; endpoint, region and credentials from the `AWS_*`
    /// environment.
    S3(String),
}

/// What every request after the first must match.
struct Pin {
    etag: Option<String>,
    modified: object_store::ObjectMeta,
}

impl Remote {
    /// Opens `given`: one request for the object's tail, size and ETag.
    /// Messages, logs and the disk cache's names use the URL without its
    /// query (see `store::shown`).
    pub fn open(given: &str) -> Result<Remote> {
        let (server, key, secret) = parse(given)?;
        let url = &super::shown(Path::new(given));
        let fail = |e| fail(url, secret.as_deref(), e);
        let client = shared_client(&server).map_err(fail)?;
        let opts = GetOptions {
            range: Some(GetRange::Suffix(TAIL)),
            ..GetOptions::default()
        };
        let (meta, range, bytes) = runtime()?
            .block_on(async {
                match get(&*client, &key, opts, TAIL).await {
                    Ok(answer) => Ok(answer),
                    // An empty object has no range to ask for (416): it
                    // is refused as a file too small, like a local one.
                    Err(e) => match client.head(&key).await {
                        Ok(meta) if meta.size == 0 => Ok((meta, 0..0, Vec::new())),
                        _ => Err(e),
                    },
                }
            })
            .map_err(fail)?;
        let len = meta.size;
        check_size(url, len)?;
        let unversioned =
            meta.e_tag.is_none() && meta.last_modified.timestamp_nanos_opt() == Some(0);
        check_versioned(url, unversioned)?;
        if range.end != len || range.end - range.start != TAIL.min(len) {
            return Err(bad_answer(url, &range, len - TAIL.min(len)..len));
        }
        log::debug!(
            "{url}: opened with 1 request: {len} bytes, ETag {:?}, the last {} bytes read",
            meta.e_tag,
            bytes.len()
        );
        // Named without the query: the same object signed again shares it.
        let unsigned = super::url_query(Path::new(given)).map_or(given, |(base, _)| base);
        let id = disk::object_id(
            unsigned,
            meta.e_tag.as_deref(),
            len,
            meta.last_modified.timestamp_micros(),
        );
        Ok(Remote(Arc::new(Object {
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
            tail: (range.start, Arc::new(bytes)),
            blocks: Blocks::new(CACHE),
            streams: Mutex::new(Vec::new()),
            ahead: Default::default(),
        })))
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
        self.read_on(Grid::ZERO, offset, len)
    }

    /// [`Remote::read`] of `[offset, offset + len)` within the blob at
    /// `blob_offset` of `blob_len` bytes: a big blob's on blocks laid from
    /// its start (see `Grid`).
    pub fn read_blob(
        &self,
        blob_offset: u64,
        blob_len: u64,
        offset: u64,
        len: u64,
    ) -> Result<Shared> {
        let grid = if blob_len >= BIG_BLOB {
            Grid::starting_at(blob_offset)
        } else {
            Grid::ZERO
        };
        self.read_on(grid, offset, len)
    }

    fn read_on(&self, grid: Grid, offset: u64, len: u64) -> Result<Shared> {
        let end = (offset.checked_add(len))
            .filter(|&e| e <= self.len)
            .ok_or_else(|| {
                Error::OutOfRange(format!(
                    "{}: range [{offset}, +{len}) is outside the object ({} bytes)",
                    self.url, self.len
                ))
            })?;
        if len == 0 {
            return Ok((Arc::default(), 0..0));
        }
        let (start, tail) = &self.tail;
        if offset >= *start {
            let at = (offset - start) as usize;
            return Ok((tail.clone(), at..at + len as usize));
        }
        let (first, last) = (grid.block_of(offset), grid.block_of(end - 1));
        self.read_ahead(grid, first, last);
        let block = |j: u64| {
            if super::probing() {
                return self.blocks.peek(grid.key(j)).ok_or_else(super::missed);
            }
            self.blocks.get(grid.key(j), || self.load(grid, j))
        };
        if first == last {
            let at = (offset - grid.start(first)) as usize;
            return Ok((block(first)?, at..at + len as usize));
        }
        let mut out = Vec::with_capacity(len.min(BLOCK) as usize);
        for j in first..=last {
            let b = block(j)?;
            let r = grid.range(j, self.len);
            let from = offset.max(r.start) - r.start;
            let to = end.min(r.end) - r.start;
            out.extend_from_slice(&b[from as usize..to as usize]);
        }
        Ok((Arc::new(out), 0..len as usize))
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

    /// Notes a read of blocks `first..=last`; a reader that has read three
    /// blocks in a row is kept ahead by a window of blocks fetched in the
    /// background, which doubles with each block up to [`AHEAD`] blocks (as
    /// mountpoint-s3 and hf-mount do). The window is topped up when less
    /// than half of it is left, by requests of at most [`PIECE`] blocks,
    /// [`AHEAD_THREADS`] of them at once. Others fetch only what they read.
    fn read_ahead(&self, grid: Grid, first: u64, last: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let blocks = grid.count(self.len);
        let mut todo = Vec::new();
        {
            let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
            // A read that touches a stream's last block or the next one
            // continues it (a part need not start on a block, so its reads
            // may straddle two); the kernel may send a reader's reads a
            // little out of order, so one a block or two behind still is.
            let near = |s: &Stream| s.grid == grid && first <= s.last + 1 && last + 2 >= s.last;
            let Some(i) = streams.iter().position(near) else {
                if streams.len() >= STREAMS {
                    streams.remove(0);
                }
                streams.push(Stream {
                    grid,
                    last,
                    window: 0,
                    ahead_to: last + 1,
                });
                return;
            };
            let mut s = streams.remove(i);
            // A second block in a row may be chance (the model's header,
            // then a part's start); a third is a reader.
            if last > s.last {
                s.window = (s.window * 2).clamp(1, AHEAD);
            }
            s.last = s.last.max(last);
            s.ahead_to = s.ahead_to.max(s.last + 1);
            let want = (s.last + 1 + s.window).min(blocks);
            if s.window >= 2 && s.ahead_to - s.last - 1 <= s.window / 2 {
                while s.ahead_to < want && self.ahead.fetch_add(1, Relaxed) < AHEAD_THREADS {
                    let n = (want - s.ahead_to).min(PIECE);
                    todo.push((s.ahead_to, n));
                    s.ahead_to += n;
                }
                if s.ahead_to < want {
                    // The loop's last count found every thread busy.
                    self.ahead.fetch_sub(1, Relaxed);
                }
            }
            streams.push(s); // most recent last
        }
        for (from, count) in todo {
            log::debug!(
                "{}: reading ahead blocks [{from}, {})",
                self.url,
                from + count
            );
            let object = self.0.clone();
            let spawned = std::thread::Builder::new()
                .name("ztfs-ahead".into())
                .spawn(move || {
                    object.fill(grid, from, count);
                    object.ahead.fetch_sub(1, Relaxed);
                });
            if spawned.is_err() {
                self.ahead.fetch_sub(1, Relaxed);
            }
        }
    }
}

impl Object {
    /// Block `j` of `grid`: from the disk cache, else fetched (and kept
    /// there).
    fn load(&self, grid: Grid, j: u64) -> Result<Vec<u8>> {
        let range = grid.range(j, self.len);
        let disk = disk::cache().map(|d| (d, disk::key(&self.id, grid.key(j))));
        if let Some((d, key)) = &disk {
            if let Some(b) = d.get(key, range.end - range.start, self.blocks.buffer()) {
                return Ok(b);
            }
        }
        let bytes = self.fetch(range)?;
        if let Some((d, key)) = &disk {
            d.put(key, &bytes);
        }
        Ok(bytes)
    }

    /// Read-ahead of blocks `from..from + count` into the block cache:
    /// those on disk are loaded from it, each run of the others fetched by
    /// one request, every block kept on disk too.
    fn fill(&self, grid: Grid, from: u64, count: u64) {
        let disk = disk::cache();
        let on_disk = |j: u64| disk.is_some_and(|d| d.has(&disk::key(&self.id, grid.key(j))));
        // A first block cut short (block 0 of a shifted grid) is fetched
        // alone: a run is cut into whole blocks from its start.
        let short = |j: u64| j * BLOCK < grid.shift;
        let end = from + count;
        let mut j = from;
        while j < end {
            if on_disk(j) || short(j) {
                let _ = self.blocks.get(grid.key(j), || self.load(grid, j));
                j += 1;
                continue;
            }
            let run = (j..end).take_while(|&i| !on_disk(i)).count() as u64;
            let first = j;
            let filled = self.blocks.fill_run(grid.key(first), run, |n, put| {
                let mut i = first;
                let range = grid.start(first)..grid.start(first + n).min(self.len);
                self.fetch_blocks(range, &mut |bytes| {
                    if let Some(d) = disk {
                        d.put(&disk::key(&self.id, grid.key(i)), &bytes);
                    }
                    i += 1;
                    put(bytes)
                })
            });
            // Past the blocks fetched, or one another reader holds.
            j += filled.max(1);
        }
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

/// One GET: the object as the answer describes it, the range it says it
/// holds, and that range's bytes, refused past `limit` (what was asked).
async fn get(
    client: &dyn ObjectStore,
    key: &Key,
    opts: GetOptions,
    limit: u64,
) -> object_store::Result<(object_store::ObjectMeta, Range<u64>, Vec<u8>)> {
    let r = client.get_opts(key, opts).await?;
    let (meta, range) = (r.meta.clone(), r.range.clone());
    let len = range.end.saturating_sub(range.start);
    if len > limit {
        return Err(object_store::Error::Generic {
            store: "ztfs",
            source: format!("the server answered {len} bytes for at most {limit} asked").into(),
        });
    }
    let mut bytes = Vec::new();
    pieces(r.into_stream(), len, len, &mut Vec::new, &mut |all| {
        bytes = all
    })
    .await?;
    Ok((meta, range, bytes))
}

/// Reads a response body of exactly `want` bytes, refusing more, and hands
/// it to `put` in pieces of `piece` bytes as they arrive (the last may be
/// shorter; nothing for an empty body), each in a buffer from `buffer`.
/// Buffers grow as bytes arrive, at most a block ahead: `want` may come
/// from the server's own size claim (the open's suffix range), so it never
/// sizes an allocation by itself.
async fn pieces(
    mut stream: futures::stream::BoxStream<'static, object_store::Result<bytes::Bytes>>,
    want: u64,
    piece: u64,
    buffer: &mut dyn FnMut() -> Vec<u8>,
    put: &mut dyn FnMut(Vec<u8>),
) -> object_store::Result<()> {
    let mut fresh = |left: u64| {
        let mut out = buffer();
        out.clear();
        out.reserve(left.min(piece).min(BLOCK) as usize);
        out
    };
    let (mut got, mut out) = (0u64, fresh(want));
    while let Some(bytes) = stream.next().await {
        let bytes = bytes?;
        if got + bytes.len() as u64 > want {
            return Err(object_store::Error::Generic {
                store: "ztfs",
                source: format!("the server sent more than the {want} bytes asked for").into(),
            });
        }
        got += bytes.len() as u64;
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let n = (piece as usize - out.len()).min(rest.len());
            out.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if out.len() as u64 == piece {
                put(std::mem::replace(&mut out, fresh(want - got)));
            }
        }
    }
    if got != want {
        return Err(object_store::Error::Generic {
            store: "ztfs",
            source: format!("the server sent {got} of {want} bytes").into(),
        });
    }
    if !out.is_empty() {
        put(out);
    }
    Ok(())
}

/// Largest object read: far beyond any model, and small enough that block
/// arithmetic on its offsets (a grid's shift added) cannot overflow.
const MAX_OBJECT: u64 = 1 << 62;

/// Refuses an object whose server claims more than [`MAX_OBJECT`] bytes.
fn check_size(url: &str, len: u64) -> Result<()> {
    if len > MAX_OBJECT {
        return Err(Error::Unsupported(format!(
            "{url}: the server says the object is {len} bytes, more than ztfs reads ({MAX_OBJECT})"
        )));
    }
    Ok(())
}

/// Whether objects with no version validator may be read (the
/// `--trust-unversioned` flag).
static TRUST_UNVERSIONED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Lets this process read objects whose server gives neither an ETag nor
/// a Last-Modified: a change under a reader then goes unseen.
pub fn trust_unversioned(yes: bool) {
    TRUST_UNVERSIONED.store(yes, std::sync::atomic::Ordering::Relaxed);
}

/// Refuses an object that names no version (no ETag, no Last-Modified),
/// as one replaced under a reader would give bytes of two versions,
/// unless [`trust_unversioned`] was asked.
fn check_versioned(url: &str, unversioned: bool) -> Result<()> {
    if unversioned && !TRUST_UNVERSIONED.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(Error::Usage(format!(
            "{url}: the server gives no ETag and no Last-Modified, so a change of the object under a reader would go unseen; pass --trust-unversioned to read it anyway"
        )));
    }
    if unversioned {
        log::warn!("{url}: no ETag and no Last-Modified: a change of the object would go unseen");
    }
    Ok(())
}

/// Splits a URL into its server and the object's key. An HTTP(S) URL's
/// query (a presigned URL's signature) goes with the server, which sends
/// it with every request.
fn parse(text: &str) -> Result<(Server, Key, Option<String>)> {
    let usage = |why: &str| Error::Usage(format!("{}: {why}", super::shown(Path::new(text))));
    let url = url::Url::parse(text).map_err(|e| usage(&format!("not a URL ({e})")))?;
    let host = url.host_str().ok_or_else(|| usage("no host"))?;
    if url.fragment().is_some() {
        return Err(usage("a fragment is not part of an object's name"));
    }
    let key = Key::from_url_path(url.path()).map_err(|e| usage(&e.to_string()))?;
    if key.as_ref().is_empty() {
        return Err(usage("no object named after the host"));
    }
    let server = match (url.scheme(), url.query()) {
        ("s3", None) => Server::S3(host.to_string()),
        ("s3", Some(_)) => return Err(usage("an s3:// URL takes no query (requests are signed)")),
        (_, None) => Server::Http(url[..url::Position::BeforePath].to_string()),
        // The client keeps the base URL's query on each object's URL.
        (_, Some(q)) => Server::Http(format!("{}/?{q}", &url[..url::Position::BeforePath])),
    };
    Ok((server, key, url.query().map(str::to_string)))
}

/// The process's one client for `server`, made on first use: the files
/// of a checkpoint (hundreds, maybe thousands) share it and its pool of
/// connections, so one costs a few KiB until read, not a client's state.
/// Made again in a forked child (see the module's note).
fn shared_client(server: &Server) -> object_store::Result<Arc<dyn ObjectStore>> {
    type Clients = Vec<(String, Arc<dyn ObjectStore>)>;
    static CLIENTS: Mutex<Option<(u32, Clients)>> = Mutex::new(None);
    let name = match server {
        Server::Http(base) => format!("http {base}"),
        Server::S3(bucket) => format!("s3 {bucket}"),
    };
    let pid = std::process::id();
    let mut all = CLIENTS.lock().unwrap_or_else(|e| e.into_inner());
    if all.as_ref().is_none_or(|(p, _)| *p != pid) {
        // The parent's clients hold connections of a runtime whose threads
        // are not in this process: leave them be.
        std::mem::forget(all.replace((pid, Vec::new())));
    }
    let (_, clients) = all.as_mut().expect("set above");
    if let Some((_, c)) = clients.iter().find(|(n, _)| *n == name) {
        return Ok(c.clone());
    }
    let c = connect(server)?;
    clients.push((name, c.clone()));
    Ok(c)
}

/// A client for `server`, with ztfs's timeouts and retries.
fn connect(server: &Server) -> object_store::Result<Arc<dyn ObjectStore>> {
    let options = ClientOptions::new()
        .with_timeout(TIMEOUT)
        .with_connect_timeout(CONNECT_TIMEOUT)
        .with_allow_http(true);
    let retry = RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: RETRIES,
        retry_timeout: RETRY_TIME,
    };
    Ok(match server {
        Server::Http(base) => Arc::new(
            object_store::http::HttpBuilder::new()
                .with_url(base)
                .with_client_options(options)
                .with_retry(retry)
                .with_http_connector(super::bounded::Connector)
                .build()?,
        ),
        Server::S3(bucket) => {
            // The environment first, then what it leaves to the files.
            let mut b = object_store::aws::AmazonS3Builder::from_env();
            let p = super::aws::profile().map_err(|e| object_store::Error::Generic {
                store: "S3",
                source: e.to_string().into(),
            })?;
            if let (Some(id), Some(secret)) = (p.access_key_id, p.secret_access_key) {
                b = b.with_access_key_id(id).with_secret_access_key(secret);
                if let Some(token) = p.session_token {
                    b = b.with_token(token);
                }
            }
            if let Some(region) = p.region {
                b = b.with_region(region);
            }
            if let Some(endpoint) = p.endpoint_url {
                b = b.with_endpoint(endpoint);
            }
            Arc::new(
                b.with_bucket_name(bucket)
                    .with_client_options(options)
                    .with_retry(retry)
                    .with_http_connector(super::bounded::Connector)
                    .build()?,
            )
        }
    })
}

/// The process's runtime for requests (see the module's note).
fn runtime() -> Result<Arc<tokio::runtime::Runtime>> {
    static RUNTIME: Mutex<Option<(u32, Arc<tokio::runtime::Runtime>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut rt = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((p, r)) = &*rt {
        if *p == pid {
            return Ok(r.clone());
        }
    }
    // Made before a fork: its threads are not in this process.
    std::mem::forget(rt.take());
    let r = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("ztfs-remote")
        .enable_all()
        .build()
        .map_err(|e| Error::io("the runtime for remote requests", e))?;
    let r = Arc::new(r);
    *rt = Some((pid, r.clone()));
    Ok(r)
}

/// A failed request, as the error a reader gets. The client's words quote
/// the URL it asked: a query in it (`secret`) is cut out.
fn fail(url: &str, secret: Option<&str>, e: object_store::Error) -> Error {
    match e {
        object_store::Error::Precondition { .. } => changed(url),
        // Said as a missing local file is.
        object_store::Error::NotFound { .. } => Error::io(
            url.to_string(),
            std::io::Error::from_raw_os_error(libc::ENOENT),
        ),
        e => {
            let mut text = e.to_string();
            if let Some(q) = secret.filter(|q| !q.is_empty()) {
                text = text.replace(q, "…");
            }
            Error::io(url.to_string(), std::io::Error::other(text))
        }
    }
}

fn changed(url: &str) -> Error {
    Error::io(
        url.to_string(),
        std::io::Error::other(
            "the object changed since it was opened (its ETag differs); remount to read the new one",
        ),
    )
}

fn bad_answer(url: &str, got: &Range<u64>, asked: Range<u64>) -> Error {
    Error::io(
        url.to_string(),
        std::io::Error::other(format!(
            "the server answered bytes [{}, {}) for [{}, {})",
            got.start, got.end, asked.start, asked.end
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A grid laid from an offset has a block beginning there; blocks
    /// tile the object without gaps or overlaps (the first cut short);
    /// names differ between grids and follow each other within one.
    #[test]
    fn grids_tile_the_object_from_their_start() {
        let len = 5 * BLOCK + 123;
        for at in [0, 1, 65536, BLOCK - 1, BLOCK, 3 * BLOCK + 4096] {
            let g = Grid::starting_at(at);
            let j = g.block_of(at);
            assert_eq!(g.start(j), at, "grid from {at}");
            let mut next = 0;
            for j in 0..g.count(len) {
                let r = g.range(j, len);
                assert_eq!(r.start, next, "grid from {at}, block {j}");
                assert!(r.end > r.start && r.end - r.start <= BLOCK);
                for o in [r.start, r.end - 1] {
                    assert_eq!(g.block_of(o), j);
                }
                next = r.end;
            }
            assert_eq!(next, len, "grid from {at}");
            assert_eq!(g.key(j + 1), g.key(j) + 1);
        }
        assert_eq!(Grid::starting_at(7 * BLOCK), Grid::ZERO);
        assert_ne!(Grid::starting_at(1).key(3), Grid::ZERO.key(3));
        assert_eq!(Grid::ZERO.key(3), 3);
    }

    /// An HTTP(S) URL's query goes with its server (sent on every
    /// request); an s3:// URL takes none; messages leave the query out.
    #[test]
    fn a_query_is_the_server_s_and_never_in_a_message() {
        let (server, key, secret) = parse("https://h:8443/a/m.zt?sig=s%20t").unwrap();
        assert!(matches!(server, Server::Http(ref b) if b == "https://h:8443/?sig=s%20t"));
        assert_eq!(
            (key.as_ref(), secret.as_deref()),
            ("a/m.zt", Some("sig=s%20t"))
        );
        let Err(e) = parse("s3://bucket/m.zt?sig=secret") else {
            panic!("an s3:// URL with a query")
        };
        let e = e.to_string();
        assert!(e.contains("takes no query") && !e.contains("secret"), "{e}");
        let e = object_store::Error::Generic {
            store: "HTTP",
            source: "GET https://h/a/m.zt?sig=s%20t failed".into(),
        };
        let e = fail("https://h/a/m.zt?…", Some("sig=s%20t"), e).to_string();
        assert!(!e.contains("s%20t") && e.contains("m.zt?…"), "{e}");
    }

    /// An object claimed larger than 2^62 bytes is refused at open; at
    /// that size the last block of any grid is still computed without
    /// overflow.
    #[test]
    fn a_huge_claimed_size_is_refused_and_the_largest_is_safe() {
        assert!(check_size("u", MAX_OBJECT).is_ok());
        let e = check_size("u", MAX_OBJECT + 1).unwrap_err();
        assert!(e.to_string().contains("more than ztfs reads"), "{e}");
        let g = Grid::starting_at(BLOCK - 1);
        let last = g.block_of(MAX_OBJECT - 1);
        assert_eq!(last + 1, g.count(MAX_OBJECT));
        assert_eq!(g.range(last, MAX_OBJECT).end, MAX_OBJECT);
        assert!(g.key(last) > g.key(0));
    }
}
