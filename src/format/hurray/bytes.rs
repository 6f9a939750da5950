//! A bounds-checked little-endian cursor over a byte slice.
//!
//! Every read either returns the value or a rejection under the cursor's
//! rule, naming what was being read and the absolute file offset where the
//! bytes ran out. The cursor never reads past its slice, so a caller that
//! hands it exactly a structure's declared bytes can never read past the
//! structure.

use crate::error::{Error, Result, Rule};

/// A reader over `buf`, whose first byte sits at absolute offset `base`.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
    rule: Rule,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`; running out rejects under `rule`.
    pub(crate) fn new(buf: &'a [u8], base: u64, rule: Rule) -> Cursor<'a> {
        Cursor {
            buf,
            pos: 0,
            base,
            rule,
        }
    }

    /// Bytes left.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The absolute offset of the next byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base.saturating_add(self.pos as u64)
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| {
                Error::reject(
                    self.rule,
                    format!(
                        "{what} ({n} bytes at {}) runs past the end ({} bytes left)",
                        self.offset(),
                        self.remaining()
                    ),
                )
            })?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    /// The next `N` bytes as an array.
    pub(crate) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn i64(&mut self, what: &str) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn f64(&mut self, what: &str) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array(what)?))
    }

    /// `count` values of `size` bytes each, read by `read`, after checking
    /// that they fit in what remains (so a hostile count allocates nothing).
    pub(crate) fn many<T>(
        &mut self,
        count: u64,
        size: usize,
        what: &str,
        mut read: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<Vec<T>> {
        let fits = usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(size))
            .is_some_and(|n| n <= self.remaining());
        if !fits {
            return Err(Error::reject(
                self.rule,
                format!(
                    "{what}: {count} values of {size} bytes at {} run past the end ({} bytes left)",
                    self.offset(),
                    self.remaining()
                ),
            ));
        }
        (0..count).map(|_| read(self)).collect()
    }
}

/// The smallest multiple of `align` (a power of two) at or above `x`, or
/// `None` on overflow.
pub(crate) fn align_up(x: u64, align: u64) -> Option<u64> {
    debug_assert!(align.is_power_of_two());
    x.checked_add(align - 1).map(|v| v & !(align - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_and_stops_at_the_end() {
        let mut c = Cursor::new(&[1, 0, 2, 0, 0, 0, 9], 100, Rule::HurrayIndex);
        assert_eq!(c.u16("a").unwrap(), 1);
        assert_eq!(c.u32("b").unwrap(), 2);
        assert_eq!(c.offset(), 106);
        let e = c.u16("c").unwrap_err();
        assert_eq!(e.rule(), Some(Rule::HurrayIndex));
        assert_eq!(c.u8("d").unwrap(), 9);
    }

    #[test]
    fn many_refuses_a_count_that_cannot_fit_before_allocating() {
        let mut c = Cursor::new(&[0; 16], 0, Rule::HurrayKv);
        assert!(c.many(u64::MAX, 8, "x", |c| c.u64("x")).is_err());
        assert_eq!(c.many(2, 8, "x", |c| c.u64("x")).unwrap(), vec![0, 0]);
    }

    #[test]
    fn align_up_rounds_and_overflows() {
        assert_eq!(align_up(0, 8), Some(0));
        assert_eq!(align_up(9, 8), Some(16));
        assert_eq!(align_up(u64::MAX, 8), None);
    }
}
