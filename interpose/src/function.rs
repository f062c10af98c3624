//! One function with the layer in front of it: BAR stores routed to the HWRM and RoCE sides,
//! DMA allocations noted so that submissions pointing into them can be read, and a clock that
//! hands over what is due whenever the driver waits.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bnxt_hsi::bar0::{HWRM_TRIGGER, RCFW_CMDQ_TRIG, RCFW_COMM_BASE, TRIGGER_VALUE};
use bnxt_hsi::hwrm::Request;
use bnxt_hsi::hwrm::layouts::{
    HwrmCfaL2FilterAllocInput, HwrmFuncDrvIfChangeInput, HwrmFuncResetInput, HwrmRingAllocInput,
};
use bnxt_hsi::pci::{BAR_DOORBELLS, BAR_REGS};
use bnxt_model::faults::{CommandAction, FaultPlan, FirmwareAction};
use bnxt_pci::{Clock, ConfigExt, DmaBuffer, Interrupted, Layer, PciError, PciFunction, regs};
use zerocopy::FromBytes;

use crate::hwrm::{self, Fate, Hwrm};
use crate::machine::{Log, NicShared, lock};
use crate::memory::Memory;
use crate::rcfw::{Command, Rcfw, Verdict};
use crate::{command_name, request_name};

/// A function whose firmware faults the layer injects (made by [`crate::Interposed`]).
pub struct SeamFunction {
    core: Arc<Core>,
    clock: PumpClock,
}

struct Core {
    inner: Arc<dyn PciFunction>,
    nic: usize,
    plan: Arc<FaultPlan>,
    /// The layer stands in for the NIC's CMDQ and CREQ (the plan names RoCE commands of this NIC,
    /// or they may be armed on it mid-run).
    roce: bool,
    shared: Arc<Mutex<NicShared>>,
    log: Arc<Log>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    memory: Memory,
    hwrm: Hwrm,
    rcfw: Rcfw,
}

/// The driver's clock: the function's, handing over what is due around each sleep.
struct PumpClock(Arc<Core>);

impl Clock for PumpClock {
    fn now(&self) -> Duration {
        self.0.inner.clock().now()
    }
    fn sleep(&self, d: Duration) -> Result<(), Interrupted> {
        self.0.pump();
        let slept = self.0.inner.clock().sleep(d);
        self.0.pump();
        slept
    }
}

impl SeamFunction {
    pub(crate) fn new(
        inner: Arc<dyn PciFunction>,
        nic: usize,
        plan: Arc<FaultPlan>,
        roce: bool,
        shared: Arc<Mutex<NicShared>>,
        log: Arc<Log>,
    ) -> SeamFunction {
        let core = Arc::new(Core { inner, nic, plan, roce, shared, log, state: Mutex::default() });
        SeamFunction { clock: PumpClock(core.clone()), core }
    }
}

impl Core {
    fn say(&self, text: String) {
        self.log.say(self.inner.clock().now(), self.nic, text);
    }

    fn store(&self, offset: u64, value: u32) {
        self.inner.bar_write32(BAR_REGS, offset, value);
    }

    fn pump(&self) {
        let now = self.inner.clock().now();
        let said = {
            let mut st = lock(&self.state);
            let mut said = st.hwrm.pump(now);
            said.extend(st.rcfw.pump(now));
            said
        };
        for s in said {
            self.say(s);
        }
    }

    /// The HWRM trigger: decide what becomes of the request the window holds.
    fn hwrm_trigger(&self, st: &mut State) {
        let taken = match st.hwrm.take(&st.memory) {
            Ok(t) => t,
            Err(why) => {
                self.say(format!("an HWRM trigger the layer cannot read ({why}); passed on as written"));
                self.pass_as_written(st);
                return;
            }
        };
        let req_type = taken.header().req_type.get();
        let name = request_name(req_type);
        let (nth, armed) = lock(&self.shared).count_hwrm(req_type);
        let by = armed_by(armed.as_ref().map(|(id, _)| *id));
        let action = match armed {
            Some((_, action)) => Some(action),
            None => self.plan.firmware_action(self.nic, req_type, nth).cloned(),
        };
        let fired = |what: &str| format!("{name} #{nth}: {what}{by}");
        let fate = match action {
            Some(FirmwareAction::NoResponse) => {
                st.hwrm.drop_stores();
                self.say(fired("no-response: not passed on"));
                return;
            }
            Some(FirmwareAction::Error(code)) => {
                let refused = st.hwrm.refuse(&taken, code, &st.memory);
                st.hwrm.drop_stores();
                let code = bnxt_hsi::hwrm::ErrorCode::from_value(code);
                if refused {
                    self.say(fired(&format!("error {code}: not passed on; refused with {code}")));
                } else {
                    self.say(fired(&format!(
                        "error {code}: not passed on, and not answered: its response area is in no buffer the driver holds"
                    )));
                }
                return;
            }
            Some(FirmwareAction::Delay(d)) => Some(Fate::Late(d)),
            Some(FirmwareAction::ActsNoResponse) => Some(Fate::Withheld),
            // The layer holds answers back; it does not forge them. Malformed answers are the
            // model's own (its firmware writes them); here they are refused loudly.
            Some(a @ (FirmwareAction::WrongRespLen | FirmwareAction::WrongSeqId | FirmwareAction::NoValidByte)) => {
                self.say(fired(&format!(
                    "{:?}: a malformed answer is not injected at the seam (only the model's firmware writes one); passed on as written",
                    a.kind()
                )));
                None
            }
            None => None,
        };
        let mut request = taken.request.clone();
        if req_type == HwrmRingAllocInput::REQ_TYPE && self.roce {
            st.rcfw.ring_alloc(&mut request, &st.memory, &*self.inner);
        }
        if req_type == HwrmFuncResetInput::REQ_TYPE {
            st.rcfw.func_reset();
        }
        if req_type == HwrmFuncDrvIfChangeInput::REQ_TYPE
            && HwrmFuncDrvIfChangeInput::ref_from_prefix(&request)
                .is_ok_and(|(r, _)| r.flags.get() & HwrmFuncDrvIfChangeInput::FLAGS_UP != 0)
        {
            st.rcfw.l2_open_begins();
        }
        if req_type == HwrmCfaL2FilterAllocInput::REQ_TYPE {
            st.rcfw.l2_open_ends();
        }
        let token = match fate {
            Some(fate) => match st.hwrm.redirect(&mut request, &name, fate, &st.memory, &*self.inner) {
                Ok(token) => {
                    let what = match fate {
                        Fate::Late(d) => format!("delay {} ms: passed on; its answer is held", d.as_millis()),
                        Fate::Withheld => "acts-no-response: passed on; its answer will be withheld".into(),
                    };
                    self.say(fired(&what));
                    Some(token)
                }
                Err(why) => {
                    self.say(fired(&format!("the fault cannot be injected: {why}; passed on as written")));
                    None
                }
            },
            None => None,
        };
        match st.hwrm.pass_on(&taken, &request, &*self.inner) {
            Ok((stores, copy)) => {
                for (offset, value) in stores {
                    self.store(offset, value);
                }
                match token {
                    Some(token) => st.hwrm.await_answer(token, copy),
                    None => st.hwrm.keep_copy(copy),
                }
            }
            Err(e) => self.say(format!("{name} #{nth}: cannot be passed on ({e}); dropped")),
        }
    }

    /// Pass the held window stores on as the driver made them, then the trigger.
    fn pass_as_written(&self, st: &mut State) {
        let taken = hwrm::Taken { form: hwrm::Form::Direct, request: Vec::new() };
        if let Ok((stores, _)) = st.hwrm.pass_on(&taken, &[], &*self.inner) {
            for (offset, value) in stores {
                self.store(offset, value);
            }
        }
    }

    /// The RoCE trigger: decide each command the driver produced.
    fn rcfw_trigger(&self, st: &mut State) {
        let now = self.inner.clock().now();
        let mut said = Vec::new();
        let mut decide = |c: Command| {
            let name = command_name(c.opcode);
            let (nth, armed) = lock(&self.shared).count_roce(c.opcode);
            let by = armed_by(armed.as_ref().map(|(id, _)| *id));
            let fired = |what: &str| format!("{name} #{nth}: {what}{by}");
            let action = match &armed {
                Some((_, action)) => Some(action),
                None => self.plan.command_action(self.nic, c.opcode, nth),
            };
            match action {
                None => Verdict::PassOn,
                Some(CommandAction::NoResponse) => {
                    said.push(fired("no-response: not passed on"));
                    Verdict::Drop
                }
                Some(CommandAction::ActsNoResponse) => {
                    said.push(fired("acts-no-response: passed on; its completion will be withheld"));
                    Verdict::Redirect(Fate::Withheld)
                }
                Some(CommandAction::Delay(d)) => {
                    said.push(fired(&format!("delay {} ms: passed on; its completion is held", d.as_millis())));
                    Verdict::Redirect(Fate::Late(*d))
                }
                Some(CommandAction::Error(status)) => {
                    let word = bnxt_hsi::roce::rcfw::CreqStatus::from_value(*status).map_or("?", |s| s.name());
                    said.push(fired(&format!("error {word}: not passed on; completed with {word}")));
                    Verdict::Refuse(*status)
                }
            }
        };
        let State { memory, rcfw, .. } = st;
        let stores = rcfw.trigger(now, memory, &*self.inner, &mut decide);
        for (offset, value) in stores {
            self.store(offset, value);
        }
        for s in said {
            self.say(s);
        }
    }
}

/// What a log line adds for a fault armed mid-run (` (armed fault 2)`); nothing for the plan's.
fn armed_by(id: Option<u64>) -> String {
    id.map(|id| format!(" (armed fault {id})")).unwrap_or_default()
}

impl Drop for Core {
    fn drop(&mut self) {
        // Once bus mastering is off the device can reach none of what the layer gave it, and
        // the next open resets it before turning it on again: the memory may go. Otherwise (a
        // function let go while it may still master the bus) it is kept until the NIC is next
        // reset, as the driver keeps its own.
        let st = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        let mut kept = st.hwrm.forget();
        kept.extend(st.rcfw.forget());
        let master_off = self.inner.config_read16(regs::COMMAND).is_ok_and(|c| c & regs::COMMAND_MASTER == 0);
        if !master_off {
            lock(&self.shared).retire(kept);
        }
    }
}

impl Layer for SeamFunction {
    fn inner(&self) -> &dyn PciFunction {
        &*self.core.inner
    }
    fn bar_write32(&self, bar: u8, offset: u64, value: u32) {
        let core = &self.core;
        if bar == BAR_REGS {
            let mut st = lock(&core.state);
            if offset < hwrm::WINDOW as u64 && offset.is_multiple_of(4) {
                st.hwrm.store(offset, value);
                return;
            }
            if offset == HWRM_TRIGGER && value == TRIGGER_VALUE {
                core.hwrm_trigger(&mut st);
                return;
            }
            if core.roce && (RCFW_COMM_BASE..RCFW_COMM_BASE + 16).contains(&offset) && offset.is_multiple_of(4) {
                st.rcfw.store(offset, value);
                return;
            }
            if core.roce && offset == RCFW_CMDQ_TRIG && value == TRIGGER_VALUE {
                core.rcfw_trigger(&mut st);
                return;
            }
        }
        core.inner.bar_write32(bar, offset, value)
    }
    fn bar_write64(&self, bar: u8, offset: u64, value: u64) {
        let value =
            if bar == BAR_DOORBELLS && self.core.roce { lock(&self.core.state).rcfw.doorbell(value) } else { value };
        self.core.inner.bar_write64(bar, offset, value)
    }
    fn alloc_dma(&self, len: usize) -> Result<DmaBuffer, PciError> {
        let (buffer, watch) = self.core.inner.alloc_dma(len)?.watched();
        lock(&self.core.state).memory.add(watch);
        Ok(buffer)
    }
    fn reset(&self) -> Result<(), PciError> {
        let reset = self.core.inner.reset();
        // Whether or not the reset took, the driver starts over: what was awaited is forgotten.
        let freed = {
            let mut st = lock(&self.core.state);
            let mut freed = st.hwrm.forget();
            freed.extend(st.rcfw.forget());
            freed
        };
        if reset.is_ok() {
            drop(freed);
            drop(lock(&self.core.shared).reset());
        } else {
            lock(&self.core.shared).retire(freed);
        }
        reset
    }
    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
}
