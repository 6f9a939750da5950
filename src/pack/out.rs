//! The files a pack writes: the root and, when sharding, its data shards
//! (§7.2). Each is written under a temporary name beside the output and
//! renamed into place only once everything is written and synced, shards
//! first and the root last (§2.5, Appendix B): an interrupted pack leaves
//! no file at an output's name, and a reader that finds the root finds
//! its shards.
//!
//! Blobs are placed at the next multiple of the alignment; the gaps are
//! zeros (holes of the file). A blob just written can be taken back
//! ([`Out::rewind`]), for a part that turns out to share an earlier blob
//! or to compress badly.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::digest::{Algo, Hasher};
use crate::error::{Error, Result};
use crate::format::{write, Manifest, Shard, MAGIC};

/// Where a blob starts: the file (`None` for the root, else a shard's
/// index) and the offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// `None` for the root, `Some(i)` for data shard `i`.
    pub file: Option<usize>,
    /// Offset of the blob's first byte.
    pub offset: u64,
}

/// One file being written under a temporary name.
struct Target {
    /// `None` once published.
    file: Option<tempfile::NamedTempFile>,
    /// The temporary name.
    path: PathBuf,
    /// End of the bytes written so far.
    end: u64,
}

/// The temporary files of the packs in progress, so that a signal can
/// remove them ([`abandon`]); once abandoned, nothing more is published.
static PENDING: Mutex<Pending> = Mutex::new(Pending {
    paths: Vec::new(),
    abandoned: false,
});

struct Pending {
    paths: Vec<PathBuf>,
    abandoned: bool,
}

fn pending() -> std::sync::MutexGuard<'static, Pending> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes the temporary files of every pack in progress and stops them
/// from publishing anything: for a pack interrupted by a signal, whose
/// worker may be blocked in a read.
pub fn abandon() {
    let mut p = pending();
    p.abandoned = true;
    for path in p.paths.drain(..) {
        let _ = std::fs::remove_file(path);
    }
}

/// The output files of one pack.
pub struct Out {
    path: PathBuf,
    align: u64,
    shard_size: Option<u64>,
    root: Target,
    shards: Vec<Target>,
    /// Where the blob being written goes, and how far it has got.
    at: Option<(Place, u64)>,
    /// The last blob started, and where its file ended before it.
    last: Option<(Place, u64)>,
}

impl Out {
    /// Starts the files of `path`: blobs at multiples of `align` (a
    /// multiple of 4096), in data shards of about `shard_size` bytes when
    /// it is given.
    pub fn create(path: &Path, align: u64, shard_size: Option<u64>) -> Result<Out> {
        check_replaceable(path)?;
        let dir = parent(path);
        if !dir.is_dir() {
            return Err(Error::Usage(format!(
                "{}: {} is not a directory",
                path.display(),
                dir.display()
            )));
        }
        Ok(Out {
            path: path.to_path_buf(),
            align,
            shard_size,
            root: Target::create(path)?,
            shards: Vec::new(),
            at: None,
            last: None,
        })
    }

    /// Starts a blob of about `len` bytes: in the root, or with sharding in
    /// the current shard, or in a new one when it would grow past the
    /// shard size (a shard holds at least one blob).
    pub fn start(&mut self, len: u64) -> Result<Place> {
        let file = match self.shard_size {
            None => None,
            Some(max) => {
                let full = self.shards.last().is_none_or(|t| {
                    t.end > MAGIC.len() as u64
                        && align_up(t.end, self.align).saturating_add(len) > max
                });
                if full {
                    self.shards.push(Target::create(&self.path)?);
                }
                Some(self.shards.len() - 1)
            }
        };
        let end = self.target(file).end;
        let offset = align_up(end, self.align);
        let place = Place { file, offset };
        self.at = Some((place, offset));
        self.last = Some((place, end));
        Ok(place)
    }

    /// Appends `bytes` to the blob being written.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        let (place, at) = self.at.expect("a blob was started");
        let t = self.target_mut(place.file);
        (t.file().write_all_at(bytes, at)).map_err(|e| t.io_error(e))?;
        let at = at + bytes.len() as u64;
        t.end = at;
        self.at = Some((place, at));
        Ok(())
    }

    /// Starts and ends a blob of `len` bytes that another writer fills
    /// (the copier): its place, and a second handle on its file.
    pub fn reserve(&mut self, len: u64) -> Result<(Place, File)> {
        let place = self.start(len)?;
        self.at = None;
        let t = self.target_mut(place.file);
        t.end = place.offset + len;
        let file = t.file().try_clone().map_err(|e| t.io_error(e))?;
        Ok((place, file))
    }

    /// Ends the blob being written; returns its length. Its bytes start
    /// going to disk now, while the next blob is made, rather than all at
    /// the final sync.
    pub fn end(&mut self) -> u64 {
        let (place, at) = self.at.take().expect("a blob was started");
        self.write_back(place, at - place.offset);
        at - place.offset
    }

    /// Starts writing `len` bytes at `place` to disk without waiting.
    pub fn write_back(&self, place: Place, len: u64) {
        crate::sys::start_writeback(self.target(place.file).file(), place.offset, len);
    }

    /// An error writing to `file` (the root or a shard), naming it.
    pub fn error(&self, file: Option<usize>, e: std::io::Error) -> Error {
        self.target(file).io_error(e)
    }

    /// Takes back the last blob started, `place`, and its padding.
    pub fn rewind(&mut self, place: Place) -> Result<()> {
        let (last, before) = self.last.take().expect("a blob was started");
        assert_eq!(last, place, "only the last blob can be taken back");
        self.at = None;
        let t = self.target_mut(place.file);
        t.file().set_len(before).map_err(|e| t.io_error(e))?;
        t.end = before;
        Ok(())
    }

    /// Reads back `buf.len()` bytes written at `offset` of `file`.
    pub fn read_at(&self, file: Option<usize>, offset: u64, buf: &mut [u8]) -> Result<()> {
        let t = self.target(file);
        t.file()
            .read_exact_at(buf, offset)
            .map_err(|e| t.io_error(e))
    }

    /// Shard `i`'s name: its number and the count, as distributed
    /// checkpoints name theirs (`00001-of-00003`).
    pub fn shard_name(&self, i: usize) -> String {
        format!("{:05}-of-{:05}", i + 1, self.shards.len())
    }

    /// The number of data shards started.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Finishes every file: each data shard gets its footer and its
    /// whole-file `algo` digest in `manifest`'s shard table; the root gets
    /// the manifest and its footer. All are synced, then renamed into
    /// place, the root last. Returns the root's length.
    pub fn finish(mut self, mut manifest: Manifest, algo: Algo) -> Result<u64> {
        let mut table = Vec::new();
        for i in 0..self.shards.len() {
            let name = self.shard_name(i);
            let t = &mut self.shards[i];
            t.append(&write::footer(0, 0, 0))?;
            table.push(Shard {
                name,
                size: t.end,
                digest: t.digest(algo)?,
            });
        }
        if !table.is_empty() {
            manifest.shards = Some(table);
        }
        let bytes = write::manifest_bytes(&manifest);
        let hash = xxhash_rust::xxh3::xxh3_64(&bytes);
        let offset = align_up(self.root.end, self.align);
        self.root.end = offset;
        self.root.append(&bytes)?;
        self.root
            .append(&write::footer(offset, bytes.len() as u64, hash))?;
        let len = self.root.end;
        let names: Vec<String> = (0..self.shards.len()).map(|i| self.shard_name(i)).collect();
        for (t, name) in self.shards.into_iter().zip(names) {
            t.publish(&crate::shards::positional_path(&self.path, &name))?;
        }
        self.root.publish(&self.path)?;
        Ok(len)
    }

    fn target(&self, file: Option<usize>) -> &Target {
        file.map_or(&self.root, |i| &self.shards[i])
    }

    fn target_mut(&mut self, file: Option<usize>) -> &mut Target {
        match file {
            None => &mut self.root,
            Some(i) => &mut self.shards[i],
        }
    }
}

impl Target {
    /// A temporary file beside `path` (so the rename stays on one
    /// filesystem), hidden, beginning with the magic.
    fn create(path: &Path) -> Result<Target> {
        let dir = parent(path);
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let mut p = pending();
        if p.abandoned {
            return Err(Error::Interrupted);
        }
        let file = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.unwrap_or_default()))
            .suffix(".part")
            // As a new file would get: 0666 less the umask.
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(|e| Error::io(dir.display().to_string(), e))?;
        p.paths.push(file.path().to_path_buf());
        drop(p);
        let mut t = Target {
            path: file.path().to_path_buf(),
            file: Some(file),
            end: 0,
        };
        t.append(&MAGIC)?;
        Ok(t)
    }

    fn file(&self) -> &File {
        self.file.as_ref().expect("not yet published").as_file()
    }

    fn io_error(&self, e: std::io::Error) -> Error {
        Error::io(self.path.display().to_string(), e)
    }

    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        let at = self.end;
        (self.file().write_all_at(bytes, at)).map_err(|e| self.io_error(e))?;
        self.end = at + bytes.len() as u64;
        Ok(())
    }

    /// The whole file's digest, read back.
    fn digest(&self, algo: Algo) -> Result<String> {
        let mut h = Hasher::new(algo);
        let mut buf = vec![0u8; 8 << 20];
        let mut off = 0;
        while off < self.end {
            let n = (self.end - off).min(buf.len() as u64) as usize;
            (self.file().read_exact_at(&mut buf[..n], off)).map_err(|e| self.io_error(e))?;
            h.update(&buf[..n]);
            off += n as u64;
        }
        Ok(h.finish())
    }

    /// Syncs the file and renames it to `dest`, replacing what is there,
    /// unless the pack was abandoned.
    fn publish(mut self, dest: &Path) -> Result<()> {
        let ctx = || dest.display().to_string();
        self.file().sync_all().map_err(|e| Error::io(ctx(), e))?;
        let p = pending();
        if p.abandoned {
            return Err(Error::Interrupted);
        }
        let file = self.file.take().expect("published once");
        file.persist(dest).map_err(|e| Error::io(ctx(), e.error))?;
        drop(p);
        Ok(())
    }
}

impl Drop for Target {
    /// The temporary file itself is removed by `NamedTempFile` (unless it
    /// was published); here it leaves the list of pending files.
    fn drop(&mut self) {
        let mut p = pending();
        p.paths.retain(|q| *q != self.path);
    }
}

/// Refuses an output that exists and is not a regular file: the pack
/// renames a new file into its place, which would replace a symlink (to
/// a file elsewhere, or `/dev/stdout`) or a device rather than write to
/// it.
fn check_replaceable(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => Err(Error::Usage(format!(
            "{}: exists and is not a regular file (a {}); ztfs pack writes a new file and renames it into place, so give the path of a file",
            path.display(),
            crate::store::kind_of(&m.file_type())
        ))),
        _ => Ok(()),
    }
}

/// The directory `path` goes in.
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// `n` rounded up to a multiple of `align`.
pub fn align_up(n: u64, align: u64) -> u64 {
    n.div_ceil(align) * align
}
