//! A whole file (as given, and with its footer's manifest hash made to
//! match) mounted as a tree, without a kernel: every directory listed,
//! every file's attributes taken and every small file read. The legacy
//! views carry the oracles: a `.npy` is a numpy v1.0 header padded to a
//! page followed by exactly its stat size, and a `model.safetensors` (or
//! shard) that reads whole deserialises with the reference reader (the
//! `safetensors` crate) into tensors whose shapes and sizes agree. The
//! input's length picks a low safetensors header limit, so shards and the
//! index are reached on small files; the input is the file itself, so the
//! golden corpus seeds it.
#![no_main]

mod common;

use std::io::Write;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use ztfs::model::Model;
use ztfs::tree::{FileKind, Options, Tree, ROOT};

/// Files larger than this are stat'ed, not read.
const MAX_READ: u64 = 1 << 20;
/// Inodes visited at most.
const MAX_NODES: usize = 2000;

fuzz_target!(|data: &[u8]| {
    exercise(data);
    if let Some(fixed) = common::with_matching_hash(data) {
        exercise(&fixed);
    }
});

fn exercise(bytes: &[u8]) {
    let mut tmp = tempfile::NamedTempFile::new().expect("a temporary file");
    tmp.write_all(bytes).expect("write");
    let Ok(model) = Model::open(tmp.path()) else {
        return;
    };
    let opts = Options {
        safetensors_max: 4088 + (bytes.len() % 3) as u64 * 4096,
        cache_bytes: 16 << 20,
        ..Options::default()
    };
    let Ok(tree) = Tree::build(model, opts) else {
        return;
    };
    let tree = Arc::new(tree);
    let mut stack = vec![ROOT];
    let mut visited = 0;
    while let Some(dir) = stack.pop() {
        let mut entries = Vec::new();
        let _ = tree.readdir(dir, 0, &mut |e| {
            if e.name != "." && e.name != ".." {
                entries.push((e.ino, e.kind, e.name.to_string()));
            }
            false
        });
        for (ino, kind, name) in entries {
            visited += 1;
            if visited > MAX_NODES {
                return;
            }
            let attr = tree.getattr(ino).expect("a listed inode has attributes");
            assert_eq!(tree.lookup(dir, name.as_bytes()).map(|a| a.ino), Ok(ino));
            match kind {
                FileKind::Dir => stack.push(ino),
                FileKind::File if attr.size <= MAX_READ => check_file(&tree, ino, &name, attr.size),
                FileKind::File => {}
            }
        }
    }
}

fn check_file(tree: &Arc<Tree>, ino: u64, name: &str, size: u64) {
    if tree.open_wait(ino).is_err() {
        return;
    }
    let Ok(bytes) = tree.read_wait(ino, 0, size as u32 + 1) else {
        return;
    };
    assert_eq!(
        bytes.len() as u64,
        size,
        "{name}: a whole read is the stat size"
    );
    if name.ends_with(".npy") {
        assert!(bytes.starts_with(b"\x93NUMPY\x01\x00"), "{name}: magic");
        let text = 10 + usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
        assert_eq!(text % 4096, 0, "{name}: data on a page");
        assert!(text - 10 <= 10_000, "{name}: a header numpy reads");
        assert_eq!(bytes[text - 1], b'\n', "{name}: header ends in a newline");
    }
    if name.ends_with(".safetensors") {
        let st = safetensors::SafeTensors::deserialize(&bytes)
            .unwrap_or_else(|e| panic!("{name}: the reference reader refuses it: {e:?}"));
        for (t, view) in st.tensors() {
            let n: usize = view.shape().iter().product();
            let bits = view.dtype().bitsize();
            assert_eq!(view.data().len() * 8, n * bits, "{t:?}: size");
        }
    }
}
