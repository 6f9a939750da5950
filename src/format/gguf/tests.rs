//! One test per rule, a test per decision, the dims order, and a seeded
//! mutation run that asserts no panic.

use super::*;
use crate::error::Rule;

/// A GGUF file under construction: KVs and tensors as bytes.
#[derive(Clone)]
pub struct Builder {
    pub version: u32,
    pub kv: Vec<u8>,
    pub kv_count: u64,
    pub infos: Vec<u8>,
    pub tensor_count: u64,
    pub data: Vec<u8>,
    pub alignment: u64,
}

pub fn string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s);
}

impl Builder {
    pub fn new() -> Builder {
        Builder {
            version: 3,
            kv: Vec::new(),
            kv_count: 0,
            infos: Vec::new(),
            tensor_count: 0,
            data: Vec::new(),
            alignment: 32,
        }
    }

    /// Adds a KV of type tag `ty` and raw value bytes.
    pub fn kv(mut self, key: &str, ty: u32, value: &[u8]) -> Builder {
        string(&mut self.kv, key.as_bytes());
        self.kv.extend_from_slice(&ty.to_le_bytes());
        self.kv.extend_from_slice(value);
        self.kv_count += 1;
        self
    }

    /// Adds a tensor info at `offset` (no data).
    pub fn info(mut self, name: &str, dims: &[u64], ty: u32, offset: u64) -> Builder {
        string(&mut self.infos, name.as_bytes());
        self.infos
            .extend_from_slice(&(dims.len() as u32).to_le_bytes());
        for d in dims {
            self.infos.extend_from_slice(&d.to_le_bytes());
        }
        self.infos.extend_from_slice(&ty.to_le_bytes());
        self.infos.extend_from_slice(&offset.to_le_bytes());
        self.tensor_count += 1;
        self
    }

    /// Adds a tensor with its bytes at the next aligned offset.
    pub fn tensor(self, name: &str, dims: &[u64], ty: u32, bytes: &[u8]) -> Builder {
        let offset = self.data.len().next_multiple_of(self.alignment as usize);
        let mut b = self.info(name, dims, ty, offset as u64);
        b.data.resize(offset, 0);
        b.data.extend_from_slice(bytes);
        b
    }

    pub fn bytes(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.tensor_count.to_le_bytes());
        out.extend_from_slice(&self.kv_count.to_le_bytes());
        out.extend_from_slice(&self.kv);
        out.extend_from_slice(&self.infos);
        if self.tensor_count > 0 {
            out.resize(out.len().next_multiple_of(self.alignment as usize), 0);
        }
        out.extend_from_slice(&self.data);
        out
    }
}

fn rule(bytes: &[u8]) -> Option<Rule> {
    read_file(bytes).expect_err("expected a rejection").rule()
}

fn u32v(n: u32) -> Vec<u8> {
    n.to_le_bytes().to_vec()
}

fn sample() -> Builder {
    let mut tokens = 8u32.to_le_bytes().to_vec(); // of strings
    tokens.extend_from_slice(&2u64.to_le_bytes());
    string(&mut tokens, b"<s>");
    string(&mut tokens, "é".as_bytes());
    Builder::new()
        .kv("general.architecture", 8, &{
            let mut v = Vec::new();
            string(&mut v, b"llama");
            v
        })
        .kv("tokenizer.ggml.tokens", 9, &tokens)
        .kv("x.bool", 7, &[1])
        .kv("x.i64", 11, &(-5i64).to_le_bytes())
        .tensor("w", &[3, 2], 0, &[0; 24])
        .tensor("q", &[32, 2], 8, &[7; 68])
}

#[test]
fn reads_a_file() {
    let f = read_file(&sample().bytes()).unwrap();
    assert_eq!(f.version, 3);
    assert_eq!(f.kv.len(), 4);
    let Value::Array(a) = &f.kv[1].value else {
        panic!()
    };
    assert_eq!((a.string(0), a.string(1)), (Some("<s>"), Some("é")));
    assert_eq!(f.kv[3].value.as_int(), Some(-5));
    assert_eq!(f.tensors.len(), 2);
    let w = &f.tensors[0];
    assert_eq!(
        (w.dims.clone(), w.shape(), w.len),
        (vec![3, 2], vec![2, 3], 24)
    );
    assert_eq!(w.start % 32, 0);
    assert_eq!(w.start, f.data_offset);
    assert_eq!((f.tensors[1].len, f.tensors[1].ty.name), (68, "q8_0"));
    let objects = objects::objects(&f);
    assert_eq!(&**objects[0].shape, &[2, 3]);
    assert_eq!(&*objects[0].layout, "dense");
    assert_eq!(&*objects[1].layout, "gguf.q8_0/1");
    assert_eq!(&**objects[1].shape, &[2, 32]);
    for o in &objects {
        crate::format::profiles::check_metadata(o).unwrap();
    }
    let j = manifest_text(&f);
    assert!(
        j.contains("\"array<string>\"") && j.contains("\"int64\""),
        "{j}"
    );
}

#[test]
fn version_2_is_read_1_and_big_endian_are_not() {
    let mut b = sample();
    b.version = 2;
    assert!(read_file(&b.bytes()).is_ok());
    for v in [0, 1, 4, 3u32.swap_bytes()] {
        b.version = v;
        assert_eq!(rule(&b.bytes()), Some(Rule::GgufVersion), "{v}");
    }
}

#[test]
fn magic_and_short_header() {
    assert_eq!(rule(b"GGUF\x03\0\0\0"), Some(Rule::GgufMagic));
    let mut b = sample().bytes();
    b[0] = b'X';
    assert_eq!(rule(&b), Some(Rule::GgufMagic));
}

#[test]
fn counts_are_bounded_by_the_bytes_left() {
    let mut b = Builder::new();
    b.kv_count = u64::MAX;
    assert_eq!(rule(&b.bytes()), Some(Rule::GgufCount));
    let mut b = Builder::new();
    b.tensor_count = 1_000_000;
    assert_eq!(rule(&b.bytes()), Some(Rule::GgufCount));
    // An array of a million strings in a few bytes.
    let mut v = u32v(8);
    v.extend_from_slice(&1_000_000u64.to_le_bytes());
    assert_eq!(
        rule(&Builder::new().kv("a", 9, &v).bytes()),
        Some(Rule::GgufCount)
    );
}

#[test]
fn kv_rules() {
    let bad = [
        Builder::new().kv("a", 13, &[0]),                 // unknown type
        Builder::new().kv("a", 7, &[2]),                  // bool 2
        Builder::new().kv("", 10, &[0; 8]),               // empty key
        Builder::new().kv("a", 0, &[0]).kv("a", 0, &[0]), // duplicate
        Builder::new().kv("a", 8, &{
            let mut v = Vec::new();
            string(&mut v, b"\xff");
            v
        }), // not UTF-8
        Builder::new().kv("a", 6, &[0, 0]),               // truncated
    ];
    for b in bad {
        assert_eq!(rule(&b.bytes()), Some(Rule::GgufKv));
    }
    // Nested arrays: depth 2 read, depth MAX + 1 refused.
    let nest = |depth: usize| {
        let mut v = Vec::new();
        for _ in 1..depth {
            v.extend_from_slice(&u32v(9));
            v.extend_from_slice(&1u64.to_le_bytes());
        }
        v.extend_from_slice(&u32v(0));
        v.extend_from_slice(&1u64.to_le_bytes());
        v.push(7);
        Builder::new().kv("a", 9, &v).bytes()
    };
    let f = read_file(&nest(2)).unwrap();
    assert!(manifest_text(&f).contains("array<array>"));
    assert!(read_file(&nest(MAX_ARRAY_DEPTH)).is_ok());
    assert_eq!(rule(&nest(MAX_ARRAY_DEPTH + 1)), Some(Rule::GgufKv));
}

#[test]
fn alignment_rules() {
    for (ty, v) in [
        (4, u32v(0)),
        (4, u32v(48)),
        (4, u32v(4)),
        (10, 64u64.to_le_bytes().to_vec()),
    ] {
        let b = Builder::new()
            .kv(ALIGNMENT_KEY, ty, &v)
            .tensor("t", &[1], 0, &[0; 4]);
        assert_eq!(rule(&b.bytes()), Some(Rule::GgufAlignment), "{v:?}");
    }
    let mut b = Builder::new().kv(ALIGNMENT_KEY, 4, &u32v(64));
    b.alignment = 64;
    let b = b
        .tensor("a", &[1], 0, &[1; 4])
        .tensor("b", &[1], 0, &[2; 4]);
    let f = read_file(&b.bytes()).unwrap();
    assert_eq!((f.alignment, f.tensors[1].offset), (64, 64));
    assert_eq!(f.data_offset % 64, 0);
}

#[test]
fn tensor_info_rules() {
    let long = "x".repeat(65);
    let bad = [
        Builder::new()
            .tensor("a", &[1], 0, &[0; 4])
            .info("a", &[0], 0, 0), // repeated
        Builder::new().info(&long, &[1], 0, 0),
        Builder::new().info("a\0b", &[1], 0, 0),
        Builder::new().info("a", &[1, 1, 1, 1, 1], 0, 0),
        Builder::new().info("a", &[1 << 63], 0, 0),
        Builder::new().info("a", &[1 << 32, 1 << 31], 0, 0),
        Builder::new().info("a", &[32], 4, 0),  // removed type
        Builder::new().info("a", &[32], 99, 0), // unknown type
        Builder::new().info("a", &[16], 2, 0),  // q4_0 row of 16
    ];
    for b in bad {
        assert_eq!(rule(&b.bytes()), Some(Rule::GgufTensorInfo));
    }
    for name in ["x".repeat(64), String::new()] {
        let mut b = Builder::new().info(&name, &[1], 0, 0).bytes();
        b.resize(b.len().next_multiple_of(32) + 4, 0);
        let f = read_file(&b).unwrap_or_else(|e| panic!("{name:?}: {e}"));
        assert_eq!(&*f.tensors[0].name, name.as_str());
    }
    // Truncated info.
    let mut t = Builder::new().info("a", &[1], 0, 0).bytes();
    t.truncate(24 + 30);
    assert!(matches!(
        rule(&t),
        Some(Rule::GgufTensorInfo | Rule::GgufCount)
    ));
}

#[test]
fn data_rules() {
    let base = Builder::new().tensor("a", &[8], 0, &[0; 32]);
    let bad = [
        base.clone().info("b", &[1], 0, 16),            // misaligned
        base.clone().info("b", &[1], 0, 64),            // past the end
        base.clone().info("b", &[2], 0, 0),             // overlap
        base.clone().info("b", &[1], 0, u64::MAX - 31), // overflow
    ];
    for b in bad {
        assert_eq!(rule(&b.bytes()), Some(Rule::GgufData));
    }
    // Zero-length tensors may share an offset; aliasing is not overlap.
    assert!(read_file(&base.clone().info("e", &[0], 0, 0).bytes()).is_ok());
    // A data section that would start past the end.
    let mut b = Builder::new().info("e", &[0], 0, 0).bytes();
    b.truncate(b.len() - 1);
    while b.len().is_multiple_of(32) {
        b.pop();
    }
    let b = &b[..b.len()];
    assert!(matches!(
        rule(b),
        Some(Rule::GgufData | Rule::GgufTensorInfo)
    ));
}

#[test]
fn dims_reverse_to_row_major() {
    let f = read_file(&Builder::new().tensor("t", &[4, 3, 2], 0, &[0; 96]).bytes()).unwrap();
    assert_eq!(f.tensors[0].shape(), vec![2, 3, 4]);
    let f = read_file(&Builder::new().tensor("s", &[], 0, &[0; 4]).bytes()).unwrap();
    assert_eq!((f.tensors[0].shape(), f.tensors[0].len), (vec![], 4));
}

/// A file read by range, counting the requests and their largest length.
struct Remote(Vec<u8>, std::cell::Cell<(u64, u64)>);

impl Ranges for Remote {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn get(&self, offset: u64, len: u64) -> Result<std::borrow::Cow<'_, [u8]>> {
        let (n, max) = self.1.get();
        self.1.set((n + 1, max.max(len)));
        let s: &[u8] = &self.0;
        Ranges::get(&s, offset, len).map(|c| c.into_owned().into())
    }
}

#[test]
fn by_range_equals_in_memory() {
    let b = sample().bytes();
    let remote = Remote(b.clone(), Default::default());
    assert_eq!(read_file_from(&remote).unwrap(), read_file(&b).unwrap());
}

#[test]
fn a_large_tokenizer_table_is_read_by_range_in_bounded_pieces() {
    // 300,000 tokens: about 4 MiB of KV section; and one string of 3 MiB,
    // longer than a piece.
    let n = 300_000u64;
    let mut v = 8u32.to_le_bytes().to_vec();
    v.extend_from_slice(&n.to_le_bytes());
    for i in 0..n {
        string(&mut v, format!("t{i}").as_bytes());
    }
    let mut long = Vec::new();
    string(&mut long, &vec![b'x'; 3 << 20]);
    let b = Builder::new()
        .kv("tokenizer.ggml.tokens", 9, &v)
        .kv("long", 8, &long)
        .tensor("w", &[2], 0, &[1; 8])
        .bytes();
    let remote = Remote(b.clone(), Default::default());
    let f = read_file_from(&remote).unwrap();
    assert_eq!(f, read_file(&b).unwrap());
    let Value::Array(a) = &f.kv[0].value else {
        panic!()
    };
    assert_eq!((a.len, a.string(299_999)), (n, Some("t299999")));
    let (requests, largest) = remote.1.get();
    // A piece a MiB, and the long string at once.
    assert!(requests <= 12, "{requests} requests");
    assert_eq!(largest, 3 << 20);
}

#[test]
fn mutations_never_panic() {
    let base = sample().bytes();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..20_000 {
        let mut b = base.clone();
        for _ in 0..1 + next() % 4 {
            let i = (next() % b.len() as u64) as usize;
            b[i] = next() as u8;
        }
        if next() % 8 == 0 {
            b.truncate((next() % b.len() as u64) as usize);
        }
        let _ = read_file(&b);
    }
}

#[test]
fn manifest_of_nested_array_kvs_is_within_a_constant_factor() {
    // Arrays of arrays MAX_ARRAY_DEPTH deep, four wide at each level, the
    // innermost of bools (the widest rendering of a byte).
    fn level(depth: usize, v: &mut Vec<u8>) {
        if depth == 1 {
            v.extend_from_slice(&u32v(7));
            v.extend_from_slice(&64u64.to_le_bytes());
            v.extend((0..64).map(|i| (i % 2) as u8));
            return;
        }
        v.extend_from_slice(&u32v(9));
        v.extend_from_slice(&4u64.to_le_bytes());
        for _ in 0..4 {
            level(depth - 1, v);
        }
    }
    let mut v = Vec::new();
    level(MAX_ARRAY_DEPTH, &mut v);
    let bytes = Builder::new().kv("a", 9, &v).kv("b", 9, &v).bytes();
    let m = manifest_text(&read_file(&bytes).unwrap());
    let k = crate::format::json::MAX_GROWTH;
    assert!(
        m.len() as u64 <= k * bytes.len() as u64,
        "{} > {k} x {}",
        m.len(),
        bytes.len()
    );
    let doc: serde_json::Value = serde_json::from_str(&m).unwrap();
    let mut value = &doc["kv"][1]["value"];
    for _ in 1..MAX_ARRAY_DEPTH {
        assert_eq!(value.as_array().unwrap().len(), 4);
        value = &value[3]["value"];
    }
    let bools: Vec<bool> = (0..64).map(|i| i % 2 == 1).collect();
    assert_eq!(value, &serde_json::json!(bools));
}

/// `head` followed by bytes not in hand: up to `size` they read as zeros
/// (a sparse file) or, with `zeros` false, fail (a server that claimed a
/// length it does not serve). Never in memory, so every read is a `get`.
struct Claims {
    head: Vec<u8>,
    size: u64,
    zeros: bool,
}

impl Ranges for Claims {
    fn size(&self) -> u64 {
        self.size
    }
    fn get(&self, offset: u64, len: u64) -> Result<std::borrow::Cow<'_, [u8]>> {
        let end = offset.checked_add(len).filter(|&e| e <= self.size);
        let end = end.ok_or_else(|| Error::Unsupported("past the claimed size".into()))?;
        if !self.zeros && end > self.head.len() as u64 {
            return Err(Error::Unsupported("past the bytes served".into()));
        }
        // The cursor asks for at most a piece at a time here.
        let mut out = vec![0; len as usize];
        let have = self
            .head
            .len()
            .min(end as usize)
            .saturating_sub(offset as usize);
        if have > 0 {
            out[..have].copy_from_slice(&self.head[offset as usize..offset as usize + have]);
        }
        Ok(out.into())
    }
}

/// The three counts of the issue: a huge KV count, a huge tensor count,
/// and a huge array of strings and of arrays, each within what the
/// claimed size could hold.
fn huge_counts() -> Vec<(&'static str, Vec<u8>)> {
    let mut kv = Builder::new();
    kv.kv_count = 1 << 36;
    let mut tensors = Builder::new();
    tensors.tensor_count = 1 << 35;
    let array = |elem: u32| {
        let mut v = u32v(elem);
        v.extend_from_slice(&(1u64 << 36).to_le_bytes());
        Builder::new().kv("a", 9, &v).bytes()
    };
    vec![
        ("kv count", kv.bytes()),
        ("tensor count", tensors.bytes()),
        ("array of strings", array(8)),
        ("array of arrays", array(9)),
    ]
}

#[test]
fn a_count_sizes_no_allocation_before_its_bytes_are_read() {
    // By URL: the server claims 2^62 bytes and serves only the header.
    for (what, head) in huge_counts() {
        let src = Claims {
            head,
            size: 1 << 62,
            zeros: false,
        };
        let got = std::panic::catch_unwind(|| read_file_from(&src).map(|_| ()));
        assert!(matches!(got, Ok(Err(_))), "{what}: {got:?}");
    }
    // A sparse file: 1 TiB of zeros after the header.
    for (what, head) in huge_counts() {
        let src = Claims {
            head,
            size: 1 << 40,
            zeros: true,
        };
        let e = read_file_from(&src).expect_err(what);
        let want = match what {
            "kv count" => Rule::GgufKv, // the first key, of zeros, is empty
            "tensor count" => Rule::GgufTensorInfo, // the second info repeats the first's name
            _ => Rule::GgufCount,       // over ggml's 2^30 elements
        };
        assert_eq!(e.rule(), Some(want), "{what}: {e}");
    }
}

#[test]
fn strings_and_arrays_are_bounded_as_ggml_bounds_them() {
    let zeros = |head: Vec<u8>| Claims {
        head,
        size: 1 << 40,
        zeros: true,
    };
    // An array of 2^30 elements is within ggml's bound; 2^30 + 1 is not.
    let array = |n: u64| {
        let mut v = u32v(0);
        v.extend_from_slice(&n.to_le_bytes());
        Builder::new().kv("a", 9, &v).bytes()
    };
    let e = read_file_from(&zeros(array(MAX_ARRAY_LEN + 1))).unwrap_err();
    assert_eq!(e.rule(), Some(Rule::GgufCount), "{e}");
    // A string of 1 GiB + 1 is refused before it is read; a tensor name
    // over 64 bytes too (of zeros it would be U+0000 otherwise).
    let mut v = Vec::new();
    v.extend_from_slice(&(MAX_STRING_LEN + 1).to_le_bytes());
    let e = read_file_from(&zeros(Builder::new().kv("a", 8, &v).bytes())).unwrap_err();
    assert_eq!(e.rule(), Some(Rule::GgufKv), "{e}");
    assert!(e.to_string().contains("1073741825"), "{e}");
    let mut head = Builder::new().bytes();
    head[8..16].copy_from_slice(&1u64.to_le_bytes()); // one tensor
    head.extend_from_slice(&(1u64 << 39).to_le_bytes());
    let e = read_file_from(&zeros(head)).unwrap_err();
    assert_eq!(e.rule(), Some(Rule::GgufTensorInfo), "{e}");
    assert!(e.to_string().contains("549755813888"), "{e}");
}

/// What the KV pairs take in memory is bounded before it is allocated: a
/// run of zeros in a sparse file reads as empty nested arrays (12 bytes
/// each on disk, about 56 in memory) or empty strings (8 and 8).
#[test]
fn metadata_is_held_within_its_memory_bound() {
    let zeros = |head: Vec<u8>| Claims {
        head,
        size: 1 << 40,
        zeros: true,
    };
    let array = |elem: u32, n: u64| {
        let mut v = u32v(elem);
        v.extend_from_slice(&n.to_le_bytes());
        Builder::new().kv("a", 9, &v).bytes()
    };
    let over = |head: Vec<u8>| {
        let e = read_file_from(&zeros(head)).map(|_| ()).unwrap_err();
        assert_eq!(e.rule(), Some(Rule::GgufCount), "{e}");
        assert!(e.to_string().contains("256 MiB in memory"), "{e}");
    };
    over(array(9, 5 << 20)); // 5 Mi nested arrays: about 280 MiB
    over(array(8, 32 << 20)); // 32 Mi strings: 256 MiB of ends
    let mut v = Vec::new();
    v.extend_from_slice(&(300u64 << 20).to_le_bytes()); // a 300 MiB string
    over(Builder::new().kv("a", 8, &v).bytes());
    // Below the bound they are read: 1 Mi empty strings.
    let f = read_file_from(&zeros(array(8, 1 << 20))).unwrap();
    assert!(matches!(&f.kv[0].value, Value::Array(a) if a.len == 1 << 20));
}

#[test]
fn a_dimension_is_below_2_63_minus_1_even_beside_a_zero() {
    const M: u64 = i64::MAX as u64;
    let read = |dims: &[u64]| {
        let mut b = Builder::new().info("a", dims, 0, 0).bytes();
        b.resize(b.len().next_multiple_of(32), 0);
        read_file(&b).map(|_| ()).map_err(|e| e.rule())
    };
    assert_eq!(read(&[M - 1, 0]), Ok(()));
    assert_eq!(read(&[M, 0]), Err(Some(Rule::GgufTensorInfo)));
    assert_eq!(read(&[0, M]), Err(Some(Rule::GgufTensorInfo)));
    assert_eq!(read(&[M, 0, 1]), Err(Some(Rule::GgufTensorInfo)));
    // ggml's element-count bound, a 0 counted as 1: [2, M / 3] is below
    // it, [2, M / 3 + 1] is not, with a 0 beside them or without.
    assert_eq!(read(&[2, 0, M / 3]), Ok(()));
    assert_eq!(read(&[2, 0, M / 3 + 1]), Err(Some(Rule::GgufTensorInfo)));
    assert_eq!(read(&[2, M / 3 + 1]), Err(Some(Rule::GgufTensorInfo)));
    assert_eq!(read(&[7, M / 7]), Err(Some(Rule::GgufTensorInfo)));
}

/// `manifest.json` of `f` as one string.
fn manifest_text(f: &File) -> String {
    let mut s = String::new();
    json::write_manifest(f, &mut s);
    s
}
