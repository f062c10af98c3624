//! The RoCE engine's interface: the firmware command channel (CMDQ/CREQ), work-queue entries,
//! completion entries, notification-queue entries and doorbells.
//!
//! Layouts are in [`layouts`] (generated from roce_hsi.h, offsets asserted at compile time); the
//! hand-written modules hold what the layouts cannot: the doorbell and MSN-entry encodings
//! ([`doorbell`], [`msn`]), channel constants and statuses ([`rcfw`]), CQE/NQE types and the
//! valid-bit rule ([`cqe`]), page-table entries ([`pte`]), QP states and access orders ([`qp`]),
//! byte orders ([`gid`]) and
//! each command paired with the completion that answers it ([`command`]).

// `link64B_per_rtt` keeps the header's spelling.
#[allow(missing_docs, non_snake_case)]
#[path = "gen/roce_layouts.rs"]
pub mod layouts;

pub mod command;
pub mod cqe;
pub mod doorbell;
pub mod gid;
pub mod msn;
pub mod pte;
pub mod qp;
pub mod rcfw;
