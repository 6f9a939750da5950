//! Shard families (§7, Appendix B): a root and its shard files in one
//! folder below `families/`, one folder per way a shard is found, or is not.
//!
//! A shard name is a label: the reader looks for `<stem>-<name>.zt` beside
//! the root, and when that fails, for a file in the root's folder with the
//! declared size and whole-file digest, whatever it is called. Sizes are
//! checked whenever a shard is opened, digests only under `--verify`
//! (notes §1 "Data shards", §4 item 10).
//!
//! Every file here opens, roots and shards alike: a shard that cannot be
//! found or is not the declared one leaves the root valid and its foreign
//! parts unavailable (a warning for `check`). Under `--verify` the reader
//! reports the first failure it meets: a shard whose digest differs is a
//! rejection (`ShardIdentity`); parts in a shard it could not resolve are
//! refused, since they cannot be verified. Resolution is relative to the
//! root's folder, never to the working directory.
//!
//! Files are small, blobs at 4096, every part and shard with a digest.

use super::builder::{
    dense, part, root, sha256_digest, xxh3_digest, BlobRef, Fields, FileBuilder, Footer, Lcg,
};
use super::{Case, Dir, Outcome};

/// Every file of every family.
pub fn all() -> Vec<Case> {
    [
        local_and_foreign(),
        renamed(),
        wrong_size(),
        wrong_digest(),
        missing(),
        overlay(),
        data_shard_and_full(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A family member that opens, with `verify` the outcome of `--verify`.
fn member(name: &'static str, verify: Outcome, bytes: Vec<u8>) -> Case {
    Case {
        name,
        dir: Dir::Families,
        bytes,
        open: Outcome::Valid,
        verify,
    }
}

/// A shard file: valid on its own, whatever the root thinks of it.
fn shard_file(name: &'static str, bytes: Vec<u8>) -> Case {
    member(name, Outcome::Valid, bytes)
}

/// `n` f32 values from `rng`, all finite (any bit pattern would do; these
/// read well in a dump).
fn f32s(rng: &mut Lcg, n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|_| ((rng.next_u32() % 2001) as f32 / 1000.0 - 1.0).to_le_bytes())
        .collect()
}

/// A dense f32 vector over `blob` holding `data`, with its digest.
fn vector(data: &[u8], blob: BlobRef) -> Fields {
    dense(
        &[data.len() as u64 / 4],
        part("f32", blob).set("digest", xxh3_digest(data)),
    )
}

/// The same in shard `shard`.
fn foreign(shard: &str, data: &[u8], blob: BlobRef) -> Fields {
    let p = part("f32", blob)
        .set("digest", xxh3_digest(data))
        .set("shard", shard);
    dense(&[data.len() as u64 / 4], p)
}

/// A shard-table entry for `bytes`: its size and its sha256, or its xxh3
/// when `xxh3` is set (the minimum the format allows).
fn identity(bytes: &[u8], xxh3: bool) -> Fields {
    let digest = if xxh3 {
        xxh3_digest(bytes)
    } else {
        sha256_digest(bytes)
    };
    Fields::new()
        .set("size", bytes.len() as u64)
        .set("digest", digest)
}

/// A data shard holding `blobs`, and where each landed.
fn data_shard(blobs: &[&[u8]]) -> (Vec<u8>, Vec<BlobRef>) {
    let mut f = FileBuilder::new();
    let refs = blobs.iter().map(|b| f.blob(b)).collect();
    (f.finish_footer(&Footer::data_shard()), refs)
}

/// A root with a local f32 vector `norm` (ones), the foreign `objects` and
/// the shard table `shards`.
fn root_with(objects: Fields, shards: Fields) -> Vec<u8> {
    let ones: Vec<u8> = [1.0f32; 16].iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut f = FileBuilder::new();
    let blob = f.blob(&ones);
    let manifest = root(objects.set("norm", vector(&ones, blob)))
        .set("shards", shards)
        .sorted()
        .encode();
    f.finish(&manifest)
}

/// Two data shards of equal size and different bytes, one blob each, and
/// the root that uses them as `00001` (xxh3 identity) and `00002` (sha256).
fn two_shard_model(seed: u64) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let mut rng = Lcg::new(seed);
    let (a, b) = (f32s(&mut rng, 64), f32s(&mut rng, 64));
    let (shard1, r1) = data_shard(&[&a]);
    let (shard2, r2) = data_shard(&[&b]);
    assert_eq!(shard1.len(), shard2.len());
    let objects = Fields::new()
        .set("layers.0.weight", foreign("00001", &a, r1[0]))
        .set("layers.1.weight", foreign("00002", &b, r2[0]));
    let shards = Fields::new()
        .set("00001", identity(&shard1, true))
        .set("00002", identity(&shard2, false));
    let model = root_with(objects, shards);
    assert_ne!(model.len(), shard1.len(), "a root the size of its shards");
    (model, shard1, shard2)
}

/// One local part, parts in two shards, both found positionally.
fn local_and_foreign() -> Vec<Case> {
    let (model, shard1, shard2) = two_shard_model(0xFA_0001);
    vec![
        member("local-and-foreign/model", Outcome::Valid, model),
        shard_file("local-and-foreign/model-00001", shard1),
        shard_file("local-and-foreign/model-00002", shard2),
    ]
}

/// The same model with its shards renamed: no `model-<name>.zt` exists, so
/// both are found by size and digest. They have equal sizes, so only the
/// digest tells them apart, and one of them does not end in `.zt`.
fn renamed() -> Vec<Case> {
    let (model, shard1, shard2) = two_shard_model(0xFA_0002);
    vec![
        member("renamed/model", Outcome::Valid, model),
        shard_file("renamed/a", shard1),
        shard_file("renamed/weights.bin", shard2),
    ]
}

/// A root whose one shard `00001` (described by `declared`) holds `data`
/// at `blob`.
fn one_shard_root(declared: &[u8], data: &[u8], blob: BlobRef) -> Vec<u8> {
    let objects = Fields::new().set("layers.0.weight", foreign("00001", data, blob));
    let model = root_with(
        objects,
        Fields::new().set("00001", identity(declared, false)),
    );
    assert_ne!(model.len(), declared.len(), "a root the size of its shard");
    model
}

/// `model-00001.zt` is a valid data shard with the blob the root reads at
/// the same place, but one blob longer than the declared file; nothing in
/// the folder has the declared size. `check` warns (ShardIdentity, the size)
/// and exits 0; `--verify` cannot reach the foreign part and refuses.
fn wrong_size() -> Vec<Case> {
    let mut rng = Lcg::new(0xFA_0003);
    let (a, extra) = (f32s(&mut rng, 64), f32s(&mut rng, 64));
    let (declared, r) = data_shard(&[&a]);
    let (on_disk, r2) = data_shard(&[&a, &extra]);
    assert_eq!(r[0], r2[0]);
    vec![
        member(
            "wrong-size/model",
            Outcome::Refused,
            one_shard_root(&declared, &a, r[0]),
        ),
        shard_file("wrong-size/model-00001", on_disk),
    ]
}

/// `model-00001.zt` has the declared size and is a valid container, but one
/// byte of a blob that no part references differs from the bytes the digest
/// was taken over: every part verifies, the whole-file digest does not.
fn wrong_digest() -> Vec<Case> {
    let mut rng = Lcg::new(0xFA_0004);
    let (a, spare) = (f32s(&mut rng, 64), rng.bytes(64));
    let (declared, r) = data_shard(&[&a, &spare]);
    let mut on_disk = declared.clone();
    on_disk[r[1].offset as usize] ^= 1;
    vec![
        member(
            "wrong-digest/model",
            Outcome::Reject("ShardIdentity"),
            one_shard_root(&declared, &a, r[0]),
        ),
        shard_file("wrong-digest/model-00001", on_disk),
    ]
}

/// A root whose shard is nowhere: it opens (with a warning), its local part
/// verifies, its foreign part is refused.
fn missing() -> Vec<Case> {
    let mut rng = Lcg::new(0xFA_0005);
    let a = f32s(&mut rng, 64);
    let (declared, r) = data_shard(&[&a]);
    vec![member(
        "missing/model",
        Outcome::Refused,
        one_shard_root(&declared, &a, r[0]),
    )]
}

/// An overlay (§7.2): `base` is a complete model with its own manifest and
/// digests; `overlay.zt` uses it as shard `base` for both of its tensors and
/// adds one local delta. In `overlay/` the base is `overlay-base.zt`, found
/// positionally; in `overlay-identity/` the same bytes are `base.zt`, found
/// by identity.
fn overlay() -> Vec<Case> {
    let mut rng = Lcg::new(0xFA_0006);
    let (embed, proj, delta) = (f32s(&mut rng, 128), f32s(&mut rng, 64), f32s(&mut rng, 64));
    let mut f = FileBuilder::new();
    let (e, p) = (f.blob(&embed), f.blob(&proj));
    let objects = Fields::new()
        .set(
            "embed.weight",
            dense(&[8, 16], part("f32", e).set("digest", xxh3_digest(&embed))),
        )
        .set(
            "proj.weight",
            dense(&[8, 8], part("f32", p).set("digest", xxh3_digest(&proj))),
        );
    let base = f.finish(
        &root(objects)
            .set("attributes", Fields::new().set("role", "base model"))
            .sorted()
            .encode(),
    );

    let from_base = |data: &[u8], blob: BlobRef, shape: &[u64]| {
        let p = part("f32", blob)
            .set("digest", xxh3_digest(data))
            .set("shard", "base");
        dense(shape, p)
    };
    let mut f = FileBuilder::new();
    let d = f.blob(&delta);
    let objects = Fields::new()
        .set("embed.weight", from_base(&embed, e, &[8, 16]))
        .set("proj.weight", from_base(&proj, p, &[8, 8]))
        .set(
            "proj.weight.delta",
            dense(&[8, 8], part("f32", d).set("digest", xxh3_digest(&delta))),
        );
    let overlay = f.finish(
        &root(objects)
            .set("shards", Fields::new().set("base", identity(&base, false)))
            .sorted()
            .encode(),
    );
    assert_ne!(overlay.len(), base.len(), "an overlay the size of its base");
    vec![
        member("overlay/overlay", Outcome::Valid, overlay.clone()),
        shard_file("overlay/overlay-base", base.clone()),
        member("overlay-identity/overlay", Outcome::Valid, overlay),
        shard_file("overlay-identity/base", base),
    ]
}

/// A data shard `00001` and a complete file `00002` with its own manifest,
/// of which the root uses one blob; the other object of `00002` is the
/// shard's own business.
fn data_shard_and_full() -> Vec<Case> {
    let mut rng = Lcg::new(0xFA_0007);
    let (a, head, own) = (f32s(&mut rng, 64), f32s(&mut rng, 64), f32s(&mut rng, 16));
    let (shard1, r1) = data_shard(&[&a]);
    let mut f = FileBuilder::new();
    let (h, o) = (f.blob(&head), f.blob(&own));
    let objects = Fields::new()
        .set("lm_head.weight", vector(&head, h))
        .set("only.in.shard", vector(&own, o));
    let shard2 = f.finish(&root(objects).sorted().encode());
    let objects = Fields::new()
        .set("layers.0.weight", foreign("00001", &a, r1[0]))
        .set("lm_head.weight", foreign("00002", &head, h));
    let shards = Fields::new()
        .set("00001", identity(&shard1, false))
        .set("00002", identity(&shard2, true));
    vec![
        member(
            "data-shard-and-full/model",
            Outcome::Valid,
            root_with(objects, shards),
        ),
        shard_file("data-shard-and-full/model-00001", shard1),
        shard_file("data-shard-and-full/model-00002", shard2),
    ]
}
