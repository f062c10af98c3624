//! The RoCE engine of the model: the RoCE firmware channel (command queue, completion ring,
//! notification queues), the RoCE objects (GIDs, CQs, memory keys, QPs), doorbells, and the glue
//! between the BCM57608's work-queue and completion formats and the HSI-agnostic
//! reliable-connected [`transport`].
//!
//! [`engine::RoceEngine`] is what the device drives: CMDQ triggers and BAR2 doorbells in, frames
//! in and out, DMA through the function's view, completions on the CREQ and CQs, MSI-X vectors
//! out. [`transport`] is the reliable-connected transport (requester, responder and completer),
//! which knows nothing of the BCM57608's work-queue or completion formats.

pub mod ah;
pub mod caps;
pub mod cc;
pub mod channel;
mod cmd;
mod commands;
pub mod counters;
pub mod cq;
mod datapath;
pub mod doorbell;
pub mod engine;
pub mod gid;
pub mod l2_gate;
pub mod memory;
pub mod mr;
pub mod nq;
pub mod pages;
mod post;
pub mod qp;
mod shared;
pub mod srq;
mod srq_path;
pub mod state;
mod timers;
pub mod transport;
mod ud;
pub mod wqe;

pub use counters::RoceCounters;
pub use engine::{Env, RoceEngine};
