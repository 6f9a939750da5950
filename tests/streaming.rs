//! The streaming manifest decoder (`Manifest::parse`) against the plain one
//! (`cbor::parse` then `Manifest::from_cbor`): the same manifest or the same
//! rule, for every corpus manifest and thousands of seeded mutations of them.

use std::path::Path;

use ztfs::format::cbor;
use ztfs::format::{Footer, Manifest};

fn manifests() -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut out = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let bytes = std::fs::read(&p).unwrap();
            let Ok(f) = Footer::parse(&bytes) else {
                continue;
            };
            let Ok(Some(r)) = f.manifest_range(bytes.len() as u64) else {
                continue;
            };
            out.push((
                p.display().to_string(),
                bytes[r.start as usize..r.end as usize].to_vec(),
            ));
        }
    }
    assert!(out.len() > 200, "corpus manifests: {}", out.len());
    out
}

fn outcome(r: ztfs::error::Result<Manifest>) -> Result<Manifest, String> {
    r.map_err(|e| {
        e.rule()
            .map_or_else(|| e.to_string(), |r| r.name().to_string())
    })
}

fn agree(what: &str, bytes: &[u8]) {
    let streamed = outcome(Manifest::parse(bytes));
    let plain = outcome(cbor::parse(bytes).and_then(|v| Manifest::from_cbor(&v)));
    assert_eq!(streamed, plain, "{what}");
}

#[test]
fn streaming_and_plain_decoders_agree() {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (name, m) in manifests() {
        agree(&name, &m);
        for round in 0..40 {
            let mut b = m.clone();
            match next() % 3 {
                0 if !b.is_empty() => {
                    let i = (next() % b.len() as u64) as usize;
                    b[i] ^= 1 << (next() % 8);
                }
                1 if !b.is_empty() => b.truncate((next() % b.len() as u64) as usize),
                _ => {
                    let i = (next() % (b.len() as u64 + 1)) as usize;
                    b.insert(i, next() as u8);
                }
            }
            agree(&format!("{name} round {round}"), &b);
        }
    }
}
