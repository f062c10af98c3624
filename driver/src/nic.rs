//! NICs: open, close, names and identity (the contract's "NICs" and "Changes to the machine").

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use bnxt_hsi::hwrm::Request;

use crate::error::Error;
use crate::quarantine;
use crate::session::Session;
use bnxt_pci::{Machine, PciError};

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

/// How the driver runs a NIC it opens, where that differs from what the firmware decides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// How long a RoCE firmware command is waited for before the NIC is called wedged. `None`:
    /// the firmware's ceiling (VER_GET's `max_req_timeout`, 40 s when it is 0), as bnxt_re takes
    /// its command timeout (`rcfw->max_timeout` from `hwrm_cmd_max_timeout`, main.c
    /// `bnxt_re_query_hwrm_intf_version`). A lab sets it short so that a command a faulty
    /// firmware never answers costs seconds of real time, not 40.
    pub command_timeout: Option<Duration>,
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
    /// PORT_PHY_QCAPS/QCFG), then start its RoCE engine as bnxt_re does (the CREQ and CMDQ,
    /// QUERY_FUNC, a statistics context, INITIALIZE_FW, an NQ, ADD_GID of its GID).
    ///
    /// On failure what was done is undone as `close` undoes it, and the error names the NIC and
    /// what failed. If a request went unanswered, the memory it named is kept until the next
    /// open of this NIC has reset it.
    pub fn open(machine: &dyn Machine, index: usize) -> Result<Nic, Error> {
        Nic::open_with(machine, index, &OpenOptions::default())
    }

    /// As [`Nic::open`], run as `options` say where they differ from what the firmware decides.
    pub fn open_with(machine: &dyn Machine, index: usize, options: &OpenOptions) -> Result<Nic, Error> {
        let name = name_of(index);
        let pci = |source| Error::Pci { nic: name.clone(), source };
        let buses = machine.buses().map_err(pci)?;
        let bus = buses.get(index).ok_or(PciError::NoSuchNic { index, count: buses.len() }).map_err(pci)?.clone();
        let function = machine.take(&bus).map_err(pci)?;
        let mut session = Session::new(&name, function)?;
        match session.boot(machine, &bus, options) {
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

    /// Destroy the queue pairs and regions still open, stop the RoCE engine, unregister from the
    /// firmware (none of which is sent to a wedged NIC), turn bus mastering off, free all DMA
    /// memory (the regions' included), restore relaxed ordering as open found it, and release
    /// the function. Later calls on the NIC's regions and queue pairs panic, but for their
    /// lengths, endpoints and room. A second close does nothing.
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

    /// Bytes of DMA memory given to the firmware as context memory (tables included): what the
    /// open sized from the firmware's FUNC_BACKING_STORE_QCAPS_V2 answers.
    ///
    /// # Panics
    ///
    /// On a closed NIC.
    pub fn context_memory_bytes(&self) -> usize {
        self.session().context_bytes()
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

    /// How long a RoCE firmware command is waited for before the NIC is called wedged: what
    /// [`OpenOptions::command_timeout`] said, or the firmware's ceiling.
    ///
    /// # Panics
    ///
    /// On a closed NIC.
    pub fn command_timeout(&self) -> Duration {
        self.session().roce().command_timeout()
    }

    /// The request whose missing answer wedged the NIC, if one did.
    ///
    /// # Panics
    ///
    /// On a closed NIC.
    pub fn wedged_by(&self) -> Option<&str> {
        self.session().wedged_by()
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

    /// The NIC's RoCE engine, for regions and queue pairs.
    ///
    /// # Panics
    ///
    /// On a closed NIC.
    pub(crate) fn roce(&self) -> &Arc<crate::roce::Roce> {
        self.session().roce()
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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod hostile_tests;
