//! A NumPy `.npz` archive as a model ([`crate::format::npz`]): a stored
//! member's array is served in place from the map; a deflated member
//! (`np.savez_compressed`) is inflated at open; all of them, one after
//! another in directory order, go into one memory file (`memfd`), held
//! as the model's one other file (as a sharded checkpoint's are) and
//! served from its map. The deflated members of one archive together are
//! kept within a budget, [`set_inflate_budget`] (a mount's `--cache-mib`;
//! 256 MiB for the other commands): their sizes, as the zip directory
//! gives them, are summed before anything is allocated, and an archive
//! over the budget is refused with a message naming it. Each member must
//! then inflate to exactly its declared size ([`npz::inflate`]).

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
        let budget = BUDGET.load(Ordering::Relaxed);
        let deflated = members.iter().filter(|m| !m.is_stored());
        let total = deflated.fold(0u64, |a, m| a.saturating_add(m.size));
        if total > budget {
            return Err(Error::Unsupported(format!(
                "the archive's deflated members inflate to {total} bytes, over the budget of {budget} (a mount's --cache-mib; `np.savez` without compression is read in place)"
            )));
        }
        let shown = format!("{} {}", root.name(), npz::INFLATED);
        let io = |e| Error::io(shown.clone(), e);
        let memory = match total {
            0 => None,
            n => Some(crate::sys::memfd("ztfs-npz", n).map_err(io)?),
        };
        let mut at = 0u64;
        let mut inflate = |m: &Member| -> Result<Arc<Vec<u8>>> {
            use std::os::unix::fs::FileExt;
            let bytes = npz::inflate(&root, m, m.size)?;
            if let Some(f) = &memory {
                f.write_all_at(&bytes, at).map_err(io)?;
            }
            at += bytes.len() as u64;
            Ok(Arc::new(bytes))
        };
        let file = npz::read_archive(&root, members, &mut inflate)?;
        let files = match memory {
            Some(f) => vec![(
                npz::INFLATED.to_string(),
                Store::of_memory(&PathBuf::from(&shown), f)?,
            )],
            None => Vec::new(),
        };
        let objects = npz::objects(&file);
        let mut model = Model::one_file(root, objects, Input::Npz(file));
        model.files = files;
        Ok(model)
    }
}
