//! A tiny writer for the inputs built here: blobs at 4096-aligned offsets,
//! a deterministic CBOR manifest, the 40-byte footer.

use super::cbor_tree::{map, t, to_bytes, uints, Cv};
use super::inputs::Companions;
use super::MAGIC;
use ztfs::digest;

pub fn footer(offset: u64, manifest: &[u8]) -> [u8; 40] {
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
pub fn assemble(blobs: &[Vec<u8>], make: impl FnOnce(&[(u64, u64)]) -> Option<Cv>) -> Vec<u8> {
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
    Cv::T(format!(
        "sha256:{}",
        digest::hex(&sha2::Sha256::digest(data))
    ))
}

pub fn part(dtype: &str, blob: (u64, u64), extra: Vec<(&str, Cv)>) -> Cv {
    let mut e = vec![("dtype", t(dtype)), ("blob", uints(&[blob.0, blob.1]))];
    e.extend(extra);
    map(e)
}

pub fn object(shape: &[u64], layout: &str, parts: Vec<(&str, Cv)>, extra: Vec<(&str, Cv)>) -> Cv {
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
pub fn seekable(data: &[u8], frame: usize, checksums: bool) -> Vec<u8> {
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
pub fn built_inputs() -> Vec<(String, Vec<u8>, Companions)> {
    let f32s: Vec<u8> = [1.0f32, -2.5]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let bools = vec![0u8, 1, 1, 0, 1];
    let text: Vec<u8> = (0..5000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
    let mut out = Vec::new();
    let basic = assemble(std::slice::from_ref(&f32s), |r| {
        let p = part("f32", r[0], vec![("digest", xxh3_digest(&f32s))]);
        Some(map(vec![(
            "objects",
            map(vec![(
                "w",
                object(&[2], "dense", vec![("data", p)], vec![]),
            )]),
        )]))
    });
    out.push(("basic".into(), basic, vec![]));
    let attrs = map(vec![
        ("n", Cv::N(7)),
        ("f", Cv::F(0.1)),
        ("h", Cv::F(1.5)),
        (
            "nested",
            Cv::A(vec![Cv::Null, Cv::Bool(true), Cv::B(vec![1, 2])]),
        ),
        ("m", map(vec![("k", t("v"))])),
    ]);
    let mixed = assemble(
        &[f32s.clone(), bools.clone(), vec![0x21, 0x03], vec![]],
        |r| {
            let w = part("f32", r[0], vec![("digest", sha256_digest(&f32s))]);
            let tied = part("f32", r[0], vec![]);
            let b = part(
                "u8",
                r[1],
                vec![("type", t("bool")), ("digest", xxh3_digest(&bools))],
            );
            let f4 = part("u8", r[2], vec![("type", t("f4_e2m1"))]);
            let c = part("f32", r[0], vec![("type", t("complex64"))]);
            let z = part("i64", r[3], vec![]);
            let objects = map(vec![
                (
                    "model.embed.weight",
                    object(&[2], "dense", vec![("data", w)], vec![]),
                ),
                (
                    "lm_head.weight",
                    object(&[2, 1], "dense", vec![("data", tied)], vec![]),
                ),
                (
                    "mask",
                    object(
                        &[5],
                        "dense",
                        vec![("data", b)],
                        vec![("attributes", attrs.clone())],
                    ),
                ),
                ("q", object(&[3], "dense", vec![("data", f4)], vec![])),
                ("c", object(&[1], "dense", vec![("data", c)], vec![])),
                ("empty", object(&[0, 4], "dense", vec![("data", z)], vec![])),
            ]);
            Some(map(vec![
                ("objects", objects),
                ("attributes", attrs.clone()),
            ]))
        },
    );
    out.push(("mixed".into(), mixed, vec![]));
    let (z1, z2) = (
        seekable(&text, 4096, true),
        seekable(&text[..1000], 256, false),
    );
    let zstd = assemble(&[z1, z2], |r| {
        let enc = |blob, n: usize, d: Cv| {
            let extra = vec![
                ("encoding", t("zt.zstd-seekable/1")),
                ("decoded_length", Cv::U(n as u64)),
                ("digest", d),
            ];
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
            (
                "values",
                part(
                    "f32",
                    r[1],
                    vec![("encoding", t("acme.zip/1")), ("decoded_length", Cv::U(99))],
                ),
            ),
        ];
        let layout = object(
            &[10, 10],
            "acme.sparse/1",
            parts,
            vec![("attributes", map(vec![("nnz", Cv::U(2))]))],
        );
        let unknown_type = part("u8", r[0], vec![("type", t("acme.u8/1"))]);
        Some(map(vec![(
            "objects",
            map(vec![
                ("s", layout),
                (
                    "u",
                    object(&[5], "dense", vec![("data", unknown_type)], vec![]),
                ),
            ]),
        )]))
    });
    out.push(("unknown".into(), odd, vec![]));
    let data_shard = assemble(std::slice::from_ref(&f32s), |_| None);
    let root = assemble(std::slice::from_ref(&bools), |r| {
        let shards = map(vec![(
            "00001",
            map(vec![
                ("size", Cv::U(data_shard.len() as u64)),
                ("digest", xxh3_digest(&data_shard)),
            ]),
        )]);
        let remote = part(
            "f32",
            (4096, 8),
            vec![("shard", t("00001")), ("digest", xxh3_digest(&f32s))],
        );
        let local = part("u8", r[0], vec![]);
        Some(map(vec![
            ("shards", shards),
            (
                "objects",
                map(vec![
                    (
                        "remote",
                        object(&[2], "dense", vec![("data", remote)], vec![]),
                    ),
                    (
                        "local",
                        object(&[5], "dense", vec![("data", local)], vec![]),
                    ),
                ]),
            ),
        ]))
    });
    out.push((
        "root".into(),
        root,
        vec![("00001".into(), data_shard.clone())],
    ));
    out.push(("datashard".into(), data_shard, vec![]));
    let empty = assemble(&[], |_| Some(map(vec![("objects", Cv::M(vec![]))])));
    out.push(("empty".into(), empty, vec![]));
    out
}
