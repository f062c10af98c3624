//! The driver's record of what it asked of a NIC and what it got back: HWRM requests and their
//! answers, RoCE firmware commands and their completions, and doorbells, as `tracing` events of
//! target [`TARGET`].
//!
//! A request, command or doorbell is recorded just before the store that hands it to the NIC, so
//! that in a record that merges the NIC's own events it comes before what the NIC did with it.
//! Each is one event: an answer that refuses, fails or never comes is a warning or an error (so a
//! log at the default level shows it), the rest are debug. The record is the same on every target
//! (the model in-process or behind a socket, a card), so a run on a card can be compared with a
//! run on the model event by event.
//!
//! The vocabulary is [`TraceEvent`]; [`TraceEvent::from_event`] reads one back from a `tracing`
//! event, for a subscriber that keeps them (the runner's transcripts). With no subscriber
//! interested, an event costs what a disabled `tracing` event costs.

use std::fmt;

use tracing::field::{Field, Visit};

/// The `tracing` target of every event of the record.
pub const TARGET: &str = "bnxt::io";

/// How a request or command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Answered with success.
    Ok,
    /// Refused with this code (an HWRM error code's name, or a RoCE status as `0x..`).
    Refused(String),
    /// Not answered in time: the channel is wedged.
    NoAnswer,
    /// Answered with something the driver could not take, or its wait was cut short (the
    /// reason).
    Failed(String),
}

impl Outcome {
    /// How a request that ended in `error` ended: unanswered for a timeout, failed otherwise.
    pub(crate) fn of_error(error: &crate::error::Error) -> Outcome {
        match error {
            crate::error::Error::Timeout { .. } => Outcome::NoAnswer,
            other => Outcome::Failed(other.to_string()),
        }
    }
}

impl fmt::Display for Outcome {
    /// As a transcript writes it: `ok`, `refused CODE`, `no-answer`, `failed: WHY`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Ok => f.write_str("ok"),
            Outcome::Refused(code) => write!(f, "refused {code}"),
            Outcome::NoAnswer => f.write_str("no-answer"),
            Outcome::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

/// One thing the driver did or saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceEvent {
    /// An HWRM request was handed to the firmware.
    HwrmRequest {
        /// The NIC's bus address (`0000:01:00.0`).
        bus: String,
        /// The request's name (`FUNC_QCAPS`).
        request: String,
        /// Its sequence number.
        seq_id: u16,
    },
    /// An HWRM request ended.
    HwrmAnswer {
        /// The NIC's bus address.
        bus: String,
        /// The request's name.
        request: String,
        /// Its sequence number.
        seq_id: u16,
        /// How it ended.
        outcome: Outcome,
    },
    /// A RoCE firmware command was handed to the firmware.
    RoceCommand {
        /// The NIC's bus address.
        bus: String,
        /// The command's name (`CREATE_QP`).
        command: String,
        /// Its cookie.
        cookie: u16,
    },
    /// A RoCE firmware command ended.
    RoceAnswer {
        /// The NIC's bus address.
        bus: String,
        /// The command's name.
        command: String,
        /// Its cookie.
        cookie: u16,
        /// How it ended.
        outcome: Outcome,
    },
    /// A doorbell was rung.
    Doorbell {
        /// The NIC's bus address.
        bus: String,
        /// The doorbell's type (`SQ`, `CQ_ARMALL`).
        ty: String,
        /// The queue or ring it names.
        xid: u32,
        /// The index it carries.
        index: u32,
    },
}

/// The `kind` field of each event.
mod kind {
    pub(super) const HWRM_REQUEST: &str = "hwrm-request";
    pub(super) const HWRM_ANSWER: &str = "hwrm-answer";
    pub(super) const ROCE_COMMAND: &str = "roce-command";
    pub(super) const ROCE_ANSWER: &str = "roce-answer";
    pub(super) const DOORBELL: &str = "doorbell";
}

/// The `outcome` field of an answer.
mod outcome {
    pub(super) const OK: &str = "ok";
    pub(super) const REFUSED: &str = "refused";
    pub(super) const NO_ANSWER: &str = "no-answer";
    pub(super) const FAILED: &str = "failed";
}

/// Record that HWRM request `request` (sequence number `seq_id`) goes to the NIC at `bus`.
pub(crate) fn hwrm_request(bus: &str, request: &str, seq_id: u16) {
    tracing::debug!(target: TARGET, kind = kind::HWRM_REQUEST, bus, request, seq_id, "HWRM request");
}

/// Record how HWRM request `request` ended.
pub(crate) fn hwrm_answer(bus: &str, request: &str, seq_id: u16, outcome: &Outcome) {
    let k = kind::HWRM_ANSWER;
    match outcome {
        Outcome::Ok => {
            tracing::debug!(target: TARGET, kind = k, bus, request, seq_id, outcome = outcome::OK, "HWRM answer")
        }
        Outcome::Refused(code) => {
            tracing::warn!(target: TARGET, kind = k, bus, request, seq_id, outcome = outcome::REFUSED, detail = %code, "HWRM request refused")
        }
        Outcome::NoAnswer => {
            tracing::error!(target: TARGET, kind = k, bus, request, seq_id, outcome = outcome::NO_ANSWER, "HWRM request unanswered; the NIC is wedged")
        }
        Outcome::Failed(why) => {
            tracing::warn!(target: TARGET, kind = k, bus, request, seq_id, outcome = outcome::FAILED, detail = %why, "HWRM request failed")
        }
    }
}

/// Record that RoCE firmware command `command` (cookie `cookie`) goes to the NIC at `bus`.
pub(crate) fn roce_command(bus: &str, command: &str, cookie: u16) {
    tracing::debug!(target: TARGET, kind = kind::ROCE_COMMAND, bus, command, cookie, "RoCE command");
}

/// Record how RoCE firmware command `command` ended.
pub(crate) fn roce_answer(bus: &str, command: &str, cookie: u16, outcome: &Outcome) {
    let k = kind::ROCE_ANSWER;
    match outcome {
        Outcome::Ok => {
            tracing::debug!(target: TARGET, kind = k, bus, command, cookie, outcome = outcome::OK, "RoCE answer")
        }
        Outcome::Refused(code) => {
            tracing::warn!(target: TARGET, kind = k, bus, command, cookie, outcome = outcome::REFUSED, detail = %code, "RoCE command refused")
        }
        Outcome::NoAnswer => {
            tracing::error!(target: TARGET, kind = k, bus, command, cookie, outcome = outcome::NO_ANSWER, "RoCE command unanswered; the NIC is wedged")
        }
        Outcome::Failed(why) => {
            tracing::warn!(target: TARGET, kind = k, bus, command, cookie, outcome = outcome::FAILED, detail = %why, "RoCE command failed")
        }
    }
}

/// Record a doorbell store of type `ty` for ring `xid` carrying `index` on the function at bus
/// address `bus()`, which is asked for only when the record is of interest (a doorbell is the
/// data path's most frequent event, and the function answers through a trait object).
pub(crate) fn doorbell<'a>(bus: impl Fn() -> &'a str, ty: &str, xid: u32, index: u32) {
    tracing::trace!(target: TARGET, kind = kind::DOORBELL, bus = bus(), ty, xid, index, "doorbell");
}

/// The fields of one event, as a visitor collects them.
#[derive(Default)]
struct Fields {
    kind: Option<String>,
    bus: Option<String>,
    name: Option<String>,
    ty: Option<String>,
    outcome: Option<String>,
    detail: Option<String>,
    number: Option<u64>,
    xid: Option<u64>,
    index: Option<u64>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        let slot = match field.name() {
            "kind" => &mut self.kind,
            "bus" => &mut self.bus,
            "request" | "command" => &mut self.name,
            "ty" => &mut self.ty,
            "outcome" => &mut self.outcome,
            "detail" => &mut self.detail,
            _ => return,
        };
        *slot = Some(value.to_string());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        let slot = match field.name() {
            "seq_id" | "cookie" => &mut self.number,
            "xid" => &mut self.xid,
            "index" => &mut self.index,
            _ => return,
        };
        *slot = Some(value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `detail = %x` arrives as a Display value wrapped in Debug.
        if field.name() == "detail" {
            self.detail = Some(format!("{value:?}"));
        }
    }
}

impl Fields {
    fn outcome(&self) -> Option<Outcome> {
        let detail = || self.detail.clone().unwrap_or_default();
        Some(match self.outcome.as_deref()? {
            outcome::OK => Outcome::Ok,
            outcome::REFUSED => Outcome::Refused(detail()),
            outcome::NO_ANSWER => Outcome::NoAnswer,
            outcome::FAILED => Outcome::Failed(detail()),
            _ => return None,
        })
    }

    fn into_event(self) -> Option<TraceEvent> {
        let bus = self.bus.clone()?;
        let number = || self.number.and_then(|n| u16::try_from(n).ok());
        Some(match self.kind.as_deref()? {
            kind::HWRM_REQUEST => TraceEvent::HwrmRequest { bus, request: self.name.clone()?, seq_id: number()? },
            kind::HWRM_ANSWER => {
                TraceEvent::HwrmAnswer { bus, request: self.name.clone()?, seq_id: number()?, outcome: self.outcome()? }
            }
            kind::ROCE_COMMAND => TraceEvent::RoceCommand { bus, command: self.name.clone()?, cookie: number()? },
            kind::ROCE_ANSWER => {
                TraceEvent::RoceAnswer { bus, command: self.name.clone()?, cookie: number()?, outcome: self.outcome()? }
            }
            kind::DOORBELL => TraceEvent::Doorbell {
                bus,
                ty: self.ty.clone()?,
                xid: u32::try_from(self.xid?).ok()?,
                index: u32::try_from(self.index?).ok()?,
            },
            _ => return None,
        })
    }
}

impl TraceEvent {
    /// The record's event that `event` is, if it is one (its target is [`TARGET`] and its fields
    /// are whole).
    pub fn from_event(event: &tracing::Event<'_>) -> Option<TraceEvent> {
        if event.metadata().target() != TARGET {
            return None;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        fields.into_event()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::{Context, SubscriberExt};
    use tracing_subscriber::{Layer, Registry};

    use super::*;

    /// Keeps the record's events.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<Vec<TraceEvent>>>);

    impl<S: tracing::Subscriber> Layer<S> for Kept {
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            if let Some(e) = TraceEvent::from_event(event) {
                self.0.lock().unwrap().push(e);
            }
        }
    }

    #[test]
    fn every_event_reads_back_as_what_was_recorded_and_others_are_ignored() {
        let kept = Kept::default();
        let bus = "0000:01:00.0";
        tracing::subscriber::with_default(Registry::default().with(kept.clone()), || {
            hwrm_request(bus, "FUNC_QCAPS", 3);
            hwrm_answer(bus, "FUNC_QCAPS", 3, &Outcome::Ok);
            hwrm_answer(bus, "FUNC_CFG", 4, &Outcome::Refused("INVALID_PARAMS".into()));
            hwrm_answer(bus, "FUNC_DRV_RGTR", 5, &Outcome::NoAnswer);
            roce_command(bus, "CREATE_QP", 9);
            roce_answer(bus, "CREATE_QP", 9, &Outcome::Failed("the wait was cut short".into()));
            doorbell(|| bus, "SQ", 0x12, 7);
            tracing::info!(target: TARGET, "a message of the target that is not one of the record's");
            tracing::info!(kind = "doorbell", bus, "another target's");
        });
        let b = || bus.to_string();
        assert_eq!(
            *kept.0.lock().unwrap(),
            vec![
                TraceEvent::HwrmRequest { bus: b(), request: "FUNC_QCAPS".into(), seq_id: 3 },
                TraceEvent::HwrmAnswer { bus: b(), request: "FUNC_QCAPS".into(), seq_id: 3, outcome: Outcome::Ok },
                TraceEvent::HwrmAnswer {
                    bus: b(),
                    request: "FUNC_CFG".into(),
                    seq_id: 4,
                    outcome: Outcome::Refused("INVALID_PARAMS".into())
                },
                TraceEvent::HwrmAnswer {
                    bus: b(),
                    request: "FUNC_DRV_RGTR".into(),
                    seq_id: 5,
                    outcome: Outcome::NoAnswer
                },
                TraceEvent::RoceCommand { bus: b(), command: "CREATE_QP".into(), cookie: 9 },
                TraceEvent::RoceAnswer {
                    bus: b(),
                    command: "CREATE_QP".into(),
                    cookie: 9,
                    outcome: Outcome::Failed("the wait was cut short".into())
                },
                TraceEvent::Doorbell { bus: b(), ty: "SQ".into(), xid: 0x12, index: 7 },
            ]
        );
        assert_eq!(Outcome::Refused("X".into()).to_string(), "refused X");
    }
}
