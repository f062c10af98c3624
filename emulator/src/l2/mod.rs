//! The L2 data path of the model: the rings Linux's bnxt_en drives on a P7 (TX, RX, L2
//! completion rings, NQs), their doorbells, completions, notifications and MSI-X interrupts, the
//! offloads of the transmit and receive paths, receive steering (filters, receive masks, RSS),
//! and ring statistics.
//!
//! [`engine::L2Engine`] is what the device drives: L2-path doorbells in, the firmware's notices
//! (HWRM_DONE completions, async events), frames in and out, DMA through the function's view,
//! vectors out. The firmware side (ring allocation, VNICs, filters, reservations) is in
//! [`crate::firmware`]; the engine reads it through [`crate::firmware::state::FwState`].

pub mod counters;
pub mod descriptors;
pub mod doorbell;
pub mod engine;
pub mod frame;
pub mod queues;
pub mod ring;
pub mod rss;
mod rx;
pub mod rx_agg;
pub mod stats;
mod tx;

pub use counters::L2Counters;
pub use engine::{Env, L2Engine};
