//! The shared cache tier (`--shared-cache s3://BUCKET[/PREFIX]`): the
//! blocks of remote models kept in an S3-compatible store the fleet's
//! nodes share (MinIO, SeaweedFS, Ceph RGW, S3 Express), so a model is
//! fetched from its origin once for all of them. It is the second tier,
//! after each node's disk cache (`--cache-dir`) and before the origin.
//!
//! A block is the object `PREFIX/ztfs-block-<64 hex>`, named as the disk
//! cache names it: a hash of its origin object's identity (URL, ETag,
//! size, modification time) and its place, so a new origin version never
//! meets an old block. It holds a header (magic, that name again, the
//! length, a tag) and the bytes. The tag is an HMAC-SHA256 of the rest,
//! keyed by the fleet's secret (`ZTFS_SHARED_CACHE_SECRET`), or without
//! one a SHA-256: either is checked on every read, and a block that fails
//! (torn, corrupted, or, with a secret, written by anyone without it) is
//! ignored and its bytes fetched from the origin. A zTensor part's digest,
//! where it has one, is checked after as for any read (`--verify`).
//!
//! Faults never fail a read: a request to the tier has a deadline
//! ([`DEADLINE`]), and an answer that is not the block or a 404 (the tier
//! down, slow, full, denying) sends the read to the origin, is said once
//! in the log, and keeps the tier aside for [`RETRY_AFTER`] before it is
//! asked again. A block fetched from the origin is written to the tier
//! behind the reader's back, by a few threads of the process, from a queue
//! of the block cache's own blocks (no copy) bounded in bytes (a quarter
//! of the block cache, at most [`QUEUE_BYTES`]): a block that finds it
//! full is not written (another node, or a later read, will).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hmac::Mac as _;
use object_store::path::Path as Key;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt, PutPayload};
use sha2::{Digest, Sha256};

use super::client::{runtime, tier_client};
use crate::error::{Error, Result};
use crate::store::disk;

/// How long one request to the tier may take before the origin is asked.
pub const DEADLINE: Duration = Duration::from_secs(2);
/// Faults in a row (no answer between) before the tier is left aside: a
/// busy tier misses a deadline now and then, and each of a node's
/// requests in flight then misses it together; a tier that is down fails
/// every request at once.
pub const FAULTS_ASIDE: u32 = 3;
/// How long the tier is left aside after faults: short, since a busy
/// tier misses a deadline now and then (SeaweedFS here, six nodes on two
/// cores: 30 s aside sent 5.8x the model to the origin, 5 s 3.7x).
pub const RETRY_AFTER: Duration = Duration::from_secs(5);
/// Most bytes of blocks waiting to be written to the tier: a quarter of
/// the block cache's budget (`--cache-mib`), at most this. The queue holds
/// the cache's own blocks, so it costs memory only for those the cache
/// has let go.
pub const QUEUE_BYTES: u64 = 256 << 20;

/// How long a node waits for a block another node claimed, polling the
/// tier, before it fetches the block from the origin itself.
pub const WAIT: Duration = Duration::from_secs(5);
/// How often a waiting node looks at the claim: first after this, then
/// half as often again each time, at most every [`POLL_MOST`] (a node
/// waits for many blocks at once, in the background, and each look is a
/// request to a tier that is busy serving the blocks).
const POLL: Duration = Duration::from_millis(100);
const POLL_MOST: Duration = Duration::from_millis(400);
/// A claim older than this is a node's that died: taken over.
pub const CLAIM_TTL: Duration = Duration::from_secs(30);
/// Threads of a process writing blocks to the tier (each one request at
/// a time): two kept the tier busy here; four made it miss deadlines.
const WRITERS: usize = 2;
/// Most requests of a process to the tier at once, its writers' aside
/// (they are [`WRITERS`]): the rest wait their turn here. A tier many
/// nodes flood queues every request behind the others, and past the
/// deadline each is a fault that sends reads to the origin (six nodes of
/// up to 32 reads each, on this machine's SeaweedFS: tens of faults a
/// run); writers that waited their turn behind the reads let the
/// write-behind queue fill, and a block dropped from it is fetched again.
const AT_ONCE: usize = 8;
/// Most releases of claims waiting to be written (each a few bytes).
const QUEUE_RELEASES: usize = 4096;

const MAGIC: &[u8; 8] = b"ZTFSTIR1";
/// Magic, name, length, tag.
const HEADER: usize = 8 + 32 + 8 + 32;

type Hmac = hmac::Hmac<Sha256>;

/// What the tier did, for `ztfs status`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// Blocks read from the tier.
    pub hits: u64,
    /// Blocks it did not hold (404).
    pub misses: u64,
    /// Blocks it held that failed their check (then fetched from the origin).
    pub rejected: u64,
    /// Requests that failed or passed the deadline.
    pub faults: u64,
    /// Blocks written to it, and those not written (the queue full, the
    /// tier aside).
    pub written: u64,
    pub dropped: u64,
    /// Blocks this node claimed before fetching them from the origin, and
    /// blocks it waited for while another node fetched them, got so.
    pub claimed: u64,
    pub waited: u64,
}

/// The process's shared cache tier.
pub struct Tier {
    /// `s3://BUCKET/PREFIX`, for messages.
    shown: String,
    bucket: String,
    /// Where blocks go in the bucket (no trailing `/`; empty for the top).
    prefix: String,
    /// The secret of the fleet's tags, when it has one.
    secret: Option<Vec<u8>>,
    /// The client of the process that made it (see `remote`'s note on
    /// forks), or a test's.
    client: Mutex<Option<(u32, Arc<dyn ObjectStore>)>>,
    /// Until when the tier is left aside, after a fault.
    aside: Mutex<Option<Instant>>,
    counts: [AtomicU64; 8],
    /// False once the store refused a conditional PUT: no claims then.
    claims: std::sync::atomic::AtomicBool,
    /// An outage was said and no answer came since.
    down: std::sync::atomic::AtomicBool,
    /// Faults since the last answer.
    streak: std::sync::atomic::AtomicU32,
    /// The blocks this process claimed and has not released: its own
    /// claim is no other node's (its reader does not wait for its
    /// read-ahead's claim).
    mine: Mutex<std::collections::HashSet<disk::Key>>,
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Requests to the tier now, and their turn ([`AT_ONCE`]).
    asking: Mutex<usize>,
    turn: Condvar,
}

/// Blocks waiting to be written (each with whether this node claimed it,
/// and so releases its claim after; a release alone has no bytes), and
/// the writer's process.
#[derive(Default)]
struct Queue {
    blocks: VecDeque<(disk::Key, Option<Block>, bool)>,
    bytes: u64,
    releases: usize,
    writer: Option<u32>,
    /// Blocks being written now.
    writing: usize,
}

/// What one ask of the tier for a block got.
enum Fetched {
    Block(Vec<u8>),
    /// Not there (404).
    Missing,
    /// There, and failing its check.
    Rejected,
    /// No answer, in time or at all (the tier is then aside).
    Fault,
}

/// What a wait for a block another node claimed came to.
pub enum Waited {
    /// The block, from the tier.
    Got(Vec<u8>),
    /// The claim is gone and the block is not there: to be claimed again.
    Gone,
    /// A fault, or the claim is still there after [`WAIT`].
    No,
}

/// Who fetches a block the tier does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// This node: it claimed the block, and releases the claim once the
    /// block is written.
    Mine,
    /// Another node, which claimed it lately: wait for it
    /// ([`Tier::wait_for`]).
    Theirs,
    /// Nobody can say (the store takes no conditional PUT, or a fault):
    /// this node fetches it, unclaimed.
    Unknown,
}

static TIER: OnceLock<Arc<Tier>> = OnceLock::new();

/// A block of the block cache.
type Block = Arc<Vec<u8>>;

/// A block of the block cache as the body of a request, not copied.
struct Body(Block);

impl AsRef<[u8]> for Body {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The body of `answer`, read within `max` bytes whatever its length
/// says; `None` past it.
async fn capped(
    answer: object_store::GetResult,
    max: usize,
) -> object_store::Result<Option<Vec<u8>>> {
    use futures::StreamExt;
    let mut out = Vec::with_capacity(max.min(answer.meta.size as usize));
    let mut body = answer.into_stream();
    while let Some(piece) = body.next().await {
        let piece = piece?;
        if out.len() + piece.len() > max {
            return Ok(None);
        }
        out.extend_from_slice(&piece);
    }
    Ok(Some(out))
}

/// The body of `answer`, a block object of `len` bytes after its header:
/// the header, and the bytes in `out` (a buffer of the block cache's, so
/// that a block read from the tier costs no fresh allocation and no
/// move); `None` when the body is not that long.
async fn block_body(
    answer: object_store::GetResult,
    len: usize,
    mut out: Vec<u8>,
) -> object_store::Result<Option<([u8; HEADER], Vec<u8>)>> {
    use futures::StreamExt;
    let (mut header, mut at) = ([0u8; HEADER], 0);
    out.clear();
    out.reserve_exact(len);
    let mut body = answer.into_stream();
    while let Some(piece) = body.next().await {
        let mut piece = &piece?[..];
        if at < HEADER {
            let n = piece.len().min(HEADER - at);
            header[at..at + n].copy_from_slice(&piece[..n]);
            (at, piece) = (at + n, &piece[n..]);
        }
        if out.len() + piece.len() > len {
            return Ok(None);
        }
        out.extend_from_slice(piece);
    }
    Ok((at == HEADER && out.len() == len).then_some((header, out)))
}

/// Uses the tier at `url` (`s3://BUCKET[/PREFIX]`) for every remote
/// object this process reads from now on; its endpoint is
/// `ZTFS_SHARED_CACHE_ENDPOINT` when set, else the one `s3://` models use,
/// its secret `ZTFS_SHARED_CACHE_SECRET` when set.
pub fn configure(url: &str) -> Result<()> {
    let secret = std::env::var("ZTFS_SHARED_CACHE_SECRET").ok();
    let tier = Tier::new(
        url,
        secret.filter(|s| !s.is_empty()).map(String::into_bytes),
    )?;
    let shown = tier.shown.clone();
    let set = TIER.get_or_init(|| Arc::new(tier));
    match set.shown == shown {
        true => Ok(()),
        false => Err(Error::Usage(format!(
            "--shared-cache {url}: this process uses {} already",
            set.shown
        ))),
    }
}

/// The process's tier, when one was configured.
pub fn shared() -> Option<Arc<Tier>> {
    TIER.get().cloned()
}

impl Tier {
    /// The tier at `url`, with `secret` for its tags (none: a SHA-256).
    pub fn new(url: &str, secret: Option<Vec<u8>>) -> Result<Tier> {
        let usage = |why: &str| Error::Usage(format!("--shared-cache {url}: {why}"));
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| usage("the shared cache is an s3:// bucket (s3://BUCKET[/PREFIX])"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() || rest.contains(['?', '#']) {
            return Err(usage("not s3://BUCKET[/PREFIX]"));
        }
        Ok(Tier {
            shown: url.trim_end_matches('/').to_string(),
            bucket: bucket.to_string(),
            prefix: prefix.trim_matches('/').to_string(),
            secret,
            client: Mutex::new(None),
            aside: Mutex::new(None),
            counts: Default::default(),
            claims: std::sync::atomic::AtomicBool::new(true),
            down: std::sync::atomic::AtomicBool::new(false),
            streak: std::sync::atomic::AtomicU32::new(0),
            mine: Mutex::new(Default::default()),
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            asking: Mutex::new(0),
            turn: Condvar::new(),
        })
    }

    /// This tier read and written through `client` (a test's store).
    pub fn with_client(self, client: Arc<dyn ObjectStore>) -> Tier {
        *self.client.lock().unwrap_or_else(|e| e.into_inner()) = Some((u32::MAX, client));
        self
    }

    /// The tier as given (`s3://BUCKET/PREFIX`).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// What the tier did so far.
    pub fn counts(&self) -> Counts {
        let c = |i: usize| self.counts[i].load(Ordering::Relaxed);
        Counts {
            hits: c(0),
            misses: c(1),
            rejected: c(2),
            faults: c(3),
            written: c(4),
            dropped: c(5),
            claimed: c(6),
            waited: c(7),
        }
    }

    fn count(&self, i: usize) {
        self.counts[i].fetch_add(1, Ordering::Relaxed);
    }

    /// The client: a test's, or this process's own, made on first use.
    fn client(&self) -> Option<Arc<dyn ObjectStore>> {
        let mut c = self.client.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        match &*c {
            Some((p, client)) if *p == pid || *p == u32::MAX => return Some(client.clone()),
            Some(_) => std::mem::forget(c.take()),
            None => {}
        }
        let endpoint = std::env::var("ZTFS_SHARED_CACHE_ENDPOINT").ok();
        match tier_client(&self.bucket, endpoint.as_deref().filter(|e| !e.is_empty())) {
            Ok(client) => {
                *c = Some((pid, client.clone()));
                Some(client)
            }
            Err(e) => {
                drop(c);
                self.fault(&format!("no client: {e}"));
                None
            }
        }
    }

    /// Runs `request` to the tier on `rt` once fewer than [`AT_ONCE`] of
    /// this process's run (its deadline counts from then).
    fn ask<T>(
        &self,
        rt: &tokio::runtime::Runtime,
        request: impl std::future::Future<Output = T>,
    ) -> T {
        let mut asking = self.asking.lock().unwrap_or_else(|e| e.into_inner());
        while *asking >= AT_ONCE {
            asking = self.turn.wait(asking).unwrap_or_else(|e| e.into_inner());
        }
        *asking += 1;
        drop(asking);
        // The turn given back however the request ends.
        struct Turn<'a>(&'a Tier);
        impl Drop for Turn<'_> {
            fn drop(&mut self) {
                *self.0.asking.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
                self.0.turn.notify_one();
            }
        }
        let _turn = Turn(self);
        rt.block_on(request)
    }

    /// Block `key`'s object in the bucket.
    fn path(&self, key: &disk::Key) -> Key {
        let name = format!("ztfs-block-{}", crate::digest::hex(key));
        match self.prefix.is_empty() {
            true => Key::from(name),
            false => Key::from(format!("{}/{name}", self.prefix)),
        }
    }

    /// True while the tier is left aside after a fault.
    fn is_aside(&self) -> bool {
        let mut aside = self.aside.lock().unwrap_or_else(|e| e.into_inner());
        match *aside {
            Some(until) if Instant::now() < until => true,
            Some(_) => {
                *aside = None;
                log::debug!("{}: the shared cache is asked again", self.shown);
                false
            }
            None => false,
        }
    }

    /// A fault: this request goes to the origin; [`FAULTS_ASIDE`] in a
    /// row leave the tier aside for a while. Said once an outage: the
    /// next answer says it is over.
    fn fault(&self, what: &str) {
        self.count(3);
        if self.streak.fetch_add(1, Ordering::Relaxed) + 1 < FAULTS_ASIDE {
            log::debug!("{}: the shared cache missed a request ({what})", self.shown);
            return;
        }
        let mut aside = self.aside.lock().unwrap_or_else(|e| e.into_inner());
        if !self.down.swap(true, Ordering::Relaxed) {
            log::warn!(
                "{}: the shared cache is unavailable ({what}); reading from the origin, asking again every {} s",
                self.shown,
                RETRY_AFTER.as_secs()
            );
        } else {
            log::debug!(
                "{}: the shared cache is still unavailable ({what})",
                self.shown
            );
        }
        *aside = Some(Instant::now() + RETRY_AFTER);
    }

    /// An answer: an outage said is over.
    fn answered(&self) {
        self.streak.store(0, Ordering::Relaxed);
        if self.down.swap(false, Ordering::Relaxed) {
            log::info!("{}: the shared cache answers again", self.shown);
        }
    }

    /// Block `key` of `len` bytes from the tier, checked; `None` when the
    /// tier does not hold it, holds one that fails its check, cannot be
    /// reached in time, or is aside.
    pub fn get(&self, key: &disk::Key, len: u64) -> Option<Vec<u8>> {
        match self.fetch(key, len) {
            Fetched::Block(b) => {
                self.count(0);
                Some(b)
            }
            Fetched::Missing => {
                self.count(1);
                None
            }
            Fetched::Rejected => {
                self.count(2);
                log::warn!(
                    "{}: block {} failed its check: read from the origin",
                    self.shown,
                    self.path(key)
                );
                None
            }
            Fetched::Fault => None,
        }
    }

    /// One ask of the tier for block `key` of `len` bytes.
    fn fetch(&self, key: &disk::Key, len: u64) -> Fetched {
        if self.is_aside() {
            return Fetched::Fault;
        }
        let Some(client) = self.client() else {
            return Fetched::Fault;
        };
        let path = self.path(key);
        let want = HEADER as u64 + len;
        let Ok(rt) = runtime() else {
            return Fetched::Fault;
        };
        let got = self.ask(&rt, async {
            let read = async {
                let answer = client.get_opts(&path, GetOptions::default()).await?;
                if answer.meta.size != want {
                    return Ok(None);
                }
                let buffer = super::shared_blocks().buffer();
                block_body(answer, len as usize, buffer).await
            };
            tokio::time::timeout(DEADLINE, read).await
        });
        match got {
            Err(_) => {
                self.fault(&format!("no answer within {} s", DEADLINE.as_secs()));
                Fetched::Fault
            }
            Ok(Err(object_store::Error::NotFound { .. })) => {
                self.answered();
                Fetched::Missing
            }
            Ok(Err(e)) => {
                self.fault(&super::client::plain(&self.shown, &e));
                Fetched::Fault
            }
            Ok(Ok(found)) => {
                self.answered();
                match found.and_then(|(header, b)| self.open(key, &header, b)) {
                    Some(bytes) => Fetched::Block(bytes),
                    None => Fetched::Rejected,
                }
            }
        }
    }

    /// Block `key`'s claim object: a node fetching it from the origin.
    fn claim_path(&self, key: &disk::Key) -> Key {
        let name = format!("ztfs-claim-{}", crate::digest::hex(key));
        match self.prefix.is_empty() {
            true => Key::from(name),
            false => Key::from(format!("{}/{name}", self.prefix)),
        }
    }

    /// Claims block `key` before fetching it from the origin, so that the
    /// other nodes wait for it rather than fetch it too: a claim object
    /// written only if there is none (a conditional PUT), holding when it
    /// was made. A claim older than [`CLAIM_TTL`] is a dead node's, taken
    /// over.
    pub fn claim(&self, key: &disk::Key) -> Claim {
        use object_store::{PutMode, PutOptions};
        if !self.claims.load(Ordering::Relaxed) || self.is_aside() {
            return Claim::Unknown;
        }
        if self
            .mine
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(key)
        {
            return Claim::Unknown;
        }
        let Some(client) = self.client() else {
            return Claim::Unknown;
        };
        let Ok(rt) = runtime() else {
            return Claim::Unknown;
        };
        let path = self.claim_path(key);
        let now = crate::mounts::now();
        let body = || PutPayload::from(now.to_string().into_bytes());
        let create = PutOptions::from(PutMode::Create);
        let put = self.ask(&rt, async {
            tokio::time::timeout(DEADLINE, client.put_opts(&path, body(), create)).await
        });
        match put {
            Ok(Ok(_)) => return self.claimed(key),
            Ok(Err(object_store::Error::AlreadyExists { .. }))
            | Ok(Err(object_store::Error::Precondition { .. })) => {}
            Ok(Err(object_store::Error::NotImplemented { .. })) => {
                self.claims.store(false, Ordering::Relaxed);
                log::info!(
                    "{}: the store takes no conditional PUT: nodes do not wait for each other's blocks",
                    self.shown
                );
                return Claim::Unknown;
            }
            Ok(Err(e)) => {
                self.fault(&super::client::plain(&self.shown, &e));
                return Claim::Unknown;
            }
            Err(_) => {
                self.fault("a claim passed its deadline");
                return Claim::Unknown;
            }
        }
        // Whose, and since when: a dead node's claim is taken over. A
        // claim is a few digits: a longer object is not read.
        let made = self.ask(&rt, async {
            tokio::time::timeout(DEADLINE, async {
                let got = client.get(&path).await?;
                capped(got, 32).await
            })
            .await
        });
        let made: Option<u64> = match made {
            Ok(Ok(Some(b))) => std::str::from_utf8(&b).ok().and_then(|t| t.parse().ok()),
            _ => None,
        };
        match made {
            Some(t) if now.saturating_sub(t) < CLAIM_TTL.as_secs() => Claim::Theirs,
            // Gone since, or stale, or unreadable: taken over.
            _ => {
                let put = self.ask(&rt, async {
                    tokio::time::timeout(DEADLINE, client.put(&path, body())).await
                });
                match put {
                    Ok(Ok(_)) => self.claimed(key),
                    _ => Claim::Unknown,
                }
            }
        }
    }

    /// Whether block `key`'s claim object is there; `None` when the tier
    /// does not say (a fault, counted).
    fn is_claimed(&self, key: &disk::Key) -> Option<bool> {
        if self.is_aside() {
            return None;
        }
        let (Some(client), Ok(rt)) = (self.client(), runtime()) else {
            return None;
        };
        let path = self.claim_path(key);
        let head = self.ask(&rt, async {
            tokio::time::timeout(DEADLINE, client.head(&path)).await
        });
        match head {
            Ok(Ok(_)) => Some(true),
            Ok(Err(object_store::Error::NotFound { .. })) => Some(false),
            Ok(Err(e)) => {
                self.fault(&super::client::plain(&self.shown, &e));
                None
            }
            Err(_) => {
                self.fault("a claim's check passed its deadline");
                None
            }
        }
    }

    fn claimed(&self, key: &disk::Key) -> Claim {
        self.count(6);
        self.mine
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(*key);
        Claim::Mine
    }

    /// Waits for block `key` of `len` bytes, which another node claimed:
    /// looks at the claim (a HEAD, the tier's cheapest answer) every
    /// 100 ms, then less often, until it is gone, then asks for the block
    /// once. The claimer writes the block before it releases the claim, so
    /// a claim gone without the block (or with one failing its check) means
    /// the claimer could not fetch or write it: [`Waited::Gone`], and the
    /// block is for the caller to claim. A fault, or a claim still there
    /// after [`WAIT`]: [`Waited::No`].
    pub fn wait_for(&self, key: &disk::Key, len: u64) -> Waited {
        let end = Instant::now() + WAIT;
        let mut poll = POLL;
        while Instant::now() < end {
            std::thread::sleep(poll);
            poll = (poll * 3 / 2).min(POLL_MOST);
            match self.is_claimed(key) {
                None => return Waited::No,
                Some(true) => continue,
                Some(false) => {
                    return match self.fetch(key, len) {
                        Fetched::Block(b) => {
                            self.count(0);
                            self.count(7);
                            Waited::Got(b)
                        }
                        Fetched::Rejected => {
                            self.count(2);
                            Waited::Gone
                        }
                        Fetched::Missing => {
                            self.count(1);
                            Waited::Gone
                        }
                        Fetched::Fault => Waited::No,
                    };
                }
            }
        }
        log::debug!(
            "{}: a claimed block did not come in {} s",
            self.shown,
            WAIT.as_secs()
        );
        Waited::No
    }

    /// The tag of block `key` of `bytes`.
    fn tag(&self, key: &disk::Key, bytes: &[u8]) -> [u8; 32] {
        let len = (bytes.len() as u64).to_le_bytes();
        match &self.secret {
            Some(secret) => {
                let mut mac = Hmac::new_from_slice(secret).expect("HMAC takes any key");
                for part in [MAGIC.as_slice(), key, &len, bytes] {
                    mac.update(part);
                }
                mac.finalize().into_bytes().into()
            }
            None => {
                let mut h = Sha256::new();
                for part in [MAGIC.as_slice(), key, &len, bytes] {
                    h.update(part);
                }
                h.finalize().into()
            }
        }
    }

    /// The bytes `b` of a block object with `header`, said to be block
    /// `key`, when its header and tag say so.
    fn open(&self, key: &disk::Key, header: &[u8; HEADER], b: Vec<u8>) -> Option<Vec<u8>> {
        let len = b.len() as u64;
        if &header[..8] != MAGIC || &header[8..40] != key || header[40..48] != len.to_le_bytes() {
            return None;
        }
        // Compared in constant time: a forger learns nothing from timing.
        let want = self.tag(key, &b);
        let diff = want
            .iter()
            .zip(&header[48..])
            .fold(0u8, |d, (a, b)| d | (a ^ b));
        (diff == 0).then_some(b)
    }

    /// The header of the block object of block `key` of `bytes`: magic,
    /// the name, the length, the tag.
    fn header(&self, key: &disk::Key, bytes: &[u8]) -> [u8; HEADER] {
        let mut h = [0u8; HEADER];
        h[..8].copy_from_slice(MAGIC);
        h[8..40].copy_from_slice(key);
        h[40..48].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        h[48..].copy_from_slice(&self.tag(key, bytes));
        h
    }

    /// The block object of block `key` of `bytes`: its header, then the
    /// cache's bytes themselves.
    fn seal(&self, key: &disk::Key, bytes: Arc<Vec<u8>>) -> PutPayload {
        let header = bytes::Bytes::copy_from_slice(&self.header(key, &bytes));
        [header, bytes::Bytes::from_owner(Body(bytes))]
            .into_iter()
            .collect()
    }

    /// Queues block `key` to be written to the tier, behind the reader,
    /// and this node's claim of it (`claimed`) released after: not written
    /// when the queue is full or the tier aside (the claim is released
    /// then, so that a waiting node goes to the origin at once). Never
    /// waits: slowing the read-ahead to the tier's pace cost more time
    /// than it saved origin bytes (docs/fleet.md). A block this node did
    /// not claim is left to the node that did (or to a later read), unless
    /// the store takes no claims: a write is the tier's dearest request
    /// (SeaweedFS: 9 ms of CPU a MiB, a read 2 ms), and a second one of the
    /// same block only adds to a busy tier's load.
    pub fn put_behind(self: &Arc<Self>, key: &disk::Key, bytes: Arc<Vec<u8>>, claimed: bool) {
        if !claimed && self.claims.load(Ordering::Relaxed) {
            return;
        }
        let most = QUEUE_BYTES.min(super::shared_blocks().budget() / 4);
        let len = bytes.len() as u64;
        let q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        // An empty queue takes any block: one larger than the bound (a
        // small cache) is written rather than never.
        if !self.is_aside() && (q.bytes == 0 || q.bytes + len <= most) {
            return self.enqueue(q, key, Some((bytes, claimed)));
        }
        self.count(5);
        if claimed {
            self.enqueue(q, key, None);
        }
    }

    /// Queues block `key`'s bytes (and whether its claim is released
    /// after), or with `None` the release of its claim alone (dropped past
    /// [`QUEUE_RELEASES`]: a claim left behind expires).
    fn enqueue(
        self: &Arc<Self>,
        mut q: std::sync::MutexGuard<'_, Queue>,
        key: &disk::Key,
        block: Option<(Arc<Vec<u8>>, bool)>,
    ) {
        match block {
            Some((bytes, claimed)) => {
                q.bytes += bytes.len() as u64;
                q.blocks.push_back((*key, Some(bytes), claimed));
            }
            None if q.releases >= QUEUE_RELEASES => return,
            // First: a node waiting for the block learns at once that
            // it is to fetch it itself.
            None => {
                q.releases += 1;
                q.blocks.push_front((*key, None, true));
            }
        }
        let pid = std::process::id();
        if q.writer != Some(pid) {
            q.writer = Some(pid);
            q.writing = 0;
            for _ in 0..WRITERS {
                let me = self.clone();
                let spawned = std::thread::Builder::new()
                    .name("ztfs-tier-write".into())
                    .spawn(move || me.write_loop());
                if spawned.is_err() {
                    q.writer = None;
                }
            }
        }
        drop(q);
        self.wake.notify_one();
    }

    /// A writer: the next queued block, for the process's life.
    fn write_loop(&self) {
        let mut wrote = false;
        loop {
            let (key, bytes, claimed) = {
                let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                if wrote {
                    q.writing -= 1;
                }
                loop {
                    if let Some(b) = q.blocks.pop_front() {
                        match &b.1 {
                            Some(bytes) => q.bytes -= bytes.len() as u64,
                            None => q.releases -= 1,
                        }
                        q.writing += 1;
                        break b;
                    }
                    q = self.wake.wait(q).unwrap_or_else(|e| e.into_inner());
                }
            };
            wrote = true;
            if let Some(bytes) = bytes {
                self.write_sealed(&key, self.seal(&key, bytes.clone()));
                // Its buffer to the cache's spares, once the cache let go.
                super::shared_blocks().give_back(bytes);
            }
            if claimed {
                self.release(&key);
            }
        }
    }

    /// Queues the release of this node's claim of block `key`, which it
    /// did not fetch after all (the origin failed).
    pub fn release_behind(self: &Arc<Self>, key: &disk::Key) {
        let q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        self.enqueue(q, key, None);
    }

    /// Deletes this node's claim of block `key` (a claim left behind
    /// expires anyway: [`CLAIM_TTL`]).
    fn release(&self, key: &disk::Key) {
        self.mine
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
        let (Some(client), Ok(rt)) = (self.client(), runtime()) else {
            return;
        };
        let path = self.claim_path(key);
        let _ = rt.block_on(async { tokio::time::timeout(DEADLINE, client.delete(&path)).await });
    }

    /// Writes block `key` now (a test's).
    pub fn write(&self, key: &disk::Key, bytes: &[u8]) {
        self.write_sealed(key, self.seal(key, Arc::new(bytes.to_vec())));
    }

    /// Writes the block object `payload` of block `key` (the writers' work).
    fn write_sealed(&self, key: &disk::Key, payload: PutPayload) {
        if self.is_aside() {
            self.count(5);
            return;
        }
        let Some(client) = self.client() else {
            self.count(5);
            return;
        };
        let path = self.path(key);
        let put = runtime().map(|rt| {
            rt.block_on(async {
                tokio::time::timeout(DEADLINE * 4, client.put(&path, payload)).await
            })
        });
        match put {
            Ok(Ok(Ok(_))) => {
                self.answered();
                self.count(4);
            }
            Ok(Ok(Err(e))) => self.fault(&super::client::plain(&self.shown, &e)),
            Ok(Err(_)) => self.fault("a write passed its deadline"),
            Err(e) => self.fault(&e.to_string()),
        }
    }

    /// Waits until the queue is empty or `wait` has passed: for a process
    /// about to exit (`cat`, `pack`) and for tests.
    pub fn drain(&self, wait: Duration) {
        let end = Instant::now() + wait;
        while Instant::now() < end {
            let q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            if q.blocks.is_empty() && q.writing == 0 {
                return;
            }
            drop(q);
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;

    fn tier(store: &Arc<InMemory>, secret: Option<&str>) -> Arc<Tier> {
        let t = Tier::new("s3://b/p/", secret.map(|s| s.as_bytes().to_vec())).unwrap();
        Arc::new(t.with_client(store.clone()))
    }

    /// Written, then read back by another node; a tag of another secret,
    /// or of none, is refused; a header naming another block too.
    #[test]
    fn blocks_read_back_only_with_their_tag() {
        let store = Arc::new(InMemory::new());
        let (key, other) = ([7u8; 32], [8u8; 32]);
        let bytes: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let keyed = tier(&store, Some("s"));
        keyed.write(&key, &bytes);
        assert_eq!(keyed.get(&key, 5000), Some(bytes.clone()));
        assert_eq!(keyed.get(&key, 4999), None, "another length");
        assert_eq!(keyed.get(&other, 5000), None, "not there");
        assert_eq!(tier(&store, Some("t")).get(&key, 5000), None);
        assert_eq!(tier(&store, None).get(&key, 5000), None);
        let c = keyed.counts();
        assert_eq!((c.hits, c.misses, c.written), (1, 1, 1), "{c:?}");
        // An unkeyed tier's block copied under another block's name.
        let plain = tier(&store, None);
        plain.write(&other, &bytes);
        let header = plain.header(&other, &bytes);
        assert_eq!(plain.open(&key, &header, bytes.clone()), None);
        assert_eq!(plain.open(&other, &header, bytes.clone()), Some(bytes));
        assert_eq!(plain.counts().faults, 0);
    }

    /// One node claims a block; another sees the claim and waits, getting
    /// the block once written; a release lets the next node claim again;
    /// a stale claim is taken over.
    #[test]
    fn claims_make_other_nodes_wait() {
        let store = Arc::new(InMemory::new());
        let (a, b) = (tier(&store, None), tier(&store, None));
        let key = [3u8; 32];
        assert_eq!(a.claim(&key), Claim::Mine);
        assert_eq!(b.claim(&key), Claim::Theirs);
        let bytes = vec![9u8; 100];
        let writer = {
            let (a, bytes) = (a.clone(), bytes.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                a.write(&key, &bytes);
                a.release(&key);
            })
        };
        assert!(matches!(b.wait_for(&key, 100), Waited::Got(got) if got == bytes));
        writer.join().unwrap();
        assert_eq!((b.counts().waited, a.counts().claimed), (1, 1));
        // A claim released without its block: the waiter is to claim it.
        let other = [4u8; 32];
        assert_eq!(a.claim(&other), Claim::Mine);
        assert_eq!(b.claim(&other), Claim::Theirs);
        a.release(&other);
        assert!(matches!(b.wait_for(&other, 100), Waited::Gone));
        assert_eq!(b.claim(&key), Claim::Mine, "released, claimed again");
        // A claim made long ago (a node that died) is taken over.
        let old = crate::mounts::now() - CLAIM_TTL.as_secs() - 1;
        let rt = runtime().unwrap();
        rt.block_on(store.put(&a.claim_path(&key), old.to_string().into_bytes().into()))
            .unwrap();
        assert_eq!(a.claim(&key), Claim::Mine);
    }

    #[test]
    fn only_s3_urls_are_tiers() {
        for bad in ["http://x/y", "s3://", "s3:///p", "s3://b?x", "/tmp/x"] {
            assert!(Tier::new(bad, None).is_err(), "{bad}");
        }
        let t = Tier::new("s3://b//p/q/", None).unwrap();
        assert_eq!(
            t.path(&[0; 32]).as_ref(),
            format!("p/q/ztfs-block-{}", "00".repeat(32))
        );
        assert_eq!(Tier::new("s3://b", None).unwrap().prefix, "");
    }
}
