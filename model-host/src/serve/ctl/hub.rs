//! The segment hub's control channel (`bnxt-model segment --control SOCKET`): wire faults set
//! and taken away while the peers run, a port's cable pulled and plugged back, the hub's state.
//! JSON lines as on serve's channel ([`super::server`]); `bnxt-model ctl --schema` prints the
//! schema of both (this one under `segment`).
//!
//! The wire faults are the model's own vocabulary ([`bnxt_model::faults::WirePlan`], as a
//! scenario's `wire:` fault and a `--faults` file's `wire` write them), applied by the hub to
//! every frame that enters it; a rule's `nic` names a port of the hub (the peers in the order
//! they joined, from 0; `state` lists them).

use bnxt_model::faults::WirePlan;
use bnxt_model::net::fault::FaultCounters;

use crate::serve::segment::SegmentSummary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A request on the hub's control channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "cmd", rename_all = "kebab-case", deny_unknown_fields)]
pub enum HubRequest {
    /// Pass every frame that enters the hub from now on through this wire plan, replacing the
    /// one before: its chances are drawn from `seed`, its rules' `nth` count the frames from
    /// now, and a rule's `nic` is a port of the hub, which a peer must hold.
    Wire {
        /// The wire faults.
        plan: WirePlan,
        /// Seed of the plan's draws (0 when absent).
        #[serde(default)]
        seed: u64,
    },
    /// Take the wire plan away: frames pass untouched again (a frame held back for reordering
    /// goes on when it was due).
    WireClear {},
    /// Pull the cable of `port` (`up: false`): no frame from it enters the hub, none goes out to
    /// it (each counted), until it is plugged back (`up: true`). The peer is not told: a model
    /// NIC behind the port keeps its link up (`bnxt-model ctl SERVE-SOCKET link down` takes the
    /// NIC's own link away).
    Link {
        /// The hub's port.
        port: u32,
        /// Whether the cable is in.
        up: bool,
    },
    /// The hub's ports, counters and wire plan.
    State {},
}

/// One port of the hub, as `state` shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PortState {
    /// Its number (rules' `nic`, `link`'s `port`).
    pub port: u32,
    /// Whether its cable is in.
    pub link_up: bool,
    /// Frames read from its peer.
    pub frames_in: u64,
    /// Frames written (or queued) to its peer.
    pub frames_out: u64,
    /// Frames to it dropped because its peer did not read ([`crate::serve::segment::MAX_BACKLOG`]).
    pub dropped_backlog: u64,
    /// Frames from or to it dropped while its cable was out.
    pub dropped_link_down: u64,
    /// Bytes waiting for its peer to read them.
    pub backlog_bytes: usize,
}

/// The hub as `state` shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HubState {
    /// The ports peers hold now, in order.
    pub ports: Vec<PortState>,
    /// The hub's counters since it started: peers that joined, frames in and out, dropped.
    #[serde(flatten)]
    pub counters: SegmentSummary,
    /// The wire plan frames pass through now, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<WirePlan>,
    /// The seed of its draws.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_seed: Option<u64>,
    /// What the wire plan did since it was set.
    pub wire_faults: FaultCounters,
    /// Control clients connected now.
    pub control_clients: usize,
}

/// The answer to a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HubReply {
    /// Whether the request was carried out.
    pub ok: bool,
    /// Why not, when it was not (bad JSON, an unknown command, a plan that does not hold
    /// together, a port no peer holds), naming what was wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `link`: whether the port's link changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_changed: Option<bool>,
    /// `state`: the hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<HubState>,
}

impl HubReply {
    /// A success with nothing more to say.
    pub fn ok() -> HubReply {
        HubReply { ok: true, ..HubReply::default() }
    }

    /// A refusal saying why.
    pub fn refused(why: impl Into<String>) -> HubReply {
        HubReply { ok: false, error: Some(why.into()), ..HubReply::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_as_documented_and_refuse_what_does_not_hold_together() {
        let wire: HubRequest =
            serde_json::from_str(r#"{"cmd":"wire","plan":{"drop":0.5,"rules":[{"nic":1,"nth":3,"kind":"corrupt"}]}}"#)
                .unwrap();
        let HubRequest::Wire { plan, seed } = &wire else { panic!("{wire:?}") };
        assert_eq!((plan.drop, plan.rules[0].nic, plan.rules[0].nth, *seed), (0.5, Some(1), Some(3), 0));
        assert_eq!(
            serde_json::from_str::<HubRequest>(r#"{"cmd":"link","port":2,"up":false}"#).unwrap(),
            HubRequest::Link { port: 2, up: false }
        );
        for (bad, why) in [
            (r#"{"cmd":"wire","plan":{"dorp":0.5}}"#, "dorp"),
            (r#"{"cmd":"wire","plan":{"rules":[{"kind":"explode"}]}}"#, "explode"),
            (r#"{"cmd":"wire","plan":{"delay_by":{"secs":18446744073709551615,"nanos":0}}}"#, "longest delay"),
            (r#"{"cmd":"link","up":false}"#, "port"),
            (r#"{"cmd":"fault-add"}"#, "fault-add"),
        ] {
            let e = serde_json::from_str::<HubRequest>(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
