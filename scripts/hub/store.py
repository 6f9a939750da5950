"""The Hub emulator's repositories on disk (scripts/hub/emulator.py reads
them on every request, so a test changes them while it runs):

    DIR/{models,datasets,spaces}/ORG/NAME/commits/SHA/...   a commit: the repository's files
    DIR/{type}/ORG/NAME/refs/REF                             a branch or tag: the commit's sha
                                                             (REF percent-encoded, '/' as %2F)
    DIR/{type}/ORG/NAME/private | gated                      markers: the repository needs the token

    python scripts/hub/store.py add DIR models org/name SRC_FOLDER [--ref main ...]   # prints the sha
    python scripts/hub/store.py move DIR models org/name REF SHA

A commit's sha is a sha1 over main's sha before it (none for the first) and
every file's path and content, sorted: the same folders added in the same
order give the same shas, and re-adding a folder on top of itself gives a
new commit (an empty one, as `git commit --allow-empty` makes).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import urllib.parse

KINDS = ("models", "datasets", "spaces")


def repo_dir(repos: str, kind: str, repo: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is none of {KINDS}")
    return os.path.join(repos, kind, *repo.split("/"))


def files_of(folder: str) -> list[str]:
    """The folder's files, `/`-separated paths, sorted."""
    out = []
    for top, dirs, names in os.walk(folder):
        dirs.sort()
        for n in names:
            out.append(os.path.relpath(os.path.join(top, n), folder).replace(os.sep, "/"))
    return sorted(out)


def commit_sha(folder: str, parent: str = "") -> str:
    """A commit's id: sha1 over the parent's id and every path and content."""
    h = hashlib.sha1(parent.encode())
    for path in files_of(folder):
        h.update(path.encode() + b"\0")
        with open(os.path.join(folder, path), "rb") as f:
            h.update(hashlib.sha1(f.read()).digest())
    return h.hexdigest()


def ref_file(repos: str, kind: str, repo: str, ref: str) -> str:
    return os.path.join(repo_dir(repos, kind, repo), "refs", urllib.parse.quote(ref, safe=""))


def move_ref(repos_dir: str, repo_type: str, repo_id: str, ref: str, sha: str) -> None:
    """Points branch or tag `ref` at commit `sha` (atomically: a reader sees
    the old sha or the new one)."""
    path = ref_file(repos_dir, repo_type, repo_id, ref)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(sha + "\n")
    os.replace(tmp, path)


def add_commit(repos_dir: str, repo_type: str, repo_id: str, src_folder: str, refs=("main",)) -> str:
    """Copies `src_folder` in as a new commit and points `refs` at it; its sha."""
    d = repo_dir(repos_dir, repo_type, repo_id)
    parent = ""
    main = ref_file(repos_dir, repo_type, repo_id, "main")
    if os.path.exists(main):
        with open(main) as f:
            parent = f.read().strip()
    sha = commit_sha(src_folder, parent)
    dest = os.path.join(d, "commits", sha)
    if not os.path.isdir(dest):
        tmp = dest + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src_folder, tmp)
        os.replace(tmp, dest)
    for ref in refs:
        move_ref(repos_dir, repo_type, repo_id, ref, sha)
    return sha


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("add")
    a.add_argument("repos")
    a.add_argument("kind", choices=KINDS)
    a.add_argument("repo")
    a.add_argument("src")
    a.add_argument("--ref", action="append", default=None)
    m = sub.add_parser("move")
    m.add_argument("repos")
    m.add_argument("kind", choices=KINDS)
    m.add_argument("repo")
    m.add_argument("ref")
    m.add_argument("sha")
    args = p.parse_args()
    if args.cmd == "add":
        print(add_commit(args.repos, args.kind, args.repo, args.src, tuple(args.ref or ["main"])))
    else:
        move_ref(args.repos, args.kind, args.repo, args.ref, args.sha)


if __name__ == "__main__":
    main()
