//! Asynchronous events the firmware sends the driver (`hwrm_async_event_cmpl`, bnxt_hsi.h), and
//! the filter the driver's registration puts on them.
//!
//! The driver lists the events it handles in FUNC_DRV_RGTR `async_event_fwd`, a 256-bit map
//! (bit n = event id n; bnxt.c `bnxt_hwrm_func_drv_rgtr` builds it from
//! `bnxt_async_events_arr`). The firmware sends only events whose bit is set, and only once the
//! driver named a ring for them (FUNC_CFG `async_event_cr`); the L2 engine writes them there.

use super::l2_config::Notice;
use super::state::FwState;

/// `ASYNC_EVENT_CMPL_EVENT_ID_LINK_STATUS_CHANGE`.
pub const LINK_STATUS_CHANGE: u16 = 0x0;
/// `ASYNC_EVENT_CMPL_LINK_STATUS_CHANGE_EVENT_DATA1_LINK_CHANGE_UP`.
pub const LINK_CHANGE_UP: u32 = 0x1;
/// `ASYNC_EVENT_CMPL_LINK_STATUS_CHANGE_EVENT_DATA1_PORT_ID_SFT`.
pub const LINK_CHANGE_PORT_ID_SHIFT: u32 = 4;

/// Whether the registered driver asked for event `event_id`.
pub fn wanted(state: &FwState, event_id: u16) -> bool {
    let Some(reg) = &state.registration else { return false };
    let (word, bit) = (usize::from(event_id / 32), event_id % 32);
    reg.async_events.get(word).is_some_and(|w| w & (1 << bit) != 0)
}

/// Send event `event_id` if the driver wants it and named a ring for it; returns whether it was
/// queued for the L2 engine.
pub fn send(state: &mut FwState, event_id: u16, data1: u32, data2: u32) -> bool {
    let ring_ok = state.l2.async_event_cr.is_some_and(|id| state.rings.contains_key(&id));
    if !wanted(state, event_id) || !ring_ok {
        tracing::debug!(event_id, "async event not sent: not registered for, or no async event ring");
        return false;
    }
    state.l2.notify(Notice::Async { event_id, data1, data2 });
    true
}

/// Send LINK_STATUS_CHANGE for port `port` going up or down.
pub fn link_status_change(state: &mut FwState, port: u16, up: bool) -> bool {
    let data1 = (u32::from(port) << LINK_CHANGE_PORT_ID_SHIFT) | if up { LINK_CHANGE_UP } else { 0 };
    send(state, LINK_STATUS_CHANGE, data1, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::firmware::state::{Registration, Ring, RingType};

    fn nq_ring() -> Ring {
        Ring {
            ty: RingType::Nq,
            length: 64,
            logical_id: 0,
            pages: vec![0x1000],
            page_size: 4096,
            nq_ring_id: None,
            cmpl_ring_id: None,
            stat_ctx_id: None,
            rx_ring_id: None,
            rx_buf_size: None,
            cq_handle: 0,
            serial: 0,
        }
    }

    #[test]
    fn only_registered_events_with_a_ring_are_sent() {
        let mut st = FwState::default();
        assert!(!link_status_change(&mut st, 0, true), "no driver registered");
        st.registration = Some(Registration { os_type: 0x24, version: (1, 0, 0, 0), flags: 0, async_events: [0; 8] });
        st.l2.async_event_cr = Some(3);
        st.registration.as_mut().unwrap().async_events[0] = 1;
        assert!(!link_status_change(&mut st, 0, true), "ring 3 is not allocated");
        st.rings.insert(3, nq_ring());
        st.registration.as_mut().unwrap().async_events[0] = 0;
        assert!(!link_status_change(&mut st, 0, true), "event 0 not asked for");
        st.registration.as_mut().unwrap().async_events[0] = 1;
        assert!(link_status_change(&mut st, 2, false));
        assert_eq!(st.l2.notices, vec![Notice::Async { event_id: 0, data1: 2 << 4, data2: 0 }]);
        st.registration.as_mut().unwrap().async_events[2] = 1 << 3;
        assert!(wanted(&st, 67) && !wanted(&st, 66) && !wanted(&st, 300));
        st.l2.async_event_cr = None;
        assert!(!send(&mut st, 0, 0, 0), "no ring named");
    }
}
