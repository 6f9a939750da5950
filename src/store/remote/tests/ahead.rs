//! Read-ahead without a server: a part read from its start is fetched
//! whole, a reader walking the parts in order (past small ones too) is
//! fetched ahead, a random reader is not, reads across blocks ask for them
//! at once, and interleaved readers and walks each keep their own stream.

use super::*;

/// A read of a big part from its start fetches the rest of the part at
/// once, in several requests, on the part's grid and never past its end;
/// the reader's next reads ask nothing more.
#[test]
fn a_part_read_from_its_start_is_fetched_whole_at_once() {
    let data = bytes(20 * BLOCK, 14);
    let (store, r) = opened(&data);
    let (at, blob) = (4096, 9 * BLOCK + 100);
    let (b, range) = (r.read_blob(at, blob, at, BLOCK, Reach::WAIT))
        .unwrap()
        .unwrap();
    assert_eq!(b[range], data[at as usize..(at + BLOCK) as usize]);
    let end = at + blob;
    let covered = || {
        let mut gets: Vec<Range<u64>> = store.gets()[1..].to_vec();
        gets.sort_by_key(|g| g.start);
        gets
    };
    // (A request is recorded when answered: all of them ended.)
    eventually("the part fetched", || {
        r.ahead.load(std::sync::atomic::Ordering::Relaxed) == 0
            && covered().last().is_some_and(|g| g.end >= end)
    });
    let gets = covered();
    assert!(gets.len() >= 3, "in several requests: {gets:?}");
    assert!(gets.windows(2).all(|w| w[0].end == w[1].start), "{gets:?}");
    assert_eq!(gets[0].start, at);
    assert!(
        gets.last().unwrap().end <= end + BLOCK,
        "past the part: {gets:?}"
    );
    let before = store.gets().len();
    for k in 1..9 {
        let off = at + k * BLOCK;
        let (b, range) = (r.read_blob(at, blob, off, BLOCK, Reach::WAIT))
            .unwrap()
            .unwrap();
        assert_eq!(b[range], data[off as usize..(off + BLOCK) as usize]);
    }
    assert_eq!(store.gets().len(), before, "all of it was fetched ahead");
}

/// With the parts told, a reader that begins parts in the object's order
/// gets the parts after the one it reads fetched ahead; one that jumps
/// does not.
#[test]
fn a_reader_walking_the_parts_in_order_is_fetched_ahead_across_them() {
    let data = bytes(30 * BLOCK, 15);
    let mut parts = Vec::new();
    let mut at = 4096;
    for n in [5, 6, 5, 5] {
        parts.push((at, n * BLOCK + 7));
        at += n * BLOCK + 7;
    }
    let begin = |r: &Remote, k: usize| {
        let (o, n) = parts[k];
        let (b, range) = r.read_blob(o, n, o, 1000, Reach::WAIT).unwrap().unwrap();
        assert_eq!(b[range], data[o as usize..o as usize + 1000]);
    };
    let touches = |store: &Faulty, k: usize| {
        let (o, n) = parts[k];
        store.gets()[1..]
            .iter()
            .any(|g| g.start < o + n && g.end > o)
    };
    // In order: parts 0 and 1 begun, 2 (and 3) fetched unread.
    let (store, r) = opened(&data);
    r.set_parts(parts.clone());
    begin(&r, 0);
    begin(&r, 1);
    // The reader goes on in part 1 (each read tops up what is ahead, when
    // requests are free).
    let (o1, _) = parts[1];
    eventually("part 2 fetched ahead", || {
        r.read_blob(o1, parts[1].1, o1 + BLOCK, 10, Reach::WAIT)
            .unwrap();
        touches(&store, 2)
    });
    // Out of order: part 2, then 0: nothing of 1 or 3.
    let (store, r) = opened(&data);
    r.set_parts(parts.clone());
    begin(&r, 2);
    begin(&r, 0);
    eventually("parts 0 and 2 fetched", || {
        touches(&store, 0) && touches(&store, 2)
    });
    std::thread::sleep(Duration::from_millis(200));
    // (A part's last block may hold the next part's first bytes: no
    // request begins inside part 1 or 3.)
    let begins_in = |k: usize| {
        let (o, n) = parts[k];
        store.gets()[1..]
            .iter()
            .any(|g| g.start >= o && g.start < o + n)
    };
    assert!(!begins_in(1) && !begins_in(3), "{:?}", store.gets());
}

#[test]
fn a_sequential_reader_is_read_ahead_and_a_random_one_is_not() {
    let data = bytes(40 * BLOCK, 5);
    let (store, r) = opened(&data);
    for j in 0..4 {
        assert_eq!(
            read(&r, j * BLOCK, 100).unwrap(),
            data[(j * BLOCK) as usize..][..100]
        );
    }
    // Blocks past the fourth are asked for without a read of them.
    eventually("read-ahead past block 4", || {
        store
            .gets()
            .iter()
            .any(|g| g.start >= 5 * BLOCK && g.end <= 39 * BLOCK)
    });
    // The blocks fetched ahead serve reads with no request of their own.
    eventually("the read-ahead's requests to end", || {
        r.ahead.load(std::sync::atomic::Ordering::Relaxed) == 0
    });
    let before = store.gets().len();
    assert_eq!(
        read(&r, 4 * BLOCK, 100).unwrap(),
        data[(4 * BLOCK) as usize..][..100]
    );
    assert_eq!(store.gets().len(), before);

    let data = bytes(40 * BLOCK, 6);
    let (store, r) = opened(&data);
    for j in [30, 3, 17, 9, 25, 1, 12] {
        assert_eq!(
            read(&r, j * BLOCK, 100).unwrap(),
            data[(j * BLOCK) as usize..][..100]
        );
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(store.gets().len(), 1 + 7, "one request per block read");
}

/// A small part (under 4 MiB, on the object's own blocks) begun in its
/// turn keeps the walk going: real models have small tensors between big
/// ones (norms, biases), and a walk that stopped at each would fetch
/// ahead only until the first.
#[test]
fn a_walk_goes_on_past_a_small_part() {
    let data = bytes(30 * BLOCK, 23);
    let mut parts = Vec::new();
    let mut at = 4096;
    for n in [5 * BLOCK, 1000, 5 * BLOCK, 5 * BLOCK, 5 * BLOCK] {
        parts.push((at, n + 7));
        at += n + 7;
    }
    let (store, r) = opened(&data);
    r.set_parts(parts.clone());
    for &(o, n) in &parts[..3] {
        let (b, range) = r.read_blob(o, n, o, 500, Reach::WAIT).unwrap().unwrap();
        assert_eq!(b[range], data[o as usize..o as usize + 500]);
    }
    let (o3, n3) = parts[3];
    let (o2, n2) = parts[2];
    eventually("part 3 fetched ahead", || {
        r.read_blob(o2, n2, o2 + BLOCK, 10, Reach::WAIT).unwrap();
        (store.gets()[1..].iter()).any(|g| g.start >= o3 && g.start < o3 + n3)
    });
}

/// A walk fetches ahead by blocks, not by a few parts: over parts of a
/// block each, a dozen parts ahead of the reader (a walk six parts deep
/// kept a link of 30 ms and 400 MB/s at 0.6x, measured).
#[test]
fn a_walk_over_small_parts_reaches_many_parts_ahead() {
    let data = bytes(30 * BLOCK, 24);
    let parts: Vec<(u64, u64)> = (0..25)
        .map(|k| (100 + k * (BLOCK + 7), BLOCK + 7))
        .collect();
    let (store, r) = opened(&data);
    r.set_parts(parts.clone());
    for &(o, n) in &parts[..2] {
        r.read_blob(o, n, o, 500, Reach::WAIT).unwrap().unwrap();
    }
    // The reader goes on in part 1 (each read tops up what is ahead, when
    // requests are free).
    let (o1, n1) = parts[1];
    let (o, n) = parts[14];
    eventually("part 14 fetched ahead", || {
        r.read_blob(o1, n1, o1 + 1000, 10, Reach::WAIT).unwrap();
        (store.gets()[1..].iter()).any(|g| g.start < o + n && g.end > o)
    });
}

/// A read across two blocks that are not held asks for both at once, not
/// one after the other (a first read of a small tensor cut by a block
/// boundary cost two round trips).
#[test]
fn a_read_across_blocks_asks_for_them_at_once() {
    use std::sync::atomic::Ordering::SeqCst;
    let data = bytes(12 * BLOCK, 25);
    let (store, r) = opened(&data);
    let (o, n) = (BLOCK / 2, BLOCK);
    store.held.store(true, SeqCst);
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let (b, range) = r.read_blob(o, n, o, n, Reach::WAIT).unwrap().unwrap();
            assert_eq!(b[range], data[o as usize..(o + n) as usize]);
        });
        let start = Instant::now();
        while store.waiting.load(SeqCst) < 2 && start.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let waiting = store.waiting.load(SeqCst);
        store.held.store(false, SeqCst);
        reader.join().unwrap();
        assert_eq!(waiting, 2, "requests in flight at once");
    });
}

/// Two sequential readers of one object, interleaved, and a random reader
/// among them, each an open file of its own: each sequential one keeps
/// its own stream (the random reader's reads push out only its own), so
/// each is read ahead.
#[test]
fn interleaved_readers_each_keep_their_stream() {
    let data = bytes(200 * BLOCK, 26);
    let (store, r) = opened(&data);
    // Each reader its own open file (FUSE handles 2, 3 and 4), in one
    // thread.
    let read_at = |handle: u64, j: u64| {
        let at = (j * BLOCK) as usize;
        let how = Reach::WAIT.by(super::super::super::Reader {
            pid: 7,
            handle,
            exact: false,
        });
        let (b, range) = (r.read_on(Grid::ZERO, j * BLOCK, 100, how, None))
            .unwrap()
            .unwrap();
        assert_eq!(b[range], data[at..at + 100]);
    };
    for k in 0..6 {
        read_at(2, k);
        read_at(3, 150 + k);
        // 40 blocks apart from each other, each read once in each round,
        // in a shuffled order: more than the streams an open file keeps.
        for m in 0..40 {
            read_at(4, 20 + 3 * ((m * 17 + k * 5) % 40));
        }
    }
    // Both are read ahead past block 6 of their own.
    let ahead_of = |from: u64| {
        (store.gets()[1..].iter())
            .any(|g| g.start >= (from + 7) * BLOCK && g.start < (from + 30) * BLOCK)
    };
    eventually("both readers read ahead", || ahead_of(0) && ahead_of(150));
}

/// Two threads walking the parts in order, interleaved, each opening one
/// part's file after another (a handle per part, as a loader reading each
/// tensor's `data`): each walk is followed, so the parts after each
/// thread's are fetched ahead.
#[test]
fn interleaved_walks_are_each_followed() {
    let data = bytes(75 * BLOCK, 27);
    let n = 5 * BLOCK + 7;
    let parts: Vec<(u64, u64)> = (0..14).map(|k| (100 + k * n, n)).collect();
    let (store, r) = opened(&data);
    r.set_parts(parts.clone());
    let begin = |pid: u32, k: usize, at: u64| {
        let (o, n) = parts[k];
        let handle = 100 * u64::from(pid) + k as u64;
        let how = Reach::WAIT.by(super::super::super::Reader {
            pid,
            handle,
            exact: false,
        });
        let (b, range) = r.read_blob(o, n, o + at, 10, how).unwrap().unwrap();
        assert_eq!(b[range], data[(o + at) as usize..(o + at + 10) as usize]);
    };
    for (reader, k) in [(2, 0), (3, 8), (2, 1), (3, 9)] {
        begin(reader, k, 0);
    }
    // A request that begins in the part (a part's last block may hold the
    // next one's first bytes).
    let begins_in = |k: usize| {
        let (o, n) = parts[k];
        (store.gets()[1..].iter()).any(|g| g.start >= o && g.start < o + n)
    };
    eventually("parts 2 and 10 fetched ahead", || {
        begin(2, 1, BLOCK);
        begin(3, 9, BLOCK);
        begins_in(2) && begins_in(10)
    });
}
