//! A QP left in RTR is a responder (IBA Vol 1 §10.3.1; perftest's bandwidth servers leave their QPs
//! there, rdma_rxe takes requests from RTR on: rxe_recv.c `check_type_state`): against a test
//! driver on two NICs, NIC 1's QP goes no further than RTR while NIC 0's requests SENDs, WRITEs
//! and READs of it. The segment's capture shows every request numbered from NIC 0's SQ PSN, the
//! READ responses taking the READ's PSNs, the ACKs carrying the PSN of the last packet and the
//! message count, an RNR NAK while no receive is posted, duplicates acknowledged again and not
//! executed again, and NIC 1 asking for nothing until it is moved to RTS.

mod common;
mod roce_support;

use std::time::Duration;

use bnxt_hsi::roce::layouts::*;
use bnxt_model::faults::{FaultPlan, WirePlan};
use bnxt_model::net::ext::Syndrome;
use bnxt_model::net::{Opcode, RoceFrame};
use common::Rig;
use pcap_file::pcap::PcapReader;
use roce_support::*;
use zerocopy::{FromBytes, FromZeros};

const SIGNAL: u8 = SqSendHdr::FLAGS_SIGNAL_COMP;
const MS: Duration = Duration::from_millis(1);
const PSN: u32 = 0x00ff_fffd;

/// NIC 0's QP in RTS towards NIC 1's, which is left in RTR; each with a 1-MiB region.
struct Rtr {
    rig: Rig,
    f: [Func; 2],
    cq: [TCq; 2],
    qp: [TQp; 2],
    mr: [(u32, u64); 2],
    pcap: tempfile::NamedTempFile,
}

fn rtr_pair(faults: FaultPlan) -> Rtr {
    let mut rig = Rig::with(2, 5, faults);
    let mut f = [Func::bring_up(&mut rig, 0, 1024, 256), Func::bring_up(&mut rig, 1, 1024, 256)];
    let (mut cq, mut qp, mut mr, mut sgid) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, fi) in f.iter_mut().enumerate() {
        fi.initialize(&mut rig);
        sgid.push(fi.add_own_gid(&mut rig));
        let nq = nq_ring(&mut rig, i, &mut fi.pages, 256, 1);
        let c = fi.create_cq(&mut rig, 64, nq.id);
        qp.push(fi.create_qp(&mut rig, Rings::fixed(64, 64), &c));
        let access = CmdqRegisterMr::ACCESS_LOCAL_WRITE
            | CmdqRegisterMr::ACCESS_REMOTE_WRITE
            | CmdqRegisterMr::ACCESS_REMOTE_READ;
        mr.push(fi.region(&mut rig, 1 << 20, access));
        cq.push(c);
    }
    let peer = |i: usize| (f[i].gid(), f[i].mac, qp[i].id);
    let (p0, p1) = (peer(0), peer(1));
    f[0].connect(&mut rig, &mut qp[0], sgid[0], (&p1.0, p1.1, p1.2), PSN);
    f[1].connect_rtr(&mut rig, &mut qp[1], sgid[1], (&p0.0, p0.1, p0.2), PSN);
    let pcap = tempfile::NamedTempFile::new().unwrap();
    rig.world.set_pcap(pcap.path()).unwrap();
    Rtr { rig, f, cq: [cq[0], cq[1]], qp: [qp[0].clone(), qp[1].clone()], mr: [mr[0], mr[1]], pcap }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed)).collect()
}

/// A frame of the capture: who sent it, its opcode and PSN, its AETH (syndrome, MSN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    from_nic0: bool,
    opcode: Opcode,
    psn: u32,
    aeth: Option<(Syndrome, u32)>,
}

impl Rtr {
    /// Every frame the segment carried so far, in order (the capture is finished and a new one
    /// started).
    fn captured(&mut self) -> Vec<Seen> {
        self.rig.world.finish_pcap().unwrap();
        let bytes = std::fs::read(self.pcap.path()).unwrap();
        self.pcap = tempfile::NamedTempFile::new().unwrap();
        self.rig.world.set_pcap(self.pcap.path()).unwrap();
        let mut reader = PcapReader::new(&bytes[..]).unwrap();
        let mut out = Vec::new();
        while let Some(p) = reader.next_packet() {
            let p = p.unwrap();
            let f = RoceFrame::parse(&p.data).expect("every captured frame is good RoCE v2");
            out.push(Seen {
                from_nic0: f.eth.src.0 == self.f[0].mac,
                opcode: f.transport.bth.opcode,
                psn: f.transport.bth.psn,
                aeth: f.transport.aeth.map(|a| (a.syndrome, a.msn)),
            });
        }
        out
    }

    /// QUERY_QP's state of NIC 1's QP.
    fn nic1_state(&mut self) -> u8 {
        let mut q = CmdqQueryQp::new_zeroed();
        q.qp_cid = self.qp[1].id.into();
        let (c, sb) = self.f[1].query(&mut self.rig, q, size_of::<CreqQueryQpRespSb>());
        assert_eq!(c.status, 0);
        CreqQueryQpRespSb::read_from_bytes(&sb).unwrap().en_sqd_async_notify_state & 0xf
    }
}

fn psn(k: u32) -> u32 {
    (PSN + k) & 0xff_ffff
}

#[test]
fn a_qp_left_in_rtr_receives_sends_and_writes_and_serves_reads_with_acks_and_psns() {
    let mut r = rtr_pair(FaultPlan::default());
    let ((k0, b0), (k1, b1)) = (r.mr[0], r.mr[1]);
    let sent = pattern(10_000, 1);
    let written = pattern(5000, 2);
    let remote = pattern(9000, 3);
    r.rig.poke(0, b0, &sent);
    r.rig.poke(0, b0 + 0x10000, &written);
    r.rig.poke(1, b1 + 0x20000, &remote);
    r.f[1].post_recv(&mut r.rig, &mut r.qp[1], 11, &[(b1, k1, 16384)]);
    r.f[1].post_recv(&mut r.rig, &mut r.qp[1], 12, &[]);
    let (send, write, write_imm, read) =
        (SqBase::WQE_TYPE_SEND, SqBase::WQE_TYPE_WRITE_WQE, SqBase::WQE_TYPE_WRITE_W_IMMEAD, SqBase::WQE_TYPE_READ_WQE);
    let q0 = &mut r.qp[0];
    r.f[0].post_send(&mut r.rig, q0, send, SIGNAL, &[(b0, k0, 10_000)], None, None, 0);
    r.f[0].post_send(&mut r.rig, q0, write, SIGNAL, &[(b0 + 0x10000, k0, 5000)], None, Some((b1 + 0x10000, k1)), 0);
    r.f[0].post_send(&mut r.rig, q0, read, SIGNAL, &[(b0 + 0x30000, k0, 9000)], None, Some((b1 + 0x20000, k1)), 0);
    r.f[0].post_send(&mut r.rig, q0, write_imm, SIGNAL, &[(b0, k0, 100)], None, Some((b1 + 0x40000, k1)), 0xbeef);
    for i in 0..4 {
        let c = r.cq[0].wait(&mut r.rig, 0, 100 * MS);
        assert_eq!((cqe_type(&c), cqe_status(&c), sq_cons_idx(&c)), (0, 0, i + 1), "send completion {i}");
    }
    let c = r.cq[1].wait(&mut r.rig, 1, 100 * MS);
    assert_eq!((cqe_status(&c), res_wr_id(&c), res_length(&c)), (0, 11, 10_000), "the SEND");
    let c = r.cq[1].wait(&mut r.rig, 1, 100 * MS);
    assert_eq!((cqe_status(&c), res_wr_id(&c), res_length(&c)), (0, 12, 100), "the WRITE with immediate");
    assert_eq!(u32::from_le_bytes(c[4..8].try_into().unwrap()), 0xbeef);
    assert_eq!(r.rig.peek(1, b1, 10_000), sent);
    assert_eq!(r.rig.peek(1, b1 + 0x10000, 5000), written);
    assert_eq!(r.rig.peek(1, b1 + 0x40000, 100), sent[..100]);
    assert_eq!(r.rig.peek(0, b0 + 0x30000, 9000), remote, "the READ served from RTR");
    assert_eq!(r.nic1_state(), CmdqModifyQp::NEW_STATE_RTR, "NIC 1's QP is still in RTR");

    let seen = r.captured();
    let requests: Vec<(Opcode, u32)> = seen.iter().filter(|s| s.from_nic0).map(|s| (s.opcode, s.psn)).collect();
    assert_eq!(
        requests,
        [
            (Opcode::SendFirst, psn(0)),
            (Opcode::SendMiddle, psn(1)),
            (Opcode::SendLast, psn(2)),
            (Opcode::WriteFirst, psn(3)),
            (Opcode::WriteLast, psn(4)),
            (Opcode::ReadRequest, psn(5)),
            (Opcode::WriteOnlyImm, psn(8)),
        ],
        "requests numbered from the SQ PSN across the wrap, the READ taking 3 PSNs"
    );
    let answers: Vec<&Seen> = seen.iter().filter(|s| !s.from_nic0).collect();
    assert!(answers.iter().all(|s| !s.opcode.is_request()), "an RTR QP asks for nothing: {answers:?}");
    let reads: Vec<(Opcode, u32)> =
        answers.iter().filter(|s| s.opcode != Opcode::Acknowledge).map(|s| (s.opcode, s.psn)).collect();
    assert_eq!(
        reads,
        [(Opcode::ReadResponseFirst, psn(5)), (Opcode::ReadResponseMiddle, psn(6)), (Opcode::ReadResponseLast, psn(7))]
    );
    let ack = Syndrome::Ack { credits: 0x1f };
    let acks: Vec<(u32, Option<(Syndrome, u32)>)> =
        answers.iter().filter(|s| s.opcode == Opcode::Acknowledge).map(|s| (s.psn, s.aeth)).collect();
    // ACKs go on AckReq (the last packet of each message); a queued one is replaced by a newer
    // one, so the SEND's and the WRITE's may share one.
    assert!(!acks.is_empty() && acks.len() <= 3, "{acks:?}");
    assert_eq!(*acks.last().unwrap(), (psn(8), Some((ack, 4))), "the last ACK: PSN of the WRITE, 4 messages");
    for (p, a) in &acks {
        let want = match *p {
            p if p == psn(2) => 1,
            p if p == psn(4) => 2,
            p if p == psn(8) => 4,
            other => panic!("ACK for PSN {other:#x}, which ends no message"),
        };
        assert_eq!(a.unwrap(), (ack, want), "ACK of PSN {p:#x}");
    }
    let first_last: Vec<u32> = answers
        .iter()
        .filter(|s| matches!(s.opcode, Opcode::ReadResponseFirst | Opcode::ReadResponseLast))
        .map(|s| s.aeth.unwrap().1)
        .collect();
    assert_eq!(first_last, [3, 3], "READ responses carry the MSN counting the READ");
}

#[test]
fn an_rtr_qp_sends_rnr_naks_until_a_receive_is_posted_and_requests_only_from_rts() {
    let mut r = rtr_pair(FaultPlan::default());
    let ((k0, b0), (k1, b1)) = (r.mr[0], r.mr[1]);
    r.rig.poke(0, b0, &pattern(64, 7));
    let send = SqBase::WQE_TYPE_SEND;
    r.f[0].post_send(&mut r.rig, &mut r.qp[0], send, SIGNAL, &[(b0, k0, 64)], None, None, 0);
    // NIC 1 posts a SEND of its own while in RTR: it waits in the ring.
    r.rig.poke(1, b1 + 0x8000, &pattern(32, 9));
    r.f[1].post_send(&mut r.rig, &mut r.qp[1], send, SIGNAL, &[(b1 + 0x8000, k1, 32)], None, None, 0);
    r.rig.world.advance(MS);
    assert!(r.cq[0].peek(&r.rig, 0).is_none(), "no receive at NIC 1 yet");
    r.f[1].post_recv(&mut r.rig, &mut r.qp[1], 5, &[(b1, k1, 64)]);
    assert_eq!(cqe_status(&r.cq[0].wait(&mut r.rig, 0, 100 * MS)), 0, "retried after the RNR wait");
    assert_eq!(res_wr_id(&r.cq[1].wait(&mut r.rig, 1, 100 * MS)), 5);
    assert_eq!(r.rig.peek(1, b1, 64), pattern(64, 7));
    let seen = r.captured();
    let from1: Vec<&Seen> = seen.iter().filter(|s| !s.from_nic0).collect();
    assert_eq!(from1[0].psn, psn(0));
    assert!(
        matches!(from1[0].aeth, Some((Syndrome::RnrNak { timer: 1 }, 0))),
        "RNR NAK with min_rnr_timer: {:?}",
        from1[0]
    );
    assert!(from1.iter().all(|s| s.opcode == Opcode::Acknowledge), "NIC 1 sent no request in RTR");
    assert!(r.cq[1].peek(&r.rig, 1).is_none(), "its SEND has not completed");
    // To RTS: NIC 1's SEND goes out, numbered from its SQ PSN (the PSN NIC 0 expects).
    r.f[0].post_recv(&mut r.rig, &mut r.qp[0], 8, &[(b0 + 0x1000, k0, 64)]);
    let mut q1 = r.qp[1].clone();
    r.f[1].connect_rts(&mut r.rig, &mut q1, PSN);
    assert_eq!(cqe_status(&r.cq[1].wait(&mut r.rig, 1, 100 * MS)), 0);
    assert_eq!(res_wr_id(&r.cq[0].wait(&mut r.rig, 0, 100 * MS)), 8);
    assert_eq!(r.rig.peek(0, b0 + 0x1000, 32), pattern(32, 9));
    let sends: Vec<(Opcode, u32)> =
        r.captured().iter().filter(|s| !s.from_nic0 && s.opcode.is_request()).map(|s| (s.opcode, s.psn)).collect();
    assert_eq!(sends, [(Opcode::SendOnly, PSN)]);
}

#[test]
fn an_rtr_qp_acknowledges_duplicates_again_without_executing_them_again() {
    let wire = WirePlan { duplicate: 1.0, ..WirePlan::default() };
    let mut r = rtr_pair(FaultPlan { wire, ..FaultPlan::default() });
    let ((k0, b0), (k1, b1)) = (r.mr[0], r.mr[1]);
    r.rig.poke(0, b0, &pattern(6000, 4));
    for id in 0..3 {
        r.f[1].post_recv(&mut r.rig, &mut r.qp[1], id, &[(b1 + u64::from(id) * 0x2000, k1, 8192)]);
    }
    let send = SqBase::WQE_TYPE_SEND;
    r.f[0].post_send(&mut r.rig, &mut r.qp[0], send, SIGNAL, &[(b0, k0, 6000)], None, None, 0);
    r.f[0].post_send(&mut r.rig, &mut r.qp[0], send, SIGNAL, &[(b0, k0, 100)], None, None, 0);
    for _ in 0..2 {
        assert_eq!(cqe_status(&r.cq[0].wait(&mut r.rig, 0, 100 * MS)), 0);
    }
    r.rig.world.advance(10 * MS);
    let recvs: Vec<u32> = std::iter::from_fn(|| r.cq[1].poll(&r.rig, 1)).map(|c| res_wr_id(&c)).collect();
    assert_eq!(recvs, [0, 1], "each SEND completes one receive, once; receive 2 stays posted");
    assert_eq!(r.rig.peek(1, b1, 6000), pattern(6000, 4));
    let seen = r.captured();
    let acks = seen.iter().filter(|s| !s.from_nic0 && s.opcode == Opcode::Acknowledge).count();
    let requests = seen.iter().filter(|s| s.from_nic0).count();
    assert!(requests >= 6, "3 packets, each delivered twice: {requests}");
    assert!(acks >= 3, "duplicates are acknowledged again: {acks} ACKs");
    assert_eq!(r.nic1_state(), CmdqModifyQp::NEW_STATE_RTR);
}
