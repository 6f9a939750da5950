//! NumPy `.npz` archives (`np.savez`, `np.savez_compressed`): pure bytes in
//! (through [`Ranges`]), each member array's header and where its bytes
//! are out.
//!
//! An archive is a zip whose every member is a `.npy` file; each is an
//! array named by the member's name without `.npy`, as `np.load(...)`
//! names it. A stored member (`np.savez`) is read in place: its `.npy`
//! header read from the file, its data a range of the file. A deflated
//! member (`np.savez_compressed`) cannot be read by range: it is inflated
//! as a stream ([`inflate_to`]), once here to check it and read its
//! header, and again by the caller where its bytes are wanted (the model
//! keeps them in a file, [`INFLATED`]). Nothing here holds more of a
//! member than a [`CHUNK`].
//!
//! Each member's `.npy` header is held to numpy's rules
//! ([`crate::format::npy`]): the data must fill the member exactly.
//! A member name given twice is refused (`Zip`): numpy's `NpzFile` would
//! read the last, a reader walking the archive the first.

use std::io::Read;

use crate::error::{Error, Result, Rule};
use crate::format::npy;
use crate::format::zip::{self, Member};
use crate::format::Ranges;

/// The deflate method's number in a zip.
pub const DEFLATE: u16 = 8;

/// An array of the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Array {
    /// The member's name without `.npy`.
    pub name: String,
    /// The zip member holding it.
    pub member: Member,
    /// Its `.npy` header (its `data_offset` within the member's bytes,
    /// inflated where the member is deflated).
    pub header: npy::Header,
    /// For a deflated member, where its inflated bytes start among all
    /// the archive's deflated members' inflated bytes, one after another in
    /// directory order (the model keeps them so, in [`INFLATED`]).
    pub inflated_at: u64,
}

/// The name of the file of an archive's inflated members (`blob.shard`),
/// each at its [`Array::inflated_at`].
pub const INFLATED: &str = "(inflated members)";

impl Array {
    /// True when the member is stored: its data is a range of the file.
    pub fn is_stored(&self) -> bool {
        self.member.is_stored()
    }
}

/// An archive's arrays, in the zip directory's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub arrays: Vec<Array>,
}

impl File {
    /// The bytes of its deflated members inflated, all together (summed
    /// without overflow by [`read_archive`]).
    pub fn inflated_len(&self) -> u64 {
        let deflated = self.arrays.iter().filter(|a| !a.is_stored());
        deflated.fold(0, |n, a| n.saturating_add(a.member.size))
    }
}

/// Bytes of a stored member read at once by [`check_stored_crc`].
const CRC_CHUNK: u64 = 8 << 20;

/// Checks array `i`'s stored member against its CRC-32 (Python's zipfile
/// checks it as numpy reads the member; a deflated member's was checked
/// as it inflated at open), reading it in pieces from `file` and telling
/// `progress` of each.
pub fn check_stored_crc(
    npz: &File,
    i: usize,
    file: &dyn Ranges,
    progress: &mut dyn FnMut(u64) -> Result<()>,
) -> Result<()> {
    let Some(a) = npz.arrays.get(i).filter(|a| a.is_stored()) else {
        return Ok(());
    };
    let m = &a.member;
    let mut digest = CRC32.digest();
    let mut at = 0u64;
    while at < m.len {
        let n = (m.len - at).min(CRC_CHUNK);
        digest.update(&file.get(m.offset + at, n)?);
        progress(n)?;
        at += n;
    }
    check_crc(m, digest.finalize())
}

/// Checks `crc`, computed over member `m`'s bytes (inflated where it is
/// deflated), against the directory's.
fn check_crc(m: &Member, crc: u32) -> Result<()> {
    match crc == m.crc32 {
        true => Ok(()),
        false => Err(zip_err(format!(
            "member {:?}: CRC-32 {crc:#010x}, the directory says {:#010x}",
            m.name(),
            m.crc32
        ))),
    }
}

fn zip_err(what: impl std::fmt::Display) -> Error {
    Error::reject(Rule::Zip, what.to_string())
}

/// True when `members` are an `.npz`'s: at least one, every one a `.npy`.
pub fn is_npz(members: &[Member]) -> bool {
    !members.is_empty() && members.iter().all(|m| m.name.ends_with(b".npy"))
}

/// The members of `file`, as [`zip::members`].
pub fn members(file: &(dyn Ranges + Sync)) -> Result<Vec<Member>> {
    zip::members(file)
}

/// How much of a member's stored bytes is read at a time, and how much of
/// its inflated bytes is handed on at a time: with the decoder's 32 KiB
/// window, what inflating a member of any size holds.
pub const CHUNK: usize = 256 << 10;

/// The zip CRC-32.
static CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

/// Inflates member `m` (reads its stored bytes, for a stored member),
/// handing its bytes to `out` in order, at most [`CHUNK`] at a time.
/// Refused when it is encrypted or compressed by another method than
/// deflate, when it inflates to another size than the directory says
/// (more is found before it is handed on), or when its CRC-32 is not the
/// directory's: that is found at the end, so the caller trusts nothing it
/// was handed until this returns `Ok`. An error of `out` stops it.
pub fn inflate_to(
    file: &dyn Ranges,
    m: &Member,
    out: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let name = m.name();
    if m.encrypted || !(m.method == 0 || m.method == DEFLATE) {
        return Err(zip_err(format!(
            "member {name:?} is {}: only stored and deflated members are read",
            match m.encrypted {
                true => "encrypted".to_string(),
                false => format!("compressed by method {}", m.method),
            }
        )));
    }
    let end = (m.offset.checked_add(m.len)).ok_or_else(|| {
        zip_err(format!(
            "member {name:?}: its bytes [{}, +{}) end past 2^64",
            m.offset, m.len
        ))
    })?;
    let failed = std::cell::RefCell::new(None);
    let stored = Stored {
        file,
        at: m.offset,
        end,
        buf: Vec::new(),
        pos: 0,
        failed: &failed,
    };
    let mut reader: Box<dyn Read + '_> = match m.method {
        0 => Box::new(stored),
        _ => Box::new(flate2::bufread::DeflateDecoder::new(stored)),
    };
    // A small member (most of an archive of many arrays) needs no more
    // than its size and the byte that would show it is longer.
    let mut buf = vec![0; m.size.saturating_add(1).min(CHUNK as u64) as usize];
    let mut digest = CRC32.digest();
    let mut got = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A read of the archive failed, or the deflate stream is bad.
            Err(e) => {
                return Err((failed.borrow_mut().take())
                    .unwrap_or_else(|| zip_err(format!("member {name:?}: deflate: {e}"))))
            }
        };
        got = got.saturating_add(n as u64);
        if got > m.size {
            return Err(zip_err(format!(
                "member {name:?} inflates to more than {} bytes; the directory says {}",
                m.size, m.size
            )));
        }
        digest.update(&buf[..n]);
        out(&buf[..n])?;
    }
    if got != m.size {
        return Err(zip_err(format!(
            "member {name:?} inflates to {got} bytes; the directory says {}",
            m.size
        )));
    }
    check_crc(m, digest.finalize())
}

/// A member's stored bytes `[at, end)` of the archive, read [`CHUNK`] at a
/// time. A failed read is kept in `failed`, to be returned as it is
/// rather than as a deflate error.
struct Stored<'a> {
    file: &'a dyn Ranges,
    at: u64,
    end: u64,
    buf: Vec<u8>,
    pos: usize,
    failed: &'a std::cell::RefCell<Option<Error>>,
}

impl std::io::BufRead for Stored<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.pos == self.buf.len() && self.at < self.end {
            let n = (self.end - self.at).min(CHUNK as u64);
            let bytes = self.file.get(self.at, n).map_err(|e| {
                let shown = std::io::Error::other(e.to_string());
                *self.failed.borrow_mut() = Some(e);
                shown
            })?;
            self.buf.clear();
            self.buf.extend_from_slice(&bytes);
            self.pos = 0;
            self.at += n;
        }
        Ok(&self.buf[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.buf.len());
    }
}

impl Read for Stored<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        use std::io::BufRead;
        let bytes = self.fill_buf()?;
        let n = bytes.len().min(out.len());
        out[..n].copy_from_slice(&bytes[..n]);
        self.consume(n);
        Ok(n)
    }
}

/// The arrays of an archive whose members are `members`. Each deflated
/// member is inflated through ([`inflate_to`]: its size and CRC-32
/// checked) keeping only its first bytes, its `.npy` header: the whole
/// archive is proven as it would be read, in memory of a [`CHUNK`].
pub fn read_archive(file: &dyn Ranges, members: &[Member]) -> Result<File> {
    let mut seen = std::collections::HashSet::new();
    let mut arrays = Vec::with_capacity(members.len());
    let mut inflated_at = 0u64;
    for m in members {
        let shown = m.name();
        // Named as numpy names it: through Python's zipfile, code page 437
        // unless the directory flags the name UTF-8.
        let Some(text) = m.text_name() else {
            return Err(zip_err(format!(
                "member {shown:?}: its name is flagged UTF-8 and is not (Python's zipfile refuses it)"
            )));
        };
        if !seen.insert(text.clone()) {
            return Err(zip_err(format!(
                "member {text:?} is in the archive twice: numpy reads the last, a zip walk the first"
            )));
        }
        let Some(stem) = text.strip_suffix(".npy") else {
            return Err(zip_err(format!("member {shown:?} is not a .npy file")));
        };
        let name = stem.to_string();
        let in_member = |head: &[u8], len: u64| {
            npy::read_header(head, len)
                .map_err(|e| Error::Unsupported(format!("member {shown:?}: {e}")))
        };
        let at = inflated_at;
        let header = match m.is_stored() {
            true => {
                let head = file.get(m.offset, m.len.min(npy::MAX_HEAD_BYTES))?;
                in_member(&head, m.len)?
            }
            false => {
                let keep = m.size.min(npy::MAX_HEAD_BYTES) as usize;
                let mut head = Vec::with_capacity(keep);
                inflate_to(file, m, &mut |b| {
                    let n = (keep - head.len()).min(b.len());
                    head.extend_from_slice(&b[..n]);
                    Ok(())
                })?;
                inflated_at = inflated_at.checked_add(m.size).ok_or_else(|| {
                    zip_err(format!(
                        "member {shown:?}: the deflated members inflate to more than 2^64 bytes"
                    ))
                })?;
                in_member(&head, m.size)?
            }
        };
        arrays.push(Array {
            name,
            member: m.clone(),
            header,
            inflated_at: at,
        });
    }
    Ok(File { arrays })
}

/// The objects of an archive: each array a dense object of one raw part
/// `data`. A stored member's blob is its range of the file; a deflated
/// member's is its range of the inflated members' bytes, which the model
/// holds as one file named [`INFLATED`] (`blob.shard`).
pub fn objects(file: &File) -> Vec<crate::format::Object> {
    use crate::format::manifest::{Object, Part};
    use crate::format::text::Texts;
    use crate::format::types::ElementType;
    let mut texts = Texts::default();
    let (data, dense) = (texts.get("data"), texts.get("dense"));
    file.arrays
        .iter()
        .map(|a| {
            let h = &a.header;
            let ty = ElementType {
                dtype: h.dtype,
                logical: h.logical.map(|l| texts.get(l)),
            };
            // Checked at read: the data lies inside the member.
            let (offset, shard) = match a.is_stored() {
                true => (a.member.offset + h.data_offset, None),
                false => (a.inflated_at + h.data_offset, Some(texts.get(INFLATED))),
            };
            let mut part = Part::raw(data.clone(), ty, offset, h.data_len);
            part.blob.shard = shard;
            Object {
                name: a.name.as_str().into(),
                shape: texts.shape(&h.shape),
                layout: dense.clone(),
                attributes: None,
                parts: smallvec::smallvec![part],
            }
        })
        .collect()
}

/// `manifest.json` of an archive: each array's member, dtype, shape and
/// where its data is.
pub fn write_manifest(file: &File, out: &mut dyn crate::format::json::Sink) {
    use crate::format::cbor::Value as J;
    let names: Vec<String> = file
        .arrays
        .iter()
        .map(|a| a.member.name().into_owned())
        .collect();
    let arrays = (file.arrays.iter().zip(&names)).map(|(a, member)| {
        let h = &a.header;
        let mut e = vec![
            (J::Text("member"), J::Text(member)),
            (J::Text("dtype"), J::Text(h.dtype.name())),
        ];
        if let Some(l) = h.logical {
            e.push((J::Text("logical_type"), J::Text(l)));
        }
        e.extend([
            (
                J::Text("shape"),
                J::Array(h.shape.iter().map(|&d| J::Uint(d)).collect()),
            ),
            (J::Text("compressed"), J::Bool(!a.is_stored())),
            (J::Text("member_offset"), J::Uint(a.member.offset)),
            (J::Text("stored_length"), J::Uint(a.member.len)),
            (J::Text("data_offset"), J::Uint(h.data_offset)),
            (J::Text("data_length"), J::Uint(h.data_len)),
        ]);
        (J::Text(a.name.as_str()), J::Map(e))
    });
    let doc = J::Map(vec![
        (J::Text("format"), J::Text("npz")),
        (J::Text("arrays"), J::Map(arrays.collect())),
    ]);
    crate::format::json::to_json_pretty(&doc, out);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A deflated member of `data` whose directory says `size` bytes, at
    /// offset 0 of the returned bytes.
    fn deflated(data: &[u8], size: u64) -> (Vec<u8>, Member) {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        let bytes = e.finish().unwrap();
        let m = Member {
            name: b"a.npy".to_vec(),
            header: 0,
            offset: 0,
            len: bytes.len() as u64,
            size,
            method: DEFLATE,
            encrypted: false,
            crc32: CRC32.checksum(data),
            utf8: false,
        };
        (bytes, m)
    }

    /// A member is handed on whole, in order, a chunk at most at a time;
    /// one that inflates to more than its directory says is refused before
    /// more than that is handed on; one to less, or with another CRC-32,
    /// after.
    #[test]
    fn a_member_inflates_as_a_stream_of_its_declared_size() {
        let data: Vec<u8> = (0..3 * CHUNK as u32 + 5).map(|i| (i % 253) as u8).collect();
        let (bytes, m) = deflated(&data, data.len() as u64);
        let mut got = Vec::new();
        inflate_to(&bytes.as_slice(), &m, &mut |b| {
            assert!(b.len() <= CHUNK);
            got.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        assert!(got == data);

        let short = Member {
            size: 1000,
            ..m.clone()
        };
        let mut handed = 0;
        let e = inflate_to(&bytes.as_slice(), &short, &mut |b| {
            handed += b.len();
            Ok(())
        })
        .unwrap_err();
        assert!(e.to_string().contains("more than 1000 bytes"), "{e}");
        assert_eq!(handed, 0, "nothing past the declared size is handed on");

        let long = Member {
            size: data.len() as u64 + 1,
            ..m.clone()
        };
        let e = inflate_to(&bytes.as_slice(), &long, &mut |_| Ok(())).unwrap_err();
        assert_eq!(e.rule(), Some(Rule::Zip), "{e}");
        let crc = Member {
            crc32: m.crc32 ^ 1,
            ..m.clone()
        };
        let e = inflate_to(&bytes.as_slice(), &crc, &mut |_| Ok(())).unwrap_err();
        assert!(e.to_string().contains("CRC-32"), "{e}");
        let stop = inflate_to(&bytes.as_slice(), &m, &mut |_| Err(Error::Interrupted));
        assert!(matches!(stop, Err(Error::Interrupted)));
    }
}
