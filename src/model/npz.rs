//! A NumPy `.npz` archive as a model ([`crate::format::npz`]). A stored
//! member's array is served in place from the map. A deflated member
//! (`np.savez_compressed`) cannot be read by range: opening checks each
//! one by inflating it through (its size and CRC-32; only its `.npy`
//! header is kept), and its bytes are inflated again on their first use
//! ([`Model::make_at_hand`], or any read through [`Model::store_of`])
//! into the archive's one temporary file, at the member's place
//! ([`npz::Array::inflated_at`]), and served from that file's map.
//!
//! The file is unlinked, in the system's temporary directory (`$TMPDIR`),
//! made on the first inflation with the length of all the deflated
//! members together and written only where a member is inflated (a
//! sparse file): its pages are the kernel's page cache, not the process's
//! memory, which holds an [`npz::CHUNK`] while a member inflates, whatever
//! its size. One file for the archive, not one a member, so that an
//! archive of thousands of arrays costs one descriptor. A member is
//! inflated once; a failed inflation (the disk full, the archive changed
//! since it was opened) is not remembered, and the next use tries again.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use super::{Input, Model};
use crate::error::{Error, Result};
use crate::format::npz;
use crate::format::zip::Member;
use crate::format::Part;
use crate::store::Store;

/// An archive's deflated members, each inflated on its first use into
/// the archive's one file.
pub(super) struct Inflated {
    /// The file, made on the first inflation.
    file: OnceLock<Store>,
    /// Held while the file is made.
    making: Mutex<()>,
    /// The file's length: all the deflated members' bytes.
    len: u64,
    /// Each deflated member, in the order of their places in the file.
    members: Vec<Slot>,
}

/// A deflated member.
struct Slot {
    /// Its array's index in the archive.
    array: usize,
    /// Its place in the file and its inflated length.
    at: u64,
    len: u64,
    /// Set once its bytes are in the file, checked.
    done: AtomicBool,
    /// Held while it is inflated: two users wait for one inflation.
    inflating: Mutex<()>,
}

impl Inflated {
    /// The deflated members of `file`; `None` when it has none.
    fn of(file: &npz::File) -> Option<Inflated> {
        let members: Vec<Slot> = (file.arrays.iter().enumerate())
            .filter(|(_, a)| !a.is_stored())
            .map(|(i, a)| Slot {
                array: i,
                at: a.inflated_at,
                len: a.member.size,
                done: AtomicBool::new(false),
                inflating: Mutex::new(()),
            })
            .collect();
        (!members.is_empty()).then(|| Inflated {
            file: OnceLock::new(),
            making: Mutex::new(()),
            len: file.inflated_len(),
            members,
        })
    }

    /// The member holding a part's bytes at `[offset, +len)` of the file;
    /// `None` for no bytes (an empty array reads nothing).
    fn slot(&self, offset: u64, len: u64) -> Option<&Slot> {
        if len == 0 {
            return None;
        }
        // Places are laid end to end in order, without overflow.
        let i = (self.members).partition_point(|s| s.at + s.len <= offset);
        self.members.get(i)
    }

    /// The file, made on first use: `len` bytes of holes, so that nothing
    /// is written but what members are inflated.
    fn file(&self, root: &Store) -> Result<&Store> {
        if let Some(store) = self.file.get() {
            return Ok(store);
        }
        let _held = self.making.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(store) = self.file.get() {
            return Ok(store);
        }
        let shown = format!("{} {}", root.name(), npz::INFLATED);
        let dir = std::env::temp_dir();
        let io = |e| {
            let what = format!("{shown}: a temporary file in {}", dir.display());
            Error::io(what, e)
        };
        let file = tempfile::tempfile_in(&dir).map_err(io)?;
        file.set_len(self.len).map_err(io)?;
        let store = Store::of_own(Path::new(&shown), file)?;
        Ok(self.file.get_or_init(|| store))
    }
}

impl Model {
    /// Opens an `.npz` whose zip directory is `members`.
    pub(super) fn open_npz(root: Store, members: &[Member]) -> Result<Model> {
        let file = npz::read_archive(&root, members)?;
        let objects = npz::objects(&file);
        let inflated = Inflated::of(&file);
        let mut model = Model::one_file(root, objects, Input::Npz(file));
        model.inflated = inflated;
        Ok(model)
    }

    /// True when part `p`'s stored bytes can be read now, with no long
    /// work first: false only for a deflated `.npz` member not inflated
    /// yet ([`Model::make_at_hand`]).
    pub fn at_hand(&self, p: &Part) -> bool {
        self.inflated_slot(p)
            .is_none_or(|(_, s)| s.done.load(Ordering::Acquire))
    }

    /// Makes part `p`'s stored bytes at hand ([`Model::at_hand`]): inflates
    /// its `.npz` member into the archive's file, telling `progress` of the
    /// bytes of each chunk written (an error from it stops the work; the
    /// member is inflated from the start next time). Nothing to do for
    /// any other part.
    pub fn make_at_hand(
        &self,
        p: &Part,
        progress: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        match self.inflated.is_some() && p.blob.shard.as_deref() == Some(npz::INFLATED) {
            true => self.inflated_file(p, progress).map(drop),
            false => Ok(()),
        }
    }

    /// The archive's file of inflated members, holding part `p`'s bytes,
    /// inflated first if they are not yet.
    pub(super) fn inflated_file(
        &self,
        p: &Part,
        progress: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<&Store> {
        let missing = || Error::NotFound(format!("file {:?} of the archive", npz::INFLATED));
        let inflated = self.inflated.as_ref().ok_or_else(missing)?;
        let store = inflated.file(&self.root)?;
        let Some((member, slot)) = self.inflated_slot(p) else {
            return Ok(store);
        };
        let _held = slot.inflating.lock().unwrap_or_else(|p| p.into_inner());
        if slot.done.load(Ordering::Acquire) {
            return Ok(store);
        }
        // A file of ours is local: never missing.
        let file = store.file().ok_or_else(missing)?;
        let mut at = slot.at;
        npz::inflate_to(&self.root, member, &mut |bytes| {
            file.write_all_at(bytes, at).map_err(|e| {
                let what = format!(
                    "{}: member {:?} ({} bytes) at {at}",
                    store.name(),
                    member.name(),
                    slot.len
                );
                Error::io(what, e)
            })?;
            at += bytes.len() as u64;
            progress(bytes.len() as u64)
        })?;
        // A page of the archive vanishing under a guarded read (a file
        // truncated in place) reads as zeros: nothing of it is served.
        crate::sys::no_fault()?;
        slot.done.store(true, Ordering::Release);
        Ok(store)
    }

    /// The deflated member holding part `p`'s bytes, and its slot; `None`
    /// for a part of no such member, or of no bytes.
    fn inflated_slot(&self, p: &Part) -> Option<(&Member, &Slot)> {
        let (Some(inflated), Input::Npz(file)) = (&self.inflated, &self.input) else {
            return None;
        };
        if p.blob.shard.as_deref() != Some(npz::INFLATED) {
            return None;
        }
        let slot = inflated.slot(p.blob.offset, p.blob.length)?;
        Some((&file.arrays[slot.array].member, slot))
    }
}
