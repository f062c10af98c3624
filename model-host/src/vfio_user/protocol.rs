//! The server's side of the vfio-user protocol, without I/O: a whole message in, the reply
//! bytes out (or none for `No_reply` commands), with the served NIC as the device.
//!
//! Every command is checked before it touches the NIC; a malformed or unsupported command gets
//! an error reply with an errno (the specification: header only), is logged with its reason, and
//! leaves the connection usable. What the server does not implement is said plainly: region
//! I/O file descriptors, migration, dirty-page logging, device features (`ENOTSUP`), and
//! commands it does not know (`ENOSYS`).

use std::time::Duration;

use bnxt_vfio_user::Message;
use bnxt_vfio_user::header::{Command, command_label};
use bnxt_vfio_user::linux::{DEVICE_FLAGS_PCI, DEVICE_FLAGS_RESET, PCI_NUM_IRQS, errno};
use bnxt_vfio_user::message::{error_reply, reply};
use bnxt_vfio_user::payload::{
    DeviceInfo, DmaMap, DmaUnmap, IrqInfo, IrqSet, RegionAccess, RegionInfo, Version, WriteMulti, WriteOne,
};
use zerocopy::{FromBytes, IntoBytes};

use super::control::{Arm, Armed, Restart};
use super::nic::ServedNic;
use super::{Refusal, refuse};
use super::{irqs, regions};

/// Largest data transfer one region read or write may carry (the `max_data_xfer_size` the
/// server advertises, the specification's default).
pub const MAX_DATA_XFER: usize = 1 << 20;
/// Largest message the server accepts: a region write of [`MAX_DATA_XFER`] bytes with its
/// header and payload, with room to spare.
pub const MAX_MESSAGE: usize = MAX_DATA_XFER + 4096;
/// Most file descriptors the server takes in one message (`max_msg_fds`).
pub const MAX_MSG_FDS: usize = bnxt_vfio_user::transport::MAX_FDS;

/// The capabilities a client may send with `VFIO_USER_VERSION` (QEMU
/// docs/interop/vfio-user.rst, "Version"): numbers where the specification says numbers. Those the
/// server does not use are still checked for their type; names it does not know are ignored, as
/// the specification lets a newer peer add them.
#[derive(Debug, Default, serde::Deserialize)]
#[allow(dead_code, reason = "all but max_data_xfer_size are read only to check their types")]
struct ClientCapabilities {
    #[serde(default)]
    max_msg_fds: Option<u64>,
    #[serde(default)]
    max_data_xfer_size: Option<u64>,
    #[serde(default)]
    max_dma_maps: Option<u64>,
    #[serde(default)]
    pgsizes: Option<u64>,
    #[serde(default)]
    migration: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    twin_socket: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    write_multiple: Option<bool>,
}

/// Read the client's capabilities JSON: an object, whose `capabilities` (if any) is an object of
/// the types the specification gives; the reason when it is not.
fn client_capabilities(json: &[u8]) -> Result<ClientCapabilities, String> {
    let value: serde_json::Value = serde_json::from_slice(json).map_err(|e| format!("not JSON: {e}"))?;
    let serde_json::Value::Object(mut root) = value else {
        return Err(format!("{} is not a JSON object", json_kind(&value)));
    };
    let Some(caps) = root.remove("capabilities") else { return Ok(ClientCapabilities::default()) };
    if !caps.is_object() {
        return Err(format!("`capabilities` is {}, not an object", json_kind(&caps)));
    }
    let caps: ClientCapabilities = serde_json::from_value(caps).map_err(|e| format!("`capabilities`: {e}"))?;
    if caps.max_data_xfer_size == Some(0) {
        return Err("max_data_xfer_size 0 would allow no transfer at all".into());
    }
    Ok(caps)
}

/// Check a payload's `argsz`: at least `min` (the structure's size), at most `max` (for a request
/// whose `argsz` is its own size: what the message carries). Linux refuses a short one the same
/// way (drivers/vfio/vfio_iommu_type1.c `vfio_iommu_type1_map_dma`: `map.argsz < minsz`).
fn check_argsz(what: &str, argsz: u32, min: usize, max: usize) -> Result<(), Refusal> {
    let n = argsz as usize;
    if n < min {
        return Err(refuse(errno::EINVAL, format!("{what} argsz {n} is less than its {min}-byte structure")));
    }
    if n > max {
        return Err(refuse(
            errno::EINVAL,
            format!("{what} argsz {n} is more than the {max} bytes the message carries"),
        ));
    }
    Ok(())
}

/// A JSON value's kind, for a refusal.
fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

impl From<bnxt_vfio_user::WireError> for Refusal {
    fn from(e: bnxt_vfio_user::WireError) -> Refusal {
        refuse(errno::EINVAL, e.to_string())
    }
}

/// Counters of one connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProtocolStats {
    /// Commands handled (refused ones included).
    pub commands: u64,
    /// Commands refused with an error reply (or, for `No_reply` ones, only logged).
    pub refused: u64,
}

/// One client connection's protocol state.
#[derive(Debug)]
pub struct Protocol {
    negotiated: bool,
    client_max_xfer: usize,
    stats: ProtocolStats,
}

impl Default for Protocol {
    fn default() -> Protocol {
        Protocol::new()
    }
}

impl Protocol {
    /// A connection that has not negotiated a version yet.
    pub fn new() -> Protocol {
        Protocol { negotiated: false, client_max_xfer: MAX_DATA_XFER, stats: ProtocolStats::default() }
    }

    /// Counters so far.
    pub fn stats(&self) -> ProtocolStats {
        self.stats
    }

    /// Whether the version has been negotiated.
    pub fn negotiated(&self) -> bool {
        self.negotiated
    }

    /// Handle one message at time `now`; the bytes of the reply to send, if any.
    pub fn handle(&mut self, now: Duration, msg: Message, nic: &mut ServedNic) -> Option<Vec<u8>> {
        let header = msg.header;
        if header.is_reply() {
            tracing::warn!(command = %command_label(header.command), id = header.message_id, "a reply to no command this server sent; ignored");
            return None;
        }
        self.stats.commands += 1;
        let label = command_label(header.command);
        tracing::trace!(command = %label, id = header.message_id, size = header.message_size, fds = msg.fds.len(), "command");
        let result = self.dispatch(now, msg, nic);
        match result {
            Ok(parts) if !header.no_reply() => Some(reply(&header, &[&parts])),
            Ok(_) => None,
            Err(r) => {
                self.stats.refused += 1;
                tracing::warn!(command = %label, id = header.message_id, errno = r.errno, "refused: {}", r.reason);
                (!header.no_reply()).then(|| error_reply(&header, r.errno))
            }
        }
    }

    fn dispatch(&mut self, now: Duration, msg: Message, nic: &mut ServedNic) -> Result<Vec<u8>, Refusal> {
        let number = msg.header.command;
        let Some(command) = Command::from_number(number) else {
            return Err(refuse(errno::ENOSYS, format!("unknown command {number}")));
        };
        if command != Command::Version && !self.negotiated {
            return Err(refuse(
                errno::EINVAL,
                format!("{} before VFIO_USER_VERSION; the version must be negotiated first", command.name()),
            ));
        }
        let takes_fds = matches!(command, Command::DmaMap | Command::DeviceSetIrqs | Command::RigRestart);
        if !takes_fds && !msg.fds.is_empty() {
            return Err(refuse(
                errno::EINVAL,
                format!("{} came with {} file descriptors; it takes none", command.name(), msg.fds.len()),
            ));
        }
        match command {
            Command::Version => self.version(&msg),
            Command::DmaMap => {
                let (req, rest) = msg.payload::<DmaMap>("DMA map request")?;
                check_argsz("DMA_MAP", req.argsz, size_of::<DmaMap>(), size_of::<DmaMap>() + rest.len())?;
                let mut fds = msg.fds;
                if fds.len() > 1 {
                    return Err(refuse(
                        errno::EINVAL,
                        format!("DMA_MAP came with {} file descriptors; it takes at most one", fds.len()),
                    ));
                }
                nic.dma_map(&req, fds.pop())?;
                tracing::debug!(iova = req.address, size = req.size, offset = req.offset, "DMA region mapped");
                Ok(Vec::new())
            }
            Command::DmaUnmap => {
                let (req, _) = msg.payload::<DmaUnmap>("DMA unmap request")?;
                // argsz is the largest reply the client takes (a dirty bitmap may follow in
                // other servers' replies); it must hold the structure itself.
                check_argsz("DMA_UNMAP", req.argsz, size_of::<DmaUnmap>(), u32::MAX as usize)?;
                let n = nic.dma_unmap(&req)?;
                tracing::debug!(iova = req.address, size = req.size, regions = n, "DMA regions unmapped");
                Ok(DmaUnmap { argsz: size_of::<DmaUnmap>() as u32, ..req }.as_bytes().to_vec())
            }
            Command::DeviceGetInfo => {
                msg.payload::<DeviceInfo>("device info request")?;
                let info = DeviceInfo {
                    argsz: size_of::<DeviceInfo>() as u32,
                    flags: DEVICE_FLAGS_RESET | DEVICE_FLAGS_PCI,
                    num_regions: regions::NUM_REGIONS,
                    num_irqs: PCI_NUM_IRQS,
                };
                Ok(info.as_bytes().to_vec())
            }
            Command::DeviceGetRegionInfo => {
                let (req, _) = msg.payload::<RegionInfo>("region info request")?;
                let info = regions::info(req.index).ok_or_else(|| {
                    refuse(
                        errno::EINVAL,
                        format!("region {} does not exist (the device has {})", req.index, regions::NUM_REGIONS),
                    )
                })?;
                Ok(info.as_bytes().to_vec())
            }
            Command::DeviceGetIrqInfo => {
                let (req, _) = msg.payload::<IrqInfo>("interrupt info request")?;
                let info = irqs::info(req.index).ok_or_else(|| {
                    refuse(
                        errno::EINVAL,
                        format!("interrupt type {} does not exist (the device has {PCI_NUM_IRQS})", req.index),
                    )
                })?;
                Ok(info.as_bytes().to_vec())
            }
            Command::DeviceSetIrqs => {
                let (req, data) = msg.payload::<IrqSet>("set-interrupts request")?;
                let data = data.to_vec();
                nic.set_irqs(req.flags, req.index, req.start, req.count, &data, msg.fds)?;
                Ok(Vec::new())
            }
            Command::RegionRead => {
                let (req, _) = msg.payload::<RegionAccess>("region read request")?;
                let count = self.transfer_size(req.count)?;
                let mut out = req.as_bytes().to_vec();
                out.resize(out.len() + count, 0);
                let head = size_of::<RegionAccess>();
                nic.region_read(now, req.region, req.offset, &mut out[head..])?;
                Ok(out)
            }
            Command::RegionWrite => {
                let (req, data) = msg.payload::<RegionAccess>("region write request")?;
                let count = self.transfer_size(req.count)?;
                if data.len() != count {
                    return Err(refuse(
                        errno::EINVAL,
                        format!("region write says {count} bytes and carries {}", data.len()),
                    ));
                }
                nic.region_write(now, req.region, req.offset, data)?;
                Ok(req.as_bytes().to_vec())
            }
            Command::RegionWriteMulti => {
                let (req, mut rest) = msg.payload::<WriteMulti>("write-multiple request")?;
                let fits = rest.len() / size_of::<WriteOne>();
                if req.wr_cnt > fits as u64 {
                    return Err(refuse(
                        errno::EINVAL,
                        format!("write-multiple says {} writes and carries {fits}", req.wr_cnt),
                    ));
                }
                for i in 0..req.wr_cnt {
                    let (one, tail) =
                        WriteOne::read_from_prefix(rest).map_err(|_| refuse(errno::EINVAL, "truncated write"))?;
                    rest = tail;
                    if one.count == 0 || one.count > 8 {
                        return Err(refuse(
                            errno::EINVAL,
                            format!("write {i} of a write-multiple has {} bytes (1 to 8)", one.count),
                        ));
                    }
                    nic.region_write(now, one.region, one.offset, &one.data[..one.count as usize])?;
                }
                Ok(req.as_bytes().to_vec())
            }
            Command::DeviceReset => {
                nic.reset(now);
                Ok(Vec::new())
            }
            Command::RigRestart => {
                let restart: Restart = serde_json::from_slice(&msg.body).map_err(|e| {
                    refuse(errno::EINVAL, format!("BNXT_RIG_RESTART payload is not a restart request: {e}"))
                })?;
                let mut fds = msg.fds;
                if fds.len() > 1 {
                    return Err(refuse(
                        errno::EINVAL,
                        format!("BNXT_RIG_RESTART came with {} file descriptors; it takes at most one", fds.len()),
                    ));
                }
                let (seed, firmware, wire) = (restart.seed, restart.faults.firmware.len(), restart.faults.wire.clone());
                let capture = restart.capture;
                nic.restart(now, restart, fds.pop())?;
                tracing::info!(seed, faults = firmware, ?wire, capture, "NIC restarted by the client");
                Ok(Vec::new())
            }
            Command::RigArm => {
                let arm: Arm = serde_json::from_slice(&msg.body)
                    .map_err(|e| refuse(errno::EINVAL, format!("BNXT_RIG_ARM payload is not a fault to arm: {e}")))?;
                let id = nic
                    .arm_fault(now, arm.target, arm.nth, arm.count, arm.action.clone())
                    .map_err(|e| refuse(errno::EINVAL, format!("BNXT_RIG_ARM: {e}")))?;
                tracing::info!(id, target = ?arm.target, action = ?arm.action, nth = ?arm.nth, count = ?arm.count, "fault armed by the client");
                serde_json::to_vec(&Armed { id })
                    .map_err(|e| refuse(errno::EIO, format!("cannot encode the reply: {e}")))
            }
            Command::RigState => {
                nic.advance_to(now);
                serde_json::to_vec(&nic.state())
                    .map_err(|e| refuse(errno::EIO, format!("cannot encode the state: {e}")))
            }
            Command::DmaRead | Command::DmaWrite => {
                Err(refuse(errno::EINVAL, format!("{} goes from server to client, not to the server", command.name())))
            }
            Command::DeviceGetRegionIoFds
            | Command::DirtyPages
            | Command::DeviceFeature
            | Command::MigDataRead
            | Command::MigDataWrite => {
                Err(refuse(errno::ENOTSUP, format!("{} is not implemented by this server", command.name())))
            }
        }
    }

    fn transfer_size(&self, count: u32) -> Result<usize, Refusal> {
        let limit = MAX_DATA_XFER.min(self.client_max_xfer);
        let count = count as usize;
        if count > limit {
            return Err(refuse(
                errno::E2BIG,
                format!("transfer of {count} bytes is more than max_data_xfer_size {limit}"),
            ));
        }
        Ok(count)
    }

    fn version(&mut self, msg: &Message) -> Result<Vec<u8>, Refusal> {
        if self.negotiated {
            return Err(refuse(errno::EINVAL, "VFIO_USER_VERSION a second time"));
        }
        let (proposed, json) = msg.payload::<Version>("version")?;
        if proposed.major != 0 {
            return Err(refuse(
                errno::ENOTSUP,
                format!("protocol version {}.{}; this server speaks 0.0", proposed.major, proposed.minor),
            ));
        }
        let json = json.strip_suffix(&[0]).unwrap_or(json);
        if !json.is_empty() {
            let caps = client_capabilities(json)
                .map_err(|why| refuse(errno::EINVAL, format!("version capabilities: {why}")))?;
            if let Some(n) = caps.max_data_xfer_size {
                self.client_max_xfer = usize::try_from(n).unwrap_or(usize::MAX);
            }
        }
        let caps = serde_json::json!({
            "capabilities": {
                "max_msg_fds": MAX_MSG_FDS,
                "max_data_xfer_size": MAX_DATA_XFER,
                "pgsizes": super::dma::PAGE,
                "max_dma_maps": super::dma::MAX_DMA_MAPS,
            }
        });
        let mut out = Version { major: 0, minor: 0 }.as_bytes().to_vec();
        out.extend_from_slice(caps.to_string().as_bytes());
        out.push(0);
        self.negotiated = true;
        tracing::info!(client_minor = proposed.minor, "version negotiated: 0.0");
        Ok(out)
    }
}
