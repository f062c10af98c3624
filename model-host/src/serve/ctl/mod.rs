//! The live control channels: `bnxt-model serve --control SOCKET` (faults armed and cleared
//! while a guest runs, the NIC's state, the link taken away and given back, the card yanked) and
//! `bnxt-model segment --control SOCKET` (wire faults, a port's cable, the hub's state). JSON
//! lines on a UNIX socket of their own (mode 0600), so that a shell (`bnxt-model ctl`) and other
//! tools can speak them; docs/faults.md documents them and `bnxt-model ctl --schema` prints
//! their JSON Schema.

pub mod client;
pub mod hub;
pub mod protocol;
pub mod server;
