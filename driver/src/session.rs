//! A held PCI function and everything the driver has done to it and given it: the boot that
//! `Nic::open` runs and the undoing that `close` (or a failed open) runs.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::bringup;
use crate::ctx_mem::sizing::{self, SizingError};
use crate::ctx_mem::{ContextMemory, caps};
use crate::error::Error;
use crate::fw_health::{self, StatusReg};
use crate::hwrm::Channel;
use crate::l2::{self, L2};
use crate::nic::{Doorbells, Identity, Limits, OpenOptions, format_mac};
use crate::quarantine::{self, Retained};
use crate::roce::db::DbPage;
use crate::roce::{self, Memory, Roce};
use bnxt_pci::{ConfigExt, Machine, PciError, PciFunction, regs};

/// What a successful boot learnt.
pub(crate) struct Booted {
    /// The NIC's identity on the fabric.
    pub identity: Identity,
    /// What its context memory lets it hold.
    pub limits: Limits,
    /// Where its doorbells are.
    pub doorbells: Doorbells,
}

/// A held function and everything the driver has done to it and given it.
pub(crate) struct Session {
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
    /// The L2 side, once open.
    l2: Option<L2>,
    /// The RoCE engine, once up.
    roce: Option<Arc<Roce>>,
    /// Memory a RoCE bring-up that failed had given the firmware.
    roce_memory: Vec<Memory>,
}

impl Session {
    /// Hold `function` for the NIC called `name`, noting relaxed ordering as found (before a
    /// reset sets it to its default). Changes nothing on the function.
    pub(crate) fn new(name: &str, function: Arc<dyn PciFunction>) -> Result<Session, Error> {
        let pci = |source| Error::Pci { nic: name.to_string(), source };
        let exp_cap = function.find_capability(regs::CAP_ID_EXP).map_err(pci)?.ok_or_else(|| {
            pci(PciError::Config {
                offset: regs::EXP_DEVCTL,
                len: 2,
                reason: "the function has no PCI Express capability, so relaxed ordering cannot be turned off".into(),
            })
        })?;
        let devctl = function.config_read16(exp_cap + regs::EXP_DEVCTL).map_err(pci)?;
        Ok(Session {
            name: name.to_string(),
            function,
            exp_cap,
            relaxed_ordering_found: devctl & regs::EXP_DEVCTL_RELAX_EN != 0,
            changed: false,
            channel: None,
            wedged: Arc::new(OnceLock::new()),
            registered: false,
            ctx: ContextMemory::default(),
            retained: Vec::new(),
            l2: None,
            roce: None,
            roce_memory: Vec::new(),
        })
    }

    /// The RoCE engine.
    pub(crate) fn roce(&self) -> &Arc<Roce> {
        self.roce.as_ref().expect("an open NIC has its RoCE engine")
    }

    /// The request whose missing answer wedged the channel, if one did.
    pub(crate) fn wedged_by(&self) -> Option<&str> {
        self.wedged.get().map(String::as_str)
    }

    fn pci(&self, source: PciError) -> Error {
        Error::Pci { nic: self.name.clone(), source }
    }

    /// Bytes of context memory given to the firmware.
    pub(crate) fn context_bytes(&self) -> usize {
        self.ctx.bytes()
    }

    /// The HWRM channel, locked: requests run one at a time.
    pub(crate) fn channel(&self) -> MutexGuard<'_, Channel> {
        let ch = self.channel.as_ref().expect("an open NIC has its HWRM channel");
        // A panic in another thread mid-request leaves the channel as a wedged firmware would:
        // carrying on is safe, the next request sees what the firmware did.
        ch.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reset the function, turn relaxed ordering off, enable it, wait for the firmware and bring
    /// it up; what the bring-up learnt.
    pub(crate) fn boot(&mut self, machine: &dyn Machine, bus: &str, options: &OpenOptions) -> Result<Booted, Error> {
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
        let if_change = bringup::drv_rgtr(ch)?;
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
        let resources = bringup::resource_qcaps(ch)?;
        let qcfg = bringup::func_qcfg(&name, ch)?;
        let doorbells = qcfg.doorbells;
        let roce_vnic_mode = bringup::vnic_qcaps(&name, ch)?;
        let link_up = bringup::port_phy(ch)?;
        let identity = Identity::from_mac(caps.mac);

        let inputs = l2::Inputs {
            nic: &name,
            function: &function,
            db: DbPage::new(&function, doorbells.offset),
            mac: caps.mac,
            if_change,
            caps: resources,
            max_mtu: qcfg.max_mtu,
            roce_vnic_mode,
            clock: f.clock(),
        };
        match l2::start(inputs, ch) {
            Ok(opened) => self.l2 = Some(opened),
            Err((e, memory)) => {
                self.roce_memory = memory;
                return Err(e);
            }
        }
        let command_timeout = options.command_timeout.unwrap_or_else(|| ch.timeouts().rcfw_wait());
        let inputs = roce::device::Inputs {
            nic: &name,
            function: &function,
            doorbells,
            identity,
            limits: plan.limits,
            command_timeout,
        };
        match roce::device::start(inputs, ch) {
            Ok(engine) => self.roce = Some(Arc::new(engine)),
            Err((e, memory)) => {
                self.roce_memory = memory;
                return Err(e);
            }
        }
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

    /// Undo what the open did: the RoCE engine and its objects, unregister (unless wedged), bus
    /// master off, free the context memory, relaxed ordering back as found. Returns the memory a
    /// request that got no answer named (the channel's buffer, context memory, the RoCE
    /// engine's memory), which the caller keeps or frees.
    pub(crate) fn shut_down(&mut self) -> Vec<Retained> {
        let mut kept = std::mem::take(&mut self.retained);
        let mut roce_memory = std::mem::take(&mut self.roce_memory);
        if let Some(channel) = self.channel.take() {
            let mut ch = channel.into_inner().unwrap_or_else(|e| e.into_inner());
            if let Some(engine) = self.roce.take() {
                roce_memory.extend(engine.shut_down(&mut ch));
            }
            if let Some(l2) = self.l2.take() {
                roce_memory.extend(l2.undo(&self.name, &mut ch));
            }
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
        // The NIC can no longer reach memory: free what it was given, but what an unanswered
        // request may have named is kept (a firmware that does not answer may still act).
        self.ctx = ContextMemory::default();
        if self.wedged.get().is_some() {
            if !roce_memory.is_empty() {
                kept.push(Retained::Roce(roce_memory));
            }
        } else {
            drop(roce_memory);
        }
        if self.changed
            && let Err(e) = self.relaxed_ordering(self.relaxed_ordering_found)
        {
            tracing::error!(nic = %self.name, error = %e, "restoring relaxed ordering failed");
        }
        kept
    }
}
