//! The vfio-user protocol (QEMU `docs/interop/vfio-user.rst`, protocol version 0.0 as QEMU 10.1+
//! speaks it) as data, and a transport for its messages over a UNIX stream socket.
//!
//! Both ends of the project's vfio-user socket use this crate: the model's server
//! (`bnxt-model serve`) and the driver's client backend. Neither depends on the other; they meet
//! here, as they meet in `bnxt-hsi` for the device's own interface.
//!
//! * [`header`]: the 16-byte message header, command numbers and flags;
//! * [`payload`]: the fixed part of each command's payload, as `zerocopy` structs;
//! * [`linux`]: the constants vfio-user reuses from Linux `<linux/vfio.h>`;
//! * [`ext`]: the project's own extension commands (fault plans and state of a model NIC);
//! * [`message`]: a whole message (header, body, file descriptors), building and parsing;
//! * [`transport`]: sending and receiving messages with `SCM_RIGHTS` file descriptors, as a
//!   non-blocking, incremental receiver that never trusts a size it was sent.
//!
//! All numbers are in the host's byte order, as the specification says for this revision.
#![deny(missing_docs)]
#![warn(unreachable_pub)]
#![forbid(unsafe_code)]

pub mod ext;
pub mod header;
pub mod linux;
pub mod message;
pub mod payload;
pub mod transport;

pub use header::{Command, Header};
pub use message::{Message, WireError};
pub use transport::{Receiver, TransportError, send_message};
