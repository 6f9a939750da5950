//! What the targets share: an allocation cap, the validator's per-part
//! checks that profiles rely on, and the input format of the targets that
//! need decoded parts beside a manifest.
#![allow(dead_code)] // each target uses only some of it

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;

use ztfs::error::{Error, Result};
use ztfs::format::manifest::Object;
use ztfs::format::types::Interpretation;
use ztfs::format::MAX_RANK;

/// Largest single allocation a target may make, in bytes. Built without a
/// sanitizer, libFuzzer's `-malloc_limit_mb` sees no allocation (it needs a
/// sanitizer's malloc hooks) and `-rss_limit_mb` only notices what stays
/// resident, so an allocation sized by a number from the input is caught
/// here, at the request.
pub const MAX_ALLOC: usize = 256 << 20;

struct Capped;

fn check(size: usize) {
    if size > MAX_ALLOC {
        // No formatting: the allocator must not allocate.
        let _ = std::io::stderr().write_all(b"fuzz: one allocation above MAX_ALLOC (256 MiB)\n");
        std::process::abort(); // libFuzzer saves the input as a crash
    }
}

// SAFETY: forwards every call to `System` unchanged; only refuses sizes.
unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOC: Capped = Capped;

/// The per-object checks `validate` runs before the layout's metadata rules
/// and that the profiles rely on: rank at most 64, an element count that
/// fits u64, and every registered logical type on its required dtype. They
/// are private to `validate`, so restated here.
pub fn passes_part_checks(o: &Object) -> bool {
    o.shape.len() <= MAX_RANK
        && o.num_elements().is_some()
        && o.parts.iter().all(|p| match p.ty.interpretation() {
            Interpretation::Registered(t) => t.dtype() == p.ty.dtype,
            _ => true,
        })
}

/// Largest part handed to a decoder, in bytes.
pub const MAX_PART: u64 = 1 << 20;
/// Largest sum of an object's parts, in bytes; bigger objects are skipped.
pub const MAX_OBJECT: u64 = 4 << 20;
/// Objects looked at per input, so one input cannot take long.
pub const MAX_OBJECTS: usize = 16;

/// Input of the data targets: a little-endian u32 manifest length, the
/// manifest (deterministic CBOR), then the payload. Parts take the payload
/// in manifest order, object after object, each its decoded size; past the
/// payload's end they read zeros. So a seed is a manifest followed by its
/// decoded parts, and every part decodes to its declared size.
pub fn split(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(data.get(..4)?.try_into().ok()?) as usize;
    let rest = &data[4..];
    (len <= rest.len()).then(|| rest.split_at(len))
}

/// The objects small enough to decode, each with its parts' bytes.
pub fn objects_with_parts<'a>(objects: &'a [Object], payload: &[u8]) -> Vec<(&'a Object, Parts)> {
    let mut at = 0u64;
    let mut out = Vec::new();
    for o in objects.iter().take(MAX_OBJECTS) {
        let sizes: Vec<u64> = o.parts.iter().map(|p| p.decoded_size()).collect();
        let total = sizes.iter().try_fold(0u64, |a, &s| a.checked_add(s));
        let fits = total.is_some_and(|t| t <= MAX_OBJECT) && sizes.iter().all(|&s| s <= MAX_PART);
        if !fits {
            continue;
        }
        let mut parts = Vec::new();
        for (p, &size) in o.parts.iter().zip(&sizes) {
            let start = (at as usize).min(payload.len());
            let end = (at + size).min(payload.len() as u64) as usize;
            let mut bytes = payload[start..end].to_vec();
            bytes.resize(size as usize, 0);
            parts.push((p.name.to_string(), bytes));
            at += size;
        }
        out.push((o, Parts(parts)));
    }
    out
}

/// One object's decoded parts, by name.
pub struct Parts(Vec<(String, Vec<u8>)>);

impl Parts {
    /// The part function `ztfs::decode::views` takes.
    pub fn get(&self, name: &str) -> Result<Vec<u8>> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.clone())
            .ok_or_else(|| Error::NotFound(format!("fuzz: no part {name:?}")))
    }
}

/// The file with the footer hash set to the XXH3-64 of the range the footer
/// names, when that range is inside the file and differs from the stored hash.
pub fn with_matching_hash(file: &[u8]) -> Option<Vec<u8>> {
    let foot = file.len().checked_sub(40)?;
    let word = |at: usize| u64::from_le_bytes(file[foot + at..foot + at + 8].try_into().unwrap());
    let (off, len) = (
        usize::try_from(word(0)).ok()?,
        usize::try_from(word(8)).ok()?,
    );
    let end = off.checked_add(len).filter(|&e| e <= foot)?;
    let manifest = &file[off..end];
    let hash = xxhash_rust::xxh3::xxh3_64(manifest);
    if len == 0 || hash == word(16) {
        return None;
    }
    let mut out = file.to_vec();
    out[foot + 16..foot + 24].copy_from_slice(&hash.to_le_bytes());
    Some(out)
}
