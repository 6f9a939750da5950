//! `ztfs pack`: writing a model (any format ztfs reads, or `.npy` files)
//! as a zTensor v2 file.
//!
//! By default the output is canonical (§6.3): blobs at successive 64 KiB
//! boundaries from 65536 in the bytewise order of (object name, part
//! name), parts with the same decoded bytes sharing one blob (confirmed
//! on the bytes, not only the hash), all raw, every part with an xxh3
//! digest, one file, the manifest last. Identical inputs give identical
//! bytes. Options leave canonical form knowingly: a coarser or finer
//! `--align`, `--digest sha256`, `--zstd` (each part compressed as
//! `zt.zstd-seekable/1` only where that makes it smaller), `--shard-size`
//! (data shards named `NNNNN-of-NNNNN`, found positionally beside the
//! root). Names are written as the source has them.
//!
//! Parts are streamed: memory is a few chunks and one compression frame,
//! whatever the model's size. A raw part of a local file is checked and
//! hashed from the source's pages (mapped a window at a time), then copied
//! file to file by the kernel on a second thread (`copier.rs`) while the
//! next parts are hashed; any other part is decoded into the output.
//! Either way its bytes are checked as they pass (its encoding, its
//! content rules, its digest when it has one), so a damaged source stops
//! the pack rather than being copied; a source that shrinks under the copy
//! stops it too, and so does a local source whose status (file, size,
//! times) moves while it is read (`watch.rs`): the kernel's copy is a
//! second read of what was hashed. Files are written under temporary
//! names, the root validated as `ztfs check` reads it, and the family
//! renamed into place all or nothing at the end (`out.rs`, `publish.rs`).

mod copier;
mod out;
mod preflight;
mod publish;
mod seekable;
mod source;
mod tensors;
pub mod to_folder;
pub mod values;
mod watch;

use crate::digest::{Algo, Hasher};
use crate::error::{Error, Result};
use crate::format::manifest::{BlobRef, Digest, Manifest, Object, Part};
use crate::format::text::Texts;
use copier::Copier;
pub use out::abandon;
use out::{Out, Place};
pub use seekable::DEFAULT_FRAME_LEN;
pub use source::Source;
use watch::Watch;

/// Canonical placement (§6.3 rule 2).
pub const CANONICAL_ALIGN: u64 = 64 << 10;

/// Coarsest placement `--align` may ask for, in bytes: 1 GiB. The spec
/// sets no ceiling (§2.4: 4096 is a floor), but the padding before each
/// blob is up to this much file to hash and sync (a shard's digest reads
/// its holes), so a larger alignment is work without bound.
pub const MAX_ALIGN: u64 = 1 << 30;

/// How to write.
#[derive(Debug, Clone)]
pub struct Options {
    /// The digest of every part, and of every shard.
    pub digest: Algo,
    /// zstd level, when parts are to be compressed.
    pub zstd: Option<i32>,
    /// Decoded bytes per zstd frame.
    pub frame_len: u64,
    /// Data shards of about this many bytes; `None` for one file.
    pub shard_size: Option<u64>,
    /// Blob placement, a multiple of 4096.
    pub align: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            digest: Algo::Xxh3,
            zstd: None,
            frame_len: DEFAULT_FRAME_LEN,
            shard_size: None,
            align: CANONICAL_ALIGN,
        }
    }
}

/// What a pack wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Objects written.
    pub objects: usize,
    /// Parts written, and of those how many share an earlier part's blob.
    pub parts: usize,
    /// Parts that share an earlier part's blob.
    pub shared: usize,
    /// Parts stored compressed.
    pub compressed: usize,
    /// Decoded bytes of all parts.
    pub decoded_bytes: u64,
    /// The root file's length.
    pub root_len: u64,
    /// Data shards written.
    pub shards: usize,
    /// The first object or part name not in Unicode NFC, if any (canonical
    /// form needs NFC names, §6.3 rule 5; names are written as the source
    /// has them).
    pub not_nfc: Option<String>,
}

/// Writes `source` to `path` as `opts` say; `progress` hears of every
/// decoded chunk read from the source, and an error from it (work
/// abandoned) stops the pack, leaving nothing behind.
pub fn pack(
    source: &Source,
    path: &std::path::Path,
    opts: &Options,
    progress: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<Summary> {
    check_options(opts)?;
    let mut out = Out::create(path, opts.align, opts.shard_size)?;
    let mut written = Written::default();
    let mut summary = Summary {
        objects: 0,
        parts: 0,
        shared: 0,
        compressed: 0,
        decoded_bytes: 0,
        root_len: 0,
        shards: 0,
        not_nfc: None,
    };
    let attributes = source.attributes()?;
    preflight::check_writable(source, &attributes).map_err(unwritable)?;
    let mut texts = Texts::default();
    let mut copier = Copier::default();
    let mut watch = Watch::default();
    let mut objects = Vec::new();
    // Per part written, in order: the data shard holding its blob.
    let mut files = Vec::new();
    for object in source.objects_in_canonical_order() {
        crate::format::check_name(&object.name, "object").map_err(|e| {
            Error::Unsupported(format!("cannot be written as zTensor: {}", e.detail()))
        })?;
        // Each local file's status before any of it is read.
        for part in &object.parts {
            (source.store_of(object, part)).map_or(Ok(()), |s| watch.see(s))?;
        }
        source.check_object(object)?;
        let names =
            std::iter::once(&*object.name).chain(object.parts.iter().map(|p| p.name.as_str()));
        if let Some(n) = names
            .into_iter()
            .find(|n| !unicode_normalization::is_nfc(n))
        {
            summary.not_nfc.get_or_insert_with(|| n.to_string());
        }
        let mut parts = Vec::new();
        for part in source.parts_in_canonical_order(object) {
            // A raw part of a local file is copied file to file.
            let copy = (opts.zstd.is_none())
                .then(|| source.local_range(object, part))
                .flatten();
            let w = match copy {
                Some(range) => {
                    let check = crate::read::PartCheck::new(object, part)?;
                    let mut to = To {
                        out: &mut out,
                        written: &mut written,
                        copier: &mut copier,
                        watch: &watch,
                    };
                    copy_part(&mut to, range, check, opts, progress)?
                }
                None => {
                    let mut stream = |sink: &mut dyn FnMut(&[u8]) -> Result<()>| {
                        source.stream(object, part, &mut |c| {
                            progress(c.len() as u64)?;
                            sink(c)
                        })
                    };
                    let len = part.decoded_size();
                    let from = source.store_of(object, part).map(|s| s.name());
                    let from = from.as_deref().unwrap_or("the source");
                    // A streamed part may be compared with copied ones.
                    finish_copies(&out, &watch, copier.wait_all())?;
                    write_part(&mut out, &mut written, &mut stream, (len, from), opts)?
                }
            };
            summary.parts += 1;
            summary.shared += usize::from(w.shared);
            summary.compressed += usize::from(w.encoded);
            summary.decoded_bytes += part.decoded_size();
            files.push(w.place.file);
            parts.push(w.part(part, &mut texts));
        }
        objects.push(Object {
            parts: parts.into(),
            ..object.clone()
        });
        summary.objects += 1;
    }
    finish_copies(&out, &watch, copier.wait_all())?;
    // Every copy has landed and every byte been read: the sources must
    // be as they were before the first read.
    watch.check_all()?;
    summary.shards = out.shard_count();
    // Shard names carry the count, known only now.
    let blobs = objects.iter_mut().flat_map(|o| o.parts.iter_mut());
    for (p, file) in blobs.zip(files) {
        p.blob.shard = file.map(|i| texts.get(&out.shard_name(i)));
    }
    let manifest = Manifest {
        objects,
        shards: None,
        attributes,
    };
    // The output is validated as `ztfs check` reads it before it is
    // published, as it was sketched before the first copy.
    summary.root_len = out.finish(manifest, opts.digest).map_err(unwritable)?;
    Ok(summary)
}

impl Options {
    /// True when these options write canonical form (§6.3 rules 2, 4, 6;
    /// rule 5, names in NFC, is the source's).
    pub fn is_canonical(&self) -> bool {
        self.digest == Algo::Xxh3
            && self.zstd.is_none()
            && self.shard_size.is_none()
            && self.align == CANONICAL_ALIGN
    }
}

fn check_options(opts: &Options) -> Result<()> {
    let usage = |m: String| Err(Error::Usage(m));
    if opts.align == 0 || !opts.align.is_multiple_of(crate::format::ALIGN) {
        return usage(format!(
            "--align {}: blobs must be placed at a multiple of 4096 (§2.4)",
            opts.align
        ));
    }
    if opts.align > MAX_ALIGN {
        return usage(format!(
            "--align {}: at most 1 GiB ({MAX_ALIGN}) between blobs",
            opts.align
        ));
    }
    let max = crate::decode::zstd_seekable::MAX_FRAME_LEN;
    if opts.frame_len == 0 || opts.frame_len > max {
        return usage(format!(
            "--frame-size {}: a zt.zstd-seekable/1 frame holds 1 byte to 16 MiB ({max})",
            opts.frame_len
        ));
    }
    if let Some(level) = opts.zstd {
        let range = zstd::compression_level_range();
        if !range.contains(&level) {
            return usage(format!(
                "--zstd {level}: zstd levels run from {} to {}",
                range.start(),
                range.end()
            ));
        }
    }
    if opts.shard_size == Some(0) {
        return usage("--shard-size 0: a shard must hold something".into());
    }
    Ok(())
}

/// One written part.
struct WrittenPart {
    place: Place,
    stored_len: u64,
    encoded: bool,
    shared: bool,
    digest: String,
}

impl WrittenPart {
    /// The output manifest's part: the source's name and types, the new
    /// blob (its shard named later), encoding and digest.
    fn part(&self, source: &Part, texts: &mut Texts) -> Part {
        Part {
            name: source.name.clone(),
            ty: source.ty.clone(),
            blob: BlobRef {
                offset: self.place.offset,
                length: self.stored_len,
                shard: None,
            },
            encoding: self
                .encoded
                .then(|| texts.get(crate::decode::zstd_seekable::ID)),
            decoded: if self.encoded {
                source.decoded_size()
            } else {
                0
            },
            digest: Some(Digest::parse(&self.digest)),
        }
    }
}

/// The blobs written so far, by what could make a later part share one:
/// its decoded length and XXH3-64.
#[derive(Default)]
struct Written {
    blobs: std::collections::HashMap<(u64, u64), Vec<Blob>>,
}

/// A blob written: where, its stored length, and whether it is encoded.
#[derive(Clone, Copy)]
struct Blob {
    place: Place,
    len: u64,
    encoded: bool,
}

/// A part's decoded bytes, streamed to the sink it is given; callable
/// more than once.
type Stream<'a> = dyn FnMut(&mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> + 'a;

/// A part's digest and the XXH3 that keys it among the blobs written
/// (`Written`), from one pass over its bytes: one XXH3 serves as both when
/// the digest is xxh3.
struct PartHash {
    digest: Hasher,
    key: Option<xxhash_rust::xxh3::Xxh3>,
}

impl PartHash {
    fn new(algo: Algo) -> PartHash {
        PartHash {
            digest: Hasher::new(algo),
            key: (algo != Algo::Xxh3).then(xxhash_rust::xxh3::Xxh3::new),
        }
    }

    fn update(&mut self, bytes: &[u8]) {
        self.digest.update(bytes);
        if let Some(k) = self.key.as_mut() {
            k.update(bytes);
        }
    }

    /// The digest string and the key.
    fn finish(self) -> (String, u64) {
        let key = match (&self.key, &self.digest) {
            (Some(k), _) => k.digest(),
            (None, Hasher::Xxh3(h)) => h.digest(),
            (None, Hasher::Sha256(_)) => unreachable!("a key is kept beside SHA-256"),
        };
        (self.digest.finish(), key)
    }
}

/// Writes one part of `decoded_len` bytes read from `from` (a name for
/// messages): compressed when asked and smaller, else raw; then taken
/// back in favour of an earlier blob with the same bytes.
fn write_part(
    out: &mut Out,
    written: &mut Written,
    stream: &mut Stream<'_>,
    (decoded_len, from): (u64, &str),
    opts: &Options,
) -> Result<WrittenPart> {
    let mut hash = PartHash::new(opts.digest);
    let mut n = 0u64;
    let mut place = out.start(decoded_len)?;
    let mut encoded = false;
    let mut stored_len = 0;
    if let Some(level) = opts.zstd {
        let mut enc = seekable::Encoder::new(level, opts.frame_len)?;
        stream(&mut |c| {
            hash.update(c);
            n += c.len() as u64;
            enc.push(c, &mut |f| out.write(f))
        })?;
        enc.finish(&mut |f| out.write(f))?;
        stored_len = out.end();
        encoded = stored_len < decoded_len;
        if !encoded {
            out.rewind(place)?;
            place = out.start(decoded_len)?;
        }
    }
    // A second read (raw, after the compressed attempt) must give the
    // bytes the first hashed: XXH3 and length compared.
    let mut again = None;
    if !encoded {
        let first = opts.zstd.is_none();
        let mut second = (xxhash_rust::xxh3::Xxh3::new(), 0u64);
        stream(&mut |c| {
            if first {
                hash.update(c);
                n += c.len() as u64;
            } else {
                second.0.update(c);
                second.1 += c.len() as u64;
            }
            out.write(c)
        })?;
        again = (!first).then_some(second);
        stored_len = out.end();
    }
    let (digest, key) = hash.finish();
    if again.is_some_and(|(h, m)| (h.digest(), m) != (key, n)) {
        return Err(watch::changed(from, "its bytes differ between two reads"));
    }
    if n != decoded_len {
        let why = format!("it gave {n} bytes for a part of {decoded_len}");
        return Err(watch::changed(from, &why));
    }
    let part = WrittenPart {
        place,
        stored_len,
        encoded,
        shared: false,
        digest,
    };
    share(out, written, (decoded_len, key), part)
}

/// Writes a raw part of a local file: checks and hashes it from the
/// source (mapped a window at a time, from the page cache), then has the
/// copier copy it file to file, unless an earlier blob holds the same
/// bytes. The copy runs while the next parts are hashed;
/// [`finish_copies`] collects it.
fn copy_part(
    to: &mut To<'_>,
    source: source::LocalRange<'_>,
    mut check: crate::read::PartCheck<'_>,
    opts: &Options,
    progress: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<WrittenPart> {
    let mut hash = PartHash::new(opts.digest);
    let source::LocalRange {
        file,
        path,
        name,
        offset,
        len,
    } = source;
    let To {
        out,
        written,
        copier,
        watch,
    } = to;
    crate::store::for_each_mapped(file, &name, offset, len, source::FILE_CHUNK, &mut |bytes| {
        check.update(bytes)?;
        hash.update(bytes);
        progress(bytes.len() as u64)
    })?;
    check.finish()?;
    let (digest, key) = hash.finish();
    let candidates = written.blobs.entry((len, key)).or_default();
    if !candidates.is_empty() {
        // Compared on the bytes written: the copies must have landed.
        finish_copies(out, watch, copier.wait_all())?;
        let mut source = |off, buf: &mut [u8]| {
            use std::os::unix::fs::FileExt;
            (file.read_exact_at(buf, offset + off)).map_err(|e| Error::io(name.as_str(), e))
        };
        if let Some(place) = earlier_blob(out, candidates, false, len, &mut source)? {
            return Ok(WrittenPart {
                place,
                stored_len: len,
                encoded: false,
                shared: true,
                digest,
            });
        }
    }
    let (place, dst) = out.reserve(len)?;
    let src = file.try_clone().map_err(|e| Error::io(name.as_str(), e))?;
    let done = copier.send(copier::Job {
        src,
        src_path: path.to_path_buf(),
        src_name: name,
        src_offset: offset,
        dst,
        place,
        len,
    });
    finish_copies(out, watch, done)?;
    candidates.push(Blob {
        place,
        len,
        encoded: false,
    });
    Ok(WrittenPart {
        place,
        stored_len: len,
        encoded: false,
        shared: false,
        digest,
    })
}

/// Where a copied part goes, and what watches its source.
struct To<'a> {
    out: &'a mut Out,
    written: &'a mut Written,
    copier: &'a mut Copier,
    watch: &'a Watch,
}

/// Takes the copier's finished jobs: an error fails the pack, and so does
/// a source that changed since it was first read (the copy may have read
/// other bytes than were hashed); the bytes of each copy start going to
/// disk (rather than all at the final sync).
fn finish_copies(out: &Out, watch: &Watch, done: Vec<copier::Done>) -> Result<()> {
    for d in done {
        d.result.map_err(|e| match e.kind() {
            // The source ended early: it shrank.
            std::io::ErrorKind::UnexpectedEof => Error::io(d.src_name, e),
            _ => out.error(d.place.file, e),
        })?;
        watch.check(&d.src_path)?;
        out.write_back(d.place, d.len);
    }
    Ok(())
}

/// Takes back `part`'s blob in favour of an earlier one with the same
/// bytes, when there is one; else remembers it under `key` (its decoded
/// length and XXH3-64).
fn share(
    out: &mut Out,
    written: &mut Written,
    key: (u64, u64),
    mut part: WrittenPart,
) -> Result<WrittenPart> {
    let candidates = written.blobs.entry(key).or_default();
    let (encoded, len) = (part.encoded, part.stored_len);
    let earlier = earlier_blob(
        out,
        candidates,
        encoded,
        len,
        &mut output_at(out, part.place),
    )?;
    if let Some(place) = earlier {
        out.rewind(part.place)?;
        part.place = place;
        part.shared = true;
        return Ok(part);
    }
    candidates.push(Blob {
        place: part.place,
        len: part.stored_len,
        encoded: part.encoded,
    });
    Ok(part)
}

/// The place of the first of `candidates` (blobs written under the same
/// key) whose stored bytes are those `bytes` reads (given an offset from 0
/// and a buffer to fill): as encoded, as long, and the same.
fn earlier_blob(
    out: &Out,
    candidates: &[Blob],
    encoded: bool,
    len: u64,
    bytes: &mut dyn FnMut(u64, &mut [u8]) -> Result<()>,
) -> Result<Option<Place>> {
    for b in candidates {
        if b.encoded == encoded
            && b.len == len
            && same_bytes(len, &mut output_at(out, b.place), bytes)?
        {
            return Ok(Some(b.place));
        }
    }
    Ok(None)
}

/// True when the `len` bytes that `a` and `b` read (each given an offset
/// from 0 and a buffer to fill) are the same.
fn same_bytes(
    len: u64,
    a: &mut dyn FnMut(u64, &mut [u8]) -> Result<()>,
    b: &mut dyn FnMut(u64, &mut [u8]) -> Result<()>,
) -> Result<bool> {
    const STEP: u64 = 1 << 20;
    let (mut x, mut y) = (vec![0u8; STEP as usize], vec![0u8; STEP as usize]);
    let mut off = 0;
    while off < len {
        let n = (len - off).min(STEP) as usize;
        a(off, &mut x[..n])?;
        b(off, &mut y[..n])?;
        if x[..n] != y[..n] {
            return Ok(false);
        }
        off += n as u64;
    }
    Ok(true)
}

/// Reads the output at `place`, for [`same_bytes`].
fn output_at(out: &Out, place: Place) -> impl FnMut(u64, &mut [u8]) -> Result<()> + '_ {
    move |off, buf| out.read_at(place.file, place.offset + off, buf)
}

/// A rejection of the output by `ztfs check`'s rules (a rule the source's
/// format does not have: rank, names of file attributes) refuses the
/// source; the command line names it.
fn unwritable(e: Error) -> Error {
    match e {
        Error::Reject { rule, detail } => Error::Reject {
            rule,
            detail: format!("cannot be written as zTensor: {detail}"),
        },
        e => e,
    }
}
