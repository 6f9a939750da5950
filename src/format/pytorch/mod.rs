//! PyTorch checkpoints in the zip format `torch.save` writes since 1.6:
//! pure bytes in (through [`Ranges`]), the tensors and where their bytes
//! are out. Nothing in the file is ever run.
//!
//! An archive holds, under one top folder `ARCHIVE/`: `data.pkl` (the
//! pickled object: a state dict, or a dict holding one), `data/KEY` (each
//! storage's bytes, stored uncompressed and 64-byte aligned), `byteorder`
//! (`little`; absent in files of torch before 1.10, which wrote little
//! endian), `version` and `.data/serialization_id`. [`read_file_from`]:
//!
//! 1. reads the zip directory ([`crate::format::zip`]);
//! 2. checks the layout: one top folder, `data.pkl` there, no
//!    `constants.pkl` or `code/` (a TorchScript archive, refused by name:
//!    its tensors come with code), `byteorder` `little`;
//! 3. runs `data.pkl` through [`pickle`], which builds values only for
//!    the allowlist of `torch.load(weights_only=True)`;
//! 4. names each tensor by its path in the pickled value (dict keys and
//!    list indices joined by `.`: a state dict's own names, and for a
//!    training checkpoint `state_dict.layer.weight`); other values (an
//!    epoch number, a config string) are counted, not served;
//! 5. checks each tensor against its storage's member: stored, of the size
//!    its id says, holding every element the tensor's offset, size and
//!    strides reach.
//!
//! A tensor whose elements are its storage's bytes in row-major order
//! ([`Tensor::contiguous`]) is that range of the file; several tensors of
//! one storage (tied weights) are ranges of the same bytes.

pub mod json;
pub mod objects;
pub mod pickle;

#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::error::{Error, Result, Rule};
use crate::format::safetensors::Dtype;
use crate::format::zip::{self, Member};
use crate::format::Ranges;
pub use pickle::QType;
use pickle::{Obj, Pickled, StorageType, Value};

/// The largest `data.pkl` read, in bytes (it is read whole).
pub const MAX_PICKLE_LEN: u64 = 1 << 30;
/// The deepest nesting of containers walked for tensors.
pub const MAX_DEPTH: usize = 64;
/// Most tensors a checkpoint may name (the largest models have tens of
/// thousands): a pickle names a tensor already named in 8 bytes, and each
/// costs an object of a few hundred bytes for the mount's life.
pub const MAX_TENSORS: usize = 1 << 20;

/// A storage's bytes in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Storage {
    /// The checkpoint file holding it: an index into [`File::files`], 0
    /// for a checkpoint of one file.
    pub file: usize,
    pub key: String,
    /// Where its member's bytes start.
    pub offset: u64,
    pub len: u64,
}

/// A tensor of the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    pub name: String,
    pub dtype: Dtype,
    pub shape: Vec<u64>,
    /// In elements.
    pub stride: Vec<u64>,
    /// In elements, from the storage's start.
    pub offset: u64,
    /// Index into [`File::storages`].
    pub storage: usize,
    /// Torch's negative bit: its values are the stored ones negated.
    pub neg: bool,
    /// Torch's conjugate bit: its values are the stored ones conjugated.
    pub conj: bool,
    /// A quantized tensor's type and scheme: its `dtype` is its integers',
    /// its values are computed from them.
    pub quant: Option<Quant>,
}

/// A quantized tensor's integer type and scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quant {
    pub ty: QType,
    pub scheme: Scheme,
}

/// How a quantized tensor's integers become values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheme {
    /// `torch.per_tensor_affine`: the scale's bits (an f64) and the zero
    /// point.
    PerTensor { scale: u64, zero_point: i64 },
    /// `torch.per_channel_affine` along dimension `axis`.
    PerChannel {
        axis: usize,
        scales: Located,
        zero_points: Located,
    },
}

/// A per-channel parameter tensor's values: `count` of 8 bytes at
/// `byte_offset` of storage `storage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Located {
    pub storage: usize,
    pub byte_offset: u64,
    pub count: u64,
}

impl Tensor {
    /// Its element count (checked against its storage at read).
    pub fn numel(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Its first element's byte in its storage: 0 for an empty tensor,
    /// whose offset may lie anywhere (checked against the storage at read
    /// otherwise: no overflow).
    pub fn byte_offset(&self) -> u64 {
        match self.numel() {
            0 => 0,
            _ => self.offset * self.width(),
        }
    }

    /// Bytes per element.
    pub fn width(&self) -> u64 {
        width(self.dtype)
    }

    /// True when its values are its storage's bytes as they are: it is
    /// [`Tensor::contiguous`] and no sign bit is flipped
    /// ([`Tensor::sign_flip`]). Any other tensor is computed by range.
    pub fn in_place(&self) -> bool {
        self.contiguous() && self.sign_flip().is_none()
    }

    /// Where torch's negative and conjugate bits flip its row-major bytes:
    /// the top bit of each byte `k` (of `mask`'s bits) of every `period`
    /// bytes. A negation flips each sign bit (bit for bit what torch's
    /// `resolve_neg` computes, NaNs and zeros included); a conjugation of
    /// complex64 flips the imaginary part's; of a real dtype, nothing.
    pub fn sign_flip(&self) -> Option<(u64, u8)> {
        let w = self.width();
        let conj = self.conj && self.dtype == Dtype::C64;
        match (self.neg, conj) {
            (false, false) => None,
            (false, true) => Some((8, 1 << 7)),
            // -(a - bi) = -a + bi: the real part's sign only.
            (true, true) => Some((8, 1 << 3)),
            (true, false) if self.dtype == Dtype::C64 => Some((4, 1 << 3)),
            (true, false) => Some((w, 1 << (w - 1))),
        }
    }

    /// True when its elements are its storage's bytes from its offset in
    /// row-major order (a dimension of size 1 may have any stride, as
    /// `torch.Tensor.is_contiguous` says).
    pub fn contiguous(&self) -> bool {
        let mut want = 1u64;
        for (&d, &s) in self.shape.iter().zip(&self.stride).rev() {
            if d != 1 && s != want {
                return self.numel() == 0;
            }
            want = want.saturating_mul(d);
        }
        true
    }
}

/// Bytes per element of `d` (every dtype a torch storage has is whole
/// bytes).
pub fn width(d: Dtype) -> u64 {
    match d {
        Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::BF16 => 2,
        Dtype::I32 | Dtype::U32 | Dtype::F32 => 4,
        Dtype::I64 | Dtype::U64 | Dtype::F64 | Dtype::C64 => 8,
        _ => 1,
    }
}

/// A checkpoint's tensors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// The archive's top folder (the first file's, for a sharded
    /// checkpoint).
    pub archive: String,
    /// The files of a sharded checkpoint, as its index names them; empty
    /// for one file.
    pub files: Vec<String>,
    /// `data.pkl`'s length.
    pub pickle_len: u64,
    pub storages: Vec<Storage>,
    /// In the pickled value's order.
    pub tensors: Vec<Tensor>,
    /// Values of the pickled object that are not tensors (an epoch, a
    /// config): counted, not served.
    pub other_values: usize,
}

impl File {
    /// Its storages' bytes together.
    pub fn data_len(&self) -> u64 {
        (self.storages.iter()).fold(0u64, |a, s| a.saturating_add(s.len))
    }
}

/// The files of a sharded checkpoint merged into one [`File`], file by
/// file, then its tensors put in the index's order.
#[derive(Debug, Default)]
pub struct Merged {
    file: Option<File>,
}

impl Merged {
    /// True once a file was added.
    pub fn is_started(&self) -> bool {
        self.file.is_some()
    }

    /// Adds checkpoint file `name`, read as `f`.
    pub fn add(&mut self, name: &str, mut f: File) {
        let merged = self.file.get_or_insert_with(|| File {
            archive: f.archive.clone(),
            files: Vec::new(),
            pickle_len: 0,
            storages: Vec::new(),
            tensors: Vec::new(),
            other_values: 0,
        });
        let (file, base) = (merged.files.len(), merged.storages.len());
        merged.files.push(name.to_string());
        merged.pickle_len += f.pickle_len;
        merged.other_values += f.other_values;
        merged
            .storages
            .extend(f.storages.drain(..).map(|s| Storage { file, ..s }));
        merged.tensors.extend(f.tensors.drain(..).map(|t| Tensor {
            storage: base + t.storage,
            ..t
        }));
    }

    /// The merged checkpoint, its tensors in the order of `names` (every
    /// tensor's name once: the index was checked against each file).
    pub fn finish<'a>(self, names: impl Iterator<Item = &'a str>) -> File {
        let mut f = self.file.unwrap_or_else(|| File {
            archive: String::new(),
            files: Vec::new(),
            pickle_len: 0,
            storages: Vec::new(),
            tensors: Vec::new(),
            other_values: 0,
        });
        let mut by_name: HashMap<String, Tensor> =
            f.tensors.drain(..).map(|t| (t.name.clone(), t)).collect();
        f.tensors = names.filter_map(|n| by_name.remove(n)).collect();
        f
    }
}

fn archive_err(what: impl std::fmt::Display) -> Error {
    Error::reject(Rule::TorchArchive, what.to_string())
}

/// Reads and checks a checkpoint (see the module docs).
pub fn read_file_from(file: &(dyn Ranges + Sync)) -> Result<File> {
    read_archive(file, &zip::members(file)?)
}

/// True when `members` are those of a `torch.save` archive (or of a
/// TorchScript one, refused by [`read_archive`]): a `data.pkl` or a
/// `constants.pkl` one folder down.
pub fn is_torch(members: &[Member]) -> bool {
    members.iter().any(|m| {
        let mut parts = m.name.split(|&b| b == b'/');
        let (_, second, rest) = (parts.next(), parts.next(), parts.next());
        rest.is_none() && matches!(second, Some(b"data.pkl" | b"constants.pkl"))
    })
}

/// [`read_file_from`] of an archive whose members are read already.
pub fn read_archive(file: &dyn Ranges, members: &[Member]) -> Result<File> {
    let archive = top_folder(members)?;
    // By name: a pickle may name a storage for each of millions of tensors.
    // A name given twice is refused: Python's zipfile reads the last,
    // torch's reader (miniz) whichever its search meets.
    let mut by_name: HashMap<&[u8], &Member> = HashMap::with_capacity(members.len());
    for m in members {
        if by_name.insert(m.name.as_slice(), m).is_some() {
            return Err(archive_err(format!(
                "member {:?} is in the archive twice: zip readers differ on which they read",
                m.name()
            )));
        }
    }
    let find = |rest: &str| by_name.get(format!("{archive}/{rest}").as_bytes()).copied();
    let code = format!("{archive}/code/");
    let code = code.as_bytes();
    if find("constants.pkl").is_some() || members.iter().any(|m| m.name.starts_with(code)) {
        // A valid file ztfs will not interpret, as the other foreign
        // formats: refused, not rejected.
        return Err(Error::Unsupported(
            "a TorchScript archive (torch.jit.save: constants.pkl, code/): its tensors come with code, which ztfs does not run; save the module's state_dict() with torch.save".into(),
        ));
    }
    let pkl = find("data.pkl")
        .ok_or_else(|| archive_err(format!("no {archive}/data.pkl: not a torch.save archive")))?;
    if let Some(b) = find("byteorder") {
        let bytes = stored(file, b, 16)?;
        if bytes != b"little" {
            return Err(archive_err(format!(
                "byteorder {:?}: only little-endian checkpoints are read",
                String::from_utf8_lossy(&bytes)
            )));
        }
    }
    let data = stored(file, pkl, MAX_PICKLE_LEN)?;
    let pickled = pickle::load(&data)?;
    drop(data);
    let mut walk = Walk::new(&pickled);
    walk.value(pickled.value, &mut Vec::new(), 0)?;
    let (found, other_values) = (walk.found, walk.other);
    let mut storages = Storages {
        list: Vec::new(),
        by_key: HashMap::new(),
    };
    let mut tensors = Vec::with_capacity(found.len());
    for (name, t) in found {
        let storage = storages.of(&pickled, t.storage, &find, &archive)?;
        let quant = match &t.quant {
            None => None,
            Some((ty, scheme)) => Some(Quant {
                ty: *ty,
                scheme: quant_scheme(&name, t, scheme, &pickled, &mut storages, &find, &archive)?,
            }),
        };
        let tensor = Tensor {
            name,
            dtype: t.dtype,
            shape: t.shape.clone(),
            stride: t.stride.clone(),
            offset: t.offset,
            storage,
            neg: t.neg,
            conj: t.conj,
            quant,
        };
        check_extent(&tensor, storages.list[storage].len)?;
        tensors.push(tensor);
    }
    let storages = storages.list;
    Ok(File {
        archive,
        files: Vec::new(),
        pickle_len: pkl.len,
        storages,
        tensors,
        other_values,
    })
}

/// The storages a checkpoint's tensors name, each once.
struct Storages<'k> {
    list: Vec<Storage>,
    /// torch.load keeps one storage per key, however many ids name it, as
    /// the type the first names: a later id naming another type would be
    /// read as the first's by torch and as its own here. torch.save never
    /// writes one ("Cannot save multiple tensors or storages that view the
    /// same data as different types"): refused.
    by_key: HashMap<&'k str, (usize, StorageType)>,
}

impl<'k> Storages<'k> {
    /// The index of the storage at arena index `at` of `pickled`, its
    /// member found by `find` and checked the first time.
    fn of(
        &mut self,
        pickled: &'k Pickled,
        at: u32,
        find: &dyn Fn(&str) -> Option<&'k Member>,
        archive: &str,
    ) -> Result<usize> {
        let Some(Obj::Storage(s)) = pickled.arena.get(at as usize) else {
            unreachable!("the pickle makes a tensor of a storage only")
        };
        match self.by_key.get(s.key.as_str()) {
            Some(&(k, ty)) if ty == s.ty => Ok(k),
            Some(&(_, ty)) => {
                let named = |t: StorageType| match t {
                    StorageType::Typed(d) => format!("{d:?}"),
                    StorageType::Untyped => "untyped".into(),
                    StorageType::Quant(q) => format!("{q:?}"),
                    StorageType::Other(_) => "a type without a zTensor one".into(),
                };
                Err(archive_err(format!(
                    "storage {:?} is named as two types ({} and {}): torch would read both as the first",
                    s.key,
                    named(ty),
                    named(s.ty)
                )))
            }
            None => {
                let m = find(&format!("data/{}", s.key)).ok_or_else(|| {
                    archive_err(format!(
                        "storage {:?} has no member {archive}/data/{}",
                        s.key, s.key
                    ))
                })?;
                check_member(m)?;
                let unit = match s.ty {
                    StorageType::Typed(d) => width(d),
                    StorageType::Untyped => 1,
                    StorageType::Quant(q) => q.width(),
                    StorageType::Other(w) => w,
                };
                let want = s.numel.checked_mul(unit);
                if want != Some(m.len) {
                    return Err(archive_err(format!(
                        "storage {:?} holds {} bytes; its id says {} elements of {unit} bytes",
                        s.key, m.len, s.numel
                    )));
                }
                self.list.push(Storage {
                    file: 0,
                    key: s.key.clone(),
                    offset: m.offset,
                    len: m.len,
                });
                self.by_key.insert(&s.key, (self.list.len() - 1, s.ty));
                Ok(self.list.len() - 1)
            }
        }
    }
}

/// A quantized tensor's scheme, its per-channel parameter tensors found
/// and checked: 1-D, contiguous, one value per index of the channel
/// dimension, f64 scales and i64 zero points (what torch saves).
fn quant_scheme<'k>(
    name: &str,
    t: &pickle::Tensor,
    scheme: &pickle::QScheme,
    pickled: &'k Pickled,
    storages: &mut Storages<'k>,
    find: &dyn Fn(&str) -> Option<&'k Member>,
    archive: &str,
) -> Result<Scheme> {
    let (scales, zero_points, axis) = match *scheme {
        pickle::QScheme::PerTensor { scale, zero_point } => {
            return Ok(Scheme::PerTensor { scale, zero_point })
        }
        pickle::QScheme::PerChannel {
            scales,
            zero_points,
            axis,
        } => (scales, zero_points, axis),
    };
    let channels = t.shape[axis];
    let mut param = |at: u32, dtype: Dtype, what: &str| -> Result<Located> {
        let bad = |why: String| {
            Error::reject(
                Rule::TorchTensor,
                format!("tensor {name:?}: its {what}: {why}"),
            )
        };
        let Some(Obj::Tensor(p)) = pickled.arena.get(at as usize) else {
            return Err(bad("not a tensor".into()));
        };
        let contiguous = p.stride.first().is_none_or(|&s| s == 1 || channels <= 1);
        if p.dtype != dtype || p.shape != [channels] || !contiguous || p.neg || p.quant.is_some() {
            return Err(bad(format!(
                "not a contiguous {dtype:?} tensor of its {channels} channels (size {:?}, stride {:?}, {:?})",
                p.shape, p.stride, p.dtype
            )));
        }
        let storage = storages.of(pickled, p.storage, find, archive)?;
        let located = Tensor {
            name: format!("{name} ({what})"),
            dtype,
            shape: p.shape.clone(),
            stride: vec![1],
            offset: p.offset,
            storage,
            neg: false,
            conj: false,
            quant: None,
        };
        check_extent(&located, storages.list[storage].len)?;
        Ok(Located {
            storage,
            byte_offset: located.byte_offset(),
            count: channels,
        })
    };
    Ok(Scheme::PerChannel {
        axis,
        scales: param(scales, Dtype::F64, "scales")?,
        zero_points: param(zero_points, Dtype::I64, "zero points")?,
    })
}

/// The one top folder every member is under.
fn top_folder(members: &[Member]) -> Result<String> {
    let mut top: Option<&[u8]> = None;
    for m in members {
        let first = m.name.split(|&b| b == b'/').next().unwrap_or_default();
        if m.name.len() == first.len() {
            return Err(archive_err(format!(
                "member {:?} is not under a folder: not a torch.save archive",
                m.name()
            )));
        }
        match top {
            Some(t) if t != first => {
                return Err(archive_err(format!(
                    "members under two top folders ({:?} and {:?}): not a torch.save archive",
                    String::from_utf8_lossy(t),
                    String::from_utf8_lossy(first)
                )))
            }
            _ => top = Some(first),
        }
    }
    let top = top.ok_or_else(|| archive_err("an empty zip archive"))?;
    String::from_utf8(top.to_vec()).map_err(|_| archive_err("the top folder's name is not UTF-8"))
}

fn check_member(m: &Member) -> Result<()> {
    match m.is_stored() {
        true => Ok(()),
        false => Err(Error::reject(
            Rule::Zip,
            format!(
                "member {:?} is {}: torch.save stores every member, and ztfs maps them in place",
                m.name(),
                if m.encrypted {
                    "encrypted".to_string()
                } else {
                    format!("compressed (method {})", m.method)
                }
            ),
        )),
    }
}

/// A stored member's bytes, at most `max` of them.
fn stored(file: &dyn Ranges, m: &Member, max: u64) -> Result<Vec<u8>> {
    check_member(m)?;
    if m.len > max {
        return Err(archive_err(format!(
            "member {:?} is {} bytes; at most {max} are read",
            m.name(),
            m.len
        )));
    }
    Ok(file.get(m.offset, m.len)?.into_owned())
}

/// Checks that every element `t` reaches lies in its storage's `len` bytes.
fn check_extent(t: &Tensor, len: u64) -> Result<()> {
    let bad = |why: String| Error::reject(Rule::TorchTensor, format!("tensor {:?}: {why}", t.name));
    let numel = (t.shape.iter()).try_fold(1u64, |a, &d| a.checked_mul(d));
    let numel = numel
        .filter(|n| n.checked_mul(t.width()).is_some())
        .ok_or_else(|| bad(format!("size {:?} overflows", t.shape)))?;
    let elems = len / t.width();
    // An empty tensor may name any offset (torch's set_ checks none
    // then): it has no bytes, so it reads none of its storage.
    if numel == 0 {
        return Ok(());
    }
    let last = (t.shape.iter().zip(&t.stride)).try_fold(t.offset, |a, (&d, &s)| {
        (d - 1).checked_mul(s).and_then(|x| a.checked_add(x))
    });
    match last {
        Some(last) if last < elems => Ok(()),
        _ => Err(bad(format!(
            "offset {}, size {:?} and stride {:?} reach past its storage's {elems} elements",
            t.offset, t.shape, t.stride
        ))),
    }
}

/// The longest tensor name a walk makes, in bytes (its keys joined by
/// `.`): far past any real one, short of a key of megabytes named again
/// at each of a million entries.
pub const MAX_NAME_LEN: usize = 1 << 16;
/// Most bytes of dict keys a walk reads, all entries together: a key is
/// one string of the arena however many entries name it (a memo fetch),
/// so without this a short pickle could make the walk hash gigabytes.
pub const MAX_KEY_BYTES: usize = 256 << 20;

/// A dict key, as Python compares it: `"1"` and `1` are two keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key<'a> {
    Str(&'a str),
    Int(i64),
}

impl Key<'_> {
    fn shown(&self) -> String {
        match self {
            Key::Str(s) => format!("{s:?} (a string)"),
            Key::Int(n) => format!("{n} (an int)"),
        }
    }
}

/// The walk of the pickled value for its tensors.
struct Walk<'a> {
    p: &'a Pickled,
    /// Containers walked, by arena index.
    seen: HashSet<u32>,
    names: HashSet<String>,
    found: Vec<(String, &'a pickle::Tensor)>,
    other: usize,
    /// Bytes of dict keys read so far (see [`MAX_KEY_BYTES`]).
    key_bytes: usize,
}

impl<'a> Walk<'a> {
    fn new(p: &'a Pickled) -> Walk<'a> {
        Walk {
            p,
            seen: HashSet::new(),
            names: HashSet::new(),
            found: Vec::new(),
            other: 0,
            key_bytes: 0,
        }
    }

    fn value(&mut self, v: Value, path: &mut Vec<Cow<'a, str>>, depth: usize) -> Result<()> {
        let bad = |why: String| Error::reject(Rule::TorchPickle, why);
        if depth > MAX_DEPTH {
            return Err(bad(format!("containers nest deeper than {MAX_DEPTH}")));
        }
        let Value::Obj(i) = v else {
            self.other += 1;
            return Ok(());
        };
        let p = self.p;
        match &p.arena[i as usize] {
            Obj::Tensor(t) => self.tensor(t, path),
            Obj::Dict(_) | Obj::OrderedDict(_) | Obj::List(_) | Obj::Tuple(_) | Obj::Set(_)
                if !self.seen.insert(i) =>
            {
                Err(bad(
                    "a container reached twice (a cycle, or one shared between entries)".into(),
                ))
            }
            Obj::Dict(items) | Obj::OrderedDict(items) => {
                for (key, v) in self.entries(items)? {
                    path.push(key);
                    self.value(v, path, depth + 1)?;
                    path.pop();
                }
                Ok(())
            }
            Obj::List(items) | Obj::Tuple(items) | Obj::Set(items) => {
                for (k, &v) in items.iter().enumerate() {
                    path.push(Cow::Owned(k.to_string()));
                    self.value(v, path, depth + 1)?;
                    path.pop();
                }
                Ok(())
            }
            Obj::Storage(_) => Err(Error::reject(
                Rule::TorchTensor,
                format!("{:?} is a bare storage, not a tensor", path.join(".")),
            )),
            Obj::Str(_) | Obj::Global(_) => {
                self.other += 1;
                Ok(())
            }
        }
    }

    fn tensor(&mut self, t: &'a pickle::Tensor, path: &[Cow<'a, str>]) -> Result<()> {
        let err = |why: String| Error::reject(Rule::TorchTensor, why);
        let len = (path.iter()).fold(path.len().saturating_sub(1), |a, k| a + k.len());
        if len > MAX_NAME_LEN {
            return Err(err(format!(
                "a tensor's name would be {len} bytes (at most {MAX_NAME_LEN})"
            )));
        }
        let name = match path.is_empty() {
            true => "tensor".to_string(),
            false => path.join("."),
        };
        if self.found.len() >= MAX_TENSORS {
            return Err(err(format!("more than {MAX_TENSORS} tensors")));
        }
        if name.is_empty() || !self.names.insert(name.clone()) {
            return Err(err(format!("two tensors are named {name:?}")));
        }
        self.found.push((name, t));
        Ok(())
    }

    /// A dict's entries by name, as Python holds them: a key set again
    /// keeps its first place with its last value. Two keys that name the
    /// same entry (`"1"` and `1`, two things to Python) are refused.
    fn entries(&mut self, items: &'a [(Value, Value)]) -> Result<Vec<(Cow<'a, str>, Value)>> {
        let bad = |why: String| Error::reject(Rule::TorchPickle, why);
        let mut order: Vec<(Cow<'a, str>, Value)> = Vec::new();
        let mut at: HashMap<Cow<'a, str>, (Key<'a>, usize)> = HashMap::new();
        for &(k, v) in items {
            let key = match (k, self.p.obj(k)) {
                (_, Some(Obj::Str(s))) => Key::Str(s),
                (Value::Int(n), _) => Key::Int(n),
                _ => {
                    return Err(bad(format!(
                        "a dict key {k:?} that is not a string or an int"
                    )))
                }
            };
            let name = match key {
                Key::Str(s) => Cow::Borrowed(s),
                Key::Int(n) => Cow::Owned(n.to_string()),
            };
            self.key_bytes = self.key_bytes.saturating_add(name.len());
            if self.key_bytes > MAX_KEY_BYTES {
                return Err(bad(format!(
                    "the dicts' keys take more than {} MiB together",
                    MAX_KEY_BYTES >> 20
                )));
            }
            match at.get(&name) {
                Some(&(first, j)) if first == key => order[j].1 = v,
                Some(&(first, _)) => {
                    return Err(bad(format!(
                        "dict keys {} and {} would both name {name:?}",
                        first.shown(),
                        key.shown()
                    )))
                }
                None => {
                    at.insert(name.clone(), (key, order.len()));
                    order.push((name, v));
                }
            }
        }
        Ok(order)
    }
}
