//! ztfs as a library: a model of any format ztfs reads, from a file, a
//! folder or a URL, its tensors read in-process, without a mount.
//!
//! [`Model`] stands on the same core as a mount ([`crate::tree`]): a
//! tensor is what the mount serves as its object's `data.npy` (with
//! `--npy-dtypes ml`), read by range by the same code, with the same jobs
//! making views and the same remote read-ahead and caches. The Python
//! binding (`src/python.rs`) converts and calls this, nothing more.
//!
//! ```no_run
//! # fn main() -> ztfs::error::Result<()> {
//! let m = ztfs::Model::open("model.gguf".as_ref(), ztfs::library::Options::default())?;
//! for t in m.tensors() {
//!     let mut buf = vec![0; t.len() as usize];
//!     m.read(t, 0, &mut buf)?; // t.dtype(), t.shape() say what they are
//! }
//! # Ok(())
//! # }
//! ```
//!
//! A model by URL reads through the process's block cache and, when
//! [`use_disk_cache`] set one, its disk cache: both are the process's, as
//! they are for a command.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::decode::dequant::narrow::Float;
use crate::error::{Error, Result};
use crate::format::cbor::{self, Value};
use crate::store::Reader;
use crate::tree::{FsError, NpyDtypes, TensorForm, Tree, ROOT};

/// How a model is opened: the command line's flags of the same names.
#[derive(Debug, Clone)]
pub struct Options {
    /// The budget of decoded frames, prepared views and a remote model's
    /// blocks, in MiB (`--cache-mib`).
    pub cache_mib: u64,
    /// The other files of the model's folder come with it (not
    /// `--no-files`).
    pub files: bool,
    /// Quantized tensors (ggml blocks, torch's qint8) are their values in
    /// this type; `None` leaves them out.
    pub dequantize: Option<Float>,
    /// Files for named shards (`--shard NAME=PATH`).
    pub shards: Vec<(String, PathBuf)>,
    /// Read a shard without its whole-file digest checked first.
    pub trust_shards: bool,
    /// Check each part's digest and content rules before its first read.
    pub verify: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            cache_mib: 64,
            files: true,
            dequantize: Some(Float::F32),
            shards: Vec::new(),
            trust_shards: false,
            verify: false,
        }
    }
}

/// One tensor of a model: its name and its row-major form.
#[derive(Debug, Clone)]
pub struct Tensor {
    name: String,
    object: u32,
    form: TensorForm,
}

impl Tensor {
    /// Its name, as the file gives it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its numpy dtype: a `descr` (`<f4`, `|b1`) or an `ml_dtypes` name
    /// (`bfloat16`, `float8_e4m3fn`); or why numpy has none (float4
    /// packed two to a byte: its bytes are still read as any tensor's).
    pub fn dtype(&self) -> Result<&'static str, &str> {
        match &self.form.descr {
            Ok(d) => Ok(d),
            Err(why) => Err(why),
        }
    }

    /// Its shape.
    pub fn shape(&self) -> &[u64] {
        &self.form.shape
    }

    /// Its bytes, row-major.
    pub fn len(&self) -> u64 {
        self.form.len
    }

    /// True when it has no bytes (a zero in its shape).
    pub fn is_empty(&self) -> bool {
        self.form.len == 0
    }
}

/// An opened model.
pub struct Model {
    tree: Arc<Tree>,
    tensors: Vec<Tensor>,
    by_name: HashMap<String, usize>,
    left_out: Vec<(String, String)>,
}

/// Read-ahead follows each read of a tensor on its own, apart from a
/// mount's file handles (counted up from 1).
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1 << 62);

/// A loader's walk from one tensor to the next is followed per thread.
static NEXT_THREAD: AtomicU32 = AtomicU32::new(1);

thread_local! {
    static THREAD: u32 = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
}

impl Model {
    /// Opens and validates `source` (a file of any format, a folder, an
    /// index, a split GGUF's first file, or a URL), as `ztfs check` does.
    pub fn open(source: &Path, opts: Options) -> Result<Model> {
        let model = crate::model::Model::open_with(source, opts.shards.clone())?
            .trust_shards(opts.trust_shards);
        Model::of(model, opts)
    }

    /// The model `model`, already opened (its shards and trust as it was
    /// opened with; `opts.shards` and `opts.trust_shards` are not used).
    pub fn of(model: crate::model::Model, opts: Options) -> Result<Model> {
        let cache = opts.cache_mib.saturating_mul(1 << 20);
        crate::store::remote::set_cache_budget(cache);
        let tree_opts = crate::tree::Options {
            verify: opts.verify,
            cache_bytes: cache,
            npy_dtypes: NpyDtypes::Ml,
            files: opts.files,
            dequantize: opts.dequantize,
            ..crate::tree::Options::default()
        };
        let tree = Arc::new(Tree::build(model, tree_opts)?);
        tree.check_encodings();
        let objects = tree.model().manifest().map_or(&[][..], |m| &m.objects);
        let (mut tensors, mut left_out) = (Vec::new(), Vec::new());
        for (i, o) in objects.iter().enumerate() {
            match tree.tensor_form(i as u32) {
                Ok(form) => tensors.push(Tensor {
                    name: o.name.to_string(),
                    object: i as u32,
                    form,
                }),
                Err(why) => left_out.push((o.name.to_string(), why)),
            }
        }
        let by_name = (tensors.iter().enumerate())
            .map(|(k, t)| (t.name.clone(), k))
            .collect();
        Ok(Model {
            tree,
            tensors,
            by_name,
            left_out,
        })
    }

    /// Its tensors, in the file's order.
    pub fn tensors(&self) -> &[Tensor] {
        &self.tensors
    }

    /// The tensor named `name`.
    pub fn tensor(&self, name: &str) -> Option<&Tensor> {
        self.by_name.get(name).map(|&k| &self.tensors[k])
    }

    /// The objects that are not tensors here, each with why (a packed
    /// float4 tensor, a layout with no dense form, a tensor whose data the
    /// format says is absent).
    pub fn left_out(&self) -> &[(String, String)] {
        &self.left_out
    }

    /// Tensor `t`'s layout (`dense`, `gguf.q4_k/1`, ...) and its parts'
    /// encodings (none for raw parts), as the manifest gives them.
    pub fn layout(&self, t: &Tensor) -> (String, Vec<String>) {
        let o = self
            .tree
            .model()
            .manifest()
            .and_then(|m| m.objects.get(t.object as usize));
        match o {
            Some(o) => (
                o.layout.to_string(),
                (o.parts.iter())
                    .filter_map(|p| p.encoding.as_deref().map(str::to_string))
                    .collect(),
            ),
            None => (String::new(), Vec::new()),
        }
    }

    /// The format's name (`safetensors`, `GGUF`, ...).
    pub fn format_name(&self) -> &'static str {
        self.tree.model().input().format_name()
    }

    /// Fills `buf` with bytes `[offset, +buf.len())` of tensor `t`: a
    /// computed tensor's computed, a compressed part's decoded, a remote
    /// model's fetched, with the read-ahead a loader reading it whole
    /// wants (the rest of the tensor, the tensors after it).
    pub fn read(&self, t: &Tensor, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.read_as(t, offset, buf, false)
    }

    /// [`Model::read`] of exactly that range: a remote model fetches its
    /// blocks and nothing ahead (a slice of a tensor's rows).
    pub fn read_exact(&self, t: &Tensor, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.read_as(t, offset, buf, true)
    }

    fn read_as(&self, t: &Tensor, offset: u64, buf: &mut [u8], exact: bool) -> Result<()> {
        let reader = Reader {
            pid: THREAD.with(|t| *t),
            handle: NEXT_HANDLE.fetch_add(1, Ordering::Relaxed),
            exact,
        };
        self.tree.read_tensor_into(t.object, offset, buf, reader)
    }

    /// Where tensor `t` is when it is the bytes of a mapped local file as
    /// they are stored: that file and its offset there, so that an array
    /// over the file's own map holds it without a copy.
    pub fn mapped(&self, t: &Tensor) -> Option<(&std::fs::File, u64)> {
        self.tree.tensor_mapped(t.object)
    }

    /// Tensor `t`'s bytes in its file's map, when [`Model::mapped`] finds
    /// them there: to read without a copy, under `sys::map_read`'s guard.
    pub fn mapped_bytes(&self, t: &Tensor) -> Option<&[u8]> {
        self.tree.tensor_bytes(t.object)
    }

    /// The format's metadata as text pairs, as `safe_open` gives it: a
    /// safetensors file's `__metadata__`; a zTensor manifest's
    /// attributes; a GGUF file's key-values. A text is itself, a number or
    /// a bool its JSON text; arrays and maps (a GGUF token list) are left
    /// out (they are in [`Model::manifest_json`]). `None` when the file
    /// has none.
    pub fn metadata(&self) -> Result<Option<BTreeMap<String, String>>> {
        let Some(bytes) = self.tree.model().file_attributes()? else {
            return Ok(None);
        };
        let Value::Map(entries) = cbor::parse(&bytes)? else {
            return Ok(None);
        };
        let text = |v: &Value| match *v {
            Value::Text(t) => Some(t.to_string()),
            Value::Uint(n) => Some(n.to_string()),
            Value::Nint(n) => Some(format!("-{}", u128::from(n) + 1)),
            Value::Bool(b) => Some(b.to_string()),
            Value::Float(f) => serde_json::Number::from_f64(f).map(|n| n.to_string()),
            Value::Null => Some("null".into()),
            Value::Bytes(_) | Value::Array(_) | Value::Map(_) => None,
        };
        let pairs = (entries.iter())
            .filter_map(|(k, v)| Some((k.as_text()?.to_string(), text(v)?)))
            .collect();
        Ok(Some(pairs))
    }

    /// What `manifest.json` holds: the format's own document, as JSON.
    pub fn manifest_json(&self) -> Result<Vec<u8>> {
        let ino = self.tree.lookup(ROOT, b"manifest.json").map(|a| a.ino);
        (ino.and_then(|ino| self.tree.read_file_whole(ino)))
            .map_err(|e| read_error("manifest.json", e))
    }

    /// The other files of the model's folder or repository (its
    /// `config.json`, tokenizer files...), by their paths there.
    pub fn files(&self) -> Vec<String> {
        (self.tree.folder_file_inodes().into_iter())
            .map(|(path, _)| path)
            .collect()
    }

    /// The bytes of the folder's file `path` ([`Model::files`]).
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>> {
        let ino = (self.tree.folder_file_inodes().into_iter())
            .find(|(p, _)| p == path)
            .map(|(_, ino)| ino)
            .ok_or_else(|| Error::NotFound(format!("file {path:?} of the model's folder")))?;
        (self.tree.read_file_whole(ino)).map_err(|e| read_error(path, e))
    }
}

/// A failed read as an error: the tree logged its cause where it happened.
fn read_error(what: &str, e: FsError) -> Error {
    match e {
        FsError::NotFound => Error::NotFound(what.to_string()),
        FsError::Range => Error::OutOfRange(format!("a read past the end of {what}")),
        FsError::Interrupted => Error::Interrupted,
        FsError::NotDir | FsError::IsDir | FsError::ReadOnly | FsError::NoAttr | FsError::Io => {
            Error::io(
                what.to_string(),
                std::io::Error::other("its bytes could not be read (the log says why)"),
            )
        }
    }
}

/// Keeps the blocks of models read by URL in `dir`, at most `size` bytes
/// (`--cache-dir`, `--cache-size`), for the rest of the process: set once;
/// the same directory again is no change.
pub fn use_disk_cache(dir: &Path, size: u64) -> Result<()> {
    #[cfg(feature = "remote")]
    if let Some(d) = crate::store::disk::cache() {
        return match d.dir() == dir {
            true => Ok(()),
            false => Err(Error::Usage(format!(
                "this process keeps its disk cache in {} already",
                d.dir().display()
            ))),
        };
    }
    crate::store::use_disk_cache(dir, size)
}

/// Asks the shared cache tier at `url` (`s3://BUCKET[/PREFIX]`) for the
/// blocks of models read by URL before their origin, and writes there
/// what the origin gives (`--shared-cache`), for the rest of the process:
/// set once; the same tier again is no change.
pub fn use_shared_cache(url: &str) -> Result<()> {
    crate::store::use_shared_cache(url)
}

/// Waits, at most `wait`, for the blocks queued for the shared cache tier
/// to be written: before the process exits.
pub fn flush_shared_cache(wait: std::time::Duration) {
    crate::store::flush_shared_cache(wait);
}

/// Reads objects by URL whose server gives no version
/// (`--trust-unversioned`), for the rest of the process.
pub fn trust_unversioned(yes: bool) {
    crate::store::remote::trust_unversioned(yes);
}
