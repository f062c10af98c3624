//! NICs: open, close, names and identity (the contract's "NICs" and "Changes to the machine").

use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use bnxt_hsi::hwrm::Request;

use crate::bringup;
use crate::ctx_mem::sizing::{self, SizingError};
use crate::ctx_mem::{ContextMemory, caps};
use crate::error::Error;
use crate::fw_health::{self, StatusReg};
use crate::hwrm::Channel;
use crate::pci::{ConfigExt, Machine, PciError, PciFunction, regs};
use crate::quarantine::{self, Retained};

/// A NIC's identity on the fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// MAC address, from HWRM_FUNC_QCAPS.
    pub mac: [u8; 6],
    /// IPv4 address 10.x.y.z, where x.y.z are the MAC's last three bytes.
    pub ipv4: Ipv4Addr,
    /// RoCE v2 GID: the IPv4-mapped IPv6 address `::ffff:10.x.y.z`, in wire order.
    pub gid: [u8; 16],
}

impl Identity {
    /// The identity of a NIC with MAC address `mac`: IPv4 10.x.y.z from its last three bytes
    /// (the contract's "The fabric"), and the IPv4-mapped GID the RDMA core builds for that
    /// address (bytes 0-9 zero, 10-11 0xff, 12-15 the address; hardware-map §6).
    pub fn from_mac(mac: [u8; 6]) -> Identity {
        let ipv4 = Ipv4Addr::new(10, mac[3], mac[4], mac[5]);
        Identity { mac, ipv4, gid: ipv4.to_ipv6_mapped().octets() }
    }
}

/// How many queue pairs and regions the NIC holds at once (set at open from the firmware's
/// limits and the context memory given to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Queue pairs.
    pub qps: u32,
    /// Memory regions.
    pub regions: u32,
}

/// Where the NIC's doorbells are in BAR2 (from HWRM_FUNC_QCFG).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Doorbells {
    /// Offset of the first RoCE doorbell page (`legacy_l2_db_size_kb` × 1024 on P7).
    pub offset: u64,
    /// Size of the doorbell area, when the firmware gives a usable one.
    pub size: Option<u64>,
}

/// The name of NIC `index`: `BNXT`, `BNXT:1`, `BNXT:2`, …
pub fn name_of(index: usize) -> String {
    if index == 0 { "BNXT".to_string() } else { format!("BNXT:{index}") }
}

/// The bus addresses of the machine's NICs, in bus order.
pub fn buses(machine: &dyn Machine) -> Result<Vec<String>, PciError> {
    machine.buses()
}

/// The number of the machine's NICs.
pub fn count(machine: &dyn Machine) -> Result<usize, PciError> {
    machine.buses().map(|b| b.len())
}

/// A MAC address as text (`02:00:00:00:00:01`).
pub(crate) fn format_mac(mac: &[u8; 6]) -> String {
    mac.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// A NIC this process holds.
pub struct Nic {
    name: String,
    bus: String,
    identity: Identity,
    limits: Limits,
    doorbells: Doorbells,
    session: Option<Session>,
}

impl std::fmt::Debug for Nic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nic")
            .field("name", &self.name)
            .field("bus", &self.bus)
            .field("mac", &format_mac(&self.identity.mac))
            .field("open", &self.session.is_some())
            .finish()
    }
}

impl Nic {
    /// Hold NIC `index` of `machine` and boot it: reset it, turn its relaxed ordering off, enable
    /// it, wait for its firmware, and bring the firmware up over HWRM as bnxt_en does (VER_GET,
    /// FUNC_RESET, FUNC_QCAPS, FUNC_DRV_RGTR, QUEUE_QPORTCFG, context memory, FUNC_QCFG,
    /// PORT_PHY_QCAPS/QCFG).
    ///
    /// On failure what was done is undone as `close` undoes it, and the error names the NIC and
    /// what failed. If a request went unanswered, the memory it named is kept until the next
    /// open of this NIC has reset it.
    pub fn open(machine: &dyn Machine, index: usize) -> Result<Nic, Error> {
        let name = name_of(index);
        let pci = |source| Error::Pci { nic: name.clone(), source };
        let buses = machine.buses().map_err(pci)?;
        let bus = buses.get(index).ok_or(PciError::NoSuchNic { index, count: buses.len() }).map_err(pci)?.clone();
        let function = machine.take(&bus).map_err(pci)?;
        // Relaxed ordering as the open finds it, before the reset sets it to its default.
        let exp_cap = function.find_capability(regs::CAP_ID_EXP).map_err(pci)?.ok_or_else(|| {
            pci(PciError::Config {
                offset: regs::EXP_DEVCTL,
                len: 2,
                reason: "the function has no PCI Express capability, so relaxed ordering cannot be turned off".into(),
            })
        })?;
        let devctl = function.config_read16(exp_cap + regs::EXP_DEVCTL).map_err(pci)?;
        let mut session = Session {
            name: name.clone(),
            function,
            exp_cap,
            relaxed_ordering_found: devctl & regs::EXP_DEVCTL_RELAX_EN != 0,
            changed: false,
            channel: None,
            wedged: Arc::new(OnceLock::new()),
            registered: false,
            ctx: ContextMemory::default(),
            retained: Vec::new(),
        };
        match session.boot(machine, &bus) {
            Ok(booted) => Ok(Nic {
                name,
                bus,
                identity: booted.identity,
                limits: booted.limits,
                doorbells: booted.doorbells,
                session: Some(session),
            }),
            Err(e) => {
                tracing::warn!(nic = %name, error = %e, "open failed; undoing it");
                let kept = session.shut_down();
                drop(session);
                quarantine::keep(machine, &bus, kept);
                Err(e)
            }
        }
    }

    /// Unregister from the firmware, turn bus mastering off, free all DMA memory, restore relaxed
    /// ordering as open found it, and release the function. A second close does nothing.
    pub fn close(&mut self) {
        if let Some(mut session) = self.session.take() {
            let kept = session.shut_down();
            drop(kept);
            drop(session);
            tracing::info!(nic = %self.name, "closed");
        }
    }

    /// Whether the NIC is still open.
    pub fn is_open(&self) -> bool {
        self.session.is_some()
    }

    /// The NIC's name (`BNXT`, `BNXT:1`, …).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The NIC's bus address.
    pub fn bus(&self) -> &str {
        &self.bus
    }

    /// The NIC's identity on the fabric.
    pub fn identity(&self) -> Identity {
        self.identity
    }

    /// Queue pairs and regions the NIC holds at once.
    ///
    /// # Panics
    ///
    /// On a closed NIC.
    pub fn limits(&self) -> Limits {
        self.session();
        self.limits
    }

    /// Where the NIC's doorbells are in BAR2.
    ///
    /// # Panics
    ///
    /// On a closed NIC.
    pub fn doorbells(&self) -> Doorbells {
        self.session();
        self.doorbells
    }

    /// The request whose missing answer wedged the NIC, if one did.
    ///
    /// # Panics
    ///
    /// On a closed NIC.
    pub fn wedged_by(&self) -> Option<&str> {
        self.session().wedged.get().map(String::as_str)
    }

    /// Send one HWRM request to the NIC's firmware and wait for its answer. Requests run one at
    /// a time; on a wedged NIC this fails at once.
    ///
    /// # Panics
    ///
    /// On a closed NIC.
    pub fn hwrm<R: Request>(&self, req: R) -> Result<R::Response, Error> {
        self.session().channel().send(req)
    }

    /// The NIC's PCI function, for the parts of the driver built on the open NIC.
    #[allow(dead_code)]
    pub(crate) fn function(&self) -> &Arc<dyn PciFunction> {
        &self.session().function
    }

    fn session(&self) -> &Session {
        match &self.session {
            Some(s) => s,
            None => panic!("{}: used after close (a closed NIC answers only name, bus and identity)", self.name),
        }
    }
}

impl Drop for Nic {
    fn drop(&mut self) {
        self.close();
    }
}

/// What a successful boot learnt.
struct Booted {
    identity: Identity,
    limits: Limits,
    doorbells: Doorbells,
}

/// A held function and everything the driver has done to it and given it.
struct Session {
    name: String,
    function: Arc<dyn PciFunction>,
    /// Offset of the PCIe capability.
    exp_cap: u16,
    /// Relaxed ordering was on when the open found the NIC.
    relaxed_ordering_found: bool,
    /// The function has been reset (and so may have been changed).
    changed: bool,
    channel: Option<Mutex<Channel>>,
    /// Name of the request that wedged the channel, shared with it.
    wedged: Arc<OnceLock<String>>,
    /// FUNC_DRV_RGTR succeeded.
    registered: bool,
    ctx: ContextMemory,
    /// Memory named by a request that got no answer.
    retained: Vec<Retained>,
}

impl Session {
    fn pci(&self, source: PciError) -> Error {
        Error::Pci { nic: self.name.clone(), source }
    }

    fn channel(&self) -> MutexGuard<'_, Channel> {
        let ch = self.channel.as_ref().expect("an open NIC has its HWRM channel");
        // A panic in another thread mid-request leaves the channel as a wedged firmware would:
        // carrying on is safe, the next request sees what the firmware did.
        ch.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn boot(&mut self, machine: &dyn Machine, bus: &str) -> Result<Booted, Error> {
        let function = self.function.clone();
        let f: &dyn PciFunction = &*function;

        self.changed = true;
        f.reset().map_err(|e| self.pci(e))?;
        let freed = quarantine::release(machine, bus);
        if freed > 0 {
            tracing::info!(nic = %self.name, freed, "freed memory kept from an earlier open, now that the NIC is reset");
        }
        self.relaxed_ordering(false)?;
        let command = f.config_read16(regs::COMMAND).map_err(|e| self.pci(e))?;
        f.config_write16(regs::COMMAND, command | regs::COMMAND_MEMORY | regs::COMMAND_MASTER)
            .map_err(|e| self.pci(e))?;

        let status = StatusReg::locate(f);
        fw_health::wait_ready(&self.name, f, status, fw_health::READY_TIMEOUT)?;

        let channel = Channel::new(&self.name, function.clone())?;
        self.wedged = channel.wedged();
        self.channel = Some(Mutex::new(channel));
        let name = self.name.clone();
        let ch = self.channel.as_mut().expect("just set").get_mut().unwrap_or_else(|e| e.into_inner());

        bringup::ver_get(&name, ch, f.clock())?;
        bringup::func_reset(ch)?;
        let caps = bringup::func_qcaps(&name, ch)?;
        bringup::drv_rgtr(ch)?;
        self.registered = true;
        bringup::queue_qportcfg(&name, ch)?;

        let offered = caps::walk(&name, ch)?;
        let plan = sizing::plan(&offered, caps.fw_limits).map_err(|e| match e {
            SizingError::Missing(_) => Error::Unsupported { nic: name.clone(), what: e.to_string() },
            SizingError::TooLarge { .. } => Error::Firmware { nic: name.clone(), what: e.to_string() },
        })?;
        self.ctx = ContextMemory::allocate(f, &plan).map_err(|e| Error::Pci { nic: name.clone(), source: e })?;
        if let Err((e, ty)) = self.ctx.configure(ch) {
            if matches!(e, Error::Timeout { .. })
                && let Some(memory) = self.ctx.take(ty)
            {
                self.retained.push(Retained::Context(memory));
            }
            return Err(e);
        }

        tracing::debug!(nic = %name, bytes = self.ctx.bytes(), "context memory given to the firmware");
        let doorbells = bringup::func_qcfg(&name, ch)?;
        let link_up = bringup::port_phy(ch)?;
        let identity = Identity::from_mac(caps.mac);
        tracing::info!(
            nic = %name,
            mac = %format_mac(&identity.mac),
            ipv4 = %identity.ipv4,
            qps = plan.limits.qps,
            regions = plan.limits.regions,
            link_up,
            "open"
        );
        Ok(Booted { identity, limits: plan.limits, doorbells })
    }

    /// Set or clear relaxed ordering in Device Control, and check that it took.
    fn relaxed_ordering(&self, on: bool) -> Result<(), Error> {
        let f = &*self.function;
        let at = self.exp_cap + regs::EXP_DEVCTL;
        let devctl = f.config_read16(at).map_err(|e| self.pci(e))?;
        // Never write the FLR bit back: it would reset the function.
        let devctl = devctl & !regs::EXP_DEVCTL_BCR_FLR;
        let wanted = if on { devctl | regs::EXP_DEVCTL_RELAX_EN } else { devctl & !regs::EXP_DEVCTL_RELAX_EN };
        f.config_write16(at, wanted).map_err(|e| self.pci(e))?;
        let now = f.config_read16(at).map_err(|e| self.pci(e))?;
        if (now & regs::EXP_DEVCTL_RELAX_EN != 0) != on {
            return Err(self.pci(PciError::Config {
                offset: at,
                len: 2,
                reason: format!(
                    "relaxed ordering stays {} after writing Device Control",
                    if on { "off" } else { "on" }
                ),
            }));
        }
        Ok(())
    }

    /// Undo what the open did: unregister (unless wedged), bus master off, free the context
    /// memory, relaxed ordering back as found. Returns the memory a request that got no answer
    /// named (the channel's buffer, context memory), which the caller keeps or frees.
    fn shut_down(&mut self) -> Vec<Retained> {
        let mut kept = std::mem::take(&mut self.retained);
        if let Some(channel) = self.channel.take() {
            let mut ch = channel.into_inner().unwrap_or_else(|e| e.into_inner());
            if self.registered
                && !ch.is_wedged()
                && let Err(e) = bringup::drv_unrgtr(&mut ch)
            {
                tracing::warn!(nic = %self.name, error = %e, "unregistering from the firmware failed");
            }
            if ch.is_wedged() {
                kept.push(Retained::Hwrm(ch.into_buffer()));
            }
        }
        self.registered = false;
        if self.changed {
            let f = &*self.function;
            let off =
                f.config_read16(regs::COMMAND).and_then(|c| f.config_write16(regs::COMMAND, c & !regs::COMMAND_MASTER));
            if let Err(e) = off {
                tracing::error!(nic = %self.name, error = %e, "turning bus mastering off failed");
            }
        }
        // The NIC can no longer reach memory: free what it was given.
        self.ctx = ContextMemory::default();
        if self.changed
            && let Err(e) = self.relaxed_ordering(self.relaxed_ordering_found)
        {
            tracing::error!(nic = %self.name, error = %e, "restoring relaxed ordering failed");
        }
        kept
    }
}

#[cfg(test)]
mod tests;
