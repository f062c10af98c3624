//! The NIC a `bnxt-model serve` process serves: a one-NIC [`World`] run on the executor's clock,
//! with the client's DMA regions and interrupt eventfds.
//!
//! Time: the executor passes the time since it started with every input; the world is advanced
//! to it first, so firmware work due by then runs before the input is applied (the world's own
//! time restarts at 0 when [`ServedNic::restart`] replaces it).

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::time::Duration;

use bnxt_vfio_user::linux::{PCI_MSIX_IRQ_INDEX, errno};
use bnxt_vfio_user::payload::{DmaMap, DmaUnmap};

use super::control::{Restart, State};
use super::dma::DmaTable;
use super::irqs::IrqTable;
use super::regions::{self, RegionKind};
use super::{Refusal, refuse};
use crate::config_space::{DEVCTL_BCR_FLR, EXP_CAP, EXP_DEVCTL};
use crate::events::Event;
use crate::faults::FaultPlan;
use crate::net::switch::PortId;
use crate::world::{World, WorldConfig};

/// The index of the served NIC in its world.
const NIC: usize = 0;

/// The served NIC and what its client lent it.
pub struct ServedNic {
    world: World,
    mac: [u8; 6],
    epoch: Duration,
    dma: DmaTable,
    /// Regions mapped before the last restart: in the table, not in the current world.
    stale: BTreeSet<u64>,
    irqs: IrqTable,
    events: Vec<Event>,
    /// The world's port to the segment outside the process, when the server joined one.
    external: Option<PortId>,
}

impl ServedNic {
    /// A NIC with MAC `mac`, just powered on, with `seed` and `faults`.
    pub fn new(mac: [u8; 6], seed: u64, faults: FaultPlan) -> ServedNic {
        ServedNic {
            world: World::with_macs(WorldConfig { nics: 1, seed, faults }, &[mac]),
            mac,
            epoch: Duration::ZERO,
            dma: DmaTable::new(),
            stale: BTreeSet::new(),
            irqs: IrqTable::new(),
            events: Vec::new(),
            external: None,
        }
    }

    /// Run the NIC's work due by `now` (time since the executor started) and collect what it
    /// did: events, and interrupts, which are signalled to the client's eventfds.
    pub fn advance_to(&mut self, now: Duration) {
        let target = now.saturating_sub(self.epoch);
        let current = self.world.now();
        if target > current {
            self.world.advance(target - current);
        }
        self.collect();
    }

    fn collect(&mut self) {
        self.events.extend(self.world.take_events());
        for vector in self.world.take_interrupts(NIC) {
            self.irqs.signal(PCI_MSIX_IRQ_INDEX, u32::from(vector));
        }
    }

    /// When the NIC next has work, in executor time.
    pub fn next_deadline(&self) -> Option<Duration> {
        self.world.next_deadline().map(|d| d + self.epoch)
    }

    /// Events since the last call, oldest first.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// The world, for inspection.
    pub fn world(&self) -> &World {
        &self.world
    }

    fn check(region: u32, offset: u64, len: usize) -> Result<RegionKind, Refusal> {
        let kind = regions::kind(region);
        let size = regions::size(region);
        let fits = offset.checked_add(len as u64).is_some_and(|end| end <= size);
        if kind == RegionKind::Absent || !fits || len == 0 {
            return Err(refuse(
                errno::EINVAL,
                format!("access of {len} bytes at 0x{offset:x} of region {region} (size 0x{size:x}) is outside it"),
            ));
        }
        Ok(kind)
    }

    /// Read `data.len()` bytes of region `region` at `offset`, at time `now`.
    pub fn region_read(&mut self, now: Duration, region: u32, offset: u64, data: &mut [u8]) -> Result<(), Refusal> {
        let kind = Self::check(region, offset, data.len())?;
        self.advance_to(now);
        match kind {
            RegionKind::Config => self.world.config_read(NIC, offset as u16, data),
            RegionKind::Bar(bar) => {
                for (at, chunk) in bar_chunks(offset, data.len()) {
                    let end = chunk.start + chunk.len;
                    self.world.bar_read(NIC, bar, at, &mut data[chunk.start..end]);
                }
            }
            RegionKind::Absent => unreachable!("checked"),
        }
        self.collect();
        Ok(())
    }

    /// Write `data` to region `region` at `offset`, at time `now`.
    pub fn region_write(&mut self, now: Duration, region: u32, offset: u64, data: &[u8]) -> Result<(), Refusal> {
        let kind = Self::check(region, offset, data.len())?;
        self.advance_to(now);
        match kind {
            RegionKind::Config => self.world.config_write(NIC, offset as u16, data),
            RegionKind::Bar(bar) => {
                for (at, chunk) in bar_chunks(offset, data.len()) {
                    self.world.bar_write(NIC, bar, at, &data[chunk.start..chunk.start + chunk.len]);
                }
            }
            RegionKind::Absent => unreachable!("checked"),
        }
        self.collect();
        Ok(())
    }

    /// `VFIO_USER_DEVICE_RESET`: a function-level reset (PCIe Device Control bit 15, as vfio-pci
    /// resets a function that supports FLR). DMA regions and eventfds stay: they are the
    /// client's, not the function's.
    pub fn reset(&mut self, now: Duration) {
        self.advance_to(now);
        let at = EXP_CAP + EXP_DEVCTL;
        let mut devctl = [0u8; 2];
        self.world.config_read(NIC, at, &mut devctl);
        let value = u16::from_le_bytes(devctl) | DEVCTL_BCR_FLR;
        self.world.config_write(NIC, at, &value.to_le_bytes());
        self.collect();
    }

    /// `BNXT_RIG_RESTART`: a new NIC with the same MAC, the given seed and faults, as a new
    /// machine would have. Regions the client mapped before stay the client's (it unmaps them
    /// when it lets go) but are not the new NIC's: it reaches only memory mapped after the
    /// restart, as a NIC of a new machine would.
    pub fn restart(&mut self, now: Duration, restart: Restart) {
        self.advance_to(now);
        self.world = World::with_macs(WorldConfig { nics: 1, seed: restart.seed, faults: restart.faults }, &[self.mac]);
        self.epoch = now;
        self.stale.extend(self.dma.mappings().map(|m| m.iova));
        if self.external.is_some() {
            self.external = Some(self.world.add_external_port());
        }
    }

    /// Connect the NIC's segment to one outside the process (a segment hub): from now on frames
    /// the NIC sends that the segment forwards out are taken with [`ServedNic::take_outgoing`],
    /// and frames from outside enter with [`ServedNic::incoming`].
    pub fn attach_segment(&mut self) {
        if self.external.is_none() {
            self.external = Some(self.world.add_external_port());
        }
    }

    /// A frame from the segment outside arrived at `now`.
    pub fn incoming(&mut self, now: Duration, frame: Vec<u8>) {
        self.advance_to(now);
        if let Some(port) = self.external
            && let Err(e) = self.world.send_external(port, frame)
        {
            tracing::warn!("a frame from the segment was refused: {e}");
        }
        self.collect();
    }

    /// Frames for the segment outside, in order.
    pub fn take_outgoing(&mut self) -> Vec<Vec<u8>> {
        self.external.map(|port| self.world.take_external_frames(port)).unwrap_or_default()
    }

    /// `VFIO_USER_DMA_MAP`.
    pub fn dma_map(&mut self, req: &DmaMap, fd: Option<OwnedFd>) -> Result<(), Refusal> {
        let m = self.dma.map(req, fd)?;
        self.world.map_dma(NIC, m.iova, m.backing).map_err(|e| {
            // The table checked overlaps already; the world refusing means the two disagree.
            let _ = self.dma.unmap(&DmaUnmap { argsz: 24, flags: 0, address: req.address, size: req.size });
            refuse(errno::EINVAL, format!("the model refused the mapping: {e}"))
        })
    }

    /// `VFIO_USER_DMA_UNMAP`: the regions are gone from the model before this returns (the
    /// specification: no reference may remain when the reply is sent).
    pub fn dma_unmap(&mut self, req: &DmaUnmap) -> Result<usize, Refusal> {
        let gone = self.dma.unmap(req)?;
        for m in &gone {
            if self.stale.remove(&m.iova) {
                continue;
            }
            if let Err(e) = self.world.unmap_dma(NIC, m.iova) {
                tracing::error!(iova = m.iova, error = %e, "the model had no mapping the server had");
            }
        }
        Ok(gone.len())
    }

    /// `VFIO_USER_DEVICE_SET_IRQS`.
    pub fn set_irqs(
        &mut self,
        flags: u32,
        index: u32,
        start: u32,
        count: u32,
        data: &[u8],
        fds: Vec<OwnedFd>,
    ) -> Result<(), Refusal> {
        self.irqs.set(flags, index, start, count, data, fds)
    }

    /// The client went away: its memory and eventfds are released; the device keeps its state
    /// (the specification's "Client Disconnection").
    pub fn client_gone(&mut self) {
        for m in self.dma.clear() {
            if !self.stale.remove(&m.iova) {
                let _ = self.world.unmap_dma(NIC, m.iova);
            }
        }
        self.irqs.clear();
    }

    /// The NIC's state for `BNXT_RIG_STATE`.
    pub fn state(&self) -> State {
        let s = self.world.nic_state(NIC);
        State {
            mac: s.mac,
            memory_enabled: s.memory_enabled,
            bus_master: s.bus_master,
            relaxed_ordering: s.relaxed_ordering,
            dma_mappings: s.dma_mappings,
            driver_registered: s.driver_registered,
            unsupported_requests: s.unsupported_requests,
            unimplemented: s.unimplemented,
            dma_errors: s.dma_errors,
            pending_responses: s.pending_responses,
            interrupt_eventfds: self.irqs.eventfds(),
            interrupts_signalled: self.irqs.signalled(),
            interrupts_dropped: self.irqs.dropped(),
        }
    }
}

/// A piece of a region access: where in the caller's buffer.
struct Chunk {
    start: usize,
    len: usize,
}

/// How an access of `len` bytes at `offset` reaches the model's registers: accesses of up to 8
/// bytes as they are (the model decodes 4- and 8-byte accesses and is loud about others, as
/// hardware would not claim them); longer, 4-byte aligned accesses as 4-byte loads or stores.
fn bar_chunks(offset: u64, len: usize) -> Vec<(u64, Chunk)> {
    if len <= 8 || !offset.is_multiple_of(4) || !len.is_multiple_of(4) {
        return vec![(offset, Chunk { start: 0, len })];
    }
    (0..len / 4).map(|i| (offset + 4 * i as u64, Chunk { start: 4 * i, len: 4 })).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_and_bar_accesses_reach_the_model_and_bounds_are_checked() {
        let mut nic = ServedNic::new([2, 0, 0, 0, 0, 1], 1, FaultPlan::default());
        let mut id = [0u8; 4];
        nic.region_read(Duration::ZERO, 7, 0, &mut id).unwrap();
        assert_eq!(u32::from_le_bytes(id), 0x1760_14e4);
        let mut big = [0u8; 4096];
        nic.region_read(Duration::ZERO, 7, 0, &mut big).unwrap();
        assert_eq!(big[..4], id);
        assert!(nic.region_read(Duration::ZERO, 7, 4095, &mut [0u8; 2]).is_err());
        assert!(nic.region_read(Duration::ZERO, 1, 0, &mut [0u8; 4]).is_err());
        assert!(nic.region_read(Duration::ZERO, 0, u64::MAX - 1, &mut [0u8; 4]).is_err());
        // Enable memory space, then a 16-byte BAR4 read is four 4-byte loads of the MSI-X table.
        nic.region_write(Duration::ZERO, 7, 4, &0x0006u16.to_le_bytes()).unwrap();
        let mut table = [0u8; 16];
        nic.region_read(Duration::ZERO, 4, 0, &mut table).unwrap();
        assert_eq!(u32::from_le_bytes(table[12..16].try_into().unwrap()), 1, "vector 0 starts masked");
        assert_eq!(nic.state().mac, [2, 0, 0, 0, 0, 1]);
        assert!(nic.state().bus_master);
        nic.reset(Duration::from_millis(1));
        assert!(!nic.state().bus_master, "a device reset is a function-level reset");
    }
}
