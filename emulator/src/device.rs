//! One BCM57608 physical function: config space, the three BARs, the HWRM firmware and the RoCE
//! engine, as a state machine without I/O.
//!
//! Inputs: config reads and writes, BAR loads and stores (4 or 8 bytes), frames from the wire
//! ([`Device::receive_wire_frame`]) and the passage of time ([`Device::advance`]), with host memory
//! passed in as the function's DMA view. Outputs: DMA through that view, frames to the wire
//! ([`Device::drain_wire_frames`]), MSI-X vectors ([`Device::take_interrupts`]), events
//! ([`Device::drain_events`]) and the time of the next work ([`Device::next_deadline`]).
//! Nothing here reads a clock: every input carries its time.
//!
//! The command register gates the BARs: with memory space disabled, loads read all-ones and
//! stores are dropped (each counted and recorded). Bus mastering gates DMA, which the executor
//! enforces by handing [`Device::advance`] a view that refuses DMA when
//! [`Device::bus_master`] is off.

use std::sync::Arc;
use std::time::Duration;

use crate::armed::{Action, ArmError, ArmedFault, Target};
use crate::config_space::{BAR_SIZES, ConfigSpace, serial_from_mac};
use crate::events::{AccessKind, Event, EventKind, Recorder};
use crate::faults::FaultPlan;
use crate::firmware::Firmware;
use crate::firmware::context_mem::ContextLimits;
use crate::firmware::faults::FaultInjector;
use crate::firmware::identity::NicIdentity;
use crate::firmware::options::FirmwareOptions;
use crate::host_memory::HostMemory;
use crate::l2::L2Engine;
use crate::net::pool::FramePool;
use crate::net::sealed::WireFrame;
use crate::regs::bar0::{Bar0, Bar0Effect};
use crate::regs::msix::MsixTable;
use crate::regs::unimplemented::{Unimplemented, UnimplementedHit};
use crate::regs::{Loud, doorbells};
use crate::roce::{Env, RoceCounters, RoceEngine};

/// Why the port passes no frame.
#[derive(Debug, Clone, Copy)]
enum Blocked {
    /// The peer is gone (`ctl link down`).
    NoPeer,
    /// The driver forced the link down.
    ForcedDown,
}

/// One NIC.
#[derive(Debug, Clone)]
pub struct Device {
    id: NicIdentity,
    config: ConfigSpace,
    bar0: Bar0,
    msix: MsixTable,
    firmware: Firmware,
    roce: RoceEngine,
    l2: L2Engine,
    unimplemented: Unimplemented,
    rec: Recorder,
    memory_disabled_accesses: u64,
    /// MSI-X vectors raised and not yet taken by the executor.
    interrupts: Vec<u16>,
    /// The id of the next fault armed.
    next_fault_id: u64,
    /// Frames dropped at the port because it had no peer.
    no_peer_drops: u64,
    /// Frames dropped at the port because the driver forced its link down.
    forced_down_drops: u64,
    /// When async events queued outside the firmware's own jobs (the peer coming or going, a
    /// firmware reset's RESET_NOTIFY) fall due for the L2 engine: at once. Without it they
    /// waited for the device's next other work (a statistics tick, the next request), which a
    /// driver with no ring statistics never gives.
    notices_due: Option<Duration>,
}

impl Device {
    /// NIC number `nic` of a machine, with MAC `mac` on PCI bus `bus`, applying the firmware
    /// faults of `faults` that name it.
    pub fn new(nic: usize, mac: [u8; 6], bus: u8, faults: Arc<FaultPlan>) -> Device {
        let id = NicIdentity { mac, serial: serial_from_mac(mac), bus };
        Device {
            id,
            config: ConfigSpace::new(id.serial),
            bar0: Bar0::new(),
            msix: MsixTable::new(),
            firmware: Firmware::new(id, FaultInjector::new(nic, faults.clone())),
            roce: RoceEngine::new(mac).with_command_faults(nic, faults),
            l2: L2Engine::new(),
            unimplemented: Unimplemented::default(),
            rec: Recorder::new(nic),
            memory_disabled_accesses: 0,
            interrupts: Vec::new(),
            next_fault_id: 1,
            no_peer_drops: 0,
            forced_down_drops: 0,
            notices_due: None,
        }
    }

    /// The same NIC, its firmware advertising `opts` (firmware resource limits, fast-destroy
    /// QPs; see [`crate::firmware::options`]).
    pub fn with_firmware_options(mut self, opts: FirmwareOptions) -> Device {
        self.firmware = self.firmware.with_options(opts);
        self
    }

    /// Read config space.
    pub fn config_read(&self, offset: u16, data: &mut [u8]) {
        self.config.read(offset, data);
    }

    /// Write config space at time `now`.
    pub fn config_write(&mut self, now: Duration, offset: u16, data: &[u8]) {
        let fx = self.config.write(offset, data);
        if fx.command_changed {
            let (memory, bus_master) = (self.config.memory_enabled(), self.config.bus_master());
            self.rec.record(now, EventKind::CommandChanged { memory, bus_master });
        }
        if fx.relaxed_ordering_changed {
            self.rec.record(now, EventKind::RelaxedOrderingChanged { enabled: self.config.relaxed_ordering() });
        }
        if fx.flr {
            self.function_level_reset(now);
        }
    }

    /// Function-level reset: config space, registers and firmware state back to their reset
    /// values; queued responses are dropped.
    fn function_level_reset(&mut self, now: Duration) {
        self.rec.record(now, EventKind::FunctionLevelReset);
        self.config.reset();
        self.bar0 = Bar0::new();
        self.msix = MsixTable::new();
        self.firmware.reset();
        self.bar0.set_fw_status(self.firmware.status());
        self.roce.reset();
        self.l2.reset();
    }

    /// Arm a fault on `target` from now on (see [`crate::armed`]); its id.
    pub fn arm_fault(
        &mut self,
        target: Target,
        nth: Option<u32>,
        count: Option<u32>,
        action: Action,
    ) -> Result<u64, ArmError> {
        let id = self.next_fault_id;
        let seen = match target {
            Target::Hwrm(req_type) => self.firmware.faults().seen(req_type),
            Target::Roce(opcode) => self.roce.command_faults().seen(opcode),
        };
        let fault = ArmedFault::new(id, target, seen, nth, count, action)?;
        match target {
            Target::Hwrm(_) => self.firmware.faults_mut().arm(fault),
            Target::Roce(_) => self.roce.command_faults_mut().arm(fault),
        }
        self.next_fault_id += 1;
        Ok(id)
    }

    /// The port's peer comes (`true`) or goes: with no peer the link is down (LINK_STATUS_CHANGE
    /// to a driver that asked for it, PORT_PHY_QCFG reporting no link) and no frame crosses the
    /// port either way (each one dropped is counted). Whether the link state changed.
    pub fn set_peer(&mut self, now: Duration, present: bool) -> bool {
        self.rec.record(now, EventKind::PeerChanged { present });
        let changed = self.firmware.set_peer(present);
        self.notices_queued(now);
        changed
    }

    /// Async events the firmware queued outside its jobs are due at `now`.
    fn notices_queued(&mut self, now: Duration) {
        if self.firmware.has_notices() {
            self.notices_due = Some(self.notices_due.map_or(now, |t| t.min(now)));
        }
    }

    /// Why no frame crosses the port, if none does: its peer is gone, or the driver forced its
    /// link down (PORT_PHY_CFG `FLAGS_FORCE_LINK_DWN`, which bnxt_en sends at close:
    /// bnxt.c `bnxt_hwrm_shutdown_link`; PORT_PHY_QCFG then reports no link, and a port without
    /// link passes nothing either way).
    fn link_blocked(&self) -> Option<Blocked> {
        let phy = &self.firmware.state().l2.phy;
        if phy.peer_down {
            Some(Blocked::NoPeer)
        } else if phy.forced_down {
            Some(Blocked::ForcedDown)
        } else {
            None
        }
    }

    /// Count `n` frames dropped for `why`.
    fn count_blocked(&mut self, why: Blocked, n: u64) {
        match why {
            Blocked::NoPeer => self.no_peer_drops += n,
            Blocked::ForcedDown => self.forced_down_drops += n,
        }
    }

    /// Reset the firmware at `now` (see [`crate::firmware::reset`]); false while a reset is
    /// already under way.
    pub fn fw_reset(&mut self, now: Duration, kind: crate::firmware::reset::ResetKind) -> bool {
        let started = self.firmware.fw_reset(now, kind, &mut self.rec);
        self.bar0.set_fw_status(self.firmware.status());
        self.notices_queued(now);
        started
    }

    /// Frames dropped at the port because it had no peer.
    pub fn frames_dropped_no_peer(&self) -> u64 {
        self.no_peer_drops
    }

    /// Frames dropped at the port because the driver forced its link down.
    pub fn frames_dropped_forced_down(&self) -> u64 {
        self.forced_down_drops
    }

    /// Clear the armed fault `id`; whether there was one.
    pub fn clear_fault(&mut self, id: u64) -> bool {
        self.firmware.faults_mut().armed_mut().clear(id) || self.roce.command_faults_mut().armed_mut().clear(id)
    }

    /// Clear every armed fault; how many there were.
    pub fn clear_faults(&mut self) -> usize {
        self.firmware.faults_mut().armed_mut().clear_all() + self.roce.command_faults_mut().armed_mut().clear_all()
    }

    /// The armed faults, by id.
    pub fn armed_faults(&self) -> Vec<ArmedFault> {
        let mut all: Vec<ArmedFault> = self.firmware.faults().armed().list().to_vec();
        all.extend_from_slice(self.roce.command_faults().armed().list());
        all.sort_by_key(|f| f.id);
        all
    }

    /// Whether `bar`+`offset` with `len` bytes is an access the device claims; loud if not.
    #[inline]
    fn claims(&mut self, now: Duration, bar: u8, offset: u64, len: usize, access: AccessKind, value: u64) -> bool {
        let size = BAR_SIZES.iter().find(|(b, _)| *b == bar).map(|&(_, s)| s);
        let what = match size {
            None => "no such BAR",
            Some(_) if !matches!(len, 4 | 8) => "access width other than 4 or 8 bytes",
            Some(size) if offset.checked_add(len as u64).is_none_or(|end| end > size) => "beyond the end of the BAR",
            Some(_) => {
                if self.config.memory_enabled() {
                    return true;
                }
                self.memory_disabled_accesses += 1;
                self.rec.record(now, EventKind::MemoryDisabledAccess { bar, offset, access });
                return false;
            }
        };
        self.unimplemented.hit(&mut self.rec, now, bar, offset, access, value, what);
        false
    }

    /// Load `data.len()` (4 or 8) bytes from BAR `bar` at `offset`, at time `now`.
    #[inline]
    pub fn bar_read(&mut self, now: Duration, bar: u8, offset: u64, data: &mut [u8]) {
        if !self.claims(now, bar, offset, data.len(), AccessKind::Read, 0) {
            data.fill(0xff);
            return;
        }
        if bar == 0 {
            let health = self.firmware.options().error_recovery;
            let fw = &self.firmware;
            self.bar0.set_health(health.then(|| (fw.heartbeat(now), fw.restarts())));
        }
        let mut loud = Loud { unimplemented: &mut self.unimplemented, rec: &mut self.rec, now };
        for (i, chunk) in data.chunks_mut(4).enumerate() {
            let at = offset + 4 * i as u64;
            let value = match bar {
                0 => self.bar0.read32(at, &mut loud),
                2 => doorbells::read32(at, &mut loud),
                _ => self.msix.read32(at, &mut loud),
            };
            chunk.copy_from_slice(&value.to_le_bytes());
        }
    }

    /// Store `data` (4 or 8 bytes) to BAR `bar` at `offset`, at time `now`.
    #[inline]
    pub fn bar_write(&mut self, now: Duration, bar: u8, offset: u64, data: &[u8]) {
        let mut wide = [0u8; 8];
        let n = data.len().min(8);
        wide[..n].copy_from_slice(&data[..n]);
        let value = u64::from_le_bytes(wide);
        if !self.claims(now, bar, offset, data.len(), AccessKind::Write, value) {
            return;
        }
        let mut loud = Loud { unimplemented: &mut self.unimplemented, rec: &mut self.rec, now };
        if bar == 2 {
            // The path field routes a doorbell: L2-path stores (bnxt_en's rings) go to the L2
            // engine, the rest to the RoCE engine as before.
            if data.len() == 8 && crate::l2::doorbell::is_l2(value) {
                self.l2.doorbell(now, offset, value);
            } else {
                self.roce.doorbell(now, offset, data.len(), value, &mut self.rec);
            }
            return;
        }
        for (i, chunk) in data.chunks(4).enumerate() {
            let at = offset + 4 * i as u64;
            let v = u32::from_le_bytes(chunk.try_into().expect("4-byte chunk"));
            if bar == 0 {
                match self.bar0.write32(at, v, &mut loud) {
                    Bar0Effect::HwrmSubmit(window) => self.firmware.submit(now, window),
                    Bar0Effect::RcfwTrigger(mailbox) => self.roce.trigger(now, mailbox),
                    Bar0Effect::None => {}
                }
            } else {
                self.msix.write32(at, v, &mut loud);
            }
        }
    }

    /// Run the work due at or before `now`, with `mem` as the function's DMA view.
    #[inline]
    pub fn advance(&mut self, now: Duration, mem: &dyn HostMemory) {
        if self.firmware.next_deadline().is_some_and(|t| t <= now) {
            // Read only by the requests the firmware answers (PORT_QSTATS and the like), which
            // run only when a job is due.
            self.firmware.set_port_counters(self.l2.port_counters());
            self.firmware.set_ring_stats(self.l2.ring_stats(self.firmware.state()));
            self.firmware.advance(now, mem, &mut self.rec);
            if self.firmware.take_restarted() {
                // The restarted firmware knows no RoCE channel and no L2 rings.
                self.roce.reset();
                self.l2.reset();
                self.bar0.set_fw_status(self.firmware.status());
            }
        }
        self.notices_due = None;
        let notices = self.firmware.take_notices();
        let mut l2_env = crate::l2::Env { mem, fw: self.firmware.state(), rec: &mut self.rec };
        self.l2.advance(now, notices, &mut l2_env);
        let mut env = Env { mem, fw: self.firmware.state(), rec: &mut self.rec };
        self.roce.advance(now, &mut env);
        self.move_interrupts();
    }

    /// Hand a frame that is not RoCE v2 to the L2 engine (the RoCE engine sees every frame, as
    /// it did before the L2 path existed, and counts what is not its own).
    fn receive_l2(&mut self, now: Duration, frame: &[u8], mem: &dyn HostMemory) {
        if crate::l2::frame::is_roce_v2(frame) {
            return;
        }
        let mut env = crate::l2::Env { mem, fw: self.firmware.state(), rec: &mut self.rec };
        self.l2.receive(now, frame, &mut env);
    }

    /// A frame from the wire, sealed or plain as the switch delivered it (see
    /// [`crate::net::sealed`]), arrives at `now`.
    #[inline]
    pub fn receive_wire_frame(&mut self, now: Duration, frame: &WireFrame, mem: &dyn HostMemory) {
        if let Some(why) = self.link_blocked() {
            self.count_blocked(why, 1);
            return;
        }
        if !frame.is_sealed() {
            self.receive_l2(now, frame.bytes(), mem);
        }
        let mut env = Env { mem, fw: self.firmware.state(), rec: &mut self.rec };
        self.roce.receive_wire(now, frame, &mut env);
        self.move_interrupts();
    }

    /// Move the frames the device sent since the last call to the end of `out`, in order, with
    /// the frames the transport built still sealed (the executor keeps one list for every call).
    #[inline]
    pub fn drain_wire_frames(&mut self, out: &mut Vec<WireFrame>) {
        let before = out.len();
        self.l2.drain_wire_frames(out);
        self.roce.drain_wire_frames(out);
        if let Some(why) = self.link_blocked() {
            self.count_blocked(why, (out.len() - before) as u64);
            out.truncate(before);
        }
    }

    /// The buffers the device builds frames in: the executor gives delivered frames' buffers
    /// back here (see [`RoceEngine::frame_pool`]).
    #[inline]
    pub fn frame_pool(&mut self) -> &mut FramePool {
        self.roce.frame_pool()
    }

    #[inline]
    fn move_interrupts(&mut self) {
        self.l2.drain_interrupts(&mut self.interrupts);
        self.roce.drain_interrupts(&mut self.interrupts);
    }

    /// When the device next has work.
    #[inline]
    pub fn next_deadline(&self) -> Option<Duration> {
        let fw = self.firmware.next_deadline();
        let roce = self.roce.next_deadline();
        let l2 = earliest(self.notices_due, self.l2.next_deadline(self.firmware.state()));
        earliest(earliest(fw, roce), l2)
    }

    /// Whether the device has work due at or before `now`: `next_deadline() <= now`, asked
    /// without computing the whole minimum (a doorbell's own queued input answers at once).
    #[inline]
    pub fn has_work_due(&self, now: Duration) -> bool {
        let due = |t: Option<Duration>| t.is_some_and(|t| t <= now);
        self.roce.has_input_due(now)
            || due(self.notices_due)
            || due(self.roce.next_deadline())
            || due(self.firmware.next_deadline())
            || due(self.l2.next_deadline(self.firmware.state()))
    }

    /// The L2 engine.
    pub fn l2(&self) -> &L2Engine {
        &self.l2
    }

    /// The RoCE engine.
    pub fn roce(&self) -> &RoceEngine {
        &self.roce
    }

    /// The RoCE engine's counters.
    pub fn roce_counters(&self) -> &RoceCounters {
        self.roce.counters()
    }

    /// Record per-doorbell, per-CQE and per-frame events or not (on by default).
    pub fn set_data_path_events(&mut self, on: bool) {
        self.roce.set_data_path_events(on);
        self.l2.set_data_path_events(on);
    }

    /// The vectors raised since the last call, in order.
    pub fn take_interrupts(&mut self) -> Vec<u16> {
        std::mem::take(&mut self.interrupts)
    }

    /// Move the events recorded so far to the end of `out`.
    #[inline]
    pub fn drain_events(&mut self, out: &mut Vec<Event>) {
        self.rec.drain_into(out);
    }

    /// Identity (MAC, serial, bus).
    pub fn identity(&self) -> &NicIdentity {
        &self.id
    }

    /// Config space.
    pub fn config(&self) -> &ConfigSpace {
        &self.config
    }

    /// Whether bus mastering (DMA) is enabled.
    #[inline]
    pub fn bus_master(&self) -> bool {
        self.config.bus_master()
    }

    /// The firmware.
    pub fn firmware(&self) -> &Firmware {
        &self.firmware
    }

    /// The MSI-X table.
    pub fn msix(&self) -> &MsixTable {
        &self.msix
    }

    /// BAR0 registers.
    pub fn bar0(&self) -> &Bar0 {
        &self.bar0
    }

    /// The objects the function holds in the firmware and the RoCE engine.
    pub fn held(&self) -> crate::held::Held {
        crate::held::Held::of(self.firmware.state(), self.roce.state())
    }

    /// What the configured context memory allows.
    pub fn limits(&self) -> ContextLimits {
        self.firmware.state().context.limits()
    }

    /// Unimplemented register accesses, by offset.
    pub fn unimplemented_hits(&self) -> Vec<UnimplementedHit> {
        self.unimplemented.hits()
    }

    /// Everything the model does not implement that this NIC was asked for: register accesses,
    /// unsupported HWRM requests, and features requests asked for.
    pub fn unimplemented_total(&self) -> u64 {
        let requests: u64 = self.firmware.unsupported().iter().map(|(_, n)| n).sum();
        self.unimplemented.total()
            + requests
            + self.firmware.counters().unimplemented_features
            + self.roce.counters().unimplemented_total()
            + self.l2.counters().unimplemented_total()
            + self.firmware.state().l2.unimplemented
    }

    /// BAR accesses dropped because memory space was disabled.
    pub fn memory_disabled_accesses(&self) -> u64 {
        self.memory_disabled_accesses
    }
}

/// The earlier of two deadlines, either of which may be absent.
#[inline]
pub(crate) fn earliest(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}
