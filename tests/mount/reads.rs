//! Reads: seeded random ranges, `mmap`, and concurrent readers, against
//! `ztfs cat`.

use super::*;

/// A part to read, with the bytes `cat` gives for it.
pub(crate) struct Target {
    pub(crate) file: PathBuf,
    pub(crate) object: String,
    pub(crate) part: String,
    pub(crate) raw: bool,
    pub(crate) want: Vec<u8>,
}

impl Target {
    pub(crate) fn new(file: &Path, object: &str, part: &str, raw: bool) -> Target {
        let want = cat(file, object, part, raw).expect("cat the target part");
        let (object, part) = (object.to_string(), part.to_string());
        Target {
            file: file.to_path_buf(),
            object,
            part,
            raw,
            want,
        }
    }

    /// Its file in a flat mount of `self.file`.
    pub(crate) fn path(&self, m: &Mount) -> PathBuf {
        part_file(&m.join(&object_dirs(m)[&self.object]), &self.part, self.raw)
    }
}

/// Every part of `file`, decoded.
pub(crate) fn all_parts(file: &Path) -> Vec<Target> {
    let listing = ls(file);
    let pairs = listing
        .objects
        .iter()
        .flat_map(|o| o.parts.iter().map(move |p| (o, p)));
    pairs
        .map(|(o, p)| Target::new(file, &o.name, &p.name, false))
        .collect()
}

/// The largest unencoded part of the samples.
pub(crate) fn largest_sample_part() -> Target {
    let mut best: Option<(u64, PathBuf, String, String)> = None;
    for file in files_below(&corpus().join("samples")) {
        for o in ls(&file).objects {
            for p in o.parts.iter().filter(|p| p.encoding.is_none()) {
                if best.as_ref().is_none_or(|b| p.decoded_length > b.0) {
                    best = Some((
                        p.decoded_length,
                        file.clone(),
                        o.name.clone(),
                        p.name.clone(),
                    ));
                }
            }
        }
    }
    let (_, file, object, part) = best.expect("the samples have parts");
    Target::new(&file, &object, &part, false)
}

/// The first non-empty zstd-seekable part of a corpus file that verifies,
/// decoded and raw; none if the corpus has none.
pub(crate) fn zstd_parts() -> Vec<Target> {
    let good = rows()
        .into_iter()
        .filter(|r| r.open == "valid" && r.verify == "valid");
    for file in good.map(|r| r.path()) {
        for o in ls(&file).objects {
            let zstd = |p: &&PartInfo| p.encoding.as_deref() == Some(ZSTD) && p.decoded_length > 0;
            if let Some(p) = o.parts.iter().find(zstd) {
                let t = |raw| Target::new(&file, &o.name, &p.name, raw);
                return vec![t(false), t(true)];
            }
        }
    }
    Vec::new()
}

#[test]
fn random_range_reads() {
    let mut targets = vec![largest_sample_part()];
    targets.extend(zstd_parts());
    for flags in [&[][..], &["--direct-io"]] {
        for (i, t) in targets.iter().enumerate() {
            let m = Mount::new(&t.file, flags);
            random_reads(&t.path(&m), &t.want, 0x5EED + i as u64);
        }
    }
}

/// 500 seeded preads: within the file, past its end, and across it.
pub(crate) fn random_reads(path: &Path, want: &[u8], seed: u64) {
    let f = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let len = want.len() as u64;
    let mut rng = Lcg::new(seed);
    for i in 0..500 {
        let (offset, size) = match i % 5 {
            0 => (len + rng.below(1 << 20), 1 + rng.below(8192)),
            1 => (len.saturating_sub(rng.below(64)), 1 + rng.below(256)),
            2 => (0, len + rng.below(4096)),
            _ => (rng.below(len + 1), rng.below(len / 2 + 4097)),
        };
        let mut buf = vec![0xAA; size as usize];
        let n = f
            .read_at(&mut buf, offset)
            .unwrap_or_else(|e| panic!("pread: {e}"));
        let (lo, hi) = (offset.min(len) as usize, (offset + size).min(len) as usize);
        let what = format!("{}: pread({offset}, {size})", path.display());
        assert_same(&buf[..n], &want[lo..hi], &what);
    }
}

#[test]
fn mmap_through_mount() {
    let mut targets = vec![largest_sample_part()];
    targets.extend(zstd_parts());
    for flags in [&[][..], &["--direct-io"]] {
        for t in &targets {
            let m = Mount::new(&t.file, flags);
            let path = t.path(&m);
            let what = format!("mmap {} {flags:?}", path.display());
            let f = File::open(&path).expect("open the part");
            // SAFETY: MAP_SHARED, read-only, of a file nothing changes.
            let map = unsafe { memmap2::Mmap::map(&f) };
            assert_same(
                &map.unwrap_or_else(|e| panic!("{what}: {e}")),
                &t.want,
                &what,
            );
        }
    }
}

#[test]
fn concurrent_readers() {
    let file = sample("tiny-llama.zt");
    let targets = all_parts(&file);
    for flags in [&[][..], &["--direct-io"]] {
        let m = Mount::new(&file, flags);
        read_concurrently(&m, &targets, 8);
    }
    // Decoded frames shared by readers, through a cache that holds one.
    for t in zstd_parts() {
        let m = Mount::new(&t.file, &["--direct-io", "--cache-mib", "0"]);
        read_concurrently(&m, std::slice::from_ref(&t), 8);
    }
}

/// `threads` threads each read every target whole 20 times, starting at
/// different targets, so that some read the same part at once and some not.
pub(crate) fn read_concurrently(m: &Mount, targets: &[Target], threads: usize) {
    let paths: Vec<PathBuf> = targets.iter().map(|t| t.path(m)).collect();
    std::thread::scope(|s| {
        for i in 0..threads {
            let paths = &paths;
            s.spawn(move || {
                for round in 0..20 {
                    for j in 0..targets.len() {
                        let k = (i + j + round) % targets.len();
                        let got = fs::read(&paths[k]).expect("read a part");
                        assert_same(&got, &targets[k].want, &format!("thread {i}: {k}"));
                    }
                }
            });
        }
    });
}
