//! Unit tests of remote reads, with no server: objects of `object_store`'s
//! in-memory store (which honours conditional requests and ranges) read
//! through [`Faulty`], which records every request and fails the ones it
//! is told to. The real nginx and S3 servers are the end-to-end tests
//! (tests/remote*.rs).

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::memory::InMemory;
use object_store::{
    CopyOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

use super::client::{check_size, fail, parse, MAX_OBJECT};
use super::*;

mod ahead;

/// What the next request meets.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// An error (what the client gives once its retries of a 5xx are spent).
    Fail,
    /// The answer's body stops halfway.
    Cut,
    /// The answer is of the range one byte further on.
    Shifted,
}

/// An in-memory store that records each GET's range and meets faults.
#[derive(Debug, Default)]
struct Faulty {
    inner: InMemory,
    gets: Mutex<Vec<Range<u64>>>,
    faults: Mutex<VecDeque<Fault>>,
    /// While set, GETs wait before answering; `waiting` counts them.
    held: std::sync::atomic::AtomicBool,
    /// While set, a GET of a range from byte 0 waits (a server stalling
    /// one request).
    stall_first: std::sync::atomic::AtomicBool,
    waiting: std::sync::atomic::AtomicUsize,
}

impl fmt::Display for Faulty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Faulty")
    }
}

impl Faulty {
    fn gets(&self) -> Vec<Range<u64>> {
        self.gets.lock().unwrap().clone()
    }

    fn then(&self, fault: Fault) {
        self.faults.lock().unwrap().push_back(fault);
    }
}

#[async_trait]
impl ObjectStore for Faulty {
    async fn put_opts(
        &self,
        location: &Key,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Key,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Key,
        mut options: GetOptions,
    ) -> object_store::Result<GetResult> {
        use std::sync::atomic::Ordering::SeqCst;
        if self.held.load(SeqCst) {
            self.waiting.fetch_add(1, SeqCst);
            while self.held.load(SeqCst) {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            self.waiting.fetch_sub(1, SeqCst);
        }
        if matches!(&options.range, Some(GetRange::Bounded(r)) if r.start == 0) {
            while self.stall_first.load(SeqCst) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        let fault = self.faults.lock().unwrap().pop_front();
        if let (Some(Fault::Shifted), Some(GetRange::Bounded(r))) = (fault, &options.range) {
            options.range = Some(GetRange::Bounded(r.start + 1..r.end + 1));
        }
        let r = self.inner.get_opts(location, options).await?;
        self.gets.lock().unwrap().push(r.range.clone());
        match fault {
            Some(Fault::Fail) => Err(object_store::Error::Generic {
                store: "Faulty",
                source: "503 Service Unavailable, after 3 retries".into(),
            }),
            Some(Fault::Cut) => {
                let GetResultPayload::Stream(s) = r.payload;
                let half = ((r.range.end - r.range.start) / 2) as usize;
                let cut = s.map(move |b| b.map(|b| b.slice(..half.min(b.len()))));
                Ok(GetResult {
                    payload: GetResultPayload::Stream(cut.boxed()),
                    ..r
                })
            }
            Some(Fault::Shifted) | None => Ok(r),
        }
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Key>>,
    ) -> BoxStream<'static, object_store::Result<Key>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Key>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Key>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Key,
        to: &Key,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

const URL: &str = "http://test.invalid/m.bin";

/// `len` bytes that differ from block to block and within one.
/// A block cache of the process's default budget, the test's own.
fn blocks() -> Arc<Blocks> {
    Arc::new(Blocks::new(CACHE))
}

fn bytes(len: u64, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8 ^ seed)
        .collect()
}

fn put(store: &Faulty, data: &[u8]) {
    let key = Key::from("m.bin");
    let payload = PutPayload::from(data.to_vec());
    runtime()
        .unwrap()
        .block_on(store.put_opts(&key, payload, PutOptions::default()))
        .unwrap();
}

/// An object of `data` in a fresh store, opened.
fn opened(data: &[u8]) -> (Arc<Faulty>, Remote) {
    let store = Arc::new(Faulty::default());
    put(&store, data);
    let remote = Remote::open_with(URL, store.clone(), None, blocks()).unwrap();
    (store, remote)
}

/// `store`'s object opened as any model file is: its tail and first block.
fn open_any(store: &Arc<Faulty>) -> Remote {
    let ask = Ask::Tail { first_block: true };
    Remote::open_at(URL, store.clone(), None, blocks(), ask).unwrap()
}

fn read(r: &Remote, offset: u64, len: u64) -> Result<Vec<u8>> {
    r.read(offset, len).map(|(b, range)| b[range].to_vec())
}

#[test]
fn opening_costs_one_request_and_a_block_is_fetched_once() {
    let data = bytes(5 * BLOCK + 777, 1);
    let (store, r) = opened(&data);
    let len = data.len() as u64;
    assert_eq!(store.gets(), vec![len - TAIL..len], "the tail, at open");
    assert_eq!(r.len(), len);
    // The tail is served from what the open read.
    assert_eq!(read(&r, len - 100, 100).unwrap(), data[data.len() - 100..]);
    assert_eq!(store.gets().len(), 1);
    // A small read fetches its block, once.
    assert_eq!(read(&r, 10, 4096).unwrap(), data[10..4106]);
    assert_eq!(read(&r, 5000, 100).unwrap(), data[5000..5100]);
    assert_eq!(store.gets().len(), 2);
    assert_eq!(store.gets()[1], 0..BLOCK);
    // A read across two blocks is joined from both.
    let (a, n) = (BLOCK - 10, 20);
    assert_eq!(read(&r, a, n).unwrap(), data[a as usize..(a + n) as usize]);
    assert_eq!(store.gets().len(), 3);
    assert_eq!(store.gets()[2], BLOCK..2 * BLOCK);
    // Past the end is out of range, and asks nothing.
    let e = read(&r, len - 1, 2).unwrap_err();
    assert!(matches!(e.kind(), Error::OutOfRange(_)), "{e}");
    assert_eq!(store.gets().len(), 3);
}

#[test]
fn an_object_replaced_under_a_reader_fails_its_reads() {
    let data = bytes(4 * BLOCK, 2);
    let (store, r) = opened(&data);
    assert_eq!(read(&r, 0, 10).unwrap(), data[..10]);
    // A new version of the same length: its ETag differs.
    put(&store, &bytes(4 * BLOCK, 3));
    let e = read(&r, BLOCK, 10).unwrap_err().to_string();
    assert!(e.contains("changed since it was opened"), "{e}");
    // What was read before the change is still the old version's.
    assert_eq!(read(&r, 0, 10).unwrap(), data[..10]);
}

#[test]
fn a_big_blob_is_read_on_blocks_laid_from_its_start() {
    let data = bytes(12 * BLOCK, 4);
    let (store, r) = opened(&data);
    let (at, blob) = (4096, 8 * BLOCK);
    // Block-sized reads of the part (not from its start, which would
    // fetch it all): one request each, on blocks beginning at the part's
    // offset plus whole blocks.
    for k in [1, 5, 3] {
        let off = at + k * BLOCK;
        let (b, range) = r
            .read_blob(at, blob, off, BLOCK, Reach::WAIT)
            .unwrap()
            .unwrap();
        assert_eq!(b[range], data[off as usize..(off + BLOCK) as usize]);
    }
    let asked: Vec<u64> = store.gets()[1..].iter().map(|g| g.start).collect();
    assert_eq!(asked, [at + BLOCK, at + 5 * BLOCK, at + 3 * BLOCK]);
    // A small blob stays on grid 0 (its read fetches the block holding
    // it; the rest of the blob, block 1, comes in the background).
    let asked = store.gets().len();
    let (b, range) = r
        .read_blob(at, BLOCK, at + 10, 10, Reach::WAIT)
        .unwrap()
        .unwrap();
    assert_eq!(b[range], data[(at + 10) as usize..(at + 20) as usize]);
    eventually("the read-ahead's requests to end", || {
        r.ahead.load(std::sync::atomic::Ordering::Relaxed) == 0
    });
    let mut small = store.gets()[asked..].to_vec();
    small.sort_by_key(|g| g.start);
    assert_eq!(small, [0..BLOCK, BLOCK..2 * BLOCK]);
}

/// A block whose request failed fails the reads that come within a
/// second without asking again (a server that is down is not asked once
/// per 4 KiB read), then is asked for again.
fn then_asked_again(store: &Faulty, r: &Remote, data: &[u8]) {
    let asked = store.gets().len();
    let e = read(r, 0, 10).unwrap_err().to_string();
    assert!(e.contains("tried again after that"), "{e}");
    assert_eq!(store.gets().len(), asked);
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(read(r, 0, 10).unwrap(), data[..10]);
    assert_eq!(store.gets().len(), asked + 1);
}

#[test]
fn a_failed_request_fails_its_read_and_a_later_read_asks_again() {
    let data = bytes(3 * BLOCK, 7);
    let (store, r) = opened(&data);
    store.then(Fault::Fail);
    let e = read(&r, 0, 10).unwrap_err();
    assert!(e.to_string().contains("503"), "{e}");
    then_asked_again(&store, &r, &data);
}

#[test]
fn a_body_cut_short_is_an_error_never_short_bytes() {
    let data = bytes(3 * BLOCK, 8);
    let (store, r) = opened(&data);
    store.then(Fault::Cut);
    let e = read(&r, 0, 10).unwrap_err().to_string();
    assert!(
        e.contains(&format!("sent {} of {BLOCK} bytes", BLOCK / 2)),
        "{e}"
    );
    // Nothing of the cut answer was kept.
    then_asked_again(&store, &r, &data);
}

#[test]
fn an_answer_of_another_range_is_refused() {
    let data = bytes(3 * BLOCK, 9);
    let (store, r) = opened(&data);
    store.then(Fault::Shifted);
    let e = read(&r, 0, 10).unwrap_err().to_string();
    assert!(e.contains("answered bytes [1, "), "{e}");
    then_asked_again(&store, &r, &data);
}

#[test]
fn a_cut_body_at_open_is_refused() {
    let store = Arc::new(Faulty::default());
    put(&store, &bytes(2 * BLOCK, 10));
    store.then(Fault::Cut);
    let Err(e) = Remote::open_with(URL, store.clone(), None, blocks()) else {
        panic!("opened from half a tail")
    };
    assert!(e.to_string().contains("of 1048576 bytes"), "{e}");
}

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

/// A key with a control character (a name from an index, encoded) is
/// refused, the character escaped in the message, not sent raw.
#[test]
fn a_control_character_in_a_key_is_refused_escaped() {
    for (url, c) in [("http://h/a/m-2%09.st", "'\\t'"), ("s3://b/m%0A", "'\\n'")] {
        let Err(e) = parse(url) else {
            panic!("{url} parsed")
        };
        let e = e.to_string();
        assert!(e.contains(&format!("the control character {c}")), "{e}");
        assert!(!e.contains(['\t', '\n']), "{e:?}");
    }
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

/// A disk cache handed to an object keeps the blocks it fetched: a second
/// open of the same version (another process, a remount) reads them from
/// disk with no request, and a new version of the object shares none.
#[test]
fn blocks_kept_in_a_disk_cache_serve_a_later_open() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let disk = Arc::new(disk::Disk::open(&cache, 64 * BLOCK).unwrap());
    let data = bytes(6 * BLOCK, 11);
    let store = Arc::new(Faulty::default());
    put(&store, &data);
    let r = Remote::open_with(URL, store.clone(), Some(disk.clone()), blocks()).unwrap();
    for j in [0, 2, 3] {
        assert_eq!(
            read(&r, j * BLOCK, 64).unwrap(),
            data[(j * BLOCK) as usize..][..64]
        );
    }
    assert_eq!(store.gets().len(), 4);
    drop(r);

    let again = Remote::open_with(URL, store.clone(), Some(disk.clone()), blocks()).unwrap();
    for j in [0, 2, 3] {
        assert_eq!(
            read(&again, j * BLOCK + 7, 9).unwrap(),
            data[(j * BLOCK + 7) as usize..][..9]
        );
    }
    assert_eq!(store.gets().len(), 5, "only the open's tail was asked for");

    // A new version is another object: its blocks are fetched.
    let new = bytes(6 * BLOCK, 12);
    put(&store, &new);
    let r = Remote::open_with(URL, store.clone(), Some(disk), blocks()).unwrap();
    assert_eq!(read(&r, 0, 64).unwrap(), new[..64]);
    assert_eq!(store.gets().len(), 7);
}

/// A small read asks for exactly its bytes and keeps no block; inside a
/// block held, or kept in the disk cache by an earlier open, it asks for
/// nothing.
#[test]
fn a_small_read_asks_for_its_bytes_or_for_nothing_where_a_block_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(disk::Disk::open(&dir.path().join("cache"), 64 * BLOCK).unwrap());
    let data = bytes(6 * BLOCK, 13);
    let store = Arc::new(Faulty::default());
    put(&store, &data);
    let small = |r: &Remote, at: u64| {
        assert_eq!(r.read_small(at, 30).unwrap(), data[at as usize..][..30]);
    };
    let r = Remote::open_with(URL, store.clone(), Some(disk.clone()), blocks()).unwrap();
    small(&r, BLOCK + 5);
    assert_eq!(
        (store.gets().len(), store.gets()[1].clone()),
        (2, BLOCK + 5..BLOCK + 35)
    );
    small(&r, BLOCK + 5);
    assert_eq!(store.gets().len(), 3, "no block kept: asked again");
    read(&r, 2 * BLOCK, 64).unwrap();
    small(&r, 2 * BLOCK + 100);
    assert_eq!(store.gets().len(), 4, "in a block held: nothing asked");
    drop(r);
    let again = Remote::open_with(URL, store.clone(), Some(disk), blocks()).unwrap();
    small(&again, 2 * BLOCK + 200);
    small(&again, 2 * BLOCK + 300);
    assert_eq!(store.gets().len(), 5, "kept on disk: only the tail asked");
    small(&again, BLOCK + 5);
    assert_eq!(
        (store.gets().len(), store.gets()[5].clone()),
        (6, BLOCK + 5..BLOCK + 35)
    );
}

/// A first read across blocks that fetches none of them ahead (at hand,
/// or with every request busy) starts its stream as a later read would:
/// the stream's fetched-to mark was left at its first block + 1, below
/// its last block, and the walk's distance ahead underflowed (a panic on
/// the FUSE session's thread ended a mount in CI).
#[test]
fn a_first_read_across_blocks_at_hand_starts_a_stream() {
    let data = bytes(4 * BLOCK, 25);
    let (store, r) = opened(&data);
    let read = (r.read_on(Grid::ZERO, BLOCK - 5, 10, Reach::AT_HAND, None)).unwrap();
    assert!(read.is_none(), "not held");
    assert_eq!(store.gets().len(), 1, "the open's only");
}

/// A read that may not wait (a FUSE worker's) gives what is held and
/// nothing else: a block not held asks no request and gives `None`; once
/// a read that may wait has fetched it, it is at hand; the tail always is.
/// (A small blob: the first read of a big part starts its read-ahead in
/// the background, at hand or not.)
#[test]
fn a_read_at_hand_never_asks_the_server() {
    let data = bytes(4 * BLOCK, 13);
    let (store, r) = opened(&data);
    // On the object's blocks, of no part (a part read from its first
    // block would be fetched whole in the background).
    let at_hand = |off: u64, len: u64| {
        let read = r
            .read_on(Grid::ZERO, off, len, Reach::AT_HAND, None)
            .unwrap();
        read.map(|(b, range)| b[range].to_vec())
    };
    assert_eq!(at_hand(10, 100), None);
    assert_eq!(at_hand(BLOCK - 5, 10), None, "across two blocks");
    assert_eq!(store.gets().len(), 1, "the open's only");
    let len = data.len() as u64;
    assert_eq!(
        at_hand(len - 10, 10).as_deref(),
        Some(&data[data.len() - 10..])
    );
    assert_eq!(read(&r, 0, 10).unwrap(), data[..10]);
    assert_eq!(at_hand(10, 100).as_deref(), Some(&data[10..110]));
    // The next block is not held yet: the read across both is not at hand.
    assert_eq!(at_hand(BLOCK - 5, 10), None);
    assert_eq!(store.gets().len(), 2);
}

/// Objects read by one process share one block cache: together within
/// its budget (`--cache-mib`), and each reader kept ahead by at most half
/// of it, so that what is fetched ahead is still there when read.
#[test]
fn objects_share_one_cache_budget_and_read_ahead_fits_in_it() {
    let blocks = Arc::new(Blocks::new(4 * BLOCK));
    let open = |seed: u8| {
        let data = bytes(40 * BLOCK, seed);
        let store = Arc::new(Faulty::default());
        put(&store, &data);
        let r = Remote::open_with(URL, store.clone(), None, blocks.clone()).unwrap();
        (data, store, r)
    };
    let objects = [open(21), open(22)];
    for (data, _, r) in &objects {
        for j in 0..4 {
            let at = (j * BLOCK) as usize;
            assert_eq!(read(r, j * BLOCK, 100).unwrap(), data[at..at + 100]);
        }
    }
    for (_, store, r) in &objects {
        eventually("the read-ahead's requests to end", || {
            r.ahead.load(std::sync::atomic::Ordering::Relaxed) == 0
        });
        // Block 3 read last, a window of 2 (half of 4) past it.
        let far = store.gets()[1..].iter().map(|g| g.end).max().unwrap();
        assert!(far <= 6 * BLOCK, "{:?}", store.gets());
    }
    assert!(blocks.held() <= 4 * BLOCK, "{} bytes held", blocks.held());
    // The objects' blocks are told apart: each still reads its own bytes.
    for (data, _, r) in &objects {
        let at = (2 * BLOCK) as usize;
        assert_eq!(read(r, 2 * BLOCK, 100).unwrap(), data[at..at + 100]);
    }
}

/// The tail read at open is held as a block of the shared cache, within
/// its budget: a model of many files by URL (an index may name 100,000)
/// kept a MiB a file for its life. A tail the budget let go is read
/// again by block; one still held costs no request.
#[test]
fn tails_are_held_within_the_cache_budget() {
    let blocks = Arc::new(Blocks::new(3 * BLOCK));
    let data = bytes(2 * BLOCK + 5, 24);
    let store = Arc::new(Faulty::default());
    put(&store, &data);
    let opened: Vec<Remote> = (0..5)
        .map(|_| Remote::open_with(URL, store.clone(), None, blocks.clone()).unwrap())
        .collect();
    assert!(blocks.held() <= 3 * BLOCK, "{} bytes held", blocks.held());
    let len = data.len() as u64;
    // The last 4 bytes: in the tail, and in the last block alone.
    let last = |r: &Remote| read(r, len - 4, 4).unwrap();
    let asked = store.gets().len();
    assert_eq!(last(&opened[4]), data[data.len() - 4..]);
    assert_eq!(store.gets().len(), asked, "the newest tail is held");
    assert_eq!(last(&opened[0]), data[data.len() - 4..]);
    let fetched = store.gets()[asked..].to_vec();
    assert_eq!(
        fetched,
        vec![(2 * BLOCK)..len],
        "the oldest tail was let go: its block is fetched"
    );
}

/// Opened as `ztfs` opens (the first block asked for with the tail): one
/// round trip of two requests, after which the object's first bytes (a
/// format's header) cost no request. A small object is its tail alone.
#[test]
fn opening_asks_for_the_first_block_with_the_tail() {
    let data = bytes(5 * BLOCK + 777, 28);
    let store = Arc::new(Faulty::default());
    put(&store, &data);
    let r = open_any(&store);
    let len = data.len() as u64;
    let mut gets = store.gets();
    gets.sort_by_key(|g| g.start);
    assert_eq!(gets, [0..BLOCK, len - TAIL..len]);
    assert_eq!(read(&r, 10, 100).unwrap(), data[10..110]);
    assert_eq!(store.gets().len(), 2, "the first block was kept");

    let small = bytes(TAIL / 2, 29);
    let store = Arc::new(Faulty::default());
    put(&store, &small);
    let r = open_any(&store);
    assert_eq!(read(&r, 10, 100).unwrap(), small[10..110]);
    let asked = store.gets().len();
    assert!(asked <= 2, "{:?}", store.gets());
}

/// A server that stalls the first block's request does not hold the open:
/// the tail is enough, the block is left to its reader.
#[test]
fn a_stalled_first_block_does_not_hold_the_open() {
    use std::sync::atomic::Ordering::SeqCst;
    let data = bytes(5 * BLOCK + 777, 30);
    let store = Arc::new(Faulty::default());
    put(&store, &data);
    store.stall_first.store(true, SeqCst);
    let start = Instant::now();
    let r = open_any(&store);
    let took = start.elapsed();
    store.stall_first.store(false, SeqCst);
    // Stalled for as long as the test runs; the open's grace is the tail's
    // own time (at least 100 ms): far below 10 s however loaded the host.
    assert!(took < Duration::from_secs(10), "the open took {took:?}");
    assert_eq!(read(&r, 10, 100).unwrap(), data[10..110]);
}

/// A file a model names (a checkpoint's file) is opened by its head
/// alone: one request of its first [`HEAD`] bytes gives its size and
/// version, a header in them costs nothing more, and one past them is
/// read by its own range (`read_small`), not by blocks. Before, each such
/// open read its last MiB and its first block: a checkpoint of 300 files
/// by URL fetched 600 MiB and held the cache's 256 MiB before any tensor
/// was read.
#[test]
// The requests made, a range each: a list of one is meant.
#[allow(clippy::single_range_in_vec_init)]
fn a_file_a_model_names_is_opened_by_its_head_alone() {
    let data = bytes(5 * BLOCK + 777, 31);
    let store = Arc::new(Faulty::default());
    put(&store, &data);
    let r = Remote::open_at(URL, store.clone(), None, blocks(), Ask::Head).unwrap();
    assert_eq!(r.len(), data.len() as u64);
    assert_eq!(store.gets(), [0..HEAD]);
    assert_eq!(read(&r, 10, 100).unwrap(), data[10..110]);
    assert_eq!(r.read_small(0, 8).unwrap(), data[..8]);
    assert_eq!(store.gets().len(), 1, "the head is held");
    let past = (HEAD - 10) as usize..(HEAD + 90) as usize;
    assert_eq!(r.read_small(HEAD - 10, 100).unwrap(), data[past]);
    assert_eq!(store.gets()[1..], [HEAD - 10..HEAD + 90]);
    assert_eq!(
        read(&r, 2 * BLOCK, 10).unwrap(),
        data[2 << 20..(2 << 20) + 10]
    );
    assert_eq!(store.gets()[2..], [2 * BLOCK..3 * BLOCK]);

    let small = bytes(HEAD / 2, 32);
    let store = Arc::new(Faulty::default());
    put(&store, &small);
    let r = Remote::open_at(URL, store.clone(), None, blocks(), Ask::Head).unwrap();
    assert_eq!(r.len(), small.len() as u64);
    assert_eq!(read(&r, 100, 1000).unwrap(), small[100..1100]);
    assert_eq!(store.gets(), [0..HEAD / 2], "a small file is its head");
}

/// Waits (for read-ahead threads) until `done` holds, at most 20 s.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(20), "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
