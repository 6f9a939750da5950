//! The tree's tensors for a reader in the same process ([`crate::library`],
//! the Python binding): each object's row-major tensor as numpy describes
//! it, read by range into the caller's buffer, or located in a mapped
//! local file for a zero-copy array. The same files a mount serves as
//! `data.npy` (with `--npy-dtypes ml`), by the same code: what must be
//! ready first (a view prepared, an `.npz` member inflated, a part
//! verified) is made ready by the same jobs, and this thread waits for
//! them, which a FUSE worker never does.

use std::sync::{mpsc, Arc};

use crate::decode::views::DENSE_VIEW;
use crate::decode::{ContentCheck, Encoding};
use crate::store::Reader;
use crate::tree::export::forms::{self, Elem, Shape};
use crate::tree::export::Wait;
use crate::tree::{FsError, Ino, Node, Tree};

/// Most bytes read from the tree in one piece (its reads take a `u32`).
const PIECE: usize = 64 << 20;
/// The piece of a remote model: a mount's largest read. The read-ahead
/// follows a reader by its reads, topping its window up as requests free
/// (`store::remote::ahead`); one read of a whole tensor would start a
/// window once, when other readers may hold every request, and then wait
/// for its blocks one by one.
const REMOTE_PIECE: usize = 1 << 20;

/// An object's row-major tensor as numpy takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorForm {
    /// The numpy `descr` of its elements (`<f4`; bfloat16 and the f8 types
    /// by their `ml_dtypes` names when the tree's options say so), or why
    /// numpy has none (float4 packed two to a byte).
    pub descr: Result<&'static str, String>,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Its bytes: the elements' width times their count.
    pub len: u64,
}

impl Tree {
    /// Object `i`'s row-major tensor, or why it has none a reader can take
    /// as an array (its reason in `model.safetensors`' left-out list, or
    /// numpy's lack of its type).
    pub fn tensor_form(&self, i: u32) -> Result<TensorForm, String> {
        let (_, elem, len) = self.tensor_node(i)?;
        let o = self.object(i);
        if forms::packed_f4(elem) {
            return Ok(TensorForm {
                descr: Err(
                    "float4 (e2m1) values packed two to a byte: numpy has no such type".into(),
                ),
                shape: o.shape.to_vec(),
                len,
            });
        }
        let form = forms::npy(o, elem, Shape::Tensor, len, self.opts.npy_dtypes)?;
        Ok(TensorForm {
            descr: Ok(form.descr),
            shape: form.shape,
            len,
        })
    }

    /// Fills `buf` with bytes `[offset, +buf.len())` of object `i`'s
    /// tensor ([`Tree::tensor_form`]), waiting for what must be ready
    /// first and for a remote model's bytes. A failure is logged where it
    /// happens, as a mount's is, and its cause found again for the error
    /// (`Tree::tensor_error`).
    pub fn read_tensor_into(
        self: &Arc<Self>,
        i: u32,
        offset: u64,
        buf: &mut [u8],
        reader: Reader,
    ) -> crate::error::Result<()> {
        let name = || format!("tensor {:?}", self.object(i).name);
        let (node, _, len) = (self.tensor_node(i))
            .map_err(|why| crate::error::Error::Unsupported(format!("{}: {why}", name())))?;
        self.read_node_into(i, node, len, offset, buf, reader)
    }

    /// [`Tree::read_tensor_into`] of object `i`'s tensor served by `node`
    /// of `len` bytes (its tensor file, or its dequantized view).
    pub(in crate::tree) fn read_node_into(
        self: &Arc<Self>,
        i: u32,
        node: Node,
        len: u64,
        offset: u64,
        buf: &mut [u8],
        reader: Reader,
    ) -> crate::error::Result<()> {
        let name = || format!("tensor {:?}", self.object(i).name);
        let end = offset.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > len) {
            return Err(crate::error::Error::OutOfRange(format!(
                "bytes [{offset}, +{}) of {} ({len} bytes)",
                buf.len(),
                name()
            )));
        }
        let mut at = offset;
        // An exact read asks for all its blocks at once, and no more.
        let size = match self.model.is_remote() && !reader.exact {
            true => REMOTE_PIECE,
            false => PIECE,
        };
        for piece in buf.chunks_mut(size) {
            if let Err(e) = self.read_piece(i, node, at, piece, reader) {
                return Err(match e {
                    FsError::Interrupted => crate::error::Error::Interrupted,
                    _ => self.tensor_error(i, node, at, piece.len()),
                });
            }
            at += piece.len() as u64;
        }
        Ok(())
    }

    /// Bytes `[at, +piece.len())` of object `i`'s tensor file `node`.
    fn read_piece(
        self: &Arc<Self>,
        i: u32,
        node: Node,
        at: u64,
        piece: &mut [u8],
        reader: Reader,
    ) -> Result<(), FsError> {
        if let Some(done) = self.read_computed_parallel(node, at, piece) {
            return done;
        }
        // A view the cache let go between the wait and the read is
        // prepared again, once.
        let mut tries = 0;
        let d = loop {
            let len = piece.len() as u32;
            if let Some(w) = (self.tensor_waits(i)).or_else(|| self.waits(node, at, len)) {
                self.wait(w)?;
            }
            match self.read_tensor_file(i, node, at, piece.len() as u64, reader) {
                Err(FsError::Io) if tries == 0 && matches!(node, Node::View { .. }) => tries += 1,
                r => break r?,
            }
        };
        piece.copy_from_slice(&d);
        Ok(())
    }

    /// A computed view's values (dequantized blocks above all) on every
    /// core, straight into `piece`: a mount's worker computes its small
    /// reads on its own thread, a reader here asks for megabytes. `None`
    /// where the tree's read does more (narrowing to f16/bf16, a view
    /// prepared from decoded parts).
    fn read_computed_parallel(
        &self,
        node: Node,
        at: u64,
        piece: &mut [u8],
    ) -> Option<Result<(), FsError>> {
        let Node::View { object } = node else {
            return None;
        };
        let v = self.computed_view(object)?;
        let narrowed = self.opts.dequantize.is_some_and(|to| to.width() == 2);
        if narrowed && v.dequantized_from().is_some() {
            return None;
        }
        let file = self.model.view_store(object).ok()?;
        let done = crate::sys::map_read(|| {
            crate::tree::content::check_live(file, 0, file.len())?;
            (v.read_parallel(file, at, piece)).map_err(crate::error::Error::Unsupported)
        });
        Some(done.map_err(|e| {
            log::error!("{:?}: {e}", self.object(object).name);
            FsError::Io
        }))
    }

    /// Why a read of `[at, +len)` of object `i`'s tensor file `node`
    /// failed, found again outside the tree (which logs its failures and
    /// answers a reader with an errno): the part verified, the view
    /// prepared, or the range computed, as `ztfs check --verify` and
    /// `ztfs cat` would, so that the error names the rule a rejection
    /// breaks. Only on a failure, so the work it repeats is no cost.
    fn tensor_error(&self, i: u32, node: Node, at: u64, len: usize) -> crate::error::Error {
        use crate::error::Error;
        let o = self.object(i);
        let found = crate::sys::map_read(|| match node {
            Node::Part { part, .. } => {
                crate::read::verify(&self.model, o, &o.parts[part as usize], &mut |_| Ok(()))
                    .map(drop)
            }
            // The format's own rules on its tensor bytes (a Hurray file's
            // MXFP scales) name the rule a computed value breaks.
            Node::View { object } => match self.computed_view(object) {
                Some(v) => {
                    let rules = &mut |_| Ok(());
                    crate::read::verify_object_format_rules(&self.model, object as usize, rules)?;
                    let file = self.model.view_store(object)?;
                    let mut buf = vec![0; len];
                    (v.read_parallel(file, at, &mut buf))
                        .map_err(|e| Error::Unsupported(format!("tensor {:?}: {e}", o.name)))
                }
                None => crate::decode::views::prepare(o, &|name| {
                    crate::read::decoded_vec(&self.model, o, name)
                })
                .map(drop),
            },
            _ => Ok(()),
        });
        found.err().unwrap_or_else(|| {
            Error::io(
                format!("tensor {:?}", o.name),
                std::io::Error::other("its bytes could not be read (the log says why)"),
            )
        })
    }

    /// The file holding object `i`'s tensor, its element type and length:
    /// `model.safetensors`' ([`Tree::tensor_file`]); for a sparse layout,
    /// which has none there, its `dense` view, values in place.
    pub(in crate::tree) fn tensor_node(&self, i: u32) -> Result<(Node, Elem, u64), String> {
        let why = match self.tensor_file(i) {
            Ok(f) => return Ok(f),
            Err(why) => why,
        };
        match self.view_of(i).filter(|_| self.has_view(i)) {
            Some((DENSE_VIEW, len)) => {
                let values = self.object(i).part("values").and_then(Elem::of_part);
                Ok((Node::View { object: i }, values.ok_or(why)?, len))
            }
            _ => Err(why),
        }
    }

    /// Object `i`'s tensor's bytes in its file's map, where
    /// [`Tree::tensor_mapped`] finds them: read without a copy (under
    /// `sys::map_read`'s guard: the file may be cut short under a read).
    pub fn tensor_bytes(&self, i: u32) -> Option<&[u8]> {
        let (Node::Part { object, part }, _, len) = self.tensor_file(i).ok()? else {
            return None;
        };
        self.tensor_mapped(i)?;
        let p = self.part(object, part).1;
        let map = self.model.store_of(p).ok()?.map()?;
        let start = usize::try_from(p.blob.offset).ok()?;
        map.get(start..start.checked_add(usize::try_from(len).ok()?)?)
    }

    /// Where object `i`'s tensor is, when it is the bytes of a mapped
    /// local file as they are stored (a part not encoded, of a type with
    /// no content rules, not waiting on `--verify`): that file and the
    /// tensor's offset in it, for an array over the file's own map.
    pub fn tensor_mapped(&self, i: u32) -> Option<(&std::fs::File, u64)> {
        let (Node::Part { object, part }, _, len) = self.tensor_file(i).ok()? else {
            return None;
        };
        if self.opts.verify || !matches!(self.decoder(object, part), Ok(Encoding::Raw)) {
            return None;
        }
        let (o, p) = self.part(object, part);
        if ContentCheck::new(o, p).applies() || !self.model.at_hand(p) {
            return None;
        }
        let store = self.model.store_of(p).ok()?;
        store.map()?;
        crate::tree::content::check_live(store, p.blob.offset, len).ok()?;
        Some((store.file()?, p.blob.offset))
    }

    /// The whole of file `ino` (a folder's file, `manifest.json`), opened
    /// and read as a mount's reader would.
    pub fn read_file_whole(self: &Arc<Self>, ino: Ino) -> Result<Vec<u8>, FsError> {
        self.open_wait(ino)?;
        let len = self.getattr(ino)?.size;
        let mut out = Vec::new();
        while (out.len() as u64) < len {
            let want = (len - out.len() as u64).min(PIECE as u64) as u32;
            let d = self.read_wait(ino, out.len() as u64, want)?;
            if d.is_empty() {
                break;
            }
            out.extend_from_slice(&d);
        }
        Ok(out)
    }

    /// Waits until `w` is done, by the job a mount's read would start.
    fn wait(self: &Arc<Self>, w: Wait) -> Result<(), FsError> {
        let (tx, rx) = mpsc::channel();
        let done = Box::new(move |r: Result<(), FsError>| {
            let _ = tx.send(r);
        });
        match w {
            Wait::View(object) => self.when_view_ready(object, 0, done),
            Wait::Manifest => self.when_manifest_ready(0, done),
            Wait::Verified(object, part) => self.when_verified(object, part, 0, done),
            Wait::AtHand(object, part) => self.when_at_hand(object, part, 0, done),
            Wait::Stats(object) => self.when_stats_ready(object, 0, done),
            // Only a read of model.safetensors waits for its tables.
            Wait::SafetensorsTables => done(Ok(())),
        }
        rx.recv().unwrap_or(Err(FsError::Io))
    }
}
