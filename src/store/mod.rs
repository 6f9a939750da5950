//! The only file access: open, map or fetch, and hand out bounded ranges.
//!
//! A [`Store`] is one open file: a local file, mapped read-only, or a
//! remote object (HTTP(S) or S3, see [`remote`]) read by range requests.
//! A mapping of a file that is later replaced by rename keeps the old
//! bytes, which is what a mount wants; a remote object is pinned at open
//! by its ETag. The one mmap `unsafe` of the crate is here.

#[cfg(feature = "remote")]
mod aws;
#[cfg(feature = "remote")]
mod blocks;
#[cfg(feature = "remote")]
mod bounded;
#[cfg(feature = "remote")]
pub mod disk;
#[cfg(feature = "remote")]
pub mod remote;
/// Built without the `remote` feature: URLs are told, and refused.
#[cfg(not(feature = "remote"))]
#[path = "no_remote.rs"]
pub mod remote;

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};

use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

use memmap2::Mmap;

use crate::error::{Error, Result};

/// What a file of this mode (`st_mode`) is, for messages.
pub fn kind_of(mode: u32) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "regular file",
        libc::S_IFLNK => "symbolic link",
        libc::S_IFDIR => "directory",
        libc::S_IFIFO => "FIFO",
        libc::S_IFSOCK => "socket",
        libc::S_IFCHR => "character device",
        libc::S_IFBLK => "block device",
        _ => "special file",
    }
}

/// Bytes of a store: borrowed from a map, or a range of a shared buffer.
pub enum Piece<'a> {
    Borrowed(&'a [u8]),
    Shared(std::sync::Arc<Vec<u8>>, std::ops::Range<usize>),
}

/// One open file: mapped, or fetched by range.
pub struct Store {
    path: PathBuf,
    kind: Kind,
    /// A file of ours (an `.npz` archive's inflated members, in an
    /// unlinked temporary file): `path` names it for messages only, and
    /// nothing else can change it.
    own: bool,
}

enum Kind {
    Local { file: File, bytes: Bytes },
    Remote(Box<remote::Remote>),
}

enum Bytes {
    Map(Mmap),
    // An empty file cannot be mapped.
    Empty,
}

/// What the open of a remote object reads besides its size and version
/// (a local file is mapped whatever is asked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Open {
    /// A model's first file, of a format not known yet: its last MiB and
    /// its first block at once, one round trip whichever end its header
    /// is at.
    Any,
    /// A file its model names (a checkpoint's file, a split GGUF model's
    /// part), of hundreds perhaps: its first 64 KiB only
    /// ([`remote::HEAD`]), where a safetensors or GGUF header starts; its
    /// reader asks for what else it needs (the rest of a longer header, a
    /// zip's end), so an open costs its header, not two megabytes.
    Head,
}

impl Store {
    /// Opens `path`: a URL (`http://`, `https://`, `s3://`) as a remote
    /// object, anything else as a local file, mapped.
    pub fn open(path: &Path) -> Result<Store> {
        Store::open_as(path, Open::Any)
    }

    /// [`Store::open`], a remote object read at open as `open` says.
    pub fn open_as(path: &Path, open: Open) -> Result<Store> {
        if let Some(url) = remote::url_of(path) {
            return Ok(Store {
                path: path.to_path_buf(),
                kind: Kind::Remote(Box::new(remote::Remote::open(url, open)?)),
                own: false,
            });
        }
        let ctx = || format!("{}", path.display());
        // O_NONBLOCK: opening a FIFO (or a symlink to one) for reading
        // would otherwise wait for a writer forever; the type is checked on
        // the open handle, so nothing can be swapped in between. The flag
        // changes nothing for a regular file, which is all we map.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|e| Error::io(ctx(), e))?;
        Store::of_file(path, file)
    }

    /// [`Store::open`] of file `path` of a model that holds its `files`
    /// files open together (a split GGUF model, a sharded checkpoint): an
    /// open refused for the limit on open files says so, with the limit
    /// and how to raise it ([`crate::sys::explain_open_limit`]).
    pub fn open_one_of(path: &Path, files: usize, open: Open) -> Result<Store> {
        Store::open_as(path, open).map_err(|e| match e {
            Error::Io { context, source } => {
                Error::io(context, crate::sys::explain_open_limit(source, files))
            }
            e => e,
        })
    }

    /// The open `file`, named `path` in messages, mapped.
    pub fn of_file(path: &Path, file: File) -> Result<Store> {
        let ctx = || format!("{}", path.display());
        let meta = file.metadata().map_err(|e| Error::io(ctx(), e))?;
        if !meta.is_file() {
            return Err(Error::at(
                ctx(),
                Error::Usage(format!("not a regular file (a {})", kind_of(meta.mode()))),
            ));
        }
        let bytes = if meta.len() == 0 {
            Bytes::Empty
        } else {
            // SAFETY: the map is read-only and private to this process. The
            // file may still change underneath (truncation, in-place writes);
            // ztfs treats the file as immutable, as the format says it is
            // (§2.5), and a reader of a truncated file may fault. Callers that
            // must survive truncation (the mount) check the length first.
            #[allow(unsafe_code)]
            let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(ctx(), e))?;
            Bytes::Map(map)
        };
        Ok(Store {
            path: path.to_path_buf(),
            kind: Kind::Local { file, bytes },
            own: false,
        })
    }

    /// The file of ours `file` (unlinked, written by us only), named
    /// `name` in messages, mapped.
    pub fn of_own(name: &Path, file: File) -> Result<Store> {
        let mut store = Store::of_file(name, file)?;
        store.own = true;
        Ok(store)
    }

    /// True for a file of ours ([`Store::of_own`]): it has no path to
    /// look at again, and nobody else can change it.
    pub fn is_own(&self) -> bool {
        self.own
    }

    /// The whole file, mapped; `None` for a remote object.
    pub fn map(&self) -> Option<&[u8]> {
        match &self.kind {
            Kind::Local {
                bytes: Bytes::Map(m),
                ..
            } => Some(m),
            Kind::Local {
                bytes: Bytes::Empty,
                ..
            } => Some(&[]),
            Kind::Remote(_) => None,
        }
    }

    /// The whole file, mapped, for work that needs all of it at once; an
    /// error naming `what` for a remote object.
    pub fn whole(&self, what: &str) -> Result<&[u8]> {
        self.map().ok_or_else(|| {
            Error::at(
                self.name(),
                Error::Unsupported(format!(
                    "{what} needs a local file for now; download it first"
                )),
            )
        })
    }

    /// Tells a remote object where the model's parts in it are (offset,
    /// length), for its read-ahead across parts; nothing for a file.
    pub fn set_parts(&self, parts: Vec<(u64, u64)>) {
        if let Kind::Remote(r) = &self.kind {
            r.set_parts(parts);
        }
    }

    /// A remote object makes its client in this process now, in the
    /// background (a daemon just forked has none), so that its first read
    /// does not wait for it; nothing for a file.
    pub fn prepare(&self) {
        if let Kind::Remote(r) = &self.kind {
            r.prepare();
        }
    }

    /// True for a remote object.
    pub fn is_remote(&self) -> bool {
        matches!(self.kind, Kind::Remote(_))
    }

    /// Length in bytes at open time.
    pub fn len(&self) -> u64 {
        match &self.kind {
            Kind::Local { .. } => self.map().map_or(0, |m| m.len() as u64),
            Kind::Remote(r) => r.len(),
        }
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file's length now, which may be less than at open if it was
    /// truncated in place (a read of the map past the new end would fault).
    /// A remote object is pinned at open: its reads fail if it changes.
    pub fn live_len(&self) -> Result<u64> {
        match &self.kind {
            Kind::Local { file, .. } => crate::sys::file_len(file)
                .map_err(|e| Error::io(self.path.display().to_string(), e)),
            Kind::Remote(r) => Ok(r.len()),
        }
    }

    /// The path (or URL) it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open local file; `None` for a remote object.
    pub fn file(&self) -> Option<&File> {
        match &self.kind {
            Kind::Local { file, .. } => Some(file),
            Kind::Remote(_) => None,
        }
    }

    /// The file's path or URL as ztfs shows it (see [`shown`]).
    pub fn name(&self) -> String {
        shown(&self.path)
    }

    /// `len` bytes at `offset`: borrowed from the map, or fetched. An
    /// error if the range is outside the file or cannot be read.
    pub fn slice(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        self.slice_of(None, offset, len)
    }

    /// [`Store::slice`] of `[offset, offset + len)` within the blob at
    /// `blob_offset` of `blob_len` bytes: the same bytes, read on the
    /// blob's blocks where the store is remote (see [`Store::blob_piece`]).
    pub fn blob_slice(
        &self,
        blob_offset: u64,
        blob_len: u64,
        offset: u64,
        len: u64,
    ) -> Result<Cow<'_, [u8]>> {
        self.slice_of(Some((blob_offset, blob_len)), offset, len)
    }

    fn slice_of(&self, blob: Option<(u64, u64)>, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        let end = offset.checked_add(len).filter(|&e| e <= self.len());
        let Some(end) = end else {
            return Err(Error::at(
                self.name(),
                Error::OutOfRange(format!(
                    "range [{offset}, +{len}) is outside the file ({} bytes)",
                    self.len()
                )),
            ));
        };
        match &self.kind {
            Kind::Local { .. } => {
                let map = self.map().unwrap_or_default();
                Ok(Cow::Borrowed(&map[offset as usize..end as usize]))
            }
            Kind::Remote(r) => {
                let (buf, range) = match blob {
                    Some((at, n)) => {
                        let read = r.read_blob(at, n, offset, len, Reach::WAIT)?;
                        read.ok_or_else(|| unreachable_miss(&self.name()))?
                    }
                    None => r.read(offset, len)?,
                };
                // A buffer made for this read is taken, not copied.
                Ok(Cow::Owned(match std::sync::Arc::try_unwrap(buf) {
                    Ok(v) if range == (0..v.len()) => v,
                    Ok(v) => v[range].to_vec(),
                    Err(shared) => shared[range].to_vec(),
                }))
            }
        }
    }

    /// [`Store::slice`], where a remote read's bytes are its cache's
    /// buffer, not a copy.
    pub fn piece(&self, offset: u64, len: u64) -> Result<Piece<'_>> {
        match &self.kind {
            Kind::Remote(r) => {
                let (buf, range) = r.read(offset, len)?;
                Ok(Piece::Shared(buf, range))
            }
            Kind::Local { .. } => match self.slice(offset, len)? {
                Cow::Borrowed(b) => Ok(Piece::Borrowed(b)),
                Cow::Owned(v) => Ok(Piece::Shared(std::sync::Arc::new(v), 0..len as usize)),
            },
        }
    }

    /// [`Store::piece`] of `[offset, offset + len)` within the blob at
    /// `blob_offset` of `blob_len` bytes: the same bytes; a remote object
    /// reads a big blob on blocks laid from its start, so that a reader's
    /// block-sized reads of it are served without joining two blocks.
    /// `None` when `reach` is at hand only and a remote object does
    /// not hold them now.
    pub fn blob_piece(
        &self,
        blob_offset: u64,
        blob_len: u64,
        offset: u64,
        len: u64,
        reach: Reach,
    ) -> Result<Option<Piece<'_>>> {
        match &self.kind {
            Kind::Remote(r) => {
                let read = r.read_blob(blob_offset, blob_len, offset, len, reach)?;
                Ok(read.map(|(buf, range)| Piece::Shared(buf, range)))
            }
            Kind::Local { .. } => self.piece(offset, len).map(Some),
        }
    }

    /// Hands the whole file to `f` in order, `chunk` bytes at a time (the
    /// last may be shorter): from the map, or streamed by range requests
    /// that bypass the block cache.
    pub fn for_each_chunk(&self, chunk: u64, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        match &self.kind {
            Kind::Local { .. } => {
                for c in self.map().unwrap_or_default().chunks(chunk as usize) {
                    f(c);
                }
                Ok(())
            }
            Kind::Remote(r) => r.stream(0, r.len(), chunk, f),
        }
    }
}

impl crate::format::Ranges for Store {
    fn size(&self) -> u64 {
        self.len()
    }

    fn get(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        self.slice(offset, len)
    }

    fn get_small(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        match &self.kind {
            Kind::Remote(r) => r.read_small(offset, len).map(Cow::Owned),
            Kind::Local { .. } => self.slice(offset, len),
        }
    }

    fn in_memory(&self) -> Option<&[u8]> {
        self.map()
    }
}

/// A range of a store (a part's blob), read by range relative to its start.
pub struct Blob<'a> {
    pub store: &'a Store,
    pub offset: u64,
    pub len: u64,
}

impl crate::format::Ranges for Blob<'_> {
    fn size(&self) -> u64 {
        self.len
    }

    fn get(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => {
                (self.store).blob_slice(self.offset, self.len, self.offset + offset, len)
            }
            _ => Err(Error::OutOfRange(format!(
                "range [{offset}, +{len}) is outside the blob ({} bytes)",
                self.len
            ))),
        }
    }
}

/// Hands `len` bytes of `file` from `offset` to `f` in order, through a
/// read-only map of at most `window` bytes at a time: bytes in the page
/// cache are read where they lie, with no copy, and the resident set
/// holds one window. A range past the file's end (it shrank) is an error,
/// not a fault. `what` names the file in errors.
pub fn for_each_mapped(
    file: &File,
    what: &str,
    offset: u64,
    len: u64,
    window: u64,
    f: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let mut off = 0;
    while off < len {
        let n = (len - off).min(window.max(1));
        // A file that shrank would fault on the map: refuse it first.
        let now = crate::sys::file_len(file).map_err(|e| Error::io(what, e))?;
        if now < offset + off + n {
            return Err(Error::io(
                what,
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "is {now} bytes, short of the range [{}, +{n}): it changed while it was read",
                        offset + off
                    ),
                ),
            ));
        }
        // SAFETY: a read-only, private map of a range of a file checked
        // just above to hold it; the file is not expected to shrink while
        // `f` runs (the caller's own file, or a model file, which the
        // format says is immutable). It is dropped before the next window.
        #[allow(unsafe_code)]
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(offset + off)
                .len(n as usize)
                .populate()
                .map(file)
        }
        .map_err(|e| Error::io(format!("{what}: a map at offset {}", offset + off), e))?;
        f(&map)?;
        off += n;
    }
    Ok(())
}

/// Keeps the blocks of remote objects this process reads in `dir`, at
/// most `size` bytes of them (see [`disk`]). Nothing to do in a build that
/// reads no URLs.
pub fn use_disk_cache(dir: &Path, size: u64) -> Result<()> {
    #[cfg(feature = "remote")]
    disk::configure(dir, size)?;
    #[cfg(not(feature = "remote"))]
    let _ = (dir, size);
    Ok(())
}

/// Asks the shared cache tier at `url` (`s3://BUCKET[/PREFIX]`) for the
/// blocks of remote objects before their origin, and writes there what
/// the origin gives (see `remote::tier`), for the rest of the process.
/// A build that reads no URLs refuses it.
pub fn use_shared_cache(url: &str) -> Result<()> {
    #[cfg(feature = "remote")]
    return remote::tier::configure(url);
    #[cfg(not(feature = "remote"))]
    Err(Error::Usage(format!(
        "--shared-cache {url}: this ztfs was built without the `remote` feature"
    )))
}

/// What the caches of remote blocks did in this process, as `ztfs status`
/// shows it: the disk cache's hits and misses, the shared cache tier's
/// counts; `None` when the process has neither.
pub fn cache_counts() -> Option<serde_json::Value> {
    #[cfg(feature = "remote")]
    {
        let disk = disk::cache().map(|d| {
            let (hits, misses) = d.counts();
            serde_json::json!({"dir": d.dir(), "hits": hits, "misses": misses})
        });
        let shared = remote::tier::shared()
            .map(|t| serde_json::json!({"url": t.shown(), "counts": t.counts()}));
        if disk.is_none() && shared.is_none() {
            return None;
        }
        Some(serde_json::json!({"disk": disk, "shared": shared}))
    }
    #[cfg(not(feature = "remote"))]
    None
}

/// Waits, at most `wait`, for the blocks queued for the shared cache tier
/// to be written: for a command about to exit.
pub fn flush_shared_cache(wait: std::time::Duration) {
    #[cfg(feature = "remote")]
    if let Some(t) = remote::tier::shared() {
        t.drain(wait);
    }
    #[cfg(not(feature = "remote"))]
    let _ = wait;
}

/// A read of `name` that may wait came back without its bytes: never
/// expected, and an error rather than bytes that are not there.
#[cfg_attr(not(feature = "remote"), allow(dead_code))]
fn unreachable_miss(name: &str) -> Error {
    Error::io(
        name.to_string(),
        std::io::Error::other("a read that may wait came back without its bytes"),
    )
}

/// How a read of a remote object is made: how far it may go for its
/// bytes, and for which reader it is (whose read-ahead it moves on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    /// Only to what is held now (the tail read at open, the block cache):
    /// a FUSE worker answers from the cache so, and hands the read to a
    /// job only when it would have to wait. Else to the server, waiting
    /// for it. A local file's bytes are always at hand.
    pub at_hand: bool,
    /// Who the read is for.
    pub reader: Reader,
}

/// Who a read is for, as FUSE names them: the calling thread (`pid`; a
/// job it waits for is abandoned when it is interrupted) and its open
/// file (`handle`). A remote object's read-ahead follows each open file's
/// sequential reads on their own, and each thread's walk across the
/// model's parts (a loader opens one tensor's file after another). Zero
/// for a read of no open file (`ztfs cat`, `check`, a test).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reader {
    pub pid: u32,
    pub handle: u64,
    /// Reads exactly the ranges it asks for: a slice of a tensor's rows
    /// (`ztfs.open`'s `get_slice`). A read from a part's start fetches no
    /// more of the part, as it would for a loader that reads it whole.
    pub exact: bool,
}

impl Reach {
    /// To the server, waiting for it, for no reader in particular.
    pub const WAIT: Reach = Reach {
        at_hand: false,
        reader: Reader {
            pid: 0,
            handle: 0,
            exact: false,
        },
    };
    /// Only to what is held now, for no reader in particular.
    pub const AT_HAND: Reach = Reach {
        at_hand: true,
        reader: Reader {
            pid: 0,
            handle: 0,
            exact: false,
        },
    };

    /// The same, for `reader`.
    pub fn by(self, reader: Reader) -> Reach {
        Reach { reader, ..self }
    }
}

/// A URL's query (a presigned URL's signature, from its `?`) split off:
/// the URL without it, and the query with its `?`. `None` for a local
/// path and a URL without one.
pub fn url_query(path: &Path) -> Option<(&str, &str)> {
    let url = url_of(path)?;
    let at = url.find('?')?;
    Some(url.split_at(at))
}

/// `path` as ztfs shows it in messages, logs and the mount table: a URL's
/// query left out (`?…`), so that a signature in it is not written down.
pub fn shown(path: &Path) -> String {
    match url_query(path) {
        Some((base, _)) => format!("{base}?…"),
        None => path.display().to_string(),
    }
}

/// The file `name` in the folder of `path`; for a URL, `name`
/// percent-encoded as one path component (so `?`, `#`, `%` or a space in
/// it name that file, as locally, and `%2e%2e` is a file's name, not the
/// folder above), with the URL's query (a signature for the folder serves
/// the files in it; a server refuses one made for `path` alone, and the
/// error says so). `name` is one component: the caller checked it.
pub fn beside(path: &Path, name: &str) -> PathBuf {
    if url_of(path).is_none() {
        return path.with_file_name(name);
    }
    let (base, query) = url_query(path).unwrap_or((path.to_str().unwrap_or_default(), ""));
    let sibling = Path::new(base).with_file_name(path_segment(name));
    PathBuf::from(format!("{}{query}", sibling.display()))
}

/// The file at relative path `rel` (plain components, `/`-separated:
/// the caller checked it) from the folder of `path`: [`beside`] for each
/// component, so a URL names each one's bytes as the local path does.
pub fn beside_path(path: &Path, rel: &str) -> PathBuf {
    if url_of(path).is_none() {
        return path.with_file_name(rel);
    }
    let parts: Vec<String> = (rel.split('/'))
        .filter(|c| !c.is_empty() && *c != ".")
        .map(path_segment)
        .collect();
    let (base, query) = url_query(path).unwrap_or((path.to_str().unwrap_or_default(), ""));
    let sibling = Path::new(base).with_file_name(parts.join("/"));
    PathBuf::from(format!("{}{query}", sibling.display()))
}

/// `name` (a local-style name: a file of an index, a shard, a path
/// component in a repository) as one URL path segment: every byte outside
/// RFC 3986's unreserved set (`A-Z a-z 0-9 - . _ ~`) percent-encoded, so
/// the URL names the same bytes as the name does locally. Anything less
/// leaves a URL parser room to read it otherwise: it drops a tab, newline
/// or carriage return it is given (the WHATWG rule the `url` crate keeps,
/// also in a segment it is asked to encode), so `m-2\t.safetensors` would
/// name `m-2.safetensors`; and it reads `?`, `#`, `%` and `/` as syntax.
/// A name `.` or `..` is still a dot segment (so is `%2E%2E`): callers
/// refuse those.
pub(crate) fn path_segment(name: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(char::from(b))
            }
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

/// `name`, a component of `path`, as a plain name: percent-decoded when
/// `path` is a URL (whose components are encoded; [`beside`] encodes a
/// name anew), else as it is.
pub fn plain_name(path: &Path, name: &str) -> String {
    #[cfg(feature = "remote")]
    if url_of(path).is_some() {
        return (percent_encoding::percent_decode_str(name).decode_utf8_lossy()).into_owned();
    }
    let _ = path;
    name.to_string()
}

/// The URL `path` spells, when it is one [`remote`] reads (`http://`,
/// `https://`, `s3://`).
pub fn url_of(path: &Path) -> Option<&str> {
    let s = path.to_str()?;
    ["http://", "https://", "s3://"]
        .iter()
        .any(|scheme| s.starts_with(scheme))
        .then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A URL's query is left out of what is shown and kept on the URLs
    /// of the files beside it; local paths and plain URLs are as given.
    #[test]
    fn a_url_s_query_is_shown_as_an_ellipsis_and_lent_to_its_neighbours() {
        let signed = Path::new("https://cdn.example/m/model.zt?sig=a.b&exp=9");
        assert_eq!(shown(signed), "https://cdn.example/m/model.zt?…");
        assert_eq!(
            url_query(signed),
            Some(("https://cdn.example/m/model.zt", "?sig=a.b&exp=9"))
        );
        assert_eq!(
            beside(signed, "model-00001.zt"),
            Path::new("https://cdn.example/m/model-00001.zt?sig=a.b&exp=9")
        );
        assert_eq!(
            crate::shards::positional_path(signed, "00002"),
            Path::new("https://cdn.example/m/model-00002.zt?sig=a.b&exp=9")
        );
        for plain in ["https://cdn.example/m/model.zt", "/data/m/model.zt?x"] {
            assert_eq!(shown(Path::new(plain)), plain);
            assert_eq!(url_query(Path::new(plain)), None);
        }
        assert_eq!(
            beside(Path::new("/data/m/model.zt?x"), "a.zt"),
            Path::new("/data/m/a.zt")
        );
        #[cfg(feature = "remote")]
        assert_eq!(
            beside(signed, "a?b#c %2e%2e"),
            Path::new("https://cdn.example/m/a%3Fb%23c%20%252e%252e?sig=a.b&exp=9")
        );
        assert_eq!(beside(Path::new("/m/i.json"), "a?b%"), Path::new("/m/a?b%"));
        #[cfg(feature = "remote")]
        assert_eq!(
            crate::shards::positional_path(Path::new("http://h/my%20m%3F.zt"), "00002"),
            Path::new("http://h/my%20m%3F-00002.zt")
        );
    }

    /// Every byte but the unreserved ones is percent-encoded, and a URL
    /// parser leaves the segment as it is: its decoding is the name, for
    /// every ASCII byte (controls, tab, newline included) and non-ASCII.
    #[test]
    fn a_path_segment_is_the_name_s_bytes_through_a_url_parser() {
        let mut names: Vec<String> = (0u8..=127)
            .map(|b| format!("a{}b", char::from(b)))
            .collect();
        names.extend(
            [
                "m-2\t.safetensors",
                "m-2.safetensors\n",
                "é ü/%2e",
                "~x_y-z.0",
            ]
            .map(String::from),
        );
        for name in &names {
            let seg = path_segment(name);
            let plain = |b: u8| b.is_ascii_alphanumeric() || b"-._~%".contains(&b);
            assert!(seg.bytes().all(plain), "{name:?} as {seg:?}");
            #[cfg(feature = "remote")]
            {
                let back = percent_encoding::percent_decode_str(&seg).decode_utf8();
                assert_eq!(back.unwrap(), name.as_str());
                let url = url::Url::parse(&format!("http://h/{seg}")).unwrap();
                assert_eq!(url.path(), format!("/{seg}"), "{name:?}");
            }
        }
        assert_eq!(path_segment("m-2\t.safetensors"), "m-2%09.safetensors");
        assert_eq!(path_segment("a+b (1).zt"), "a%2Bb%20%281%29.zt");
    }

    /// Every byte of the range, in order, a window at a time; a range
    /// past the end is refused before anything is mapped.
    #[test]
    fn for_each_mapped_reads_the_range_and_refuses_past_the_end() {
        let mut file = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        let mut got = Vec::new();
        let mut calls = 0;
        for_each_mapped(&file, "f", 999, 90_001, 4096 * 3, &mut |b| {
            calls += 1;
            got.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, bytes[999..91_000]);
        assert_eq!(calls, 90_001usize.div_ceil(4096 * 3));
        let e = for_each_mapped(&file, "f", 50_000, 50_001, 1 << 20, &mut |_| Ok(())).unwrap_err();
        assert!(e.to_string().contains("is 100000 bytes"), "{e}");
    }
}
