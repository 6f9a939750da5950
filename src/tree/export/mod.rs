//! The exported files, for tools that know neither zTensor nor the
//! model's format: `<part>.npy`
//! beside each part or view numpy can describe, and the model's
//! `model.safetensors` (or its shards and index). Both are a generated
//! header followed by bytes served by range from the file the tree
//! already serves (the map, a cached frame, a view): nothing is copied.

pub(in crate::tree) mod forms;
pub(in crate::tree) mod npy;
pub mod safetensors;
pub mod transformers;

use crate::decode::views::{DENSE_VIEW, DEQUANTIZED_VIEW};
use crate::format::cbor::{self, Value};
use crate::format::json;
use crate::format::profiles::Layout;
use crate::format::types::DType;
use crate::model::TensorData;
use crate::report;
use crate::store::{Reach, Reader};
use crate::tree::safetensors::{Candidate, Plan, Segment};
use crate::tree::{Data, FsError, Node, Tree, VIEW};
use forms::{Elem, Npy, Shape};

/// The key of `__metadata__` listing the objects left out.
const LEFT_OUT_KEY: &str = "ztfs.left_out";
/// Left-out objects listed in `__metadata__` at most (its text goes in
/// the first shard's header); the count is always given.
const LEFT_OUT_TEXT_MAX: usize = 1 << 20;

/// What waits before a read can be answered.
#[derive(Debug, Clone, Copy)]
pub(in crate::tree) enum Wait {
    /// An object's view is prepared.
    View(u32),
    /// manifest.json is rendered.
    Manifest,
    /// The safetensors plan's tables are made.
    SafetensorsTables,
    /// A part is verified (`--verify`).
    Verified(u32, u32),
    /// A part's stored bytes are at hand (an `.npz` member inflated).
    AtHand(u32, u32),
    /// An object's statistics are computed.
    Stats(u32),
}

impl Tree {
    /// The file serving object `i`'s row-major tensor (a dense `data`
    /// part, a Hurray tensor's `data`), its element type and length; or
    /// why there is none.
    pub(in crate::tree) fn tensor_file(&self, i: u32) -> Result<(Node, Elem, u64), String> {
        let o = self.object(i);
        match self.model.tensor_data(i) {
            TensorData::Computed { view, .. } if view.dequantized_from().is_some() => {
                return self.values_file(i, view.len())
            }
            TensorData::Computed { view, elem } => {
                return Ok((Node::View { object: i }, elem, view.len()))
            }
            TensorData::Stored { part, elem } => {
                let node = Node::Part { object: i, part };
                return Ok((node, elem, o.parts[part as usize].blob.length));
            }
            TensorData::Absent(why) => return Err(why),
            TensorData::ByLayout => {}
        }
        if let Some((DEQUANTIZED_VIEW, len)) = self.view_of(i).filter(|_| self.has_view(i)) {
            return self.values_file(i, len);
        }
        if !matches!(Layout::of(&o.layout), Layout::Dense) {
            return Err(format!(
                "layout {:?} is not dense (its parts and any view are in its directory)",
                o.layout
            ));
        }
        let p = &o.parts[0];
        match (
            self.files_of_part(i, 0) & crate::tree::part::DECODED != 0,
            Elem::of_part(p),
        ) {
            (true, Some(elem)) => Ok((Node::Part { object: i, part: 0 }, elem, p.decoded_size())),
            _ => Err(format!(
                "its data part is not decoded: {}",
                crate::tree::content::refusal(o, p)
            )),
        }
    }

    /// The file serving quantized object `i`'s values (`len` bytes of
    /// f32) as a tensor of `model.safetensors`: its view, narrowed to the
    /// type `--dequantize` names ([`Tree::read_tensor`]); without it, why
    /// it is left out.
    fn values_file(&self, i: u32, len: u64) -> Result<(Node, Elem, u64), String> {
        let Some(to) = self.opts.dequantize else {
            return Err(format!(
                "quantized ({}): its values are in {}; mount with --dequantize f32|f16|bf16 to put them here",
                self.values_info(i).ok().flatten().unwrap_or_default(),
                crate::tree::build::view_npy_name(DEQUANTIZED_VIEW)
            ));
        };
        let node = Node::View { object: i };
        Ok((node, Elem::Plain(to.dtype()), len / 4 * to.width()))
    }

    /// The `.npy` form of part `part` of object `i` (or of its view, for
    /// [`VIEW`]), or why it has none.
    pub(in crate::tree) fn npy_of(&self, i: u32, part: u32) -> Result<Npy, String> {
        let o = self.object(i);
        let (elem, shape, len) = if part == VIEW {
            let Some((name, len)) = self.view_of(i).filter(|_| self.has_view(i)) else {
                return Err("the object has no view".into());
            };
            let elem = match self.model.tensor_data(i) {
                TensorData::Computed { elem, .. } => elem,
                _ if name == DEQUANTIZED_VIEW => Elem::Plain(DType::F32),
                _ if name == DENSE_VIEW => {
                    (o.part("values").and_then(Elem::of_part)).ok_or("no values part")?
                }
                _ => return Err(format!("view {name:?} has no element type")),
            };
            (elem, Shape::Tensor, len)
        } else {
            let p = &o.parts[part as usize];
            if self.files_of_part(i, part) & crate::tree::part::DECODED == 0 {
                return Err("the part has no decoded file".into());
            }
            if &*p.name == crate::model::DATA && self.values_npy(i) {
                return Err(format!(
                    "{} holds the tensor's values; this part holds its blocks",
                    crate::tree::build::view_npy_name(DEQUANTIZED_VIEW)
                ));
            }
            // A part the format says holds the tensor is of the tensor's
            // element type and shape.
            let (elem, shape) = match self.model.tensor_data(i) {
                TensorData::Stored { part: k, elem } if k == part => (elem, Shape::Tensor),
                _ => {
                    let elem = Elem::of_part(p).ok_or("its type is not one this reader knows")?;
                    let dense = matches!(Layout::of(&o.layout), Layout::Dense);
                    (elem, if dense { Shape::Tensor } else { Shape::Flat })
                }
            };
            (elem, shape, p.decoded_size())
        };
        let form = forms::npy(o, elem, shape, len, self.opts.npy_dtypes)?;
        crate::tree::npy::header_len(&form)?;
        Ok(form)
    }

    /// The `.npy` of part `part` of object `i` (or of its view), whose
    /// files are `files`: its file name and form, or why it has none.
    pub(in crate::tree) fn npy_info(
        &self,
        i: u32,
        part: u32,
        files: &[String],
    ) -> Result<(String, Npy), String> {
        let file = files.first().filter(|f| !f.ends_with(".raw"));
        let form = self.npy_of(i, part)?;
        let file = file.ok_or("the part has no decoded file")?;
        let name = match part {
            VIEW => crate::tree::build::view_npy_name(file),
            _ => format!("{file}{}", crate::tree::build::NPY_SUFFIX),
        };
        Ok((name, form))
    }

    /// True when object `i` has a quantized tensor's values and their
    /// `.npy` (named `data.npy`, in place of its blocks' part's).
    fn values_npy(&self, i: u32) -> bool {
        let values = self.view_of(i).is_some_and(|v| v.0 == DEQUANTIZED_VIEW);
        values && self.has_view(i) && self.npy_of(i, VIEW).is_ok()
    }

    /// Object `i`'s place in the safetensors files: (file, its name there,
    /// dtype), or why it is left out.
    pub(in crate::tree) fn safetensors_info(
        &self,
        i: u32,
    ) -> Result<(String, String, &'static str), String> {
        let Some(plan) = &self.safetensors else {
            return Err("the model has no model.safetensors (the mount's log says why)".into());
        };
        let (dtype, _) = self.safetensors_of(i)?;
        match plan.shard_of(i) {
            Some(s) => Ok((plan.shard_name(s), self.export_name(i).to_string(), dtype)),
            None => Err("internal error: no shard holds it".into()),
        }
    }

    /// The whole safetensors plan, made on its first use (a pass over the
    /// objects: a read waits for it as a job, [`Wait::SafetensorsTables`]).
    /// `None`, logged, if it no longer describes the files the mount
    /// listed (it cannot: the plan is a function of the manifest).
    pub(in crate::tree) fn safetensors_tables(&self) -> Option<&Plan> {
        let listed = self.safetensors.as_ref()?;
        let full = self.safetensors_tables.get_or_init(|| {
            let plan = self
                .plan_safetensors(false)
                .filter(|p| p.same_files(listed));
            if plan.is_none() {
                log::error!("model.safetensors: the plan made again differs from the one listed");
            }
            plan
        });
        full.as_ref()
    }

    /// Every object's name and its place in the safetensors files (file,
    /// its name there, dtype), or why it is left out (`ztfs ls
    /// --safetensors`).
    #[allow(clippy::type_complexity)]
    pub fn safetensors_listing(
        &self,
    ) -> Vec<(String, Result<(String, String, &'static str), String>)> {
        let n = self.model.manifest().map_or(0, |m| m.objects.len()) as u32;
        (0..n)
            .map(|i| (self.object(i).name.to_string(), self.safetensors_info(i)))
            .collect()
    }

    /// The names of the model's safetensors files at the root: its shards
    /// in order, then the index when sharded; none when it has none.
    pub fn safetensors_files(&self) -> Vec<String> {
        let Some(plan) = &self.safetensors else {
            return Vec::new();
        };
        let mut names: Vec<String> = (0..plan.shards.len()).map(|s| plan.shard_name(s)).collect();
        if plan.shards.len() > 1 {
            names.push(crate::tree::safetensors::INDEX.to_string());
        }
        names
    }

    /// What `model.safetensors`' `__metadata__` leaves out to keep its
    /// header within the limit.
    pub fn safetensors_notes(&self) -> &[String] {
        self.safetensors.as_ref().map_or(&[], |p| &p.notes)
    }

    /// True when part `part` of object `i` (or its view) has a `.npy`.
    pub(in crate::tree) fn has_npy(&self, i: u32, part: u32) -> bool {
        self.npy_of(i, part).is_ok()
    }

    /// The node a `.npy` file serves its data from.
    fn npy_source(i: u32, part: u32) -> Node {
        if part == VIEW {
            Node::View { object: i }
        } else {
            Node::Part { object: i, part }
        }
    }

    /// Size of a `.npy` file.
    pub(in crate::tree) fn npy_size(&self, i: u32, part: u32) -> u64 {
        self.npy_header_len(i, part) + self.size(&Self::npy_source(i, part))
    }

    /// Where a `.npy` file's data starts.
    pub(in crate::tree) fn npy_header_len(&self, i: u32, part: u32) -> u64 {
        (self.npy_of(i, part).ok())
            .and_then(|f| crate::tree::npy::header_len(&f).ok())
            .unwrap_or(0)
    }

    /// A range of a `.npy` file: header bytes rendered, data bytes from
    /// the file beside it.
    pub(in crate::tree) fn read_npy(
        &self,
        i: u32,
        part: u32,
        offset: u64,
        size: u32,
        reach: Reach,
    ) -> Result<Option<Data<'_>>, FsError> {
        let form = self.npy_of(i, part).map_err(|e| {
            log::error!("{:?}: .npy: {e}", self.object(i).name);
            FsError::Io
        })?;
        let h = crate::tree::npy::header_len(&form).map_err(|_| FsError::Io)?;
        let source = Self::npy_source(i, part);
        if offset >= h {
            return self.read_reach(source, offset - h, size, reach);
        }
        let header = crate::tree::npy::header(&form).map_err(|_| FsError::Io)?;
        let end = offset.saturating_add(u64::from(size));
        let mut out = header[offset as usize..end.min(h) as usize].to_vec();
        if end > h {
            match self.read_reach(source, 0, (end - h) as u32, reach)? {
                Some(data) => out.extend_from_slice(&data),
                None => return Ok(None),
            }
        }
        Ok(Some(Data::Owned(out)))
    }

    /// Object `i` in `model.safetensors`: its dtype and length, or why it
    /// is left out.
    pub(in crate::tree) fn safetensors_of(&self, i: u32) -> Result<(&'static str, u64), String> {
        let o = self.object(i);
        if &*o.name == "__metadata__" {
            return Err("its name is the safetensors header's metadata key".into());
        }
        if crate::format::profiles::is_file(o) {
            return Err(FILE_NOT_TENSOR.into());
        }
        if let Some(why) = self.dropped_by_form(i) {
            return Err(why.into());
        }
        let (_, elem, len) = self.tensor_file(i)?;
        // A file of the model must be readable whole: a tensor whose shard
        // is missing would fail every read of its range (and a loader that
        // maps the file would die of SIGBUS there).
        if let Some(p) = o
            .parts
            .first()
            .filter(|p| !report::part_available(&self.model, p))
        {
            let shard = p.blob.shard.as_deref().unwrap_or_default();
            return Err(format!("its shard {shard:?} is not available"));
        }
        Ok((forms::safetensors(o, elem, len)?, len))
    }

    /// What a safetensors header says of object `o`: its name and shape.
    fn name_and_shape(&self, o: u32) -> (&str, &[u64]) {
        (self.export_name(o), &self.object(o).shape)
    }

    /// Plans the model's safetensors files (at mount, and again with its
    /// tables for the first read; `log` says what is left out the first
    /// time). `None` for a model of no objects (a data shard), and, logged,
    /// when a single tensor's header entry passes the limit.
    pub(in crate::tree) fn plan_safetensors(&self, log: bool) -> Option<Plan> {
        let n = self.model.manifest().map_or(0, |m| m.objects.len()) as u32;
        if n == 0 {
            return None;
        }
        let mut tensors = Vec::new();
        let mut left_out = Vec::new();
        for i in 0..n {
            // A packed folder's files are no tensors: not even left out.
            if crate::format::profiles::is_file(self.object(i)) {
                continue;
            }
            match self.safetensors_of(i) {
                Ok((dtype, len)) => tensors.push(Candidate {
                    object: i,
                    dtype,
                    len,
                }),
                Err(why) => left_out.push((i, why)),
            }
        }
        let max = self.opts.safetensors_max;
        // Half the header at most, so the tensors find room beside it.
        let (metadata, notes) = match self.safetensors_metadata(&left_out, max / 2) {
            Ok(m) => m,
            Err(e) => {
                if log {
                    log::warn!("no model.safetensors: its metadata: {e}");
                }
                return None;
            }
        };
        for note in notes.iter().filter(|_| log) {
            log::warn!("model.safetensors: {note}");
        }
        let describe = |o: u32| self.name_and_shape(o);
        let shard_bytes = self.opts.safetensors_shard_bytes;
        match Plan::new(&tensors, &describe, metadata.as_deref(), max, shard_bytes) {
            Ok(mut plan) => {
                plan.notes = notes;
                Some(plan)
            }
            Err(e) => {
                if log {
                    log::warn!("no model.safetensors: {e}");
                }
                None
            }
        }
    }

    /// The first shard's `__metadata__`: `format` (the source's own where
    /// it is a text, else `pt`, what transformers asks of a PyTorch
    /// checkpoint), the attributes the model exports
    /// ([`Model::exported_attributes`]: a safetensors source's
    /// `__metadata__` pairs come back as they were; a text as it is, any
    /// other value as JSON text), and the objects left out, with why, as
    /// JSON text. Its text stays within `budget` bytes: the list
    /// of objects is cut (the count is always given), then attributes
    /// that do not fit are left out, counted under
    /// `ztfs.left_out_attributes`; the second value says what was cut.
    ///
    /// With [`Options::safetensors_exact`] nothing is added to the
    /// attributes when no object is left out: no `format` the model did
    /// not have, no empty list, and no `__metadata__` at all for a model
    /// without attributes (`None`).
    ///
    /// [`Options::safetensors_exact`]: crate::tree::Options::safetensors_exact
    fn safetensors_metadata(
        &self,
        left_out: &[(u32, String)],
        budget: u64,
    ) -> crate::error::Result<(Option<String>, Vec<String>)> {
        let mut notes = Vec::new();
        let list_max = (LEFT_OUT_TEXT_MAX as u64).min(budget / 2);
        let mut list = String::from("{");
        let (mut listed, mut list_len) = (0, 2);
        let mut piece = String::new();
        for (i, why) in left_out {
            piece.clear();
            if listed > 0 {
                piece.push(',');
            }
            json::push_string(&mut piece, &self.object(*i).name);
            piece.push(':');
            json::push_string(&mut piece, why);
            list_len += escaped_len(&piece);
            if list_len > list_max {
                break;
            }
            list.push_str(&piece);
            listed += 1;
        }
        list.push('}');
        if listed < left_out.len() {
            notes.push(format!(
                "__metadata__ lists {listed} of the {} objects left out (the list stops at {list_max} bytes)",
                left_out.len()
            ));
        }
        let attrs = self.model.exported_attributes()?;
        let entries = match attrs.as_deref().map(cbor::parse) {
            Some(Ok(Value::Map(entries))) => entries,
            _ => Vec::new(),
        };
        let format = entries.iter().find_map(|(k, v)| match (k, v) {
            (Value::Text(k), Value::Text(v)) if *k == "format" => Some(v.to_string()),
            _ => None,
        });
        let exact = self.opts.safetensors_exact && left_out.is_empty();
        if exact && entries.is_empty() {
            return Ok((None, notes));
        }
        let mut s = String::from("{");
        match format.as_deref() {
            Some(f) => push_pair(&mut s, "format", f),
            None if !exact => push_pair(&mut s, "format", "pt"),
            None => {}
        }
        let tail = match exact {
            true => Vec::new(),
            false => vec![
                (LEFT_OUT_KEY.to_string(), list),
                (format!("{LEFT_OUT_KEY}_count"), left_out.len().to_string()),
            ],
        };
        // Room kept for the pairs after the attributes.
        let reserve: u64 = tail
            .iter()
            .map(|(k, v)| escaped_len(k) + escaped_len(v) + 6)
            .sum::<u64>()
            + 64;
        let mut dropped = 0u64;
        {
            for (k, v) in &entries {
                let Value::Text(k) = k else { continue };
                if *k == "format" || k.starts_with("ztfs.") {
                    continue;
                }
                let v = match v {
                    Value::Text(s) => s.to_string(),
                    v => {
                        let mut s = String::new();
                        json::to_json(v, &mut s);
                        s
                    }
                };
                let need = escaped_len(k) + escaped_len(&v) + 6;
                if s.len() as u64 + need + reserve > budget {
                    dropped += 1;
                    continue;
                }
                push_pair(&mut s, k, &v);
            }
        }
        for (k, v) in &tail {
            push_pair(&mut s, k, v);
        }
        if dropped > 0 {
            push_pair(
                &mut s,
                &format!("{LEFT_OUT_KEY}_attributes"),
                &dropped.to_string(),
            );
            notes.push(format!(
                "__metadata__ leaves out {dropped} file attributes: with them the header would pass {budget} bytes"
            ));
        }
        s.push('}');
        Ok((Some(s), notes))
    }

    /// The length of safetensors shard `s`, or of the index.
    pub(in crate::tree) fn safetensors_size(&self, node: &Node) -> u64 {
        let Some(plan) = &self.safetensors else {
            return 0;
        };
        match *node {
            Node::Safetensors { shard } => plan.shards[shard as usize].len(),
            Node::SafetensorsIndex => plan.index_len().unwrap_or(0),
            Node::Dir(_)
            | Node::Manifest
            | Node::Digest
            | Node::Config
            | Node::Meta { .. }
            | Node::Stats { .. }
            | Node::View { .. }
            | Node::Part { .. }
            | Node::Raw { .. }
            | Node::Npy { .. }
            | Node::FolderFile { .. } => 0,
        }
    }

    /// A range of a safetensors shard or of the index, for the open file
    /// `reader` (see [`Tree::read_node_for`]). A read within one tensor is
    /// served as that tensor's file serves it (from the map, without a
    /// copy).
    pub(in crate::tree) fn read_safetensors(
        &self,
        node: &Node,
        offset: u64,
        size: u32,
        reader: Reader,
    ) -> Result<Data<'_>, FsError> {
        if self.safetensors.is_none() {
            return Err(FsError::NotFound);
        }
        let Some(plan) = self.safetensors_tables() else {
            return Err(FsError::Io);
        };
        let describe = |o: u32| self.name_and_shape(o);
        let Node::Safetensors { shard } = *node else {
            return Ok(Data::Owned(plan.read_index(
                offset,
                u64::from(size),
                &describe,
            )));
        };
        let mut segments = plan.segments(shard as usize, offset, u64::from(size), &describe);
        if let [Segment::Tensor {
            object,
            offset,
            len,
        }] = segments[..]
        {
            return self.read_tensor(object, offset, len, reader);
        }
        let mut out = Vec::with_capacity(size as usize);
        for s in segments.drain(..) {
            match s {
                Segment::Text(t) => out.extend_from_slice(&t),
                Segment::Tensor {
                    object,
                    offset,
                    len,
                } => out.extend_from_slice(&self.read_tensor(object, offset, len, reader)?),
            }
        }
        Ok(Data::Owned(out))
    }

    /// `len` bytes of object `i`'s tensor file from `offset`; all of them
    /// (a short read here would shift every later byte of the shard).
    fn read_tensor(
        &self,
        i: u32,
        offset: u64,
        len: u64,
        reader: Reader,
    ) -> Result<Data<'_>, FsError> {
        let file = self.tensor_file(i).map_err(|_| FsError::Io)?;
        self.read_changed(i, file, offset, len, reader)
    }

    /// `len` bytes of object `i`'s tensor file `node` from `offset`, as
    /// stored.
    pub(in crate::tree) fn read_tensor_file(
        &self,
        i: u32,
        node: Node,
        offset: u64,
        len: u64,
        reader: Reader,
    ) -> Result<Data<'_>, FsError> {
        // A quantized tensor's values, narrowed by --dequantize f16|bf16
        // (any other view, a strided f16 tensor's, is served as it is).
        let values = self.view_of(i).is_some_and(|v| v.0 == DEQUANTIZED_VIEW);
        let d = match self.opts.dequantize {
            Some(to) if values && to.width() == 2 => {
                self.read_narrowed(node, to, offset, len, reader)?
            }
            _ => self.read_node_for(node, offset, len as u32, reader)?,
        };
        if d.len() as u64 != len {
            log::error!(
                "{:?}: its tensor file gave {} bytes of {len} at {offset}",
                self.object(i).name,
                d.len()
            );
            return Err(FsError::Io);
        }
        Ok(d)
    }

    /// Bytes `[offset, +len)` of the values of view `node` narrowed to
    /// `to` (2 bytes a value): the f32 values under the range, read from
    /// the view and rounded.
    fn read_narrowed(
        &self,
        node: Node,
        to: crate::decode::dequant::narrow::Float,
        offset: u64,
        len: u64,
        reader: Reader,
    ) -> Result<Data<'_>, FsError> {
        let (first, end) = (offset / 2, (offset + len).div_ceil(2));
        let want = (end - first) * 4;
        let wide = self.read_node_for(node, first * 4, want as u32, reader)?;
        if wide.len() as u64 != want {
            return Err(FsError::Io);
        }
        let mut narrow = vec![0; (end - first) as usize * 2];
        to.narrow(&wide, &mut narrow);
        let from = (offset - first * 2) as usize;
        narrow.truncate(from + len as usize);
        narrow.drain(..from);
        Ok(Data::Owned(narrow))
    }

    /// What must be ready before a read of `node` at `[offset, +size)`
    /// can be answered now, if anything.
    pub(in crate::tree) fn waits(&self, node: Node, offset: u64, size: u32) -> Option<Wait> {
        if let Some((object, part)) = self.not_at_hand(node) {
            return Some(Wait::AtHand(object, part));
        }
        match node {
            Node::View { object } if !self.view_ready(object) => Some(Wait::View(object)),
            Node::Npy { object, part: VIEW } if !self.view_ready(object) => {
                Some(Wait::View(object))
            }
            Node::Manifest if self.manifest_json.get().is_none() => Some(Wait::Manifest),
            Node::Stats { object } if self.frames.stats(object).is_none() => {
                Some(Wait::Stats(object))
            }
            Node::Safetensors { .. } | Node::SafetensorsIndex
                if self.safetensors.is_some() && self.safetensors_tables.get().is_none() =>
            {
                Some(Wait::SafetensorsTables)
            }
            Node::Safetensors { shard } => {
                let plan = self.safetensors_tables()?;
                let mut tensors = plan.tensors_in(shard as usize, offset, u64::from(size));
                tensors.find_map(|t| self.tensor_waits(t.object))
            }
            Node::View { .. }
            | Node::Npy { .. }
            | Node::Manifest
            | Node::SafetensorsIndex
            | Node::Dir(_)
            | Node::Digest
            | Node::Config
            | Node::Meta { .. }
            | Node::Stats { .. }
            | Node::Part { .. }
            | Node::Raw { .. }
            | Node::FolderFile { .. } => None,
        }
    }

    /// What a read of object `i`'s tensor file waits for: its part's
    /// stored bytes at hand, its view, or with `--verify` its part's
    /// verification.
    pub(in crate::tree) fn tensor_waits(&self, i: u32) -> Option<Wait> {
        let node = self.tensor_file(i).ok()?.0;
        if let Some((object, part)) = self.not_at_hand(node) {
            return Some(Wait::AtHand(object, part));
        }
        match node {
            Node::View { object } if !self.view_ready(object) => Some(Wait::View(object)),
            Node::Part { object, part } if self.opts.verify => {
                let key = self.part_base[object as usize] + part;
                // A part that failed is waited for too: the wait answers
                // with its error at once.
                match self.parts[key as usize].verified() {
                    Some(Ok(())) => None,
                    _ => Some(Wait::Verified(object, part)),
                }
            }
            // A tensor is served by its part or its view, both above.
            Node::View { .. }
            | Node::Part { .. }
            | Node::Dir(_)
            | Node::Manifest
            | Node::Digest
            | Node::Config
            | Node::Meta { .. }
            | Node::Stats { .. }
            | Node::Raw { .. }
            | Node::Npy { .. }
            | Node::Safetensors { .. }
            | Node::SafetensorsIndex
            | Node::FolderFile { .. } => None,
        }
    }
}

/// Appends `,"k":"v"` (no comma after the opening brace) to `s`.
fn push_pair(s: &mut String, k: &str, v: &str) {
    if !s.ends_with('{') {
        s.push(',');
    }
    json::push_string(s, k);
    s.push(':');
    json::push_string(s, v);
}

/// The length of `s` as a JSON string, without its quotes.
fn escaped_len(s: &str) -> u64 {
    let mut out = String::new();
    json::push_string(&mut out, s);
    out.len() as u64 - 2
}

/// Why a packed folder's file is not in `model.safetensors`.
pub const FILE_NOT_TENSOR: &str = "it is a file of the model's folder, served at its path";
