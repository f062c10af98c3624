//! The `vfio-user:SOCK[,SOCK…]` target: NICs in other processes (`bnxt-model serve`, one NIC
//! per socket), reached through the driver's vfio-user backend, on the real clock.
//!
//! The sockets are connected once, when the first scenario starts, and the connections are kept
//! for the whole run (a server serves one client at a time). Each scenario still gets fresh NICs:
//! at its start every NIC it uses is replaced on its server by one just powered on, with the
//! scenario's seed, through the model's extension command `BNXT_RIG_RESTART`
//! (`bnxt_vfio_user::ext`); the scenario's NIC *i* is socket *i*.
//!
//! Firmware faults are injected at the driver's seam, as on the `vfio` target: the driver works
//! on the sockets' functions through [`bnxt_interpose::Interposed`], which withholds, delays and
//! refuses the HWRM requests and RoCE commands the faults name, so the servers' firmware sees
//! what a real card's would. Only what the seam cannot do goes to the servers with the restart
//! ([`super::seam_faults`]): the malformed answers (which only the model's firmware writes), as
//! faults on the server's NIC 0. The faults of `fault` steps are split the same way: armed at
//! the seam mid-run, the malformed answers armed on the server with the model's extension
//! command `BNXT_RIG_ARM` (each side counting `nth` from the arming among the requests it sees). `inspect` steps and the list of what
//! the model left unimplemented come from `BNXT_RIG_STATE`. Config-space checks read config
//! space through the protocol, as they would on any vfio-user device.
//!
//! RoCE: the servers join one `bnxt-model segment` hub (`serve --segment`), and their NICs
//! exchange RoCE v2 frames through it; DMA memory is the driver's memfds, mapped by the servers.
//! Wire faults: the scenario's wire plan goes to every server with the restart, each applying
//! it to the frames its own NIC sends (a rule naming NIC *i* goes to server *i* only), so every
//! frame between the NICs passes it once, as on the model. Captures (`--pcap`): each server
//! records the frames its NIC sends into a file this process opens and hands over with the
//! restart; at the end of the scenario the files are merged in time order (the servers stamp
//! frames with the wall clock every process shares) into the scenario's pcap.
//!
//! What needs virtual time (exact times, timeouts that would cost their wall time) is not
//! offered: the servers run on the real clock.
//!
//! A server that is not the model refuses those extension commands; a scenario with faults or
//! `inspect` steps then fails to start, naming the refusal.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bnxt::vfio_user::{Client, VfioUserMachine};
use bnxt::{Clock, Machine, PciError};
use bnxt_hsi::hwrm::req_name;
use bnxt_interpose::Interposed;
use bnxt_model::faults::{FaultPlan, WirePlan};
use bnxt_model_host::pcap::PcapTap;
use bnxt_model_host::vfio_user::control::{Arm, Restart, State};
use bnxt_vfio_user::header::Command;
use bnxt_vfio_user::linux::PCI_CONFIG_REGION_INDEX;

use super::model::fault_plan;
use super::{Capabilities, ConfigState, Internals, MachinePlan, Session, Target, TargetError};
use crate::scenario::Capability;

/// The kind name scenarios use in `targets:`.
pub const KIND: &str = "vfio-user";

/// Model NICs behind vfio-user sockets.
pub struct VfioUserTarget {
    sockets: Vec<PathBuf>,
    machine: Mutex<Option<Arc<VfioUserMachine>>>,
}

impl VfioUserTarget {
    /// The target for `spec`, the part after `vfio-user:` (comma-separated socket paths).
    pub fn from_spec(spec: &str) -> Result<VfioUserTarget, TargetError> {
        let sockets: Vec<PathBuf> = spec.split(',').filter(|s| !s.is_empty()).map(PathBuf::from).collect();
        if sockets.is_empty() {
            return Err(TargetError::Cannot {
                target: KIND.into(),
                what: "run without sockets (`vfio-user:PATH[,PATH…]`)".into(),
            });
        }
        Ok(VfioUserTarget { sockets, machine: Mutex::new(None) })
    }

    /// NIC `nic`'s state as its server reports it (`BNXT_RIG_STATE`): between scenarios, what
    /// the last one left there (the wire faults that fired on the frames it sent, the frames
    /// captured, what the model was asked for and does not implement).
    pub fn state(&self, nic: usize) -> Result<State, TargetError> {
        state_of(&*self.machine()?, nic)
    }

    fn machine(&self) -> Result<Arc<VfioUserMachine>, TargetError> {
        let mut slot = self.machine.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = slot.as_ref() {
            return Ok(m.clone());
        }
        let machine =
            VfioUserMachine::connect(&self.sockets).map_err(|e| TargetError::Pci(PciError::List(e.to_string())))?;
        let machine = Arc::new(machine);
        *slot = Some(machine.clone());
        Ok(machine)
    }
}

impl Target for VfioUserTarget {
    fn name(&self) -> String {
        let paths: Vec<String> = self.sockets.iter().map(|p| p.display().to_string()).collect();
        format!("{KIND}:{}", paths.join(","))
    }

    fn kind(&self) -> &'static str {
        KIND
    }

    fn faults_at_seam(&self) -> bool {
        true
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { faults: true, inspect: true, max_nics: self.sockets.len(), virtual_time: false }
    }

    /// Firmware faults (at the seam; malformed answers by the servers' firmware), from the start
    /// or armed mid-run, `inspect`, RoCE, wire faults and captures, as the module documentation
    /// says; not virtual time.
    fn supports(&self, capability: Capability) -> bool {
        match capability {
            Capability::Faults
            | Capability::Inspect
            | Capability::Roce
            | Capability::WireFaults
            | Capability::Pcap
            | Capability::FirmwareSettings
            | Capability::MalformedAnswers
            | Capability::LiveFaults => true,
            Capability::VirtualTime => false,
        }
    }

    fn start(&self, plan: &MachinePlan<'_>) -> Result<Box<dyn Session>, TargetError> {
        let machine = self.machine()?;
        let (seam, faults) = super::seam_faults(fault_plan(plan));
        let capture = match plan.pcap {
            Some(path) => Some(Capture::create(path, plan.nics)?),
            None => None,
        };
        for nic in 0..plan.nics {
            let client = client_of(&machine, nic)?;
            let file = capture.as_ref().map(|c| &c.parts[nic].1);
            let restart = Restart {
                seed: plan.seed,
                faults: faults_of(&faults, nic)?,
                nic,
                capture: file.is_some(),
                firmware: super::model::firmware_options(plan.firmware),
            };
            let json = serde_json::to_vec(&restart).expect("a restart request serialises");
            let fds: Vec<_> = file.iter().map(|f| f.as_fd()).collect();
            client
                .call(Command::RigRestart, &[&json], &fds)
                .map_err(|e| cannot(format!("give NIC {nic} a fresh state: {e}")))?;
        }
        let seam = super::ready_for_live(Interposed::new(machine.clone(), seam), plan);
        Ok(Box::new(VfioUserSession { machine, seam, nics: plan.nics, capture }))
    }
}

/// The faults of `plan` for `nic`'s server, renumbered as its NIC 0: the firmware and RoCE
/// command faults that name `nic`; the wire plan's probabilities, and its rules that name `nic`
/// or no NIC. A rule that names no NIC but counts (`nth`) cannot be split between servers (its
/// count runs over every NIC's frames), so it is refused.
fn faults_of(plan: &FaultPlan, nic: usize) -> Result<FaultPlan, TargetError> {
    let firmware = plan
        .firmware
        .iter()
        .filter(|f| f.nic == nic)
        .map(|f| bnxt_model::faults::FirmwareFault { nic: 0, ..f.clone() })
        .collect();
    let roce_commands = plan
        .roce_commands
        .iter()
        .filter(|f| f.nic == nic)
        .map(|f| bnxt_model::faults::CommandFault { nic: 0, ..f.clone() })
        .collect();
    let mut rules = Vec::new();
    for (i, rule) in plan.wire.rules.iter().enumerate() {
        match rule.nic {
            Some(n) if n == nic => rules.push(bnxt_model::faults::WireRule { nic: Some(0), ..rule.clone() }),
            Some(_) => {}
            None if rule.nth.is_some() => {
                return Err(cannot(format!(
                    "apply wire rule {i}: it counts frames (`nth`) of every NIC, and each server sees only \
                     its own NIC's; name the NIC (`nic:`)"
                )));
            }
            None => rules.push(rule.clone()),
        }
    }
    let wire = WirePlan { rules, ..plan.wire.clone() };
    Ok(FaultPlan { firmware, roce_commands, wire })
}

/// The scenario's capture: a file per NIC the servers write (beside the pcap, removed once
/// merged), and the pcap they are merged into.
struct Capture {
    path: PathBuf,
    parts: Vec<(PathBuf, File)>,
}

impl Capture {
    fn create(path: &Path, nics: usize) -> Result<Capture, TargetError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| cannot(format!("make {}: {e}", dir.display())))?;
        }
        let mut capture = Capture { path: path.to_path_buf(), parts: Vec::new() };
        for nic in 0..nics {
            let part = PathBuf::from(format!("{}.nic{nic}.part", path.display()));
            let file = bnxt_output::create(&part).map_err(|e| cannot(format!("write {}: {e}", part.display())))?;
            capture.parts.push((part, file));
        }
        Ok(capture)
    }

    /// Merge the servers' files (each flushed: its server has answered `BNXT_RIG_STATE` since)
    /// into the pcap, in time order; the frames it holds.
    fn merge(&self, counted: &[u64]) -> Result<u64, String> {
        let mut frames: Vec<(Duration, usize, Vec<u8>)> = Vec::new();
        for (nic, (part, _)) in self.parts.iter().enumerate() {
            let bytes = std::fs::read(part).map_err(|e| format!("{}: {e}", part.display()))?;
            let read = read_capture(&bytes)
                .map_err(|e| format!("NIC {nic}'s capture {}: {e}", part.display()))?
                .into_iter()
                .map(|(at, frame)| frames.push((at, nic, frame)))
                .count() as u64;
            if let Some(&want) = counted.get(nic)
                && read < want
            {
                return Err(format!("NIC {nic}'s server recorded {want} frames, its file holds {read}"));
            }
        }
        // Stable: frames one server stamped alike stay in the order it sent them.
        frames.sort_by_key(|(at, _, _)| *at);
        let mut tap = PcapTap::create(&self.path).map_err(|e| e.to_string())?;
        for (at, _, frame) in &frames {
            tap.record(*at, frame);
        }
        tap.finish().map_err(|e| e.to_string())
    }
}

/// The frames of a server's capture file (a pcap), with their times.
pub fn read_capture(bytes: &[u8]) -> Result<Vec<(Duration, Vec<u8>)>, String> {
    let mut reader = pcap_file::pcap::PcapReader::new(bytes).map_err(|e| e.to_string())?;
    let mut frames = Vec::new();
    while let Some(packet) = reader.next_packet() {
        let packet = packet.map_err(|e| e.to_string())?;
        frames.push((packet.timestamp, packet.data.into_owned()));
    }
    Ok(frames)
}

impl Drop for Capture {
    fn drop(&mut self) {
        for (part, _) in &self.parts {
            let _ = std::fs::remove_file(part);
        }
    }
}

fn cannot(what: String) -> TargetError {
    TargetError::Cannot { target: KIND.into(), what }
}

fn client_of(machine: &VfioUserMachine, nic: usize) -> Result<&Arc<Client>, TargetError> {
    let count = machine.buses().map(|b| b.len()).unwrap_or(0);
    machine.client(nic).ok_or(TargetError::NoSuchNic { nic, count })
}

/// NIC `nic`'s state, from its server.
fn state_of(machine: &VfioUserMachine, nic: usize) -> Result<State, TargetError> {
    let reply = client_of(machine, nic)?
        .call(Command::RigState, &[], &[])
        .map_err(|e| cannot(format!("show NIC {nic}'s state: {e}")))?;
    serde_json::from_slice(&reply.body).map_err(|e| cannot(format!("read NIC {nic}'s state: {e}")))
}

/// One scenario's NICs.
struct VfioUserSession {
    machine: Arc<VfioUserMachine>,
    /// The machine the driver works on: the sockets' functions, through the firmware-fault layer.
    seam: Interposed<Arc<VfioUserMachine>>,
    nics: usize,
    capture: Option<Capture>,
}

impl VfioUserSession {
    fn client(&self, nic: usize) -> Result<&Arc<Client>, TargetError> {
        if nic >= self.nics {
            return Err(TargetError::NoSuchNic { nic, count: self.nics });
        }
        client_of(&self.machine, nic)
    }

    fn state(&self, nic: usize) -> Result<State, TargetError> {
        self.client(nic)?;
        state_of(&self.machine, nic)
    }

    fn config(&self, nic: usize, offset: u16, data: &mut [u8]) -> Result<(), TargetError> {
        self.client(nic)?
            .region_read(PCI_CONFIG_REGION_INDEX, u64::from(offset), data)
            .map_err(|e| TargetError::Pci(PciError::Config { offset, len: data.len(), reason: e.to_string() }))
    }
}

impl Session for VfioUserSession {
    fn machine(&self) -> &dyn Machine {
        &self.seam
    }

    fn clock(&self) -> &dyn Clock {
        self.machine.clock()
    }

    fn config_state(&self, nic: usize) -> Result<ConfigState, TargetError> {
        ConfigState::read(|offset, data| self.config(nic, offset, data))
    }

    fn internals(&self, nic: usize) -> Result<Internals, TargetError> {
        Ok(self.state(nic)?.nic)
    }

    fn finish_pcap(&self) -> Result<Option<u64>, String> {
        let Some(capture) = &self.capture else { return Ok(None) };
        let mut counted = Vec::new();
        for nic in 0..self.nics {
            let state = self.state(nic).map_err(|e| e.to_string())?;
            counted.push(state.captured_frames.ok_or_else(|| format!("NIC {nic}'s server kept no capture"))?);
        }
        capture.merge(&counted).map(Some)
    }

    fn arm_fault(&self, fault: &crate::scenario::faults::ModelFault) -> Result<(), TargetError> {
        let nic = fault.nic();
        let client = self.client(nic)?;
        let (target, nth, action) = fault.armed();
        if action.kind().applies_to_roce() {
            return super::arm_at_seam(&self.seam, KIND, fault);
        }
        // A malformed answer: only the server's firmware writes one.
        let arm = Arm { target, nth, count: None, action };
        let json = serde_json::to_vec(&arm).expect("a fault to arm serialises");
        client
            .call(Command::RigArm, &[&json], &[])
            .map(|_| ())
            .map_err(|e| cannot(format!("arm the fault on NIC {nic}'s server: {e}")))
    }

    fn seam_log(&self) -> Vec<(std::time::Duration, String)> {
        self.seam.take_log().into_iter().map(|l| (l.at, format!("NIC {}: {}", l.nic, l.text))).collect()
    }

    fn unimplemented(&self) -> Vec<String> {
        let mut said = Vec::new();
        for nic in 0..self.nics {
            match self.state(nic) {
                Ok(s) => {
                    for (req_type, count) in s.nic.unsupported_requests {
                        let name = req_name(req_type)
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("request 0x{req_type:04x}"));
                        said.push(format!("NIC {nic}: the model answered {name} CMD_NOT_SUPPORTED ({count}×)"));
                    }
                }
                Err(e) => said.push(format!("NIC {nic}: {e}")),
            }
        }
        said
    }
}
