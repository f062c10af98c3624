//! The HWRM channel: the firmware's request/response mailbox, one request at a time.
//!
//! One DMA buffer holds the request (at 0) and the response (at +4096), as bnxt_en's
//! `BNXT_HWRM_DMA_SIZE`/`BNXT_HWRM_RESP_OFFSET` lay it out. A request is written into the BAR0
//! window (or sent as a short command pointing at the buffer), the trigger at BAR0 0x100 is
//! written, and the response is polled: first its `resp_len` and `seq_id`, then its last byte,
//! the valid byte, which the driver clears before reading `error_code` (bnxt_hwrm.c
//! `__hwrm_send`; hardware-map §2.2).
//!
//! A request that gets no answer in time wedges the channel: the firmware may still act on it,
//! so nothing more is sent, every later request fails at once naming the one that wedged it,
//! and the buffer (which the firmware may still write) is kept until the NIC is closed.

pub(crate) mod framing;
pub(crate) mod timeouts;

use std::sync::atomic::{Ordering, fence};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bnxt_hsi::bar0;
use bnxt_hsi::hwrm::layouts::HwrmRespHdr;
use bnxt_hsi::hwrm::{ErrorCode, Request};
use bnxt_hsi::pci::BAR_REGS;
use bnxt_pci::Interrupted;
use zerocopy::FromBytes;

use crate::error::Error;
use crate::trace::{self, Outcome};
use crate::wait::{self, Waiter};
use bnxt_pci::PciFunction;
use bnxt_pci::dma::{DmaBuffer, PAGE_SIZE};
use framing::{Mode, WindowLimits};
use timeouts::Timeouts;

/// Offset of the response in the channel's buffer (`BNXT_HWRM_RESP_OFFSET`).
const RESP_OFFSET: usize = PAGE_SIZE;
/// Size of the response area.
const RESP_AREA: usize = PAGE_SIZE;
/// Size of the channel's buffer (`BNXT_HWRM_DMA_SIZE`: request page + response page).
const DMA_SIZE: usize = 2 * PAGE_SIZE;
/// How long the valid byte may lag `resp_len` (`HWRM_VALID_BIT_DELAY_USEC`).
const VALID_BIT_DELAY: Duration = Duration::from_micros(50_000);

/// The HWRM mailbox of one NIC.
pub(crate) struct Channel {
    nic: String,
    function: Arc<dyn PciFunction>,
    buffer: DmaBuffer,
    seq_id: u16,
    limits: WindowLimits,
    timeouts: Timeouts,
    wedged: Arc<OnceLock<String>>,
}

impl Channel {
    /// A channel to `function`'s firmware, with the defaults that hold until VER_GET.
    pub(crate) fn new(nic: &str, function: Arc<dyn PciFunction>) -> Result<Channel, Error> {
        let buffer = function.alloc_dma(DMA_SIZE).map_err(|source| Error::Pci { nic: nic.to_string(), source })?;
        Ok(Channel {
            nic: nic.to_string(),
            function,
            buffer,
            seq_id: 0,
            limits: WindowLimits::default(),
            timeouts: Timeouts::default(),
            wedged: Arc::new(OnceLock::new()),
        })
    }

    /// Take what VER_GET said about window sizes, short commands and timeouts.
    pub(crate) fn configure(&mut self, limits: WindowLimits, timeouts: Timeouts) {
        self.limits = limits;
        self.timeouts = timeouts;
    }

    /// The timeouts in force.
    pub(crate) fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// Where the name of the request that wedged the channel is kept (shared with the NIC).
    pub(crate) fn wedged(&self) -> Arc<OnceLock<String>> {
        self.wedged.clone()
    }

    /// Whether a request went unanswered.
    pub(crate) fn is_wedged(&self) -> bool {
        self.wedged.get().is_some()
    }

    /// Give up the channel, keeping its buffer (which a wedged firmware may still write).
    pub(crate) fn into_buffer(self) -> DmaBuffer {
        self.buffer
    }

    /// Send `req` and wait for its answer for the request timeout in force.
    pub(crate) fn send<R: Request>(&mut self, req: R) -> Result<R::Response, Error> {
        let timeout = self.timeouts.default_wait();
        self.send_within(req, timeout)
    }

    /// Send `req` and wait for its answer for at most `timeout`.
    pub(crate) fn send_within<R: Request>(&mut self, req: R, timeout: Duration) -> Result<R::Response, Error> {
        self.send_len(req, size_of::<R>(), timeout)
    }

    /// Send the first `min(size, max_ext_req_len)` bytes of `req`, as bnxt_en sends FUNC_CFG
    /// (bnxt_hwrm.h `bnxt_hwrm_func_cfg_short_req_init`: the 160-byte request cut to the longest
    /// the firmware takes, whose tail only names features this driver does not ask for).
    pub(crate) fn send_trimmed<R: Request>(&mut self, req: R) -> Result<R::Response, Error> {
        let len = size_of::<R>().min(self.limits.max_ext_req_len);
        let timeout = self.timeouts.default_wait();
        self.send_len(req, len, timeout)
    }

    fn send_len<R: Request>(&mut self, req: R, len: usize, timeout: Duration) -> Result<R::Response, Error> {
        if let Some(by) = self.wedged.get() {
            return Err(Error::Wedged { nic: self.nic.clone(), request: R::NAME.to_string(), wedged_by: by.clone() });
        }
        let mode = framing::mode(len, &self.limits).map_err(|too_long| Error::RequestTooLong {
            nic: self.nic.clone(),
            request: R::NAME.to_string(),
            len,
            max: too_long.max,
        })?;
        let seq_id = self.seq_id;
        self.seq_id = self.seq_id.wrapping_add(1);

        let mut request = req.as_bytes()[..len].to_vec();
        framing::fill_header(&mut request, R::REQ_TYPE, seq_id, self.buffer.iova_at(RESP_OFFSET));
        self.buffer.zero(RESP_OFFSET, RESP_AREA);
        self.buffer.write(0, &request);

        match mode {
            Mode::Direct { window_len } => self.write_window(&request, window_len),
            Mode::Short => {
                let short = framing::short_input(R::REQ_TYPE, len, self.buffer.iova_at(0));
                self.write_window(&short, short.len());
            }
        }
        trace::hwrm_request(self.function.bus(), R::NAME, seq_id);
        self.function.bar_write32(BAR_REGS, bar0::HWRM_TRIGGER, bar0::TRIGGER_VALUE);

        let resp_len = self
            .await_response::<R>(seq_id, timeout)
            .inspect_err(|e| trace::hwrm_answer(self.function.bus(), R::NAME, seq_id, &Outcome::of_error(e)))?;
        let mut bytes = vec![0u8; size_of::<R::Response>()];
        let n = resp_len.min(bytes.len());
        self.buffer.read(RESP_OFFSET, &mut bytes[..n]);
        let resp = R::Response::read_from_bytes(&bytes).expect("the buffer is exactly the response's size");
        let (header, _) = HwrmRespHdr::read_from_prefix(&bytes).expect("a response starts with its header");
        let code = header.error_code.get();
        if code != 0 {
            let code = ErrorCode::from_value(code);
            trace::hwrm_answer(self.function.bus(), R::NAME, seq_id, &Outcome::Refused(code.to_string()));
            return Err(Error::Refused { nic: self.nic.clone(), request: R::NAME.to_string(), code });
        }
        trace::hwrm_answer(self.function.bus(), R::NAME, seq_id, &Outcome::Ok);
        Ok(resp)
    }

    /// Write `data` into the request window, zero the rest of it up to `window_len`.
    fn write_window(&self, data: &[u8], window_len: usize) {
        // Everything the request points at must be in memory before the firmware is told
        // (`wmb()` before the window writes in `__hwrm_send`).
        fence(Ordering::SeqCst);
        let mut offset = 0;
        for chunk in data.chunks(4) {
            let mut dword = [0u8; 4];
            dword[..chunk.len()].copy_from_slice(chunk);
            self.function.bar_write32(BAR_REGS, bar0::HWRM_REQ_WINDOW + offset as u64, u32::from_le_bytes(dword));
            offset += 4;
        }
        while offset < window_len {
            self.function.bar_write32(BAR_REGS, bar0::HWRM_REQ_WINDOW + offset as u64, 0);
            offset += 4;
        }
    }

    /// Wait for the answer with sequence number `seq_id`: its `resp_len`, then its valid byte,
    /// which is cleared. The response's length, or the error that wedged the channel.
    fn await_response<R: Request>(&mut self, seq_id: u16, timeout: Duration) -> Result<usize, Error> {
        let function = self.function.clone();
        let clock = function.clock();
        let mut waiter = Waiter::new(clock, timeout, wait::HWRM_RESPONSE);
        let mut seen_out_of_seq = None;
        let resp_len = loop {
            let header = self.read_resp_header();
            let len = header.resp_len.get();
            if len != 0 {
                let resp_seq = header.seq_id.get();
                if resp_seq == seq_id {
                    break usize::from(len);
                }
                if seen_out_of_seq != Some(resp_seq) {
                    tracing::warn!(nic = %self.nic, request = R::NAME, seq_id, resp_seq, "discarding an out-of-sequence HWRM response");
                    seen_out_of_seq = Some(resp_seq);
                }
            }
            match waiter.pause() {
                Ok(true) => {}
                Ok(false) => return Err(self.wedge::<R>(timeout)),
                Err(cut) => return Err(self.wedge_interrupted::<R>(cut)),
            }
        };
        if resp_len > RESP_AREA {
            return Err(Error::Firmware {
                nic: self.nic.clone(),
                what: format!(
                    "{} answered with resp_len {resp_len}, beyond the {RESP_AREA}-byte response area",
                    R::NAME
                ),
            });
        }
        let valid_at = RESP_OFFSET + resp_len - 1;
        let mut waiter = Waiter::new(clock, VALID_BIT_DELAY, wait::VALID_BYTE);
        while self.buffer.read_volatile_u8(valid_at) == 0 {
            match waiter.pause() {
                Ok(true) => {}
                Ok(false) => return Err(self.wedge::<R>(timeout)),
                Err(cut) => return Err(self.wedge_interrupted::<R>(cut)),
            }
        }
        // The rest of the response was written before the valid byte; read it after.
        fence(Ordering::Acquire);
        // Cleared so that a byte a newer interface gives meaning to reads zero (`__hwrm_send`).
        self.buffer.write_volatile_u8(valid_at, 0);
        Ok(resp_len)
    }

    /// The response area's header as the firmware has written it so far (read byte by byte:
    /// the firmware may be writing it).
    fn read_resp_header(&self) -> HwrmRespHdr {
        let mut bytes = [0u8; size_of::<HwrmRespHdr>()];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = self.buffer.read_volatile_u8(RESP_OFFSET + i);
        }
        HwrmRespHdr::read_from_bytes(&bytes).expect("exactly a header's bytes")
    }

    /// As [`Self::wedge`], for a wait the clock cut short.
    fn wedge_interrupted<R: Request>(&self, reason: Interrupted) -> Error {
        let _ = self.wedged.set(R::NAME.to_string());
        Error::Interrupted { nic: self.nic.clone(), request: R::NAME.to_string(), reason }
    }

    /// Wedge the channel on `R`, which got no answer within `timeout`.
    fn wedge<R: Request>(&self, timeout: Duration) -> Error {
        let _ = self.wedged.set(R::NAME.to_string());
        Error::Timeout { nic: self.nic.clone(), request: R::NAME.to_string(), timeout }
    }
}

#[cfg(test)]
mod tests;
