//! Memory regions and windows: the keys ALLOCATE_MRW, REGISTER_MR (with ALLOC_MR) and
//! DEALLOCATE_KEY manage, and the translation of a key's addresses to bus addresses that every
//! data-path access goes through (hardware-map §4.5; bnxt_re qplib_sp.c `bnxt_qplib_alloc_mrw`,
//! `bnxt_qplib_reg_mr`, `bnxt_qplib_dereg_mrw`, `bnxt_qplib_free_mrw`).
//!
//! Keys live in the MRAV context entries the driver configured: at most
//! `ContextLimits::regions` of them (MRAV entries less the address vectors). A key is
//! `index << 8 | generation`: index 1..=regions, and an 8-bit generation bumped each time an
//! index is reused, so a stale key from a freed region does not name its successor (the model's
//! choice; the hardware key format is not public). Registration checks the page tables and that
//! every page is reachable; every later access checks the key, the access right, the bounds and
//! the protection domain, and then goes through the DMA view.

use std::collections::BTreeMap;

use bnxt_hsi::roce::qp::Access;

use crate::host_memory::HostMemory;

use super::pages::{PageList, PagesError};

/// What a key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// A memory region (`MRW_FLAGS_MR`).
    Mr,
    /// A physical memory region (`MRW_FLAGS_PMR`).
    Pmr,
    /// A type-1 memory window.
    Mw1,
    /// A type-2A memory window.
    Mw2a,
    /// A type-2B memory window.
    Mw2b,
}

impl KeyKind {
    /// From `mrw_flags` bits 3:0.
    pub fn from_flags(f: u8) -> Option<KeyKind> {
        Some(match f & 0xf {
            0 => KeyKind::Mr,
            1 => KeyKind::Pmr,
            2 => KeyKind::Mw1,
            3 => KeyKind::Mw2a,
            4 => KeyKind::Mw2b,
            _ => return None,
        })
    }

    /// Whether it is a region (not a window).
    pub fn is_region(self) -> bool {
        matches!(self, KeyKind::Mr | KeyKind::Pmr)
    }
}

/// Where a region's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionMemory {
    /// Pages from a page table; `first` is the offset of `va` in the first page.
    Pages {
        /// The pages.
        pages: PageList,
        /// Offset of the region's first byte in the first page.
        first: u64,
    },
    /// A DMA region (level 0 without a page table): addresses are bus addresses.
    Physical,
}

/// A registered region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// First address.
    pub va: u64,
    /// Bytes.
    pub len: u64,
    /// Access rights.
    pub access: Access,
    /// Where the bytes are.
    pub memory: RegionMemory,
}

/// One key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyEntry {
    /// The key.
    pub key: u32,
    /// What it names.
    pub kind: KeyKind,
    /// Protection domain.
    pub pd: u32,
    /// `mrw_handle` from ALLOCATE_MRW (0 for ALLOC_MR).
    pub handle: u64,
    /// The registration, if registered.
    pub region: Option<Region>,
}

/// Why an access through a key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// No region has this key.
    #[error("key 0x{0:x} names no registered region")]
    NoRegion(u32),
    /// The region belongs to another protection domain.
    #[error("key 0x{key:x} is in PD {region_pd}, the QP in PD {qp_pd}")]
    WrongPd {
        /// Key.
        key: u32,
        /// Region's PD.
        region_pd: u32,
        /// QP's PD.
        qp_pd: u32,
    },
    /// The region does not grant the access.
    #[error("key 0x{key:x} does not allow {what}")]
    Denied {
        /// Key.
        key: u32,
        /// The access.
        what: &'static str,
    },
    /// The range is not inside the region.
    #[error("0x{addr:x}+{len} is outside key 0x{key:x} (0x{va:x}+{region_len})")]
    OutOfBounds {
        /// Key.
        key: u32,
        /// Address asked for.
        addr: u64,
        /// Length asked for.
        len: u64,
        /// Region start.
        va: u64,
        /// Region length.
        region_len: u64,
    },
    /// The DMA itself failed.
    #[error("DMA through key 0x{key:x} failed: {error}")]
    Dma {
        /// Key.
        key: u32,
        /// What failed.
        error: PagesError,
    },
}

/// The kind of access asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessKind {
    /// A local read (gather for a send or write): always allowed.
    LocalRead,
    /// A local write (scatter of a receive or read response).
    LocalWrite,
    /// A remote write (RDMA WRITE).
    RemoteWrite,
    /// A remote read (RDMA READ).
    RemoteRead,
    /// A remote atomic (CmpSwap, FetchAdd: REGISTER_MR `ACCESS_REMOTE_ATOMIC`).
    RemoteAtomic,
}

impl AccessKind {
    fn allowed(self, a: Access) -> bool {
        match self {
            AccessKind::LocalRead => true,
            AccessKind::LocalWrite => a.local_write,
            AccessKind::RemoteWrite => a.remote_write,
            AccessKind::RemoteRead => a.remote_read,
            AccessKind::RemoteAtomic => a.remote_atomic,
        }
    }

    fn name(self) -> &'static str {
        match self {
            AccessKind::LocalRead => "local read",
            AccessKind::LocalWrite => "local write",
            AccessKind::RemoteWrite => "remote write",
            AccessKind::RemoteRead => "remote read",
            AccessKind::RemoteAtomic => "remote atomic",
        }
    }
}

/// Every key of the function.
#[derive(Debug, Default, Clone)]
pub struct KeyTable {
    keys: BTreeMap<u32, KeyEntry>,
    generation: BTreeMap<u32, u8>,
    /// Every index from 1 up to this one is in use (the smallest free index is taken, and a NIC
    /// may hold 131,072 keys or more: the search starts here). Lowered when one is freed.
    free_from: u32,
}

/// Index of a key.
pub(crate) fn key_index(key: u32) -> u32 {
    key >> 8
}

impl KeyTable {
    /// Forget every key.
    pub fn clear(&mut self) {
        self.keys.clear();
        self.free_from = 0;
    }

    /// Keys in use.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is in use.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// A new key of `kind` in `pd`, if fewer than `capacity` are in use.
    pub fn allocate(&mut self, kind: KeyKind, pd: u32, handle: u64, capacity: u32) -> Option<u32> {
        if self.keys.len() as u64 >= u64::from(capacity) {
            return None;
        }
        let index = (self.free_from.max(1)..=capacity).find(|i| !self.keys.contains_key(i))?;
        self.free_from = index + 1;
        let g = self.generation.entry(index).or_insert(0);
        *g = g.wrapping_add(1);
        let key = (index << 8) | u32::from(*g);
        self.keys.insert(index, KeyEntry { key, kind, pd, handle, region: None });
        Some(key)
    }

    /// The entry of `key` (index and generation both matching).
    pub fn get(&self, key: u32) -> Option<&KeyEntry> {
        self.keys.get(&key_index(key)).filter(|e| e.key == key)
    }

    /// The entry of `key`, mutable.
    pub fn get_mut(&mut self, key: u32) -> Option<&mut KeyEntry> {
        self.keys.get_mut(&key_index(key)).filter(|e| e.key == key)
    }

    /// Free `key`.
    pub fn free(&mut self, key: u32) -> Option<KeyEntry> {
        self.get(key)?;
        self.free_from = self.free_from.min(key_index(key));
        self.keys.remove(&key_index(key))
    }

    /// Check that `len` bytes at `addr` through `key` may be accessed as `kind` by a QP of
    /// protection domain `pd`; the region.
    pub fn check(&self, key: u32, pd: u32, addr: u64, len: u64, kind: AccessKind) -> Result<&Region, KeyError> {
        let e = self.get(key).filter(|e| e.kind.is_region()).ok_or(KeyError::NoRegion(key))?;
        let r = e.region.as_ref().ok_or(KeyError::NoRegion(key))?;
        if e.pd != pd {
            return Err(KeyError::WrongPd { key, region_pd: e.pd, qp_pd: pd });
        }
        if !kind.allowed(r.access) {
            return Err(KeyError::Denied { key, what: kind.name() });
        }
        let inside = addr >= r.va && addr.checked_add(len).is_some_and(|end| end <= r.va.saturating_add(r.len));
        if !inside {
            return Err(KeyError::OutOfBounds { key, addr, len, va: r.va, region_len: r.len });
        }
        Ok(r)
    }

    /// Copy `out.len()` bytes at `addr` of `key`'s region out of host memory.
    pub fn read(
        &self,
        mem: &dyn HostMemory,
        key: u32,
        pd: u32,
        addr: u64,
        out: &mut [u8],
        kind: AccessKind,
    ) -> Result<(), KeyError> {
        let r = self.check(key, pd, addr, out.len() as u64, kind)?;
        region_io(mem, r, addr, out.len() as u64, |m, bus, range| m.read(bus, &mut out[range]))
            .map_err(|error| KeyError::Dma { key, error })
    }

    /// Copy `data` into `key`'s region at `addr`.
    pub fn write(
        &self,
        mem: &dyn HostMemory,
        key: u32,
        pd: u32,
        addr: u64,
        data: &[u8],
        kind: AccessKind,
    ) -> Result<(), KeyError> {
        let r = self.check(key, pd, addr, data.len() as u64, kind)?;
        region_io(mem, r, addr, data.len() as u64, |m, bus, range| m.write(bus, &data[range]))
            .map_err(|error| KeyError::Dma { key, error })
    }
}

/// Run `io` on each (bus address, byte range) piece of `len` bytes at `addr` of region `r`.
fn region_io(
    mem: &dyn HostMemory,
    r: &Region,
    addr: u64,
    len: u64,
    mut io: impl FnMut(&dyn HostMemory, u64, std::ops::Range<usize>) -> Result<(), crate::host_memory::DmaError>,
) -> Result<(), PagesError> {
    match &r.memory {
        RegionMemory::Physical => Ok(io(mem, addr, 0..len as usize)?),
        RegionMemory::Pages { pages, first } => {
            let mut done = 0usize;
            for (bus, n) in pages.pieces(first + (addr - r.va), len)? {
                let n = n as usize;
                io(mem, bus, done..done + n)?;
                done += n;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_memory::{HeapBacking, Iommu};
    use std::sync::Arc;

    #[test]
    fn keys_check_pd_rights_and_bounds_before_any_dma() {
        let mem = Arc::new(HeapBacking::new(3 * 4096));
        let mut iommu = Iommu::new();
        iommu.map(0x10_0000, mem, 0, 3 * 4096).unwrap();
        let view = iommu.view(true);
        let mut t = KeyTable::default();
        let k = t.allocate(KeyKind::Mr, 5, 0, 2).unwrap();
        assert_eq!(key_index(k), 1);
        let pages = PageList::from_pages(vec![0x10_2000, 0x10_0000], 4096, 8192).unwrap();
        let access = Access { local_write: true, remote_read: true, ..Access::default() };
        t.get_mut(k).unwrap().region =
            Some(Region { va: 0x7000_0100, len: 5000, access, memory: RegionMemory::Pages { pages, first: 0x100 } });
        t.write(&view, k, 5, 0x7000_0100 + 3838, &[9, 8, 7, 6], AccessKind::LocalWrite).unwrap();
        let mut b = [0u8; 2];
        view.read(0x10_2ffe, &mut b).unwrap();
        assert_eq!(b, [9, 8]);
        view.read(0x10_0000, &mut b).unwrap();
        assert_eq!(b, [7, 6]);
        assert!(matches!(t.check(k, 6, 0x7000_0100, 1, AccessKind::LocalRead), Err(KeyError::WrongPd { .. })));
        assert!(matches!(t.check(k, 5, 0x7000_0100, 1, AccessKind::RemoteWrite), Err(KeyError::Denied { .. })));
        assert!(matches!(t.check(k, 5, 0x7000_0100, 5001, AccessKind::LocalRead), Err(KeyError::OutOfBounds { .. })));
        assert!(matches!(t.check(k, 5, 0x7000_00ff, 1, AccessKind::LocalRead), Err(KeyError::OutOfBounds { .. })));
        assert!(matches!(t.check(k ^ 1, 5, 0x7000_0100, 1, AccessKind::LocalRead), Err(KeyError::NoRegion(_))));
        let k2 = t.allocate(KeyKind::Mr, 5, 0, 2).unwrap();
        assert!(t.allocate(KeyKind::Mr, 5, 0, 2).is_none(), "capacity reached");
        t.free(k).unwrap();
        let k3 = t.allocate(KeyKind::Mr, 5, 0, 2).unwrap();
        assert_eq!(key_index(k3), 1);
        assert_ne!(k3, k, "a reused index gets a new generation");
        assert_ne!(k2, k3);
    }
}
