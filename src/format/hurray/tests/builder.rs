//! A tiny writer of valid containers, with knobs.
