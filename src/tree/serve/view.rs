//! Serving the view files of layout-profile objects (`dense`,
//! `dequantized`) by range.
//!
//! A view is prepared once (its parts decoded, its profile's data rules
//! checked, its indexes built) by a job, and kept in the shared cache under
//! the one budget with decoded frames; a view that would not fit the budget
//! is refused. A read renders only the bytes it asks for from the prepared
//! view, so a 4 GiB dense view of a few kilobytes of sparse data costs
//! kilobytes, however many readers read it.

use std::sync::Arc;

use crate::decode::views;
use crate::error::Error;
use crate::read;
use crate::tree::jobs::{Cancel, Done, JobKey, Work};
use crate::tree::{Data, FsError, Tree};

impl Tree {
    /// True when `object`'s view is prepared and cached.
    pub(in crate::tree) fn view_ready(&self, object: u32) -> bool {
        self.computed_view(object).is_some() || self.frames.view(object).is_some()
    }

    /// Answers `done` once `object`'s view is prepared: at once when it is
    /// cached or known to fail, else after a job prepares it.
    pub(in crate::tree) fn when_view_ready(self: &Arc<Self>, object: u32, tid: u32, done: Done) {
        if self.view_ready(object) {
            return done(Ok(()));
        }
        if self.view_failed(object) {
            return done(Err(FsError::Io));
        }
        let tree = self.clone();
        let work: Work = Arc::new(move |c: &Cancel| tree.prepare_view(object, c));
        self.jobs
            .submit(JobKey::PrepareView(object), tid, done, work);
    }

    /// A range of `object`'s view, rendered from the cached preparation.
    /// Called once the view is ready; if the cache let it go meanwhile,
    /// the read fails and says so.
    pub(in crate::tree) fn read_view(
        &self,
        object: u32,
        offset: u64,
        size: u32,
    ) -> Result<Data<'_>, FsError> {
        if let Some(v) = self.computed_view(object) {
            return self.read_computed(object, v, offset, size);
        }
        let o = self.object(object);
        let Some(v) = self.frames.view(object) else {
            // Its reader waits for it again (`read_resolved`).
            log::debug!("{:?}: view let go before a read could use it", o.name);
            return Err(FsError::Io);
        };
        let len = size as usize;
        v.read_range(offset, len).map(Data::Owned).map_err(|e| {
            log::error!("{:?}: view: {e}", o.name);
            FsError::Io
        })
    }

    fn view_failed(&self, object: u32) -> bool {
        let failed = self.view_failures.lock().unwrap_or_else(|p| p.into_inner());
        failed.contains(&object)
    }

    /// A job: prepares `object`'s view and caches it. A view that cannot be
    /// prepared (its data breaks the profile, a part cannot be decoded, it
    /// needs more memory than the budget) is logged once and remembered.
    fn prepare_view(&self, object: u32, cancel: &Cancel) -> Result<(), FsError> {
        // A request that raced the end of an earlier run of this job.
        if self.view_ready(object) {
            return Ok(());
        }
        let o = self.object(object);
        let prepared = self.fits_budget(object).and_then(|need| {
            let room = self.frames.reserve(need);
            let v = crate::sys::map_read(|| {
                views::prepare(o, &|name| {
                    read::decoded_vec_with(&self.model, o, name, &mut |_| cancel.keep_going())
                })
            });
            drop(room);
            v
        });
        match prepared {
            Ok(v) => {
                self.frames.insert_view(object, Arc::new(v));
                Ok(())
            }
            Err(Error::Interrupted) => Err(FsError::Interrupted),
            Err(e) => {
                log::error!("{}: {:?}: view: {e}", self.model.root().name(), o.name);
                let mut failed = self.view_failures.lock().unwrap_or_else(|p| p.into_inner());
                failed.insert(object);
                Err(FsError::Io)
            }
        }
    }
}

impl Tree {
    /// A range of a tensor's computed `data` (a Hurray tensor in another
    /// layout, a partition: `Model::tensor_data`), read from the map
    /// (or, for a remote model, fetched by range on a job thread, see
    /// `Tree::fetches`): only the elements the range covers are read, so
    /// a local one runs on the FUSE worker like a raw read. The whole
    /// backing file is checked to be there first (a partition reads from
    /// its members' ranges).
    fn read_computed(
        &self,
        object: u32,
        v: &crate::decode::hurray::RowMajor,
        offset: u64,
        size: u32,
    ) -> Result<Data<'_>, FsError> {
        let o = self.object(object);
        let root = self.model.view_store(object).map_err(|_| FsError::Io)?;
        let len = v.len().saturating_sub(offset).min(u64::from(size)) as usize;
        let mut out = vec![0; len];
        crate::sys::map_read(|| {
            crate::tree::content::check_live(root, 0, root.len())?;
            v.read_into(root, offset, &mut out)
                .map_err(crate::error::Error::Unsupported)
        })
        .map_err(|e| {
            let key = (self.part_base[object as usize], "data");
            self.failures.report(key, || {
                format!("{}: {:?}/data: read: {e}", root.name(), o.name)
            });
            FsError::Io
        })?;
        Ok(Data::Owned(out))
    }
}
