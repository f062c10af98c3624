//! Taking a request out of the mailbox: direct or short-command form (hardware-map §2.2;
//! bnxt_hwrm.c `__hwrm_send`).
//!
//! The window holds either the request itself (direct form; the firmware reads the request's
//! layout length of it, at most the 128-byte window) or a 16-byte `hwrm_short_input` whose
//! `signature` is `SHORT_REQ_SIGNATURE_SHORT_CMD` (0x4321) and whose `req_addr`/`size` name the
//! request in host memory (short form). The signature is the only thing that tells the forms
//! apart in public sources, so a window without it is a direct request: a short input with a
//! wrong signature is read as a direct request whose `resp_addr` is the short input's
//! `req_addr` field, and answered there.
//!
//! A short command whose `size` is below the 16-byte request header or above `max_ext_req_len`
//! is refused with INVALID_PARAMS (no public source states the code real firmware uses; this is
//! the HSI's code for a bad field). To be able to answer at all, the firmware reads the 16-byte
//! header at `req_addr` even when `size` is smaller.

use bnxt_hsi::hwrm::layouts::{HwrmShortInput, Input};
use bnxt_hsi::hwrm::{REQ_HEADER_LEN, SHORT_REQ_SIGNATURE};
use zerocopy::FromBytes;

use crate::events::SubmitForm;
use crate::host_memory::{DmaError, HostMemory};
use crate::regs::bar0::WINDOW_LEN;

use super::response::Reject;

/// A request as the firmware received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    /// The request's common header.
    pub header: Header,
    /// How it arrived.
    pub form: SubmitForm,
    /// Every byte received (the whole window for the direct form, `size` bytes for the short
    /// form); handlers zero-extend or truncate to their layout.
    pub bytes: Vec<u8>,
}

/// The fields of the common request header (`struct input`) the firmware uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// `req_type`.
    pub req_type: u16,
    /// `cmpl_ring` (0xffff: no completion-ring notification).
    pub cmpl_ring: u16,
    /// `seq_id`.
    pub seq_id: u16,
    /// `target_id`.
    pub target_id: u16,
    /// `resp_addr`: where the response goes.
    pub resp_addr: u64,
}

impl Header {
    fn parse(bytes: &[u8]) -> Header {
        let i = Input::read_from_prefix(bytes).expect("at least a header's worth of bytes").0;
        Header {
            req_type: i.req_type.get(),
            cmpl_ring: i.cmpl_ring.get(),
            seq_id: i.seq_id.get(),
            target_id: i.target_id.get(),
            resp_addr: i.resp_addr.get(),
        }
    }
}

/// Why a submission could not be taken normally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubmitError {
    /// The request could not be read from host memory: there is nowhere to answer.
    Unreadable(DmaError),
    /// The request is refused before it reaches a handler; the header says where to answer.
    Refused {
        /// The request's header.
        header: Header,
        /// Why.
        reject: Reject,
    },
}

/// The `req_type` in a window, whatever its form (both forms start with it).
pub fn window_req_type(window: &[u8; WINDOW_LEN]) -> u16 {
    Input::read_from_prefix(&window[..]).expect("the window holds a header").0.req_type.get()
}

/// Whether the window holds a short command.
pub fn is_short(window: &[u8; WINDOW_LEN]) -> bool {
    HwrmShortInput::read_from_prefix(&window[..]).expect("the window holds a short input").0.signature.get()
        == SHORT_REQ_SIGNATURE
}

/// Take the request a trigger submitted.
pub fn take(
    window: &[u8; WINDOW_LEN],
    mem: &dyn HostMemory,
    max_ext_req_len: usize,
) -> Result<Submission, SubmitError> {
    if !is_short(window) {
        return Ok(Submission { header: Header::parse(window), form: SubmitForm::Direct, bytes: window.to_vec() });
    }
    let short = HwrmShortInput::read_from_prefix(&window[..]).expect("window holds 16 bytes").0;
    let size = short.size.get() as usize;
    let req_addr = short.req_addr.get();
    let read_len = size.max(REQ_HEADER_LEN);
    if size > max_ext_req_len {
        let header = read_header(mem, req_addr)?;
        let reason = format!("short command size {size} exceeds max_ext_req_len {max_ext_req_len}");
        return Err(SubmitError::Refused { header, reject: Reject::invalid(reason) });
    }
    let mut bytes = vec![0u8; read_len];
    mem.read(req_addr, &mut bytes).map_err(SubmitError::Unreadable)?;
    let header = Header::parse(&bytes);
    if size < REQ_HEADER_LEN {
        let reason = format!("short command size {size} is below the {REQ_HEADER_LEN}-byte request header");
        return Err(SubmitError::Refused { header, reject: Reject::invalid(reason) });
    }
    if header.req_type != short.req_type.get() {
        let reason = format!(
            "short input names req_type 0x{:x} but the request is 0x{:x}",
            short.req_type.get(),
            header.req_type
        );
        return Err(SubmitError::Refused { header, reject: Reject::invalid(reason) });
    }
    Ok(Submission { header, form: SubmitForm::Short, bytes })
}

fn read_header(mem: &dyn HostMemory, req_addr: u64) -> Result<Header, SubmitError> {
    let mut hdr = [0u8; REQ_HEADER_LEN];
    mem.read(req_addr, &mut hdr).map_err(SubmitError::Unreadable)?;
    Ok(Header::parse(&hdr))
}
