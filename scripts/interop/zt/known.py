"""The allowlist: known, documented differences between the package and ztfs.

Each entry (a `Known`) excuses one kind of disagreement in the corpus
comparison (zt/corpus.py), and only when a predicate over the file's `Facts`
(facts.py) holds. This module holds the entries and nothing else.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from ..facts import Facts


# Known differences between the package and ztfs (the allowlist).
#
# Each entry says which comparison it excuses and *when*: a predicate over
# facts this script reads from the file itself (layouts, encodings, shard
# table, zstd seek-table details), so an entry cannot excuse an unrelated
# disagreement. `names` may pin an entry to corpus names (stems) instead.
# Every entry cites the implementer notes. A disagreement that no entry
# covers fails the run; entries that excused nothing are listed at the end.
#
# Comparisons:
#   open-refuses-valid     corpus says the file opens; the package will not open it
#   read-fails-valid       corpus says valid to verify; the package will not read
#                          a part (rejects or refuses it)
#   verify-rejects-valid   corpus says valid to verify; package verify rejects it
#   accepts-reject         corpus says ztfs rejects it; the package opens, reads
#                          and verifies it without complaint
#   verify-accepts-reject  corpus says verify rejects it; package verify passes
#   verify-accepts-refused corpus says verify refuses it (unsupported); package
#                          verify passes


UNIMPLEMENTED_LAYOUT_PREFIXES = (
    "zt.sparse_coo/",
    "zt.quant_group/",
    "zt.mx/",
    "gguf.",
)


@dataclasses.dataclass
class Known:
    key: str
    applies: frozenset
    reason: str
    when: Optional[Callable[["Facts", str], bool]] = None
    names: tuple = ()
    used: list = dataclasses.field(default_factory=list)

    def covers(self, comparison: str, facts: "Facts", expected_rule: str) -> bool:
        if comparison not in self.applies:
            return False
        if self.names and facts.name not in self.names:
            return False
        if self.when is not None and not self.when(facts, expected_rule):
            return False
        return True


KNOWN_DIFFERENCES = [
    # Spec §5.1: a dense part's decoded size MUST equal the size function
    # of the element count. When count × width overflows u64 no size can
    # equal it; ztfs rejects with DenseSize, the package computes the
    # product with wrapping arithmetic and accepts the file.
    Known(
        key="dense-size-overflow",
        applies=frozenset({"accepts-reject", "verify-accepts-reject"}),
        reason="spec §5.1: element count × width overflows u64; the package "
        "wraps the product and accepts, ztfs rejects with DenseSize",
        names=("dense-size-overflow",),
    ),
    # Notes §1 "Data shards": the public implementation compares a shard's
    # whole-file digest only in deep verify (`zt verify --deep`); the Python
    # `verify()` is not deep, so it passes a root whose shard has the right
    # size but other bytes. `ztfs check --verify` checks shard digests
    # (spec §7.3 rung 3) and rejects it with ShardIdentity.
    Known(
        key="shallow-verify-shard-digest",
        applies=frozenset({"verify-accepts-reject"}),
        reason="notes §1 Data shards: the package's verify() does not check "
        "shard whole-file digests (only its deep verify does)",
        when=lambda f, rule: rule == "ShardIdentity" and f.has_shards,
    ),
    # Notes §1 "Data shards" and §4 item 10: the public implementation
    # resolves every shard eagerly when the root is opened and fails the whole
    # open if one is missing or is not the declared size (ShardIdentity). ztfs
    # validates the root alone and resolves shards lazily, so local parts stay
    # readable (corpus `local-and-foreign-parts-together`).
    Known(
        key="eager-shard-resolution",
        applies=frozenset({"open-refuses-valid"}),
        reason="notes §1 Data shards / §4.10: the package resolves every shard "
        "eagerly and fails the whole open; ztfs resolves lazily",
        when=lambda f, rule: f.has_shards and f.package_error is not None
        and (f.package_error.kind == "io" or f.package_error.rule == "ShardIdentity"),
    ),
    # Notes §1 "Layouts actually implemented": only `dense` and
    # `zt.sparse_csr/1`. zt.sparse_coo/1, zt.quant_group/1, zt.mx/1 and gguf.*
    # are treated as unknown layouts, i.e. structural with no checks, so the
    # package opens files whose metadata or data break those profiles.
    Known(
        key="unimplemented-layout",
        applies=frozenset({"accepts-reject", "verify-accepts-reject"}),
        reason="notes §1 Layouts actually implemented: the package treats "
        "zt.sparse_coo/1, zt.quant_group/1, zt.mx/1 and gguf.* as unknown "
        "layouts and checks none of their rules",
        when=lambda f, rule: rule in ("LayoutRule", "LayoutData")
        and any(l.startswith(UNIMPLEMENTED_LAYOUT_PREFIXES) for l in f.layouts),
    ),
    # Notes §1 "Layouts actually implemented" and §3.2: CSR data rules
    # (indptr monotone, indices sorted and in range) run only when a CSR
    # tensor is assembled (ztensor-compat::csr::read). The Python API exposes
    # a CSR object's parts and never assembles it.
    Known(
        key="csr-data-at-assembly",
        applies=frozenset({"accepts-reject", "verify-accepts-reject"}),
        reason="notes §1/§3.2: CSR data rules run only at assembly, which the "
        "Python API (parts only) never does",
        when=lambda f, rule: rule == "LayoutData"
        and "zt.sparse_csr/1" in f.layouts,
    ),
    # Notes §2 "zstd-seekable, frame checksums / frame shape": the package
    # reader accepts frames without a content checksum (the profile says
    # MUST), ignores the seek table's per-frame checksum column, accepts a
    # last frame larger than the others and one seek-table entry holding
    # several frames. ztfs follows the profile text.
    Known(
        key="zstd-lenient-reader",
        applies=frozenset({"accepts-reject", "verify-accepts-reject"}),
        reason="notes §2 zstd-seekable: the package accepts frames without "
        "checksum, ignores the seek-table checksum column, accepts a larger "
        "last frame and several frames per entry",
        when=lambda f, rule: rule == "Encoding"
        and bool(
            f.zstd_quirks
            & {
                "no-frame-checksum",
                "seek-checksum-column",
                "last-frame-larger",
                "multi-frame-entry",
            }
        ),
    ),
    # Notes §2 "zstd-seekable": the package rejects a seek-table descriptor
    # with any of bits 0..6 set, while the upstream seekable format only
    # reserves bits 2..6 (bits 0..1 are "unused, do not interpret").
    Known(
        key="zstd-descriptor-low-bits",
        applies=frozenset({"read-fails-valid", "verify-rejects-valid"}),
        reason="notes §2 zstd-seekable: the package rejects descriptor bits "
        "0..1, which the seekable format leaves unused",
        when=lambda f, rule: "descriptor-low-bits" in f.zstd_quirks,
    ),
    # Notes §1 "Unknown encoding": `zt verify` passes a part under an unknown
    # encoding when it has neither digest nor logical type, because verify
    # decodes only when it has something to check; a reader that refuses the
    # encoding at verify disagrees only in what "verify" covers.
    Known(
        key="verify-skips-unknown-encoding",
        applies=frozenset({"verify-accepts-refused"}),
        reason="notes §1 Unknown encoding: the package's verify does not "
        "decode a part with neither digest nor logical type",
        when=lambda f, rule: bool(f.unknown_encodings),
    ),
    # Notes §1 "Logical types": the package's tobytes() returns raw bytes
    # even for an unknown logical type (structural access), and its verify
    # checks only the content rules of types it knows.
    Known(
        key="structural-unknown-ltype",
        applies=frozenset({"verify-accepts-refused"}),
        reason="notes §1 Logical types: the package reads unknown logical "
        "types structurally and verifies only digests",
        when=lambda f, rule: bool(f.unknown_ltypes),
    ),
    # Notes §1 "Digest strings": an unknown algorithm opens fine and verify
    # reports Unsupported. A corpus that expects the digest to be refused
    # agrees; one that expects the file valid to verify (ztfs skipping the
    # unknown digest) disagrees only in how an unknown algorithm is counted.
    Known(
        key="unknown-digest-algorithm",
        applies=frozenset({"verify-rejects-valid", "verify-accepts-refused"}),
        reason="notes §1 Digest strings: the package reports an unknown "
        "digest algorithm as Unsupported at verify",
        when=lambda f, rule: bool(f.unknown_digest_algos),
    ),
]
