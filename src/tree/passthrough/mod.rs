//! Opens that hand the kernel a backing file (see [`crate::tree::clones`]): after
//! the open's own work (decoder, `--verify`, a view prepared), a job makes
//! the file's clone, once, and the open answers with it; a file that gets
//! no clone (too small, over the budget, an error) answers as a buffered
//! open. Nothing here runs on a FUSE worker but the lookups.

pub mod clones;
pub mod registry;

use std::os::unix::fs::FileExt;
use std::sync::Arc;

use crate::decode::{ContentCheck, Encoding};
use crate::error::{Error, Result};
use crate::tree::clones::{Backing, Kind};
use crate::tree::jobs::{Cancel, JobKey, Work};
use crate::tree::{FsError, Ino, Node, OpenMode, OpenReply, Tree, VIEW};

/// Bytes copied into a memory clone per read of the tree.
const CHUNK: u32 = 1 << 20;
/// Bytes the kernel copies into a memory clone between two looks at the
/// job's cancellation.
const SEND_CHUNK: u64 = 64 << 20;

/// Where a clone of a stored blob gets its bytes: a range of a store's
/// file, after an optional header written in front. Reflinked, or copied
/// by the kernel into a memory clone.
struct RawSource<'a> {
    store: &'a crate::store::Store,
    /// The store's file: only a local file has blobs to clone.
    file: &'a std::fs::File,
    offset: u64,
    len: u64,
    header: Vec<u8>,
    rules: Option<ContentCheck<'a>>,
}

impl Tree {
    /// Wraps `reply` so that a successful open of a file worth passing
    /// through first gets its clone.
    pub(in crate::tree) fn with_backing(
        self: &Arc<Self>,
        ino: Ino,
        node: Node,
        tid: u32,
        reply: OpenReply,
    ) -> OpenReply {
        let eligible = matches!(
            node,
            Node::Part { .. } | Node::Raw { .. } | Node::Npy { .. } | Node::View { .. }
        );
        if !eligible || !self.clones.wants(self.size(&node)) {
            return reply;
        }
        let tree = self.clone();
        Box::new(move |r: std::result::Result<OpenMode, FsError>| match r {
            Ok(mode) => tree.when_cloned(ino, node, tid, mode, reply),
            Err(e) => reply(Err(e)),
        })
    }

    /// Answers `reply` with `mode` and `ino`'s clone, making it first (in
    /// a job) when there is none yet.
    fn when_cloned(
        self: &Arc<Self>,
        ino: Ino,
        node: Node,
        tid: u32,
        mode: OpenMode,
        reply: OpenReply,
    ) {
        if let Some(b) = self.clones.take(ino) {
            return reply(Ok(mode.with_backing(b)));
        }
        if self.clones.failed(ino) {
            return reply(Ok(mode));
        }
        let tree = self.clone();
        let done = Box::new(move |r: std::result::Result<(), FsError>| match r {
            Err(FsError::Interrupted) => reply(Err(FsError::Interrupted)),
            // No clone is no error: the file is served buffered.
            _ => match tree.clones.take(ino) {
                Some(b) => reply(Ok(mode.with_backing(b))),
                None => reply(Ok(mode)),
            },
        });
        let tree = self.clone();
        let work: Work = Arc::new(move |c: &Cancel| tree.make_clone(ino, node, c));
        self.jobs.submit(JobKey::Clone(ino), tid, done, work);
    }

    /// True when the mount asks for passthrough at all.
    pub fn passthrough_wanted(&self) -> bool {
        self.clones.policy.mode != crate::tree::clones::Passthrough::Off
    }

    /// Turns passthrough off for the mount, saying why (once).
    pub fn disable_passthrough(&self, why: &str) {
        self.clones.disable(why);
    }

    /// What the mount command says about passthrough: why it is off when
    /// it was asked for by name (`reflink`, `memory`); under the default
    /// `auto` its absence is no news (the log has it at debug level).
    pub fn passthrough_note(&self) -> Option<String> {
        if self.clones.policy.mode == crate::tree::clones::Passthrough::Auto {
            return None;
        }
        let why = self.clones.off_because()?;
        Some(format!(
            "passthrough is off: {why}; files are served through the daemon"
        ))
    }

    /// Says at mount that passthrough is on, and how.
    pub fn passthrough_ready(&self) {
        let p = &self.clones.policy;
        let memory = match p.budget {
            0 => "no memory clones (--clone-cache gives them a budget)".to_string(),
            b => format!("memory clones up to {b} bytes"),
        };
        log::info!(
            "passthrough is on ({:?}): files of {} bytes or more get a backing file; {memory}",
            p.mode,
            p.min_size
        );
    }

    /// Gives back the clone handle a passthrough open of `ino` took.
    pub fn release_backing(&self, ino: Ino) {
        self.clones.release(ino);
    }

    /// A job: makes `ino`'s clone, a reflink where allowed and possible,
    /// else a memory copy within the budget. Only an abandoned request is
    /// an error; a clone that cannot be made leaves the file buffered.
    fn make_clone(
        &self,
        ino: Ino,
        node: Node,
        cancel: &Cancel,
    ) -> std::result::Result<(), FsError> {
        if self.clones.take(ino).is_some() {
            self.clones.release(ino);
            return Ok(());
        }
        let len = self.size(&node);
        // A raw blob's range: shared (reflink) or copied by the kernel,
        // then dropped from the page cache.
        let src = self.raw_source(node);
        if self.clones.may_reflink() {
            if let Some(src) = &src {
                match crate::sys::map_read(|| self.reflink(src, len)) {
                    Ok(b) => {
                        self.clones.reflink_result(true, &"");
                        log::debug!("passthrough: inode {ino}: reflink clone of {len} bytes");
                        self.clones.insert(ino, b);
                        return Ok(());
                    }
                    Err(e) => self.clones.reflink_result(false, &e),
                }
            }
        }
        if !self.clones.may_copy() {
            return Ok(());
        }
        if !self.clones.reserve_memory(len) {
            log::debug!("passthrough: inode {ino} ({len} bytes) does not fit the clone budget");
            return Ok(());
        }
        let copied = match &src {
            Some(src) => self.copy_raw(ino, src, len, cancel).or_else(|e| match e {
                Error::Interrupted => Err(e),
                e => {
                    log::debug!(
                        "passthrough: inode {ino}: in-kernel copy failed ({e}); copying by reads"
                    );
                    self.copy(ino, node, len, cancel)
                }
            }),
            None => self.copy(ino, node, len, cancel),
        };
        match copied {
            Ok(b) => {
                log::debug!("passthrough: inode {ino}: memory clone of {len} bytes");
                self.clones.insert(ino, b);
                if let Some(src) = &src {
                    // The bytes live in the clone now; the model's pages
                    // for them need not stay cached twice.
                    crate::sys::drop_cache(src.file, src.offset, src.len);
                }
                Ok(())
            }
            Err(e) => {
                self.clones.unreserve_memory(len);
                if let Error::Interrupted = e {
                    return Err(FsError::Interrupted);
                }
                log::warn!("passthrough: inode {ino}: no memory clone: {e}");
                self.clones.fail(ino);
                Ok(())
            }
        }
    }

    /// A memory clone of `node`: its bytes as the tree serves them.
    fn copy(&self, ino: Ino, node: Node, len: u64, cancel: &Cancel) -> Result<Backing> {
        let file = (self.clones.memory_file(&format!("ztfs-{ino}"), len))
            .map_err(|e| Error::io("memory clone", e))?;
        let mut at = 0;
        while at < len {
            cancel.keep_going()?;
            let want = (len - at).min(u64::from(CHUNK)) as u32;
            let data = self.read_node(node, at, want).map_err(|e| {
                Error::Unsupported(format!("reading it for the clone failed ({e:?})"))
            })?;
            if data.is_empty() {
                return Err(Error::Unsupported(format!(
                    "it ended at {at} of {len} bytes"
                )));
            }
            file.write_all_at(&data, at)
                .map_err(|e| Error::io("memory clone", e))?;
            at += data.len() as u64;
        }
        Ok(Backing {
            file,
            len,
            kind: Kind::Memory,
        })
    }

    /// A memory clone of a raw blob (after its header): checked like a
    /// reflink's, then copied by the kernel from the model's page cache
    /// (`sendfile`), several times faster than reads of the tree.
    fn copy_raw(
        &self,
        ino: Ino,
        src: &RawSource<'_>,
        len: u64,
        cancel: &Cancel,
    ) -> Result<Backing> {
        let io = |e| Error::io("memory clone", e);
        Self::checked(src)?;
        let file = (self.clones.memory_file(&format!("ztfs-{ino}"), len)).map_err(io)?;
        let h = src.header.len() as u64;
        file.write_all_at(&src.header, 0).map_err(io)?;
        let mut at = 0;
        while at < src.len {
            cancel.keep_going()?;
            let n = (src.len - at).min(SEND_CHUNK);
            crate::sys::send_range(src.file, src.offset + at, n, &file, h + at).map_err(io)?;
            at += n;
        }
        debug_assert_eq!(h + src.len, len);
        Ok(Backing {
            file,
            len,
            kind: Kind::Memory,
        })
    }

    /// The blob's bytes, after checking that the file still holds them
    /// and, for a type with content rules, that they keep them: the
    /// kernel serves a clone unchecked.
    fn checked<'a>(src: &RawSource<'a>) -> Result<&'a [u8]> {
        crate::tree::content::check_live(src.store, src.offset, src.len)?;
        let map = src.store.whole("a clone")?;
        let bytes = &map[src.offset as usize..(src.offset + src.len) as usize];
        if let Some(rules) = &src.rules {
            rules.check_range(0, bytes)?;
        }
        Ok(bytes)
    }

    /// Where a clone of `node` can take its bytes straight from the file:
    /// a raw part's blob (or a `.npy` of one, after its header); `None`
    /// for decoded files.
    fn raw_source(&self, node: Node) -> Option<RawSource<'_>> {
        let (object, part, header) = match node {
            Node::Raw { object, part } => (object, part, Vec::new()),
            Node::Part { object, part } => (object, part, Vec::new()),
            Node::Npy { object, part } if part != VIEW => {
                let form = self.npy_of(object, part).ok()?;
                (object, part, crate::tree::npy::header(&form).ok()?)
            }
            Node::Npy { .. }
            | Node::Dir(_)
            | Node::Manifest
            | Node::Digest
            | Node::Config
            | Node::Meta { .. }
            | Node::Stats { .. }
            | Node::View { .. }
            | Node::Safetensors { .. }
            | Node::SafetensorsIndex
            // Served from the folder's file by reads (see docs/folders.md).
            | Node::FolderFile { .. } => return None,
        };
        let raw = matches!(node, Node::Raw { .. });
        if !raw && !matches!(self.decoder(object, part), Ok(Encoding::Raw)) {
            return None;
        }
        let (o, p) = self.part(object, part);
        let store = self.model.store_of(p).ok()?;
        let file = store.file()?;
        let rules = ContentCheck::new(o, p);
        Some(RawSource {
            store,
            file,
            offset: p.blob.offset,
            len: p.blob.length,
            header,
            rules: (!raw && rules.applies()).then_some(rules),
        })
    }

    /// A reflink clone: the header written, the blob's whole blocks
    /// shared, a last partial block shared where the blob reaches the end
    /// of its file and copied otherwise.
    fn reflink(&self, src: &RawSource<'_>, len: u64) -> Result<Backing> {
        const BLOCK: u64 = 4096;
        let io = |e| Error::io("reflink clone", e);
        let bytes = Self::checked(src)?;
        let dir = match &self.clones.policy.dir {
            Some(d) => d.clone(),
            None => (src.store.path().parent())
                .map(|p| {
                    if p.as_os_str().is_empty() {
                        ".".into()
                    } else {
                        p.to_path_buf()
                    }
                })
                .unwrap_or_else(|| ".".into()),
        };
        let dst = crate::sys::unnamed_file_in(&dir).map_err(io)?;
        let h = src.header.len() as u64;
        dst.write_all_at(&src.header, 0).map_err(io)?;
        let to_end = src.offset + src.len == src.store.len();
        let shared = if to_end {
            src.len
        } else {
            src.len / BLOCK * BLOCK
        };
        if shared > 0 {
            crate::sys::clone_range(src.file, src.offset, shared, &dst, h).map_err(io)?;
        }
        dst.write_all_at(&bytes[shared as usize..], h + shared)
            .map_err(io)?;
        dst.set_len(h + src.len).map_err(io)?;
        debug_assert_eq!(h + src.len, len);
        Ok(Backing {
            file: dst,
            len,
            kind: Kind::Reflink,
        })
    }
}
