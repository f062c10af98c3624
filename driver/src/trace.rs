//! The driver's own record of what it asked of a NIC and what it got back: HWRM requests and
//! their answers, RoCE firmware commands and their completions, and doorbells.
//!
//! A request, command or doorbell is recorded just before the store that hands it to the NIC,
//! so that in a record that merges the NIC's own events it comes before what the NIC did with it.
//!
//! Nothing is recorded unless the calling thread installed a [`TraceSink`] with [`with_sink`];
//! without one an event costs a thread-local check and is never built. The record is the same on
//! every target (the model in-process or behind a socket, a card), so a run on a card can be
//! compared with a run on the model event by event.

use std::cell::RefCell;
use std::sync::Arc;

/// How a request or command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Answered with success.
    Ok,
    /// Refused with this code (an HWRM error code's name, or a RoCE status as `0x..`).
    Refused(String),
    /// Not answered in time: the channel is wedged.
    NoAnswer,
    /// Answered with something the driver could not take (the reason).
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

/// One thing the driver did or saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceEvent {
    /// An HWRM request was handed to the firmware.
    HwrmRequest {
        /// The NIC's bus address (`0000:01:00.0`).
        bus: String,
        /// The request's name (`FUNC_QCAPS`).
        request: &'static str,
        /// Its sequence number.
        seq_id: u16,
    },
    /// An HWRM request ended.
    HwrmAnswer {
        /// The NIC's bus address.
        bus: String,
        /// The request's name.
        request: &'static str,
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
        command: &'static str,
        /// Its cookie.
        cookie: u16,
    },
    /// A RoCE firmware command ended.
    RoceAnswer {
        /// The NIC's bus address.
        bus: String,
        /// The command's name.
        command: &'static str,
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
        ty: &'static str,
        /// The queue or ring it names.
        xid: u32,
        /// The index it carries.
        index: u32,
    },
}

/// Where a thread's trace events go.
pub trait TraceSink {
    /// Take one event (called on the thread that installed the sink, in the order of events).
    fn record(&self, event: TraceEvent);
}

thread_local! {
    static SINK: RefCell<Option<Arc<dyn TraceSink>>> = const { RefCell::new(None) };
}

/// Run `f` with `sink` taking the driver's trace events of this thread; the sink before it (if
/// any) is back afterwards, also when `f` panics.
pub fn with_sink<R>(sink: Arc<dyn TraceSink>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<dyn TraceSink>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            SINK.with(|s| *s.borrow_mut() = previous);
        }
    }
    let previous = SINK.with(|s| s.borrow_mut().replace(sink));
    let _restore = Restore(previous);
    f()
}

/// Record the event `make` builds, if this thread has a sink (`make` runs only then).
pub(crate) fn emit(make: impl FnOnce() -> TraceEvent) {
    let sink = SINK.with(|s| s.borrow().clone());
    if let Some(sink) = sink {
        sink.record(make());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Kept(Mutex<Vec<TraceEvent>>);

    impl TraceSink for Kept {
        fn record(&self, event: TraceEvent) {
            self.0.lock().unwrap().push(event);
        }
    }

    fn doorbell(index: u32) -> TraceEvent {
        TraceEvent::Doorbell { bus: "0000:01:00.0".into(), ty: "SQ", xid: 1, index }
    }

    #[test]
    fn events_reach_the_installed_sink_only() {
        let mut built = false;
        emit(|| {
            built = true;
            doorbell(0)
        });
        assert!(!built, "no sink: the event is never built");
        let kept = Arc::new(Kept::default());
        with_sink(kept.clone(), || {
            emit(|| doorbell(1));
            let inner = Arc::new(Kept::default());
            with_sink(inner.clone(), || emit(|| doorbell(2)));
            assert_eq!(*inner.0.lock().unwrap(), vec![doorbell(2)]);
            emit(|| doorbell(3));
        });
        emit(|| doorbell(4));
        assert_eq!(*kept.0.lock().unwrap(), vec![doorbell(1), doorbell(3)]);
    }

    #[test]
    fn a_panic_inside_restores_the_sink_before() {
        let kept = Arc::new(Kept::default());
        let caught = std::panic::catch_unwind(|| with_sink(kept.clone(), || panic!("inside")));
        assert!(caught.is_err());
        let mut built = false;
        emit(|| {
            built = true;
            doorbell(0)
        });
        assert!(!built);
    }
}
