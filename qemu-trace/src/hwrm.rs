//! Following HWRM requests as a guest driver makes them: the request window's bytes as stored,
//! the trigger, and the response the driver then polls in host memory (hardware-map §2.2:
//! bnxt_en `__hwrm_send` copies the request into BAR0 +0x000 (or the KONG window at +0xa00),
//! writes 1 to +0x100 (+0xb00), then polls `resp_len` and `seq_id` of the response at the
//! request's `resp_addr` and its last byte, the valid byte).
//!
//! The response is in guest memory, so the tracer sees it through the driver's loads: the first
//! load of the response after it is whole in guest memory (its `seq_id` the request's, its valid
//! byte set) completes the request, and the response is read from guest memory at that moment. `resp_addr` is a DMA address, taken to be guest-physical:
//! true without an IOMMU in front of the function.

use bnxt_hsi::hwrm::layouts::{HwrmShortInput, Input, Output};
use bnxt_hsi::hwrm::{MAX_RESP_LEN, NO_CMPL_RING, REQ_HEADER_LEN, RESP_HEADER_LEN, SHORT_REQ_SIGNATURE, TARGET_HWRM};
use zerocopy::FromBytes;

use crate::events::{Channel, TraceEvent};

/// Reads of guest memory the decoder asks for.
pub trait GuestMemory {
    /// `len` bytes at guest-physical `addr`, if they can be read.
    fn read(&mut self, addr: u64, len: usize) -> Option<Vec<u8>>;
}

/// Bytes of a request window the tracer keeps (`HWRM_MAX_REQ_LEN`).
pub const WINDOW_LEN: usize = bnxt_hsi::hwrm::MAX_REQ_LEN;

/// A request window's bytes as the driver stored them.
#[derive(Debug, Clone)]
pub struct Window {
    bytes: [u8; WINDOW_LEN],
}

impl Default for Window {
    fn default() -> Window {
        Window { bytes: [0; WINDOW_LEN] }
    }
}

impl Window {
    /// A store of `size` bytes of `value` at `offset` in the window (bytes past its end are
    /// dropped).
    pub fn store(&mut self, offset: u64, size: u8, value: u64) {
        for (i, b) in value.to_le_bytes().iter().take(usize::from(size)).enumerate() {
            if let Some(slot) = usize::try_from(offset).ok().and_then(|o| self.bytes.get_mut(o + i)) {
                *slot = *b;
            }
        }
    }
}

/// A request triggered and not yet seen answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    /// `req_type`.
    pub req_type: u16,
    /// `seq_id`.
    pub seq_id: u16,
    /// Where the response goes.
    pub resp_addr: u64,
}

impl Pending {
    /// The guest-physical range the response may occupy.
    pub fn response_range(&self) -> (u64, u64) {
        (self.resp_addr, self.resp_addr.saturating_add(MAX_RESP_LEN as u64))
    }
}

/// The trigger of `window`: the request it submits (if its header can be read) and the event.
pub fn trigger(window: &Window, kong: bool, mem: &mut dyn GuestMemory) -> (Option<Pending>, TraceEvent) {
    let head = &window.bytes[..REQ_HEADER_LEN];
    let short = HwrmShortInput::read_from_bytes(head).expect("16 bytes");
    let (input, channel) = if short.signature.get() == SHORT_REQ_SIGNATURE {
        let body = mem.read(short.req_addr.get(), REQ_HEADER_LEN).and_then(|b| Input::read_from_bytes(&b).ok());
        match body {
            Some(input) => (input, Channel::Short),
            None => {
                let event = TraceEvent::HwrmRequest {
                    req_type: short.req_type.get(),
                    seq_id: None,
                    channel: Channel::Short,
                    target_id: Some(short.target_id.get()),
                    cmpl_ring: None,
                };
                return (None, event);
            }
        }
    } else {
        (Input::read_from_bytes(head).expect("16 bytes"), if kong { Channel::Kong } else { Channel::Direct })
    };
    let pending =
        Pending { req_type: input.req_type.get(), seq_id: input.seq_id.get(), resp_addr: input.resp_addr.get() };
    let event = TraceEvent::HwrmRequest {
        req_type: pending.req_type,
        seq_id: Some(pending.seq_id),
        channel,
        target_id: Some(input.target_id.get()).filter(|t| *t != TARGET_HWRM),
        cmpl_ring: Some(input.cmpl_ring.get()).filter(|c| *c != NO_CMPL_RING),
    };
    (Some(pending), event)
}

/// A load the driver made within `pending`'s response range: the answer and the response's
/// bytes, when the response in guest memory is whole by then (its `seq_id` is the request's, its
/// `resp_len` is set and so is its last byte, the valid byte). Whichever of its fields the
/// driver reads first counts: bnxt_en polls `resp_len` and then the valid byte, or (for a request
/// naming a completion ring) waits for the completion and reads `error_code`.
pub fn response_load(pending: &Pending, mem: &mut dyn GuestMemory) -> Option<(TraceEvent, Vec<u8>)> {
    let head = mem.read(pending.resp_addr, RESP_HEADER_LEN)?;
    let out = Output::read_from_bytes(&head).ok()?;
    let len = out.resp_len.get();
    if len == 0 || out.seq_id.get() != pending.seq_id {
        return None;
    }
    let body = mem.read(pending.resp_addr, usize::from(len).min(MAX_RESP_LEN))?;
    if body.last().copied().unwrap_or(0) == 0 {
        return None;
    }
    let event = TraceEvent::HwrmAnswer {
        req_type: pending.req_type,
        seq_id: pending.seq_id,
        error_code: out.error_code.get(),
        resp_len: len,
    };
    Some((event, body))
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Guest memory as a map of bytes.
    #[derive(Default)]
    pub(crate) struct Ram(pub(crate) BTreeMap<u64, u8>);

    impl Ram {
        pub(crate) fn put(&mut self, addr: u64, bytes: &[u8]) {
            for (i, b) in bytes.iter().enumerate() {
                self.0.insert(addr + i as u64, *b);
            }
        }
    }

    impl GuestMemory for Ram {
        fn read(&mut self, addr: u64, len: usize) -> Option<Vec<u8>> {
            (0..len as u64).map(|i| self.0.get(&(addr + i)).copied()).collect()
        }
    }

    /// A 16-byte request header.
    pub(crate) fn header(req_type: u16, seq: u16, resp_addr: u64) -> [u8; 16] {
        let mut h = [0u8; 16];
        h[0..2].copy_from_slice(&req_type.to_le_bytes());
        h[2..4].copy_from_slice(&0xffffu16.to_le_bytes());
        h[4..6].copy_from_slice(&seq.to_le_bytes());
        h[6..8].copy_from_slice(&0xffffu16.to_le_bytes());
        h[8..16].copy_from_slice(&resp_addr.to_le_bytes());
        h
    }

    #[test]
    fn a_direct_request_is_answered_when_its_valid_byte_is_read() {
        let mut w = Window::default();
        for (i, chunk) in header(0x15, 4, 0x9000).chunks(4).enumerate() {
            w.store(4 * i as u64, 4, u32::from_le_bytes(chunk.try_into().unwrap()).into());
        }
        let mut ram = Ram::default();
        let (pending, event) = trigger(&w, false, &mut ram);
        let pending = pending.unwrap();
        assert_eq!(event.to_string(), "hwrm-request FUNC_QCAPS seq=4");
        // Not yet written: polling resp_len finds nothing.
        ram.put(0x9000, &[0; 16]);
        assert_eq!(response_load(&pending, &mut ram), None);
        // The firmware's response: INVALID_PARAMS, 16 bytes, valid byte last.
        let mut resp = [0u8; 16];
        resp[0..2].copy_from_slice(&2u16.to_le_bytes());
        resp[2..4].copy_from_slice(&0x15u16.to_le_bytes());
        resp[4..6].copy_from_slice(&4u16.to_le_bytes());
        resp[6..8].copy_from_slice(&16u16.to_le_bytes());
        ram.put(0x9000, &resp);
        assert_eq!(response_load(&pending, &mut ram), None, "the valid byte is not set yet");
        resp[15] = 1;
        ram.put(0x9000, &resp);
        let (answer, body) = response_load(&pending, &mut ram).unwrap();
        assert_eq!(answer.to_string(), "hwrm-answer FUNC_QCAPS seq=4 refused INVALID_PARAMS len=16");
        assert_eq!(body, resp);
        // Another sequence number's response does not answer this request.
        let other = Pending { seq_id: 5, ..pending };
        assert_eq!(response_load(&other, &mut ram), None);
    }

    #[test]
    fn a_short_request_is_read_from_guest_memory() {
        let mut w = Window::default();
        let mut short = [0u8; 16];
        short[0..2].copy_from_slice(&0x17u16.to_le_bytes());
        short[2..4].copy_from_slice(&SHORT_REQ_SIGNATURE.to_le_bytes());
        short[6..8].copy_from_slice(&40u16.to_le_bytes());
        short[8..16].copy_from_slice(&0x7000u64.to_le_bytes());
        for (i, b) in short.iter().enumerate() {
            w.store(i as u64, 1, u64::from(*b));
        }
        let mut ram = Ram::default();
        let (p, e) = trigger(&w, false, &mut ram);
        assert_eq!((p, e.to_string()), (None, "hwrm-request FUNC_CFG seq=? short target=0x0000".to_string()));
        ram.put(0x7000, &header(0x17, 9, 0x8000));
        let (p, e) = trigger(&w, false, &mut ram);
        assert_eq!(p.unwrap().resp_addr, 0x8000);
        assert_eq!(e.to_string(), "hwrm-request FUNC_CFG seq=9 short");
    }
}
