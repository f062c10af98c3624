//! The project's extension of the protocol: three commands a vfio-user client of a model NIC
//! (the runner's `vfio-user` target) uses to give each scenario a fresh NIC with its fault plan,
//! to see inside the NIC, and to arm a firmware fault in the middle of a run. Servers that are not the model answer them as unknown commands
//! (an error reply), so a client can tell.
//!
//! Numbers: the specification leaves the space above its own commands unassigned; the project
//! takes 0x7b00 and up ("7b" for "bnxt rig"), far from the 1-18 the specification uses, so a
//! future standard command cannot collide.
//!
//! They carry JSON (UTF-8, no terminating NUL), defined by the model (`bnxt_model_host::vfio_user::
//! control`):
//!
//! | command | request payload | reply payload |
//! | --- | --- | --- |
//! | [`CMD_RIG_RESTART`] | `{"seed": u64, "faults": FaultPlan}` | none |
//! | [`CMD_RIG_STATE`] | none | `{"mac": [u8; 6], "dma_mappings": …, "driver_registered": …, …}` |
//! | [`CMD_RIG_ARM`] | `{"target": {"hwrm": 22}, "nth": 1, "count": null, "action": {"hwrm": "wrong-seq-id"}}` | `{"id": u64}` |
//!
//! `RIG_RESTART` replaces the NIC by a new one (as a new in-process world does): the firmware's
//! state, its fault counters and plan, its config space. The client's interrupt file descriptors
//! are kept, as they belong to the connection; DMA regions it mapped before stay its own (it
//! unmaps them as usual) but the new NIC reaches only regions mapped after the restart.

/// Replace the NIC's state: new seed and fault plan, everything else as at power-on.
pub const CMD_RIG_RESTART: u16 = 0x7b00;
/// Report the NIC's state as JSON.
pub const CMD_RIG_STATE: u16 = 0x7b01;
/// Arm a firmware fault from now on (`nth` counted from now), as `bnxt-model ctl fault add`
/// does.
pub const CMD_RIG_ARM: u16 = 0x7b02;
