//! Where an object's blocks begin (see [`Grid`]).

use std::ops::Range;

use super::BLOCK;

/// Where an object's blocks begin: block `j` is `[j * BLOCK - shift,
/// (j + 1) * BLOCK - shift)` of the object (clipped to it). Reads use grid
/// 0, except those of a big blob ([`Remote::read_blob`]), which use the
/// grid one of whose blocks begins at the blob's start: a reader's reads of
/// a part come at block-sized steps from the part's start, and on that
/// grid each lies in one block, served as it is, where on grid 0 each
/// would straddle two and be joined by a copy.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Grid {
    pub(super) shift: u64,
}

/// Blobs at least this long get a grid of their own.
pub(super) const BIG_BLOB: u64 = 4 * BLOCK;

impl Grid {
    pub(super) const ZERO: Grid = Grid { shift: 0 };

    /// The grid on which a block begins at `offset`.
    pub(super) fn starting_at(offset: u64) -> Grid {
        Grid {
            shift: (BLOCK - offset % BLOCK) % BLOCK,
        }
    }

    /// The block holding byte `offset`.
    pub(super) fn block_of(self, offset: u64) -> u64 {
        (offset + self.shift) / BLOCK
    }

    /// Where block `j` begins (0 for a first block cut short).
    pub(super) fn start(self, j: u64) -> u64 {
        (j * BLOCK).saturating_sub(self.shift)
    }

    /// Block `j`'s bytes in an object of `len` bytes.
    pub(super) fn range(self, j: u64, len: u64) -> Range<u64> {
        self.start(j).min(len)..self.start(j + 1).min(len)
    }

    /// Blocks in an object of `len` bytes.
    pub(super) fn count(self, len: u64) -> u64 {
        (len + self.shift).div_ceil(BLOCK)
    }

    /// Block `j`'s name in the block caches: the shift above the index
    /// (an index is below 2^44, a shift below 2^20), so grid 0's names are
    /// its indices and a grid's consecutive blocks have consecutive names.
    pub(super) fn key(self, j: u64) -> u64 {
        (self.shift << 44) | j
    }
}

/// The grid a blob at `offset` of `len` bytes is read on (its own when
/// big, else grid 0), and its blocks on that grid in an object of
/// `object_len` bytes.
pub(super) fn of_blob(offset: u64, len: u64, object_len: u64) -> (Grid, Range<u64>) {
    let grid = if len >= BIG_BLOB {
        Grid::starting_at(offset)
    } else {
        Grid::ZERO
    };
    let end = offset.saturating_add(len).min(object_len);
    let first = grid.block_of(offset.min(end));
    (grid, first..grid.block_of(end.max(1) - 1).max(first) + 1)
}
