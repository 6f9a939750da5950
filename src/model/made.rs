//! A model's file of bytes made on first use: the stored bytes of parts
//! that cannot be read by range where they are, made once into one
//! temporary file, each at its part's place, and served from that file's
//! map. An `.npz` archive's deflated members are inflated into it
//! ([`crate::format::npz::INFLATED`]); an ONNX model's typed fields are
//! converted into it ([`crate::format::onnx::objects::CONVERTED`]). The
//! parts name the file as their `blob.shard`.
//!
//! The file is unlinked, in the system's temporary directory (`$TMPDIR`),
//! made on the first use with the length of all its slots together and
//! written only where a slot is made (a sparse file): its pages are the
//! kernel's page cache, not the process's memory, which holds one chunk
//! while a slot is made, whatever its size. One file for the model, not
//! one a part, so that a model of thousands costs one descriptor. A slot
//! is made once ([`Model::make_at_hand`] does it off a mount's worker
//! threads); a failed making (the disk full, the file changed since it
//! was opened) is not remembered, and the next use tries again.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use super::{Input, Model};
use crate::error::{Error, Result};
use crate::format::Part;
use crate::store::Store;

/// A model's file of made bytes and its slots.
pub(super) struct Made {
    /// Its name, as its parts' `blob.shard`.
    pub(super) name: &'static str,
    /// The file, made on the first use.
    file: OnceLock<Store>,
    /// Held while the file is made.
    making: Mutex<()>,
    /// The file's length: all the slots' bytes.
    len: u64,
    /// The slots, in the order of their places in the file.
    slots: Vec<Slot>,
}

/// The bytes of one source (an `.npz` member, an ONNX tensor).
struct Slot {
    /// The source's index in its format's list.
    source: usize,
    /// Its place in the file and its length.
    at: u64,
    len: u64,
    /// Set once its bytes are in the file, checked.
    done: AtomicBool,
    /// Held while it is made: two users wait for one making.
    making: Mutex<()>,
}

impl Made {
    /// The file `name` of `slots` (source, place, length), laid end to
    /// end in order; `None` when there are none.
    pub(super) fn new(name: &'static str, slots: &[(usize, u64, u64)]) -> Option<Made> {
        let len = slots.last().map_or(0, |&(_, at, len)| at + len);
        let slots: Vec<Slot> = (slots.iter())
            .map(|&(source, at, len)| Slot {
                source,
                at,
                len,
                done: AtomicBool::new(false),
                making: Mutex::new(()),
            })
            .collect();
        (!slots.is_empty()).then(|| Made {
            name,
            file: OnceLock::new(),
            making: Mutex::new(()),
            len,
            slots,
        })
    }

    /// The slot holding a part's bytes at `[offset, +len)` of the file;
    /// `None` for no bytes (an empty part reads nothing).
    fn slot(&self, offset: u64, len: u64) -> Option<&Slot> {
        if len == 0 {
            return None;
        }
        // Places are laid end to end in order, without overflow.
        let i = (self.slots).partition_point(|s| s.at + s.len <= offset);
        self.slots.get(i)
    }

    /// The file, made on first use: `len` bytes of holes, so that nothing
    /// is written but what slots are made.
    fn file(&self, root: &Store) -> Result<&Store> {
        if let Some(store) = self.file.get() {
            return Ok(store);
        }
        let _held = self.making.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(store) = self.file.get() {
            return Ok(store);
        }
        let shown = format!("{} {}", root.name(), self.name);
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
    /// True when part `p`'s stored bytes can be read now, with no long
    /// work first: false only for a part of the model's made file not
    /// made yet ([`Model::make_at_hand`]).
    pub fn at_hand(&self, p: &Part) -> bool {
        self.made_slot(p)
            .is_none_or(|s| s.done.load(Ordering::Acquire))
    }

    /// Makes part `p`'s stored bytes at hand ([`Model::at_hand`]): inflates
    /// its `.npz` member, converts its ONNX typed field, into the model's
    /// made file, telling `progress` of the bytes of each chunk written
    /// (an error from it stops the work; the slot is made from the start
    /// next time). Nothing to do for any other part.
    pub fn make_at_hand(
        &self,
        p: &Part,
        progress: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        match self.is_made(p) {
            true => self.made_file(p, progress).map(drop),
            false => Ok(()),
        }
    }

    /// True when part `p`'s bytes are in the model's made file.
    pub(super) fn is_made(&self, p: &Part) -> bool {
        (self.made.as_ref()).is_some_and(|m| p.blob.shard.as_deref() == Some(m.name))
    }

    /// True when `name` is the model's made file's.
    pub(super) fn is_made_name(&self, name: &str) -> bool {
        self.made.as_ref().is_some_and(|m| m.name == name)
    }

    /// The model's made file, holding part `p`'s bytes, made first if
    /// they are not yet.
    pub(super) fn made_file(
        &self,
        p: &Part,
        progress: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<&Store> {
        let made = self.made.as_ref().filter(|_| self.is_made(p));
        let missing = || Error::NotFound(format!("file {:?} of the model", p.blob.shard));
        let made = made.ok_or_else(missing)?;
        let store = made.file(&self.root)?;
        let Some(slot) = self.made_slot(p) else {
            return Ok(store);
        };
        let _held = slot.making.lock().unwrap_or_else(|p| p.into_inner());
        if slot.done.load(Ordering::Acquire) {
            return Ok(store);
        }
        // A file of ours is local: never missing.
        let file = store.file().ok_or_else(missing)?;
        let mut at = slot.at;
        let (what, mut fill) = self.source_of(slot.source)?;
        fill(&mut |bytes| {
            file.write_all_at(bytes, at).map_err(|e| {
                let what = format!("{}: {what} ({} bytes) at {at}", store.name(), slot.len);
                Error::io(what, e)
            })?;
            at += bytes.len() as u64;
            progress(bytes.len() as u64)
        })?;
        if at != slot.at + slot.len {
            return Err(Error::io(
                store.name(),
                std::io::Error::other(format!(
                    "{what}: {} bytes made where {} were expected",
                    at - slot.at,
                    slot.len
                )),
            ));
        }
        // A page of the file vanishing under a guarded read (a file
        // truncated in place) reads as zeros: nothing of it is served.
        crate::sys::no_fault()?;
        slot.done.store(true, Ordering::Release);
        Ok(store)
    }

    /// The made file's slot holding part `p`'s bytes; `None` for a part
    /// of no slot, or of no bytes.
    fn made_slot(&self, p: &Part) -> Option<&Slot> {
        let made = self.made.as_ref().filter(|_| self.is_made(p))?;
        made.slot(p.blob.offset, p.blob.length)
    }
}

/// What makes a slot's bytes: a name for messages, and the work, which
/// hands its bytes to a sink chunk by chunk.
type Fill<'a> = Box<dyn FnMut(&mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> + 'a>;

impl Model {
    /// The making of source `i` of the model's format.
    fn source_of(&self, i: usize) -> Result<(String, Fill<'_>)> {
        match &self.input {
            Input::Npz(file) => {
                let member = &file.arrays[i].member;
                let what = format!("member {:?}", member.name());
                let root = &self.root;
                Ok((
                    what,
                    Box::new(move |sink| crate::format::npz::inflate_to(root, member, sink)),
                ))
            }
            Input::Onnx(file) => {
                let t = &file.model.tensors[i];
                Ok((
                    format!("tensor {:?}", t.name),
                    Box::new(move |sink| self.convert_typed(t, sink)),
                ))
            }
            _ => Err(Error::NotFound(format!(
                "source {i} of the model's made file"
            ))),
        }
    }
}
