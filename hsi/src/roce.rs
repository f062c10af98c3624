//! The RoCE engine's interface: the firmware command channel (CMDQ/CREQ), work-queue entries,
//! completion entries, notification-queue entries and doorbells.
//!
//! Layouts are in [`layouts`] (generated from roce_hsi.h, offsets asserted at compile time).

#[allow(missing_docs)]
#[path = "gen/roce_layouts.rs"]
pub mod layouts;
