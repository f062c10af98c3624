//! HWRM submissions as the layer sees them: the stores into the BAR0 request window are held
//! until the trigger (the window is only memory to the firmware until then), the request is read
//! whole (from the window, or for the short-command form from the DMA memory it points at), and
//! then passed on as written, passed on changed, answered here, or dropped.
//!
//! Sources: bnxt_en bnxt_hwrm.c `__hwrm_send` (the window, the short command, the trigger, the
//! response's `resp_len` then valid byte); bnxt_hsi.h `struct input`, `struct output`, `struct
//! hwrm_short_input`, `struct hwrm_err_output`; hardware-map §2.2.

use std::time::Duration;

use bnxt_hsi::bar0::{HWRM_REQ_WINDOW, HWRM_TRIGGER};
use bnxt_hsi::hwrm::layouts::{HwrmErrOutput, HwrmShortInput, Input, Output};
use bnxt_hsi::hwrm::{RESP_VALID_KEY, SHORT_REQ_SIGNATURE};
use bnxt_pci::{DmaBuffer, PAGE_SIZE, PciError, PciFunction};
use zerocopy::{FromBytes, IntoBytes};

use crate::memory::{Memory, Place};

/// What passing a request on takes: the stores to make at the device, in order, and the copy of a
/// changed short command that must live while the device may read it.
pub(crate) type PassedOn = (Vec<(u64, u32)>, Option<DmaBuffer>);

/// Bytes of the window the layer holds: up to the trigger, where a window ends.
pub(crate) const WINDOW: usize = HWRM_TRIGGER as usize;
/// Longest request read from DMA memory for a short command (the firmware's own limit is what
/// VER_GET says; no request of the HSI is longer than a page).
const MAX_SHORT_LEN: usize = PAGE_SIZE;

/// How a request came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// Written into the window.
    Direct,
    /// A short command in the window pointing at the request in DMA memory.
    Short {
        /// Where the request is.
        req_addr: u64,
    },
}

/// A request taken at a trigger.
#[derive(Debug, Clone)]
pub(crate) struct Taken {
    /// How it came.
    pub form: Form,
    /// The request itself, header first.
    pub request: Vec<u8>,
}

impl Taken {
    /// Its header.
    pub(crate) fn header(&self) -> Input {
        Input::read_from_prefix(&self.request).map(|(h, _)| h).expect("a taken request holds its header")
    }
}

/// What becomes of an answer the device gives to a shadow page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Handed to the driver this long after it came.
    Late(Duration),
    /// Never handed over.
    Withheld,
}

/// A request passed on whose answer the layer receives first.
struct Pending {
    seq_id: u16,
    name: String,
    fate: Fate,
    /// The page the device answers into.
    shadow: DmaBuffer,
    /// The copy of a short command's request the device reads, kept while it may.
    _request: Option<DmaBuffer>,
    /// Where the driver waits for the answer.
    driver: Place,
    /// The answer and when it came.
    came: Option<(Duration, Vec<u8>)>,
}

/// The HWRM side of one function.
#[derive(Default)]
pub(crate) struct Hwrm {
    window: Vec<u8>,
    /// Offsets of the dwords stored since the last trigger, in order.
    stores: Vec<u64>,
    pending: Vec<Pending>,
    /// The request copy of the last short command rewritten without a pending answer, kept
    /// until the next submission (the firmware has read it once the driver has its answer).
    last_copy: Option<DmaBuffer>,
}

impl Hwrm {
    /// A store of `value` at `offset` inside the window: held.
    pub(crate) fn store(&mut self, offset: u64, value: u32) {
        if self.window.is_empty() {
            self.window = vec![0; WINDOW];
        }
        let at = offset as usize;
        if at + 4 <= WINDOW {
            self.window[at..at + 4].copy_from_slice(&value.to_le_bytes());
            self.stores.push(offset);
        }
    }

    /// Read the request the held stores make, or say why it cannot be read. The stores stay
    /// held until [`Hwrm::pass_on`] or [`Hwrm::drop_stores`].
    pub(crate) fn take(&self, memory: &Memory) -> Result<Taken, String> {
        if self.window.len() < size_of::<Input>() || self.stores.is_empty() {
            return Err("a trigger with nothing written to the request window".into());
        }
        let (short, _) = HwrmShortInput::read_from_prefix(&self.window).expect("the window holds 16 bytes");
        if short.signature.get() == SHORT_REQ_SIGNATURE {
            let (req_addr, len) = (short.req_addr.get(), usize::from(short.size.get()));
            if !(size_of::<Input>()..=MAX_SHORT_LEN).contains(&len) {
                return Err(format!("a short command of {len} bytes"));
            }
            let request = memory.read(req_addr, len).ok_or_else(|| {
                format!("a short command's request at {req_addr:#x} is in no buffer the driver holds")
            })?;
            return Ok(Taken { form: Form::Short { req_addr }, request });
        }
        let end = self.stores.iter().map(|o| *o as usize + 4).max().unwrap_or(0);
        Ok(Taken { form: Form::Direct, request: self.window[..end].to_vec() })
    }

    /// Forget the held stores: the request is not passed on.
    pub(crate) fn drop_stores(&mut self) {
        self.stores.clear();
        self.window.fill(0);
    }

    /// The stores that pass `taken` on to the device with `request` in place of what the
    /// driver wrote (the same bytes when nothing changed), then the trigger. A short command's
    /// changed request goes in a copy the layer allocates on `function`, kept while the device
    /// may read it.
    pub(crate) fn pass_on(
        &mut self,
        taken: &Taken,
        request: &[u8],
        function: &dyn PciFunction,
    ) -> Result<PassedOn, PciError> {
        let mut copy = None;
        if let Form::Short { .. } = taken.form
            && request != taken.request.as_slice()
        {
            let buffer = function.alloc_dma(request.len())?;
            buffer.write(0, request);
            let (short, _) = HwrmShortInput::mut_from_prefix(&mut self.window).expect("16 bytes");
            short.req_addr = buffer.iova().into();
            copy = Some(buffer);
        } else if taken.form == Form::Direct {
            self.window[..request.len()].copy_from_slice(request);
        }
        let mut stores: Vec<(u64, u32)> = self
            .stores
            .iter()
            .map(|&o| {
                let at = o as usize;
                let dword = u32::from_le_bytes(self.window[at..at + 4].try_into().expect("4 bytes"));
                (HWRM_REQ_WINDOW + o, dword)
            })
            .collect();
        stores.push((HWRM_TRIGGER, bnxt_hsi::bar0::TRIGGER_VALUE));
        self.drop_stores();
        Ok((stores, copy))
    }

    /// Keep `copy` (a rewritten short command's request) until the next submission.
    pub(crate) fn keep_copy(&mut self, copy: Option<DmaBuffer>) {
        self.last_copy = copy;
    }

    /// Answer `taken` here with error `code`, as the firmware refuses a request
    /// (`hwrm_err_output`), into the driver's response area. False when the driver's response
    /// area is in no buffer it holds.
    pub(crate) fn refuse(&mut self, taken: &Taken, code: u16, memory: &Memory) -> bool {
        let header = taken.header();
        let answer = HwrmErrOutput {
            error_code: code.into(),
            req_type: header.req_type,
            seq_id: header.seq_id,
            resp_len: (size_of::<HwrmErrOutput>() as u16).into(),
            opaque_0: 0.into(),
            opaque_1: 0.into(),
            cmd_err: 0,
            valid: RESP_VALID_KEY,
        };
        let bytes = answer.as_bytes();
        memory.place(header.resp_addr.get()).is_some_and(|p| p.write_then(bytes, bytes.len() - 1))
    }

    /// Redirect `request`'s answer to a page of the layer's own (allocated on `function`), to
    /// meet `fate` there; the request with its `resp_addr` changed. Err when the driver's
    /// response area is in no buffer it holds, or no page can be had.
    pub(crate) fn redirect(
        &mut self,
        request: &mut [u8],
        name: &str,
        fate: Fate,
        memory: &Memory,
        function: &dyn PciFunction,
    ) -> Result<RedirectToken, String> {
        let (header, _) = Input::mut_from_prefix(request).expect("a request holds its header");
        let driver = memory.place(header.resp_addr.get()).ok_or_else(|| {
            format!("its response area {:#x} is in no buffer the driver holds", header.resp_addr.get())
        })?;
        let shadow = function.alloc_dma(PAGE_SIZE).map_err(|e| format!("no page for its answer: {e}"))?;
        header.resp_addr = shadow.iova().into();
        Ok(RedirectToken(Pending {
            seq_id: header.seq_id.get(),
            name: name.to_string(),
            fate,
            shadow,
            _request: None,
            driver,
            came: None,
        }))
    }

    /// The request of `token` was passed on (with `copy`, its request copy, if one was made).
    pub(crate) fn await_answer(&mut self, token: RedirectToken, copy: Option<DmaBuffer>) {
        let mut pending = token.0;
        pending._request = copy;
        self.pending.push(pending);
    }

    /// Take the answers the device has written to shadow pages, and hand to the driver those
    /// whose time has come. What happened, for the log.
    pub(crate) fn pump(&mut self, now: Duration) -> Vec<String> {
        let mut said = Vec::new();
        for p in &mut self.pending {
            if p.came.is_none()
                && let Some(answer) = answered(&p.shadow, p.seq_id)
            {
                p.came = Some((now, answer));
            }
        }
        self.pending.retain(|p| {
            let Some((came, answer)) = &p.came else { return true };
            match p.fate {
                Fate::Withheld => {
                    said.push(format!("{}: the firmware answered; the answer is withheld", p.name));
                    false
                }
                Fate::Late(d) if now >= *came + d => {
                    if p.driver.write_then(answer, answer.len() - 1) {
                        said.push(format!("{}: the answer is handed over {} ms late", p.name, d.as_millis()));
                    } else {
                        said.push(format!("{}: the answer came late for a driver that let its buffer go", p.name));
                    }
                    false
                }
                Fate::Late(_) => true,
            }
        });
        said
    }

    /// Forget every answer awaited (the function was reset: the firmware forgets them).
    pub(crate) fn forget(&mut self) -> Vec<DmaBuffer> {
        self.drop_stores();
        let mut freed: Vec<DmaBuffer> = self.last_copy.take().into_iter().collect();
        for p in self.pending.drain(..) {
            freed.push(p.shadow);
            freed.extend(p._request);
        }
        freed
    }
}

/// An answer being redirected, until its request is passed on.
pub(crate) struct RedirectToken(Pending);

/// The whole answer to `seq_id` in `page`, once the device has written it (its `resp_len`, then
/// its valid byte).
fn answered(page: &DmaBuffer, seq_id: u16) -> Option<Vec<u8>> {
    let mut head = [0u8; size_of::<Output>()];
    for (i, b) in head.iter_mut().enumerate() {
        *b = page.read_volatile_u8(i);
    }
    let header = Output::read_from_bytes(&head).expect("exactly a header");
    let len = usize::from(header.resp_len.get());
    if len < size_of::<Output>() || len > page.len() || header.seq_id.get() != seq_id {
        return None;
    }
    if page.read_volatile_u8(len - 1) == 0 {
        return None;
    }
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    let mut answer = vec![0u8; len];
    page.read(0, &mut answer);
    Some(answer)
}
