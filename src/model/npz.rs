//! A NumPy `.npz` archive as a model ([`crate::format::npz`]). A stored
//! member's array is served in place from the map. A deflated member
//! (`np.savez_compressed`) cannot be read by range: opening checks each
//! one by inflating it through (its size and CRC-32; only its `.npy`
//! header is kept), and its bytes are inflated again on their first use
//! into the model's made file (`model::made`), at the member's place
//! ([`npz::Array::inflated_at`]), and served from that file's map.

use super::made::Made;
use super::{Input, Model};
use crate::error::Result;
use crate::format::npz;
use crate::format::zip::Member;
use crate::store::Store;

impl Model {
    /// Opens an `.npz` whose zip directory is `members`.
    pub(super) fn open_npz(root: Store, members: &[Member]) -> Result<Model> {
        let file = npz::read_archive(&root, members)?;
        let objects = npz::objects(&file);
        let slots: Vec<(usize, u64, u64)> = (file.arrays.iter().enumerate())
            .filter(|(_, a)| !a.is_stored())
            .map(|(i, a)| (i, a.inflated_at, a.member.size))
            .collect();
        let mut model = Model::one_file(root, objects, Input::Npz(file));
        model.made = Made::new(npz::INFLATED, &slots);
        Ok(model)
    }
}
