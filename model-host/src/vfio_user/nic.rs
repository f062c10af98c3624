//! The NIC a `bnxt-model serve` process serves: a one-NIC [`World`] run on the executor's clock,
//! with the client's DMA regions and interrupt eventfds.
//!
//! Time: the executor passes the time since it started with every input; the world is advanced
//! to it first, so firmware work due by then runs before the input is applied (the world's own
//! time restarts at 0 when [`ServedNic::restart`] replaces it).
//!
//! The segment: a server that joined a hub links its world's segment to it through an external
//! switch port ([`World::add_external_port`]) and an [`Uplink`], whose fault stage carries out
//! the wire plan on the frames the NIC sends; the world itself runs without wire faults, so
//! frames from the hub (faulted by their sender's server already) are not faulted twice.

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::time::Duration;

use bnxt_vfio_user::linux::{PCI_MSIX_IRQ_INDEX, errno};
use bnxt_vfio_user::payload::{DmaMap, DmaUnmap};

use super::capture::Capture;
use super::control::{Restart, State};
use super::dma::DmaTable;
use super::irqs::IrqTable;
use super::regions::{self, RegionKind};
use super::uplink::{Uplink, stage_seed};
use super::{Refusal, refuse};
use crate::world::{World, WorldConfig};
use bnxt_model::armed::{Action, ArmError, ArmedFault, Target};
use bnxt_model::config_space::{DEVCTL_BCR_FLR, EXP_CAP, EXP_DEVCTL};
use bnxt_model::events::{Event, EventKind};
use bnxt_model::faults::{FaultPlan, WirePlan, WirePlanError};
use bnxt_model::firmware::options::FirmwareOptions;
use bnxt_model::net::switch::PortId;

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
    /// Whether the server joined a segment outside the process.
    segment: bool,
    /// The link to that segment (at the world's external port), when it joined one.
    uplink: Option<Uplink>,
    /// The wire plan and the seed of its draws, for the uplink (again after each restart).
    wire: WirePlan,
    wire_seed: u64,
    /// The run's capture of the frames the NIC sends, when the last restart asked for one.
    capture: Option<Capture>,
    /// Stores the client made to the doorbell BAR, restarts included (for tracers of the guest,
    /// which see the same stores: ci/guest-test.sh --trace compares the counts).
    doorbell_stores: u64,
    /// The card was yanked (`pcie surprise-removal`): reads return all-ones, writes are
    /// dropped, the NIC neither runs nor does DMA. A restart brings a new card.
    removed: bool,
}

impl ServedNic {
    /// A NIC with MAC `mac`, just powered on, with `seed` and `faults` and the firmware's
    /// defaults; refused if the plan's wire faults cannot apply to one NIC (a probability out of
    /// range, a rule naming another NIC than 0).
    pub fn new(mac: [u8; 6], seed: u64, faults: FaultPlan) -> Result<ServedNic, WirePlanError> {
        ServedNic::with_firmware(mac, seed, faults, FirmwareOptions::default())
    }

    /// [`ServedNic::new`] with a firmware that advertises `firmware` beyond its defaults (the
    /// error recovery capability, firmware resource limits, ...).
    pub fn with_firmware(
        mac: [u8; 6],
        seed: u64,
        mut faults: FaultPlan,
        firmware: FirmwareOptions,
    ) -> Result<ServedNic, WirePlanError> {
        let wire = std::mem::take(&mut faults.wire);
        check_wire_plan(&wire)?;
        Ok(ServedNic {
            world: World::with_macs(WorldConfig { nics: 1, seed, faults, firmware }, &[mac]),
            mac,
            epoch: Duration::ZERO,
            dma: DmaTable::new(),
            stale: BTreeSet::new(),
            irqs: IrqTable::new(),
            events: Vec::new(),
            segment: false,
            uplink: None,
            wire,
            wire_seed: stage_seed(seed, 0),
            capture: None,
            doorbell_stores: 0,
            removed: false,
        })
    }

    /// Run the NIC's work due by `now` (time since the executor started) and collect what it
    /// did: events, and interrupts, which are signalled to the client's eventfds.
    pub fn advance_to(&mut self, now: Duration) {
        if self.removed {
            return;
        }
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

    /// When the NIC next has work (or a frame a wire fault delayed is due), in executor time.
    pub fn next_deadline(&self) -> Option<Duration> {
        if self.removed {
            return None;
        }
        let world = self.world.next_deadline().map(|d| d + self.epoch);
        match (world, self.uplink.as_ref().and_then(Uplink::next_deadline)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Events since the last call, oldest first.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// The world, for inspection.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// Stores the client has made to the doorbell BAR (BAR2) since the NIC was made.
    pub fn doorbell_stores(&self) -> u64 {
        self.doorbell_stores
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
        if self.removed {
            // A read of a device that is gone completes with all-ones (PCIe: an unsupported
            // request, which the root port turns into all-ones for the CPU).
            data.fill(0xff);
            return Ok(());
        }
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
        if self.removed {
            return Ok(());
        }
        self.advance_to(now);
        match kind {
            RegionKind::Config => self.world.config_write(NIC, offset as u16, data),
            RegionKind::Bar(bar) => {
                if bar == bnxt_hsi::pci::BAR_DOORBELLS {
                    self.doorbell_stores += 1;
                }
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
        if self.removed {
            return;
        }
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
    /// restart, as a NIC of a new machine would. With `capture`, the frames the new NIC sends to
    /// the segment are recorded into that file (the previous capture, if any, is finished).
    ///
    /// Refused, with the NIC left as it was, when the wire plan cannot apply to one NIC, or when
    /// a capture is asked for without a file or a file comes without one being asked for.
    pub fn restart(&mut self, now: Duration, restart: Restart, capture: Option<OwnedFd>) -> Result<(), Refusal> {
        let Restart { seed, mut faults, nic, capture: wanted, firmware } = restart;
        let wire = std::mem::take(&mut faults.wire);
        check_wire_plan(&wire).map_err(|e| refuse(errno::EINVAL, format!("the wire plan: {e}")))?;
        let capture = match (wanted, capture) {
            (true, Some(fd)) => {
                Some(Capture::new(fd).map_err(|e| refuse(errno::EIO, format!("cannot write the capture file: {e}")))?)
            }
            (false, None) => None,
            (true, None) => return Err(refuse(errno::EINVAL, "a capture was asked for without a file descriptor")),
            (false, Some(_)) => {
                return Err(refuse(errno::EINVAL, "a file descriptor came without a capture being asked for"));
            }
        };
        self.advance_to(now);
        self.finish_capture();
        self.world = World::with_macs(WorldConfig { nics: 1, seed, faults, firmware }, &[self.mac]);
        self.epoch = now;
        self.stale.extend(self.dma.mappings().map(|m| m.iova));
        self.wire = wire;
        self.wire_seed = stage_seed(seed, nic);
        self.capture = capture;
        self.uplink = None;
        self.removed = false;
        if self.segment {
            self.link();
        }
        Ok(())
    }

    /// Connect the NIC's segment to one outside the process (a segment hub): from now on frames
    /// the NIC sends that the segment forwards out are taken with [`ServedNic::take_outgoing`],
    /// and frames from outside enter with [`ServedNic::incoming`].
    pub fn attach_segment(&mut self) {
        self.segment = true;
        if self.uplink.is_none() {
            self.link();
        }
    }

    /// A new external port of the world, and the uplink from it.
    fn link(&mut self) {
        let port = self.world.add_external_port();
        // The plan was checked for one NIC when it was taken; this cannot fail.
        match Uplink::new(port, &self.wire, self.wire_seed) {
            Ok(uplink) => self.uplink = Some(uplink),
            Err(e) => tracing::error!("the wire plan checked before is refused now: {e}"),
        }
    }

    /// A buffer to copy a frame from the segment outside into: one the NIC's world recycles
    /// (see [`bnxt_model::net::pool`]), holding old bytes to be replaced.
    pub fn frame_buffer(&mut self) -> Vec<u8> {
        self.world.frame_buffer()
    }

    /// Give back the buffer of a frame [`ServedNic::take_outgoing`] gave, once it is written
    /// out: the NIC builds a later frame in it.
    pub fn recycle_frame(&mut self, frame: Vec<u8>) {
        self.world.recycle_frame(frame);
    }

    /// A frame from the segment outside arrived at `now`.
    pub fn incoming(&mut self, now: Duration, frame: Vec<u8>) {
        if self.removed {
            return;
        }
        self.advance_to(now);
        if let Some(port) = self.uplink.as_ref().map(Uplink::port)
            && let Err(e) = self.world.send_external(port, frame)
        {
            tracing::warn!("a frame from the segment was refused: {e}");
        }
        self.collect();
    }

    /// Frames for the segment outside at `now` (executor time), in order: what the NIC's
    /// segment forwarded out, after the wire plan's faults, and frames those delayed that are
    /// due. Each is recorded in the run's capture, if one was asked for.
    pub fn take_outgoing(&mut self, now: Duration) -> Vec<Vec<u8>> {
        if self.removed {
            return Vec::new();
        }
        let Some(uplink) = self.uplink.as_mut() else { return Vec::new() };
        let frames = self.world.take_external_frames(uplink.port());
        let mut out = Vec::with_capacity(frames.len());
        uplink.outgoing(now, frames, &mut out);
        let at = self.world.now();
        for fault in uplink.take_fault_events() {
            self.events.push(Event { at, nic: NIC, kind: EventKind::WireFault { fault } });
        }
        if let Some(capture) = self.capture.as_mut() {
            for frame in &out {
                capture.record(frame);
            }
        }
        out
    }

    /// Finish the run's capture, if any (its file then holds every frame recorded).
    fn finish_capture(&mut self) {
        if let Some(capture) = self.capture.take() {
            match capture.finish() {
                Ok(frames) => tracing::debug!(frames, "capture finished"),
                Err(e) => tracing::warn!(error = %e, "the capture could not be finished"),
            }
        }
    }

    /// Arm a fault from now on (see [`bnxt_model::armed`]); its id.
    pub fn arm_fault(
        &mut self,
        now: Duration,
        target: Target,
        nth: Option<u32>,
        count: Option<u32>,
        action: Action,
    ) -> Result<u64, ArmError> {
        self.advance_to(now);
        self.world.arm_fault(NIC, target, nth, count, action)
    }

    /// Clear the armed fault `id` (every one when `None`); how many were cleared.
    pub fn clear_faults(&mut self, id: Option<u64>) -> usize {
        self.world.clear_faults(NIC, id)
    }

    /// The armed faults.
    pub fn armed_faults(&self) -> Vec<ArmedFault> {
        self.world.device(NIC).armed_faults()
    }

    /// The port's peer comes or goes at `now`; whether the link state changed.
    pub fn set_peer(&mut self, now: Duration, present: bool) -> bool {
        self.advance_to(now);
        let changed = self.world.set_peer(NIC, present);
        self.collect();
        changed
    }

    /// Reset the firmware at `now` (fatal: a firmware exception); false while a reset is under
    /// way.
    pub fn fw_reset(&mut self, now: Duration, fatal: bool) -> bool {
        use bnxt_model::firmware::reset::ResetKind;
        self.advance_to(now);
        let kind = if fatal { ResetKind::Fatal } else { ResetKind::Solicited };
        let started = self.world.fw_reset(NIC, kind);
        self.collect();
        started
    }

    /// The card is yanked at `now` (see [`ServedNic::removed`]).
    pub fn surprise_removal(&mut self, now: Duration) {
        self.advance_to(now);
        self.removed = true;
        self.events.push(Event { at: self.world.now(), nic: NIC, kind: EventKind::SurpriseRemoval });
        tracing::warn!("surprise removal: the card is gone (reads all-ones, no DMA, no interrupts)");
    }

    /// Whether the card was yanked (and no restart has brought a new one).
    pub fn removed(&self) -> bool {
        self.removed
    }

    /// `VFIO_USER_DMA_MAP`.
    pub fn dma_map(&mut self, req: &DmaMap, fd: Option<OwnedFd>) -> Result<(), Refusal> {
        let m = self.dma.map(req, fd)?;
        self.world.map_dma_with(NIC, m.iova, m.backing, m.access).map_err(|e| {
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
        self.finish_capture();
    }

    /// The NIC's state for `BNXT_RIG_STATE`; the run's capture, if any, is flushed first, so
    /// its file holds every frame counted.
    pub fn state(&mut self) -> State {
        if let Some(capture) = self.capture.as_mut() {
            capture.flush();
        }
        State {
            nic: self.world.nic_state(NIC),
            interrupt_eventfds: self.irqs.eventfds(),
            interrupts_signalled: self.irqs.signalled(),
            interrupts_dropped: self.irqs.dropped(),
            wire_faults: self.uplink.as_ref().map(|u| u.counters()).unwrap_or_default(),
            captured_frames: self.capture.as_ref().map(Capture::frames),
        }
    }
}

/// Whether `plan` can apply to the frames of a served NIC (its probabilities in range, its rules
/// naming NIC 0 or none).
pub fn check_wire_plan(plan: &WirePlan) -> Result<(), WirePlanError> {
    plan.stage(0, &[PortId(0)]).map(|_| ())
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
        let mut nic = ServedNic::new([2, 0, 0, 0, 0, 1], 1, FaultPlan::default()).unwrap();
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
        assert_eq!(nic.state().nic.mac, [2, 0, 0, 0, 0, 1]);
        assert!(nic.state().nic.bus_master);
        nic.reset(Duration::from_millis(1));
        assert!(!nic.state().nic.bus_master, "a device reset is a function-level reset");
    }

    #[test]
    fn stores_to_the_doorbell_bar_are_counted_whatever_they_are() {
        let mut nic = ServedNic::new([2, 0, 0, 0, 0, 1], 1, FaultPlan::default()).unwrap();
        nic.region_write(Duration::ZERO, 7, 4, &0x0006u16.to_le_bytes()).unwrap();
        nic.region_write(Duration::ZERO, 2, 0x1_0000, &u64::MAX.to_le_bytes()).unwrap();
        nic.region_write(Duration::ZERO, 2, 0x1_0000, &7u32.to_le_bytes()).unwrap();
        nic.region_write(Duration::ZERO, 0, 0x400, &0u32.to_le_bytes()).unwrap();
        nic.reset(Duration::from_millis(1));
        nic.region_write(Duration::from_millis(2), 2, 0, &0u64.to_le_bytes()).unwrap();
        assert_eq!(nic.doorbell_stores(), 3, "BAR2 stores, a reset between them; the BAR0 store is not one");
    }

    fn plan(wire: WirePlan) -> FaultPlan {
        FaultPlan { wire, ..FaultPlan::default() }
    }

    #[test]
    fn a_restart_the_nic_cannot_take_is_refused_and_changes_nothing() {
        let mut nic = ServedNic::new([2, 0, 0, 0, 0, 1], 1, FaultPlan::default()).unwrap();
        nic.attach_segment();
        nic.region_write(Duration::ZERO, 7, 4, &0x0006u16.to_le_bytes()).unwrap();
        let other_nic = WirePlan {
            rules: vec![bnxt_model::faults::WireRule {
                nic: Some(1),
                opcode: None,
                psn: None,
                dest_qp: None,
                nth: None,
                kind: bnxt_model::faults::WireFaultKind::Drop,
                delay: None,
            }],
            ..WirePlan::default()
        };
        let refused =
            |nic: &mut ServedNic, r: Restart, fd: Option<OwnedFd>| nic.restart(Duration::ZERO, r, fd).unwrap_err();
        let e = refused(&mut nic, Restart { faults: plan(other_nic), ..Restart::default() }, None);
        assert!(e.reason.contains("names NIC 1") && e.errno == errno::EINVAL, "{e:?}");
        let e = refused(
            &mut nic,
            Restart { faults: plan(WirePlan { drop: 2.0, ..WirePlan::default() }), ..Restart::default() },
            None,
        );
        assert!(e.reason.contains("wire plan"), "{e:?}");
        let e = refused(&mut nic, Restart { capture: true, ..Restart::default() }, None);
        assert!(e.reason.contains("without a file descriptor"), "{e:?}");
        let file = tempfile::tempfile().unwrap();
        let e = refused(&mut nic, Restart::default(), Some(OwnedFd::from(file)));
        assert!(e.reason.contains("without a capture"), "{e:?}");
        assert!(nic.state().nic.bus_master, "still the NIC it was");
        assert_eq!(nic.state().captured_frames, None);
        nic.restart(Duration::ZERO, Restart::default(), None).unwrap();
        assert!(!nic.state().nic.bus_master, "a fresh NIC");
    }

    #[test]
    fn frames_from_the_hub_do_not_meet_the_wire_plan_again() {
        let mut nic = ServedNic::new([2, 0, 0, 0, 0, 1], 1, FaultPlan::default()).unwrap();
        nic.attach_segment();
        let everything_lost =
            Restart { faults: plan(WirePlan { drop: 1.0, ..WirePlan::default() }), ..Restart::default() };
        nic.restart(Duration::from_millis(1), everything_lost, None).unwrap();
        let mut frame = vec![0xffu8; 6];
        frame.extend_from_slice(&[2, 0, 0, 0, 0, 9, 0x88, 0xb5]);
        frame.resize(60, 0);
        nic.incoming(Duration::from_millis(2), frame);
        nic.advance_to(Duration::from_millis(3));
        assert_eq!(nic.world().switch_stats().received, 1);
        assert_eq!(nic.world().wire_fault_counters().dropped, 0, "the world's segment has no faults");
        assert_eq!(nic.state().wire_faults.frames, 0, "the uplink's stage saw nothing leave");
        assert!(nic.take_outgoing(Duration::from_millis(3)).is_empty(), "not sent back to the hub");
    }
}
