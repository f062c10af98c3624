//! A machine of fake functions whose firmware answers a P7 bring-up (HWRM, and RoCE commands
//! through [`super::roce_fw`]), with faults by request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::hwrm::layouts::*;
use zerocopy::FromZeros;

use super::{FakeFunction, Reply, parse, req_type, respond};
use bnxt_pci::{Machine, PciError, PciFunction};

/// What the fake firmware does instead of answering.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fault {
    /// Never answer.
    Never,
    /// Answer with this error code.
    Refuse(u16),
}

/// Faults by (req_type, occurrence); occurrence 0 means every one.
pub(crate) type Faults = Arc<Mutex<HashMap<(u16, u32), Fault>>>;

pub(crate) const MAC: [u8; 6] = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
/// The id the fake firmware gives its L2 filter.
pub(crate) const FILTER_ID: u64 = 0x1234_5678_9abc;
const TYPES: [u16; 9] = [0, 1, 2, 3, 4, 5, 6, 0xe, 0xf];

fn qcaps_v2(ty: u16) -> HwrmFuncBackingStoreQcapsV2Output {
    let mut r = HwrmFuncBackingStoreQcapsV2Output::new_zeroed();
    let pos = TYPES.iter().position(|t| *t == ty);
    r.type_ = ty.into();
    r.next_valid_type = pos.and_then(|p| TYPES.get(p + 1)).copied().unwrap_or(0xffff).into();
    if pos.is_none() {
        return r;
    }
    r.flags = (HwrmFuncBackingStoreQcapsV2Output::FLAGS_TYPE_VALID
        | HwrmFuncBackingStoreQcapsV2Output::FLAGS_ENABLE_CTX_KIND_INIT)
        .into();
    r.entry_size = 64.into();
    r.max_num_entries = 2048.into();
    r.ctx_init_value = if ty == 0 { 0xa5 } else { 0 };
    r.ctx_init_offset = 1;
    if ty == 0 {
        r.subtype_valid_cnt = 2;
        r.split_entry_0 = 64.into();
        r.split_entry_1 = 2.into();
    }
    if ty == 6 {
        r.instance_bit_map = 0b101.into();
    }
    r
}

pub(crate) fn firmware(faults: Faults) -> impl FnMut(&[u8]) -> Reply + Send + 'static {
    let mut seen: HashMap<u16, u32> = HashMap::new();
    let mut next_ring = 0u16;
    let mut reserved = HwrmFuncCfgInput::new_zeroed();
    move |req: &[u8]| {
        let ty = req_type(req);
        let n = seen.entry(ty).or_insert(0);
        *n += 1;
        let fault = {
            let f = faults.lock().unwrap();
            f.get(&(ty, *n)).or_else(|| f.get(&(ty, 0))).copied()
        };
        match fault {
            Some(Fault::Never) => return Reply::Never,
            Some(Fault::Refuse(code)) => {
                return Reply::Now(respond::<HwrmFuncResetInput>(req, HwrmFuncResetOutput::new_zeroed(), code));
            }
            None => {}
        }
        Reply::Now(match ty {
            0x00 => {
                let mut r = HwrmVerGetOutput::new_zeroed();
                (r.hwrm_intf_maj_8b, r.hwrm_intf_min_8b, r.hwrm_intf_upd_8b) = (1, 10, 3);
                r.chip_num = 0x1760.into();
                r.def_req_timeout = 1000.into();
                r.max_req_win_len = 128.into();
                r.max_ext_req_len = 256.into();
                respond::<HwrmVerGetInput>(req, r, 0)
            }
            0x11 => respond::<HwrmFuncResetInput>(req, FromZeros::new_zeroed(), 0),
            0x15 => {
                let mut r = HwrmFuncQcapsOutput::new_zeroed();
                r.flags = HwrmFuncQcapsOutput::FLAGS_ROCE_V2_SUPPORTED.into();
                r.flags_ext = HwrmFuncQcapsOutput::FLAGS_EXT_BS_V2_SUPPORTED.into();
                r.mac_address = MAC;
                respond::<HwrmFuncQcapsInput>(req, r, 0)
            }
            0x1d => {
                let mut r = HwrmFuncDrvRgtrOutput::new_zeroed();
                r.flags = HwrmFuncDrvRgtrOutput::FLAGS_IF_CHANGE_SUPPORTED.into();
                respond::<HwrmFuncDrvRgtrInput>(req, r, 0)
            }
            0x0d => respond::<HwrmFuncDrvIfChangeInput>(req, FromZeros::new_zeroed(), 0),
            0x190 => {
                let mut r = HwrmFuncResourceQcapsOutput::new_zeroed();
                r.max_msix = 16.into();
                r.max_cmpl_rings = 16.into();
                r.max_rx_rings = 16.into();
                r.max_tx_rings = 16.into();
                r.max_stat_ctx = 16.into();
                r.max_vnics = 4.into();
                r.max_rsscos_ctx = 4.into();
                respond::<HwrmFuncResourceQcapsInput>(req, r, 0)
            }
            0x17 => {
                let cfg: HwrmFuncCfgInput = parse(req);
                reserved = cfg;
                respond::<HwrmFuncCfgInput>(req, FromZeros::new_zeroed(), 0)
            }
            0x40 => {
                let mut r = HwrmVnicAllocOutput::new_zeroed();
                r.vnic_id = 0.into();
                respond::<HwrmVnicAllocInput>(req, r, 0)
            }
            0x41 => respond::<HwrmVnicFreeInput>(req, FromZeros::new_zeroed(), 0),
            0x42 => respond::<HwrmVnicCfgInput>(req, FromZeros::new_zeroed(), 0),
            0x46 => respond::<HwrmVnicRssCfgInput>(req, FromZeros::new_zeroed(), 0),
            0x70 => {
                let mut r = HwrmVnicRssCosLbCtxAllocOutput::new_zeroed();
                r.rss_cos_lb_ctx_id = 7.into();
                respond::<HwrmVnicRssCosLbCtxAllocInput>(req, r, 0)
            }
            0x71 => respond::<HwrmVnicRssCosLbCtxFreeInput>(req, FromZeros::new_zeroed(), 0),
            0x90 => {
                let mut r = HwrmCfaL2FilterAllocOutput::new_zeroed();
                r.l2_filter_id = FILTER_ID.into();
                respond::<HwrmCfaL2FilterAllocInput>(req, r, 0)
            }
            0x91 => respond::<HwrmCfaL2FilterFreeInput>(req, FromZeros::new_zeroed(), 0),
            0x1a => respond::<HwrmFuncDrvUnrgtrInput>(req, FromZeros::new_zeroed(), 0),
            0x30 => {
                let mut r = HwrmQueueQportcfgOutput::new_zeroed();
                r.max_configurable_queues = 8;
                respond::<HwrmQueueQportcfgInput>(req, r, 0)
            }
            0x1a8 => {
                let asked = parse::<HwrmFuncBackingStoreQcapsV2Input>(req).type_.get();
                respond::<HwrmFuncBackingStoreQcapsV2Input>(req, qcaps_v2(asked), 0)
            }
            0x1a3 => respond::<HwrmFuncBackingStoreCfgV2Input>(req, FromZeros::new_zeroed(), 0),
            0x16 => {
                let mut r = HwrmFuncQcfgOutput::new_zeroed();
                r.legacy_l2_db_size_kb = 64.into();
                r.l2_doorbell_bar_size_kb = 1024.into();
                r.mac_address = MAC;
                // What the last FUNC_CFG reserved (bnxt.c `bnxt_hwrm_get_rings`).
                r.alloc_rx_rings = reserved.num_rx_rings;
                r.alloc_cmpl_rings = reserved.num_cmpl_rings;
                r.alloc_msix = reserved.num_msix;
                r.alloc_stat_ctx = reserved.num_stat_ctxs;
                r.alloc_vnics = reserved.num_vnics;
                r.alloc_rsscos_ctx = reserved.num_rsscos_ctxs;
                respond::<HwrmFuncQcfgInput>(req, r, 0)
            }
            0x2a => respond::<HwrmPortPhyQcapsInput>(req, FromZeros::new_zeroed(), 0),
            0x50 => {
                let mut r = HwrmRingAllocOutput::new_zeroed();
                r.ring_id = next_ring.into();
                next_ring += 1;
                respond::<HwrmRingAllocInput>(req, r, 0)
            }
            0x51 => respond::<HwrmRingFreeInput>(req, FromZeros::new_zeroed(), 0),
            0xb0 => {
                let mut r = HwrmStatCtxAllocOutput::new_zeroed();
                r.stat_ctx_id = 3.into();
                respond::<HwrmStatCtxAllocInput>(req, r, 0)
            }
            0xb1 => respond::<HwrmStatCtxFreeInput>(req, FromZeros::new_zeroed(), 0),
            0x27 => {
                let mut r = HwrmPortPhyQcfgOutput::new_zeroed();
                r.link = HwrmPortPhyQcfgOutput::LINK_LINK;
                respond::<HwrmPortPhyQcfgInput>(req, r, 0)
            }
            _ => respond::<HwrmFuncResetInput>(req, FromZeros::new_zeroed(), ErrorCode::CmdNotSupported.value()),
        })
    }
}

/// A machine of fake functions.
pub(crate) struct FakeMachine {
    pub functions: Vec<Arc<FakeFunction>>,
    pub held: Mutex<Vec<Weak<FakeFunction>>>,
    pub faults: Faults,
}

impl FakeMachine {
    pub(crate) fn new(n: usize) -> FakeMachine {
        let faults: Faults = Arc::default();
        let functions = (0..n).map(|_| Arc::new(FakeFunction::new(firmware(faults.clone())))).collect();
        FakeMachine { functions, held: Mutex::new((0..n).map(|_| Weak::new()).collect()), faults }
    }

    /// One NIC whose answers (by req_type) `patch` changes on their way out.
    pub(crate) fn patched(patch: impl Fn(u16, &mut Vec<u8>) + Send + 'static) -> FakeMachine {
        let faults: Faults = Arc::default();
        let mut inner = firmware(faults.clone());
        let f = FakeFunction::new(move |req| match inner(req) {
            Reply::Now(mut bytes) => {
                patch(req_type(req), &mut bytes);
                Reply::Now(bytes)
            }
            other => other,
        });
        FakeMachine { functions: vec![Arc::new(f)], held: Mutex::new(vec![Weak::new()]), faults }
    }

    pub(crate) fn fault(&self, req_type: u16, nth: u32, fault: Fault) {
        self.faults.lock().unwrap().insert((req_type, nth), fault);
    }

    pub(crate) fn clear_faults(&self) {
        self.faults.lock().unwrap().clear();
    }

    pub(crate) fn f(&self, i: usize) -> &FakeFunction {
        &self.functions[i]
    }

    pub(crate) fn order(&self, i: usize) -> Vec<u16> {
        self.f(i).submissions().iter().map(|s| req_type(&s.request)).collect()
    }
}

impl Machine for FakeMachine {
    fn buses(&self) -> Result<Vec<String>, PciError> {
        Ok((0..self.functions.len()).map(|i| format!("0000:{:02x}:00.0", i + 1)).collect())
    }
    fn take(&self, bus: &str) -> Result<Arc<dyn PciFunction>, PciError> {
        let i = self.buses()?.iter().position(|b| b == bus).unwrap();
        let mut held = self.held.lock().unwrap();
        if held[i].upgrade().is_some() {
            return Err(PciError::Busy { bus: bus.into(), holder: "this process".into() });
        }
        let f = Arc::new((*self.functions[i]).clone());
        held[i] = Arc::downgrade(&f);
        Ok(f)
    }
}
