//! NumPy `.npz` archives (`np.savez`, `np.savez_compressed`): pure bytes in
//! (through [`Ranges`]), each member array's header and where its bytes
//! are out.
//!
//! An archive is a zip whose every member is a `.npy` file; each is an
//! array named by the member's name without `.npy`, as `np.load(...)`
//! names it. A stored member (`np.savez`) is read in place: its `.npy`
//! header read from the file, its data a range of the file. A deflated
//! member (`np.savez_compressed`) is inflated whole ([`inflate`]) by the
//! caller, which keeps the bytes and reads the header from them: deflate
//! cannot be read by range.
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

/// The name of the file of an archive's inflated members (`blob.shard`).
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

/// Member `m`'s bytes inflated (its stored bytes, for a stored member),
/// refused when its declared size is over `budget` (checked before any
/// allocation), when it inflates to another size than declared, or when
/// its CRC-32 is not the directory's.
pub fn inflate(file: &dyn Ranges, m: &Member, budget: u64) -> Result<Vec<u8>> {
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
    if m.size > budget {
        return Err(Error::Unsupported(format!(
            "member {name:?} inflates to {} bytes, over the budget of {budget} for deflated members (a mount's --cache-mib; `np.savez` without compression is read in place)",
            m.size
        )));
    }
    let stored = file.get(m.offset, m.len)?;
    let out = match m.method {
        0 => stored.into_owned(),
        _ => {
            let mut out = Vec::with_capacity(m.size as usize);
            let mut dec = flate2::read::DeflateDecoder::new(&stored[..]).take(m.size + 1);
            dec.read_to_end(&mut out)
                .map_err(|e| zip_err(format!("member {name:?}: deflate: {e}")))?;
            out
        }
    };
    if out.len() as u64 != m.size {
        return Err(zip_err(format!(
            "member {name:?} inflates to {}{} bytes; the directory says {}",
            if out.len() as u64 > m.size {
                "more than "
            } else {
                ""
            },
            out.len().min(m.size as usize),
            m.size
        )));
    }
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&out);
    if crc != m.crc32 {
        return Err(zip_err(format!(
            "member {name:?}: CRC-32 {crc:#010x}, the directory says {:#010x}",
            m.crc32
        )));
    }
    Ok(out)
}

/// The arrays of an archive whose members are `members`; a deflated
/// member's bytes come from `inflated` (called once per such member, in
/// directory order).
pub fn read_archive(
    file: &dyn Ranges,
    members: &[Member],
    inflated: &mut dyn FnMut(&Member) -> Result<std::sync::Arc<Vec<u8>>>,
) -> Result<File> {
    let mut seen = std::collections::HashSet::new();
    let mut arrays = Vec::with_capacity(members.len());
    let mut inflated_at = 0u64;
    for m in members {
        let shown = m.name();
        if !seen.insert(&m.name) {
            return Err(zip_err(format!(
                "member {shown:?} is in the archive twice: numpy reads the last, a zip walk the first"
            )));
        }
        let Some(stem) = m.name.strip_suffix(b".npy") else {
            return Err(zip_err(format!("member {shown:?} is not a .npy file")));
        };
        let name = String::from_utf8(stem.to_vec())
            .map_err(|_| zip_err(format!("member {shown:?}: the name is not UTF-8")))?;
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
                let bytes = inflated(m)?;
                inflated_at = inflated_at.saturating_add(m.size);
                let head = &bytes[..bytes.len().min(npy::MAX_HEAD_BYTES as usize)];
                in_member(head, m.size)?
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
