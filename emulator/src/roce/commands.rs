//! The command side of the engine: every command a trigger hands over ([`Channel::trigger`]) is
//! recorded, put through the NIC's injected faults, carried out on the RoCE objects (or refused),
//! and answered on the CREQ [`RCFW_LATENCY`] later, in command order; entries due are written
//! to the CREQ ring the channel names, subject to its flow control.

use std::time::Duration;

use bnxt_hsi::roce::layouts::CreqQpEvent;
use bnxt_hsi::roce::rcfw::{CREQ_TYPE_QP_EVENT, CreqStatus};
use zerocopy::FromBytes;

use crate::events::EventKind;

use super::caps::RCFW_LATENCY;
use super::channel::Channel;
use super::cmd::faults::Injected;
use super::cmd::{self, Cmd, CmdCtx, Support};
use super::engine::Env;
use super::nq::Posted;
use super::post::CqeWrite;
use super::shared::{CreqEntry, Report, Shared};

impl Channel {
    /// A trigger: take every command the producer names, act on each, queue its completion.
    pub(super) fn take_commands(&mut self, sh: &mut Shared, now: Duration, mailbox: &[u8; 16], env: &mut Env<'_>) {
        let cmds = match self.trigger(mailbox, env.mem, env.fw) {
            Ok(c) => c,
            Err(e) => {
                sh.report.counters.channel_errors += 1;
                sh.report.warn_once(format!("RoCE command channel: {e}"));
                env.rec.record(now, EventKind::RoceChannelError { reason: e.to_string() });
                return;
            }
        };
        let cx_limits = env.fw.context.limits();
        for raw in cmds {
            sh.report.counters.commands += 1;
            let mut summary = raw.bytes.as_ref().map(|b| cmd::summary(raw.opcode, b)).unwrap_or_default();
            if raw.tlv.is_some() {
                summary.insert_str(0, "tlv ");
            }
            env.rec.record(
                now,
                EventKind::RoceCommand { opcode: raw.opcode, cookie: raw.cookie, slots: raw.slots, summary },
            );
            // An injected fault (cmd::faults) may swallow, refuse, delay or withhold the answer.
            let injected = self.faults.on_command(now, raw.opcode, env.rec);
            let outcome = match (&injected, &raw.bytes) {
                (Injected::Swallow, _) => continue,
                (Injected::Refuse(r), _) => Err(r.clone()),
                (_, Err(why)) => Err(cmd::Refusal::invalid(why.clone())),
                (_, Ok(bytes)) => {
                    let c = Cmd { opcode: raw.opcode, cookie: raw.cookie, bytes, tlv: raw.tlv };
                    let cx = CmdCtx { mem: env.mem, fw: env.fw, limits: cx_limits };
                    cmd::execute(&mut sh.st, &c, &cx)
                }
            };
            // A RESIZE_CQ taken: the old ring ends with a CUT_OFF CQE, then the CQ moves.
            for (cq, mem, size) in std::mem::take(&mut sh.st.cq_resizes) {
                let Some(cutoff) = sh.st.cqs.get(&cq).map(|c| c.cutoff_cqe()) else { continue };
                let w = CqeWrite { cq, qp: 0, bytes: cutoff, requester: false, status: 0, solicited: false };
                sh.write_cqe(now, w, env);
                if let Some(c) = sh.st.cqs.get_mut(&cq) {
                    c.switch_ring(mem, size);
                }
            }
            for what in std::mem::take(&mut sh.st.unsourced) {
                sh.report.counters.accepted_without_source += 1;
                sh.report.warn_once(what);
            }
            let (mut bytes, status, reason) = match outcome {
                Ok(b) => (b, CreqStatus::Success, String::new()),
                Err(r) => {
                    if !matches!(injected, Injected::Refuse(_)) {
                        note_refusal(&mut sh.report, raw.opcode, &r);
                    }
                    ([0u8; 16], r.status, r.reason)
                }
            };
            // The header every `creq_*_resp` shares (roce_hsi.h `creq_qp_event`); the valid bit
            // is the ring's to set when the entry is written.
            let head = CreqQpEvent::mut_from_bytes(&mut bytes).expect("16 bytes");
            head.type_ = CREQ_TYPE_QP_EVENT;
            head.status = status.value();
            head.cookie = raw.cookie.into();
            head.event = raw.opcode;
            if injected == Injected::ActSilently {
                tracing::debug!(
                    opcode = raw.opcode,
                    cookie = raw.cookie,
                    "acted on; the completion is withheld (injected fault)"
                );
                continue;
            }
            sh.creq.queue(now.saturating_add(RCFW_LATENCY).saturating_add(injected.delay()), bytes, reason);
        }
    }

    /// Write a CREQ entry now, to the CREQ ring the channel names.
    pub(super) fn post_creq(&self, sh: &mut Shared, now: Duration, e: CreqEntry, env: &mut Env<'_>) {
        let counters = &mut sh.report.counters;
        let Some(ring) = self.creq_ring() else {
            counters.creq_lost += 1;
            return;
        };
        match sh.nqs.post(ring, e.bytes, env.fw, env.mem) {
            Posted::Written | Posted::Queued => {}
            lost => {
                counters.creq_lost += 1;
                if lost == Posted::DmaFailed {
                    counters.dma_errors += 1;
                }
                sh.report.warn_once(format!("CREQ entry lost: {lost:?}"));
            }
        }
        let head = CreqQpEvent::ref_from_bytes(&e.bytes).expect("16 bytes");
        // Asynchronous events (QP and CQ error notifications, events from 0xc0) were recorded
        // when they were raised.
        if head.event >= CreqQpEvent::EVENT_QP_ERROR_NOTIFICATION
            && head.type_ & CreqQpEvent::TYPE_MASK == CREQ_TYPE_QP_EVENT
        {
            return;
        }
        let (opcode, status, cookie) = (head.event, head.status, head.cookie.get());
        if let Some(slot) = sh.report.counters.completions_by_status.get_mut(usize::from(status)) {
            *slot += 1;
        }
        // `xid` in the answers that name an object (`creq_create_qp_resp` and the like).
        let xid = head.reserved32.get();
        env.rec.record(now, EventKind::RoceCompletion { opcode, cookie, status, xid, reason: e.reason });
    }
}

/// Count and report a command the model refused: loudly when it is not implemented.
fn note_refusal(report: &mut Report, opcode: u8, r: &cmd::Refusal) {
    let name = crate::events::opcode_label(opcode);
    match r.status {
        CreqStatus::NotImplemented | CreqStatus::InvalidCmd if cmd::support(opcode) != Support::Implemented => {
            *report.counters.unimplemented_commands.entry(opcode).or_insert(0) += 1;
            report.warn_once(format!("RoCE command {name} is not implemented by the model ({})", r.status.name()));
        }
        CreqStatus::NotImplemented => {
            report.counters.unimplemented_features += 1;
            report.warn_once(format!("RoCE command {name}: {}", r.reason));
        }
        // Recorded with its reason when its completion is written.
        _ => {}
    }
}
