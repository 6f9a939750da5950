//! What the files of the tree hold, and how each is opened and read.
//!
//! Raw parts are served straight from the memory map (a borrowed slice that
//! the adapter writes to the kernel without a copy). zstd-seekable parts are
//! decoded by frame, through a bounded cache shared by all readers. Virtual
//! files (manifest.json, digest, meta.json) are rendered from the manifest.

use super::build::part_files;
use super::{FsError, Ino, Node, OpenMode, Tree};
use std::sync::Arc;

use crate::decode::{views, ContentCheck, Encoding};
use crate::format::cbor::{self, Value};
use crate::format::profiles::{self, Layout};
use crate::format::{json, Object, Part};
use crate::read;
use crate::report;

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
fn clip(len: u64, offset: u64, size: u32) -> std::ops::Range<usize> {
    let start = offset.min(len);
    let end = offset.saturating_add(u64::from(size)).min(len);
    start as usize..end as usize
}

impl Tree {
    fn object(&self, i: u32) -> &Object {
        &self
            .model
            .manifest()
            .expect("objects imply a manifest")
            .objects[i as usize]
    }

    fn part(&self, o: u32, p: u32) -> (&Object, &Part) {
        let obj = self.object(o);
        (obj, &obj.parts[p as usize])
    }

    pub(super) fn size(&self, node: &Node) -> u64 {
        match *node {
            Node::Dir(_) => 0,
            Node::Manifest => self.manifest_json_len(),
            Node::Digest => self.digest.as_ref().map_or(0, |d| d.len() as u64),
            Node::Meta { object } => self.meta_json(object).len() as u64,
            Node::View { object } => views::view(self.object(object)).map_or(0, |v| v.1),
            Node::Part { object, part } => self.part(object, part).1.decoded_size(),
            Node::Raw { object, part } => self.part(object, part).1.blob.length,
        }
    }

    /// The size of manifest.json, found without keeping its text.
    fn manifest_json_len(&self) -> u64 {
        if let Some(b) = self.manifest_json.get() {
            return b.len() as u64;
        }
        *self.manifest_json_len.get_or_init(|| {
            let len = self
                .model
                .read_manifest_bytes()
                .and_then(|m| report::manifest_json_len(m.as_deref()));
            // The parsed pieces were freed; give their memory back.
            crate::sys::trim_heap();
            len.unwrap_or_else(|e| {
                log::error!("manifest.json: {e}");
                0
            })
        })
    }

    /// The text of manifest.json, rendered on its first read from the
    /// manifest as the file holds it now; EIO if it no longer can.
    fn manifest_json(&self) -> Result<&[u8], FsError> {
        if let Some(b) = self.manifest_json.get() {
            return Ok(b);
        }
        let text = self
            .model
            .read_manifest_bytes()
            .and_then(|m| report::manifest_json_of(m.as_deref()))
            .map_err(|e| {
                log::error!("manifest.json: {e}");
                FsError::Io
            })?;
        let b = self.manifest_json.get_or_init(|| {
            let mut b = text.into_bytes();
            b.shrink_to_fit();
            // The parsed manifest behind the text was several times its
            // size; give that memory back.
            crate::sys::trim_heap();
            b
        });
        Ok(b)
    }

    /// Opens `ino`. A part is checked on its first open: its shard resolved,
    /// its seek table validated, its content rules applied, and with
    /// `--verify` its digest checked. A failure is logged once and every
    /// open of that part fails.
    pub fn open(&self, ino: Ino) -> Result<OpenMode, FsError> {
        let node = self.node(ino)?;
        match *node {
            Node::Dir(_) => return Err(FsError::IsDir),
            Node::Part { object, part } => {
                self.decoder(object, part)?;
            }
            Node::Raw { object, part } => {
                let (o, p) = self.part(object, part);
                self.model.stored(p).map_err(|e| {
                    log::error!("{:?}/{:?}: stored bytes unavailable: {e}", o.name, p.name);
                    FsError::Io
                })?;
            }
            Node::View { object } => {
                self.view(object)?;
            }
            Node::Manifest | Node::Digest | Node::Meta { .. } => {}
        }
        Ok(OpenMode {
            keep_cache: !self.opts.direct_io,
            direct_io: self.opts.direct_io,
        })
    }

    fn decoder(&self, object: u32, part: u32) -> Result<&Encoding, FsError> {
        let slot = &self.parts[(self.part_base[object as usize] + part) as usize];
        let state = slot.get_or_init(|| {
            let (o, p) = self.part(object, part);
            Box::new(
                self.prepare(o, p)
                    .map_err(|e| log::error!("{:?}/{:?}: {e}", o.name, p.name)),
            )
        });
        (**state).as_ref().map_err(|()| FsError::Io)
    }

    /// The stored bytes of a part, after checking that the backing file
    /// still holds them: a map read past the end of a file truncated in
    /// place would fault. (A truncation racing this check is not covered.)
    fn live_stored(&self, p: &Part) -> crate::error::Result<&[u8]> {
        let store = self.model.store_of(p)?;
        let end = p.blob.offset + p.blob.length;
        let live = store.live_len()?;
        if live < end {
            return Err(crate::error::Error::io(
                store.path().display().to_string(),
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("the backing file shrank to {live} bytes; the part ends at {end}"),
                ),
            ));
        }
        self.model.stored(p)
    }

    /// Runs `f`, which reads the backing file's map in user space, so that
    /// a file truncated in place between the length check and the read
    /// gives an error instead of killing the daemon (see `sys::guarded`).
    fn map_read<T>(f: impl FnOnce() -> crate::error::Result<T>) -> crate::error::Result<T> {
        crate::sys::guarded(f).unwrap_or_else(|| {
            Err(crate::error::Error::io(
                "backing file",
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "truncated under a read"),
            ))
        })
    }

    fn prepare(&self, o: &Object, p: &Part) -> crate::error::Result<Encoding> {
        Self::map_read(|| self.prepare_unguarded(o, p))
    }

    fn prepare_unguarded(&self, o: &Object, p: &Part) -> crate::error::Result<Encoding> {
        let stored = self.live_stored(p)?;
        let enc = Encoding::of(p, stored)?;
        if self.opts.verify {
            read::verify(&self.model, o, p, &mut |_| {})?;
            // The object's layout data rules (sparse indices), as
            // `check --verify` applies them.
            read::verify_object(&self.model, o)?;
        } else {
            let mut rules = ContentCheck::new(o, p);
            if rules.applies() {
                enc.stream(stored, &mut |c| rules.update(c))?;
                rules.finish()?;
            }
        }
        Ok(enc)
    }

    /// Reads up to `size` bytes of `ino` at `offset`; short at the end.
    pub fn read(&self, ino: Ino, offset: u64, size: u32) -> Result<Data<'_>, FsError> {
        let node = self.node(ino)?;
        match *node {
            Node::Dir(_) => Err(FsError::IsDir),
            Node::Manifest => {
                let b = self.manifest_json()?;
                Ok(Data::Borrowed(&b[clip(b.len() as u64, offset, size)]))
            }
            Node::Digest => {
                let b = self.digest.as_deref().unwrap_or_default();
                Ok(Data::Borrowed(&b[clip(b.len() as u64, offset, size)]))
            }
            Node::Meta { object } => {
                let b = self.meta_json(object);
                let r = clip(b.len() as u64, offset, size);
                Ok(Data::Owned(b[r].to_vec()))
            }
            Node::Raw { object, part } => self.read_stored(object, part, offset, size),
            Node::View { object } => {
                let v = self.view(object)?;
                let range = clip(v.len() as u64, offset, size);
                Ok(Data::Shared(v, range))
            }
            Node::Part { object, part } => match self.decoder(object, part)? {
                Encoding::Raw => self.read_stored(object, part, offset, size),
                Encoding::ZstdSeekable(_) => self.read_frames(object, part, offset, size),
            },
        }
    }

    /// A range of a part's stored bytes, straight from the map. Not checked
    /// against a truncated backing file: the kernel copies these bytes in
    /// the reply's writev, where a page past the end fails that write (the
    /// reader gets EIO) instead of faulting the daemon.
    fn read_stored(
        &self,
        object: u32,
        part: u32,
        offset: u64,
        size: u32,
    ) -> Result<Data<'_>, FsError> {
        let (o, p) = self.part(object, part);
        let stored = self.stored_for_read(o, p, offset, size)?;
        Ok(Data::Borrowed(&stored[clip(p.blob.length, offset, size)]))
    }

    /// A part's stored bytes for a read, or EIO with a log line saying why
    /// (a shard that cannot be resolved).
    fn stored_for_read(
        &self,
        o: &Object,
        p: &Part,
        offset: u64,
        size: u32,
    ) -> Result<&[u8], FsError> {
        self.model.stored(p).map_err(|e| {
            log::error!("{:?}/{:?}: read [{offset}, +{size}): {e}", o.name, p.name);
            FsError::Io
        })
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
        let stored = self.stored_for_read(o, p, offset, size)?;
        let key = self.part_base[object as usize] + part;
        let mut pos = r.start as u64;
        while pos < r.end as u64 {
            let i = table.frame_at(pos);
            let f = table.frames[i];
            let frame = self
                .frames
                .get_or_decode((key, i as u32), |buf| {
                    // Decoding reads the map in user space, where a page
                    // past the end of a truncated file would fault.
                    self.live_stored(p)?;
                    Self::map_read(|| table.decode_frame_into(stored, i, buf))
                })
                .map_err(|e| {
                    log::error!("{:?}/{:?}: frame {i}: {e}", o.name, p.name);
                    FsError::Io
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
    /// broken one is logged before anyone reads it; such a part fails to
    /// open with EIO. Returns how many are broken.
    pub fn check_encodings(&self) -> usize {
        let Some(m) = self.model.manifest() else {
            return 0;
        };
        let mut bad = 0;
        for o in &m.objects {
            for p in o.parts.iter().filter(|p| p.encoding.is_some()) {
                let Ok(stored) = self.model.stored(p) else {
                    continue;
                };
                if let Err(e) = Encoding::of(p, stored) {
                    log::error!(
                        "{:?}/{:?}: {e}; the part will fail with EIO",
                        o.name,
                        p.name
                    );
                    bad += 1;
                }
            }
        }
        bad
    }

    /// After a read of `ino` has been answered: if it continued where the
    /// last read of that compressed part ended, decode the frame after it
    /// into the cache, so a sequential reader finds it ready. Random reads
    /// decode nothing ahead.
    pub fn read_ahead(&self, ino: Ino, offset: u64, size: u32) {
        let Ok(&Node::Part { object, part }) = self.node(ino) else {
            return;
        };
        let key = self.part_base[object as usize] + part;
        let (_, p) = self.part(object, part);
        let end = offset.saturating_add(u64::from(size)).min(p.decoded_size());
        let prev = self.last_end[key as usize].swap(end, std::sync::atomic::Ordering::Relaxed);
        let Ok(Encoding::ZstdSeekable(table)) = self.decoder(object, part) else {
            return;
        };
        if prev != offset || end == 0 {
            return;
        }
        // The reader has moved past the frame before this read's: the kernel
        // holds those bytes now (or, with direct I/O, will not ask again
        // soon), so its cache slot is better spent on frames ahead.
        if let Some(passed) = table.frame_at(offset).checked_sub(1) {
            self.frames.forget((key, passed as u32));
        }
        let next = table.frame_at(end - 1) + 1;
        let Ok(stored) = self.model.stored(p) else {
            return;
        };
        if next < table.frames.len() {
            self.frames.prefetch((key, next as u32), |buf| {
                self.live_stored(p)?;
                Self::map_read(|| table.decode_frame_into(stored, next, buf))
            });
        }
    }

    /// The name of `object`'s view file, if it has one.
    fn view_name(&self, object: u32) -> Option<&'static str> {
        let entries = self.entries(self.dir(self.object_dirs[object as usize]).ok()?);
        entries
            .iter()
            .find_map(|e| match self.nodes[e.ino as usize - 1] {
                Node::View { .. } => views::view(self.object(object)).map(|v| v.0),
                _ => None,
            })
    }

    /// The rendered view of `object`, from the one-entry cache or rendered
    /// now (which applies the profile's data rules first).
    fn view(&self, object: u32) -> Result<Arc<Vec<u8>>, FsError> {
        let cache = || self.last_view.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((o, v)) = cache().as_ref() {
            if *o == object {
                return Ok(v.clone());
            }
        }
        let o = self.object(object);
        let render = || views::render(o, &|name| read::decoded_vec(&self.model, o, name));
        let bytes = Self::map_read(render).map_err(|e| {
            log::error!("{:?}: view: {e}", o.name);
            FsError::Io
        })?;
        let v = Arc::new(bytes);
        *cache() = Some((object, v.clone()));
        Ok(v)
    }

    /// The object's `meta.json`: true names, shape, layout, attributes, and
    /// per part its types, encoding, lengths, digest and the files serving it.
    pub(super) fn meta_json(&self, object: u32) -> Vec<u8> {
        let o = self.object(object);
        let attrs = o.attributes.as_deref().and_then(|a| cbor::parse(a).ok());
        let files = self.files_of(object);
        let t = Value::Text;
        let opt = report::opt_text;
        let refused: Vec<Option<String>> = (0..o.parts.len())
            .map(|j| (!part_files(o, j).0).then(|| refusal(o, &o.parts[j])))
            .collect();
        let parts = o
            .parts
            .iter()
            .enumerate()
            .map(|(j, p)| {
                Value::Map(vec![
                    (t("name"), t(&p.name)),
                    (t("dtype"), t(p.ty.dtype.name())),
                    (t("type"), opt(p.ty.logical.as_deref())),
                    (t("encoding"), opt(p.encoding.as_deref())),
                    (t("stored_length"), Value::Uint(p.blob.length)),
                    (t("decoded_length"), Value::Uint(p.decoded_size())),
                    (t("digest"), opt(p.digest.as_deref())),
                    (t("shard"), opt(p.blob.shard.as_deref())),
                    (
                        t("available"),
                        Value::Bool(report::part_available(&self.model, p)),
                    ),
                    (
                        t("files"),
                        Value::Array(files[j].iter().map(|f| t(f)).collect()),
                    ),
                    (t("refused"), opt(refused[j].as_deref())),
                ])
            })
            .collect();
        let mut doc = vec![
            (t("name"), t(&o.name)),
            (
                t("shape"),
                Value::Array(o.shape.iter().map(|&d| Value::Uint(d)).collect()),
            ),
            (t("layout"), t(&o.layout)),
            (t("attributes"), attrs.unwrap_or(Value::Null)),
            (t("parts"), Value::Array(parts)),
        ];
        let view = self.view_name(object);
        doc.push((t("view"), opt(view)));
        let layout = Layout::of(&o.layout);
        let table_note = profiles::gguf_table_mismatch(o);
        if let Layout::Gguf { ggml_type } = &layout {
            doc.push((t("ggml_type"), t(ggml_type)));
            doc.push((t("ggml_block_table"), opt(table_note.as_deref())));
        }
        let doc = Value::Map(doc);
        let mut s = String::new();
        json::to_json_pretty(&doc, &mut s);
        s.push('\n');
        s.into_bytes()
    }

    /// For each part of `object`, the names of the files serving it.
    fn files_of(&self, object: u32) -> Vec<Vec<String>> {
        let n = self.object(object).parts.len();
        let mut files = vec![Vec::new(); n];
        let Ok(dir) = self.dir(self.object_dirs[object as usize]) else {
            return files;
        };
        for e in self.entries(dir) {
            if let Node::Part { part, .. } | Node::Raw { part, .. } = self.nodes[e.ino as usize - 1]
            {
                files[part as usize].push(e.name.to_string());
            }
        }
        files
    }

    /// Extended attributes of `ino`, as (name, value) pairs.
    pub fn xattrs(&self, ino: Ino) -> Result<Vec<(&'static str, String)>, FsError> {
        let node = self.node(ino)?;
        let (o, p) = match *node {
            Node::Part { object, part } | Node::Raw { object, part } => {
                let (o, p) = self.part(object, part);
                (o, Some(p))
            }
            Node::Dir(d) => match self.dirs[d as usize].object {
                Some(i) => (self.object(i), None),
                None => return Ok(Vec::new()),
            },
            _ => return Ok(Vec::new()),
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
            out.push(("user.zt.dtype", p.ty.dtype.name().to_string()));
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

fn refusal(o: &Object, p: &Part) -> String {
    match crate::decode::check_interpretable(o, p) {
        Err(e) => e.to_string(),
        Ok(()) => format!(
            "encoding {:?} is not one this reader knows",
            p.encoding.as_deref().unwrap_or("")
        ),
    }
}
