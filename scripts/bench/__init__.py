"""ztfs's benchmarks, one package with one harness (harness.py: the mounts
a benchmark makes and always undoes, and what it reads of a process).
Each is run by its script, which builds the binaries and owns the work
directory: scripts/bench-mount.sh (mount.py, with formats.py, hurray.py,
views.py, passthrough.py, remote.py), scripts/bench-pack.sh (pack.py),
scripts/bench-zstd.sh (zstd.py). A benchmark prints ratios against
baselines measured in the same run; it asserts nothing about time."""
