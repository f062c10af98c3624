//! The RoCE firmware channel against a test driver: cmdq_init, the first producer write, the
//! trigger, CREQ completions with the valid bit per pass and flow control, interrupts of an armed
//! CREQ, and the channel-level commands (QUERY_FUNC, QUERY_VERSION, INITIALIZE_FW,
//! DEINITIALIZE_FW) with good and bad inputs.

mod common;
mod roce_support;

use bnxt_hsi::roce::layouts::*;
use bnxt_model::events::EventKind;
use common::Rig;
use roce_support::*;
use zerocopy::{FromZeros, IntoBytes};

#[test]
fn query_func_reports_p7_caps_and_the_limits_of_the_context_memory() {
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 256, 256);
    let (c, sb) = f.query(&mut rig, CmdqQueryFunc::new_zeroed(), 160);
    assert_eq!((c.status, c.event), (0, 0x83));
    assert_eq!(c.bytes[8] & 1, 1, "valid bit 1 on the first pass");
    assert_eq!(c.bytes[0] & 0x3f, 0x38, "QP_EVENT type");
    assert_eq!(sb[0], 0x83, "side buffer header names the opcode");
    let caps: CreqQueryFuncRespSb = zerocopy::FromBytes::read_from_bytes(&sb[..]).unwrap();
    assert_eq!(caps.max_qp.get(), ROCE_QPS);
    assert_eq!(caps.max_cq.get(), CQ_ENTRIES - 8);
    assert_eq!(caps.max_mr.get(), REGIONS);
    assert_eq!(caps.max_ah.get(), 8);
    let flags = caps.dev_cap_flags.get();
    assert_ne!(flags & CreqQueryFuncRespSb::MR_REGISTER_ALLOC, 0);
    assert_ne!(flags & CreqQueryFuncRespSb::HW_REQUESTER_RETX_ENABLED, 0);
    assert_eq!(
        caps.dev_cap_ext_flags_2.get() & CreqQueryFuncRespSb::REQ_RETRANSMISSION_SUPPORT_MASK,
        CreqQueryFuncRespSb::REQ_RETRANSMISSION_SUPPORT_HOST_MSN_TABLE
    );
    assert_eq!((caps.max_sge, caps.max_sge_var_wqe), (6, 13));
    assert!(caps.max_qp_wr.get() >= 4096, "rings of 4095 entries must fit");
    assert!(caps.max_cqe.get() >= 4096);
    assert_eq!(caps.max_inline_data.get(), 96);
}

#[test]
fn initialize_fw_checks_its_fields_and_gates_every_object_command() {
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 256, 256);
    let c = f.call(&mut rig, CmdqCreateCq::new_zeroed());
    assert_eq!(c.status, FAIL, "objects before INITIALIZE_FW");
    let mut init = CmdqInitializeFw::new_zeroed();
    init.stat_ctx_id = 77.into();
    assert_eq!(f.call(&mut rig, init).status, INVALID_PARAMETER, "no such statistics context");
    init.stat_ctx_id = f.stat_ctx.into();
    init.qpc_page_dir = 0x1000.into();
    assert_eq!(f.call(&mut rig, init).status, INVALID_PARAMETER, "P7 takes no page directories");
    init.qpc_page_dir = 0.into();
    init.flags = 0x8000.into();
    assert_eq!(f.call(&mut rig, init).status, INVALID_PARAMETER, "undefined flag");
    init.flags = CmdqInitializeFw::FLAGS_HW_REQUESTER_RETX_SUPPORTED.into();
    f.ok(&mut rig, init);
    assert_eq!(f.call(&mut rig, init).status, FAIL, "twice");
    f.ok(&mut rig, CmdqDeinitializeFw::new_zeroed());
    assert_eq!(f.call(&mut rig, CmdqAllocateMrw::new_zeroed()).status, FAIL, "after DEINITIALIZE_FW");
    assert_eq!(f.call(&mut rig, CmdqDeinitializeFw::new_zeroed()).status, FAIL);
    f.initialize(&mut rig);
}

#[test]
fn initialize_fw_before_context_memory_is_refused_for_resources() {
    let mut rig = Rig::new(1);
    rig.ok(0, common::roomy_reservation());
    let mut pages = common::Pages::default();
    let creq = nq_ring(&mut rig, 0, &mut pages, 64, 0);
    let s = {
        let stats = pages.take(1);
        let mut s: bnxt_hsi::hwrm::layouts::HwrmStatCtxAllocInput = common::req();
        s.stats_dma_addr = stats.into();
        rig.ok(0, s).stat_ctx_id.get()
    };
    let cmdq = pages.take(1);
    let sb = pages.take(1);
    let mut f = Func {
        nic: 0,
        pages,
        stat_ctx: s,
        creq,
        cmdq,
        cmdq_slots: 256,
        prod: 0,
        first: true,
        cookie: 0,
        sb,
        async_events: vec![],
        mac: rig.world.nic_state(0).mac,
        filter: 0,
    };
    f.write_init(&mut rig, cmdq, 256, 0, creq.id);
    let caps = f.query_func(&mut rig);
    assert_eq!(caps.max_qp.get(), 0, "no context memory, no QPs");
    let mut init = CmdqInitializeFw::new_zeroed();
    init.stat_ctx_id = s.into();
    assert_eq!(f.call(&mut rig, init).status, 2, "RESOURCES");
}

#[test]
fn the_first_producer_write_must_carry_bit_31_and_cmdq_init_must_be_sound() {
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 256, 256);
    f.first = false;
    let mut q = CmdqQueryVersion::new_zeroed();
    q.opcode = 0x8b;
    f.send(&mut rig, q.as_bytes().to_vec());
    rig.world.advance(std::time::Duration::from_millis(1));
    assert!(f.creq.peek(&rig, 0).is_none(), "no answer before the channel is started");
    assert_eq!(rig.world.nic_state(0).roce.channel_errors, 1);
    // A CMDQ size that is not a power of two is refused at the first write.
    f.write_init(&mut rig, f.cmdq, 100, 0, f.creq.id);
    f.prod = 0;
    f.first = true;
    f.send(&mut rig, q.as_bytes().to_vec());
    rig.world.advance(std::time::Duration::from_millis(1));
    assert!(f.creq.peek(&rig, 0).is_none());
    assert_eq!(rig.world.nic_state(0).roce.channel_errors, 2);
    // A CREQ ring id that is no NQ.
    f.write_init(&mut rig, f.cmdq, 256, 0, 999);
    f.prod = 0;
    f.first = true;
    f.send(&mut rig, q.as_bytes().to_vec());
    rig.world.advance(std::time::Duration::from_millis(1));
    let reasons: Vec<String> = rig
        .world
        .take_events()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::RoceChannelError { reason } => Some(reason),
            _ => None,
        })
        .collect();
    assert!(reasons.iter().any(|r| r.contains("not a power of two")), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.contains("creq_ring_id 999")), "{reasons:?}");
    // A sound init with the first flag: QUERY_VERSION is answered.
    f.write_init(&mut rig, f.cmdq, 256, 0, f.creq.id);
    f.prod = 0;
    f.first = true;
    let c = f.call(&mut rig, CmdqQueryVersion::new_zeroed());
    assert_eq!(c.status, 0);
    assert_eq!((c.bytes[0xc], c.bytes[0xd], c.bytes[0xe]), (1, 8, 6), "RoCE HSI 1.8.6");
    assert_ne!(c.bytes[4], 0, "firmware major version");
}

#[test]
fn creq_valid_bits_flip_per_pass_and_a_full_creq_holds_completions_in_order() {
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 16, 64);
    // 20 commands in one go; the driver consumes nothing yet.
    let mut cookies = Vec::new();
    for _ in 0..20 {
        let mut q = CmdqQueryVersion::new_zeroed();
        q.opcode = 0x8b;
        cookies.push(f.send(&mut rig, q.as_bytes().to_vec()));
    }
    rig.world.advance(std::time::Duration::from_millis(1));
    let mut got = Vec::new();
    for _ in 0..16 {
        let e = f.creq.peek(&rig, 0).expect("16 entries written");
        assert_eq!(e[8] & 1, 1, "first pass");
        got.push(u16::from_le_bytes([e[2], e[3]]));
        f.creq.pop();
    }
    assert!(f.creq.peek(&rig, 0).is_none(), "the 17th waits: slot 0 still holds the first pass's entry");
    assert_eq!(rig.world.device(0).roce().nqs().get(f.creq.id).unwrap().backlog(), 4);
    ring(&mut rig, 0, f.creq.doorbell(false));
    rig.world.advance(std::time::Duration::from_micros(1));
    for _ in 0..4 {
        let e = f.creq.peek(&rig, 0).expect("released by the doorbell");
        assert_eq!(e[8] & 1, 0, "second pass");
        got.push(u16::from_le_bytes([e[2], e[3]]));
        f.creq.pop();
    }
    assert_eq!(got, cookies, "completions in command order");
    // A doorbell whose consumer runs past the producer is ignored and counted.
    let bad =
        bnxt_hsi::roce::doorbell::Doorbell::roce(bnxt_hsi::roce::doorbell::DbType::Nq, f.creq.id.into(), 9, true, 0);
    ring(&mut rig, 0, bad);
    rig.world.advance(std::time::Duration::from_micros(1));
    assert_eq!(rig.world.nic_state(0).roce.bad_doorbells.get("NQ consumer ahead of the producer"), Some(&1));
}

#[test]
fn an_armed_creq_raises_its_vector_once_per_arming() {
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 64, 64);
    rig.world.take_interrupts(0);
    f.call(&mut rig, CmdqQueryVersion::new_zeroed()); // the test driver consumes and re-arms (NQ_ARM)
    assert_eq!(rig.world.take_interrupts(0), vec![0]);
    let mut q = CmdqQueryVersion::new_zeroed();
    q.opcode = 0x8b;
    f.send(&mut rig, q.as_bytes().to_vec());
    rig.world.advance(std::time::Duration::from_millis(1));
    assert_eq!(rig.world.take_interrupts(0), vec![0], "armed: the entry raises the vector and disarms");
    f.send(&mut rig, q.as_bytes().to_vec());
    rig.world.advance(std::time::Duration::from_millis(1));
    assert!(rig.world.take_interrupts(0).is_empty(), "not re-armed");
    f.creq.pop();
    ring(&mut rig, 0, f.creq.doorbell(false));
    assert!(rig.world.take_interrupts(0).is_empty(), "an NQ doorbell does not arm");
    // Arming with an entry waiting interrupts at once.
    ring(&mut rig, 0, f.creq.doorbell(true));
    assert_eq!(rig.world.take_interrupts(0), vec![0]);
    assert!(rig.world.take_events().iter().any(|e| matches!(e.kind, EventKind::Interrupt { vector: 0 })));
}

#[test]
fn unimplemented_and_undefined_opcodes_and_short_commands_are_refused_loudly() {
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 64, 64);
    f.initialize(&mut rig);
    let before = rig.world.nic_state(0).unimplemented;
    let c = f.call(&mut rig, CmdqQueryGid::new_zeroed());
    assert_eq!(c.status, 4, "NOT_IMPLEMENTED");
    let cookie = f.send(&mut rig, vec![0x7f, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let c = f.wait(&mut rig, cookie);
    assert_eq!((c.status, c.event), (3, 0x7f), "INVALID_CMD");
    let st = rig.world.nic_state(0);
    assert_eq!(st.roce.unimplemented_commands.get(&0x18), Some(&1));
    assert_eq!(st.roce.unimplemented_commands.get(&0x7f), Some(&1));
    assert_eq!(st.unimplemented, before + 2);
    // CREATE_QP cut to 3 slots: shorter than the fields the firmware reads.
    let mut qp = CmdqCreateQp::new_zeroed();
    qp.opcode = 0x01;
    let cookie = f.send(&mut rig, qp.as_bytes()[..48].to_vec());
    let c = f.wait(&mut rig, cookie);
    assert_eq!(c.status, INVALID_PARAMETER);
    assert!(last_refusal(&mut rig).unwrap().contains("shorter"));
}

#[test]
fn func_reset_and_flr_drop_every_roce_object_and_the_channel() {
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 64, 64);
    f.initialize(&mut rig);
    f.add_own_gid(&mut rig);
    assert_eq!(rig.world.device(0).roce().state().gids.len(), 1);
    rig.ok(0, common::req::<bnxt_hsi::hwrm::layouts::HwrmFuncResetInput>());
    let r = rig.world.device(0).roce();
    assert!(r.state().init.is_none() && r.state().gids.is_empty(), "FUNC_RESET frees the function's RoCE objects");
    assert!(r.channel().config().is_none(), "and the command channel");
    // Bring it up again, then a function-level reset.
    let mut f = Func::bring_up(&mut rig, 0, 64, 64);
    f.initialize(&mut rig);
    assert!(rig.world.device(0).roce().state().init.is_some());
    let mut devctl = [0u8; 2];
    rig.world.config_read(0, 0x68, &mut devctl);
    let v = u16::from_le_bytes(devctl) | 0x8000;
    rig.world.config_write(0, 0x68, &v.to_le_bytes());
    assert!(rig.world.device(0).roce().state().init.is_none(), "FLR");
}

#[test]
fn a_tlv_encapsulated_command_is_answered_with_its_inner_opcode_and_cookie() {
    // MODIFY_ROCE_CC as Linux's bnxt_re sends it on P7 (qplib_sp.c bnxt_qplib_modify_cc): a 16-byte
    // roce_tlv header (cmd_discr CMD_DISCR_TLV_ENCAP, flags REQUIRED|MORE, tlv_type
    // ROCE_SP_COMMAND, length 56, total_size 11 slots), the command, 8 bytes of padding, then the
    // generation-1 extension TLV.
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 64, 64);
    f.initialize(&mut rig);
    let mut base = CmdqModifyRoceCc::new_zeroed();
    base.modify_mask = CmdqModifyRoceCc::MODIFY_MASK_ENABLE_CC.into();
    base.enable_cc = 1;
    let before = f.prod;
    let cookie = f.send_modify_cc_tlv(&mut rig, base, &[gen1_tlv(CmdqModifyRoceCcGen1Tlv::new_zeroed(), false)]);
    assert_eq!(f.prod - before, 11, "11 slots");
    let c = f.wait(&mut rig, cookie);
    assert_eq!((c.event, c.status), (0x8c, 0), "answered as MODIFY_ROCE_CC: {:?}", last_refusal(&mut rig));
    assert!(rig.world.device(0).roce().state().cc.base.enable);
    // The channel took all 11 slots: the next plain command is read where it was put.
    f.ok(&mut rig, CmdqQueryVersion::new_zeroed());
    // Broadcom's out-of-tree bnxt_re adds generation-2 and "ext" TLVs (19 slots in all,
    // qplib_tlv.h bnxt_qplib_tlv_modify_cc_req), which the model does not keep.
    let ext = |ty: u16, bytes: usize, more: bool| {
        let mut t = vec![0u8; bytes];
        t[0..2].copy_from_slice(&0x8000u16.to_le_bytes());
        t[3] = 2 | u8::from(more);
        t[4..6].copy_from_slice(&ty.to_le_bytes());
        t[6..8].copy_from_slice(&((bytes - 16) as u16).to_le_bytes());
        t
    };
    let exts = [
        gen1_tlv(CmdqModifyRoceCcGen1Tlv::new_zeroed(), true),
        ext(0x7, 32, true),
        ext(0x9, 48, true),
        ext(0xb, 48, false),
    ];
    let before = f.prod;
    let cookie = f.send_modify_cc_tlv(&mut rig, base, &exts);
    assert_eq!(f.prod - before, 19, "19 slots");
    let c = f.wait(&mut rig, cookie);
    assert_eq!((c.event, c.status), (0x8c, 4), "answered as MODIFY_ROCE_CC, NOT_IMPLEMENTED");
    assert_eq!(rig.world.nic_state(0).roce.unimplemented_features, 1);
    f.ok(&mut rig, CmdqQueryVersion::new_zeroed());
    // Too long for the firmware (40 slots): refused, but answered on the inner cookie.
    let mut long = vec![0u8; 40 * 16];
    long[0..2].copy_from_slice(&0x8000u16.to_le_bytes());
    long[8] = 40;
    long[16] = 0x8c;
    long[20..22].copy_from_slice(&0x4321u16.to_le_bytes());
    f.submit(&mut rig, &long);
    let c = f.wait(&mut rig, 0x4321);
    assert_eq!((c.event, c.status), (0x8c, INVALID_PARAMETER), "refused on the inner opcode and cookie");
    f.ok(&mut rig, CmdqQueryVersion::new_zeroed());
    // A TLV header whose total_size leaves no room for a command is refused, not misread.
    let mut short = vec![0u8; 16];
    short[0..2].copy_from_slice(&0x8000u16.to_le_bytes());
    short[8] = 1;
    f.submit(&mut rig, &short);
    f.ok(&mut rig, CmdqQueryVersion::new_zeroed());
    assert!(last_refusal(&mut rig).is_some_and(|r| r.contains("TLV")), "{:?}", last_refusal(&mut rig));
}
