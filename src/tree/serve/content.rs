//! What the files of the tree hold, and how each is opened and read.
//!
//! Raw parts are served straight from the memory map (a borrowed slice that
//! the adapter writes to the kernel without a copy). zstd-seekable parts are
//! decoded by frame, through a bounded cache shared by all readers. Virtual
//! files (manifest.json, digest, meta.json) are rendered from the manifest.

use crate::tree::build::part_files;
use crate::tree::spool::{spool, Spooled};
use crate::tree::{FsError, Ino, Node, Tree};
use std::sync::Arc;

use crate::decode::{ContentCheck, Encoding};
use crate::format::{json, Object, Part};
use crate::report;
use crate::store::{Reach, Reader};

/// Bytes returned by a read: borrowed from the map or owned.
pub enum Data<'a> {
    /// A slice of the backing file's map.
    Borrowed(&'a [u8]),
    /// Decoded or rendered bytes.
    Owned(Vec<u8>),
    /// A range of a shared buffer (a cached decoded frame), not copied.
    Shared(Arc<Vec<u8>>, std::ops::Range<usize>),
}

impl std::ops::Deref for Data<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Data::Borrowed(b) => b,
            Data::Owned(v) => v,
            Data::Shared(v, r) => &v[r.clone()],
        }
    }
}

/// `[offset, offset + size)` clipped to a file of `len` bytes.
pub(in crate::tree) fn clip(len: u64, offset: u64, size: u32) -> std::ops::Range<usize> {
    let start = offset.min(len);
    let end = offset.saturating_add(u64::from(size)).min(len);
    start as usize..end as usize
}

/// manifest.json is kept in memory up to this size (and a quarter of the
/// cache's budget), else in a temporary file.
const MANIFEST_IN_MEMORY: usize = 4 << 20;

impl Tree {
    pub(in crate::tree) fn object(&self, i: u32) -> &Object {
        &self
            .model
            .manifest()
            .expect("objects imply a manifest")
            .objects[i as usize]
    }

    pub(in crate::tree) fn part(&self, o: u32, p: u32) -> (&Object, &Part) {
        let obj = self.object(o);
        (obj, &obj.parts[p as usize])
    }

    pub(in crate::tree) fn size(&self, node: &Node) -> u64 {
        match *node {
            Node::Dir(_) => 0,
            Node::Manifest => self.manifest_json_len(),
            Node::Digest => self.digest.as_ref().map_or(0, |d| d.len() as u64),
            Node::Config => self
                .transformers
                .as_ref()
                .map_or(0, |f| f.config.len() as u64),
            Node::Meta { object } => {
                self.frames.meta(object, || self.meta_json(object)).len() as u64
            }
            Node::Stats { .. } => crate::tree::serve::stats::stats_json_len(),
            Node::View { object } => self.view_of(object).map_or(0, |v| v.1),
            Node::Part { object, part } => self.part(object, part).1.decoded_size(),
            Node::Raw { object, part } => self.part(object, part).1.blob.length,
            Node::Npy { object, part } => self.npy_size(object, part),
            Node::Safetensors { .. } | Node::SafetensorsIndex => self.safetensors_size(node),
            Node::FolderFile { file } => self.folder_file(file).map_or(0, |f| f.len),
        }
    }

    /// The size of manifest.json, found without keeping its text (a pass
    /// over the whole manifest: the mount does it before it is mounted).
    pub fn manifest_json_len(&self) -> u64 {
        if let Some(text) = self.manifest_json.get() {
            return text.len();
        }
        *self.manifest_json_len.get_or_init(|| {
            let len = report::text_len(|out| self.write_manifest_json(out));
            // The pieces parsed on the way were freed; give their memory back.
            crate::sys::trim_heap();
            len.unwrap_or_else(|e| {
                log::error!("manifest.json: {e}");
                0
            })
        })
    }

    /// The text of manifest.json, written on its first read from the
    /// manifest as the file holds it now, and kept ([`spool`]: in memory
    /// when small, else in a temporary file); EIO if it no longer can be.
    pub(in crate::tree) fn manifest_json(&self) -> Result<&Spooled, FsError> {
        if let Some(text) = self.manifest_json.get() {
            return Ok(text);
        }
        let in_memory = (self.frames.budget() / 4).min(MANIFEST_IN_MEMORY as u64) as usize;
        let text = spool(in_memory, |out| self.write_manifest_json(out)).map_err(|e| {
            log::error!("manifest.json: {e}");
            FsError::Io
        })?;
        crate::sys::trim_heap();
        Ok(self.manifest_json.get_or_init(|| text))
    }

    /// Writes manifest.json: a zTensor manifest from its bytes as the
    /// file holds them now (the mount keeps its objects, not its bytes).
    fn write_manifest_json(&self, out: &mut dyn json::Sink) -> crate::error::Result<()> {
        report::write_manifest_json(&self.model, out)
    }

    /// The decoder of a part, resolved on its first use: its shard, its
    /// seek table. Quick (no pass over the part's bytes), so it runs on the
    /// worker thread that asks. A failure is logged once and every later
    /// open of that part fails with EIO.
    pub(in crate::tree) fn decoder(&self, object: u32, part: u32) -> Result<&Encoding, FsError> {
        let key = self.part_base[object as usize] + part;
        let slot = self.parts[key as usize].decoder();
        let mut first = false;
        let state = slot.get_or_init(|| {
            first = true;
            let (o, p) = self.part(object, part);
            let state = crate::sys::map_read(|| {
                let blob = self.live_blob(p)?;
                Encoding::of_from(p, &blob)
            })
            .map_err(|e| {
                self.fail((key, "open"), o, p, &e);
            });
            Box::new(state)
        });
        state.as_ref().map_err(|()| {
            // Logged in full when first found; later uses are counted.
            if !first {
                let (o, p) = self.part(object, part);
                self.fail((key, "open"), o, p, &"unavailable");
            }
            FsError::Io
        })
    }

    /// Logs a failure of part `p` of `o` once (then counts it), naming the
    /// backing file, and gives the error a reader gets.
    pub(in crate::tree) fn fail(
        &self,
        key: crate::tree::failures::Key,
        o: &Object,
        p: &Part,
        e: &dyn std::fmt::Display,
    ) -> FsError {
        self.failures.report(key, || {
            let file = self.model.root().name();
            let place = match &p.blob.shard {
                None => file,
                Some(s) => format!("{file} (shard {s:?})"),
            };
            format!("{place}: {:?}/{:?}: {}: {e}", o.name, p.name, key.1)
        });
        FsError::Io
    }

    /// A part's stored bytes, to be read by range, after checking that
    /// the backing file still holds them: a map read past the end of a
    /// file truncated in place would fault. (A truncation racing this
    /// check is caught by [`crate::sys::map_read`].)
    pub(in crate::tree) fn live_blob(
        &self,
        p: &Part,
    ) -> crate::error::Result<crate::store::Blob<'_>> {
        let blob = self.model.blob(p)?;
        check_live(blob.store, p.blob.offset, p.blob.length)?;
        Ok(blob)
    }

    /// Reads up to `size` bytes of `node` at `offset`, short at the end,
    /// from what is at hand: the map, a cached frame or view, a rendered
    /// file, or a remote object's blocks, fetched if need be. Views not
    /// prepared yet are the caller's (`requests`) business.
    pub(in crate::tree) fn read_node(
        &self,
        node: Node,
        offset: u64,
        size: u32,
    ) -> Result<Data<'_>, FsError> {
        self.read_node_for(node, offset, size, Reader::default())
    }

    /// [`Tree::read_node`] for `reader`: a remote model's read-ahead
    /// follows each reader on its own.
    pub(in crate::tree) fn read_node_for(
        &self,
        node: Node,
        offset: u64,
        size: u32,
        reader: Reader,
    ) -> Result<Data<'_>, FsError> {
        match self.read_reach(node, offset, size, Reach::WAIT.by(reader))? {
            Some(data) => Ok(data),
            None => {
                log::error!("a read that may wait came back without its bytes");
                Err(FsError::Io)
            }
        }
    }

    /// [`Tree::read_node`], going for a remote model's stored bytes only as
    /// far as `reach` says: at hand only ([`Reach::at_hand`]), `None` where
    /// they are not held now (a job reads them then). Other files are read
    /// as `read_node` reads them: the caller asks at hand only of stored
    /// bytes ([`Tree::read_fetched`]).
    pub(in crate::tree) fn read_reach(
        &self,
        node: Node,
        offset: u64,
        size: u32,
        reach: Reach,
    ) -> Result<Option<Data<'_>>, FsError> {
        let data = match node {
            Node::Dir(_) => Err(FsError::IsDir),
            Node::Manifest => self.manifest_json()?.read(offset, size).map_err(|e| {
                log::error!("manifest.json: {e}");
                FsError::Io
            }),
            Node::Digest => {
                let b = self.digest.as_deref().unwrap_or_default();
                Ok(Data::Borrowed(&b[clip(b.len() as u64, offset, size)]))
            }
            Node::Config => {
                let b = self
                    .transformers
                    .as_ref()
                    .map_or(&[][..], |f| f.config.as_bytes());
                Ok(Data::Borrowed(&b[clip(b.len() as u64, offset, size)]))
            }
            Node::Meta { object } => {
                let b = self.frames.meta(object, || self.meta_json(object));
                let r = clip(b.len() as u64, offset, size);
                Ok(Data::Shared(b, r))
            }
            // Waited for (`waits`): gone only if the cache let it go since,
            // and then the read waits for it again (`read_resolved`).
            Node::Stats { object } => match self.frames.stats(object) {
                Some(b) => {
                    let r = clip(b.len() as u64, offset, size);
                    Ok(Data::Shared(b, r))
                }
                None => Err(FsError::Io),
            },
            Node::Raw { object, part } => {
                return self.read_stored(object, part, offset, size, false, reach)
            }
            Node::View { object } => self.read_view(object, offset, size),
            Node::Part { object, part } => match self.decoder(object, part)? {
                Encoding::Raw => return self.read_stored(object, part, offset, size, true, reach),
                Encoding::ZstdSeekable(_) => self.read_frames(object, part, offset, size),
            },
            Node::Npy { object, part } => return self.read_npy(object, part, offset, size, reach),
            Node::Safetensors { .. } | Node::SafetensorsIndex => {
                self.read_safetensors(&node, offset, size, reach.reader)
            }
            Node::FolderFile { file } => self.read_folder_file(file, offset, size),
        };
        data.map(Some)
    }

    /// A range of a part's stored bytes, straight from the map. The backing
    /// file's length is checked first: a file truncated in place at an
    /// offset inside a page would otherwise give zeros for the rest of that
    /// page instead of an error. With `decoded`, the bytes are the part's
    /// decoded bytes, and the content rules of its type are applied to the
    /// range served (a bool range is checked as it is served).
    fn read_stored(
        &self,
        object: u32,
        part: u32,
        offset: u64,
        size: u32,
        decoded: bool,
        reach: Reach,
    ) -> Result<Option<Data<'_>>, FsError> {
        let (o, p) = self.part(object, part);
        let key = self.part_base[object as usize] + part;
        let r = clip(p.blob.length, offset, size);
        let bytes = (|| {
            let store = self.model.store_of(p)?;
            check_live(store, p.blob.offset, r.end as u64)?;
            store.blob_piece(
                p.blob.offset,
                p.blob.length,
                p.blob.offset + r.start as u64,
                r.len() as u64,
                reach,
            )
        })()
        .map_err(|e: crate::error::Error| self.fail((key, "read"), o, p, &e))?;
        let bytes = match bytes {
            None => return Ok(None),
            Some(crate::store::Piece::Borrowed(b)) => Data::Borrowed(b),
            Some(crate::store::Piece::Shared(buf, range)) => Data::Shared(buf, range),
        };
        let rules = ContentCheck::new(o, p);
        if decoded && rules.applies() {
            crate::sys::map_read(|| rules.check_range(r.start as u64, &bytes))
                .map_err(|e| self.fail((key, "content"), o, p, &e))?;
        }
        Ok(Some(bytes))
    }

    fn read_frames(
        &self,
        object: u32,
        part: u32,
        offset: u64,
        size: u32,
    ) -> Result<Data<'_>, FsError> {
        let (o, p) = self.part(object, part);
        let Ok(Encoding::ZstdSeekable(table)) = self.decoder(object, part) else {
            return Err(FsError::Io);
        };
        let r = clip(p.decoded_size(), offset, size);
        let mut pieces = Vec::new();
        let key = self.part_base[object as usize] + part;
        let blob = self
            .model
            .blob(p)
            .map_err(|e| self.fail((key, "read"), o, p, &e))?;
        let rules = ContentCheck::new(o, p);
        let mut pos = r.start as u64;
        while pos < r.end as u64 {
            let i = table.frame_at(pos);
            let f = table.frame(i);
            let frame = self
                .frames
                .get_or_decode((key, i as u32), |buf| {
                    decode_checked(self, p, &rules, table, &blob, i, buf)
                })
                .map_err(|e| {
                    let e = format!("frame {i}: {e}");
                    self.fail((key, "frame"), o, p, &e)
                })?;
            let from = (pos - f.decoded_offset) as usize;
            let to =
                ((r.end as u64).min(f.decoded_offset + f.decoded_len) - f.decoded_offset) as usize;
            pos = f.decoded_offset + to as u64;
            pieces.push((frame, from..to));
        }
        // A read within one frame is served from the cached frame itself.
        if pieces.len() == 1 {
            let (frame, range) = pieces.pop().expect("one piece");
            return Ok(Data::Shared(frame, range));
        }
        let mut out = Vec::with_capacity(r.len());
        for (frame, range) in &pieces {
            out.extend_from_slice(&frame[range.clone()]);
        }
        Ok(Data::Owned(out))
    }

    /// Validates the seek table of every compressed part (mount time), so a
    /// broken one is logged before anyone reads it and a valid one is ready
    /// for the part's first open; a broken part fails to open with EIO.
    /// Returns how many are broken.
    pub fn check_encodings(&self) -> usize {
        let Some(m) = self.model.manifest() else {
            return 0;
        };
        let mut bad = 0;
        for (i, o) in m.objects.iter().enumerate() {
            for (j, p) in o.parts.iter().enumerate() {
                if p.encoding.is_none() {
                    continue;
                }
                let Ok(blob) = self.model.blob(p) else {
                    continue;
                };
                // Kept for the part's first open, which then does no work
                // in proportion to the part on a FUSE worker thread.
                let key = self.part_base[i] + j as u32;
                let state = Encoding::of_from(p, &blob).map_err(|e| {
                    self.fail((key, "open"), o, p, &e);
                    bad += 1;
                });
                let _ = self.parts[key as usize].decoder().set(Box::new(state));
            }
        }
        bad
    }

    /// After a read of `node` has been answered: if it continued where the
    /// last read of that compressed part ended, decode the frame after it
    /// into the cache, so a sequential reader finds it ready. Random reads
    /// decode nothing ahead.
    pub(in crate::tree) fn read_ahead(&self, node: Node, offset: u64, size: u32) {
        let (object, part, offset) = match node {
            Node::Part { object, part } => (object, part, offset),
            Node::Npy { object, part } if part != crate::tree::VIEW => {
                let h = self.npy_header_len(object, part);
                match offset.checked_sub(h) {
                    Some(offset) => (object, part, offset),
                    None => return,
                }
            }
            Node::Npy { .. }
            | Node::Dir(_)
            | Node::Manifest
            | Node::Digest
            | Node::Config
            | Node::Meta { .. }
            | Node::Stats { .. }
            | Node::View { .. }
            | Node::Raw { .. }
            | Node::Safetensors { .. }
            | Node::SafetensorsIndex
            | Node::FolderFile { .. } => return,
        };
        let key = self.part_base[object as usize] + part;
        let p = self.part(object, part).1;
        let end = offset.saturating_add(u64::from(size)).min(p.decoded_size());
        let prev = self
            .last_end(key)
            .map(|last| last.swap(end, std::sync::atomic::Ordering::Relaxed));
        let Ok(Encoding::ZstdSeekable(table)) = self.decoder(object, part) else {
            return;
        };
        if prev != Some(offset) || end == 0 {
            return;
        }
        // The reader has moved past the frame before this read's: the kernel
        // holds those bytes now (or, with direct I/O, will not ask again
        // soon), so its cache slot is better spent on frames ahead.
        if let Some(passed) = table.frame_at(offset).checked_sub(1) {
            self.frames.forget((key, passed as u32));
        }
        let next = table.frame_at(end - 1) + 1;
        let Ok(blob) = self.model.blob(p) else {
            return;
        };
        let (o, p) = self.part(object, part);
        let rules = ContentCheck::new(o, p);
        if next < table.len() {
            self.frames.prefetch((key, next as u32), |buf| {
                decode_checked(self, p, &rules, table, &blob, next, buf)
            });
        }
    }

    /// The object's `meta.json` (`report::meta`), with what the tree serves
    /// of it.
    pub(in crate::tree) fn meta_json(&self, object: u32) -> Vec<u8> {
        let o = self.object(object);
        let files = self.files_of(object);
        let npy = |part: u32, files: &[String]| {
            let (file, form) = self.npy_info(object, part, files)?;
            Ok(report::meta::Npy {
                file,
                descr: form.descr,
                shape: form.shape,
            })
        };
        let view = self.view_of(object).filter(|_| self.has_view(object));
        let view_files: Vec<String> = view.map(|v| vec![v.0.to_string()]).unwrap_or_default();
        let served = report::meta::Served {
            npy: (0..o.parts.len() as u32)
                .map(|j| npy(j, &files[j as usize]))
                .collect(),
            refused: (0..o.parts.len())
                .map(|j| {
                    let input = self.model.input();
                    (!part_files(input, o, j).0).then(|| match input.part_files(o, j) {
                        // The format's choice, not a refusal to decode.
                        Some(_) => format!(
                            "the format serves this part as its stored bytes only ({}.raw)",
                            o.parts[j].name
                        ),
                        None => refusal(o, &o.parts[j]),
                    })
                })
                .collect(),
            view,
            view_npy: npy(crate::tree::VIEW, &view_files),
            safetensors: self.safetensors_info(object),
            values: self.values_info(object),
            stats: self.stats_source(object).is_some(),
            files,
        };
        report::meta::meta_json(&self.model, object, &served)
    }

    /// What `object`'s values are dequantized from, or why a quantized
    /// tensor has none (`report::meta::Served::values`).
    pub(in crate::tree) fn values_info(&self, object: u32) -> Result<Option<String>, String> {
        let o = self.object(object);
        match self.model.tensor_data(object) {
            crate::model::TensorData::Computed { view, .. } => {
                Ok(view.dequantized_from().map(str::to_string))
            }
            crate::model::TensorData::Absent(why) if o.layout.starts_with("gguf.") => Err(why),
            _ => match self.view_of(object) {
                Some((crate::decode::views::DEQUANTIZED_VIEW, _)) if self.has_view(object) => {
                    // A ggml block type by its name, as the blocks computed
                    // from the file say it.
                    let ggml = crate::format::profiles::ggml_type_of(&o.layout);
                    Ok(Some(ggml.unwrap_or(&o.layout).to_string()))
                }
                _ => Ok(None),
            },
        }
    }

    /// For each part of `object`, the names of the files serving it.
    fn files_of(&self, object: u32) -> Vec<Vec<String>> {
        let n = self.object(object).parts.len();
        let mut files = vec![Vec::new(); n];
        for (name, node) in self.object_files(object) {
            if let Node::Part { part, .. } | Node::Raw { part, .. } = node {
                files[part as usize].push(name.into_owned());
            }
        }
        files
    }

    /// Extended attributes of `ino`, as (name, value) pairs.
    pub fn xattrs(&self, ino: Ino) -> Result<Vec<(&'static str, String)>, FsError> {
        let (i, o, p) = match self.node(ino)? {
            Node::Npy {
                object,
                part: crate::tree::VIEW,
            } => (object, self.object(object), None),
            Node::Part { object, part }
            | Node::Raw { object, part }
            | Node::Npy { object, part } => {
                let (o, p) = self.part(object, part);
                (object, o, Some(p))
            }
            Node::Dir(d) => match self.dirs[d as usize].object() {
                Some(i) => (i, self.object(i), None),
                None => return Ok(Vec::new()),
            },
            Node::Manifest
            | Node::Digest
            | Node::Config
            | Node::Meta { .. }
            | Node::Stats { .. }
            | Node::View { .. }
            | Node::Safetensors { .. }
            | Node::SafetensorsIndex
            | Node::FolderFile { .. } => return Ok(Vec::new()),
        };
        let shape = format!(
            "[{}]",
            o.shape
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        );
        let mut out = vec![
            ("user.zt.object", o.name.to_string()),
            ("user.zt.shape", shape),
            ("user.zt.layout", o.layout.to_string()),
        ];
        if let Some(p) = p {
            out.push(("user.zt.part", p.name.to_string()));
            // A Hurray tensor's `data` is of its element type; its buffers
            // are bytes.
            let native = self.model.input().elem_name(i as usize, &p.name);
            let dtype = native.unwrap_or(p.ty.dtype.name());
            out.push(("user.zt.dtype", dtype.to_string()));
            if let Some(t) = &p.ty.logical {
                out.push(("user.zt.type", t.to_string()));
            }
            if let Some(e) = &p.encoding {
                out.push(("user.zt.encoding", e.to_string()));
            }
            if let Some(d) = &p.digest {
                out.push(("user.zt.digest", d.to_string()));
            }
        }
        Ok(out)
    }
}

/// Fails when the backing file no longer holds `[offset, end)` of the map
/// (it was truncated in place after it was mapped).
pub(in crate::tree) fn check_live(
    store: &crate::store::Store,
    offset: u64,
    len: u64,
) -> crate::error::Result<()> {
    let end = offset.saturating_add(len);
    let live = store.live_len()?;
    if live < end {
        return Err(crate::error::Error::io(
            store.name(),
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "the backing file shrank to {live} bytes; the read needs [{offset}, {end})"
                ),
            ),
        ));
    }
    Ok(())
}

/// Decodes frame `i` of a compressed part into `buf`, after checking the
/// backing file still holds the part (decoding reads the map in user
/// space, where a page past the end of a truncated file would fault), and
/// applies the content rules of the part's type to the frame's bytes, so
/// only checked frames enter the cache.
fn decode_checked(
    tree: &Tree,
    p: &Part,
    rules: &ContentCheck<'_>,
    table: &crate::decode::zstd_seekable::SeekTable,
    stored: &dyn crate::format::Ranges,
    i: usize,
    buf: Vec<u8>,
) -> crate::error::Result<Vec<u8>> {
    tree.live_blob(p)?;
    let frame = crate::sys::map_read(|| table.decode_frame_from(stored, i, buf))?;
    if rules.applies() {
        rules.check_range(table.frame(i).decoded_offset, &frame)?;
    }
    Ok(frame)
}

pub(in crate::tree) fn refusal(o: &Object, p: &Part) -> String {
    match crate::decode::check_interpretable(o, p) {
        Err(e) => e.to_string(),
        Ok(()) => format!(
            "encoding {:?} is not one this reader knows",
            p.encoding.as_deref().unwrap_or("")
        ),
    }
}
