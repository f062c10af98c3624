//! The header every vfio-user message begins with, the command numbers and the header flags.
//!
//! Source: QEMU `docs/interop/vfio-user.rst`, sections "Header" and "Commands"; the same layout
//! is QEMU's `VFIOUserHdr` (hw/vfio-user/protocol.h).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Size of [`Header`] in bytes.
pub const HEADER_SIZE: usize = 16;

/// Flags: the message type field (bits 0-3).
pub const FLAG_TYPE_MASK: u32 = 0xf;
/// Message type: a command.
pub const TYPE_COMMAND: u32 = 0x0;
/// Message type: a reply to the command with the same message id.
pub const TYPE_REPLY: u32 = 0x1;
/// Flags: the sender of a command wants no reply (bit 4).
pub const FLAG_NO_REPLY: u32 = 1 << 4;
/// Flags: a reply reports an error, with an errno in [`Header::error`] (bit 5).
pub const FLAG_ERROR: u32 = 1 << 5;

/// The 16-byte message header.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct Header {
    /// Chosen by the sender of a command and echoed in its reply.
    pub message_id: u16,
    /// The command ([`Command`] as a number).
    pub command: u16,
    /// Size of the whole message, header included.
    pub message_size: u32,
    /// Type, No_reply and Error bits.
    pub flags: u32,
    /// In an error reply: a UNIX errno (may be 0).
    pub error: u32,
}

const _: () = assert!(size_of::<Header>() == HEADER_SIZE);

impl Header {
    /// Whether this is a reply.
    pub fn is_reply(&self) -> bool {
        self.flags & FLAG_TYPE_MASK == TYPE_REPLY
    }

    /// Whether this is a command.
    pub fn is_command(&self) -> bool {
        self.flags & FLAG_TYPE_MASK == TYPE_COMMAND
    }

    /// Whether a command asks for no reply.
    pub fn no_reply(&self) -> bool {
        self.flags & FLAG_NO_REPLY != 0
    }

    /// Whether a reply reports an error.
    pub fn is_error(&self) -> bool {
        self.flags & FLAG_ERROR != 0
    }
}

/// The commands of the protocol, by number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Command {
    /// `VFIO_USER_VERSION`: version and capability negotiation, the first message.
    Version = 1,
    /// `VFIO_USER_DMA_MAP`: the client lends memory for DMA.
    DmaMap = 2,
    /// `VFIO_USER_DMA_UNMAP`: the client takes a DMA region back.
    DmaUnmap = 3,
    /// `VFIO_USER_DEVICE_GET_INFO`.
    DeviceGetInfo = 4,
    /// `VFIO_USER_DEVICE_GET_REGION_INFO`.
    DeviceGetRegionInfo = 5,
    /// `VFIO_USER_DEVICE_GET_REGION_IO_FDS`.
    DeviceGetRegionIoFds = 6,
    /// `VFIO_USER_DEVICE_GET_IRQ_INFO`.
    DeviceGetIrqInfo = 7,
    /// `VFIO_USER_DEVICE_SET_IRQS`.
    DeviceSetIrqs = 8,
    /// `VFIO_USER_REGION_READ`.
    RegionRead = 9,
    /// `VFIO_USER_REGION_WRITE`.
    RegionWrite = 10,
    /// `VFIO_USER_DMA_READ` (server to client).
    DmaRead = 11,
    /// `VFIO_USER_DMA_WRITE` (server to client).
    DmaWrite = 12,
    /// `VFIO_USER_DEVICE_RESET`.
    DeviceReset = 13,
    /// `VFIO_USER_DIRTY_PAGES` (QEMU's protocol.h; dropped from the current specification).
    DirtyPages = 14,
    /// `VFIO_USER_REGION_WRITE_MULTI`.
    RegionWriteMulti = 15,
    /// `VFIO_USER_DEVICE_FEATURE`.
    DeviceFeature = 16,
    /// `VFIO_USER_MIG_DATA_READ`.
    MigDataRead = 17,
    /// `VFIO_USER_MIG_DATA_WRITE`.
    MigDataWrite = 18,
    /// The project's extension: replace the NIC's state (see [`crate::ext`]).
    RigRestart = crate::ext::CMD_RIG_RESTART,
    /// The project's extension: report the NIC's state (see [`crate::ext`]).
    RigState = crate::ext::CMD_RIG_STATE,
    /// The project's extension: arm a firmware fault from now on (see [`crate::ext`]).
    RigArm = crate::ext::CMD_RIG_ARM,
}

impl Command {
    /// The command with this number, if the protocol (or the project's extension) defines one.
    pub fn from_number(n: u16) -> Option<Command> {
        use Command::*;
        Some(match n {
            1 => Version,
            2 => DmaMap,
            3 => DmaUnmap,
            4 => DeviceGetInfo,
            5 => DeviceGetRegionInfo,
            6 => DeviceGetRegionIoFds,
            7 => DeviceGetIrqInfo,
            8 => DeviceSetIrqs,
            9 => RegionRead,
            10 => RegionWrite,
            11 => DmaRead,
            12 => DmaWrite,
            13 => DeviceReset,
            14 => DirtyPages,
            15 => RegionWriteMulti,
            16 => DeviceFeature,
            17 => MigDataRead,
            18 => MigDataWrite,
            crate::ext::CMD_RIG_RESTART => RigRestart,
            crate::ext::CMD_RIG_STATE => RigState,
            crate::ext::CMD_RIG_ARM => RigArm,
            _ => return None,
        })
    }

    /// The specification's name of the command.
    pub fn name(self) -> &'static str {
        use Command::*;
        match self {
            Version => "VFIO_USER_VERSION",
            DmaMap => "VFIO_USER_DMA_MAP",
            DmaUnmap => "VFIO_USER_DMA_UNMAP",
            DeviceGetInfo => "VFIO_USER_DEVICE_GET_INFO",
            DeviceGetRegionInfo => "VFIO_USER_DEVICE_GET_REGION_INFO",
            DeviceGetRegionIoFds => "VFIO_USER_DEVICE_GET_REGION_IO_FDS",
            DeviceGetIrqInfo => "VFIO_USER_DEVICE_GET_IRQ_INFO",
            DeviceSetIrqs => "VFIO_USER_DEVICE_SET_IRQS",
            RegionRead => "VFIO_USER_REGION_READ",
            RegionWrite => "VFIO_USER_REGION_WRITE",
            DmaRead => "VFIO_USER_DMA_READ",
            DmaWrite => "VFIO_USER_DMA_WRITE",
            DeviceReset => "VFIO_USER_DEVICE_RESET",
            DirtyPages => "VFIO_USER_DIRTY_PAGES",
            RegionWriteMulti => "VFIO_USER_REGION_WRITE_MULTI",
            DeviceFeature => "VFIO_USER_DEVICE_FEATURE",
            MigDataRead => "VFIO_USER_MIG_DATA_READ",
            MigDataWrite => "VFIO_USER_MIG_DATA_WRITE",
            RigRestart => "BNXT_RIG_RESTART",
            RigState => "BNXT_RIG_STATE",
            RigArm => "BNXT_RIG_ARM",
        }
    }
}

/// The name of command number `n` for logs (`command 0x1234` when unknown).
pub fn command_label(n: u16) -> String {
    Command::from_number(n).map(|c| c.name().to_string()).unwrap_or_else(|| format!("command 0x{n:04x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_number_round_trips() {
        for n in 0..=u16::MAX {
            if let Some(c) = Command::from_number(n) {
                assert_eq!(c as u16, n, "{}", c.name());
            }
        }
        assert_eq!(Command::from_number(0), None);
        assert_eq!(command_label(0x9999), "command 0x9999");
    }

    #[test]
    fn flags_decode_type_no_reply_and_error() {
        let h = Header { flags: TYPE_REPLY | FLAG_ERROR, ..Default::default() };
        assert!(h.is_reply() && h.is_error() && !h.is_command());
        let h = Header { flags: FLAG_NO_REPLY, ..Default::default() };
        assert!(h.is_command() && h.no_reply());
    }
}
