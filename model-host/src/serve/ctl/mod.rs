//! The live control channel of `bnxt-model serve --control SOCKET`: faults armed and cleared
//! while a guest runs, the NIC's state, the link taken away and given back, the card yanked.
//! JSON lines on a UNIX socket of its own (mode 0600) beside the vfio-user one, so that a shell
//! (`bnxt-model ctl`) and other tools can speak it; docs/faults.md documents it and
//! `bnxt-model ctl --schema` prints its JSON Schema.

pub mod client;
pub mod protocol;
pub mod server;
