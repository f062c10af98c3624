//! The virtual Ethernet and RoCE v2 framing.
//!
//! Packet views in the smoltcp style (a `…Packet<T: AsRef<[u8]>>` over a buffer with named field
//! accessors, `new_checked` for untrusted input, setters when `T: AsMut<[u8]>`) and small `…Repr`
//! structs to emit: [`ethernet`], [`ipv4`], [`udp`], the InfiniBand transport headers ([`bth`],
//! [`opcode`], [`ext`]), the invariant CRC ([`icrc`]) and whole RoCE v2 frames ([`roce`]).
//!
//! The segment the NICs share: a learning [`switch`] that delivers frames after a latency from a
//! time-ordered queue, a [`fault`] stage between the ports and the switch, and a [`capture`] of what the switch saw
//! (written out as pcap by the host).
//! Nothing here reads a clock: time is a [`std::time::Duration`] since the start of the run,
//! passed in by the executor.
//!
//! How the RoCE engine uses it:
//!
//! * at RTR, a [`roce::Path`] for the QP ([`roce::Path::between`]);
//! * to send, [`roce::build_frame_with`] (payload written straight from host memory) into a
//!   `Vec<u8>`, then [`switch::Switch::send`] on its port;
//! * the executor asks [`switch::Switch::next_deadline`] when to wake and
//!   [`switch::Switch::poll`] for the frames due;
//! * on receive, [`roce::RoceFrame::parse`]; on `Err`, [`error::DropCounters::count`] and drop;
//! * or, to save the receiver the second ICRC pass where nothing can have changed a frame (no
//!   faults configured), the [`sealed`] path: `RcQp::poll_transmit_sealed`,
//!   [`switch::Switch::send_sealed`], [`switch::Switch::poll_wire_into`] and
//!   [`roce::RoceFrame::parse_wire`], with the same results (see `docs/performance.md`).

pub mod bth;
mod bytes;
pub mod capture;
pub mod error;
pub mod ethernet;
pub mod ext;
pub mod fault;
pub mod icrc;
pub mod ipv4;
pub mod ipv6;
pub mod opcode;
pub mod pool;
pub mod roce;
pub mod sealed;
pub mod source_port;
pub mod switch;
pub mod time_queue;
pub mod udp;

pub use error::{DropCounters, DropReason, Layer, WireError};
pub use ethernet::MacAddr;
pub use ipv4::ipv4_of_mac;
pub use opcode::Opcode;
pub use roce::{Path, RoceFrame, Transport, build_frame, build_frame_with};
