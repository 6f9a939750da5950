//! The semantic checks of §3.6 over a schema-mapped manifest: shapes, blob
//! alignment and bounds, shard references, logical-type pins, layout metadata
//! rules, and the per-file identical-or-disjoint overlap check.
//!
//! Shard files are never opened here: references into a shard are checked
//! against the root's declared shard size alone (§3.6 item 4).

use std::collections::BTreeMap;

use super::footer::Footer;
use super::manifest::{BlobRef, Manifest, Object, Part};
use super::types::Interpretation;
use super::{check_shard_name, ALIGN, FOOTER_LEN, MAX_RANK};
use crate::error::{Error, Result, Rule};

/// Runs every §3.6 check that follows the schema mapping, in the public
/// implementation's order: shards, then per object (shape, parts, layout),
/// then overlap.
pub fn check_manifest(m: &Manifest, file_len: u64, footer: &Footer) -> Result<()> {
    for o in &m.objects {
        check_object(m, o, file_len)?;
    }
    check_overlap(m, footer)
}

fn check_object(m: &Manifest, o: &Object, file_len: u64) -> Result<()> {
    if o.shape.len() > MAX_RANK {
        return Err(Error::reject(
            Rule::Shape,
            format!(
                "object {:?} has rank {}, above {MAX_RANK}",
                o.name,
                o.shape.len()
            ),
        ));
    }
    if o.num_elements().is_none() {
        return Err(Error::reject(
            Rule::Shape,
            format!(
                "object {:?}: shape {:?} has an element count that overflows u64",
                o.name, o.shape
            ),
        ));
    }
    for p in &o.parts {
        check_part(m, o, p, file_len)?;
    }
    check_layout(o)
}

fn check_part(m: &Manifest, o: &Object, p: &Part, file_len: u64) -> Result<()> {
    let at = || format!("{:?}/{:?}", o.name, p.name);
    let BlobRef {
        offset,
        length,
        ref shard,
    } = p.blob;
    if offset % ALIGN != 0 || offset < ALIGN {
        return Err(Error::reject(
            Rule::BlobAlignment,
            format!("blob [{offset}, +{length}) of {} is not at a multiple of {ALIGN} at or above {ALIGN}", at()),
        ));
    }
    let (target_len, target) = match shard {
        None => (file_len, "this file".to_string()),
        Some(name) => {
            check_shard_name(name)?;
            let s = m.shard(name).ok_or_else(|| {
                let why = if m.shards.is_none() {
                    "the manifest has no shard table"
                } else {
                    "the shard table does not declare it"
                };
                Error::reject(
                    Rule::ShardRef,
                    format!("part {} names shard {name:?}, but {why}", at()),
                )
            })?;
            (s.size, format!("shard {name:?}"))
        }
    };
    let region = target_len.saturating_sub(FOOTER_LEN);
    if offset.checked_add(length).is_none_or(|end| end > region) {
        return Err(Error::reject(
            Rule::BlobBounds,
            format!(
                "blob [{offset}, +{length}) of {} ends past the data region of {target} ({region})",
                at()
            ),
        ));
    }
    if let Interpretation::Registered(t) = p.ty.interpretation() {
        if t.dtype() != p.ty.dtype {
            return Err(Error::reject(
                Rule::Schema,
                format!(
                    "part {}: type {:?} requires dtype {}, not {}",
                    at(),
                    t.name(),
                    t.dtype(),
                    p.ty.dtype
                ),
            ));
        }
    }
    Ok(())
}

/// Layout metadata rules (§5): dense and the registered profiles this
/// reader implements; unknown layouts get none (§5.2).
fn check_layout(o: &Object) -> Result<()> {
    super::profiles::check_metadata(o)
}

/// §2.4 / §3.6 item 4: per target file, references (plus the root's manifest
/// blob) are pairwise identical or disjoint. Zero-length blobs are exempt.
fn check_overlap(m: &Manifest, footer: &Footer) -> Result<()> {
    type Span<'a> = (u64, u64, &'a str, &'a str);
    let mut groups: BTreeMap<Option<&str>, Vec<Span<'_>>> = BTreeMap::new();
    groups.entry(None).or_default().push((
        footer.manifest_offset,
        footer.manifest_length,
        "the manifest",
        "",
    ));
    for o in &m.objects {
        for p in &o.parts {
            if p.blob.length > 0 {
                groups.entry(p.blob.shard.as_deref()).or_default().push((
                    p.blob.offset,
                    p.blob.length,
                    &o.name,
                    &p.name,
                ));
            }
        }
    }
    for (shard, mut spans) in groups {
        spans.sort_unstable_by_key(|s| (s.0, s.1));
        spans.dedup_by_key(|s| (s.0, s.1));
        for w in spans.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            // Bounds were checked before, so offset + length cannot overflow.
            if b.0 < a.0 + a.1 {
                let name = |s: &Span<'_>| {
                    if s.3.is_empty() {
                        s.2.to_string()
                    } else {
                        format!("{:?}/{:?}", s.2, s.3)
                    }
                };
                let file = shard.map_or("this file".to_string(), |s| format!("shard {s:?}"));
                return Err(Error::reject(
                    Rule::BlobOverlap,
                    format!(
                        "blob [{}, +{}) of {} partially overlaps blob [{}, +{}) of {} in {file}",
                        b.0,
                        b.1,
                        name(b),
                        a.0,
                        a.1,
                        name(a)
                    ),
                ));
            }
        }
    }
    Ok(())
}
