//! The transport's view of memory for one QP: SGEs and remote keys resolved through the
//! function's key table, every byte moved through the DMA view (the transport's
//! [`Memory`] trait).
//!
//! Local SGEs name registered regions by lkey (in the QP's protection domain). Inline data of a
//! WQE (bytes carried in the WQE itself) is handed to the transport as one SGE with the key
//! [`INLINE_LKEY`], which no region ever has (keys start at index 1), whose address is the
//! WQE's number; its bytes are kept by the engine until the WQE completes.

use std::collections::BTreeMap;

use crate::host_memory::HostMemory;
use crate::roce::transport::{AccessError, AtomicOp, Memory, RemoteAccess, Sge};

use super::mr::{AccessKind, KeyError, KeyTable};

/// The lkey of an inline-data SGE.
pub const INLINE_LKEY: u32 = 0;

/// One QP's memory.
pub struct QpMemory<'a> {
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
        self.keys.read(self.mem, sge.lkey, self.pd, addr, dst, AccessKind::LocalRead).map_err(|e| self.map(e))
    }

    fn scatter(&mut self, sge: &Sge, offset: u32, src: &[u8]) -> Result<(), AccessError> {
        let addr = sge.addr.wrapping_add(u64::from(offset));
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
