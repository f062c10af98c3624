//! Applying the run's [`FaultPlan`] to one NIC's RoCE commands: counting each opcode's
//! occurrences (1-based, since the NIC was made; neither a function-level reset nor a
//! FUNC_RESET restarts the count, as for HWRM requests) and deciding, for each command taken
//! from the CMDQ, what the firmware does with it.
//!
//! - no response: the command is consumed (the CMDQ consumer moves past it) but neither acted on
//!   nor completed on the CREQ; a driver waiting for it times out (bnxt_re qplib_rcfw.c
//!   `__wait_for_resp` / `__poll_for_resp`, then `FIRMWARE_STALL_DETECTED`);
//! - acts, no response: acted on as usual, but never completed on the CREQ (the firmware did the
//!   work; the driver never learns it);
//! - delay: acted on and completed normally, that much later than the model's usual latency;
//! - error: completed with the fault's CREQ status (`CREQ_QP_EVENT_STATUS_*`, roce_hsi.h)
//!   without acting on it.
//!
//! Each fault that fires is recorded as an [`EventKind::RoceFaultFired`] event.

use std::sync::Arc;
use std::time::Duration;

use bnxt_hsi::roce::rcfw::CreqStatus;

use crate::armed::{Action, ArmedFault, ArmedFaults, Target};
use crate::events::{EventKind, Recorder};
use crate::faults::{CommandAction, FaultPlan};

use super::Refusal;

/// What an injected fault makes of one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Injected {
    /// Carry the command out and complete it `delay` later than usual (zero when no fault
    /// fired).
    Carry {
        /// Extra latency of the completion.
        delay: Duration,
    },
    /// Consume the command; neither act on it nor complete it.
    Swallow,
    /// Carry the command out as usual, but never complete it.
    ActSilently,
    /// Complete the command with this refusal instead of acting on it.
    Refuse(Refusal),
}

impl Injected {
    /// No fault: carry the command out as usual.
    pub const NONE: Injected = Injected::Carry { delay: Duration::ZERO };

    /// How much later than usual the command's completion is due.
    pub fn delay(&self) -> Duration {
        match self {
            Injected::Carry { delay } => *delay,
            Injected::Swallow | Injected::ActSilently | Injected::Refuse(_) => Duration::ZERO,
        }
    }
}

/// One NIC's view of the fault plan's RoCE command faults.
#[derive(Debug, Clone)]
pub struct CommandFaults {
    nic: usize,
    plan: Option<Arc<FaultPlan>>,
    /// Commands taken so far, by opcode.
    seen: Box<[u32; 256]>,
    /// Faults armed while the NIC runs (looked at before the plan's).
    armed: ArmedFaults,
}

impl Default for CommandFaults {
    fn default() -> CommandFaults {
        CommandFaults { nic: 0, plan: None, seen: Box::new([0; 256]), armed: ArmedFaults::default() }
    }
}

impl CommandFaults {
    /// The faults of `plan` that name NIC `nic`.
    pub fn new(nic: usize, plan: Arc<FaultPlan>) -> CommandFaults {
        let plan = (!plan.roce_commands.is_empty()).then_some(plan);
        CommandFaults { nic, plan, ..CommandFaults::default() }
    }

    /// Arm `fault` (a RoCE command one; the caller checked).
    pub fn arm(&mut self, fault: ArmedFault) {
        self.armed.arm(fault);
    }

    /// The faults armed on RoCE commands.
    pub fn armed(&self) -> &ArmedFaults {
        &self.armed
    }

    /// The same, to clear faults.
    pub fn armed_mut(&mut self) -> &mut ArmedFaults {
        &mut self.armed
    }

    /// How many commands with `opcode` were taken so far.
    pub fn seen(&self, opcode: u8) -> u32 {
        self.seen[usize::from(opcode)]
    }

    /// Count a command with `opcode` taken at `now`; what the firmware does with it, recording
    /// the fault that fired, if one did, in `rec`.
    pub fn on_command(&mut self, now: Duration, opcode: u8, rec: &mut Recorder) -> Injected {
        let n = &mut self.seen[usize::from(opcode)];
        *n = n.saturating_add(1);
        let nth = *n;
        let armed = match self.armed.fire(Target::Roce(opcode), nth) {
            Some((_, Action::Roce(a))) => Some(a),
            _ => None,
        };
        let planned = || self.plan.as_ref().and_then(|p| p.command_action(self.nic, opcode, nth)).cloned();
        let Some(action) = armed.or_else(planned) else {
            return Injected::NONE;
        };
        let injected = match &action {
            CommandAction::NoResponse => Injected::Swallow,
            CommandAction::ActsNoResponse => Injected::ActSilently,
            CommandAction::Delay(d) => Injected::Carry { delay: *d },
            CommandAction::Error(status) => {
                // A status that is no error (only a plan built in code can hold one) still must not
                // pass for a success the command never earned: it is refused as INTERNAL_ERROR.
                let status = CreqStatus::from_value(*status)
                    .filter(|s| *s != CreqStatus::Success)
                    .unwrap_or(CreqStatus::InternalError);
                Injected::Refuse(Refusal { status, reason: format!("injected fault (occurrence {nth})") })
            }
        };
        rec.record(now, EventKind::RoceFaultFired { opcode, nth, action });
        injected
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Event;
    use crate::faults::CommandFault;

    fn faults(list: Vec<CommandFault>) -> CommandFaults {
        CommandFaults::new(1, Arc::new(FaultPlan { roce_commands: list, ..FaultPlan::default() }))
    }

    fn drained(rec: &mut Recorder) -> Vec<Event> {
        let mut out = Vec::new();
        rec.drain_into(&mut out);
        out
    }

    #[test]
    fn occurrences_are_counted_per_opcode_and_only_the_nth_fires() {
        let mut f =
            faults(vec![CommandFault { nic: 1, opcode: 0x01, nth: Some(2), action: CommandAction::NoResponse }]);
        let mut rec = Recorder::new(1);
        let t = Duration::from_millis(5);
        assert_eq!(f.on_command(t, 0x01, &mut rec), Injected::NONE);
        assert_eq!(f.on_command(t, 0x03, &mut rec), Injected::NONE);
        assert!(drained(&mut rec).is_empty());
        assert_eq!(f.on_command(t, 0x01, &mut rec), Injected::Swallow);
        assert_eq!(f.on_command(t, 0x01, &mut rec), Injected::NONE);
        assert_eq!((f.seen(0x01), f.seen(0x03), f.seen(0x02)), (3, 1, 0));
        let events = drained(&mut rec);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].at, t);
        assert_eq!(
            events[0].kind,
            EventKind::RoceFaultFired { opcode: 0x01, nth: 2, action: CommandAction::NoResponse }
        );
    }

    #[test]
    fn faults_of_other_nics_do_not_apply() {
        let mut f = faults(vec![CommandFault { nic: 0, opcode: 0x01, nth: None, action: CommandAction::NoResponse }]);
        let mut rec = Recorder::new(1);
        assert_eq!(f.on_command(Duration::ZERO, 0x01, &mut rec), Injected::NONE);
        assert!(drained(&mut rec).is_empty());
    }

    #[test]
    fn errors_refuse_with_their_status_and_delays_carry_out() {
        let mut f = faults(vec![
            CommandFault { nic: 1, opcode: 0x0f, nth: None, action: CommandAction::Error(2) },
            CommandFault { nic: 1, opcode: 0x09, nth: None, action: CommandAction::Delay(Duration::from_secs(3)) },
            CommandFault { nic: 1, opcode: 0x0e, nth: None, action: CommandAction::Error(0) },
        ]);
        let mut rec = Recorder::new(1);
        match f.on_command(Duration::ZERO, 0x0f, &mut rec) {
            Injected::Refuse(r) => assert_eq!(r.status, CreqStatus::Resources),
            other => panic!("{other:?}"),
        }
        assert_eq!(f.on_command(Duration::ZERO, 0x09, &mut rec), Injected::Carry { delay: Duration::from_secs(3) });
        match f.on_command(Duration::ZERO, 0x0e, &mut rec) {
            Injected::Refuse(r) => assert_eq!(r.status, CreqStatus::InternalError, "never a success"),
            other => panic!("{other:?}"),
        }
        assert_eq!(drained(&mut rec).len(), 3);
    }
}
