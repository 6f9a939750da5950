//! The bytes a part denotes: raw, or decoded from its encoding profile, with
//! the content rules of its logical type applied, and refusals for what this
//! reader does not know (§4.2, §5.2, §5.3).
//!
//! Decoding streams in chunks (a slice of the map for raw parts, a frame for
//! zstd-seekable), so verifying a large part never holds it in memory.

pub mod dequant;
pub mod hurray;
pub mod relayout;
pub mod views;
pub mod zstd_seekable;

use crate::error::{Error, Result, Rule};
use crate::format::profiles::Layout;
use crate::format::types::{Interpretation, LogicalType};
use crate::format::{Object, Part};

use zstd_seekable::SeekTable;

/// Chunk size for streaming raw parts, in bytes.
const RAW_CHUNK: usize = 8 << 20;

/// How the stored bytes of a part become its decoded bytes.
pub enum Encoding {
    /// No encoding: the stored bytes are the decoded bytes.
    Raw,
    /// `zt.zstd-seekable/1` with its validated seek table.
    ZstdSeekable(SeekTable),
}

impl Encoding {
    /// Resolves the part's encoding against its stored bytes: an unknown
    /// profile is refused, a seek table is validated.
    pub fn of(part: &Part, stored: &[u8]) -> Result<Encoding> {
        Encoding::of_from(part, &stored)
    }

    /// [`Encoding::of`] a blob read by range: a raw part reads nothing, a
    /// compressed one its seek table.
    pub fn of_from(part: &Part, stored: &dyn crate::format::Ranges) -> Result<Encoding> {
        match part.encoding.as_deref() {
            None => Ok(Encoding::Raw),
            Some(zstd_seekable::ID) => Ok(Encoding::ZstdSeekable(SeekTable::parse_from(
                stored,
                part.decoded_size(),
            )?)),
            Some(other) => Err(Error::Unsupported(format!(
                "part {:?} uses encoding {other:?}, which this reader does not know",
                part.name
            ))),
        }
    }

    /// Feeds the decoded bytes to `sink` in order.
    pub fn stream(&self, stored: &[u8], sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        self.stream_from(&stored, sink)
    }

    /// [`Encoding::stream`] of a blob read by range, a chunk or a frame
    /// at a time.
    pub fn stream_from(
        &self,
        stored: &dyn crate::format::Ranges,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        match self {
            Encoding::Raw => {
                let (n, step) = (stored.size(), RAW_CHUNK as u64);
                (0..n.div_ceil(step))
                    .try_for_each(|i| sink(&stored.get(i * step, step.min(n - i * step))?))
            }
            Encoding::ZstdSeekable(t) => {
                (0..t.len()).try_for_each(|i| sink(&t.decode_frame_from(stored, i, Vec::new())?))
            }
        }
    }
}

/// Refuses a part this reader must not interpret: one of an unknown layout
/// or with an unknown logical type. Structural (raw) access stays possible.
pub fn check_interpretable(object: &Object, part: &Part) -> Result<()> {
    if !Layout::of(&object.layout).is_interpreted() {
        return Err(Error::Unsupported(format!(
            "object {:?} has layout {:?}, which this reader does not interpret (its stored bytes are available raw)",
            object.name, object.layout
        )));
    }
    if let Interpretation::Unknown = part.ty.interpretation() {
        return Err(Error::Unsupported(format!(
            "part {:?}/{:?} has logical type {:?}, which this reader does not know (its stored bytes are available raw)",
            object.name,
            part.name,
            part.ty.type_name()
        )));
    }
    Ok(())
}

/// The content rules of a logical type, checked chunk by chunk over the
/// decoded bytes (Appendix A): bool bytes are 0 or 1; an odd-count
/// `f4_e2m1` part has a zero final high nibble.
pub struct ContentCheck<'a> {
    object: &'a Object,
    part: &'a Part,
    seen: u64,
    last: Option<u8>,
}

impl<'a> ContentCheck<'a> {
    /// A checker for `part` of `object`.
    pub fn new(object: &'a Object, part: &'a Part) -> ContentCheck<'a> {
        ContentCheck {
            object,
            part,
            seen: 0,
            last: None,
        }
    }

    /// True when the part's type has content rules at all.
    pub fn applies(&self) -> bool {
        matches!(
            self.part.ty.interpretation(),
            Interpretation::Registered(LogicalType::Bool | LogicalType::F4E2M1)
        )
    }

    /// Checks the next chunk of decoded bytes.
    pub fn update(&mut self, chunk: &[u8]) -> Result<()> {
        if let Interpretation::Registered(LogicalType::Bool) = self.part.ty.interpretation() {
            if let Some(i) = chunk.iter().position(|&b| b > 1) {
                return Err(Error::reject(
                    Rule::LayoutData,
                    format!(
                        "bool part {:?}/{:?} holds byte {:#04x} at offset {}; only 0x00 and 0x01 are allowed",
                        self.object.name,
                        self.part.name,
                        chunk[i],
                        self.seen + i as u64
                    ),
                ));
            }
        }
        self.seen += chunk.len() as u64;
        if let Some(&b) = chunk.last() {
            self.last = Some(b);
        }
        Ok(())
    }

    /// Checks the decoded bytes `bytes` found at `offset` of the part, as
    /// they are served: the bool rule over these bytes, and the f4_e2m1
    /// padding nibble when they end the part. A range can be checked
    /// without the rest of the part, so serving a range never reads more.
    pub fn check_range(&self, offset: u64, bytes: &[u8]) -> Result<()> {
        let mut at = ContentCheck {
            seen: offset,
            ..ContentCheck::new(self.object, self.part)
        };
        at.update(bytes)?;
        let ends_part = offset.saturating_add(bytes.len() as u64) == self.part.decoded_size();
        if ends_part {
            at.finish()?;
        }
        Ok(())
    }

    /// Checks what only the end of the stream shows.
    pub fn finish(&self) -> Result<()> {
        let f4 = matches!(
            self.part.ty.interpretation(),
            Interpretation::Registered(LogicalType::F4E2M1)
        );
        // The element count is known only for dense (notes §1).
        let odd =
            self.object.layout == "dense" && self.object.num_elements().is_some_and(|n| n % 2 == 1);
        match self.last {
            Some(b) if f4 && odd && b & 0xF0 != 0 => Err(Error::reject(
                Rule::LayoutData,
                format!(
                    "f4_e2m1 part {:?}/{:?} has an odd element count, but its final high nibble is {:#x}, not 0",
                    self.object.name,
                    self.part.name,
                    b >> 4
                ),
            )),
            _ => Ok(()),
        }
    }
}
