//! Every corpus case: one file per property, named for it.
//!
//! A reject case breaks exactly one rule. Where that is impossible (a
//! manifest length over 1 GiB in a small file is also out of bounds) the
//! comment says which rules break and why the check order (implementer notes
//! §1) makes the expected one come first.
//!
//! Most cases are one edit away from the same small file: one dense u8
//! object `w` of shape `[16]` whose blob is `[4096, 16]`, and the manifest
//! at 8192. The helpers below make that edit in one line.

mod blobs;
mod cbor;
mod container;
mod encodings;
mod gguf;
mod layout;
mod names;
mod quant;
mod schema;
mod shards;
mod sparse;
mod types;

use super::builder::{dense, part, root, BlobRef, CborItem, Fields, FileBuilder, Footer};
use super::{Case, Dir, Outcome};

/// Every case, in no particular order.
pub fn all() -> Vec<Case> {
    [
        container::cases(),
        cbor::cases(),
        schema::cases(),
        names::cases(),
        blobs::cases(),
        shards::cases(),
        types::cases(),
        encodings::cases(),
        sparse::cases(),
        quant::cases(),
        gguf::cases(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The data of the usual object `w`.
const DATA: &[u8] = b"0123456789abcdef";
/// Where the usual object's blob lands.
const W_BLOB: BlobRef = BlobRef {
    offset: 4096,
    length: 16,
};

/// A case that opens and verifies.
fn valid(name: &'static str, bytes: Vec<u8>) -> Case {
    valid_then(name, Outcome::Valid, bytes)
}

/// A case that opens, with `verify` the outcome of `check --verify`.
fn valid_then(name: &'static str, verify: Outcome, bytes: Vec<u8>) -> Case {
    Case {
        name,
        dir: Dir::Valid,
        bytes,
        open: Outcome::Valid,
        verify,
    }
}

/// A case rejected at open under `rule`.
fn reject(name: &'static str, rule: &'static str, bytes: Vec<u8>) -> Case {
    Case {
        name,
        dir: Dir::Reject,
        bytes,
        open: Outcome::Reject(rule),
        verify: Outcome::Reject(rule),
    }
}

/// A file with `blobs` at successive 4096-aligned offsets, then the
/// manifest `make` builds from their references.
fn file(blobs: &[&[u8]], make: impl FnOnce(&[BlobRef]) -> CborItem) -> Vec<u8> {
    let mut f = FileBuilder::new();
    let refs: Vec<BlobRef> = blobs.iter().map(|b| f.blob(b)).collect();
    f.finish(&make(&refs).encode())
}

/// The usual object: dense u8 `[16]` over `blob`.
fn w_object(blob: BlobRef) -> Fields {
    dense(&[16], part("u8", blob))
}

/// The usual root: `{"objects": {"w": ...}}`.
fn w_root() -> Fields {
    root(Fields::new().set("w", w_object(W_BLOB)))
}

/// The usual file with its root edited; `edit` chooses the key order.
fn with_root(edit: impl FnOnce(Fields) -> CborItem) -> Vec<u8> {
    file(&[DATA], |_| edit(w_root()))
}

/// The usual file with object `w` edited.
fn with_object(edit: impl FnOnce(Fields) -> Fields) -> Vec<u8> {
    let object = edit(w_object(W_BLOB));
    with_root(|r| r.set("objects", Fields::new().set("w", object)).sorted())
}

/// The usual file with part `w`/`data` edited.
fn with_part(edit: impl FnOnce(Fields) -> Fields) -> Vec<u8> {
    let data = edit(part("u8", W_BLOB));
    with_object(|o| o.set("parts", Fields::new().set("data", data)))
}

/// The usual file with root attributes `{"x": value}`. `"attributes"` sorts
/// after `"objects"`, so `value` is the last item of the manifest.
fn with_attr(value: CborItem) -> Vec<u8> {
    with_root(|r| r.set("attributes", Fields::new().set("x", value)).sorted())
}

/// The usual file with its encoded manifest edited (the footer hashes the
/// edited bytes).
fn with_manifest(edit: impl FnOnce(Vec<u8>) -> Vec<u8>) -> Vec<u8> {
    let mut f = FileBuilder::new();
    f.blob(DATA);
    f.finish(&edit(w_root().sorted().encode()))
}

/// The usual file with its footer edited.
fn with_footer(edit: impl FnOnce(&mut Footer)) -> Vec<u8> {
    let mut f = FileBuilder::new();
    f.blob(DATA);
    f.finish_with(&w_root().sorted().encode(), edit)
}

/// An object under the unknown layout `acme.thing/1`, which a reader must
/// expose structurally and not interpret: no part-name or size rules.
fn structural(shape: &[u64], parts: Fields) -> Fields {
    super::builder::object(shape, "acme.thing/1", parts)
}

/// Bytes spliced into a manifest as they are.
fn raw(bytes: &[u8]) -> CborItem {
    CborItem::Raw(bytes.to_vec())
}
