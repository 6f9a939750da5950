#!/usr/bin/env bash
# Regenerates corpus/ from tests/corpus: every case, every sample and
# corpus/expected.tsv, deleting files the generator no longer makes.
# Review the diff before committing it: the corpus is the reader's oracle.
set -euo pipefail
cd "$(dirname "$0")/.."
ZTFS_REGEN_CORPUS=1 cargo test --test corpus_test corpus_is_up_to_date "$@"
