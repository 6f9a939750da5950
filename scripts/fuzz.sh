#!/usr/bin/env bash
# Fuzzes each target for SECONDS (all targets when none is named), on stable.
#
#   scripts/fuzz.sh SECONDS_PER_TARGET [TARGET ...]
#
# Exit 0 when no target found anything. On a finding the input is left in
# fuzz/artifacts/<target>/, printed, and the script exits 1 after running
# the remaining targets. Replay one with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run -s none -O -a TARGET fuzz/artifacts/TARGET/FILE
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -lt 1 || ! $1 =~ ^[0-9]+$ ]]; then
    echo "usage: scripts/fuzz.sh SECONDS_PER_TARGET [TARGET ...]" >&2
    exit 2
fi
seconds=$1
shift

command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

# cargo-fuzz passes nightly-only flags (-Z); RUSTC_BOOTSTRAP lets stable take
# them. No sanitizer (-s none): stable has none, and the panics, hangs and
# oversized allocations we look for need none (fuzz_targets/common caps
# single allocations itself). -O -a: optimised, but with debug assertions
# and overflow checks, which -O alone turns off.
export RUSTC_BOOTSTRAP=1
flags=(-s none -O -a)

targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || mapfile -t targets < <(cargo fuzz list)
cargo fuzz build "${flags[@]}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=()
for t in "${targets[@]}"; do
    echo "== fuzzing $t for ${seconds}s"
    # libFuzzer writes new inputs into the first corpus directory, so that is
    # a scratch one; the committed seeds come after it, read only.
    mkdir -p "$work/$t" "fuzz/artifacts/$t"
    touch "$work/$t.start"
    seeds=()
    [[ -d fuzz/corpus/$t ]] && seeds+=("fuzz/corpus/$t")
    # Whole files are what `container` and `tree_views` take: the golden
    # corpus seeds them.
    [[ $t == container || $t == tree_views ]] && seeds+=(corpus)
    [[ $t == safetensors ]] && seeds+=(corpus/safetensors)
    [[ $t == safetensors_index ]] && seeds+=(corpus/safetensors/sharded)
    [[ $t == gguf ]] && seeds+=(corpus/gguf/valid corpus/gguf/reject)
    # rss_limit bounds what stays resident; malloc_limit takes effect only
    # under a sanitizer (see fuzz_targets/common); timeout turns a hang into
    # a finding instead of a stall.
    # The output is kept so that a finding's cause can be printed again
    # at the end, where a CI log's tail shows it.
    if ! cargo fuzz run "${flags[@]}" "$t" "$work/$t" "${seeds[@]}" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=512 \
        -timeout=10 -print_final_stats=1 2>&1 | tee "$work/$t.log"; then
        failed+=("$t")
    fi
done

for t in "${failed[@]}"; do
    echo "== finding in $t: what it printed, without libFuzzer's progress lines"
    grep -v -E '^#[0-9]+|^"|Uses: [0-9]+' "$work/$t.log" | tail -n 40
    # Only what this run found, not older artifacts.
    find "fuzz/artifacts/$t" -type f -newer "$work/$t.start" | while read -r f; do
        echo "-- reproducer $f ($(stat -c %s "$f") bytes):"
        od -A d -t x1z -v "$f" | head -n 32
    done
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz.sh: findings in: ${failed[*]} (inputs under fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzz.sh: no findings in ${#targets[@]} targets"
