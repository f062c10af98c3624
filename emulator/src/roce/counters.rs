//! What the RoCE engine counts, for the NIC's outside view and for strict mode.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::net::DropCounters;

/// Counters of one NIC's RoCE engine.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RoceCounters {
    /// Commands taken from the CMDQ.
    pub commands: u64,
    /// Completions written to the CREQ, by status code (index = `CREQ_QP_EVENT_STATUS_*`).
    pub completions_by_status: [u64; 8],
    /// Commands the model does not carry out (NOT_IMPLEMENTED or INVALID_CMD), by opcode.
    pub unimplemented_commands: BTreeMap<u8, u64>,
    /// Features of implemented commands the model does not carry out (NOT_IMPLEMENTED answers),
    /// and things the model was asked for it does not do (a notification whose format is not
    /// public).
    pub unimplemented_features: u64,
    /// Commands accepted although no public source says what P7 firmware does with them (each
    /// logged as a warning naming the rule not found).
    pub accepted_without_source: u64,
    /// Triggers or `cmdq_init`s the channel could not take (nothing could be answered).
    pub channel_errors: u64,
    /// Asynchronous events written to the CREQ (QP and CQ errors).
    pub async_events: u64,
    /// CREQ entries that could not be written (ring gone, backlog full, DMA refused).
    pub creq_lost: u64,
    /// Doorbells taken.
    pub doorbells: u64,
    /// Doorbells ignored, by reason (`no valid bit`, `32-bit store`, ...).
    pub bad_doorbells: BTreeMap<Cow<'static, str>, u64>,
    /// Doorbells of types or paths the model does not implement.
    pub unimplemented_doorbells: u64,
    /// WQEs read from SQs and RQs.
    pub wqes: u64,
    /// WQEs refused (malformed or unsupported); each also completes in error.
    pub bad_wqes: u64,
    /// MSN table entries that disagreed with the WQE they describe.
    pub msn_mismatches: u64,
    /// CQEs written.
    pub cqes: u64,
    /// SRQ limit events posted to NQs.
    pub srq_limit_events: u64,
    /// CQEs lost to full CQs.
    pub cq_overflows: u64,
    /// CQ notifications posted to NQs.
    pub notifications: u64,
    /// MSI-X vectors raised.
    pub interrupts: u64,
    /// Frames sent (looped back ones included).
    pub frames_sent: u64,
    /// Frames to the NIC itself, looped back without reaching the wire.
    pub frames_looped: u64,
    /// Frames received and handed to a QP.
    pub frames_received: u64,
    /// Frames dropped at parsing, by reason (a bad ICRC among them).
    pub rx_drops: DropCounters,
    /// RoCE frames no L2 filter of the function passes to the RoCE engine (none matches the
    /// destination MAC, or those that do carry L2 traffic only); see the engine's `l2_gate`.
    pub rx_no_l2_filter: u64,
    /// Frames an L2 filter passed that are not addressed to this NIC's RoCE engine (no GID of
    /// the destination IP on the destination MAC).
    pub rx_not_ours: u64,
    /// Frames for a QP that does not exist or is not ready to receive.
    pub rx_no_qp: u64,
    /// UD packets a UD QP dropped (IBA §10.2.4, §9.6: wrong Q_Key or P_Key, a QP not in RTR/RTS,
    /// no receive WQE posted, an opcode that is not UD).
    pub ud_dropped: u64,
    /// DMA the engine attempted that failed.
    pub dma_errors: u64,
}

impl RoceCounters {
    /// Count a doorbell ignored for `reason`.
    pub fn bad_doorbell(&mut self, reason: &'static str) {
        *self.bad_doorbells.entry(Cow::Borrowed(reason)).or_insert(0) += 1;
    }

    /// Doorbells ignored, all reasons.
    pub fn bad_doorbells_total(&self) -> u64 {
        self.bad_doorbells.values().sum()
    }

    /// Everything unimplemented the engine was asked for.
    pub fn unimplemented_total(&self) -> u64 {
        self.unimplemented_commands.values().sum::<u64>() + self.unimplemented_features + self.unimplemented_doorbells
    }
}
