//! Test doubles for the seam: a virtual clock and a small fake PCI function whose "firmware" is
//! a closure, so the HWRM channel and the bring-up can be tested without the model. Its RoCE
//! command channel is in [`roce_fw`].

pub(crate) mod machine;
pub(crate) mod roce_fw;

use std::collections::{BTreeMap, HashMap};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bnxt_hsi::hwrm::layouts::Output;
use bnxt_hsi::hwrm::{Request, SHORT_REQ_SIGNATURE};
use zerocopy::{FromBytes, IntoBytes};

use bnxt_pci::{Clock, Interrupted, PciError, PciFunction};
use bnxt_pci::{DmaBuffer, IovaAllocator, IovaLease, PAGE_SIZE};

/// A clock whose time moves only when someone sleeps.
#[derive(Default)]
pub(crate) struct VirtualClock {
    now: Mutex<Duration>,
}

impl Clock for VirtualClock {
    fn now(&self) -> Duration {
        *self.now.lock().unwrap()
    }
    fn sleep(&self, d: Duration) -> Result<(), Interrupted> {
        *self.now.lock().unwrap() += d;
        Ok(())
    }
}

/// What the fake firmware does with one request.
pub(crate) enum Reply {
    /// Write this response at once.
    Now(Vec<u8>),
    /// Write this response after this much time.
    After(Duration, Vec<u8>),
    /// Never answer.
    Never,
}

/// One request as the fake firmware received it.
#[derive(Debug, Clone)]
pub(crate) struct Submission {
    /// The request came as a short command (`hwrm_short_input` in the window).
    pub short: bool,
    /// The 128-byte window as written (for a short command: the short input and what follows).
    pub window: Vec<u8>,
    /// The full request (read from DMA for a short command).
    pub request: Vec<u8>,
}

type Firmware = Box<dyn FnMut(&[u8]) -> Reply + Send>;

struct DmaRegion {
    ptr: usize,
    len: usize,
}

pub(crate) struct FakeState {
    now: Duration,
    config: Vec<u8>,
    window: [u8; 128],
    grc_base: [u32; 3],
    grc: HashMap<u32, u32>,
    fw_status: u32,
    dma: BTreeMap<u64, DmaRegion>,
    iovas: Arc<IovaAllocator>,
    firmware: Firmware,
    pending: Vec<(Duration, u64, Vec<u8>)>,
    submissions: Vec<Submission>,
    resets: u32,
    rcfw: roce_fw::FakeRcfw,
    /// A limit of the clock's owner: the sleep that would pass it stops there and is
    /// interrupted (once).
    limit: Option<Duration>,
}

/// Offset of the fake's PCI Express capability.
pub(crate) const EXP_CAP: u16 = 0x40;

impl FakeState {
    pub(crate) fn write_dma(&mut self, addr: u64, bytes: &[u8]) {
        let (base, region) = self.dma.range(..=addr).next_back().expect("response address is not mapped");
        let off = (addr - base) as usize;
        assert!(off + bytes.len() <= region.len, "response runs past its buffer");
        // SAFETY: the region is a live allocation owned by a DmaBuffer's owner (it is removed
        // from the map when the owner drops), and the range is inside it (asserted above).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), (region.ptr as *mut u8).add(off), bytes.len()) }
    }

    pub(crate) fn read_dma(&self, addr: u64, len: usize) -> Vec<u8> {
        let (base, region) = self.dma.range(..=addr).next_back().expect("request address is not mapped");
        let off = (addr - base) as usize;
        assert!(off + len <= region.len, "request runs past its buffer");
        let mut out = vec![0u8; len];
        // SAFETY: as in `write_dma`.
        unsafe { std::ptr::copy_nonoverlapping((region.ptr as *const u8).add(off), out.as_mut_ptr(), len) }
        out
    }

    fn rcfw_write(&mut self, offset: u64, value: u32) {
        let at = (offset - 0x600) as usize;
        self.rcfw.mailbox[at..at + 4].copy_from_slice(&value.to_le_bytes());
    }

    fn rcfw_trigger(&mut self) {
        let mut rcfw = std::mem::take(&mut self.rcfw);
        rcfw.trigger(self);
        // Keep what the driver stored while the channel was out (nothing can, under the lock).
        self.rcfw = rcfw;
    }

    fn deliver_due(&mut self) {
        let now = self.now;
        let due: Vec<_> = self.pending.iter().filter(|(t, _, _)| *t <= now).cloned().collect();
        self.pending.retain(|(t, _, _)| *t > now);
        for (_, addr, bytes) in due {
            self.write_dma(addr, &bytes);
        }
    }

    fn trigger(&mut self) {
        let window = self.window.to_vec();
        let signature = u16::from_le_bytes([window[2], window[3]]);
        let (short, request) = if signature == SHORT_REQ_SIGNATURE {
            let size = u16::from_le_bytes([window[6], window[7]]) as usize;
            let addr = u64::from_le_bytes(window[8..16].try_into().unwrap());
            (true, self.read_dma(addr, size))
        } else {
            (false, window.clone())
        };
        let resp_addr = u64::from_le_bytes(request[8..16].try_into().unwrap());
        self.submissions.push(Submission { short, window, request: request.clone() });
        match (self.firmware)(&request) {
            Reply::Now(bytes) => {
                self.rcfw.snoop_hwrm(&request, &bytes);
                self.write_dma(resp_addr, &bytes)
            }
            Reply::After(d, bytes) => {
                let due = self.now + d;
                self.pending.push((due, resp_addr, bytes));
            }
            Reply::Never => {}
        }
    }
}

/// A PCI function with a PCIe capability (relaxed ordering on at reset), a HWRM mailbox in BAR0
/// answered by a closure, a status register, GRC windows, heap "DMA" memory and a virtual clock.
#[derive(Clone)]
pub(crate) struct FakeFunction {
    state: Arc<Mutex<FakeState>>,
}

struct FakeDmaOwner {
    _mem: Box<[u8]>,
    iova: u64,
    state: Arc<Mutex<FakeState>>,
    _lease: IovaLease,
}

struct FakePagesOwner {
    _mem: bnxt_pci::dma::HostPages,
    iova: u64,
    state: Arc<Mutex<FakeState>>,
    _lease: IovaLease,
}

impl Drop for FakePagesOwner {
    fn drop(&mut self) {
        lock(&self.state).dma.remove(&self.iova);
    }
}

impl Drop for FakeDmaOwner {
    fn drop(&mut self) {
        lock(&self.state).dma.remove(&self.iova);
    }
}

fn lock(state: &Mutex<FakeState>) -> MutexGuard<'_, FakeState> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl FakeFunction {
    /// A function whose firmware answers with `firmware`.
    pub(crate) fn new(firmware: impl FnMut(&[u8]) -> Reply + Send + 'static) -> FakeFunction {
        let mut config = vec![0u8; 4096];
        config[0x06] = 0x10; // status: capability list
        config[0x34] = EXP_CAP as u8;
        config[EXP_CAP as usize] = bnxt_pci::regs::CAP_ID_EXP;
        config[EXP_CAP as usize + 4..EXP_CAP as usize + 8]
            .copy_from_slice(&bnxt_pci::regs::EXP_DEVCAP_FLR.to_le_bytes());
        config[EXP_CAP as usize + 8] = bnxt_pci::regs::EXP_DEVCTL_RELAX_EN as u8;
        let state = FakeState {
            now: Duration::ZERO,
            config,
            window: [0; 128],
            grc_base: [0; 3],
            grc: HashMap::new(),
            fw_status: 0x8000,
            dma: BTreeMap::new(),
            iovas: Arc::default(),
            firmware: Box::new(firmware),
            pending: Vec::new(),
            submissions: Vec::new(),
            resets: 0,
            rcfw: roce_fw::FakeRcfw::new(Box::new(roce_fw::standard())),
            limit: None,
        };
        FakeFunction { state: Arc::new(Mutex::new(state)) }
    }

    /// Every request submitted so far.
    pub(crate) fn submissions(&self) -> Vec<Submission> {
        lock(&self.state).submissions.clone()
    }

    /// Number of live DMA allocations.
    pub(crate) fn dma_live(&self) -> usize {
        lock(&self.state).dma.len()
    }

    /// Set the value BAR0 0x520 reads.
    pub(crate) fn set_fw_status(&self, v: u32) {
        lock(&self.state).fw_status = v;
    }

    /// Set a GRC register (read through a GRC window).
    pub(crate) fn set_grc(&self, addr: u32, v: u32) {
        lock(&self.state).grc.insert(addr, v);
    }

    /// A 16-bit config register.
    pub(crate) fn config16(&self, offset: u16) -> u16 {
        let s = lock(&self.state);
        u16::from_le_bytes([s.config[offset as usize], s.config[offset as usize + 1]])
    }

    /// Set a 16-bit config register.
    pub(crate) fn set_config16(&self, offset: u16, v: u16) {
        lock(&self.state).config[offset as usize..offset as usize + 2].copy_from_slice(&v.to_le_bytes());
    }

    /// Answer RoCE commands with `firmware` from now on.
    pub(crate) fn set_roce_firmware(
        &self,
        firmware: impl FnMut(&roce_fw::RoceCmd) -> roce_fw::RoceReply + Send + 'static,
    ) {
        lock(&self.state).rcfw.firmware = Box::new(firmware);
    }

    /// Every RoCE command submitted so far.
    pub(crate) fn roce_commands(&self) -> Vec<roce_fw::RoceCmd> {
        lock(&self.state).rcfw.commands.clone()
    }

    /// Every 64-bit store so far: (BAR, offset, value).
    pub(crate) fn doorbells(&self) -> Vec<(u8, u64, u64)> {
        lock(&self.state).rcfw.doorbells.clone()
    }

    /// Copy `bytes` to bus address `addr` (as the device would by DMA).
    pub(crate) fn dma_write(&self, addr: u64, bytes: &[u8]) {
        lock(&self.state).write_dma(addr, bytes)
    }

    /// Copy `len` bytes from bus address `addr`.
    pub(crate) fn dma_read(&self, addr: u64, len: usize) -> Vec<u8> {
        lock(&self.state).read_dma(addr, len)
    }

    /// Interrupt the first sleep that would pass `at` on the function's clock (as the runner's
    /// watch does at a scenario's timeout).
    pub(crate) fn interrupt_at(&self, at: Duration) {
        lock(&self.state).limit = Some(at);
    }

    /// Number of function-level resets.
    pub(crate) fn resets(&self) -> u32 {
        lock(&self.state).resets
    }
}

impl Clock for FakeFunction {
    fn now(&self) -> Duration {
        lock(&self.state).now
    }
    fn sleep(&self, d: Duration) -> Result<(), Interrupted> {
        let mut s = lock(&self.state);
        if let Some(limit) = s.limit
            && s.now.saturating_add(d) > limit
        {
            s.now = limit;
            s.deliver_due();
            s.limit = None;
            return Err(Interrupted { reason: format!("the test's limit at {limit:?}") });
        }
        s.now += d;
        s.deliver_due();
        Ok(())
    }
}

impl PciFunction for FakeFunction {
    fn bus(&self) -> &str {
        "0000:01:00.0"
    }
    fn config_read(&self, offset: u16, data: &mut [u8]) -> Result<(), PciError> {
        let s = lock(&self.state);
        data.copy_from_slice(&s.config[offset as usize..offset as usize + data.len()]);
        Ok(())
    }
    fn config_write(&self, offset: u16, data: &[u8]) -> Result<(), PciError> {
        let mut s = lock(&self.state);
        s.config[offset as usize..offset as usize + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn bar_read32(&self, bar: u8, offset: u64) -> u32 {
        let s = lock(&self.state);
        match (bar, offset) {
            (0, 0x520) => s.fw_status,
            (0, 0x1000..0x4000) => {
                let k = (offset / 0x1000 - 1) as usize;
                s.grc.get(&(s.grc_base[k] + (offset as u32 & 0xffc))).copied().unwrap_or(0)
            }
            _ => 0,
        }
    }
    fn bar_write32(&self, bar: u8, offset: u64, value: u32) {
        let mut s = lock(&self.state);
        match (bar, offset) {
            (0, 0..0x80) => s.window[offset as usize..offset as usize + 4].copy_from_slice(&value.to_le_bytes()),
            (0, 0x100) if value == 1 => s.trigger(),
            (0, 0x600..0x610) => s.rcfw_write(offset, value),
            (0, 0x700) if value == 1 => s.rcfw_trigger(),
            (0, 0x400 | 0x404 | 0x408) => {
                let k = ((offset - 0x400) / 4) as usize;
                s.grc_base[k] = value;
            }
            _ => {}
        }
    }
    fn bar_write64(&self, bar: u8, offset: u64, value: u64) {
        lock(&self.state).rcfw.doorbells.push((bar, offset, value));
    }
    fn alloc_dma(&self, len: usize) -> Result<DmaBuffer, PciError> {
        let len = len.max(1).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let mut mem = vec![0u8; len].into_boxed_slice();
        let ptr = NonNull::new(mem.as_mut_ptr()).unwrap();
        let mut s = lock(&self.state);
        let lease = s.iovas.lease(len).map_err(|e| PciError::Dma { len, reason: e.to_string() })?;
        let iova = lease.iova();
        s.dma.insert(iova, DmaRegion { ptr: ptr.as_ptr() as usize, len });
        drop(s);
        let owner = FakeDmaOwner { _mem: mem, iova, state: self.state.clone(), _lease: lease };
        // SAFETY: `ptr` points at the `len` bytes of `mem`, which the owner keeps alive (moving
        // a Box does not move its heap allocation); they are only accessed by raw copies.
        Ok(unsafe { DmaBuffer::from_raw(ptr, len, iova, Box::new(owner)) })
    }
    fn map_dma(&self, memory: bnxt_pci::dma::HostPages) -> Result<DmaBuffer, PciError> {
        let len = memory.capacity();
        let ptr = memory.as_ptr();
        let mut s = lock(&self.state);
        let lease = s.iovas.lease(len).map_err(|e| PciError::Dma { len, reason: e.to_string() })?;
        let iova = lease.iova();
        s.dma.insert(iova, DmaRegion { ptr: ptr.as_ptr() as usize, len });
        drop(s);
        let owner = FakePagesOwner { _mem: memory, iova, state: self.state.clone(), _lease: lease };
        // SAFETY: `ptr` points at the `len` bytes `memory` owns, which the owner keeps alive (a
        // moved HostPages keeps its allocation); they are only accessed by raw copies.
        Ok(unsafe { DmaBuffer::from_raw(ptr, len, iova, Box::new(owner)) })
    }
    fn reset(&self) -> Result<(), PciError> {
        let mut s = lock(&self.state);
        s.resets += 1;
        s.config[0x04] = 0;
        s.config[0x05] = 0;
        s.config[EXP_CAP as usize + 8] = bnxt_pci::regs::EXP_DEVCTL_RELAX_EN as u8;
        s.config[EXP_CAP as usize + 9] = 0;
        s.pending.clear();
        s.rcfw.reset();
        Ok(())
    }
    fn clock(&self) -> &dyn Clock {
        self
    }
}

/// A response to `request` (the raw request bytes) carrying `resp` with `error_code`, its header
/// filled in as firmware fills it (req_type, seq_id, resp_len, valid byte last).
pub(crate) fn respond<R: Request>(request: &[u8], mut resp: R::Response, error_code: u16) -> Vec<u8> {
    let bytes = resp.as_mut_bytes();
    let len = bytes.len();
    let (hdr, _) = Output::mut_from_prefix(bytes).unwrap();
    hdr.error_code = error_code.into();
    hdr.req_type = R::REQ_TYPE.into();
    hdr.seq_id = u16::from_le_bytes([request[4], request[5]]).into();
    hdr.resp_len = (len as u16).into();
    let last = bytes.len() - 1;
    bytes[last] = 1;
    bytes.to_vec()
}

/// The req_type of raw request bytes.
pub(crate) fn req_type(request: &[u8]) -> u16 {
    u16::from_le_bytes([request[0], request[1]])
}

/// Parse raw bytes as `T` (zero-extended if they are shorter).
pub(crate) fn parse<T: FromBytes>(bytes: &[u8]) -> T {
    let mut buf = vec![0u8; size_of::<T>()];
    let n = buf.len().min(bytes.len());
    buf[..n].copy_from_slice(&bytes[..n]);
    T::read_from_bytes(&buf).unwrap()
}
