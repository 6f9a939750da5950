//! A deflated `.npz` member through the tree: its bytes are inflated by a
//! job, never on the thread that asks (a FUSE worker, which must answer
//! `ls` meanwhile), whether its file is opened first or a file of many
//! tensors (`model.safetensors`) is read with no open of the member's, and
//! then served exactly.

use std::sync::{mpsc, Arc};
use std::thread::ThreadId;

use ztfs::model::Model;
use ztfs::store::Reader;
use ztfs::tree::{Options, Tree, ROOT};

use crate::zip;

/// An archive of one deflated member `a`, a `u8` vector of `data`.
fn archive(dir: &std::path::Path, data: &[u8]) -> std::path::PathBuf {
    let dict = format!(
        "{{'descr': '|u1', 'fortran_order': False, 'shape': ({},), }}",
        data.len()
    );
    let mut header = dict.into_bytes();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend((header.len() as u16).to_le_bytes());
    npy.extend(header);
    npy.extend(data);
    let path = dir.join("a.npz");
    std::fs::write(&path, zip::archive(&[("a.npy", &npy, true)])).unwrap();
    path
}

fn tree_of(path: &std::path::Path) -> Arc<Tree> {
    Arc::new(Tree::build(Model::open(path).unwrap(), Options::default()).unwrap())
}

/// Opens `ino`: whether it opened, and on which thread the answer came.
fn open_on(tree: &Arc<Tree>, ino: u64) -> (bool, ThreadId) {
    let (tx, rx) = mpsc::channel();
    let reply = move |r: Result<_, _>| {
        let _ = tx.send((r.is_ok(), std::thread::current().id()));
    };
    tree.open(ino, 0, Box::new(reply));
    rx.recv().unwrap()
}

/// Reads `[offset, +size)` of `ino` with no open: the bytes, and on which
/// thread the answer came.
fn read_on(tree: &Arc<Tree>, ino: u64, offset: u64, size: u32) -> (Vec<u8>, ThreadId) {
    let (tx, rx) = mpsc::channel();
    let reply: ztfs::tree::ReadReply = Box::new(move |r| {
        let bytes = r.map(|d| d.to_vec()).unwrap_or_default();
        let _ = tx.send((bytes, std::thread::current().id()));
    });
    tree.read(ino, offset, size, Reader::default(), reply);
    rx.recv().unwrap()
}

#[test]
fn a_deflated_member_is_inflated_by_a_job_not_the_thread_that_asks() {
    let d = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let path = archive(d.path(), &data);
    let me = std::thread::current().id();

    let tree = tree_of(&path);
    let dir = tree.lookup(ROOT, b"a").unwrap().ino;
    let ino = tree.lookup(dir, b"data").unwrap().ino;
    let (opened, on) = open_on(&tree, ino);
    assert!(opened);
    assert_ne!(
        on, me,
        "the first open is answered by the job that inflated"
    );
    assert_eq!(open_on(&tree, ino), (true, me), "then at once");
    assert!(read_on(&tree, ino, 0, 4 << 20) == (data.clone(), me));

    // A fresh tree: the tensors' file read straight away waits as well.
    let tree = tree_of(&path);
    let st = tree.lookup(ROOT, b"model.safetensors").unwrap();
    let (bytes, on) = read_on(&tree, st.ino, st.size - data.len() as u64, 4 << 20);
    assert!(bytes == data, "model.safetensors ends with the array");
    assert_ne!(on, me, "the read is answered by the job that inflated");
}
