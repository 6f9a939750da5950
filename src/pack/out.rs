//! The files a pack writes: the root and, when sharding, its data shards
//! (§7.2). Each is written under a temporary name beside the output; the
//! root is validated as `ztfs check` reads it; then every file is synced
//! and renamed into place, shards first and the root last, and the folder
//! synced (§2.5, Appendix B). The family is published all or nothing: a
//! file already at one of its names is kept aside until the whole family
//! is in place, and put back if any step fails (`publish.rs`), so a failed
//! pack leaves no file at an output's name and every earlier file as it
//! was, and a reader that finds the root finds its shards. A file that
//! replaces another keeps its permission bits; a new one gets 0666 less
//! the umask.
//!
//! Blobs are placed at the next multiple of the alignment; the gaps are
//! zeros (holes of the file). A blob just written can be taken back
//! ([`Out::rewind`]), for a part that turns out to share an earlier blob
//! or to compress badly.

use std::fs::File;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::digest::{Algo, Hasher};
use crate::error::{Error, Result};
use crate::format::{write, Manifest, Shard, MAGIC};

use super::publish;

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
    /// The permission bits of a new file: 0666 less the umask.
    new_mode: u32,
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
        check_folder(path)?;
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
        // What `ztfs check` would say of the root, from the bytes written.
        crate::format::read_container_from(&self.root)?;
        let names: Vec<String> = (0..self.shards.len()).map(|i| self.shard_name(i)).collect();
        let mut files: Vec<(Target, PathBuf)> = (self.shards.into_iter().zip(names))
            .map(|(t, name)| (t, crate::shards::positional_path(&self.path, &name)))
            .collect();
        files.push((self.root, self.path));
        publish_all(files)?;
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

/// The root as a [`crate::format::Ranges`], so that the reader's own
/// validation runs on the bytes written.
impl crate::format::Ranges for Target {
    fn size(&self) -> u64 {
        self.end
    }

    fn get(&self, offset: u64, len: u64) -> Result<std::borrow::Cow<'_, [u8]>> {
        let end = offset.checked_add(len).filter(|&e| e <= self.end);
        let n = end.and_then(|_| usize::try_from(len).ok()).ok_or_else(|| {
            Error::OutOfRange(format!(
                "range [{offset}, +{len}) is outside {} ({} bytes)",
                self.path.display(),
                self.end
            ))
        })?;
        let mut buf = vec![0u8; n];
        (self.file().read_exact_at(&mut buf, offset)).map_err(|e| self.io_error(e))?;
        Ok(std::borrow::Cow::Owned(buf))
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
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(|e| Error::io(dir.display().to_string(), e))?;
        p.paths.push(file.path().to_path_buf());
        drop(p);
        let io = |e| Error::io(file.path().display().to_string(), e);
        let new_mode = file.as_file().metadata().map_err(io)?.permissions().mode() & 0o777;
        // While written, no more open than the output it will replace.
        let mode = publish::mode_for(path, new_mode) & new_mode;
        (file
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode)))
        .map_err(io)?;
        let mut t = Target {
            path: file.path().to_path_buf(),
            file: Some(file),
            end: 0,
            new_mode,
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
}

impl Drop for Target {
    /// The temporary file itself is removed by `NamedTempFile` (unless it
    /// was published); here it leaves the list of pending files.
    fn drop(&mut self) {
        let mut p = pending();
        p.paths.retain(|q| *q != self.path);
    }
}

/// Publishes `files` (each a finished temporary file and its name, all in
/// one folder, the root last) all or nothing: every file is given its
/// mode and synced first; then, with no signal's clean-up able to run,
/// each is renamed into place and the folder synced. A name that holds
/// something other than a regular file (a folder at a shard's name) fails
/// its step. On an error every file put in place is taken back and what
/// was at its name put back; the temporary files are removed as the
/// targets drop.
fn publish_all(mut files: Vec<(Target, PathBuf)>) -> Result<()> {
    // A source truncated under a read: bytes written since may be zeros.
    crate::sys::no_fault()?;
    for (t, dest) in &files {
        let mode = publish::mode_for(dest, t.new_mode);
        (t.file()
            .set_permissions(std::fs::Permissions::from_mode(mode)))
        .map_err(|e| t.io_error(e))?;
        t.file().sync_all().map_err(|e| t.io_error(e))?;
    }
    let dir = match files.last() {
        Some((_, root)) => parent(root).to_path_buf(),
        None => return Ok(()),
    };
    let dir_error = |e| Error::io(dir.display().to_string(), e);
    let mut p = pending();
    if p.abandoned {
        return Err(Error::Interrupted);
    }
    let mut family = publish::Family::default();
    let mut r = Ok(());
    for (t, dest) in &files {
        // Beside the temporary file, under its random name.
        let aside = t.path.with_extension("old");
        if let Err(e) = family.put(&t.path, dest, &aside) {
            r = Err(Error::io(dest.display().to_string(), e));
            break;
        }
    }
    r = r.and_then(|()| publish::sync_dir(&dir).map_err(dir_error));
    match r {
        Ok(()) => {
            family.commit();
            for (t, _) in &mut files {
                // Renamed: nothing at the temporary name to remove.
                if let Some(f) = t.file.take() {
                    let _ = f.keep();
                }
                p.paths.retain(|q| *q != t.path);
            }
            Ok(())
        }
        Err(e) => {
            let lost = family.roll_back();
            let _ = publish::sync_dir(&dir);
            drop(p);
            Err(match lost.first() {
                None => e,
                Some((dest, kept)) => Error::io(
                    format!(
                        "{} (it could not be put back: it is at {})",
                        dest.display(),
                        kept.display()
                    ),
                    std::io::Error::other(e.detail()),
                ),
            })
        }
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
            crate::store::kind_of(std::os::unix::fs::MetadataExt::mode(&m))
        ))),
        _ => Ok(()),
    }
}

/// The directory `path` goes in.
/// Refuses an output `path` whose folder is missing or not a folder,
/// saying which: before anything is written beside it.
pub fn check_folder(path: &Path) -> Result<()> {
    let dir = parent(path);
    let why = match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => format!("{} is not a directory", dir.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            format!(
                "the folder {} does not exist; create it first",
                dir.display()
            )
        }
        Err(e) => return Err(Error::io(dir.display().to_string(), e)),
    };
    Err(Error::Usage(format!("{}: {why}", path.display())))
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::manifest::Object;

    fn manifest(rank: usize) -> Manifest {
        let mut texts = crate::format::text::Texts::default();
        Manifest {
            objects: vec![Object {
                name: "w".into(),
                shape: texts.shape(&vec![0; rank]),
                layout: texts.get("dense"),
                attributes: None,
                parts: smallvec::smallvec![crate::format::Part::raw(
                    texts.get("data"),
                    crate::format::types::ElementType {
                        dtype: crate::format::DType::U8,
                        logical: None,
                    },
                    4096,
                    0,
                )],
            }],
            shards: None,
            attributes: None,
        }
    }

    /// The root is read back by the reader's rules before it is renamed:
    /// a manifest `ztfs check` rejects leaves the earlier file and no
    /// temporary one; a valid one replaces it.
    #[test]
    fn a_root_check_rejects_is_not_published() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let path = dir.path().join("m.zt");
        std::fs::write(&path, b"before").unwrap();
        let out = Out::create(&path, 4096, None).unwrap();
        let e = out.finish(manifest(65), Algo::Xxh3).unwrap_err();
        assert!(
            matches!(e, Error::Reject { rule, .. } if rule == crate::error::Rule::Shape),
            "{e}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"before");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let out = Out::create(&path, 4096, None).unwrap();
        out.finish(manifest(64), Algo::Xxh3).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(crate::format::read_container(&bytes).is_ok());
    }
}
