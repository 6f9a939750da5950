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
    file: tempfile::NamedTempFile,
    /// End of the bytes written so far.
    end: u64,
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
        t.file
            .as_file()
            .write_all_at(bytes, at)
            .map_err(|e| Error::io(t.file.path().display().to_string(), e))?;
        let at = at + bytes.len() as u64;
        t.end = at;
        self.at = Some((place, at));
        Ok(())
    }

    /// Ends the blob being written; returns its length.
    pub fn end(&mut self) -> u64 {
        let (place, at) = self.at.take().expect("a blob was started");
        at - place.offset
    }

    /// Takes back the last blob started, `place`, and its padding.
    pub fn rewind(&mut self, place: Place) -> Result<()> {
        let (last, before) = self.last.take().expect("a blob was started");
        assert_eq!(last, place, "only the last blob can be taken back");
        self.at = None;
        let t = self.target_mut(place.file);
        t.file
            .as_file()
            .set_len(before)
            .map_err(|e| Error::io(t.file.path().display().to_string(), e))?;
        t.end = before;
        Ok(())
    }

    /// Reads back `buf.len()` bytes written at `offset` of `file`.
    pub fn read_at(&self, file: Option<usize>, offset: u64, buf: &mut [u8]) -> Result<()> {
        let t = self.target(file);
        t.file
            .as_file()
            .read_exact_at(buf, offset)
            .map_err(|e| Error::io(t.file.path().display().to_string(), e))
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
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let file = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.unwrap_or_default()))
            .suffix(".part")
            // As a new file would get: 0666 less the umask.
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(|e| Error::io(dir.display().to_string(), e))?;
        let mut t = Target { file, end: 0 };
        t.append(&MAGIC)?;
        Ok(t)
    }

    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        let at = self.end;
        self.file
            .as_file()
            .write_all_at(bytes, at)
            .map_err(|e| Error::io(self.file.path().display().to_string(), e))?;
        self.end = at + bytes.len() as u64;
        Ok(())
    }

    /// The whole file's digest, read back.
    fn digest(&self, algo: Algo) -> Result<String> {
        let f: &File = self.file.as_file();
        let mut h = Hasher::new(algo);
        let mut buf = vec![0u8; 8 << 20];
        let mut off = 0;
        while off < self.end {
            let n = (self.end - off).min(buf.len() as u64) as usize;
            f.read_exact_at(&mut buf[..n], off)
                .map_err(|e| Error::io(self.file.path().display().to_string(), e))?;
            h.update(&buf[..n]);
            off += n as u64;
        }
        Ok(h.finish())
    }

    /// Syncs the file and renames it to `dest`, replacing what is there.
    fn publish(self, dest: &Path) -> Result<()> {
        let ctx = || dest.display().to_string();
        self.file
            .as_file()
            .sync_all()
            .map_err(|e| Error::io(ctx(), e))?;
        self.file
            .persist(dest)
            .map_err(|e| Error::io(ctx(), e.error))?;
        Ok(())
    }
}

/// `n` rounded up to a multiple of `align`.
pub fn align_up(n: u64, align: u64) -> u64 {
    n.div_ceil(align) * align
}
