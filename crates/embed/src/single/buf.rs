//! The buffers the threads of one encoder pass share, each thread writing its own part.

use std::marker::PhantomData;
use std::ops::Range;

/// A buffer that the threads of a pass write in disjoint parts.
pub(super) struct Buf<'a> {
    ptr: *mut f32,
    pub(super) len: usize,
    _owner: PhantomData<&'a mut [f32]>,
}

// SAFETY: a `Buf` is a `&mut [f32]` handed to several threads, which access it only as its
// methods' contracts say (disjoint writes, reads after the writes are ordered before them).
unsafe impl Send for Buf<'_> {}
// SAFETY: as for `Send` above.
unsafe impl Sync for Buf<'_> {}

impl<'a> Buf<'a> {
    pub(super) fn new(v: &'a mut [f32]) -> Buf<'a> {
        Buf { ptr: v.as_mut_ptr(), len: v.len(), _owner: PhantomData }
    }

    /// The whole buffer. Safety: no thread writes it while the slice is used.
    pub(super) unsafe fn all(&self) -> &[f32] {
        std::slice::from_raw_parts(self.ptr, self.len)
    }

    /// Part of the buffer. Safety: only this thread reads or writes `range` while the slice
    /// is used.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn part(&self, range: Range<usize>) -> &mut [f32] {
        assert!(range.start <= range.end && range.end <= self.len);
        std::slice::from_raw_parts_mut(self.ptr.add(range.start), range.len())
    }

    /// Writes one element. Safety: no other thread reads or writes element `i` meanwhile.
    #[inline(always)]
    pub(super) unsafe fn set(&self, i: usize, v: f32) {
        assert!(i < self.len);
        *self.ptr.add(i) = v;
    }
}
