//! The in-process executor: a machine of model NICs sharing one virtual clock.
//!
//! Single-threaded and deterministic: nothing here reads the wall clock. Time passes only when
//! [`World::advance`] is called (the in-process target's clock does so when the driver sleeps),
//! and then every NIC's due work runs in time order (ties by NIC index).
//!
//! Each NIC has its own I/O address space ([`Iommu`]); the model reaches host memory only through
//! the mappings given with [`World::map_dma`], and only while the NIC's bus mastering is on. A
//! store that submits work (the HWRM trigger) has that work taken at once, at the current time;
//! answers come later, as the NIC's firmware schedules them.
//!
//! The NICs share one Ethernet segment: an in-process [`Switch`] with a port per NIC, the
//! [`FaultStage`](bnxt_model::net::fault::FaultStage) the run's [`WirePlan`](bnxt_model::faults::WirePlan)
//! configures (seeded from [`WorldConfig::seed`]), and an optional pcap tap
//! ([`World::set_pcap`]). Frames a NIC sends enter the switch at the time the NIC sent them; a
//! frame's arrival at a port is one more piece of work in time order with the NICs' own, and it
//! runs the destination NIC's RoCE engine at that time.
//!
//! This file fixes the API the in-process target (in `bnxt-rig`) is written against.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::pcap::{PcapTap, PcapTapError};
use bnxt_model::armed::{Action, ArmError, ArmedFault, Target};
use bnxt_model::device::Device;
use bnxt_model::events::{Event, EventKind};
use bnxt_model::faults::{FaultPlan, WirePlanError};
use bnxt_model::firmware::context_mem::ContextLimits;
use bnxt_model::firmware::options::FirmwareOptions;
use bnxt_model::held::Held;
use bnxt_model::host_memory::{Access, DmaBacking, Iommu, MapError};
use bnxt_model::net::capture::Captured;
use bnxt_model::net::fault::FaultCounters;
use bnxt_model::net::pool::FramePool;
use bnxt_model::net::sealed::WireFrame;
use bnxt_model::net::switch::{LinkTiming, PortId, Switch, SwitchError, SwitchStats, WireDelivery};
use bnxt_model::roce::RoceCounters;

/// How to build a [`World`].
#[derive(Debug, Clone, Default)]
pub struct WorldConfig {
    /// Number of NICs.
    pub nics: usize,
    /// Seed of every random choice the model makes (MAC addresses, later wire faults).
    pub seed: u64,
    /// Faults to inject.
    pub faults: FaultPlan,
    /// What every NIC's firmware advertises beyond its defaults.
    pub firmware: FirmwareOptions,
}

/// What one NIC of a world looks like from outside, for tests, scenario checks and the
/// vfio-user server's state reply.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NicState {
    /// Bus address (`0000:01:00.0`).
    pub bus: String,
    /// MAC address the firmware reports.
    pub mac: [u8; 6],
    /// Command register: memory space enable.
    pub memory_enabled: bool,
    /// Command register: bus master enable.
    pub bus_master: bool,
    /// PCIe Device Control: relaxed ordering enable.
    pub relaxed_ordering: bool,
    /// Number of DMA mappings the host has given this NIC.
    pub dma_mappings: usize,
    /// Whether a driver is registered with the firmware (FUNC_DRV_RGTR without UNRGTR).
    pub driver_registered: bool,
    /// HWRM requests answered CMD_NOT_SUPPORTED, by `req_type`, with counts.
    pub unsupported_requests: Vec<(u16, u64)>,
    /// Everything unimplemented this NIC was asked for: register accesses, unsupported requests,
    /// unimplemented request features.
    pub unimplemented: u64,
    /// DMA the firmware attempted that failed.
    pub dma_errors: u64,
    /// BAR accesses dropped because memory space was disabled.
    pub memory_disabled_accesses: u64,
    /// Whether the driver finished configuring context memory (BS_CFG_ALL_DONE).
    pub context_memory_done: bool,
    /// Limits that follow from the configured context memory (QPs, regions, ...).
    pub limits: ContextLimits,
    /// Rings allocated (RING_ALLOC without RING_FREE).
    pub rings: usize,
    /// Statistics contexts allocated.
    pub stat_contexts: usize,
    /// HWRM responses the firmware still has to write.
    pub pending_responses: usize,
    /// The RoCE engine's counters (commands, doorbells, CQEs, frames; frames dropped for a bad
    /// ICRC are `roce.rx_drops.icrc`).
    pub roce: RoceCounters,
    /// Whether the port's link is up (as PORT_PHY_QCFG reports it).
    #[serde(default)]
    pub link_up: bool,
    /// Whether the port has its peer (`link down` takes it away).
    #[serde(default)]
    pub peer_present: bool,
    /// Frames dropped at the port while it had no peer.
    #[serde(default)]
    pub frames_dropped_no_peer: u64,
    /// Frames dropped at the port while the driver had its link forced down.
    #[serde(default)]
    pub frames_dropped_forced_down: u64,
    /// HWRM requests taken from the mailbox, and responses written.
    #[serde(default)]
    pub hwrm_requests: u64,
    /// HWRM responses written.
    #[serde(default)]
    pub hwrm_responses: u64,
    /// The faults armed while the NIC ran, with how often each fired.
    #[serde(default)]
    pub armed_faults: Vec<ArmedFault>,
    /// The objects the function holds (rings, VNICs, filters, QPs, ...).
    pub held: Held,
}

/// One NIC, its address space and its port on the segment.
#[derive(Clone)]
struct Nic {
    /// The device; changed only through [`Nic::device_mut`], which keeps `deadline` honest.
    device: Device,
    /// `device.next_deadline()` as it was when last computed, unless `stale`.
    deadline: Option<Duration>,
    /// Whether the device may have changed since `deadline` was computed.
    stale: bool,
    iommu: Iommu,
    bus: String,
    port: PortId,
}

impl Nic {
    /// The device, to change it (its next deadline is computed again when next asked for).
    fn device_mut(&mut self) -> &mut Device {
        self.stale = true;
        &mut self.device
    }

    /// When the device next has work: computed once after each change, not at every step of
    /// [`World::advance`] (which asks for every NIC's at every step).
    fn next_deadline(&mut self) -> Option<Duration> {
        if self.stale {
            self.deadline = self.device.next_deadline();
            self.stale = false;
        }
        self.deadline
    }

    /// Run the device's work due at or before `at` with its DMA view, building frames in the
    /// buffers of `pool`.
    fn run(&mut self, at: Duration, events: &mut Vec<Event>, pool: &mut FramePool) {
        self.stale = true;
        std::mem::swap(pool, self.device.frame_pool());
        let view = self.iommu.view(self.device.bus_master());
        self.device.advance(at, &view);
        std::mem::swap(pool, self.device.frame_pool());
        self.device.drain_events(events);
    }

    /// Hand a frame that arrived at `at` to the device, which builds what it answers in the
    /// buffers of `pool`.
    fn deliver(&mut self, at: Duration, frame: &WireFrame, events: &mut Vec<Event>, pool: &mut FramePool) {
        self.stale = true;
        std::mem::swap(pool, self.device.frame_pool());
        let view = self.iommu.view(self.device.bus_master());
        self.device.receive_wire_frame(at, frame, &view);
        std::mem::swap(pool, self.device.frame_pool());
        self.device.drain_events(events);
    }
}

/// Why a world could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorldError {
    /// The wire fault plan is unusable.
    #[error("wire faults: {0}")]
    Wire(#[from] WirePlanError),
}

/// A machine of model NICs.
pub struct World {
    now: Duration,
    nics: Vec<Nic>,
    events: Vec<Event>,
    strict: bool,
    switch: Switch,
    /// Frames the switch refused (runts from a NIC: none are expected).
    switch_refusals: u64,
    /// Ports of the switch that lead out of the machine, with the frames delivered to each and
    /// not yet taken.
    external: BTreeMap<PortId, Vec<Vec<u8>>>,
    /// Buffers of delivered frames, lent to whichever NIC runs next to build its frames in
    /// (frames one NIC sends arrive at another, so the NICs share one pool).
    pool: FramePool,
    /// The list the switch's deliveries are polled into, kept from one poll to the next.
    deliveries: Vec<WireDelivery>,
    /// The list a NIC's frames are taken into on their way to the switch, kept likewise.
    outbox: Vec<WireFrame>,
    /// Where the switch's capture is written, when set ([`World::set_pcap`]).
    tap: Option<PcapTap>,
    /// The list the switch's captured frames are drained into, kept likewise.
    captured: Vec<Captured>,
}

/// A copy of the machine as it is now, to run again from here (a fuzz target brings a machine up
/// once and runs each input on a copy): every NIC's state, the switch with its frames in flight
/// and its fault stage's random state, the clock and the events not yet taken. The copy's NICs
/// reach the same host memory as the original's, through the same mappings: host memory is the
/// host's, not the machine's, so whoever copies a machine to run it again restores that memory
/// too. The copy writes no pcap (a tap is a file being written; [`World::set_pcap`] gives it
/// one).
impl Clone for World {
    fn clone(&self) -> World {
        World {
            now: self.now,
            nics: self.nics.clone(),
            events: self.events.clone(),
            strict: self.strict,
            switch: self.switch.clone(),
            switch_refusals: self.switch_refusals,
            external: self.external.clone(),
            pool: self.pool.clone(),
            deliveries: self.deliveries.clone(),
            outbox: self.outbox.clone(),
            tap: None,
            captured: self.captured.clone(),
        }
    }
}

/// Mixed into the seed for the wire fault stage, so its draws do not follow the MAC addresses'.
const WIRE_SEED_SALT: u64 = 0x7769_7265_6661_756c;

/// Broadcom's OUI (00:0a:f7), the first three bytes of every model MAC.
pub const BROADCOM_OUI: [u8; 3] = [0x00, 0x0a, 0xf7];

/// splitmix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number generators", 2014): a
/// small, well-mixed hash for deriving per-NIC values from the seed.
fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// MAC addresses for `n` NICs from `seed`: the Broadcom OUI and three hashed bytes, distinct.
pub fn macs_from_seed(seed: u64, n: usize) -> Vec<[u8; 6]> {
    let mut macs: Vec<[u8; 6]> = Vec::with_capacity(n);
    let mut counter = 0u64;
    while macs.len() < n {
        let h = splitmix64(seed ^ splitmix64(counter)).to_le_bytes();
        counter += 1;
        let mac = [BROADCOM_OUI[0], BROADCOM_OUI[1], BROADCOM_OUI[2], h[0], h[1], h[2]];
        if !macs.contains(&mac) {
            macs.push(mac);
        }
    }
    macs
}

impl World {
    /// A machine with `config.nics` NICs, just powered on.
    pub fn new(config: WorldConfig) -> World {
        World::with_macs(config, &[])
    }

    /// A machine like [`World::new`] whose first `macs.len()` NICs have these MAC addresses
    /// instead of ones derived from the seed (a `bnxt-model serve` process gives its NIC the MAC
    /// its command line names).
    ///
    /// Panics with the reason if the wire fault plan is unusable; [`World::try_with_macs`]
    /// returns it instead.
    pub fn with_macs(config: WorldConfig, macs: &[[u8; 6]]) -> World {
        World::try_with_macs(config, macs).unwrap_or_else(|e| panic!("cannot build the world: {e}"))
    }

    /// A machine like [`World::new`], or why its configuration is unusable.
    pub fn try_new(config: WorldConfig) -> Result<World, WorldError> {
        World::try_with_macs(config, &[])
    }

    /// A machine like [`World::with_macs`], or why its configuration is unusable.
    pub fn try_with_macs(config: WorldConfig, macs: &[[u8; 6]]) -> Result<World, WorldError> {
        let mut switch = Switch::new(LinkTiming::default());
        let ports: Vec<PortId> = (0..config.nics).map(|_| switch.add_port()).collect();
        switch.set_faults(config.faults.wire.stage(splitmix64(config.seed ^ WIRE_SEED_SALT), &ports)?);
        let plan = Arc::new(config.faults);
        let mut chosen = macs_from_seed(config.seed, config.nics);
        for (slot, mac) in chosen.iter_mut().zip(macs) {
            *slot = *mac;
        }
        let nics = chosen
            .into_iter()
            .enumerate()
            .map(|(i, mac)| {
                let bus = u8::try_from(i + 1).expect("a machine has at most 255 NICs");
                Nic {
                    device: Device::new(i, mac, bus, plan.clone()).with_firmware_options(config.firmware),
                    deadline: None,
                    stale: true,
                    iommu: Iommu::new(),
                    bus: format!("0000:{bus:02x}:00.0"),
                    port: ports[i],
                }
            })
            .collect();
        Ok(World {
            now: Duration::ZERO,
            nics,
            events: Vec::new(),
            strict: false,
            switch,
            switch_refusals: 0,
            external: BTreeMap::new(),
            pool: FramePool::new(),
            deliveries: Vec::new(),
            outbox: Vec::new(),
            tap: None,
            captured: Vec::new(),
        })
    }

    /// Record every frame the segment carries (as the switch sees it, after the fault stage)
    /// into a pcap file at `path`, replacing any tap before (which is finished).
    pub fn set_pcap(&mut self, path: &std::path::Path) -> Result<(), PcapTapError> {
        let tap = PcapTap::create(path)?;
        self.write_captured();
        if let Some(old) = self.tap.replace(tap) {
            old.finish()?;
        }
        self.switch.start_capture();
        Ok(())
    }

    /// Finish the pcap tap, if one is set: the number of frames it holds.
    pub fn finish_pcap(&mut self) -> Result<Option<u64>, PcapTapError> {
        self.write_captured();
        self.switch.stop_capture();
        self.tap.take().map(PcapTap::finish).transpose()
    }

    /// Write what the switch captured to the tap.
    #[inline]
    fn write_captured(&mut self) {
        if let Some(tap) = &mut self.tap {
            self.switch.drain_captured(&mut self.captured);
            tap.record_captured(&mut self.captured);
        }
    }

    /// Counters of the segment's switch.
    pub fn switch_stats(&self) -> SwitchStats {
        self.switch.stats()
    }

    /// Counters of the segment's fault stage.
    pub fn wire_fault_counters(&self) -> FaultCounters {
        self.switch.fault_counters()
    }

    /// Frames the switch refused from the NICs.
    pub fn switch_refusals(&self) -> u64 {
        self.switch_refusals
    }

    /// Record per-doorbell, per-CQE and per-frame events on every NIC, or not (on by default;
    /// benchmarks turn them off).
    pub fn set_data_path_events(&mut self, on: bool) {
        for n in &mut self.nics {
            n.device_mut().set_data_path_events(on);
        }
    }

    /// Hand `frame` to NIC `nic` now, as if it had just arrived from the segment (a frame from
    /// outside the machine: tests and tools), and send what the NIC answers.
    pub fn inject_frame(&mut self, nic: usize, frame: &[u8]) {
        let now = self.now;
        self.nic(nic);
        self.nics[nic].deliver(now, &WireFrame::Plain(frame.to_vec()), &mut self.events, &mut self.pool);
        self.pump(nic, now);
    }

    /// Add a port to the segment that leads out of the machine (the vfio-user server's link to a
    /// segment hub in another process). Frames the switch forwards to it are kept for
    /// [`World::take_external_frames`]; frames from outside enter with [`World::send_external`].
    pub fn add_external_port(&mut self) -> PortId {
        let port = self.switch.add_port();
        self.external.insert(port, Vec::new());
        port
    }

    /// A frame from outside the machine enters the segment at external port `port` now; it
    /// reaches the NICs through the switch (learning, fault stage, latency) as theirs do.
    pub fn send_external(&mut self, port: PortId, frame: Vec<u8>) -> Result<(), SwitchError> {
        let now = self.now;
        let sent = self.switch.send(now, port, frame);
        self.record_wire_faults();
        self.write_captured();
        sent
    }

    /// A frame buffer from the NICs' pool, for a frame coming from outside (old bytes in it,
    /// to be replaced).
    pub fn frame_buffer(&mut self) -> Vec<u8> {
        self.pool.take()
    }

    /// Give the pool back the buffer of a frame that left through an external port.
    pub fn recycle_frame(&mut self, frame: Vec<u8>) {
        self.pool.give(frame);
    }

    /// The frames delivered to external port `port` since the last call, in order.
    pub fn take_external_frames(&mut self, port: PortId) -> Vec<Vec<u8>> {
        self.external.get_mut(&port).map(std::mem::take).unwrap_or_default()
    }

    /// Move the frames NIC `i` sent into the switch at `at`, and record wire faults.
    fn pump(&mut self, i: usize, at: Duration) {
        let port = self.nics[i].port;
        let mut outbox = std::mem::take(&mut self.outbox);
        self.nics[i].device_mut().drain_wire_frames(&mut outbox);
        for frame in outbox.drain(..) {
            let sent = match frame {
                WireFrame::Sealed(s) => self.switch.send_sealed(at, port, s),
                WireFrame::Plain(v) => self.switch.send(at, port, v),
            };
            if let Err(e) = sent {
                self.switch_refusals += 1;
                tracing::warn!(nic = i, %e, "frame refused by the switch");
            }
        }
        self.outbox = outbox;
        self.record_wire_faults();
        self.write_captured();
    }

    #[inline]
    fn record_wire_faults(&mut self) {
        if self.switch.has_fault_events() {
            self.move_wire_faults();
        }
    }

    /// [`World::record_wire_faults`] when there are fault events (apart, so that the usual call,
    /// with none, costs only the check).
    #[inline(never)]
    fn move_wire_faults(&mut self) {
        for f in self.switch.drain_fault_events() {
            let nic = self.nics.iter().position(|n| n.port == f.port).unwrap_or(usize::MAX);
            self.events.push(Event { at: f.at, nic, kind: EventKind::WireFault { fault: f } });
        }
    }

    /// Run NIC `i`'s work due at `at` and send what it sent.
    fn run_nic(&mut self, i: usize, at: Duration) {
        self.nics[i].run(at, &mut self.events, &mut self.pool);
        self.pump(i, at);
    }

    /// Deliver every frame the switch has for `at`, each to its NIC, and send what they answer.
    fn run_switch(&mut self, at: Duration) {
        let mut deliveries = std::mem::take(&mut self.deliveries);
        self.switch.poll_wire_into(at, &mut deliveries);
        self.record_wire_faults();
        for d in deliveries.drain(..) {
            if let Some(out) = self.external.get_mut(&d.port) {
                out.push(d.frame.into_vec());
                continue;
            }
            let Some(i) = self.nics.iter().position(|n| n.port == d.port) else { continue };
            self.nics[i].deliver(d.at, &d.frame, &mut self.events, &mut self.pool);
            // Parsed and landed: the next frame a NIC builds reuses its buffer.
            self.pool.give(d.frame.into_vec());
            self.pump(i, d.at);
        }
        self.deliveries = deliveries;
    }

    /// Number of NICs.
    pub fn nic_count(&self) -> usize {
        self.nics.len()
    }

    /// Virtual time since the world was made.
    pub fn now(&self) -> Duration {
        self.now
    }

    fn nic(&self, nic: usize) -> &Nic {
        let count = self.nics.len();
        self.nics.get(nic).unwrap_or_else(|| panic!("NIC {nic} does not exist (the world has {count})"))
    }

    fn nic_mut(&mut self, nic: usize) -> &mut Nic {
        self.parts(nic).0
    }

    /// NIC `nic`, the event log and the time, borrowed apart.
    fn parts(&mut self, nic: usize) -> (&mut Nic, &mut Vec<Event>, Duration) {
        let count = self.nics.len();
        let n = self.nics.get_mut(nic).unwrap_or_else(|| panic!("NIC {nic} does not exist (the world has {count})"));
        (n, &mut self.events, self.now)
    }

    /// Let `d` of virtual time pass, running every NIC's work that falls due, in time order.
    pub fn advance(&mut self, d: Duration) {
        let target = self.now.saturating_add(d);
        loop {
            let nic = self.nics.iter_mut().enumerate().filter_map(|(i, n)| n.next_deadline().map(|t| (t, i))).min();
            let wire = self.switch.next_deadline();
            match (nic, wire) {
                // Frames arriving at a time go before the NICs' own work at that time.
                (_, Some(w)) if w <= target && nic.is_none_or(|(t, _)| w <= t) => {
                    self.now = self.now.max(w);
                    let now = self.now;
                    self.run_switch(now);
                }
                (Some((at, i)), _) if at <= target => {
                    self.now = self.now.max(at);
                    let now = self.now;
                    self.run_nic(i, now);
                }
                _ => break,
            }
        }
        self.now = target;
    }

    /// When the next work falls due (a NIC's, or a frame's arrival), if any is queued.
    pub fn next_deadline(&self) -> Option<Duration> {
        let nic = |n: &Nic| if n.stale { n.device.next_deadline() } else { n.deadline };
        self.nics.iter().filter_map(nic).chain(self.switch.next_deadline()).min()
    }

    /// Read config space of NIC `nic`.
    pub fn config_read(&mut self, nic: usize, offset: u16, data: &mut [u8]) {
        self.nic(nic).device.config_read(offset, data);
    }

    /// Write config space of NIC `nic`.
    pub fn config_write(&mut self, nic: usize, offset: u16, data: &[u8]) {
        let (n, events, now) = self.parts(nic);
        n.device_mut().config_write(now, offset, data);
        n.device_mut().drain_events(events);
    }

    /// Load from BAR `bar` of NIC `nic` (`data.len()` is 4 or 8).
    pub fn bar_read(&mut self, nic: usize, bar: u8, offset: u64, data: &mut [u8]) {
        let (n, events, now) = self.parts(nic);
        n.device_mut().bar_read(now, bar, offset, data);
        n.device_mut().drain_events(events);
    }

    /// Store to BAR `bar` of NIC `nic` (`data.len()` is 4 or 8). Work the store submits (an HWRM
    /// request) is taken at once, at the current virtual time.
    pub fn bar_write(&mut self, nic: usize, bar: u8, offset: u64, data: &[u8]) {
        let (n, events, now) = self.parts(nic);
        n.device_mut().bar_write(now, bar, offset, data);
        if n.device.has_work_due(now) {
            self.run_nic(nic, now);
        } else {
            n.device_mut().drain_events(events);
        }
    }

    /// Map host memory for NIC `nic`'s DMA at bus address `iova`.
    pub fn map_dma(&mut self, nic: usize, iova: u64, backing: Arc<dyn DmaBacking>) -> Result<(), MapError> {
        self.map_dma_with(nic, iova, backing, Access::ReadWrite)
    }

    /// As [`World::map_dma`], with the access the NIC gets (read-only memory, as a host maps a
    /// buffer towards the device).
    pub fn map_dma_with(
        &mut self,
        nic: usize,
        iova: u64,
        backing: Arc<dyn DmaBacking>,
        access: Access,
    ) -> Result<(), MapError> {
        let len = backing.len() as u64;
        self.nic_mut(nic).iommu.map_with(iova, backing, 0, len, access)
    }

    /// Remove the mapping at `iova`.
    pub fn unmap_dma(&mut self, nic: usize, iova: u64) -> Result<(), MapError> {
        self.nic_mut(nic).iommu.unmap(iova)
    }

    /// Outside view of NIC `nic`.
    pub fn nic_state(&self, nic: usize) -> NicState {
        let n = self.nic(nic);
        let d = &n.device;
        let fw = d.firmware();
        let st = fw.state();
        NicState {
            bus: n.bus.clone(),
            mac: d.identity().mac,
            memory_enabled: d.config().memory_enabled(),
            bus_master: d.config().bus_master(),
            relaxed_ordering: d.config().relaxed_ordering(),
            dma_mappings: n.iommu.len(),
            driver_registered: st.registration.is_some(),
            unsupported_requests: fw.unsupported(),
            unimplemented: d.unimplemented_total(),
            dma_errors: fw.counters().dma_errors,
            memory_disabled_accesses: d.memory_disabled_accesses(),
            context_memory_done: st.context.all_done(),
            limits: d.limits(),
            rings: st.rings.len(),
            stat_contexts: st.stat_ctxs.len(),
            pending_responses: fw.pending_responses(),
            roce: d.roce_counters().clone(),
            link_up: bnxt_model::firmware::port_cfg::link_up(&st.l2.phy),
            peer_present: !st.l2.phy.peer_down,
            frames_dropped_no_peer: d.frames_dropped_no_peer(),
            frames_dropped_forced_down: d.frames_dropped_forced_down(),
            hwrm_requests: fw.counters().requests,
            hwrm_responses: fw.counters().responses,
            armed_faults: d.armed_faults(),
            held: d.held(),
        }
    }

    /// Arm a fault on NIC `nic` from now on (see [`bnxt_model::armed`]); its id.
    pub fn arm_fault(
        &mut self,
        nic: usize,
        target: Target,
        nth: Option<u32>,
        count: Option<u32>,
        action: Action,
    ) -> Result<u64, ArmError> {
        self.nic_mut(nic).device_mut().arm_fault(target, nth, count, action)
    }

    /// Clear the armed fault `id` of NIC `nic` (every one when `None`); how many were cleared.
    pub fn clear_faults(&mut self, nic: usize, id: Option<u64>) -> usize {
        let d = self.nic_mut(nic).device_mut();
        match id {
            Some(id) => usize::from(d.clear_fault(id)),
            None => d.clear_faults(),
        }
    }

    /// Reset NIC `nic`'s firmware now (see [`bnxt_model::firmware::reset`]); false while a reset
    /// is already under way.
    pub fn fw_reset(&mut self, nic: usize, kind: bnxt_model::firmware::reset::ResetKind) -> bool {
        let (n, events, now) = self.parts(nic);
        let started = n.device_mut().fw_reset(now, kind);
        if n.device.has_work_due(now) {
            // The async event it queued goes to the driver's ring at once.
            self.run_nic(nic, now);
        } else {
            n.device_mut().drain_events(events);
        }
        started
    }

    /// NIC `nic`'s port gets its peer back (`true`) or loses it (the cable pulled); whether its
    /// link state changed.
    pub fn set_peer(&mut self, nic: usize, present: bool) -> bool {
        let (n, events, now) = self.parts(nic);
        let changed = n.device_mut().set_peer(now, present);
        if n.device.has_work_due(now) {
            // The async event it queued goes to the driver's ring at once.
            self.run_nic(nic, now);
        } else {
            n.device_mut().drain_events(events);
        }
        changed
    }

    /// MSI-X vectors NIC `nic` raised since the last call, in order (the executor delivers them:
    /// the vfio-user server signals the eventfd its client gave for each vector).
    pub fn take_interrupts(&mut self, nic: usize) -> Vec<u16> {
        self.nic_mut(nic).device_mut().take_interrupts()
    }

    /// Every event since the last call, oldest first.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// Turn strict mode on or off. In strict mode the runner fails a run in which the model was
    /// asked for anything it does not implement ([`World::unimplemented_total`] > 0); the model
    /// itself behaves the same either way.
    pub fn set_strict(&mut self, strict: bool) {
        self.strict = strict;
    }

    /// Whether strict mode is on.
    pub fn strict(&self) -> bool {
        self.strict
    }

    /// Everything unimplemented any NIC was asked for (register accesses, unsupported HWRM
    /// requests, unimplemented request features, RoCE commands, features and doorbells), summed
    /// over NICs.
    pub fn unimplemented_total(&self) -> u64 {
        self.nics.iter().map(|n| n.device.unimplemented_total()).sum()
    }

    /// Whether strict mode is on and something unimplemented was hit.
    pub fn strict_violated(&self) -> bool {
        self.strict && self.unimplemented_total() > 0
    }

    /// The NIC's device, for inspection (firmware state, context memory, MSI-X table).
    pub fn device(&self, nic: usize) -> &Device {
        &self.nic(nic).device
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_are_broadcom_distinct_and_follow_the_seed() {
        let a = macs_from_seed(7, 16);
        assert_eq!(a, macs_from_seed(7, 16));
        assert_ne!(a, macs_from_seed(8, 16));
        for (i, m) in a.iter().enumerate() {
            assert_eq!(m[..3], BROADCOM_OUI);
            assert!(!a[..i].contains(m));
        }
    }

    #[test]
    fn time_passes_only_when_advanced() {
        let mut w = World::new(WorldConfig { nics: 2, seed: 1, ..WorldConfig::default() });
        assert_eq!(w.switch.ports().count(), 2);
        assert_eq!(w.now(), Duration::ZERO);
        assert_eq!(w.next_deadline(), None);
        w.advance(Duration::from_secs(40));
        assert_eq!(w.now(), Duration::from_secs(40));
        assert_eq!(w.nic_state(1).bus, "0000:02:00.0");
    }
}
