//! What the tree keeps of each part: one state per part, in one table
//! indexed by the part's flat number (`Tree::part_base[object] + part`):
//! which files it has, its decoder once resolved, and with `--verify`
//! whether it was verified. 16 bytes a part: a mount of a million objects
//! holds a million of them.

use std::sync::atomic::{AtomicU8, Ordering};

use once_cell::race::OnceBox;

use crate::decode::Encoding;

/// The part has a decoded file.
pub(in crate::tree) const DECODED: u8 = 1;
/// The part has a `.raw` file.
pub(in crate::tree) const RAW: u8 = 2;
/// On an object's first part: the object has a view file.
pub(in crate::tree) const VIEW: u8 = 4;
/// `--verify` read the part whole and found it sound.
const VERIFIED: u8 = 8;
/// `--verify` read the part whole and found it broken.
const BROKEN: u8 = 16;
const FILES: u8 = DECODED | RAW | VIEW;

/// One part's state.
pub(in crate::tree) struct PartState {
    /// Its decoder, resolved and checked on first open (boxed, so a part
    /// never opened costs a pointer, not a decoder). Two first opens at
    /// once may both resolve it; one result is kept.
    decoder: OnceBox<Result<Encoding, ()>>,
    /// Its files ([`DECODED`], [`RAW`], [`VIEW`]), set when the tree is
    /// built; [`VERIFIED`] or [`BROKEN`], set once a verification ends.
    flags: AtomicU8,
}

impl PartState {
    /// A part with the files `files` (a union of [`DECODED`], [`RAW`] and
    /// [`VIEW`]).
    pub(in crate::tree) fn new(files: u8) -> PartState {
        PartState {
            decoder: OnceBox::new(),
            flags: AtomicU8::new(files & FILES),
        }
    }

    /// Its files.
    pub(in crate::tree) fn files(&self) -> u8 {
        self.flags.load(Ordering::Relaxed) & FILES
    }

    /// Its decoder's cell.
    pub(in crate::tree) fn decoder(&self) -> &OnceBox<Result<Encoding, ()>> {
        &self.decoder
    }

    /// How its verification ended, if one has.
    pub(in crate::tree) fn verified(&self) -> Option<Result<(), ()>> {
        let f = self.flags.load(Ordering::Acquire);
        match (f & VERIFIED != 0, f & BROKEN != 0) {
            (_, true) => Some(Err(())),
            (true, false) => Some(Ok(())),
            (false, false) => None,
        }
    }

    /// Records how its verification ended. The first outcome stands (two
    /// verifications of the same bytes agree; if they did not, broken
    /// would win).
    pub(in crate::tree) fn set_verified(&self, outcome: Result<(), ()>) {
        let bit = if outcome.is_ok() { VERIFIED } else { BROKEN };
        self.flags.fetch_or(bit, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_state_is_16_bytes_and_keeps_files_and_outcome_apart() {
        assert_eq!(std::mem::size_of::<PartState>(), 16);
        let s = PartState::new(DECODED | VIEW);
        assert_eq!((s.files(), s.verified()), (DECODED | VIEW, None));
        s.set_verified(Ok(()));
        assert_eq!((s.files(), s.verified()), (DECODED | VIEW, Some(Ok(()))));
        let s = PartState::new(RAW);
        s.set_verified(Err(()));
        assert_eq!((s.files(), s.verified()), (RAW, Some(Err(()))));
    }
}
