//! What the hub does with a request of its control channel ([`crate::serve::ctl::hub`]).

use bnxt_model::faults::WirePlan;
use bnxt_model::net::fault::FaultStage;
use bnxt_model::net::switch::PortId;

use super::HubCore;
use crate::serve::ctl::hub::{HubReply, HubRequest, HubState};

impl HubCore {
    /// Carry out `request` (`clients`: control clients connected now, for `state`).
    pub(super) fn handle(&mut self, request: HubRequest, clients: usize) -> HubReply {
        match request {
            HubRequest::Wire { plan, seed } => match self.set_wire(plan, seed) {
                Ok(()) => HubReply::ok(),
                Err(why) => HubReply::refused(why),
            },
            HubRequest::WireClear {} => {
                self.switch.set_faults(FaultStage::none());
                self.wire = None;
                tracing::info!("wire plan cleared");
                HubReply::ok()
            }
            HubRequest::Link { port, up } => {
                let connected = self.connected();
                let Some(peer) = self.peers.get_mut(&PortId(port)) else {
                    return HubReply::refused(format!("no peer holds port {port} (connected: {connected})"));
                };
                let changed = peer.port.link_up != up;
                peer.port.link_up = up;
                tracing::info!(port, up, changed, "port cable");
                HubReply { link_changed: Some(changed), ..HubReply::ok() }
            }
            HubRequest::State {} => HubReply { state: Some(self.state(clients)), ..HubReply::ok() },
        }
    }

    /// The ports peers hold, for messages (`0, 1`, or `none`).
    fn connected(&self) -> String {
        let ports: Vec<String> = self.peers.keys().map(|p| p.0.to_string()).collect();
        if ports.is_empty() { "none".into() } else { ports.join(", ") }
    }

    /// Pass frames through `plan` from now on, its draws seeded with `seed`; or say why it
    /// cannot be used (a rule naming a port no peer holds, a probability out of 0..=1).
    fn set_wire(&mut self, plan: WirePlan, seed: u64) -> Result<(), String> {
        for (i, rule) in plan.rules.iter().enumerate() {
            if let Some(port) = rule.nic
                && !u32::try_from(port).is_ok_and(|p| self.peers.contains_key(&PortId(p)))
            {
                return Err(format!(
                    "wire rule {i} names port {port}, which no peer holds (connected: {})",
                    self.connected()
                ));
            }
        }
        // Port ids are never reused: rule `nic` N is port N.
        let ports: Vec<PortId> = (0..self.switch_ports()).map(PortId).collect();
        let stage = plan.stage(seed, &ports).map_err(|e| format!("wire plan: {e}"))?;
        self.switch.set_faults(stage);
        tracing::info!(?plan, seed, "wire plan set");
        self.wire = Some((plan, seed));
        Ok(())
    }

    /// One more than the highest port id given out.
    fn switch_ports(&self) -> u32 {
        self.peers.keys().next_back().map_or(0, |p| p.0.saturating_add(1))
    }

    fn state(&self, clients: usize) -> HubState {
        HubState {
            ports: self
                .peers
                .values()
                .map(|p| {
                    let mut port = p.port;
                    port.backlog_bytes = p.outbox.len();
                    port
                })
                .collect(),
            counters: self.summary,
            wire: self.wire.as_ref().map(|(plan, _)| plan.clone()),
            wire_seed: self.wire.as_ref().map(|(_, seed)| *seed),
            wire_faults: self.switch.fault_counters(),
            control_clients: clients,
        }
    }
}
