//! The tree without a kernel: every corpus file built in both views, every
//! file read back through `Tree::read` in pieces and compared with the
//! whole-part bytes from `ztfs::read`, every object reachable exactly once.

#[allow(dead_code)]
#[path = "../corpus/builder.rs"]
mod builder;
mod exports;
mod folder;
mod npz;
mod transformers;
mod verify;
#[allow(dead_code)]
#[path = "../corpus/gguf/writer.rs"]
mod writer;
#[allow(dead_code)]
#[path = "../common/zip.rs"]
mod zip;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ztfs::model::Model;
use ztfs::tree::{Arrangement, FileKind, Options, Tree, PART_NAME_MAX, PART_RESERVED, ROOT};

fn corpus_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut out = Vec::new();
    let mut dirs = vec![root.join("valid"), root.join("samples")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "zt") {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 50, "corpus too small: {}", out.len());
    out
}

/// Every file of the tree: path → inode.
fn walk(tree: &Tree) -> BTreeMap<String, u64> {
    let mut files = BTreeMap::new();
    let mut stack = vec![(ROOT, String::new())];
    while let Some((dir, path)) = stack.pop() {
        let mut entries = Vec::new();
        tree.readdir(dir, 0, &mut |e| {
            entries.push((e.ino, e.kind, e.name.to_string()));
            false
        })
        .unwrap();
        assert_eq!(entries[0].2, ".");
        assert_eq!(entries[1].2, "..");
        for (ino, kind, name) in entries.into_iter().skip(2) {
            assert_eq!(
                tree.lookup(dir, name.as_bytes()).unwrap().ino,
                ino,
                "lookup of {path}/{name}"
            );
            let p = format!("{path}/{name}");
            match kind {
                FileKind::Dir => stack.push((ino, p)),
                FileKind::File => {
                    files.insert(p, ino);
                }
            }
        }
    }
    files
}

/// Reads a whole file through the tree in `chunk`-byte pieces.
fn read_all(tree: &Arc<Tree>, ino: u64, chunk: u32) -> Vec<u8> {
    tree.open_wait(ino).unwrap();
    let size = tree.getattr(ino).unwrap().size;
    let mut out = Vec::new();
    loop {
        let d = tree.read_wait(ino, out.len() as u64, chunk).unwrap();
        if d.is_empty() {
            break;
        }
        out.extend_from_slice(&d);
    }
    assert_eq!(
        out.len() as u64,
        size,
        "st_size differs from the bytes read"
    );
    out
}

fn check_tree(path: &Path, arrangement: Arrangement) {
    let model = Model::open(path).unwrap();
    let tree = Arc::new(
        Tree::build(
            model,
            Options {
                arrangement,
                ..Options::default()
            },
        )
        .unwrap(),
    );
    let files = walk(&tree);
    let model = tree.model();
    let Some(m) = model.manifest() else {
        assert_eq!(files.keys().collect::<Vec<_>>(), ["/manifest.json"]);
        return;
    };
    let mut seen = BTreeMap::new();
    for (p, &ino) in &files {
        if !p.ends_with("/meta.json") {
            continue;
        }
        let o = &m.objects[object_of_meta(&tree, ino).expect("meta.json names an object")];
        *seen.entry(o.name.clone()).or_insert(0) += 1;
        let dir = &p[..p.len() - "/meta.json".len()];
        for part in &o.parts {
            let mut want = Vec::new();
            if ztfs::read::decoded(model, o, part, &mut |c| {
                want.extend_from_slice(c);
                Ok(())
            })
            .is_err()
            {
                continue; // refused or unreadable (a missing shard): not served as <part>
            }
            let file = files.iter().find(|(fp, _)| {
                fp.starts_with(dir)
                    && fp[dir.len() + 1..]
                        == ztfs::tree::names::escape(&part.name, &PART_RESERVED, PART_NAME_MAX)
            });
            let Some((_, &ino)) = file else { continue };
            if tree.open_wait(ino).is_err() {
                continue; // its decoder cannot be resolved
            }
            for chunk in [4096, 1 << 20, 777] {
                assert_eq!(
                    read_all(&tree, ino, chunk),
                    want,
                    "{}: {p} part {:?}",
                    path.display(),
                    part.name
                );
            }
        }
    }
    assert_eq!(
        seen.len(),
        m.objects.len(),
        "{}: every object reachable",
        path.display()
    );
    assert!(
        seen.values().all(|&n| n == 1),
        "{}: each object once",
        path.display()
    );
}

/// The tree of the zTensor file `bytes` (kept in the temporary directory
/// returned) with `model.safetensors` headers limited to `max` bytes, and
/// its `model.safetensors` header, checked to be within the limit.
fn model_safetensors_within(
    bytes: Vec<u8>,
    max: u64,
) -> (
    tempfile::TempDir,
    Arc<Tree>,
    ztfs::format::safetensors::Header,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.zt");
    std::fs::write(&path, bytes).unwrap();
    let opts = Options {
        safetensors_max: max,
        ..Options::default()
    };
    let tree = Arc::new(Tree::build(Model::open(&path).unwrap(), opts).unwrap());
    let ino = tree.lookup(ROOT, b"model.safetensors").unwrap().ino;
    let file = read_all(&tree, ino, 1 << 16);
    let len = u64::from_le_bytes(file[..8].try_into().unwrap());
    assert!(len <= max, "header of {len} bytes, limit {max}");
    let header = ztfs::format::safetensors::read_header(&file).unwrap();
    (dir, tree, header)
}

/// The object whose `meta.json` is `ino`: its name is the first key.
fn object_of_meta(tree: &Arc<Tree>, ino: u64) -> Option<usize> {
    let meta = String::from_utf8(read_all(tree, ino, 100)).unwrap();
    let first = meta.lines().nth(1)?.trim().trim_end_matches(',');
    let m = tree.model().manifest()?;
    m.objects.iter().position(|o| json_str(&o.name) == first)
}

fn json_str(s: &str) -> String {
    let mut out = String::new();
    ztfs::format::json::to_json(&ztfs::format::cbor::Value::Text(s), &mut out);
    format!("\"name\": {out}")
}

#[test]
fn flat_view_serves_every_part() {
    for f in corpus_files() {
        check_tree(&f, Arrangement::Flat);
    }
}

#[test]
fn nested_view_serves_every_part() {
    for f in corpus_files() {
        check_tree(&f, Arrangement::Nested { sep: '.' });
    }
}

#[test]
fn random_ranges_match_whole_part() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/samples/tiny-llama.zt");
    let tree = Arc::new(Tree::build(Model::open(&path).unwrap(), Options::default()).unwrap());
    let files = walk(&tree);
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (p, &ino) in files.iter().filter(|(p, _)| p.ends_with("/data")) {
        let whole = read_all(&tree, ino, 1 << 20);
        for _ in 0..200 {
            let off = next() % (whole.len() as u64 + 64);
            let len = (next() % 9000) as u32;
            let got = tree.read_wait(ino, off, len).unwrap();
            let start = (off as usize).min(whole.len());
            let end = (start + len as usize).min(whole.len());
            assert_eq!(&got[..], &whole[start..end], "{p} [{off}, +{len})");
        }
    }
}

/// The dense view of a CSR object against a naive scatter of its parts.
#[test]
fn csr_dense_view_matches_naive_scatter() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/valid/csr-u32.zt");
    let tree = Arc::new(Tree::build(Model::open(&path).unwrap(), Options::default()).unwrap());
    let files = walk(&tree);
    let model = tree.model();
    let o = &model.manifest().unwrap().objects[0];
    let part = |n: &str| ztfs::read::decoded_vec(model, o, n).unwrap();
    let words = |b: Vec<u8>| -> Vec<usize> {
        b.chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()) as usize)
            .collect()
    };
    let (indptr, indices, values) = (
        words(part("indptr")),
        words(part("indices")),
        part("values"),
    );
    let (rows, cols) = (o.shape[0] as usize, o.shape[1] as usize);
    let mut want = vec![0u8; rows * cols * 4];
    for r in 0..rows {
        for k in indptr[r]..indptr[r + 1] {
            let at = (r * cols + indices[k]) * 4;
            want[at..at + 4].copy_from_slice(&values[k * 4..k * 4 + 4]);
        }
    }
    let (_, &ino) = files
        .iter()
        .find(|(p, _)| p.ends_with("/dense"))
        .expect("a dense view file");
    assert_eq!(read_all(&tree, ino, 7), want);
}

/// Content rules apply to the range served, at read time: opening a bool
/// part never scans it (a huge part would hold the opener for hours), a
/// range of valid bytes reads, a range holding a byte other than 0 or 1
/// fails. Regression test for the whole-part check on open.
#[test]
fn bool_content_is_checked_per_range_as_it_is_served() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/valid/bool-invalid-byte.zt");
    let tree = Arc::new(Tree::build(Model::open(&path).unwrap(), Options::default()).unwrap());
    let files = walk(&tree);
    let (_, &ino) = files.iter().find(|(p, _)| p.ends_with("/data")).unwrap();
    tree.open_wait(ino).expect("open does not scan the part");
    assert_eq!(tree.read_wait(ino, 0, 2).unwrap(), [0, 1]);
    assert_eq!(tree.read_wait(ino, 3, 1).unwrap(), [0]);
    assert!(tree.read_wait(ino, 2, 1).is_err(), "byte 2 is 0x02");
    assert!(tree.read_wait(ino, 0, 4096).is_err());
}

/// With --verify, an open of a corrupt part fails (the whole part is
/// verified, off the caller's thread), and a valid one opens.
#[test]
fn verify_on_open_refuses_a_corrupt_part() {
    let bad = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/valid/bool-invalid-byte.zt");
    let opts = Options {
        verify: true,
        ..Options::default()
    };
    let tree = Arc::new(Tree::build(Model::open(&bad).unwrap(), opts.clone()).unwrap());
    let files = walk(&tree);
    let (_, &ino) = files.iter().find(|(p, _)| p.ends_with("/data")).unwrap();
    assert!(tree.open_wait(ino).is_err());
    assert!(tree.open_wait(ino).is_err(), "the outcome is remembered");
    let good = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/samples/tiny-llama.zt");
    let tree = Arc::new(Tree::build(Model::open(&good).unwrap(), opts).unwrap());
    for (p, &ino) in walk(&tree).iter().filter(|(p, _)| p.ends_with("/data")) {
        tree.open_wait(ino).unwrap_or_else(|e| panic!("{p}: {e:?}"));
    }
}

/// An object of 200,000 parts (a few MB of manifest can declare them): a
/// listing in kernel-sized batches with a stat of every entry (what `ls -l`
/// does through READDIRPLUS) and lookups finish in time proportional to
/// the directory, not to its square. Regression test for deriving an
/// object directory's files again on every batch, lookup and stat.
#[test]
fn a_directory_of_many_parts_lists_in_linear_time() {
    const PARTS: usize = 200_000;
    let mut fb = builder::FileBuilder::new();
    let blob = fb.blob(&[1u8; 8]);
    let mut parts = builder::Fields::new();
    for j in 0..PARTS {
        // Names of one length in ascending order: already the canonical order.
        parts = parts.push(format!("p{j:06}").as_str(), builder::part("u8", blob));
    }
    let object = builder::object(&[8], "acme.thing/1", parts);
    let objects = builder::Fields::new().set("big", object);
    let bytes = fb.finish(&builder::root(objects).sorted().encode());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.zt");
    std::fs::write(&path, bytes).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let tree = Tree::build(Model::open(&path).unwrap(), Options::default()).unwrap();
        let big = tree.lookup(ROOT, b"big").unwrap().ino;
        let (mut offset, mut names) = (0, Vec::new());
        loop {
            let mut batch = Vec::new();
            tree.readdir(big, offset, &mut |e| {
                batch.push((e.name.to_string(), e.ino, e.next));
                batch.len() == 100
            })
            .unwrap();
            let Some(&(_, _, next)) = batch.last() else {
                break;
            };
            for (name, ino, _) in batch {
                tree.getattr(ino).unwrap();
                names.push(name);
            }
            offset = next;
        }
        for j in (0..PARTS).step_by(997) {
            let name = format!("p{j:06}.raw");
            let a = tree.lookup(big, name.as_bytes()).unwrap();
            assert_eq!(a.size, 8, "{name}");
        }
        tx.send(names).unwrap();
    });
    // Generous: linear work takes seconds even in a debug build; the
    // quadratic kind took hours.
    let names = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("listing 200,000 parts finishes in time linear in the directory");
    assert_eq!(names.len(), PARTS + 3, "the dots, meta.json and every part");
    assert!(names.iter().any(|n| n == "p199999.raw"));
}

/// The mount's `model.safetensors` is never a file its own format refuses:
/// file attributes too long for the header limit are left out of its
/// `__metadata__` (and `ztfs ls --safetensors` says so), whether every
/// tensor is left out of the view (an object named `__metadata__` is) or
/// one is served. The limit is made small so the test is quick.
#[test]
fn model_safetensors_header_stays_within_the_limit() {
    const MAX: u64 = 64 * 1024;
    for served in [false, true] {
        let mut fb = builder::FileBuilder::new();
        let blob = fb.blob(&[1u8; 8]);
        let dense = || builder::dense(&[8], builder::part("u8", blob));
        let mut objects = builder::Fields::new().set("__metadata__", dense());
        if served {
            objects = objects.set("w", dense());
        }
        let attrs = builder::Fields::new()
            .set("big", "\"".repeat(MAX as usize))
            .set("small", "kept");
        let root = builder::root(objects).set("attributes", attrs);
        let bytes = fb.finish(&root.sorted().encode());
        let (_dir, tree, header) = model_safetensors_within(bytes, MAX);
        assert_eq!(header.tensors.len(), usize::from(served));
        let meta: BTreeMap<String, String> = header.metadata.unwrap().into_iter().collect();
        assert_eq!(meta["small"], "kept");
        assert!(!meta.contains_key("big"));
        assert_eq!(meta["ztfs.left_out_attributes"], "1");
        assert_eq!(tree.safetensors_notes().len(), 1);
    }
}

/// The list of objects left out of `model.safetensors` is cut to fit the
/// header limit; the count still counts them all.
#[test]
fn model_safetensors_left_out_list_is_cut_to_the_limit() {
    const MAX: u64 = 8192;
    const N: usize = 300;
    let mut fb = builder::FileBuilder::new();
    let blob = fb.blob(&[1u8; 8]);
    let mut objects =
        builder::Fields::new().set("w", builder::dense(&[8], builder::part("u8", blob)));
    for i in 0..N {
        let parts = builder::Fields::new().set("p", builder::part("u8", blob));
        let name = format!("left.out.object.{i:05}");
        objects = objects.set(name.as_str(), builder::object(&[8], "acme.thing/1", parts));
    }
    let bytes = fb.finish(&builder::root(objects).sorted().encode());
    let (_dir, tree, header) = model_safetensors_within(bytes, MAX);
    assert_eq!(header.tensors.len(), 1);
    let meta: BTreeMap<String, String> = header.metadata.unwrap().into_iter().collect();
    assert_eq!(meta["ztfs.left_out_count"], N.to_string());
    let list: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&meta["ztfs.left_out"]).unwrap();
    assert!(!list.is_empty() && list.len() < N, "{} listed", list.len());
    assert_eq!(tree.safetensors_notes().len(), 1);
}
