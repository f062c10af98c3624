//! `bnxt-interpose`: firmware faults on any BCM57608 function, injected at the driver's PCI seam.
//!
//! [`Interposed`] wraps a [`bnxt_pci::Machine`]: each function it hands out for a NIC that a fault plan
//! names is a layer between the driver and the real function (a card through VFIO, a model
//! behind a vfio-user socket, the in-process model). The layer recognises the driver's HWRM
//! requests (the BAR0 request window and its trigger, or the short-command form pointing into
//! DMA memory) and RoCE firmware commands (the CMDQ producer and trigger, and the slots they
//! name), counts each request and command type as the model does (`nth`: the occurrence since
//! the machine was made), and does to the one a fault names what the fault says, in the model's
//! own vocabulary ([`bnxt_model::faults`]):
//!
//! - `no-response`: the request never reaches the device; the driver's timeout runs;
//! - `acts-no-response`: the device gets it and acts on it, and its answer is kept from the
//!   driver (the answer goes to memory of the layer's, which it never copies over);
//! - `delay D`: the device's answer reaches the driver D after the device gave it;
//! - `error CODE` (HWRM) or a CREQ status (RoCE): the request does not reach the device; the
//!   layer answers it with that code, as a firmware refusing it would. Not acting on a refused
//!   request is what the model does, and what the driver relies on: it frees the memory a
//!   refused request named at once, which a device that had acted would still use.
//!
//! Faults can also be armed while the run goes on ([`Interposed::arm`], as the model's armed
//! faults: `nth` counted from the arming), on the NICs named for it when the machine is made
//! ([`Interposed::live`]): their functions carry the layer from the first open, and for RoCE
//! command faults the layer holds their CMDQ and CREQ from then on, since it can only take them
//! over when the CREQ is made.
//!
//! An answer the layer receives first is handed over when the driver next waits on its clock
//! (the layer's clock runs the hand-over before and after each sleep), so nothing runs beside
//! the driver. The layer only ever reads what the driver wrote and writes where the driver
//! waits; it never needs to know what a request means, except RING_ALLOC of the CREQ (whose ring
//! it replaces, `rcfw`) and FUNC_RESET (after which the firmware has no rings).
//!
//! What the layer did goes to `tracing` (target [`TARGET`]) and to its log
//! ([`Interposed::take_log`]), which the runner puts in transcripts.
#![deny(missing_docs)]
#![warn(unreachable_pub)]
// Unsafe code only where memory-mapped I/O and DMA need it: the modules that allow it say so.
#![deny(unsafe_code)]

mod function;
mod hwrm;
mod machine;
#[allow(unsafe_code)] // DMA and MMIO: each block has its SAFETY argument
mod memory;
mod rcfw;

pub use function::SeamFunction;
pub use machine::{Interposed, LiveError, SeamLine};

/// The `tracing` target of the layer's messages.
pub const TARGET: &str = "bnxt::interpose";

/// A RoCE command's name for the log (`CREATE_QP`).
fn command_name(opcode: u8) -> String {
    bnxt_hsi::roce::rcfw::opcode_name(opcode).map_or_else(|| format!("RoCE command 0x{opcode:02x}"), str::to_string)
}

/// An HWRM request's name for the log (`VER_GET`).
fn request_name(req_type: u16) -> String {
    bnxt_hsi::hwrm::req_name(req_type).map_or_else(|| format!("request 0x{req_type:04x}"), str::to_string)
}
