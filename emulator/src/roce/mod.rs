//! The RoCE engine of the model: the RoCE firmware channel (command queue, completion ring,
//! notification queues), the RoCE objects (GIDs, CQs, memory keys, QPs), doorbells, and the glue
//! between the BCM57608's work-queue and completion formats and the HSI-agnostic
//! reliable-connected [`transport`].
//!
//! [`RoceEngine`] is what the device drives: CMDQ triggers and BAR2 doorbells in, frames
//! in and out, DMA through the function's view, completions on the CREQ and CQs, MSI-X vectors
//! out. [`transport`] is the reliable-connected transport (requester, responder and completer),
//! which knows nothing of the BCM57608's work-queue or completion formats.
//!
//! The engine's parts are crate-private modules (hosts reach the engine through [`RoceEngine`]
//! and the device), so what nothing uses shows as dead code.

pub(crate) mod ah;
pub mod caps;
pub(crate) mod cc;
pub(crate) mod channel;
mod cmd;
mod commands;
pub(crate) mod counters;
pub(crate) mod cq;
mod datapath;
pub mod doorbell;
pub(crate) mod engine;
pub(crate) mod gid;
pub(crate) mod l2_gate;
pub(crate) mod memory;
pub(crate) mod mr;
pub(crate) mod nq;
pub(crate) mod pages;
mod post;
pub(crate) mod qp;
mod shared;
pub(crate) mod srq;
mod srq_path;
pub(crate) mod state;
mod timers;
pub mod transport;
mod ud;
pub(crate) mod wqe;

pub use counters::RoceCounters;
pub use engine::{Env, RoceEngine};
