//! How the transport reaches memory: a trait the slow path implements over its region table and
//! the model's host memory.
//!
//! The transport never sees a page table or a region: it names local buffers by [`Sge`] (lkey,
//! address, length) and remote ones by (rkey, virtual address, length), and moves bytes straight
//! between them and frames: a request's payload is gathered into the frame being built, a
//! received payload is scattered from the parsed frame. Key lookup, access rights, bounds, page
//! translation and the DMA itself are the implementation's business; it answers `Ok` or an
//! [`AccessError`], which the transport turns into the completion status or NAK the IBA asks for.

use super::attrs::RemoteAccess;
use super::wr::Sge;

/// Why a memory access was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum AccessError {
    /// No valid region has that key (or it belongs to another protection domain).
    #[error("no valid region has key {key:#x}")]
    InvalidKey {
        /// The lkey or rkey.
        key: u32,
    },
    /// The region does not allow this access (local write, remote read, remote write).
    #[error("the region with key {key:#x} does not allow {what}")]
    NotAllowed {
        /// The lkey or rkey.
        key: u32,
        /// The access refused.
        what: &'static str,
    },
    /// The bytes are not all inside the region.
    #[error("{len} bytes at {addr:#x} are outside the region with key {key:#x}")]
    OutOfBounds {
        /// The lkey or rkey.
        key: u32,
        /// First address.
        addr: u64,
        /// Bytes.
        len: u64,
    },
    /// The region is valid but its memory could not be reached (a DMA refused by the IOMMU).
    #[error("DMA for the region with key {key:#x} failed")]
    Dma {
        /// The lkey or rkey.
        key: u32,
    },
}

/// The memory a QP's transport reads and writes, passed to every call that may touch it.
pub trait Memory {
    /// Copy `dst.len()` bytes from `offset` bytes into the local buffer `sge` (a local read:
    /// SEND and WRITE payloads). On `Ok` every byte of `dst` must have been written: `dst` is
    /// the payload of the frame being built, which is not cleared first.
    fn gather(&mut self, sge: &Sge, offset: u32, dst: &mut [u8]) -> Result<(), AccessError>;

    /// Copy `src` to `offset` bytes into the local buffer `sge` (a local write: receives and READ
    /// responses; the region must allow local write).
    fn scatter(&mut self, sge: &Sge, offset: u32, src: &[u8]) -> Result<(), AccessError>;

    /// Check that `len` bytes at `va` of the region `rkey` may be accessed remotely as `access`
    /// says (only one of `read`, `write` and `atomic` is set). Called once per RDMA READ or
    /// WRITE, on its first packet, for the whole length (rdma_rxe rxe_resp.c `check_rkey`), and
    /// by the default [`Memory::remote_atomic`].
    fn check_remote(&mut self, rkey: u32, va: u64, len: u32, access: RemoteAccess) -> Result<(), AccessError>;

    /// Copy `dst.len()` bytes from `va` of the region `rkey` (READ responses). On `Ok` every byte
    /// of `dst` must have been written, as for [`Memory::gather`].
    fn remote_read(&mut self, rkey: u32, va: u64, dst: &mut [u8]) -> Result<(), AccessError>;

    /// Copy `src` to `va` of the region `rkey` (WRITE payloads).
    fn remote_write(&mut self, rkey: u32, va: u64, src: &[u8]) -> Result<(), AccessError>;

    /// Carry out atomic `op` on the 8 bytes at `va` of the region `rkey` (a host-order u64, as
    /// the host's CPU sees it; rdma_rxe rxe_resp.c `atomic_reply` likewise) and return their
    /// original value; the region must allow remote atomics. The default checks that with
    /// [`Memory::check_remote`] and reads and writes through [`Memory::remote_read`] and
    /// [`Memory::remote_write`]; an implementation whose remote reads and writes check their own
    /// access rights must do the access itself.
    fn remote_atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, AccessError> {
        let access = RemoteAccess { atomic: true, ..RemoteAccess::default() };
        self.check_remote(rkey, va, super::wr::ATOMIC_BYTES, access)?;
        let mut b = [0u8; 8];
        self.remote_read(rkey, va, &mut b)?;
        let orig = u64::from_le_bytes(b);
        if let Some(new) = op.apply(orig) {
            self.remote_write(rkey, va, &new.to_le_bytes())?;
        }
        Ok(orig)
    }
}

/// An atomic operation as the responder carries it out (IBA Vol 1 §9.4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// Write `swap` if the value equals `compare`.
    CompareSwap {
        /// Compare data.
        compare: u64,
        /// Swap data.
        swap: u64,
    },
    /// Add `add` (wrapping).
    FetchAdd {
        /// Add data.
        add: u64,
    },
}

impl AtomicOp {
    /// The value to write over `orig`, if any (a compare-and-swap that does not match writes
    /// nothing).
    pub fn apply(self, orig: u64) -> Option<u64> {
        match self {
            AtomicOp::CompareSwap { compare, swap } => (orig == compare).then_some(swap),
            AtomicOp::FetchAdd { add } => Some(orig.wrapping_add(add)),
        }
    }
}

/// Gather `dst.len()` bytes starting `offset` bytes into the message the SGE list describes.
/// The caller has checked that the SGEs hold the message.
pub(crate) fn gather_sges<M: Memory + ?Sized>(
    mem: &mut M,
    sges: &[Sge],
    offset: u64,
    dst: &mut [u8],
) -> Result<(), AccessError> {
    walk(sges, offset, dst.len(), |sge, at, range| mem.gather(sge, at, &mut dst[range]))
}

/// Scatter `src` to `offset` bytes into the message the SGE list describes. `Ok(false)` when
/// the SGEs end before `src` does (nothing is written then).
pub(crate) fn scatter_sges<M: Memory + ?Sized>(
    mem: &mut M,
    sges: &[Sge],
    offset: u64,
    src: &[u8],
) -> Result<bool, AccessError> {
    let held: u64 = sges.iter().map(|s| u64::from(s.len)).sum();
    if offset + src.len() as u64 > held {
        return Ok(false);
    }
    walk(sges, offset, src.len(), |sge, at, range| mem.scatter(sge, at, &src[range]))?;
    Ok(true)
}

/// Call `f(sge, offset in sge, range of the caller's buffer)` for each piece of the `len` bytes
/// at `offset` of the message.
fn walk(
    sges: &[Sge],
    offset: u64,
    len: usize,
    mut f: impl FnMut(&Sge, u32, std::ops::Range<usize>) -> Result<(), AccessError>,
) -> Result<(), AccessError> {
    let mut skip = offset;
    let mut done = 0usize;
    for sge in sges {
        if done == len {
            break;
        }
        let sge_len = u64::from(sge.len);
        if skip >= sge_len {
            skip -= sge_len;
            continue;
        }
        let n = ((sge_len - skip) as usize).min(len - done);
        f(sge, skip as u32, done..done + n)?;
        done += n;
        skip = 0;
    }
    debug_assert_eq!(done, len, "the SGEs were checked to hold the message");
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A flat buffer per key: SGE addresses are offsets.
    #[derive(Default)]
    pub(crate) struct Flat {
        pub(crate) bufs: std::collections::BTreeMap<u32, Vec<u8>>,
    }

    impl Flat {
        fn buf(&mut self, key: u32, addr: u64, len: usize) -> Result<&mut [u8], AccessError> {
            let b = self.bufs.get_mut(&key).ok_or(AccessError::InvalidKey { key })?;
            let start = addr as usize;
            b.get_mut(start..start + len).ok_or(AccessError::OutOfBounds { key, addr, len: len as u64 })
        }
    }

    impl Memory for Flat {
        fn gather(&mut self, sge: &Sge, offset: u32, dst: &mut [u8]) -> Result<(), AccessError> {
            let n = dst.len();
            dst.copy_from_slice(self.buf(sge.lkey, sge.addr + u64::from(offset), n)?);
            Ok(())
        }
        fn scatter(&mut self, sge: &Sge, offset: u32, src: &[u8]) -> Result<(), AccessError> {
            self.buf(sge.lkey, sge.addr + u64::from(offset), src.len())?.copy_from_slice(src);
            Ok(())
        }
        fn check_remote(&mut self, rkey: u32, va: u64, len: u32, _: RemoteAccess) -> Result<(), AccessError> {
            self.buf(rkey, va, len as usize).map(|_| ())
        }
        fn remote_read(&mut self, rkey: u32, va: u64, dst: &mut [u8]) -> Result<(), AccessError> {
            let n = dst.len();
            dst.copy_from_slice(self.buf(rkey, va, n)?);
            Ok(())
        }
        fn remote_write(&mut self, rkey: u32, va: u64, src: &[u8]) -> Result<(), AccessError> {
            self.buf(rkey, va, src.len())?.copy_from_slice(src);
            Ok(())
        }
    }

    #[test]
    fn gather_and_scatter_walk_the_sges_at_any_offset() {
        let mut m = Flat::default();
        m.bufs.insert(1, (0u8..100).collect());
        m.bufs.insert(2, vec![0; 100]);
        let src =
            [Sge { addr: 10, lkey: 1, len: 5 }, Sge { addr: 0, lkey: 1, len: 0 }, Sge { addr: 50, lkey: 1, len: 7 }];
        let mut out = [0u8; 6];
        gather_sges(&mut m, &src, 3, &mut out).unwrap();
        assert_eq!(out, [13, 14, 50, 51, 52, 53]);
        let dst = [Sge { addr: 90, lkey: 2, len: 2 }, Sge { addr: 0, lkey: 2, len: 8 }];
        assert_eq!(scatter_sges(&mut m, &dst, 1, &out), Ok(true));
        assert_eq!(m.bufs[&2][91], 13);
        assert_eq!(&m.bufs[&2][0..5], &[14, 50, 51, 52, 53]);
        assert_eq!(scatter_sges(&mut m, &dst, 5, &out), Ok(false), "10 bytes of SGEs hold 5 + 6 no more");
        let bad = [Sge { addr: 0, lkey: 9, len: 4 }];
        assert_eq!(gather_sges(&mut m, &bad, 0, &mut out[..4]), Err(AccessError::InvalidKey { key: 9 }));
    }
}
