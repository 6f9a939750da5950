#!/usr/bin/env bash
# Manifest validation speed: `ztfs check` on files of many small dense
# objects written by examples/gen_manifest.rs (almost all manifest).
#
#   scripts/bench-manifest.sh [N ...]        (default: 100000 1000000)
#
# RUNS (default 3) timed runs per size. Prints, per size, the manifest size,
# the median wall time, objects per second, peak RSS and RSS per manifest
# byte, the mount daemon's RSS per manifest byte once mounted and after an
# `ls -l` of the root (issue 22: under 2), then how the time grows from the
# smallest size to the largest (the same as the size ratio means linear). Peak RSS comes from /usr/bin/time -v
# when it is installed, else from wait4(2) through python3.
#
# Builds release binaries into $CARGO_TARGET_DIR (default /tmp/bench-target),
# writes the files to a temporary directory under $TMPDIR (about 150 bytes
# per object) and removes it on exit. A benchmark, not a test: exit 0
# whatever the figures, non-zero only if something failed to run or a
# generated file does not check as valid.
set -euo pipefail

cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/tmp/bench-target}"
runs="${RUNS:-3}"
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(100000 1000000)

cargo build --release --quiet --bin ztfs --example gen_manifest
ztfs="$CARGO_TARGET_DIR/release/ztfs"
gen="$CARGO_TARGET_DIR/release/examples/gen_manifest"

work="$(mktemp -d "${TMPDIR:-/tmp}/ztfs-bench-manifest.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# One run of `ztfs check FILE`: prints "SECONDS MAX_RSS_KIB".
measure() {
    local file="$1"
    if [[ -x /usr/bin/time ]]; then
        local t0 t1 rss
        t0=$(date +%s%N)
        /usr/bin/time -v -o "$work/time.txt" "$ztfs" check "$file" >/dev/null
        t1=$(date +%s%N)
        rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
        echo "$(((t1 - t0) / 1000)) $rss" | awk '{printf "%.6f %d\n", $1 / 1e6, $2}'
    else
        python3 - "$ztfs" "$file" <<'EOF'
import os, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.Popen([sys.argv[1], "check", sys.argv[2]], stdout=subprocess.DEVNULL)
_, status, ru = os.wait4(p.pid, 0)
t1 = time.perf_counter()
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(f"ztfs check {sys.argv[2]} failed")
print(f"{t1 - t0:.6f} {ru.ru_maxrss}")
EOF
    fi
}

# The mount daemon's VmRSS once `ztfs mount FILE` returns and after an
# `ls -l` of the root: prints "KIB_MOUNTED KIB_AFTER_LS".
daemon_rss() {
    local file="$1" mnt="$work/mnt" pid a b
    mkdir -p "$mnt"
    "$ztfs" mount "$file" "$mnt" --log-file "$work/daemon.log" >/dev/null
    pid=$(pgrep -f -n "ztfs mount $file $mnt")
    a=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
    LC_ALL=C ls -l "$mnt" >/dev/null
    b=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
    "$ztfs" unmount "$mnt"
    echo "$a $b"
}

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

printf '| objects | file bytes | manifest bytes | median s | objects/s | peak RSS MiB | RSS / manifest | daemon RSS / manifest, mounted | after ls -l |\n'
printf '|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
first_n="" first_s="" last_n="" last_s=""
for n in "${sizes[@]}"; do
    file="$work/many-$n.zt"
    echo "writing $n objects" >&2
    "$gen" "$n" "$file"
    size=$(stat -c %s "$file")
    manifest=$(od -An -t u8 -j "$((size - 32))" -N 8 "$file" | tr -d ' ')
    "$ztfs" check "$file" >&2
    : >"$work/runs.txt"
    for _ in $(seq "$runs"); do
        measure "$file" | tee -a "$work/runs.txt" | sed "s/^/  $n objects: s, KiB: /" >&2
    done
    secs=$(cut -d' ' -f1 "$work/runs.txt" | median)
    rss=$(cut -d' ' -f2 "$work/runs.txt" | median)
    read -r mounted listed < <(daemon_rss "$file")
    awk -v n="$n" -v f="$size" -v m="$manifest" -v s="$secs" -v r="$rss" \
        -v a="$mounted" -v b="$listed" 'BEGIN {
        printf "| %d | %d | %d | %.3f | %.0f | %.1f | %.2f | %.2f | %.2f |\n",
            n, f, m, s, n / s, r / 1024, r * 1024 / m, a * 1024 / m, b * 1024 / m }'
    [[ -n "$first_n" ]] || { first_n=$n; first_s=$secs; }
    last_n=$n last_s=$secs
    rm -f "$file"
done
if [[ "$first_n" != "$last_n" ]]; then
    awk -v a="$first_n" -v sa="$first_s" -v b="$last_n" -v sb="$last_s" 'BEGIN {
        printf "\ntime %d / time %d = %.2f for %.0fx the objects (equal means linear)\n",
            b, a, sb / sa, b / a }'
fi
