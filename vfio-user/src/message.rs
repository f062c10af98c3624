//! A whole vfio-user message: header, payload bytes and the file descriptors that came with it;
//! how to build one and how to read a fixed payload out of one without trusting its sizes.

use std::os::fd::OwnedFd;

use zerocopy::{FromBytes, Immutable, IntoBytes};

use crate::header::{FLAG_ERROR, HEADER_SIZE, Header, TYPE_COMMAND, TYPE_REPLY, command_label};

/// Why a message's payload could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The payload is shorter than the structure the command needs.
    #[error("{command} payload of {have} bytes is shorter than the {need}-byte {what}")]
    Short {
        /// The command's name.
        command: String,
        /// What was expected.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
}

/// One message.
#[derive(Debug, Default)]
pub struct Message {
    /// The header as received (its `message_size` equals `16 + body.len()`).
    pub header: Header,
    /// Everything after the header.
    pub body: Vec<u8>,
    /// File descriptors that came with the message (`SCM_RIGHTS`), in order.
    pub fds: Vec<OwnedFd>,
}

impl Message {
    /// Read a `T` from the start of the payload; the rest of the payload is returned beside it.
    pub fn payload<T: FromBytes>(&self, what: &'static str) -> Result<(T, &[u8]), WireError> {
        T::read_from_prefix(&self.body).map_err(|_| WireError::Short {
            command: command_label(self.header.command),
            what,
            need: size_of::<T>(),
            have: self.body.len(),
        })
    }
}

/// The bytes of a message: header with the right size, then each part in order.
pub fn encode(message_id: u16, command: u16, flags: u32, error: u32, parts: &[&[u8]]) -> Vec<u8> {
    let len = HEADER_SIZE + parts.iter().map(|p| p.len()).sum::<usize>();
    let header = Header {
        message_id,
        command,
        message_size: u32::try_from(len).expect("vfio-user messages are far below 4 GiB"),
        flags,
        error,
    };
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(header.as_bytes());
    for p in parts {
        out.extend_from_slice(p);
    }
    out
}

/// A command message with a fixed payload and trailing bytes.
pub fn command<T: IntoBytes + Immutable>(
    message_id: u16,
    command: u16,
    flags: u32,
    payload: &T,
    tail: &[u8],
) -> Vec<u8> {
    encode(message_id, command, TYPE_COMMAND | flags, 0, &[payload.as_bytes(), tail])
}

/// A successful reply to `to` carrying `parts`.
pub fn reply(to: &Header, parts: &[&[u8]]) -> Vec<u8> {
    encode(to.message_id, to.command, TYPE_REPLY, 0, parts)
}

/// An error reply to `to` with `errno` (the specification: header only).
pub fn error_reply(to: &Header, errno: u32) -> Vec<u8> {
    encode(to.message_id, to.command, TYPE_REPLY | FLAG_ERROR, errno, &[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::RegionAccess;

    #[test]
    fn encode_sets_the_size_and_payload_reads_back() {
        let access = RegionAccess { offset: 0x100, region: 7, count: 4 };
        let bytes = command(9, 9, 0, &access, &[1, 2, 3, 4]);
        assert_eq!(bytes.len(), 16 + 16 + 4);
        let header = Header::read_from_prefix(&bytes).unwrap().0;
        assert_eq!((header.message_id, header.command, header.message_size), (9, 9, 36));
        let msg = Message { header, body: bytes[16..].to_vec(), fds: Vec::new() };
        let (got, tail) = msg.payload::<RegionAccess>("region access").unwrap();
        assert_eq!((got, tail), (access, &[1u8, 2, 3, 4][..]));
    }

    #[test]
    fn short_payloads_are_named() {
        let msg = Message { header: Header { command: 2, ..Default::default() }, body: vec![0; 8], fds: Vec::new() };
        let err = msg.payload::<crate::payload::DmaMap>("DMA map").unwrap_err();
        assert_eq!(err.to_string(), "VFIO_USER_DMA_MAP payload of 8 bytes is shorter than the 32-byte DMA map");
    }

    #[test]
    fn error_replies_are_header_only() {
        let to = Header { message_id: 3, command: 5, message_size: 48, flags: 0, error: 0 };
        let bytes = error_reply(&to, 22);
        let h = Header::read_from_bytes(&bytes).unwrap();
        assert!(h.is_reply() && h.is_error());
        assert_eq!((h.message_id, h.command, h.message_size, h.error), (3, 5, 16, 22));
    }
}
