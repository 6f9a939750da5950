"""The object-storage link benchmark (scripts/bench-remote-link.sh): a
network namespace whose servers answer as remote object storage does (each
connection capped, the whole link capped, each answer's first byte late),
and the readers measured through it: ztfs, rclone, s3fs, curl."""
