//! Mutations: byte-level ones anywhere in the file, and manifest-aware ones
//! (bytes or tree) after which the footer's length and hash are fixed.

use super::build::footer;
use super::cbor_tree::{t, to_bytes, Cv};
use super::inputs::Input;

/// splitmix64: small, fast, and the same sequence everywhere.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n`; `n` must be positive.
    pub fn below(&mut self, n: usize) -> usize {
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

/// The brief's interesting bytes, then CBOR heads that declare 8-byte
/// arguments (uint, nint, bytes, text, array, map), a tag, undefined, a
/// reserved simple value, f16 and f64 heads.
const INTERESTING_BYTES: [u8; 22] = [
    0x00, 0xFF, 0x7F, 0x80, 0x17, 0x18, 0x1F, 0x9F, 0xBF, 0xFF, 0x1B, 0x3B, 0x5B, 0x7B, 0x9B, 0xBB,
    0xC0, 0xF7, 0xF8, 0xF9, 0xFB, 0x01,
];

/// Numbers at the edges the reader checks: alignment, the depth and head
/// boundaries of CBOR, the frame cap, 32 and 64 bits.
#[rustfmt::skip]
const INTERESTING_UINTS: [u64; 36] = [
    0, 1, 2, 3, 4, 7, 8, 16, 23, 24, 32, 64, 65, 255, 256, 1024, 1025, 4095, 4096, 4097,
    8192, 12288, 65535, 65536, 1 << 24, (16 << 20) + 1, u32::MAX as u64, 1 << 32, 1 << 53,
    1 << 62, 1 << 63, u64::MAX / 2, u64::MAX - 4095, u64::MAX - 40, u64::MAX - 1, u64::MAX,
];

fn interesting_uint(numbers: &[u64], rng: &mut Rng) -> u64 {
    let base = if rng.percent(50) {
        *rng.pick(&INTERESTING_UINTS)
    } else {
        *rng.pick(numbers)
    };
    match rng.below(8) {
        0 => base.wrapping_add(1),
        1 => base.wrapping_sub(1),
        2 => base.wrapping_add(4096),
        3 => base.wrapping_sub(4096),
        4 => base.wrapping_add(*rng.pick(numbers)),
        _ => base,
    }
}

/// Text the schema gives meaning to, and text that breaks its rules.
fn word(rng: &mut Rng) -> String {
    #[rustfmt::skip]
    const WORDS: [&str; 48] = [
        "", "dense", "data", "f32", "f16", "bf16", "f64", "i8", "u8", "i64", "u64", "bool",
        "f4_e2m1", "f8_e4m3fn", "complex64", "complex128", "zt.zstd-seekable/1",
        "zt.sparse_csr/1", "acme.x/1", "xxh3:0123456789abcdef", "xxh3:0", "xxh3:ABCDEF",
        "sha256:00", "md5:00", "xxh3:", ":00", "objects", "shards", "attributes", "shape",
        "layout", "parts", "dtype", "type", "blob", "shard", "encoding", "decoded_length",
        "digest", "size", "00001", "../x", ".hidden", "a\0b", "\u{e9}", "e\u{301}", "w", "x",
    ];
    match rng.below(20) {
        0 => "a".repeat(1024 + rng.below(2)),
        1 => "s".repeat(64 + rng.below(2)),
        2 => format!("xxh3:{:016x}", rng.next()),
        _ => rng.pick(&WORDS).to_string(),
    }
}

fn edit_text(s: &mut String, rng: &mut Rng) {
    match rng.below(7) {
        0 => s.push('x'),
        1 => {
            s.pop();
        }
        2 => *s = s.to_uppercase(),
        3 => s.insert(0, '.'),
        4 => s.push('\0'),
        5 => *s = s.repeat(2 + rng.below(600)),
        _ => s.push_str("/1"),
    }
}

/// A small value of any CBOR type the manifest may hold.
fn random_value(rng: &mut Rng) -> Cv {
    #[rustfmt::skip]
    const FLOATS: [f64; 9] = [0.0, -0.0, 1.5, 0.1, f64::NAN, f64::INFINITY, 65504.0, 1e300, 1e-40];
    match rng.below(9) {
        0 => Cv::U(rng.next()),
        1 => Cv::N(rng.next() >> rng.below(64)),
        2 => Cv::B((0..rng.below(9)).map(|_| rng.next() as u8).collect()),
        3 => Cv::T(word(rng)),
        4 => Cv::A(vec![]),
        5 => Cv::M(vec![]),
        6 => Cv::Bool(rng.percent(50)),
        7 => Cv::Null,
        _ => Cv::F(*rng.pick(&FLOATS)),
    }
}

/// Nodes that are not map keys (keys change through their map).
fn count_nodes(v: &Cv) -> usize {
    1 + match v {
        Cv::A(items) => items.iter().map(count_nodes).sum(),
        Cv::M(es) => es.iter().map(|(_, v)| count_nodes(v)).sum(),
        _ => 0,
    }
}

/// The `k`-th node that is not a map key, in pre-order, counting down `k`.
fn nth_node<'a>(v: &'a mut Cv, k: &mut usize) -> Option<&'a mut Cv> {
    if *k == 0 {
        return Some(v);
    }
    *k -= 1;
    match v {
        Cv::A(items) => items.iter_mut().find_map(|i| nth_node(i, k)),
        Cv::M(es) => es.iter_mut().find_map(|(_, b)| nth_node(b, k)),
        _ => None,
    }
}

/// `v` inside `depth` arrays or one-entry maps, to reach the depth limit.
fn nest(v: Cv, depth: usize, rng: &mut Rng) -> Cv {
    (0..depth).fold(v, |v, _| {
        if rng.percent(50) {
            Cv::A(vec![v])
        } else {
            Cv::M(vec![(t("k"), v)])
        }
    })
}

/// Changes `node`, mostly keeping its type so the schema mapping accepts
/// the result and the later rules are reached; `donor` is the unmutated
/// tree, from which subtrees are copied.
fn mutate_node(node: &mut Cv, donor: &Cv, numbers: &[u64], rng: &mut Rng) {
    let keep_type = rng.percent(80);
    match node {
        Cv::U(n) if keep_type => *n = interesting_uint(numbers, rng),
        Cv::T(s) if keep_type && rng.percent(40) => edit_text(s, rng),
        Cv::T(s) if keep_type => *s = word(rng),
        Cv::M(es) if keep_type => mutate_entries(es, donor, rng),
        Cv::A(items) if keep_type => match rng.below(3) {
            0 if !items.is_empty() => {
                items.remove(rng.below(items.len()));
            }
            1 => items.push(copy_of(donor, rng)),
            _ => {
                let n = *rng.pick(&[0, 1, 3, 64, 65]);
                items.resize(n, Cv::U(1));
            }
        },
        _ => match rng.below(5) {
            0 => *node = Cv::U(interesting_uint(numbers, rng)),
            1 => *node = random_value(rng),
            2 => {
                let depth = *rng.pick(&[1, 2, 29, 30, 31, 32, 33, 40]);
                *node = nest(std::mem::replace(node, Cv::Null), depth, rng);
            }
            _ => *node = copy_of(donor, rng),
        },
    }
}

/// A random subtree of `donor`.
fn copy_of(donor: &Cv, rng: &mut Rng) -> Cv {
    let mut k = rng.below(count_nodes(donor));
    let mut d = donor.clone();
    nth_node(&mut d, &mut k).map_or(Cv::Null, |n| n.clone())
}

/// Removes, adds, duplicates or renames a map entry. An added entry is often
/// a sibling under a new name, which makes aliases and overlaps.
fn mutate_entries(es: &mut Vec<(Cv, Cv)>, donor: &Cv, rng: &mut Rng) {
    match rng.below(10) {
        0..=2 if !es.is_empty() => {
            es.remove(rng.below(es.len()));
        }
        3..=6 => {
            let key = match es.first() {
                Some((Cv::T(k), _)) if rng.percent(60) => Cv::T(format!("{k}.{}", rng.below(4))),
                _ => Cv::T(word(rng)),
            };
            let value = match es.len() {
                0 => copy_of(donor, rng),
                n if rng.percent(80) => es[rng.below(n)].1.clone(),
                _ => copy_of(donor, rng),
            };
            es.push((key, value));
        }
        7 if !es.is_empty() => {
            let dup = es[rng.below(es.len())].clone();
            es.push(dup);
        }
        _ if !es.is_empty() => {
            let i = rng.below(es.len());
            es[i].0 = Cv::T(word(rng));
        }
        _ => es.push((Cv::T(word(rng)), random_value(rng))),
    }
}

/// Mutates one to three nodes of the manifest tree and encodes it.
fn mutate_tree(tree: &Cv, numbers: &[u64], rng: &mut Rng) -> Vec<u8> {
    let mut m = tree.clone();
    for _ in 0..1 + rng.below(3) {
        let mut k = rng.below(count_nodes(&m));
        if let Some(node) = nth_node(&mut m, &mut k) {
            mutate_node(node, tree, numbers, rng);
        }
    }
    to_bytes(&m)
}

/// A byte-level mutation of `buf[lo..hi]` (truncation cuts `buf` itself).
fn mutate_bytes(buf: &mut Vec<u8>, (lo, hi): (usize, usize), other: &[u8], rng: &mut Rng) {
    let n = hi - lo;
    let at = |rng: &mut Rng| lo + rng.below(n.max(1)).min(n.saturating_sub(1));
    match rng.below(8) {
        0 if n > 0 => {
            for _ in 0..1 + rng.below(8) {
                let i = at(rng);
                buf[i] ^= 1 << rng.below(8);
            }
        }
        1 if n > 0 => {
            for _ in 0..1 + rng.below(4) {
                let i = at(rng);
                buf[i] = *rng.pick(&INTERESTING_BYTES);
            }
        }
        2 => buf.truncate(lo + rng.below(n + 1)),
        3 => {
            let (a, b) = rng.span(other.len());
            let i = lo + rng.below(n + 1);
            if rng.percent(50) {
                buf.splice(i..i, other[a..b].iter().copied());
            } else {
                let end = (i + b - a).min(buf.len());
                buf.splice(i..end, other[a..b].iter().copied());
            }
        }
        4 => {
            let (a, b) = rng.span(n);
            let piece = buf[lo + a..lo + b].to_vec();
            let i = lo + rng.below(n + 1);
            buf.splice(i..i, piece);
        }
        5 => {
            let (a, b) = rng.span(n);
            buf.drain(lo + a..lo + b);
        }
        6 => {
            let i = lo + rng.below(n + 1);
            let k = 1 + rng.below(8);
            let bytes: Vec<u8> = (0..k).map(|_| *rng.pick(&INTERESTING_BYTES)).collect();
            buf.splice(i..i, bytes);
        }
        _ if buf.len() >= 40 => {
            // A footer field set to an interesting value.
            let len = buf.len();
            let field = *rng.pick(&[0usize, 8, 16, 24]);
            let v = rng.next() % 4;
            let v = [0, 2, 3, u64::MAX][v as usize];
            let bytes = v.to_le_bytes();
            let w = if field == 24 { 4 } else { 8 };
            buf[len - 40 + field..len - 40 + field + w].copy_from_slice(&bytes[..w]);
        }
        _ => {}
    }
}

/// The file with its manifest replaced by `manifest` and the footer fixed.
fn with_manifest(file: &[u8], offset: usize, manifest: &[u8]) -> Vec<u8> {
    let mut out = file[..offset].to_vec();
    out.extend_from_slice(manifest);
    out.extend_from_slice(&footer(offset as u64, manifest));
    out
}

/// One mutant of `input` and the name of the strategy that made it.
pub fn mutate(input: &Input, other: &Input, rng: &mut Rng) -> (Vec<u8>, &'static str) {
    let file = &input.bytes;
    if let Some((off, len)) = input.manifest.filter(|_| rng.percent(60)) {
        if let Some(tree) = input.tree.as_ref().filter(|_| rng.percent(65)) {
            let m = mutate_tree(tree, &input.numbers, rng);
            return (with_manifest(file, off, &m), "manifest-tree");
        }
        let mut m = file[off..off + len].to_vec();
        let donor = other
            .manifest
            .map_or(&other.bytes[..], |(o, l)| &other.bytes[o..o + l]);
        let whole = (0, m.len());
        mutate_bytes(&mut m, whole, donor, rng);
        return (with_manifest(file, off, &m), "manifest-bytes");
    }
    let mut buf = file.clone();
    let len = buf.len();
    let (region, name) = match rng.below(10) {
        0..=3 if !input.blobs.is_empty() => {
            let (o, l) = *rng.pick(&input.blobs);
            ((o, o + l), "raw-blob")
        }
        0..=5 => ((len.saturating_sub(40), len), "raw-footer"),
        _ => ((0, len), "raw-file"),
    };
    mutate_bytes(&mut buf, region, &other.bytes, rng);
    (buf, name)
}
