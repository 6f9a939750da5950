//! The dequantized view of a `zt.mx/1` or `zt.quant_group/1` object read
//! by range from the file, as a GGUF tensor's values are: where its parts
//! are stored as they are (no encoding) in one file, a read computes the
//! elements it overlaps from just the bytes they need, and nothing is
//! prepared or held. Compressed parts (or parts in different shards) keep
//! the prepared view (`super::prepare`), which decodes them first.
//!
//! The arithmetic is the prepared view's own ([`MxParts`], [`QuantParts`]
//! over a [`FilePart`] instead of a loaded part), so the two give the same
//! bytes; what this path does not do is check the profile's data rules
//! before serving (the mx f4 padding nibble, which is no element): as
//! for any part, `--verify` checks them on the object's first open.

use super::dequant::{split, FilePart, MxParts, QuantParts};
use super::prepared::Window;
use super::{plan, Kind, DEQUANTIZED_VIEW};
use crate::format::manifest::{Object, Part};
use crate::format::profiles::{MxElement, QuantGroup};
use crate::format::Ranges;

/// An object's dequantized view, computed by range from its raw parts.
#[derive(Debug, Clone)]
pub struct ByRange {
    layout: &'static str,
    size: u64,
    kind: RangeKind,
    data: (u64, u64),
    scales: (u64, u64),
    zeros: Option<(u64, u64)>,
}

#[derive(Debug, Clone)]
enum RangeKind {
    Mx {
        e: MxElement,
        block_size: u64,
        dims: (u64, u64, u64),
    },
    Quant {
        q: QuantGroup,
        dims: (u64, u64, u64),
    },
}

/// The by-range view of object `o`: `None` when it has no dequantized view
/// or its parts are not all stored as they are in one file (then the
/// prepared view serves it).
pub fn by_range(o: &Object) -> Option<ByRange> {
    let p = plan(o).ok()?;
    if p.name != DEQUANTIZED_VIEW {
        return None;
    }
    let (layout, kind, zeros) = match p.kind {
        Kind::Mx(m, e) => {
            let kind = RangeKind::Mx {
                e,
                block_size: m.block_size,
                dims: split(&o.shape, m.axis),
            };
            ("zt.mx/1", kind, None)
        }
        Kind::Quant(q) => {
            let zeros = match q.zeros {
                Some(_) => Some(raw(o, "zeros")?),
                None => None,
            };
            let dims = split(&o.shape, q.axis);
            ("zt.quant_group/1", RangeKind::Quant { q, dims }, zeros)
        }
        // Encoded ggml blocks only come here (the model computes raw ones).
        Kind::Csr(..) | Kind::Coo(..) | Kind::Ggml(_) => return None,
    };
    let (data, scales) = (raw(o, "data")?, raw(o, "scales")?);
    let shard = |p: &Part| p.blob.shard.clone();
    let first = shard(o.part("data")?);
    if o.parts.iter().any(|p| shard(p) != first) {
        return None;
    }
    Some(ByRange {
        layout,
        size: p.size,
        kind,
        data,
        scales,
        zeros,
    })
}

/// Where part `name` of `o` lies, when it is stored as it is.
fn raw(o: &Object, name: &str) -> Option<(u64, u64)> {
    let p = o.part(name)?;
    p.encoding
        .is_none()
        .then_some((p.blob.offset, p.blob.length))
}

impl ByRange {
    /// The view's size in bytes.
    pub fn len(&self) -> u64 {
        self.size
    }

    /// True for a view of no bytes.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The object's layout id, what the values are dequantized from.
    pub fn layout(&self) -> &'static str {
        self.layout
    }

    /// Fills `out` with the view's bytes from `offset` (within the view),
    /// reading the parts' bytes from `file` (the file holding them).
    pub fn read_into(&self, file: &dyn Ranges, offset: u64, out: &mut [u8]) -> Result<(), String> {
        if offset
            .checked_add(out.len() as u64)
            .is_none_or(|e| e > self.size)
        {
            return Err(format!("range past the view's {} bytes", self.size));
        }
        let part = |(start, len): (u64, u64)| FilePart { file, start, len };
        let short = || "a part is shorter than its object says, or past the file's end".to_string();
        let mut w = Window::new(offset, out);
        match &self.kind {
            RangeKind::Mx {
                e,
                block_size,
                dims,
            } => MxParts {
                e: *e,
                block_size: *block_size,
                dims: *dims,
                data: part(self.data),
                scales: part(self.scales),
            }
            .read(&mut w)
            .ok_or_else(short),
            RangeKind::Quant { q, dims } => QuantParts {
                q: q.clone(),
                dims: *dims,
                data: part(self.data),
                scales: part(self.scales),
                zeros: part(self.zeros.unwrap_or((0, 0))),
            }
            .read(&mut w)
            .ok_or_else(short),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Model;

    /// Every mx and quant_group object of the corpus: the view by range
    /// (whole, and ranges cut inside values) is the bytes the prepared
    /// view renders from the loaded parts, wherever that renders.
    #[test]
    fn by_range_is_the_rendered_view() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/valid");
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !(name.starts_with("mx-") || name.starts_with("quant-")) {
                continue;
            }
            let Ok(model) = Model::open(&path) else {
                continue;
            };
            let Some(m) = model.manifest() else { continue };
            for (i, o) in m.objects.iter().enumerate() {
                let Some(v) = super::by_range(o) else {
                    continue;
                };
                let part = |p: &str| crate::read::decoded_vec(&model, o, p);
                let Ok(want) = super::super::render(o, &part) else {
                    continue;
                };
                let file = model.view_store(i as u32).unwrap();
                let mut got = vec![0u8; want.len()];
                v.read_into(file, 0, &mut got).unwrap();
                assert_eq!(got, want, "{name}: {:?}", o.name);
                for (a, n) in [
                    (1, 6),
                    (3, want.len().saturating_sub(5)),
                    (want.len() / 2, 3),
                ] {
                    let n = n.min(want.len().saturating_sub(a));
                    let mut part = vec![0u8; n];
                    v.read_into(file, a as u64, &mut part).unwrap();
                    assert_eq!(part[..], want[a..a + n], "{name}: [{a}, +{n})");
                }
                checked += 1;
            }
        }
        assert!(checked >= 10, "{checked} objects");
    }
}
