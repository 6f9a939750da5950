//! `--verify` in a mount agrees with `check --verify`: over every corpus
//! file of every format, a tree built with `--verify` opens every part's
//! files exactly when `read::verify_model` accepts the model, and a part
//! it refuses is one the driver names.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ztfs::error::{Error, Result};
use ztfs::model::Model;
use ztfs::read::{Place, Watch};
use ztfs::tree::{Options, Tree, PART_NAME_MAX, PART_RESERVED};

use crate::walk;

/// Every file a model may be opened from, in the corpus folders of valid
/// files of each format (files that break a digest or a data rule are
/// valid structurally, so they are here too).
fn every_format_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut out = Vec::new();
    for dir in [
        "valid",
        "samples",
        "hurray/valid",
        "gguf/valid",
        "safetensors/valid",
    ] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() && !p.extension().is_some_and(|x| x == "json" || x == "txt") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A verification that keeps the parts it found broken.
#[derive(Default)]
struct Broken(Vec<(usize, usize)>);

impl Watch for Broken {
    fn read(&mut self, _: u64) -> Result<()> {
        Ok(())
    }
    fn failed(&mut self, at: Place, _: &Error) {
        if let Place::Part(o, p) = at {
            self.0.push((o, p));
        }
    }
}

/// Each part's file that `--verify` guards (its decoded file; its `.raw`
/// too where a part's stored bytes are the tensor's data), as (object,
/// part, inode); `None` for a part the tree serves no such file of (a
/// type this reader does not know: `.raw` only, structural access).
fn guarded_files(tree: &Arc<Tree>) -> Vec<(usize, usize, Option<u64>)> {
    let files = walk(tree);
    let m = tree.model().manifest().expect("a model with objects");
    let raw_is_data = tree.model().input().raw_is_data();
    let mut out = Vec::new();
    for (p, &ino) in &files {
        let Some(dir) = p.strip_suffix("/meta.json") else {
            continue;
        };
        let i = crate::object_of_meta(tree, ino).expect("meta.json names an object");
        for (k, part) in m.objects[i].parts.iter().enumerate() {
            let name = ztfs::tree::names::escape(&part.name, &PART_RESERVED, PART_NAME_MAX);
            let decoded = files.get(&format!("{dir}/{name}"));
            let raw = files
                .get(&format!("{dir}/{name}.raw"))
                .filter(|_| raw_is_data);
            match (decoded, raw) {
                (None, None) => out.push((i, k, None)),
                (d, r) => out.extend([d, r].into_iter().flatten().map(|&f| (i, k, Some(f)))),
            }
        }
    }
    out
}

#[test]
fn a_mount_with_verify_serves_exactly_what_check_verify_accepts() {
    let files = every_format_files();
    assert!(files.len() >= 150, "corpus too small: {}", files.len());
    let (mut accepted, mut refused) = (0, 0);
    for path in &files {
        let what = path.display();
        let Ok(model) = Model::open(path) else {
            continue; // refused structurally: neither mounts it
        };
        let mut broken = Broken::default();
        let checked = ztfs::read::verify_model(&model, &[], &mut broken).is_ok();
        let opts = Options {
            verify: true,
            ..Options::default()
        };
        let Ok(tree) = Tree::build(model, opts) else {
            continue;
        };
        let tree = Arc::new(tree);
        if tree.model().manifest().is_none() {
            continue;
        }
        // Whether each guarded file opens; `None`: the part has none.
        let parts = guarded_files(&tree);
        let opened: Vec<Option<bool>> = (parts.iter())
            .map(|&(_, _, ino)| ino.map(|ino| tree.open_wait(ino).is_ok()))
            .collect();
        if checked {
            accepted += 1;
            for (&(o, p, _), ok) in parts.iter().zip(&opened) {
                assert!(
                    ok.unwrap_or(true),
                    "{what}: check --verify accepts it, the mount refuses part {o}/{p}"
                );
            }
        } else {
            refused += 1;
            assert!(
                opened.iter().any(|ok| *ok != Some(true)),
                "{what}: check --verify refuses it, the mount serves every part"
            );
            for (&(o, p, _), ok) in parts.iter().zip(&opened) {
                if broken.0.contains(&(o, p)) {
                    assert!(
                        *ok != Some(true),
                        "{what}: part {o}/{p} broken, yet the mount opens it"
                    );
                }
            }
        }
    }
    eprintln!(
        "{} files: {accepted} accepted, {refused} refused",
        files.len()
    );
    assert!(
        accepted >= 100 && refused >= 5,
        "accepted {accepted}, refused {refused}"
    );
}
