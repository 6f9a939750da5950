"""`ztfs pack` of every valid corpus file (safetensors, GGUF, zTensor,
samples) that `ztfs check` accepts, against the ztensor package.

Each packed file passes the package's deep verify and `ztfs check
--verify`; its content digest (`ztfs digest`) is the one computed here;
every tensor, read back through the package, is the source's as its own
reference reader gives it (raw safetensors ranges and safe_open, gguf-py's
GGUFReader, the package for .zt); where `ztensor.convert` also converts
the file, both outputs are byte-identical. Refusals are expected only as
REFUSED lists them; convert's refusals only as CONVERT_REFUSES lists them.
"""

from __future__ import annotations

import glob
import os

import ztensor

from ..container import read_raw
from ..content import same_value
from .common import (check_packed, diff_tensors, first_diff, gguf_tensors, one_part, pack,
                          st_tensors, zt_objects, ztfs_digest)
from ..results import Results, short
from ..ztfs import Ztfs

_DAMAGED = "the source breaks a content rule that a pack checks as it reads (convert copies it)"
_DIGEST = ("the part's bytes do not match its digest: pack refuses to copy a corrupt part "
           "(convert re-hashes the wrong bytes and writes a digest that verifies)")
_ENCODING = "the zstd-seekable part is broken (§5.3): it cannot be decoded faithfully"
_NO_SHARD = "a data shard of this model is not in the corpus, so its parts cannot be read"
_EMPTY_NAME = "zTensor object names are 1 to 1024 bytes (§3.5): a tensor named \"\" cannot be written"
# File -> (why ztfs pack refuses it, text its message must hold).
REFUSED = {
    "bool-byte-2.safetensors": (_DAMAGED + ": a bool byte 2 (Appendix A)", "rejected (LayoutData)"),
    "bool-invalid-byte.zt": (_DAMAGED + ": a bool byte 2 (Appendix A)", "rejected (LayoutData)"),
    "f4-packed-odd-count.zt": (_DAMAGED + ": a non-zero final f4 nibble (Appendix A)",
                               "rejected (LayoutData)"),
    "f6-types.safetensors": ("f6_e2m3fn and f6_e3m2fn have no registered zTensor type",
                             "which this reader does not know"),
    "unknown-ltype-structural.zt": ("an unregistered logical type cannot be decoded",
                                    "which this reader does not know"),
    "view-unknown-encoding-refused.zt": ("an unregistered encoding cannot be decoded",
                                         "which this reader does not know"),
    "digest-unknown-algorithm.zt": ("the part's digest is of an algorithm ztfs does not know "
                                    "(blake3), so its bytes cannot be confirmed",
                                    "is not one this reader knows"),
    "name-empty.safetensors": (_EMPTY_NAME, "empty object name"),
    "name-empty.gguf": (_EMPTY_NAME, "empty object name"),
    "data-shard.zt": ("a data shard has no objects to pack", "a data shard has no objects"),
    "minimal-data-shard.zt": ("a data shard has no objects to pack", "a data shard has no objects"),
    "digest-mismatch-sha256.zt": (_DIGEST, "rejected (Digest)"),
    "digest-mismatch-xxh3.zt": (_DIGEST, "rejected (Digest)"),
    "digest-short-hex.zt": (_DIGEST, "rejected (Digest)"),
    "zstd-digest-over-stored-bytes.zt": (_DIGEST, "rejected (Digest)"),
    "blob-same-offset-two-shards.zt": (_NO_SHARD, "is unavailable"),
    "local-and-foreign-parts-together.zt": (_NO_SHARD, "is unavailable"),
    "shard-blob-at-declared-end.zt": (_NO_SHARD, "is unavailable"),
    "shard-names-allowed.zt": (_NO_SHARD, "is unavailable"),
}
for _n in ("zstd-corrupt-frame", "zstd-seek-table-sum-mismatch",
           "zstd-seekable-checksum-column-wrong", "zstd-seekable-compressed-sizes-short",
           "zstd-seekable-descriptor-bit2", "zstd-seekable-descriptor-bit6",
           "zstd-seekable-entry-two-frames", "zstd-seekable-frame-longer-than-entry",
           "zstd-seekable-frame-over-16mib", "zstd-seekable-frame-shorter-than-entry",
           "zstd-seekable-frame-without-checksum", "zstd-seekable-unequal-frames"):
    REFUSED[_n + ".zt"] = (_ENCODING, "rejected (Encoding)")
for _n in ("coo-coord-out-of-range", "coo-duplicate-cell", "csr-index-out-of-range",
           "csr-indices-duplicate-in-row", "csr-indices-unsorted-in-row", "csr-indptr-decreasing",
           "csr-indptr-first-nonzero", "csr-indptr-last-below-nnz", "csr-indptr-last-past-nnz"):
    REFUSED[_n + ".zt"] = (_DAMAGED + ": sparse index data out of its rules (§5)",
                           "rejected (LayoutData)")

# Files ztfs packs that ztensor.convert refuses, and why (its message holds the text).
_NFC = ("canonical form requires NFC names (§6.3 rule 5); pack writes names as the source "
        "has them, and says the output is canonical only by its options")
CONVERT_REFUSES = {
    "basic.gguf": ("the package has no projection for a GGUF type ztfs maps (id 35)",
                   "has no registered projection"),
    "decision-null-metadata.safetensors": ("\"__metadata__\": null, which ztfs takes as none "
                                           "(docs/safetensors.md, decisions)",
                                           "__metadata__ must be an object"),
    "every-dtype.safetensors": ("the package has no projection for C64 (ztfs: f32 complex64)",
                                "has no registered projection"),
    "name-non-nfc.zt": (_NFC, "NFC"),
    "names-hostile.zt": (_NFC, "NFC"),
    "zstd-seekable-descriptor-bit0.zt": ("the package rejects the seek table's unused bits 0-1 "
                                         "(zt/known.py)", "reserved descriptor bits"),
    "zstd-seekable-descriptor-bit1.zt": ("the same, bit 1", "reserved descriptor bits"),
    "shard-size-48.zt": ("the package cannot find the 48-byte shard", "No such file"),
    "tiny-llama.hrry": ("the package does not read Hurray files", "cannot detect the format"),
}


def corpus_files(corpus: str) -> list[str]:
    pats = ("safetensors/valid/*.safetensors", "gguf/valid/*.gguf", "valid/*.zt", "samples/*.zt",
            "samples/*.hrry", "samples/sharded/model.zt")
    return [p for pat in pats for p in sorted(glob.glob(os.path.join(corpus, pat)))]


def check_one(z: Ztfs, res: Results, src: str, tmp: str) -> str:
    """Packs one corpus file and checks it; returns a one-word outcome."""
    name = os.path.basename(src)
    where = f"pack {os.path.relpath(src, os.path.dirname(os.path.dirname(src)))}"
    rc, _, err = z.run("check", [src])
    if rc != 0:
        return "unchecked"
    out = os.path.join(tmp, name + ".pack.zt")
    rc, _, err = pack(z, src, out)
    if rc != 0:
        why = REFUSED.get(name)
        res.check(why is not None and why[1] in err.decode("utf-8", "replace"), where,
                  f"`ztfs pack` exited {rc}: {short(err)}"
                  + ("" if why is None else f" (listed, but expected {why[1]!r})"))
        res.check(not os.path.exists(out), where, "a refused pack left a file at the output")
        return "refused"
    res.check(name not in REFUSED, where, f"packs, but REFUSED lists it: {REFUSED.get(name)}")
    value = check_packed(z, res, where, out)
    with ztensor.open(out) as o:
        attrs = o.attributes
    check_source(z, res, where, src, out, attrs)
    if value is not None and src.endswith(".zt"):
        check_same_content(z, res, where, src, out)
    check_convert(z, res, where, src, out, name)
    return "packed"


def check_source(z: Ztfs, res: Results, where: str, src: str, out: str, attrs) -> None:
    objs = zt_objects(out)
    if src.endswith(".safetensors"):
        want, meta = st_tensors(src)
        problems = diff_tensors(want, one_part(objs))
        res.check(same_value(attrs, meta), where,
                  f"file attributes {attrs!r}, __metadata__ {meta!r}")
    elif src.endswith(".gguf"):
        from .gguf import attr_diff, reader_kvs

        problems = diff_tensors(gguf_tensors(src), one_part(objs))
        kvs = reader_kvs(src)
        d = attr_diff(kvs, attrs, "pack") if kvs or attrs is not None else []
        res.check(not d, where, "file attributes differ from GGUFReader's KVs: " + "; ".join(d[:4]))
    else:
        try:
            want = zt_objects(src)
            with ztensor.open(src) as s:
                res.check(same_value(attrs, s.attributes), where,
                          f"file attributes {attrs!r}, the source's {s.attributes!r}")
        except Exception as e:  # noqa: BLE001 - the package refuses the source
            res.note(f"note {where}: the package cannot read the source ({e}); "
                     "the output is compared with `ztfs cat` of it")
            want = {}
            for name, o in objs.items():
                for pn, p in o.parts.items():
                    rc, data, err = z.run("cat", [src, name, pn])
                    res.check(rc == 0 and data == p.data, where,
                              f"{name!r}/{pn!r}: `ztfs cat` of the source exited {rc} or "
                              f"differs at {first_diff(data, p.data)}: {short(err)}")
            return
        problems = diff_tensors(want, objs)
    res.check(not problems, where, "the output read through the package is not the source: "
              + "; ".join(problems[:4]))


def check_same_content(z: Ztfs, res: Results, where: str, src: str, out: str) -> None:
    """A zTensor source whose parts all carry xxh3 digests has the output's
    content digest: a pack changes layout only."""
    m = read_raw(src).manifest
    digests = [p.get("digest", "") for o in m.get("objects", {}).values()
               for p in o.get("parts", {}).values()]
    if all(d.startswith("xxh3:") for d in digests):
        a, b = ztfs_digest(z, src)[0], ztfs_digest(z, out)[0]
        res.check(a is not None and a == b, where,
                  f"content digest {b} of the output, {a} of the source")


def check_convert(z: Ztfs, res: Results, where: str, src: str, out: str, name: str) -> None:
    conv = out[:-len(".pack.zt")] + ".convert.zt"
    try:
        ztensor.convert(src, conv)
    except Exception as e:  # noqa: BLE001 - a refusal is compared with the list
        why = CONVERT_REFUSES.get(name)
        res.check(why is not None and why[1] in str(e), where,
                  f"ztensor.convert raises {type(e).__name__}: {e}; ztfs packs it")
        if os.path.exists(conv):
            res.note(f"note {where}: ztensor.convert failed and left {os.path.getsize(conv)} "
                     "bytes at its destination (not atomic)")
        return
    res.check(name not in CONVERT_REFUSES, where, "ztensor.convert now converts it: "
              "drop it from CONVERT_REFUSES")
    with open(out, "rb") as f:
        a = f.read()
    with open(conv, "rb") as f:
        b = f.read()
    if not res.check(a == b, where, f"pack and convert differ: {len(a)} vs {len(b)} bytes, "
                     f"first difference at {first_diff(a, b)}; manifests: "
                     f"{manifest_diff(read_raw(out).manifest, read_raw(conv).manifest)}"):
        return
    da, db = ztfs_digest(z, out)[0], ztfs_digest(z, conv)[0]
    res.check(da is not None and da == db, where, f"content digests {da} (pack), {db} (convert)")


def manifest_diff(a, b, path: str = "") -> str:
    """The first place two decoded manifests differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{path or '/'}: keys {list(a)[:6]} vs {list(b)[:6]}"
        for k in a:
            if a[k] != b[k]:
                return manifest_diff(a[k], b[k], f"{path}/{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return manifest_diff(x, y, f"{path}[{i}]")
    return f"{path or '/'}: {a!r:.120} vs {b!r:.120}"


def run_corpus(corpus: str, z: Ztfs, res: Results, tmp: str) -> None:
    files = corpus_files(corpus)
    res.check(len(files) > 100, "pack corpus", f"only {len(files)} files under {corpus}")
    outcomes: dict = {}
    for src in files:
        try:
            o = check_one(z, res, src, tmp)
        except Exception as e:  # noqa: BLE001 - a harness error is a failure
            res.fail(f"pack {src}", f"harness error: {type(e).__name__}: {e}")
            o = "error"
        outcomes[o] = outcomes.get(o, 0) + 1
        outcomes.setdefault("_seen", set()).add(os.path.basename(src))
    seen = outcomes.pop("_seen", set())
    for name in sorted((set(REFUSED) | set(CONVERT_REFUSES)) - seen):
        res.fail("pack allowlist", f"{name} is listed but not in the corpus")
    print(f"ok   pack corpus: {len(files)} files: {outcomes}", flush=True)
