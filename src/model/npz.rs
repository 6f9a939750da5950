//! A NumPy `.npz` archive as a model ([`crate::format::npz`]): a stored
//! member's array is served in place from the map; a deflated member
//! (`np.savez_compressed`) is inflated at open into a memory file
//! (`memfd`) of its own, held as one of the model's files (as a sharded
//! checkpoint's), and served from that file's map. The deflated members
//! of one archive together are kept within a budget, [`set_inflate_budget`]
//! (a mount's `--cache-mib`; 256 MiB for the other commands): an archive
//! over it is refused with a message naming it, before anything beyond
//! the budget is allocated.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{Input, Model};
use crate::error::{Error, Result};
use crate::format::npz;
use crate::format::zip::Member;
use crate::store::Store;

static BUDGET: AtomicU64 = AtomicU64::new(256 << 20);

/// Keeps the inflated members of an archive within `bytes` in all.
pub fn set_inflate_budget(bytes: u64) {
    BUDGET.store(bytes, Ordering::Relaxed);
}

impl Model {
    /// Opens an `.npz` whose zip directory is `members`.
    pub(super) fn open_npz(root: Store, members: &[Member]) -> Result<Model> {
        let mut left = BUDGET.load(Ordering::Relaxed);
        let mut files: Vec<(String, Store)> = Vec::new();
        let mut inflate = |m: &Member| -> Result<Arc<Vec<u8>>> {
            let bytes = npz::inflate(&root, m, left)?;
            left -= bytes.len() as u64;
            let name = m.name().into_owned();
            let mem = memory_store(&root, &name, &bytes)?;
            files.push((name, mem));
            Ok(Arc::new(bytes))
        };
        let file = npz::read_archive(&root, members, &mut inflate)?;
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let objects = npz::objects(&file);
        let mut model = Model::one_file(root, objects, Input::Npz(file));
        model.files = files;
        Ok(model)
    }
}

/// A memory file holding `bytes`, mapped as a store named
/// `ROOT:member`.
fn memory_store(root: &Store, member: &str, bytes: &[u8]) -> Result<Store> {
    use std::io::Write;
    let shown = format!("{}:{member}", root.name());
    let io = |e| Error::io(shown.clone(), e);
    let mut f = crate::sys::memfd(member, bytes.len() as u64).map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    Store::of_memory(&PathBuf::from(&shown), f)
}
