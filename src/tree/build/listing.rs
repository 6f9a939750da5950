//! A directory's files, sorted by name, with their place among its
//! subdirectories and their nodes in inode order.
//!
//! Object directories' files are derived from the manifest, not stored
//! (see `build`). For an object of a few parts that costs nothing; for one
//! of a million parts (a small hostile file can declare them) deriving
//! them on every lookup, listing batch or stat would be work in proportion
//! to the object on every request. Such listings are derived once and kept
//! in the budgeted cache.

use std::sync::Arc;

use crate::tree::build::FileName;
use crate::tree::{Dir, Ino, Node, Tree};

/// Directories with more files than this keep their listing in the cache.
pub const CACHED_ABOVE: u32 = 32;

/// The files of one directory.
pub struct Listing {
    /// Names and inodes, sorted by name bytes.
    pub files: Vec<(FileName, Ino)>,
    /// Each sorted file's position among all entries (files merged with
    /// the subdirectories).
    pub at: Vec<usize>,
    /// The nodes of the files in inode order.
    pub nodes: Vec<Node>,
}

impl Listing {
    /// Bytes it holds, for the cache's budget.
    pub fn heap_bytes(&self) -> u64 {
        let names: usize = self.files.iter().map(|(n, _)| n.len()).sum();
        let per_file = std::mem::size_of::<(FileName, Ino)>()
            + std::mem::size_of::<usize>()
            + std::mem::size_of::<Node>();
        (names + per_file * self.files.len()) as u64
    }
}

impl Tree {
    /// The listing of `d`: derived now for a small directory, from the
    /// cache (derived once) for a large one.
    pub(in crate::tree) fn listing(&self, d: &Dir) -> Arc<Listing> {
        if d.files <= CACHED_ABOVE {
            return Arc::new(self.derive_listing(d));
        }
        self.frames.listing(d.ino, || self.derive_listing(d))
    }

    fn derive_listing(&self, d: &Dir) -> Listing {
        let derived = self.dir_files(d);
        let nodes = derived.iter().map(|(_, n)| *n).collect();
        let mut files: Vec<(FileName, Ino)> = derived
            .into_iter()
            .zip(u64::from(d.ino) + 1..)
            .map(|((name, _), ino)| (name, ino))
            .collect();
        files.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let children = self.children(d);
        let at = (files.iter().enumerate())
            .map(|(j, f)| {
                let name = f.0.as_bytes();
                j + children.partition_point(|&c| self.component(c).as_bytes() < name)
            })
            .collect();
        Listing { files, at, nodes }
    }

    /// The `k`-th file of `d` in inode order.
    pub(in crate::tree) fn nth_file(&self, d: &Dir, k: u32) -> Option<Node> {
        if d.files <= CACHED_ABOVE {
            return self.file_node(d, k);
        }
        self.listing(d).nodes.get(k as usize).copied()
    }
}
