//! The RoCE firmware channel (RCFW): commands go into the command queue (CMDQ), answers come on
//! the completion ring (CREQ). One command at a time, as a state machine over the seam.
//!
//! As bnxt_re runs it (qplib_rcfw.c; hardware-map §4.1-§4.3):
//! - The CMDQ is 8192 16-byte slots in one contiguous buffer (level 0); the CREQ is 64 Ki 16-byte
//!   entries in pages behind a level-1 ring table (`bnxt_qplib_alloc_rcfw_channel`).
//! - Starting the channel arms the CREQ doorbell and writes `cmdq_init` (the CMDQ's address,
//!   size and level, the CREQ's ring id) as four dwords to BAR0 0x600
//!   (`bnxt_qplib_rcfw_start_irq`, `bnxt_qplib_start_rcfw`).
//! - A command is copied into consecutive slots, `cmd_size` counting slots and `cookie` the
//!   sequence number; the producer (the raw slot count, low 16 bits) is written to BAR0 0x60c,
//!   with bit 31 the first time, then 1 to BAR0 0x700 (`__send_message`).
//! - The answer is the CREQ entry of type QP_EVENT with the same cookie; an entry is new while
//!   its valid bit differs from the consumer's epoch. Consumed entries are acknowledged with an
//!   NQ doorbell carrying the consumer index (`bnxt_qplib_service_creq`).
//! - An answer that does not come within the firmware's timeout stalls the channel
//!   (`FIRMWARE_STALL_DETECTED`): here it wedges the NIC, as an unanswered HWRM request does,
//!   with the same shared state, and every later command or request fails at once.

use std::sync::atomic::{Ordering, fence};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bnxt_hsi::bar0;
use bnxt_hsi::pci::BAR_REGS;
use bnxt_hsi::roce::command::{Command, SideBuffer};
use bnxt_hsi::roce::cqe::is_new;
use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use bnxt_hsi::roce::layouts::{CmdqBase, CmdqInit, CreqCqErrorNotification, CreqQpErrorNotification, CreqQpEvent};
use bnxt_hsi::roce::rcfw::{
    BNXT_RE_CMDQ_SLOTS, BNXT_RE_CREQ_ENTRIES, CMDQ_INIT_SIZE_SHIFT, CMDQ_PROD_MASK, CMDQE_BYTES, CREQ_TYPE_FUNC_EVENT,
    CREQ_TYPE_HWRM_ASYNC_EVENT, CREQ_TYPE_QP_EVENT, CREQE_BYTES, EVENT_CQ_ERROR_NOTIFICATION,
    EVENT_QP_ERROR_NOTIFICATION, FIRMWARE_FIRST_FLAG, cmd_slots,
};
use zerocopy::{FromBytes, IntoBytes};

use super::Memory;
use super::db::DbPage;
use super::pbl::PblKind;
use super::queue::{Cursor, Queue, Shape};
use crate::error::Error;
use crate::trace::{self, Outcome};
use crate::wait::{self, Waiter};
use bnxt_pci::dma::{DmaBuffer, PAGE_SIZE};
use bnxt_pci::{PciError, PciFunction};

/// Cookies wrap at this mask (`RCFW_MAX_COOKIE_VALUE`, the CMDQ's slot count less one).
const COOKIE_MASK: u16 = (BNXT_RE_CMDQ_SLOTS - 1) as u16;
/// Where a CREQ entry's valid bit is (`creq_base.v`), read on its own before the rest.
const CREQ_V: usize = std::mem::offset_of!(CreqQpEvent, v);

/// The channel of one NIC.
pub(crate) struct Rcfw {
    nic: String,
    function: Arc<dyn PciFunction>,
    cmdq: DmaBuffer,
    creq: Queue,
    sbuf: DmaBuffer,
    db: DbPage,
    /// Slots written so far (`cmdq_hwq->prod`, not wrapped).
    prod: u32,
    /// The next producer write is the first (`FIRMWARE_FIRST_FLAG`).
    first: bool,
    seq: u16,
    cons: Cursor,
    ring_id: Option<u16>,
    timeout: Duration,
    wedged: Arc<OnceLock<String>>,
    qp_errors: Vec<u32>,
}

impl Rcfw {
    /// Allocate the channel's memory: CMDQ, CREQ (with its ring table) and a side-buffer page.
    /// Commands wait `timeout` for their answer; `wedged` is the NIC's wedge state.
    pub(crate) fn alloc(
        nic: &str,
        function: Arc<dyn PciFunction>,
        db: DbPage,
        timeout: Duration,
        wedged: Arc<OnceLock<String>>,
    ) -> Result<Rcfw, PciError> {
        let cmdq = function.alloc_dma(BNXT_RE_CMDQ_SLOTS as usize * CMDQE_BYTES)?;
        let creq = Queue::alloc(&*function, Shape::ring(BNXT_RE_CREQ_ENTRIES, CREQE_BYTES), PblKind::Queue)?;
        let sbuf = function.alloc_dma(PAGE_SIZE)?;
        Ok(Rcfw {
            nic: nic.to_string(),
            function,
            cmdq,
            creq,
            sbuf,
            db,
            prod: 0,
            first: true,
            seq: 0,
            cons: Cursor::default(),
            ring_id: None,
            timeout,
            wedged,
            qp_errors: Vec::new(),
        })
    }

    /// The CREQ's memory (for its RING_ALLOC).
    pub(crate) fn creq(&self) -> &Queue {
        &self.creq
    }

    /// Start the channel on the CREQ the firmware gave `ring_id`: arm the CREQ and announce the
    /// CMDQ with `cmdq_init`.
    pub(crate) fn start(&mut self, ring_id: u16) {
        self.ring_id = Some(ring_id);
        self.ring_creq(DbType::NqArm);
        let init = CmdqInit {
            cmdq_pbl: self.cmdq.iova().into(),
            cmdq_size_cmdq_lvl: (((BNXT_RE_CMDQ_SLOTS << CMDQ_INIT_SIZE_SHIFT) as u16 & CmdqInit::CMDQ_SIZE_MASK)
                | (super::pbl::level(1, PblKind::Ctx) as u16 & CmdqInit::CMDQ_LVL_MASK))
                .into(),
            creq_ring_id: ring_id.into(),
            prod_idx: 0.into(),
        };
        fence(Ordering::SeqCst);
        for (i, dword) in init.as_bytes().chunks(4).enumerate() {
            let v = u32::from_le_bytes(dword.try_into().expect("4-byte chunks"));
            self.function.bar_write32(BAR_REGS, bar0::RCFW_COMM_BASE + 4 * i as u64, v);
        }
    }

    /// QPNs the firmware reported in error since the last call.
    pub(crate) fn take_qp_errors(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.qp_errors)
    }

    /// Send `cmd` and wait for its answer.
    pub(crate) fn send<C: Command>(&mut self, cmd: C) -> Result<C::Response, Error> {
        let entry = self.exchange::<C>(cmd.as_bytes(), None)?;
        Ok(C::Response::read_from_bytes(&entry).expect("a CREQ entry is 16 bytes"))
    }

    /// Send `cmd`, naming the side buffer for its answer, and wait for it.
    pub(crate) fn query<C: SideBuffer>(&mut self, cmd: C) -> Result<(C::Response, C::Buffer), Error> {
        let len = size_of::<C::Buffer>();
        self.sbuf.zero(0, len.next_multiple_of(CMDQE_BYTES));
        let entry = self.exchange::<C>(cmd.as_bytes(), Some(len))?;
        let mut buf = vec![0u8; len];
        self.sbuf.read(0, &mut buf);
        let resp = C::Response::read_from_bytes(&entry).expect("a CREQ entry is 16 bytes");
        Ok((resp, C::Buffer::read_from_bytes(&buf).expect("read at the buffer's size")))
    }

    fn exchange<C: Command>(&mut self, bytes: &[u8], side: Option<usize>) -> Result<[u8; 16], Error> {
        if let Some(by) = self.wedged.get() {
            return Err(Error::Wedged { nic: self.nic.clone(), request: C::NAME.into(), wedged_by: by.clone() });
        }
        assert!(self.ring_id.is_some(), "a RoCE command before the channel was started");
        let slots = cmd_slots(bytes.len());
        let cookie = self.seq & COOKIE_MASK;
        self.seq = self.seq.wrapping_add(1);
        let mut cmd = bytes.to_vec();
        cmd.resize(slots * CMDQE_BYTES, 0);
        {
            let (hdr, _) = CmdqBase::mut_from_prefix(&mut cmd).expect("a command starts with cmdq_base");
            hdr.opcode = C::OPCODE;
            hdr.cmd_size = slots as u8;
            hdr.cookie = cookie.into();
            if let Some(len) = side {
                hdr.resp_addr = self.sbuf.iova().into();
                hdr.resp_size = cmd_slots(len) as u8;
            }
        }
        for (i, slot) in cmd.chunks(CMDQE_BYTES).enumerate() {
            let at = (self.prod as usize + i) % BNXT_RE_CMDQ_SLOTS as usize;
            self.cmdq.write(at * CMDQE_BYTES, slot);
        }
        self.prod = self.prod.wrapping_add(slots as u32);
        let mut prod = self.prod & CMDQ_PROD_MASK;
        if std::mem::take(&mut self.first) {
            prod |= FIRMWARE_FIRST_FLAG;
        }
        trace::roce_command(self.function.bus(), C::NAME, cookie);
        fence(Ordering::SeqCst);
        self.function.bar_write32(BAR_REGS, bar0::RCFW_CMDQ_PROD, prod);
        self.function.bar_write32(BAR_REGS, bar0::RCFW_CMDQ_TRIG, bar0::TRIGGER_VALUE);

        let entry = self
            .await_answer::<C>(cookie)
            .inspect_err(|e| trace::roce_answer(self.function.bus(), C::NAME, cookie, &Outcome::of_error(e)))?;
        let head = CreqQpEvent::read_from_bytes(&entry).expect("16 bytes");
        if head.event != C::OPCODE {
            tracing::warn!(nic = %self.nic, command = C::NAME, event = head.event, "completion names another opcode");
        }
        let outcome = match head.status {
            0 => Outcome::Ok,
            status => Outcome::Refused(format!("0x{status:02x}")),
        };
        trace::roce_answer(self.function.bus(), C::NAME, cookie, &outcome);
        match head.status {
            0 => Ok(entry),
            status => Err(Error::CommandRefused { nic: self.nic.clone(), command: C::NAME.into(), status }),
        }
    }

    /// Consume CREQ entries until the one answering `cookie`; wedge if it does not come in time.
    fn await_answer<C: Command>(&mut self, cookie: u16) -> Result<[u8; 16], Error> {
        let function = self.function.clone();
        let clock = function.clock();
        let mut waiter = Waiter::new(clock, self.timeout, wait::RCFW_COMPLETION);
        loop {
            let mut consumed = 0;
            let mut answer = None;
            while answer.is_none() {
                let Some(entry) = self.next_entry() else { break };
                consumed += 1;
                answer = self.dispatch(entry, cookie);
            }
            if consumed > 0 {
                self.ring_creq(DbType::Nq);
            }
            if let Some(entry) = answer {
                return Ok(entry);
            }
            match waiter.pause() {
                Ok(true) => {}
                Ok(false) => {
                    let _ = self.wedged.set(C::NAME.to_string());
                    return Err(Error::Timeout {
                        nic: self.nic.clone(),
                        request: C::NAME.into(),
                        timeout: self.timeout,
                    });
                }
                Err(reason) => {
                    let _ = self.wedged.set(C::NAME.to_string());
                    return Err(Error::Interrupted { nic: self.nic.clone(), request: C::NAME.into(), reason });
                }
            }
        }
    }

    /// The CREQ entry at the consumer, if it is new; the consumer moves past it.
    fn next_entry(&mut self) -> Option<[u8; 16]> {
        let at = self.creq.offset(self.cons.index);
        let v = self.creq.data().read_volatile_u8(at + CREQ_V) & 1 != 0;
        if !is_new(v, self.cons.epoch) {
            return None;
        }
        // The entry was written before its valid bit; read it after.
        fence(Ordering::Acquire);
        let mut entry = [0u8; 16];
        self.creq.data().read(at, &mut entry);
        self.cons.advance(1, self.creq.shape.depth);
        Some(entry)
    }

    /// Act on one CREQ entry; the entry itself if it answers `cookie`.
    fn dispatch(&mut self, entry: [u8; 16], cookie: u16) -> Option<[u8; 16]> {
        let head = CreqQpEvent::read_from_bytes(&entry).expect("16 bytes");
        match head.type_ & CreqQpEvent::TYPE_MASK {
            CREQ_TYPE_QP_EVENT => match head.event {
                EVENT_QP_ERROR_NOTIFICATION => {
                    let e = CreqQpErrorNotification::read_from_bytes(&entry).expect("16 bytes");
                    let (qpn, req_reason, res_reason) = (e.xid.get(), e.req_err_state_reason, e.res_err_state_reason);
                    tracing::warn!(nic = %self.nic, qpn, req_reason, res_reason, "the firmware reports a QP in error");
                    self.qp_errors.push(qpn);
                }
                EVENT_CQ_ERROR_NOTIFICATION => {
                    let e = CreqCqErrorNotification::read_from_bytes(&entry).expect("16 bytes");
                    tracing::warn!(nic = %self.nic, cq = e.xid.get(), reason = e.cq_err_reason, "the firmware reports a CQ error");
                }
                _ => {
                    let got = head.cookie.get() & COOKIE_MASK;
                    if got == cookie {
                        return Some(entry);
                    }
                    tracing::warn!(nic = %self.nic, cookie = got, expected = cookie, "discarding a completion of no outstanding command");
                }
            },
            CREQ_TYPE_FUNC_EVENT => tracing::warn!(nic = %self.nic, event = head.event, "RoCE function event"),
            CREQ_TYPE_HWRM_ASYNC_EVENT => {
                tracing::debug!(nic = %self.nic, "HWRM async event on the CREQ (ignored, as bnxt_re does)")
            }
            other => tracing::warn!(nic = %self.nic, ty = other, "CREQ entry of unknown type"),
        }
        None
    }

    fn ring_creq(&self, ty: DbType) {
        let id = self.ring_id.expect("the CREQ has a ring id once started");
        self.db.ring(Doorbell::roce(ty, u32::from(id), self.cons.index, self.cons.epoch, 0));
    }

    /// The channel's memory alone, letting go of the function (memory kept after a timeout must
    /// not keep the function held).
    pub(crate) fn into_memory(self) -> Memory {
        let bytes = self.cmdq.len() + self.creq.bytes() + self.sbuf.len();
        Memory::new((self.cmdq, self.creq, self.sbuf), bytes)
    }
}
