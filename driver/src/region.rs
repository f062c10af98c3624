//! Regions: memory the NIC writes and reads, registered with the RoCE firmware (the contract's
//! "Regions").
//!
//! A region is registered as bnxt_re registers a memory region (qplib_sp.c `bnxt_qplib_reg_mr`,
//! ib_verbs.c `bnxt_re_reg_user_mr`; hardware-map §4.5): its 4-KB pages behind a table of the
//! level its size asks for (one page: the page itself; up to 512: one PTE page; more: PDEs and
//! PTE pages), REGISTER_MR with the access rights local write, remote read and remote write, the
//! region's bus address as its virtual address, and the key: when QUERY_FUNC offers
//! MR_REGISTER_ALLOC, REGISTER_MR allocates it (flag ALLOC_MR, `key` = the protection domain);
//! otherwise ALLOCATE_MRW first. Deregistering frees the key with DEALLOCATE_KEY, as
//! `bnxt_re_dereg_mr` does (`bnxt_qplib_free_mrw`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard};

use bnxt_hsi::roce::layouts::{CmdqAllocateMrw, CmdqDeallocateKey, CmdqRegisterMr};
use bnxt_hsi::roce::qp::Access;
use zerocopy::FromZeros;

use crate::error::Error;
use crate::nic::Nic;
use crate::roce::pbl::{Pbl, PblKind, pages_of};
use crate::roce::{Counted, Memory, Object, Roce};
use bnxt_pci::dma::{DmaBuffer, HostPages, PAGE_SIZE};

/// The rights every region grants: the NIC writes it (receives, read responses) and peers'
/// queue pairs of its own NIC read and write it.
const ACCESS: Access = Access { local_write: true, remote_write: true, remote_read: true, remote_atomic: false };

/// Another device's memory (a GPU's behind its BAR) to register as a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceMemory {
    /// The device's bus address (`0000:81:00.0`).
    pub bus: String,
    /// Its BAR.
    pub bar: u8,
    /// Offset of the memory in the BAR.
    pub offset: u64,
    /// Bytes.
    pub len: usize,
}

/// A region: memory the NIC writes and reads, local to its NIC.
///
/// Calls on a region of a closed NIC, or on a deregistered region, panic (the contract's
/// Invalid_argument), except [`Region::len`] and a second [`Region::deregister`].
pub struct Region {
    core: Arc<RegionCore>,
}

pub(crate) struct RegionCore {
    id: u64,
    roce: Arc<Roce>,
    len: usize,
    /// The bus address of the first byte and the key, as registered: what a work request names,
    /// read without the state's lock (they do not change while the region is registered).
    va: u64,
    key: u32,
    /// Whether the state still holds the registered memory (cleared, under the state's write
    /// lock, when deregistering or closing takes it).
    live: AtomicBool,
    state: RwLock<Option<Live>>,
    deregistered: OnceLock<Result<(), Error>>,
}

/// A registered region's memory and key.
struct Live {
    buf: DmaBuffer,
    pbl: Pbl,
    key: u32,
}

impl Live {
    fn into_memory(self) -> Memory {
        let bytes = self.buf.len() + self.pbl.bytes();
        Memory::new((self.buf, self.pbl), bytes)
    }
}

/// Where a work request's bytes are, as an SGE names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sge {
    /// The region's virtual address of the first byte.
    pub va: u64,
    /// The region's key.
    pub key: u32,
    /// Bytes.
    pub len: u32,
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region").field("nic", &self.core.roce.name).field("len", &self.core.len).finish()
    }
}

impl Region {
    /// `len` bytes of DMA memory from the NIC's machine, zeroed, registered.
    ///
    /// # Errors
    ///
    /// [`Error::Limit`] if the NIC holds as many regions as the open allowed or `len` is past the
    /// firmware's largest region; [`Error::Pci`] if the memory cannot be had; the firmware's
    /// refusal or silence otherwise.
    ///
    /// # Panics
    ///
    /// On a closed NIC, or if `len` is 0.
    pub fn host(nic: &Nic, len: usize) -> Result<Region, Error> {
        let roce = nic.roce();
        roce.check_open();
        assert!(len > 0, "{}: a region of 0 bytes", roce.name);
        Region::register(roce, len, |f| f.alloc_dma(len))
    }

    /// Process memory the caller hands over, pinned and registered; the region keeps it until
    /// it is deregistered (or the NIC closed), then frees it.
    ///
    /// # Errors
    ///
    /// As [`Region::host`]; [`Error::Pci`] too if the target cannot map process memory.
    ///
    /// # Panics
    ///
    /// On a closed NIC.
    pub fn pages(nic: &Nic, memory: HostPages) -> Result<Region, Error> {
        let roce = nic.roce();
        roce.check_open();
        let len = memory.len();
        Region::register(roce, len, move |f| f.map_dma(memory))
    }

    /// Another device's memory, for the NIC to reach peer to peer. No target offers this yet.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] on every target so far.
    ///
    /// # Panics
    ///
    /// On a closed NIC.
    pub fn device(nic: &Nic, memory: &DeviceMemory) -> Result<Region, Error> {
        let roce = nic.roce();
        roce.check_open();
        Err(Error::Unsupported {
            nic: roce.name.clone(),
            what: format!(
                "regions of another device's memory ({} BAR {} at 0x{:x}, {} bytes) are not supported by this target",
                memory.bus, memory.bar, memory.offset, memory.len
            ),
        })
    }

    fn register(
        roce: &Arc<Roce>,
        len: usize,
        memory: impl FnOnce(&dyn bnxt_pci::PciFunction) -> Result<DmaBuffer, bnxt_pci::PciError>,
    ) -> Result<Region, Error> {
        if len as u64 > roce.caps.max_mr_size {
            return Err(Error::Limit {
                nic: roce.name.clone(),
                what: format!("a region of {len} bytes is past the firmware's largest"),
                limit: roce.caps.max_mr_size,
            });
        }
        roce.acquire(Counted::Region)?;
        match Region::make(roce, len, memory) {
            Ok(region) => Ok(region),
            Err(e) => {
                roce.release(Counted::Region);
                Err(e)
            }
        }
    }

    fn make(
        roce: &Arc<Roce>,
        len: usize,
        memory: impl FnOnce(&dyn bnxt_pci::PciFunction) -> Result<DmaBuffer, bnxt_pci::PciError>,
    ) -> Result<Region, Error> {
        let pci = |source| Error::Pci { nic: roce.name.clone(), source };
        let function = roce.function();
        let buf = memory(&*function).map_err(pci)?;
        let pbl = Pbl::build(&*function, &pages_of(&buf, len.div_ceil(PAGE_SIZE)), PblKind::Mr).map_err(pci)?;
        let id = roce.next_id();
        let live = Live { key: 0, pbl, buf };
        let key = match register_mr(roce, id, len, &live) {
            Ok(key) => key,
            Err((e, named)) => {
                // A command that went unanswered or was refused after naming the memory may
                // still act on it: keep it until close.
                if named {
                    roce.keep(vec![live.into_memory()]);
                }
                return Err(e);
            }
        };
        let core = Arc::new(RegionCore {
            id,
            roce: roce.clone(),
            len,
            va: live.buf.iova_at(0),
            key,
            live: AtomicBool::new(true),
            state: RwLock::new(Some(Live { key, ..live })),
            deregistered: OnceLock::new(),
        });
        roce.register(id, core.clone());
        tracing::debug!(nic = %roce.name, len, key = format_args!("0x{key:x}"), "region registered");
        Ok(Region { core })
    }

    /// Bytes in the region.
    pub fn len(&self) -> usize {
        self.core.len
    }

    /// Whether the region has no bytes (never: regions have at least one).
    pub fn is_empty(&self) -> bool {
        self.core.len == 0
    }

    /// The key the NIC knows it by (its lkey, which is also its rkey).
    ///
    /// # Panics
    ///
    /// As [`Region::write`].
    pub fn key(&self) -> u32 {
        self.check_live("key");
        self.core.key
    }

    /// Copy `bytes` into the region at offset `at`.
    ///
    /// # Panics
    ///
    /// On a closed NIC, a deregistered region, or bytes past the region's end.
    pub fn write(&self, at: usize, bytes: &[u8]) {
        self.check_range("write", at, bytes.len());
        self.with_live("write", |live| live.buf.write(at, bytes));
    }

    /// Copy `len` bytes of the region from offset `at`.
    ///
    /// # Panics
    ///
    /// As [`Region::write`].
    pub fn read(&self, at: usize, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        self.read_into(at, &mut out);
        out
    }

    /// Copy `out.len()` bytes of the region from offset `at` into `out`.
    ///
    /// # Panics
    ///
    /// As [`Region::write`].
    pub fn read_into(&self, at: usize, out: &mut [u8]) {
        self.check_range("read", at, out.len());
        self.with_live("read", |live| live.buf.read(at, out));
    }

    /// Deregister the region and free its memory. A second call sends nothing and returns what
    /// the first returned.
    ///
    /// # Errors
    ///
    /// The firmware's refusal or silence; its memory then stays allocated until close.
    ///
    /// # Panics
    ///
    /// On a closed NIC (unless deregistered before).
    pub fn deregister(&self) -> Result<(), Error> {
        self.core.deregister()
    }

    /// Panic (as [`Region::with_live`]) unless the NIC is open and the region registered: for
    /// what needs only the region's address and key, which it reads without the state's lock
    /// (once per work request posted).
    fn check_live(&self, what: &str) {
        self.core.roce.check_open();
        if !self.core.live.load(Ordering::Acquire) {
            self.deregistered(what);
        }
    }

    /// The contract's refusal of `what` on a deregistered region.
    fn deregistered(&self, what: &str) -> ! {
        panic!("{}: {what} on a deregistered region", self.core.roce.name);
    }

    fn with_live<T>(&self, what: &str, f: impl FnOnce(&Live) -> T) -> T {
        self.core.roce.check_open();
        let guard: RwLockReadGuard<'_, Option<Live>> = self.core.state.read().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            Some(live) => f(live),
            None => self.deregistered(what),
        }
    }

    fn check_range(&self, what: &str, at: usize, len: usize) {
        if at.checked_add(len).is_none_or(|end| end > self.core.len) {
            panic!(
                "{}: {what} of {len} bytes at offset {at} is outside a region of {} bytes",
                self.core.roce.name, self.core.len
            );
        }
    }

    /// The SGE for `len` bytes at `at`, for a work request of a queue pair on `roce`.
    ///
    /// # Panics
    ///
    /// As [`Region::write`], and if the region is another NIC's.
    pub(crate) fn sge(&self, roce: &Arc<Roce>, what: &str, at: usize, len: usize) -> Sge {
        if !Arc::ptr_eq(roce, &self.core.roce) {
            panic!("{}: {what} names a region of {}", roce.name, self.core.roce.name);
        }
        self.check_range(what, at, len);
        self.check_live(what);
        Sge { va: self.core.va + at as u64, key: self.core.key, len: len as u32 }
    }
}

/// REGISTER_MR (after ALLOCATE_MRW unless the firmware allocates the key itself); the key, or
/// the error and whether a command that named the memory was sent.
fn register_mr(roce: &Roce, id: u64, len: usize, live: &Live) -> Result<u32, (Error, bool)> {
    type R = CmdqRegisterMr;
    let unified = roce.caps.alloc_mr_unified();
    let key = if unified {
        roce.pd_id
    } else {
        let mut alloc = CmdqAllocateMrw::new_zeroed();
        alloc.mrw_handle = id.into();
        alloc.mrw_flags = CmdqAllocateMrw::MRW_FLAGS_MR;
        alloc.pd_id = roce.pd_id.into();
        roce.command(alloc).map_err(|e| (e, false))?.xid.get()
    };
    let mut req = R::new_zeroed();
    req.flags = if unified { R::FLAGS_ALLOC_MR } else { 0 }.into();
    req.log2_pg_size_lvl = (live.pbl.level & R::LVL_MASK) | R::LOG2_PG_SIZE_PG_4K;
    req.access = ACCESS.register_mr();
    req.log2_pbl_pg_size = R::LOG2_PBL_PG_SIZE_PG_4K.into();
    req.key = key.into();
    req.pbl = live.pbl.base.into();
    req.va = live.buf.iova_at(0).into();
    req.mr_size = (len as u64).into();
    match roce.command(req) {
        Ok(resp) => Ok(if unified { resp.xid.get() } else { key }),
        Err(e) => {
            if !unified && !matches!(e, Error::Timeout { .. } | Error::Wedged { .. }) {
                let _ = dealloc_key(roce, key, false);
            }
            // REGISTER_MR named the memory, unless it was never sent (the NIC was wedged).
            let named = !matches!(e, Error::Wedged { .. });
            Err((e, named))
        }
    }
}

/// DEALLOCATE_KEY of an MR's key (`bnxt_qplib_free_mrw`).
fn dealloc_key(roce: &Roce, key: u32, teardown: bool) -> Result<(), Error> {
    let req =
        CmdqDeallocateKey { mrw_flags: CmdqDeallocateKey::MRW_FLAGS_MR, key: key.into(), ..FromZeros::new_zeroed() };
    if teardown { roce.teardown_command(req) } else { roce.command(req) }.map(|_| ())
}

impl RegionCore {
    fn deregister(&self) -> Result<(), Error> {
        if let Some(r) = self.deregistered.get() {
            return r.clone();
        }
        self.roce.check_open();
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        let Some(live) = state.take() else {
            return self.deregistered.get().cloned().expect("a region's state is taken only by deregistering");
        };
        self.live.store(false, Ordering::Release);
        let r = dealloc_key(&self.roce, live.key, false);
        match &r {
            Ok(()) => drop(live),
            Err(e) => {
                tracing::warn!(nic = %self.roce.name, error = %e, "deregistering a region failed; its memory is kept until close");
                self.roce.keep(vec![live.into_memory()]);
            }
        }
        self.roce.unregister(self.id);
        self.roce.release(Counted::Region);
        let _ = self.deregistered.set(r.clone());
        r
    }
}

impl Object for RegionCore {
    fn teardown(&self, roce: &Roce) -> Vec<Memory> {
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        let Some(live) = state.take() else { return Vec::new() };
        self.live.store(false, Ordering::Release);
        if !roce.is_wedged()
            && let Err(e) = dealloc_key(roce, live.key, true)
        {
            tracing::warn!(nic = %roce.name, error = %e, "freeing a region's key at close failed");
        }
        vec![live.into_memory()]
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if self.core.deregistered.get().is_none() && !self.core.roce.is_closed() {
            let _ = self.core.deregister();
        }
    }
}

#[cfg(test)]
mod tests;
