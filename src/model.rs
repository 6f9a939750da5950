//! An opened model: the root file validated, its manifest, and its shards
//! resolved lazily on first use (see [`crate::shards`]).
//!
//! Opening validates the root alone, so local parts stay readable when a
//! shard is missing (notes §4 item 10). A shard that cannot be resolved is
//! remembered, and every part in it fails with the same explanation.
//!
//! A Hugging Face sharded safetensors checkpoint (an index and the files it
//! names, [`hf`]) is the exception: all its files are opened and validated
//! at open, and a part's `blob.shard` names its file.

pub mod folder;
pub mod gguf_split;
pub mod hf;
#[cfg(feature = "remote")]
mod hub;
mod input;
mod made;
pub mod npz;
mod onnx;
mod openvino;
mod tensor;

pub use input::{Input, MetaForm};
pub use tensor::{Elem, TensorData, DATA};

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::{Error, Result, Rule};
use crate::format::sniff::{self, Format};
use crate::format::{self, gguf, hurray, safetensors, Container, Footer, Manifest, Part, Shard};
use crate::shards::{self, Found};
use crate::store::Store;

/// The last component of `path` (of a URL, without its query).
fn file_name(path: &Path) -> Option<&str> {
    let s = match crate::store::url_query(path) {
        Some((base, _)) => base,
        None => path.to_str()?,
    };
    s.rsplit('/').next().filter(|n| !n.is_empty())
}

/// A validated root file and its lazily opened shards.
pub struct Model {
    root: Store,
    /// What the root file is, with its format's own facts.
    input: Input,
    /// The files of a sharded safetensors checkpoint by name, sorted, each
    /// opened and validated at open; of a split GGUF model, the files after
    /// the first; empty for any other model.
    files: Vec<(String, Store)>,
    /// The file of bytes made on first use: an `.npz` archive's deflated
    /// members, an ONNX model's typed fields ([`made`]); `None` for a
    /// model with none.
    made: Option<made::Made>,
    manifest: Option<Manifest>,
    overrides: Vec<(String, PathBuf)>,
    shards: Vec<OnceLock<std::result::Result<(Store, Found), ShardError>>>,
    /// Per shard: its whole-file digest checked (§7.3 rung 3), needed
    /// before any of its bytes are served.
    proofs: Vec<OnceLock<std::result::Result<(), ShardError>>>,
    trust_shards: bool,
    /// The computed views of its tensors, made on first use.
    computed: tensor::ComputedCell,
    /// The folder whose other files come with the model, and the model's
    /// own files in it ([`folder`]); `None` for a model of one file.
    folder_of: Option<FolderOf>,
    /// That folder, scanned on first use; or a packed model's files.
    folder: OnceLock<std::result::Result<Option<folder::Folder>, String>>,
}

/// Where a model's folder is.
enum FolderOf {
    /// A local folder, and the model's own files in it.
    Local(PathBuf, Vec<String>),
    /// A folder of a Hub repository at a commit (its path in the
    /// repository, empty for the root), and the model's own files in it.
    #[cfg(feature = "remote")]
    Hub(
        Box<crate::store::remote::hub::Snapshot>,
        String,
        Vec<String>,
    ),
}

/// What a model keeps of a safetensors file besides its objects: the
/// header is read again for `manifest.json`, which is rare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SafetensorsFile {
    /// `N`, the header's length in bytes.
    pub header_len: u64,
    /// Entries in `__metadata__`.
    pub metadata_entries: usize,
    /// The byte buffer's length (a checkpoint's: all its files' together).
    pub data_len: u64,
    /// For a sharded checkpoint, read from its index: how many files it
    /// has (then `header_len` is the index's length and `metadata_entries`
    /// counts its `metadata`); `None` for a single file.
    pub index_files: Option<usize>,
}

/// Why a shard could not be used, kept so every later use reports it again.
#[derive(Debug, Clone)]
struct ShardError {
    rule: Option<Rule>,
    detail: String,
}

impl Model {
    /// Opens and fully validates `path` (§8 steps 1–6).
    pub fn open(path: &Path) -> Result<Model> {
        Model::open_with(path, Vec::new())
    }

    /// Opens `path`, resolving the named shards to the given files first.
    /// A local folder stands for the model file in it (see [`hf`]); its
    /// other files come with the model ([`Model::folder`]), as those of
    /// the folder of an index do. A model file given alone has none.
    pub fn open_with(path: &Path, overrides: Vec<(String, PathBuf)>) -> Result<Model> {
        if let Some(text) = path.to_str().filter(|t| t.starts_with("hf://")) {
            #[cfg(feature = "remote")]
            return hub::open(text, overrides).inspect(Model::tell_parts);
            #[cfg(not(feature = "remote"))]
            return Err(Error::at(
                text,
                Error::Usage("this ztfs was built without the `remote` feature".into()),
            ));
        }
        let file = hf::resolve_dir(path)?;
        let mut model = Model::open_file(&file, overrides)?;
        model.folder_of = model
            .folder_of(path, &file)
            .map(|(d, own)| FolderOf::Local(d, own));
        model.tell_parts();
        Ok(model)
    }

    /// Readies a remote root for its first read in this process (see
    /// [`Store::prepare`]).
    pub fn prepare(&self) {
        self.root.prepare();
    }

    /// Tells a remote root where its parts are, so that a reader taking
    /// them in the file's order is fetched ahead across them.
    fn tell_parts(&self) {
        let Some(m) = self.manifest().filter(|_| self.root.is_remote()) else {
            return;
        };
        let parts = (m.objects.iter())
            .flat_map(|o| o.parts.iter())
            .filter(|p| p.blob.shard.is_none())
            .map(|p| (p.blob.offset, p.blob.length))
            .collect();
        self.root.set_parts(parts);
    }

    /// The folder whose other files come with the model opened from
    /// `given` (resolved to the file `file`), and the model's own files in
    /// it: a local folder given, or the folder of a local index (it names
    /// files of its folder). A model file given alone is that file: its
    /// folder is only where it lies (`~/Downloads`), never named.
    fn folder_of(&self, given: &Path, file: &Path) -> Option<(PathBuf, Vec<String>)> {
        if crate::store::remote::url_of(file).is_some() {
            return None;
        }
        let name = file.file_name()?.to_str()?.to_string();
        let dir = if given.is_dir() {
            given.to_path_buf()
        } else if self.is_checkpoint() {
            match file.parent() {
                Some(p) if p.as_os_str().is_empty() => PathBuf::from("."),
                Some(p) => p.to_path_buf(),
                None => return None,
            }
        } else {
            return None;
        };
        let mut own = vec![name];
        own.extend(self.files.iter().map(|(n, _)| n.clone()));
        Some((dir, own))
    }

    /// The other files of the folder the model came from (see
    /// [`Model::open_with`]), scanned on first use; for a `.zt` that
    /// `ztfs pack` wrote from a folder, the files it holds (its
    /// `ztfs.file/1` objects); `None` for a model of one file.
    pub fn folder(&self) -> Result<Option<&folder::Folder>> {
        let found = self.folder.get_or_init(|| match &self.folder_of {
            Some(FolderOf::Local(dir, own)) => folder::Folder::scan(dir, own)
                .map(Some)
                .map_err(|e| e.to_string()),
            #[cfg(feature = "remote")]
            Some(FolderOf::Hub(snap, dir, own)) => Ok(Some(hub::folder(snap, dir, own))),
            None => Ok(self
                .manifest()
                .and_then(|m| folder::Folder::of_objects(&m.objects))),
        });
        match found {
            Ok(f) => Ok(f.as_ref()),
            Err(e) => Err(Error::Usage(format!("the model's folder: {e}"))),
        }
    }

    /// Opens the model file `path` (not a folder).
    fn open_file(path: &Path, overrides: Vec<(String, PathBuf)>) -> Result<Model> {
        let path = path.to_path_buf();
        let root = Store::open(&path)?;
        // Enough of the beginning to tell the format (and name a foreign one).
        let head = root.slice(0, root.len().min(sniff::HEAD))?;
        let name = match crate::store::url_query(&path) {
            Some((base, _)) => base.to_string(),
            None => path.to_string_lossy().into_owned(),
        };
        let name = name.rsplit('/').next().unwrap_or_default();
        // Every arm returns but zTensor's, which goes on below.
        match sniff::sniff(&head, name) {
            Format::Hurray => return Model::open_hurray(root, overrides),
            Format::Gguf => return Model::open_gguf(root, overrides),
            Format::Safetensors => return Model::open_safetensors(root, overrides),
            Format::SafetensorsIndex => return Model::open_safetensors_index(root, overrides),
            Format::Zip => return Model::open_zip(root, overrides),
            Format::Onnx => return Model::open_onnx(root, overrides),
            Format::OpenVino => return Model::open_openvino(root, overrides),
            Format::Zt => {}
        }
        let container = format::read_container_from(&root).map_err(|e| match e.rule() {
            Some(Rule::FileTooSmall | Rule::HeaderMagic | Rule::FooterMagic) => {
                sniff::foreign(&head).map_or(e, Error::Foreign)
            }
            _ => e,
        })?;
        let footer = Footer::parse_from(&root)?;
        let manifest = match container {
            Container::Model(m) => Some(m),
            Container::DataShard => None,
        };
        let table = manifest.as_ref().and_then(|m| m.shards.as_ref());
        if let Some((name, _)) = overrides
            .iter()
            .find(|(n, _)| !table.is_some_and(|t| t.iter().any(|s| s.name == *n)))
        {
            return Err(Error::Usage(format!(
                "--shard {name}: the model has no shard of that name"
            )));
        }
        let n = table.map_or(0, Vec::len);
        Ok(Model {
            root,
            input: Input::Zt(footer),
            files: Vec::new(),
            made: None,
            manifest,
            overrides,
            shards: (0..n).map(|_| OnceLock::new()).collect(),
            proofs: (0..n).map(|_| OnceLock::new()).collect(),
            trust_shards: false,
            computed: Default::default(),
            folder_of: None,
            folder: OnceLock::new(),
        })
    }

    /// Opens a Hurray container: every structural rule is checked here
    /// (the format has no content digests, so there is nothing more for
    /// `--verify` to check). It has no shards.
    fn open_hurray(root: Store, overrides: Vec<(String, PathBuf)>) -> Result<Model> {
        no_shards(&overrides, "a Hurray file has no shards")?;
        let file = hurray::read_file_from(&root)?;
        let objects = hurray::objects::objects(&file);
        Ok(Model::one_file(root, objects, Input::Hurray(file)))
    }

    /// Opens a GGUF file: every structural rule is checked here (the
    /// format has no digests and no content rules). The first file of a
    /// split model opens the model, its other files with it
    /// ([`gguf_split`]); they are not shards in ztfs' sense.
    fn open_gguf(root: Store, overrides: Vec<(String, PathBuf)>) -> Result<Model> {
        no_shards(
            &overrides,
            "a GGUF file has no shards (a split model's files are found by their names)",
        )?;
        let file = gguf::read_file_from(&root)?;
        Model::open_gguf_file(root, file)
    }

    /// Opens a safetensors file: every rule of the format is checked here
    /// (it has no digests and no content rules of its own; the content
    /// rules of the zTensor types its dtypes map to, `bool` bytes, are
    /// checked when the data is read or verified). It has no shards.
    fn open_safetensors(root: Store, overrides: Vec<(String, PathBuf)>) -> Result<Model> {
        no_shards(&overrides, "a safetensors file has no shards")?;
        let header = safetensors::read_header_from(&root)?;
        let objects = safetensors::objects::objects(&header);
        let info = SafetensorsFile {
            header_len: header.len,
            metadata_entries: header.metadata.as_ref().map_or(0, Vec::len),
            data_len: root.len() - header.data_start(),
            index_files: None,
        };
        Ok(Model::one_file(root, objects, Input::Safetensors(info)))
    }

    /// Opens a zip archive: a PyTorch checkpoint (`torch.save`'s layout,
    /// every rule checked here; its pickle is run by an interpreter that
    /// calls nothing) or a NumPy `.npz` ([`npz`]). Any other zip is named
    /// as what it is.
    fn open_zip(root: Store, overrides: Vec<(String, PathBuf)>) -> Result<Model> {
        no_shards(&overrides, "a zip archive has no shards")?;
        let members = format::zip::members(&root)?;
        if format::npz::is_npz(&members) {
            return Model::open_npz(root, &members);
        }
        if !format::pytorch::is_torch(&members) {
            return Err(Error::Foreign(sniff::foreign_named(
                "a zip archive that is neither a PyTorch checkpoint (no ARCHIVE/data.pkl) nor a NumPy .npz (not every member a .npy)",
            )));
        }
        let file = format::pytorch::read_archive(&root, &members)?;
        let objects = format::pytorch::objects::objects(&file);
        Ok(Model::one_file(root, objects, Input::Torch(file)))
    }

    /// A model of one file of another format than zTensor, its tensors
    /// mapped to `objects`: no footer, no shards.
    fn one_file(root: Store, objects: Vec<format::Object>, input: Input) -> Model {
        Model {
            root,
            input,
            files: Vec::new(),
            made: None,
            manifest: Some(Manifest {
                objects,
                shards: None,
                attributes: None,
            }),
            overrides: Vec::new(),
            shards: Vec::new(),
            proofs: Vec::new(),
            trust_shards: false,
            computed: Default::default(),
            folder_of: None,
            folder: OnceLock::new(),
        }
    }

    /// What the model keeps of a safetensors file, when the root is one.
    fn safetensors(&self) -> Option<&SafetensorsFile> {
        match &self.input {
            Input::Safetensors(st) => Some(st),
            _ => None,
        }
    }

    /// What the root file is.
    pub fn input(&self) -> &Input {
        &self.input
    }

    /// The zTensor footer, when the root is a zTensor file.
    fn footer(&self) -> Option<&Footer> {
        match &self.input {
            Input::Zt(footer) => Some(footer),
            _ => None,
        }
    }

    /// A safetensors file's header text, or a sharded checkpoint's index
    /// (its format's header), read from the root file now (as
    /// [`Model::read_manifest_bytes`] reads a manifest); `None` for other
    /// files.
    pub fn read_safetensors_header(&self) -> Result<Option<String>> {
        let Some(st) = self.safetensors() else {
            return Ok(None);
        };
        let start = match st.index_files {
            Some(_) => 0,
            None => safetensors::LEN_BYTES,
        };
        let bytes = self.read_root(start, st.header_len)?;
        String::from_utf8(bytes).map(Some).map_err(|_| {
            Error::io(
                self.root.name(),
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the safetensors header changed since it was opened: no longer UTF-8",
                ),
            )
        })
    }

    /// True for a sharded safetensors checkpoint (opened from its index).
    pub fn is_checkpoint(&self) -> bool {
        match &self.input {
            Input::Torch(f) => !f.files.is_empty(),
            _ => self.safetensors().is_some_and(|s| s.index_files.is_some()),
        }
    }

    /// True when a part's `blob.shard` names one of the model's files,
    /// opened with it (a sharded checkpoint, a split GGUF model), not a
    /// zTensor shard.
    fn opened_files(&self) -> bool {
        self.is_checkpoint() || !self.files.is_empty()
    }

    /// True when the model's file has no content digests (Hurray, safetensors, GGUF):
    /// `digest` is refused and `MNT/digest` absent.
    pub fn has_no_digests(&self) -> bool {
        !self.input.has_digests()
    }

    /// The format of the root file, for messages.
    pub fn format_name(&self) -> &'static str {
        self.input.format_name()
    }

    /// Serves a shard's bytes once it is resolved (declared size, valid
    /// container), without checking its whole-file digest first: for a
    /// user who vouches for the files (`--trust-shards`).
    pub fn trust_shards(mut self, trust: bool) -> Model {
        self.trust_shards = trust;
        self
    }

    /// The manifest; `None` for a data shard.
    pub fn manifest(&self) -> Option<&Manifest> {
        self.manifest.as_ref()
    }

    /// True when some of the model's bytes are read by range requests:
    /// the root, or a shard named by URL.
    pub fn is_remote(&self) -> bool {
        self.root.is_remote()
            || (self.overrides.iter()).any(|(_, p)| crate::store::remote::url_of(p).is_some())
    }

    /// The root file.
    pub fn root(&self) -> &Store {
        &self.root
    }

    /// The raw manifest bytes (empty for a data shard and a Hurray file).
    pub fn manifest_bytes(&self) -> Cow<'_, [u8]> {
        let Some(footer) = self.footer() else {
            return Cow::Borrowed(&[]);
        };
        let (off, len) = (footer.manifest_offset, footer.manifest_length);
        // Validated at open (a remote object's manifest was read then and
        // is read again from the cache).
        self.root.slice(off, len).unwrap_or_default()
    }

    /// The manifest bytes read from the root file now rather than through
    /// the map, for a caller that must not touch a map the file may have
    /// been truncated under (a short file is an error, not a fault), or
    /// that wants no pages of it kept mapped. `None` for a data shard
    /// and a Hurray file.
    pub fn read_manifest_bytes(&self) -> Result<Option<Vec<u8>>> {
        let Some(footer) = self.footer().filter(|_| self.manifest.is_some()) else {
            return Ok(None);
        };
        let (off, len) = (footer.manifest_offset, footer.manifest_length);
        self.read_root(off, len).map(Some)
    }

    /// Bytes `[off, +len)` of the root read now, not through the map: a
    /// local file by `pread`, a remote one by range. The range was
    /// validated at open (it lay within the file as it was).
    fn read_root(&self, off: u64, len: u64) -> Result<Vec<u8>> {
        let Some(file) = self.root.file() else {
            return self.root.slice(off, len).map(|b| b.into_owned());
        };
        let mut buf = vec![0; len as usize];
        std::os::unix::fs::FileExt::read_exact_at(file, &mut buf, off)
            .map_err(|e| Error::io(self.root.name(), e))?;
        Ok(buf)
    }

    /// A part's stored bytes, to be read by range.
    pub fn blob(&self, part: &Part) -> Result<crate::store::Blob<'_>> {
        Ok(crate::store::Blob {
            store: self.store_of(part)?,
            offset: part.blob.offset,
            len: part.blob.length,
        })
    }

    /// The file holding a part's stored bytes. A shard is proven to be the
    /// declared one (its whole-file digest) before any of its bytes are
    /// handed out, unless shards are trusted. A sharded safetensors
    /// checkpoint's part is in the file its `blob.shard` names; a deflated
    /// `.npz` member's in the archive's file of inflated members, inflated
    /// first if it is not yet (long work: see [`Model::at_hand`]).
    pub fn store_of(&self, part: &Part) -> Result<&Store> {
        match &part.blob.shard {
            None => Ok(&self.root),
            Some(name) if self.is_made_name(name) => self.made_file(part, &mut |_| Ok(())),
            Some(name) if self.opened_files() => self.checkpoint_file(name),
            Some(name) => self.prove_shard(name, &mut |_| {}),
        }
    }

    /// Resolves shard `name` and checks its whole-file digest against the
    /// shard table (once; the outcome is remembered), reporting hashed
    /// bytes to `progress`. A shard found by identity was hashed to be
    /// found; a trusted one is not hashed.
    pub fn prove_shard(&self, name: &str, progress: &mut dyn FnMut(u64)) -> Result<&Store> {
        let (store, found) = self.shard(name)?;
        if self.trust_shards || found == Found::Identity {
            return Ok(store);
        }
        let i = self.shard_index(name)?;
        let entry = &self.shard_table()[i];
        let proof = self.proofs[i].get_or_init(|| {
            shards::verify_digest(store, entry, progress).map_err(|e| ShardError {
                rule: e.rule(),
                detail: e.detail(),
            })
        });
        match proof {
            Ok(()) => Ok(store),
            Err(e) => Err(e.to_error()),
        }
    }

    /// False when shard `name` cannot serve bytes as far as is known: it
    /// cannot be resolved, or its digest was checked and differs. Does not
    /// hash anything itself.
    pub fn shard_usable(&self, name: &str) -> bool {
        if self.is_made_name(name) {
            return true;
        }
        if self.opened_files() {
            return self.checkpoint_file(name).is_ok();
        }
        let failed_proof = self
            .shard_index(name)
            .is_ok_and(|i| matches!(self.proofs[i].get(), Some(Err(_))));
        self.shard(name).is_ok() && !failed_proof
    }

    fn shard_index(&self, name: &str) -> Result<usize> {
        self.shard_table()
            .iter()
            .position(|s| s.name == name)
            .ok_or_else(|| Error::NotFound(format!("shard {name:?}")))
    }

    /// The shard table, empty when there is none.
    pub fn shard_table(&self) -> &[Shard] {
        self.manifest
            .as_ref()
            .and_then(|m| m.shards.as_deref())
            .unwrap_or_default()
    }

    /// The opened shard `name` and how it was found, resolving it on first use.
    pub fn shard(&self, name: &str) -> Result<(&Store, Found)> {
        let (i, entry) = self
            .shard_table()
            .iter()
            .enumerate()
            .find(|(_, s)| s.name == name)
            .ok_or_else(|| Error::NotFound(format!("shard {name:?}")))?;
        let slot = self.shards[i].get_or_init(|| {
            // The root and each shard, once resolved, are held open.
            let files = self.shard_table().len().saturating_add(1);
            shards::resolve(self.root.path(), entry, &self.overrides, files)
                .map(|r| (r.store, r.found))
                .map_err(|e| ShardError {
                    rule: e.rule(),
                    detail: e.detail(),
                })
        });
        match slot {
            Ok((store, found)) => Ok((store, *found)),
            Err(e) => Err(e.to_error()),
        }
    }
}

impl ShardError {
    fn to_error(&self) -> Error {
        match self.rule {
            Some(rule) => Error::reject(rule, self.detail.clone()),
            None => Error::Unsupported(self.detail.clone()),
        }
    }
}

/// Refuses `--shard` for a file that has no shards, saying why.
fn no_shards(overrides: &[(String, PathBuf)], why: &str) -> Result<()> {
    match overrides.first() {
        Some((name, _)) => Err(Error::Usage(format!("--shard {name}: {why}"))),
        None => Ok(()),
    }
}
