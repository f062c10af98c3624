//! The transport's view of memory for one QP: SGEs and remote keys resolved through the
//! function's key table, every byte moved through the DMA view (the transport's
//! [`Memory`] trait).
//!
//! Local SGEs name registered regions by lkey (in the QP's protection domain). Inline data of a
//! WQE (bytes carried in the WQE itself) is handed to the transport as one SGE with the key
//! [`INLINE_LKEY`], which no region ever has (keys start at index 1), whose address is the
//! WQE's number; its bytes are kept by the engine until the WQE completes.
//!
//! The reserved lkey [`RESERVED_LKEY`] names no region: its SGE addresses are bus addresses, read
//! and written through the DMA view as they are. bnxt_re gives it to the kernel as the device's
//! `local_dma_lkey` (drivers/infiniband/hw/bnxt_re/main.c `bnxt_re_register_ib`,
//! `ibdev->local_dma_lkey = BNXT_QPLIB_RSVD_LKEY`, 0xFFFFFFFF in qplib_res.h), so every kernel
//! consumer's SGEs carry it: ib_mad's MADs on QP1 first of all (ib_alloc_pd takes the device's
//! local_dma_lkey when it offers one), then NFS over RDMA, iSER and the like.

use std::collections::BTreeMap;

use crate::host_memory::HostMemory;
use crate::roce::transport::{AccessError, AtomicOp, Memory, RemoteAccess, Sge};

use super::mr::{AccessKind, KeyError, KeyTable};

/// The lkey of an inline-data SGE.
pub(crate) const INLINE_LKEY: u32 = 0;

/// The reserved lkey: SGE addresses are bus addresses (see the module's documentation).
pub(crate) const RESERVED_LKEY: u32 = 0xFFFF_FFFF;

/// One QP's memory.
pub(crate) struct QpMemory<'a> {
    /// The function's keys.
    pub keys: &'a KeyTable,
    /// The DMA view.
    pub mem: &'a dyn HostMemory,
    /// The QP's protection domain.
    pub pd: u32,
    /// Inline payloads by WQE number.
    pub inline: &'a BTreeMap<u64, Vec<u8>>,
    /// DMA failures seen (for the engine's counters).
    pub dma_errors: u64,
}

impl QpMemory<'_> {
    /// The outcome of a DMA through the reserved lkey.
    fn bus<E>(&mut self, r: Result<(), E>) -> Result<(), AccessError> {
        r.map_err(|_| {
            self.dma_errors += 1;
            AccessError::Dma { key: RESERVED_LKEY }
        })
    }

    fn map(&mut self, e: KeyError) -> AccessError {
        match e {
            KeyError::NoRegion(key) => AccessError::InvalidKey { key },
            KeyError::WrongPd { key, .. } => AccessError::InvalidKey { key },
            KeyError::Denied { key, what } => AccessError::NotAllowed { key, what },
            KeyError::OutOfBounds { key, addr, len, .. } => AccessError::OutOfBounds { key, addr, len },
            KeyError::Dma { key, .. } => {
                self.dma_errors += 1;
                AccessError::Dma { key }
            }
        }
    }
}

impl Memory for QpMemory<'_> {
    fn gather(&mut self, sge: &Sge, offset: u32, dst: &mut [u8]) -> Result<(), AccessError> {
        if sge.lkey == INLINE_LKEY {
            let data = self.inline.get(&sge.addr).ok_or(AccessError::InvalidKey { key: INLINE_LKEY })?;
            let at = offset as usize;
            let src = data.get(at..at + dst.len()).ok_or(AccessError::OutOfBounds {
                key: INLINE_LKEY,
                addr: sge.addr,
                len: dst.len() as u64,
            })?;
            dst.copy_from_slice(src);
            return Ok(());
        }
        let addr = sge.addr.wrapping_add(u64::from(offset));
        if sge.lkey == RESERVED_LKEY {
            return self.bus(self.mem.read(addr, dst));
        }
        self.keys.read(self.mem, sge.lkey, self.pd, addr, dst, AccessKind::LocalRead).map_err(|e| self.map(e))
    }

    fn scatter(&mut self, sge: &Sge, offset: u32, src: &[u8]) -> Result<(), AccessError> {
        let addr = sge.addr.wrapping_add(u64::from(offset));
        if sge.lkey == RESERVED_LKEY {
            return self.bus(self.mem.write(addr, src));
        }
        self.keys.write(self.mem, sge.lkey, self.pd, addr, src, AccessKind::LocalWrite).map_err(|e| self.map(e))
    }

    fn check_remote(&mut self, rkey: u32, va: u64, len: u32, access: RemoteAccess) -> Result<(), AccessError> {
        let kind = match access {
            RemoteAccess { atomic: true, .. } => AccessKind::RemoteAtomic,
            RemoteAccess { write: true, .. } => AccessKind::RemoteWrite,
            _ => AccessKind::RemoteRead,
        };
        self.keys.check(rkey, self.pd, va, u64::from(len), kind).map(|_| ()).map_err(|e| self.map(e))
    }

    fn remote_read(&mut self, rkey: u32, va: u64, dst: &mut [u8]) -> Result<(), AccessError> {
        self.keys.read(self.mem, rkey, self.pd, va, dst, AccessKind::RemoteRead).map_err(|e| self.map(e))
    }

    fn remote_write(&mut self, rkey: u32, va: u64, src: &[u8]) -> Result<(), AccessError> {
        self.keys.write(self.mem, rkey, self.pd, va, src, AccessKind::RemoteWrite).map_err(|e| self.map(e))
    }

    /// The region must allow remote atomics (not reads or writes): the 8 bytes are read and
    /// written under that right.
    fn remote_atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, AccessError> {
        let mut b = [0u8; 8];
        let kind = AccessKind::RemoteAtomic;
        self.keys.read(self.mem, rkey, self.pd, va, &mut b, kind).map_err(|e| self.map(e))?;
        let orig = u64::from_le_bytes(b);
        if let Some(new) = op.apply(orig) {
            self.keys.write(self.mem, rkey, self.pd, va, &new.to_le_bytes(), kind).map_err(|e| self.map(e))?;
        }
        Ok(orig)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::host_memory::DmaError;

    /// 64 bytes of host memory at bus address 0x1000.
    struct Window(RefCell<Vec<u8>>);

    impl Window {
        fn at(&self, addr: u64, len: usize) -> Result<std::ops::Range<usize>, DmaError> {
            let start = addr.checked_sub(0x1000).map(|a| a as usize).filter(|a| a + len <= 64);
            start.map(|a| a..a + len).ok_or(DmaError::Unmapped { kind: "access", addr, len })
        }
    }

    impl HostMemory for Window {
        fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), DmaError> {
            let r = self.at(addr, out.len())?;
            out.copy_from_slice(&self.0.borrow()[r]);
            Ok(())
        }
        fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
            let r = self.at(addr, data.len())?;
            self.0.borrow_mut()[r].copy_from_slice(data);
            Ok(())
        }
    }

    fn sge(lkey: u32, addr: u64, len: u32) -> Sge {
        Sge { addr, len, lkey }
    }

    #[test]
    fn the_reserved_lkey_reaches_bus_addresses_without_a_region() {
        let window = Window(RefCell::new((0..64).collect()));
        let keys = KeyTable::default();
        let inline = BTreeMap::new();
        let mut mem = QpMemory { keys: &keys, mem: &window, pd: 1, inline: &inline, dma_errors: 0 };
        let mut got = [0u8; 4];
        mem.gather(&sge(RESERVED_LKEY, 0x1008, 16), 2, &mut got).unwrap();
        assert_eq!(got, [10, 11, 12, 13]);
        mem.scatter(&sge(RESERVED_LKEY, 0x1000, 8), 1, &[0xaa, 0xbb]).unwrap();
        assert_eq!(&window.0.borrow()[..4], &[0, 0xaa, 0xbb, 3]);
        // What the DMA view refuses stays refused, and is counted.
        assert_eq!(
            mem.gather(&sge(RESERVED_LKEY, 0x2000, 8), 0, &mut got),
            Err(AccessError::Dma { key: RESERVED_LKEY })
        );
        assert_eq!(mem.dma_errors, 1);
        // Any other key without a region is still no key at all.
        assert_eq!(mem.gather(&sge(0x1234, 0x1000, 8), 0, &mut got), Err(AccessError::InvalidKey { key: 0x1234 }));
    }
}
