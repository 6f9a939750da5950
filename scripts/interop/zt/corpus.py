"""Reverse direction: the corpus through the package.

Every corpus file is probed with the package and compared with what
corpus/expected.tsv says ztfs does; a disagreement fails unless an
allowlist entry (zt/known.py) covers it. Where both read a part, ztfs's bytes
and content digest are compared with the package's.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import re
from typing import Optional

from ..content import content_digests, content_value
from ..facts import Facts, corpus_facts
from .known import KNOWN_DIFFERENCES
from ..package import Kind, Probe, probe
from ..results import Results, short
from ..ztfs import Ztfs, cmd_desc, stderr_rule


def norm_expect(s: str) -> str:
    """'valid' | 'refused' | 'n/a' | a rule name."""
    t = (s or "").strip()
    low = t.lower()
    if low in ("valid", "ok", "pass", "passes", "accept", "accepted", "open", "opens", "yes"):
        return "valid"
    if low in ("refused", "refuse", "unsupported", "refusal"):
        return "refused"
    if low in ("", "-", "n/a", "na", "none", "skip"):
        return "n/a"
    m = re.match(r"(?:reject(?:ed)?[ :(]*)?([A-Za-z]+)\)?$", t)
    return m.group(1) if m else t


@dataclasses.dataclass
class Row:
    name: str
    dir: str
    open: str
    verify: str


def read_expected(corpus: str) -> dict:
    """'dir/name' -> Row, from corpus/expected.tsv: a header line, then
    name, dir, open, verify; an outcome is valid, refused or reject:<Rule>.
    For samples the name is a path below samples/."""
    path = os.path.join(corpus, "expected.tsv")
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if i == 0 and cols[0].strip().lower() == "name":
                continue
            cols += [""] * (4 - len(cols))
            name, d = cols[0].strip(), cols[1].strip().strip("/")
            if name.endswith(".hrry"):
                continue  # the Hurray corpus: hurray/check.py reads it
            if name.endswith(".safetensors") or d.split("/")[0] == "safetensors":
                continue  # the safetensors corpus (sharded checkpoints' indexes too): safetensors/check.py reads it
            if name.endswith(".gguf"):
                continue  # the GGUF corpus: gguf/check.py reads it
            stem = name[:-3] if name.endswith(".zt") else name
            rows[f"{d}/{stem}"] = Row(stem, d, norm_expect(cols[2]), norm_expect(cols[3]))
    return rows


def corpus_files(corpus: str) -> list[tuple[str, str]]:
    """('dir/name' without .zt, path) for every file under the corpus but
    the table (a shard of a family may have any name, e.g. weights.bin)."""
    out = []
    for path in sorted(glob.glob(os.path.join(corpus, "**", "*"), recursive=True)):
        rel = os.path.relpath(path, corpus).replace(os.sep, "/")
        # Hurray files (corpus/hurray/, samples/*.hrry): hurray/check.py reads them.
        hurray = rel.startswith("hurray/") or rel.endswith(".hrry")
        # safetensors files (corpus/safetensors/): safetensors/check.py reads them.
        st = rel.startswith("safetensors/")
        # GGUF files (corpus/gguf/): gguf/check.py reads them.
        gguf = rel.startswith("gguf/")
        if not os.path.isfile(path) or rel == "expected.tsv" or hurray or st or gguf:
            continue
        out.append((rel[:-3] if rel.endswith(".zt") else rel, path))
    return out


def is_rule(s: str) -> bool:
    return s not in ("valid", "refused", "n/a")


def check_corpus(corpus: str, z: Optional[Ztfs], res: Results) -> None:
    rows = read_expected(corpus)
    files = corpus_files(corpus)
    if not files:
        res.fail("corpus", f"no .zt files under {corpus}")
        return
    if not rows:
        res.fail("corpus", f"{corpus}/expected.tsv is missing or empty")
    seen_rows = set()
    table = []  # (name, expected, package, verdict)

    def disagree(comparison: str, where: str, facts: Facts, rule: str, detail: str,
                 error: Optional[Kind] = None) -> str:
        """Records a disagreement; returns the table verdict."""
        facts.package_error = error
        for k in KNOWN_DIFFERENCES:
            if k.covers(comparison, facts, rule):
                k.used.append(where)
                res.note(f"disagreement (known: {k.key}) {where}: {comparison}: {detail}")
                res.ok()
                return f"known: {k.key}"
        res.fail(where, f"disagreement {comparison}: {detail}")
        return "DISAGREE"

    for key, path in files:
        top = key.split("/")[0]
        stem = key.split("/", 1)[-1]
        row = rows.get(key)
        rel = key + ".zt"
        if row is not None:
            seen_rows.add(key)
            exp_open, exp_verify = row.open, row.verify
        elif top in ("valid", "samples"):
            exp_open, exp_verify = "valid", "n/a"
            res.note(f"note {rel}: no row in expected.tsv; taken as valid to open")
        else:
            res.note(f"note {rel}: no row in expected.tsv; probed for information only")
            exp_open, exp_verify = "n/a", "n/a"
        facts = corpus_facts(path, stem)
        pr = probe(path)

        # Where the package stops, as one cell.
        def said(k: Kind) -> str:
            return k.message if k.kind in ("rejected", "refused") else f"{k.kind}: {k.message}"

        if not pr.opened:
            pcell = f"open: {said(pr.open_err)}"
        elif any(k.kind == "rejected" for k in pr.read_errs.values()):
            (o, p), k = next((pk, k) for pk, k in pr.read_errs.items() if k.kind == "rejected")
            pcell = f"read {o!r}/{p!r}: {said(k)}"
        elif pr.verify_err is not None:
            pcell = f"verify: {said(pr.verify_err)}"
        else:
            pcell = f"accepts: {len(pr.names)} objects, {len(pr.parts)} parts read" + (
                f", {len(pr.read_errs)} refused" if pr.read_errs else "") + (
                f", verify {pr.verify[0]} checked/{pr.verify[1]} undigested" if pr.verify else "")
        refusals = [f"{o!r}/{p!r}: {k.message}" for (o, p), k in pr.read_errs.items()
                    if k.kind != "rejected"]

        if exp_open == "valid":
            if not pr.opened:
                verdict = disagree("open-refuses-valid", rel, facts, "valid",
                                   f"the package will not open it: {pr.open_err.message}",
                                   pr.open_err)
            else:
                res.ok()
                verdict = "agree"
                rejected_reads = {pk: k for pk, k in pr.read_errs.items() if k.kind == "rejected"}
                if exp_verify == "valid":
                    for (o, p), k in pr.read_errs.items():
                        verdict = disagree("read-fails-valid", rel, facts, "valid",
                                           f"package read of {o!r}/{p!r} fails: {k.message}", k)
                    if pr.verify_err is not None:
                        verdict = disagree("verify-rejects-valid", rel, facts, "valid",
                                           f"package verify fails: {pr.verify_err.message}",
                                           pr.verify_err)
                elif is_rule(exp_verify):
                    if pr.verify_err is None and not rejected_reads:
                        verdict = disagree("verify-accepts-reject", rel, facts, exp_verify,
                                           f"ztfs verify rejects ({exp_verify}); package "
                                           "verify passes")
                    else:
                        k = pr.verify_err or next(iter(rejected_reads.values()))
                        if k.rule != exp_verify:
                            res.note(f"note {rel}: verify rule: ztfs {exp_verify}, package "
                                     f"{k.rule or k.kind} ({k.message})")
                        res.ok()
                elif exp_verify == "refused":
                    if pr.verify_err is None and not pr.read_errs:
                        verdict = disagree("verify-accepts-refused", rel, facts, exp_verify,
                                           "ztfs refuses at verify; the package verifies and "
                                           "reads it")
                    else:
                        res.ok()
                if z is not None:
                    compare_with_ztfs(path, rel, pr, facts, z, res)
        elif is_rule(exp_open) or exp_open == "refused":
            accepted = pr.opened and not pr.read_errs and pr.verify_err is None
            if accepted:
                verdict = disagree("accepts-reject", rel, facts, exp_open,
                                   f"ztfs expects {exp_open}; the package opens, reads and "
                                   "verifies it")
                if verdict == "DISAGREE":
                    verdict = "PACKAGE ACCEPTS"
            else:
                res.ok()
                if not pr.opened and pr.open_err.rule == exp_open:
                    verdict = "same rule"
                elif not pr.opened:
                    verdict = "rejects (other)" if pr.open_err.kind == "rejected" else "refuses"
                else:
                    verdict = "rejects later"
        else:
            verdict = "info"

        table.append((rel, f"{exp_open}/{exp_verify}", pcell, verdict, refusals))

    missing_rows = [k for k in rows if k not in seen_rows]
    if missing_rows:
        res.fail("corpus", f"{len(missing_rows)} expected.tsv rows name no file, e.g. "
                           f"{missing_rows[:5]}")

    # The table.
    print("\ncorpus through the package (expected open/verify | package | verdict):")
    w = max(len(r[0]) for r in table)
    for rel, exp, pcell, verdict, refusals in table:
        print(f"  {rel:<{w}}  {exp:<34}  {verdict:<30}  {pcell[:150]}")
        for r in refusals[:3]:
            print(f"  {'':<{w}}  {'':<34}  {'':<30}  refused read {r[:140]}")
    print(flush=True)


def compare_with_ztfs(path: str, rel: str, pr: Probe, facts: Facts, z: Ztfs, res: Results):
    """Where both read a part, the bytes must agree. Where ztfs will not
    decode a part the package reads (a refusal, or a content rule it applies
    when decoding), that is noted, and `cat --raw` must still give the
    package's bytes for an unencoded part."""
    rc, out, err = z.run("ls", [path], ("--json",))
    if rc == 0:
        try:
            names = [o["name"] for o in json.loads(out)["objects"]]
            res.check(sorted(names) == sorted(pr.names), rel,
                      f"ztfs ls and the package list different names: "
                      f"{sorted(set(names) ^ set(pr.names))[:5]!r}")
        except (ValueError, KeyError, TypeError) as e:
            res.fail(rel, f"ztfs ls --json output unreadable: {e}")
    else:
        res.note(f"note {rel}: `ztfs ls --json` exited {rc}: {short(err)}")
    declined: dict = {}  # what ztfs said -> parts
    for (o, p), data in pr.parts.items():
        rc, out, err = z.run("cat", [path, o, p])
        if rc == 0:
            res.check(out == data, rel, f"`{cmd_desc('cat', path, o, p)}`: {len(out)} bytes "
                                        f"differ from the package's {len(data)} bytes")
            continue
        said = stderr_rule(err)
        said = f"rejected ({said})" if said else ("refused" if b"refused" in err else f"exit {rc}")
        declined.setdefault(said, []).append(f"{o!r}/{p!r}")
        if (o, p) not in facts.encoded_parts:
            # A shard that fails its whole-file digest is not the declared
            # file, and ztfs serves none of its bytes, raw or not, unless the
            # user vouches for it (the package reads it: it never hashes a
            # shard outside deep verify).
            trust = ("--trust-shards",) if said == "rejected (ShardIdentity)" else ()
            rc2, raw, err2 = z.run("cat", [path, o, p], ("--raw",) + trust)
            res.check(rc2 == 0 and raw == data, rel,
                      f"`{cmd_desc('cat', '--raw', path, o, p)}` exits {rc2} with {len(raw)} "
                      f"bytes; the package reads {len(data)} bytes: {short(err2)}")
    for said, parts in sorted(declined.items()):
        res.note(f"note {rel}: ztfs cat {said} for {len(parts)} part(s) the package reads, e.g. "
                 f"{parts[0][:80]}")

    # The content digest, where the package read and verified everything.
    if pr.read_errs or pr.verify is None or not isinstance(facts.manifest, dict):
        return
    if pr.verify[1] > 0:
        rc, out, err = z.run("digest", [path])
        res.check(rc == 1, rel, f"`ztfs digest` must exit 1 when a part has no digest "
                                f"({pr.verify[1]} have none); exit {rc}: {short(out or err)}")
        return
    value = content_value(pr.objs, facts.manifest, res, rel)
    if value is None:
        return
    expected = content_digests(value)
    for algo in ("sha256", "xxh3"):
        rc, out, err = z.run("digest", [path], ("--algo", algo))
        res.check(rc == 0 and out == (expected[algo] + "\n").encode(), rel,
                  f"`ztfs digest --algo {algo}` printed {short(out)!r} (exit {rc}, {short(err)}); "
                  f"from the package's view it is {expected[algo]}")
