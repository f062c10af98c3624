//! A vfio-user client connection, written from the protocol specification (QEMU
//! `docs/interop/vfio-user.rst`): version negotiation, device, region and interrupt information,
//! region reads and writes, DMA map and unmap with a memfd, device reset, and the project's
//! extension commands for model servers.
//!
//! One command at a time: a call sends its command and waits for the reply with the same message
//! id (the server answers in order; a reply to another id is a protocol error). The connection is
//! shared by the function's users behind a mutex, as the seam's methods take `&self`.
//!
//! Posted writes ([`Client::region_write_posted`]) are sent with the No_reply flag and not waited
//! for, as a PCIe memory write is posted: the server handles messages in the order they came, so
//! a later command (a read of any region) cannot pass them (QEMU's client does the same for BAR
//! stores: hw/vfio-user/device.c `vfio_user_device_io_region_write`, `VFIO_USER_NO_REPLY`). A
//! posted write the server refuses is only logged there.
//!
//! Posted writes are also combined ([`posted`]): held back in the connection and sent together,
//! in order, in one socket write, as a CPU's write-combining buffer holds stores until a fence.
//! They all go out, on every connection of the process, before any command that waits for a
//! reply, before a wait on the function's clock, when the driver is about to read what the
//! device writes ([`bnxt_pci::PciFunction::flush_posted`]), and when 64 KiB are held. So a
//! driver posting 256 receives rings 256 doorbells in one message train, not 256 socket writes.

use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bnxt_vfio_user::Message;
use bnxt_vfio_user::header::{Command, FLAG_NO_REPLY, FLAG_TYPE_MASK, TYPE_COMMAND, command_label};
use bnxt_vfio_user::linux::{DEVICE_FLAGS_PCI, PCI_NUM_REGIONS};
use bnxt_vfio_user::message::encode;
use bnxt_vfio_user::payload::{DeviceInfo, DmaMap, DmaUnmap, RegionAccess, RegionInfo, Version};
use bnxt_vfio_user::transport::{Receiver, TransportError, send_message};
use zerocopy::IntoBytes;

/// How long a reply may take (QEMU's default `x-msg-timeout`).
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest data transfer per region access the client asks for.
pub const MAX_DATA_XFER: usize = 1 << 20;

/// Why a vfio-user exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket could not be reached.
    #[error("cannot connect to {path}: {source}")]
    Connect {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Sending or receiving failed.
    #[error("{command}: {source}")]
    Transport {
        /// The command.
        command: String,
        /// Why.
        source: TransportError,
    },
    /// No reply came in time.
    #[error("{command}: no reply within {timeout:?}")]
    Timeout {
        /// The command.
        command: String,
        /// How long was waited.
        timeout: Duration,
    },
    /// The server answered with an error.
    #[error("{command} refused by the server: errno {errno} ({})", std::io::Error::from_raw_os_error(*.errno as i32))]
    Refused {
        /// The command.
        command: String,
        /// The errno it gave.
        errno: u32,
    },
    /// The reply did not make sense.
    #[error("{command}: bad reply: {what}")]
    BadReply {
        /// The command.
        command: String,
        /// What was wrong.
        what: String,
    },
    /// An earlier failure left the connection unusable.
    #[error("the connection to {0} is broken by an earlier failure")]
    Broken(String),
}

pub mod posted;

struct Conn {
    stream: UnixStream,
    rx: Receiver,
    next_id: u16,
    broken: bool,
    timeout: Duration,
    /// The socket, for messages.
    path: PathBuf,
    /// Posted writes not sent yet: whole messages, in order.
    posted: Vec<u8>,
}

impl Conn {
    /// Mark the connection broken and shut its socket: a failed or timed-out exchange may have
    /// left part of a message in it, or a reply still to come, so nothing more goes over it and
    /// the server sees the connection end instead of waiting for the rest of a message.
    fn break_off(&mut self) {
        self.broken = true;
        if let Err(e) = self.stream.shutdown(std::net::Shutdown::Both) {
            tracing::debug!(socket = %self.path.display(), error = %e, "shutting a broken connection down failed");
        }
    }
}

/// A connection to one vfio-user server.
pub struct Client {
    path: PathBuf,
    conn: Arc<Mutex<Conn>>,
    regions: Vec<RegionInfo>,
    info: DeviceInfo,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("path", &self.path).field("regions", &self.regions.len()).finish()
    }
}

impl Client {
    /// Connect to the server at `path`, negotiate version 0.0 and read the device's regions.
    pub fn connect(path: &Path) -> Result<Client, ClientError> {
        let stream =
            UnixStream::connect(path).map_err(|source| ClientError::Connect { path: path.to_path_buf(), source })?;
        Client::over(stream, path, REPLY_TIMEOUT)
    }

    /// As [`Client::connect`], over a stream already connected to the server (`path` names it in
    /// messages), waiting at most `timeout` for each reply.
    pub fn over(stream: UnixStream, path: &Path, timeout: Duration) -> Result<Client, ClientError> {
        stream
            .set_read_timeout(Some(timeout))
            .and_then(|()| stream.set_write_timeout(Some(timeout)))
            .map_err(|source| ClientError::Connect { path: path.to_path_buf(), source })?;
        let conn = Conn {
            stream,
            rx: Receiver::new(MAX_DATA_XFER + 4096),
            next_id: 0,
            broken: false,
            timeout,
            path: path.to_path_buf(),
            posted: Vec::new(),
        };
        let conn = Arc::new(Mutex::new(conn));
        posted::register(&conn);
        let mut client = Client { path: path.to_path_buf(), conn, regions: Vec::new(), info: DeviceInfo::default() };
        client.negotiate()?;
        let reply =
            client.call(Command::DeviceGetInfo, &[DeviceInfo { argsz: 16, ..Default::default() }.as_bytes()], &[])?;
        let (info, _) = reply.payload::<DeviceInfo>("device info").map_err(|e| bad(Command::DeviceGetInfo, e))?;
        if info.flags & DEVICE_FLAGS_PCI == 0 {
            return Err(bad(Command::DeviceGetInfo, format!("not a PCI device (flags 0x{:x})", info.flags)));
        }
        if info.num_regions < PCI_NUM_REGIONS || info.num_regions > 64 {
            return Err(bad(Command::DeviceGetInfo, format!("{} regions; a PCI device has 9 to 64", info.num_regions)));
        }
        client.info = info;
        for index in 0..info.num_regions {
            let req = RegionInfo { argsz: size_of::<RegionInfo>() as u32, index, ..Default::default() };
            let reply = client.call(Command::DeviceGetRegionInfo, &[req.as_bytes()], &[])?;
            let (region, _) =
                reply.payload::<RegionInfo>("region info").map_err(|e| bad(Command::DeviceGetRegionInfo, e))?;
            if region.index != index {
                return Err(bad(
                    Command::DeviceGetRegionInfo,
                    format!("asked for region {index}, got {}", region.index),
                ));
            }
            client.regions.push(region);
        }
        Ok(client)
    }

    fn negotiate(&mut self) -> Result<(), ClientError> {
        let caps = format!("{{\"capabilities\":{{\"max_msg_fds\":1,\"max_data_xfer_size\":{MAX_DATA_XFER}}}}}\0");
        let reply = self.call(Command::Version, &[Version { major: 0, minor: 0 }.as_bytes(), caps.as_bytes()], &[])?;
        let (v, json) = reply.payload::<Version>("version").map_err(|e| bad(Command::Version, e))?;
        if v.major != 0 || v.minor != 0 {
            return Err(bad(
                Command::Version,
                format!("server speaks {}.{}; this client speaks 0.0", v.major, v.minor),
            ));
        }
        if !json.is_empty() && json.last() != Some(&0) {
            return Err(bad(Command::Version, "capabilities are not NUL-terminated"));
        }
        Ok(())
    }

    /// The socket this client is connected to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The device information the server gave.
    pub fn device_info(&self) -> DeviceInfo {
        self.info
    }

    /// The information of region `index`, if the device has it.
    pub fn region(&self, index: u32) -> Option<&RegionInfo> {
        self.regions.get(index as usize)
    }

    /// Send `command` with payload `parts` and descriptors `fds`; the reply.
    pub fn call(&self, command: Command, parts: &[&[u8]], fds: &[BorrowedFd<'_>]) -> Result<Message, ClientError> {
        self.call_number(command as u16, parts, fds)
    }

    /// As [`Client::call`], for any command number (tests send ones the server does not know).
    pub fn call_number(&self, command: u16, parts: &[&[u8]], fds: &[BorrowedFd<'_>]) -> Result<Message, ClientError> {
        let label = command_label(command);
        // Every posted write of the process goes before a command that waits (the reply may
        // depend on a store to another device, as a read on a bus follows earlier writes).
        posted::send_all();
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        conn.send_posted();
        if conn.broken {
            return Err(ClientError::Broken(self.path.display().to_string()));
        }
        let id = conn.next_id;
        conn.next_id = conn.next_id.wrapping_add(1);
        let bytes = encode(id, command, TYPE_COMMAND, 0, parts);
        let result = exchange(&mut conn, &label, id, command, &bytes, fds);
        if matches!(
            result,
            Err(ClientError::Transport { .. } | ClientError::Timeout { .. } | ClientError::BadReply { .. })
        ) {
            conn.break_off();
        }
        result
    }

    /// Read `data.len()` bytes of region `region` at `offset`.
    pub fn region_read(&self, region: u32, offset: u64, data: &mut [u8]) -> Result<(), ClientError> {
        let req = RegionAccess { offset, region, count: data.len() as u32 };
        let reply = self.call(Command::RegionRead, &[req.as_bytes()], &[])?;
        let (got, bytes) =
            reply.payload::<RegionAccess>("region read reply").map_err(|e| bad(Command::RegionRead, e))?;
        if got.count as usize != data.len() || bytes.len() != data.len() {
            return Err(bad(
                Command::RegionRead,
                format!("asked for {} bytes, got {} (count {})", data.len(), bytes.len(), got.count),
            ));
        }
        data.copy_from_slice(bytes);
        Ok(())
    }

    /// Write `data` to region `region` at `offset` (and wait for the server to take it).
    pub fn region_write(&self, region: u32, offset: u64, data: &[u8]) -> Result<(), ClientError> {
        let req = RegionAccess { offset, region, count: data.len() as u32 };
        self.call(Command::RegionWrite, &[req.as_bytes(), data], &[])?;
        Ok(())
    }

    /// Write `data` to region `region` at `offset` without waiting for the server: a posted
    /// write, held back with the others until the next flush (see the module documentation).
    /// A failure to send it is logged when the held writes are sent, and breaks the connection.
    pub fn region_write_posted(&self, region: u32, offset: u64, data: &[u8]) -> Result<(), ClientError> {
        let req = RegionAccess { offset, region, count: data.len() as u32 };
        {
            let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
            if conn.broken {
                return Err(ClientError::Broken(self.path.display().to_string()));
            }
            let id = conn.next_id;
            conn.next_id = conn.next_id.wrapping_add(1);
            let bytes =
                encode(id, Command::RegionWrite as u16, TYPE_COMMAND | FLAG_NO_REPLY, 0, &[req.as_bytes(), data]);
            conn.posted.extend_from_slice(&bytes);
            if conn.posted.len() >= posted::HOLD_AT_MOST {
                conn.send_posted();
            }
        }
        // Told after the connection's lock is let go: see `posted::send_all`.
        posted::held();
        Ok(())
    }

    /// Lend `size` bytes of the file `fd` from `offset` at DMA address `iova`, readable and
    /// writable by the device.
    pub fn dma_map(&self, iova: u64, size: u64, offset: u64, fd: BorrowedFd<'_>) -> Result<(), ClientError> {
        use bnxt_vfio_user::linux::{DMA_MAP_FLAG_READ, DMA_MAP_FLAG_WRITE};
        let req = DmaMap { argsz: 32, flags: DMA_MAP_FLAG_READ | DMA_MAP_FLAG_WRITE, offset, address: iova, size };
        self.call(Command::DmaMap, &[req.as_bytes()], &[fd])?;
        Ok(())
    }

    /// Take back the DMA region at `iova` of `size` bytes.
    pub fn dma_unmap(&self, iova: u64, size: u64) -> Result<(), ClientError> {
        let req = DmaUnmap { argsz: 24, flags: 0, address: iova, size };
        self.call(Command::DmaUnmap, &[req.as_bytes()], &[])?;
        Ok(())
    }

    /// Reset the device.
    pub fn reset(&self) -> Result<(), ClientError> {
        self.call(Command::DeviceReset, &[], &[])?;
        Ok(())
    }
}

fn bad(command: Command, what: impl ToString) -> ClientError {
    ClientError::BadReply { command: command.name().to_string(), what: what.to_string() }
}

fn exchange(
    conn: &mut Conn,
    label: &str,
    id: u16,
    command: u16,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
) -> Result<Message, ClientError> {
    let transport = |source| ClientError::Transport { command: label.to_string(), source };
    send_message(conn.stream.as_fd(), bytes, fds, conn.timeout).map_err(transport)?;
    let Conn { stream, rx, timeout, .. } = conn;
    let reply = match rx.receive(stream.as_fd()) {
        Ok(Some(reply)) => reply,
        // A blocking socket with a receive timeout gives "nothing yet" only when the time is up.
        Ok(None) => return Err(ClientError::Timeout { command: label.to_string(), timeout: *timeout }),
        Err(e) => return Err(transport(e)),
    };
    let h = reply.header;
    if h.flags & FLAG_TYPE_MASK == TYPE_COMMAND {
        let what = format!(
            "the server sent a command ({}) where a reply was due; this client serves none",
            command_label(h.command)
        );
        return Err(ClientError::BadReply { command: label.to_string(), what });
    }
    if h.message_id != id || h.command != command {
        let what = format!("reply to message {} ({}) where {id} was due", h.message_id, command_label(h.command));
        return Err(ClientError::BadReply { command: label.to_string(), what });
    }
    if h.is_error() {
        return Err(ClientError::Refused { command: label.to_string(), errno: h.error });
    }
    Ok(reply)
}

#[cfg(test)]
mod tests;
