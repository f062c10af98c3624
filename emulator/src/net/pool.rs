//! Frame buffers kept for reuse: a frame delivered and parsed gives its buffer back, and the
//! next frame is built in it.
//!
//! A new `Vec` costs an allocation and, as it grows to a frame's size, a zero-fill of every byte
//! before the builder writes it again; a recycled one costs neither: the builders
//! ([`build_frame_overwrite`](super::roce::build_frame_overwrite) and the others) write over the
//! bytes a buffer already holds, so the pool keeps them, length included. The pool holds at most [`FramePool::MAX_BUFFERS`] buffers (more
//! than a segment keeps in flight: the transport's window is 128 packets a QP), so it never
//! holds more memory than the busiest moment of the run needed.

/// Buffers for frames, holding the bytes of earlier frames, to be built over.
#[derive(Debug, Default, Clone)]
pub struct FramePool {
    buffers: Vec<Vec<u8>>,
}

impl FramePool {
    /// Most buffers kept; more given back are freed.
    pub const MAX_BUFFERS: usize = 1024;

    /// An empty pool.
    pub fn new() -> FramePool {
        FramePool::default()
    }

    /// A buffer to build a frame in: a recycled one if there is one (with the bytes of the frame
    /// it held, which a builder writes over), a new empty one otherwise.
    pub fn take(&mut self) -> Vec<u8> {
        self.buffers.pop().unwrap_or_default()
    }

    /// Keep `buffer` for a later frame, bytes and all. Buffers without capacity and buffers
    /// beyond [`FramePool::MAX_BUFFERS`] are dropped.
    #[inline]
    pub fn give(&mut self, buffer: Vec<u8>) {
        if buffer.capacity() == 0 || self.buffers.len() >= Self::MAX_BUFFERS {
            return;
        }
        self.buffers.push(buffer);
    }

    /// Buffers held.
    pub fn len(&self) -> usize {
        self.buffers.len()
    }

    /// Whether the pool holds no buffer.
    pub fn is_empty(&self) -> bool {
        self.buffers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_as_they_were_given_and_the_pool_is_bounded() {
        let mut pool = FramePool::new();
        assert_eq!(pool.take().capacity(), 0, "an empty pool hands out new buffers");
        let mut b = Vec::with_capacity(4200);
        b.extend_from_slice(&[7; 100]);
        let ptr = b.as_ptr();
        pool.give(b);
        pool.give(Vec::new());
        assert_eq!(pool.len(), 1, "a buffer without capacity is not kept");
        let again = pool.take();
        assert!(again == [7; 100] && again.capacity() >= 4200 && again.as_ptr() == ptr);
        assert!(pool.is_empty());
        for _ in 0..FramePool::MAX_BUFFERS + 5 {
            pool.give(Vec::with_capacity(64));
        }
        assert_eq!(pool.len(), FramePool::MAX_BUFFERS);
    }
}
