//! Seeded mutation test: no mutant of a valid file makes the reader panic or
//! allocate out of proportion to its size.
//!
//! Inputs are every `.zt` under `corpus/valid` and `corpus/samples`, plus a
//! few files built here (dense types, aliasing, attributes, zstd-seekable,
//! unknown layout, a shard pair, a data shard). Each round mutates one input
//! and runs [`ztfs::format::read_container`]; a mutant that is accepted is
//! then decoded and verified part by part, from the bytes and through
//! [`ztfs::model::Model`]. More than half of the rounds mutate the manifest
//! and then fix the footer's length and hash, since otherwise `ManifestHash`
//! rejects almost every mutant before the parser sees it.
//!
//! Oracles: no panic; the largest single allocation and the peak growth of
//! live bytes stay within [`alloc_bound`]; a container `read_container`
//! accepts opens as a `Model`; every validated local blob lies in the file;
//! a part that decodes yields exactly its decoded size.
//!
//! Environment: `ZTFS_MUTATION_SEED` (decimal or `0x` hex) replaces the
//! seed, `ZTFS_MUTATION_ROUNDS` the rounds per input, and
//! `ZTFS_MUTATION_REPLAY=FILE` checks one saved mutant instead. A failing
//! mutant is written under the temp dir and its path printed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ztfs::decode::{check_interpretable, ContentCheck, Encoding};
use ztfs::digest::{self, Algo, Hasher};
use ztfs::format::cbor::{self, Value};
use ztfs::format::{read_container, Container, Manifest, Object, Part};
use ztfs::model::Model;

const DEFAULT_SEED: u64 = 0x5EED_2A54_0000_0001;
/// Rounds per input; with ~70 inputs this is some twenty thousand mutants.
const DEFAULT_ROUNDS: u64 = 300;
const MAGIC: [u8; 8] = [0x89, b'Z', b'T', b'2', 0x0d, 0x0a, 0x1a, 0x0a];
/// A corpus with an `expected.tsv` must give at least this many inputs.
const MIN_CORPUS_FILES: usize = 20;
/// One decoded zstd frame may take this much, in bytes (`MAX_FRAME_LEN`).
const FRAME_ALLOWANCE: usize = 16 << 20;
/// A single allocation above this, in bytes, aborts the run after saving
/// the mutant: the allocation itself would abort the process.
const HARD_CAP: usize = 4 << 30;

/// What a mutant of `len` bytes may allocate, in bytes.
fn alloc_bound(len: usize) -> usize {
    64 * len + FRAME_ALLOWANCE
}

// ---------------------------------------------------------------------------
// Counting allocator: per thread, so parallel workers measure themselves.

struct Counting;

#[global_allocator]
static ALLOC: Counting = Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static MUTANT: Cell<(*const u8, usize)> = const { Cell::new((std::ptr::null(), 0)) };
}

fn note_alloc(size: usize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + size as isize;
        live.set(now);
        PEAK.with(|p| p.set(p.get().max(now)));
        LARGEST.with(|l| l.set(l.get().max(size)));
    });
    if size > HARD_CAP && ARMED.try_with(Cell::get).unwrap_or(false) {
        oversize(size);
    }
}

fn note_free(size: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get() - size as isize));
}

/// Saves the mutant being checked and aborts: an allocation this large
/// cannot be reported after the fact.
fn oversize(size: usize) -> ! {
    ARMED.with(|a| a.set(false));
    let (ptr, len) = MUTANT.with(Cell::get);
    // SAFETY: MUTANT is set by `arm` to a slice that outlives the armed window.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    let path = std::env::temp_dir().join("ztfs-mutation-oversize.zt");
    let _ = std::fs::write(&path, bytes);
    eprintln!(
        "mutation: a single allocation of {size} bytes for a mutant of {len} bytes; saved to {}",
        path.display()
    );
    std::process::abort()
}

// SAFETY: every method forwards to System unchanged and only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        note_free(layout.size());
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Old and new blocks may both be live during the move.
        note_alloc(new_size);
        note_free(layout.size());
        System.realloc(ptr, layout, new_size)
    }
}

/// What one armed window allocated: peak growth and largest block, in bytes.
struct Usage {
    peak_growth: usize,
    largest: usize,
}

fn measured<T>(mutant: &[u8], f: impl FnOnce() -> T) -> (T, Usage) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    LARGEST.with(|l| l.set(0));
    MUTANT.with(|m| m.set((mutant.as_ptr(), mutant.len())));
    ARMED.with(|a| a.set(true));
    let out = f();
    ARMED.with(|a| a.set(false));
    let usage = Usage {
        peak_growth: (PEAK.with(Cell::get) - base).max(0) as usize,
        largest: LARGEST.with(Cell::get),
    };
    (out, usage)
}

// ---------------------------------------------------------------------------
// Panics: caught per mutant, message kept instead of printed.

thread_local! {
    static GUARDED: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(Cell::get) {
                LAST_PANIC.with(|p| *p.borrow_mut() = info.to_string());
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f`, turning a panic into `Err(message)`.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    GUARDED.with(|g| g.set(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(false));
    r.map_err(|_| LAST_PANIC.with(|p| p.borrow().clone()))
}

// ---------------------------------------------------------------------------
// Deterministic PRNG (splitmix64).

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n`; `n` must be positive.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn percent(&mut self, p: usize) -> bool {
        self.below(100) < p
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    /// A range within `0..len`, possibly empty; `len` may be 0.
    fn span(&mut self, len: usize) -> (usize, usize) {
        let a = self.below(len + 1);
        let max = if self.percent(70) { 16 } else { len + 1 };
        (a, (a + self.below(max.min(len - a + 1))).min(len))
    }
}

// ---------------------------------------------------------------------------
// An owned CBOR tree with a deterministic encoder.

#[derive(Clone, Debug, PartialEq)]
enum Cv {
    U(u64),
    N(u64),
    B(Vec<u8>),
    T(String),
    A(Vec<Cv>),
    M(Vec<(Cv, Cv)>),
    Bool(bool),
    Null,
    F(f64),
}

fn owned(v: &Value<'_>) -> Cv {
    match v {
        Value::Uint(n) => Cv::U(*n),
        Value::Nint(n) => Cv::N(*n),
        Value::Bytes(b) => Cv::B(b.to_vec()),
        Value::Text(s) => Cv::T(s.to_string()),
        Value::Array(a) => Cv::A(a.iter().map(owned).collect()),
        Value::Map(m) => Cv::M(m.iter().map(|(k, v)| (owned(k), owned(v))).collect()),
        Value::Bool(b) => Cv::Bool(*b),
        Value::Null => Cv::Null,
        Value::Float(x) => Cv::F(*x),
    }
}

fn head(out: &mut Vec<u8>, major: u8, arg: u64) {
    let mt = major << 5;
    match arg {
        0..=23 => out.push(mt | arg as u8),
        24..=0xff => out.extend_from_slice(&[mt | 24, arg as u8]),
        0x100..=0xffff => {
            out.push(mt | 25);
            out.extend_from_slice(&(arg as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(mt | 26);
            out.extend_from_slice(&(arg as u32).to_be_bytes());
        }
        _ => {
            out.push(mt | 27);
            out.extend_from_slice(&arg.to_be_bytes());
        }
    }
}

fn f16_value(h: u16) -> f64 {
    let (exp, frac) = (i32::from((h >> 10) & 0x1f), f64::from(h & 0x3ff));
    let mag = match exp {
        0 => frac * 2f64.powi(-24),
        0x1f if frac == 0.0 => f64::INFINITY,
        0x1f => f64::NAN,
        _ => (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    };
    if h & 0x8000 != 0 {
        -mag
    } else {
        mag
    }
}

/// The f16 bits that hold `x` exactly: positive f16 bit patterns up to
/// infinity are ordered like their values, so a binary search finds them.
fn f16_exact(x: f64) -> Option<u16> {
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let (mut lo, mut hi) = (0u16, 0x7c00u16);
    let a = x.abs();
    while lo <= hi {
        let mid = lo + (hi - lo) / 2;
        let v = f16_value(mid);
        if v == a {
            return Some(sign | mid);
        }
        if v < a {
            lo = mid + 1;
        } else if mid == 0 {
            return None;
        } else {
            hi = mid - 1;
        }
    }
    None
}

fn encode(v: &Cv, out: &mut Vec<u8>) {
    match v {
        Cv::U(n) => head(out, 0, *n),
        Cv::N(n) => head(out, 1, *n),
        Cv::B(b) => {
            head(out, 2, b.len() as u64);
            out.extend_from_slice(b);
        }
        Cv::T(s) => {
            head(out, 3, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        Cv::A(items) => {
            head(out, 4, items.len() as u64);
            items.iter().for_each(|i| encode(i, out));
        }
        Cv::M(entries) => {
            // Deterministic order: bytewise over the encoded keys.
            let mut sorted: Vec<(Vec<u8>, &Cv)> =
                entries.iter().map(|(k, v)| (to_bytes(k), v)).collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            head(out, 5, sorted.len() as u64);
            for (k, v) in sorted {
                out.extend_from_slice(&k);
                encode(v, out);
            }
        }
        Cv::Bool(b) => out.push(0xf4 + u8::from(*b)),
        Cv::Null => out.push(0xf6),
        Cv::F(x) if x.is_nan() => out.extend_from_slice(&[0xf9, 0x7e, 0x00]),
        Cv::F(x) => match f16_exact(*x) {
            Some(h) => {
                out.push(0xf9);
                out.extend_from_slice(&h.to_be_bytes());
            }
            None if f64::from(*x as f32) == *x => {
                out.push(0xfa);
                out.extend_from_slice(&(*x as f32).to_bits().to_be_bytes());
            }
            None => {
                out.push(0xfb);
                out.extend_from_slice(&x.to_bits().to_be_bytes());
            }
        },
    }
}

fn to_bytes(v: &Cv) -> Vec<u8> {
    let mut out = Vec::new();
    encode(v, &mut out);
    out
}

fn t(s: &str) -> Cv {
    Cv::T(s.to_string())
}

fn map(entries: Vec<(&str, Cv)>) -> Cv {
    Cv::M(entries.into_iter().map(|(k, v)| (t(k), v)).collect())
}

fn uints(ns: &[u64]) -> Cv {
    Cv::A(ns.iter().map(|&n| Cv::U(n)).collect())
}

// ---------------------------------------------------------------------------
// A tiny writer for the inputs built here.

fn footer(offset: u64, manifest: &[u8]) -> [u8; 40] {
    let mut f = [0u8; 40];
    f[0..8].copy_from_slice(&offset.to_le_bytes());
    f[8..16].copy_from_slice(&(manifest.len() as u64).to_le_bytes());
    let hash = if manifest.is_empty() {
        0
    } else {
        xxhash_rust::xxh3::xxh3_64(manifest)
    };
    f[16..24].copy_from_slice(&hash.to_le_bytes());
    f[24..28].copy_from_slice(&2u32.to_le_bytes());
    f[32..40].copy_from_slice(&MAGIC);
    f
}

fn pad_to_page(out: &mut Vec<u8>) -> u64 {
    let at = (out.len() as u64).div_ceil(4096).max(1) * 4096;
    out.resize(at as usize, 0);
    at
}

/// Places `blobs` at successive 4096-aligned offsets, then the manifest
/// `make` builds from their `(offset, length)`, then the footer.
fn assemble(blobs: &[Vec<u8>], make: impl FnOnce(&[(u64, u64)]) -> Option<Cv>) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    let mut refs = Vec::new();
    for b in blobs {
        refs.push((pad_to_page(&mut out), b.len() as u64));
        out.extend_from_slice(b);
    }
    let Some(manifest) = make(&refs) else {
        out.extend_from_slice(&footer(0, &[]));
        return out;
    };
    let bytes = to_bytes(&manifest);
    let at = pad_to_page(&mut out);
    out.extend_from_slice(&bytes);
    out.extend_from_slice(&footer(at, &bytes));
    out
}

fn xxh3_digest(data: &[u8]) -> Cv {
    Cv::T(format!("xxh3:{:016x}", xxhash_rust::xxh3::xxh3_64(data)))
}

fn sha256_digest(data: &[u8]) -> Cv {
    use sha2::Digest;
    Cv::T(format!("sha256:{}", digest::hex(&sha2::Sha256::digest(data))))
}

fn part(dtype: &str, blob: (u64, u64), extra: Vec<(&str, Cv)>) -> Cv {
    let mut e = vec![("dtype", t(dtype)), ("blob", uints(&[blob.0, blob.1]))];
    e.extend(extra);
    map(e)
}

fn object(shape: &[u64], layout: &str, parts: Vec<(&str, Cv)>, extra: Vec<(&str, Cv)>) -> Cv {
    let mut e = vec![
        ("shape", uints(shape)),
        ("layout", t(layout)),
        ("parts", map(parts)),
    ];
    e.extend(extra);
    map(e)
}

/// `data` in `zt.zstd-seekable/1`: checksummed frames of `frame` bytes and a
/// seek table, with the optional checksum column when `checksums`.
fn seekable(data: &[u8], frame: usize, checksums: bool) -> Vec<u8> {
    let (mut out, mut table) = (Vec::new(), Vec::new());
    for chunk in data.chunks(frame) {
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        enc.include_checksum(true).unwrap();
        std::io::Write::write_all(&mut enc, chunk).unwrap();
        let c = enc.finish().unwrap();
        table.extend_from_slice(&(c.len() as u32).to_le_bytes());
        table.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
        if checksums {
            let x = xxhash_rust::xxh64::xxh64(chunk, 0) as u32;
            table.extend_from_slice(&x.to_le_bytes());
        }
        out.extend_from_slice(&c);
    }
    let count = data.len().div_ceil(frame) as u32;
    out.extend_from_slice(&0x184D_2A5Eu32.to_le_bytes());
    out.extend_from_slice(&(table.len() as u32 + 9).to_le_bytes());
    out.extend_from_slice(&table);
    out.extend_from_slice(&count.to_le_bytes());
    out.push(if checksums { 0x80 } else { 0 });
    out.extend_from_slice(&0x8F92_EAB1u32.to_le_bytes());
    out
}

/// Files built here, so the test has inputs before the corpus exists and
/// covers what a corpus might lack. Each is `(name, bytes, companions)`.
fn built_inputs() -> Vec<(String, Vec<u8>, Vec<(String, Vec<u8>)>)> {
    let f32s: Vec<u8> = [1.0f32, -2.5].iter().flat_map(|x| x.to_le_bytes()).collect();
    let bools = vec![0u8, 1, 1, 0, 1];
    let text: Vec<u8> = (0..5000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
    let mut out = Vec::new();
    let basic = assemble(&[f32s.clone()], |r| {
        let p = part("f32", r[0], vec![("digest", xxh3_digest(&f32s))]);
        Some(map(vec![(
            "objects",
            map(vec![("w", object(&[2], "dense", vec![("data", p)], vec![]))]),
        )]))
    });
    out.push(("basic".into(), basic, vec![]));
    let attrs = map(vec![
        ("n", Cv::N(7)),
        ("f", Cv::F(0.1)),
        ("h", Cv::F(1.5)),
        ("nested", Cv::A(vec![Cv::Null, Cv::Bool(true), Cv::B(vec![1, 2])])),
        ("m", map(vec![("k", t("v"))])),
    ]);
    let mixed = assemble(&[f32s.clone(), bools.clone(), vec![0x21, 0x03], vec![]], |r| {
        let w = part("f32", r[0], vec![("digest", sha256_digest(&f32s))]);
        let tied = part("f32", r[0], vec![]);
        let b = part("u8", r[1], vec![("type", t("bool")), ("digest", xxh3_digest(&bools))]);
        let f4 = part("u8", r[2], vec![("type", t("f4_e2m1"))]);
        let c = part("f32", r[0], vec![("type", t("complex64"))]);
        let z = part("i64", r[3], vec![]);
        let objects = map(vec![
            ("model.embed.weight", object(&[2], "dense", vec![("data", w)], vec![])),
            ("lm_head.weight", object(&[2, 1], "dense", vec![("data", tied)], vec![])),
            ("mask", object(&[5], "dense", vec![("data", b)], vec![("attributes", attrs.clone())])),
            ("q", object(&[3], "dense", vec![("data", f4)], vec![])),
            ("c", object(&[1], "dense", vec![("data", c)], vec![])),
            ("empty", object(&[0, 4], "dense", vec![("data", z)], vec![])),
        ]);
        Some(map(vec![("objects", objects), ("attributes", attrs.clone())]))
    });
    out.push(("mixed".into(), mixed, vec![]));
    let (z1, z2) = (seekable(&text, 4096, true), seekable(&text[..1000], 256, false));
    let zstd = assemble(&[z1, z2], |r| {
        let enc = |blob, n: usize, d: Cv| {
            let extra = vec![("encoding", t("zt.zstd-seekable/1")), ("decoded_length", Cv::U(n as u64)), ("digest", d)];
            part("u32", blob, extra)
        };
        let a = enc(r[0], text.len(), xxh3_digest(&text));
        let b = enc(r[1], 1000, sha256_digest(&text[..1000]));
        Some(map(vec![(
            "objects",
            map(vec![
                ("z.a", object(&[5000], "dense", vec![("data", a)], vec![])),
                ("z.b", object(&[250], "dense", vec![("data", b)], vec![])),
            ]),
        )]))
    });
    out.push(("zstd".into(), zstd, vec![]));
    let odd = assemble(&[bools.clone(), f32s.clone()], |r| {
        let parts = vec![
            ("indices", part("u8", r[0], vec![("type", t("acme.idx"))])),
            ("values", part("f32", r[1], vec![("encoding", t("acme.zip/1")), ("decoded_length", Cv::U(99))])),
        ];
        let layout = object(&[10, 10], "zt.sparse_coo/1", parts, vec![("attributes", map(vec![("nnz", Cv::U(2))]))]);
        let unknown_type = part("u8", r[0], vec![("type", t("acme.u8/1"))]);
        Some(map(vec![(
            "objects",
            map(vec![
                ("s", layout),
                ("u", object(&[5], "dense", vec![("data", unknown_type)], vec![])),
            ]),
        )]))
    });
    out.push(("unknown".into(), odd, vec![]));
    let data_shard = assemble(&[f32s.clone()], |_| None);
    let root = assemble(&[bools.clone()], |r| {
        let shards = map(vec![(
            "00001",
            map(vec![("size", Cv::U(data_shard.len() as u64)), ("digest", xxh3_digest(&data_shard))]),
        )]);
        let remote = part("f32", (4096, 8), vec![("shard", t("00001")), ("digest", xxh3_digest(&f32s))]);
        let local = part("u8", r[0], vec![]);
        Some(map(vec![
            ("shards", shards),
            (
                "objects",
                map(vec![
                    ("remote", object(&[2], "dense", vec![("data", remote)], vec![])),
                    ("local", object(&[5], "dense", vec![("data", local)], vec![])),
                ]),
            ),
        ]))
    });
    out.push(("root".into(), root, vec![("00001".into(), data_shard.clone())]));
    out.push(("datashard".into(), data_shard, vec![]));
    let empty = assemble(&[], |_| Some(map(vec![("objects", Cv::M(vec![]))])));
    out.push(("empty".into(), empty, vec![]));
    out
}
