//! RC QPs created without an ORRQ or an IRRQ: CREATE_QP takes them (nothing public makes the two
//! buffers mandatory; bnxt_re always gives both) and counts the acceptance as one without a
//! source; such a QP has no room for READs on that side, which the model treats as an initiator
//! or responder depth of 0 (a guess, logged): a READ it posts completes with
//! LOCAL_QP_OPERATION_ERR, a READ it receives is NAKed invalid request (IBA Vol 1 §9.7.5.1.x, as
//! rdma_rxe rxe_resp.c `check_resource` does with no responder resources).

mod common;
mod roce_support;

use std::time::Duration;

use bnxt_hsi::roce::layouts::*;
use common::Rig;
use roce_support::*;

const SIGNAL: u8 = SqSendHdr::FLAGS_SIGNAL_COMP;
const MS: Duration = Duration::from_millis(1);

#[test]
fn a_qp_without_an_orrq_cannot_read_and_one_without_an_irrq_cannot_be_read() {
    let mut rig = Rig::new(2);
    let mut f = [Func::bring_up(&mut rig, 0, 1024, 256), Func::bring_up(&mut rig, 1, 1024, 256)];
    let (mut cq, mut qps, mut mr, mut sgid) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, fi) in f.iter_mut().enumerate() {
        fi.initialize(&mut rig);
        sgid.push(fi.add_own_gid(&mut rig));
        let nq = nq_ring(&mut rig, i, &mut fi.pages, 256, 1);
        let c = fi.create_cq(&mut rig, 64, nq.id);
        // NIC 0: QP A without an ORRQ, QP C whole; NIC 1: QP B whole, QP D without an IRRQ.
        let mut pair = Vec::new();
        for k in 0..2 {
            let (mut req, mut q) = fi.qp_request(&rig, Rings::fixed(16, 16), &c);
            match (i, k) {
                (0, 0) => req.orrq_addr = 0.into(),
                (1, 1) => req.irrq_addr = 0.into(),
                _ => {}
            }
            let before = rig.world.nic_state(i).roce.accepted_without_source;
            q.id = fi.ok(&mut rig, req).xid;
            let noted = rig.world.nic_state(i).roce.accepted_without_source - before;
            assert_eq!(noted, u64::from(i == k), "NIC {i} QP {k}: a missing queue is noted");
            pair.push(q);
        }
        let access = CmdqRegisterMr::ACCESS_LOCAL_WRITE | CmdqRegisterMr::ACCESS_REMOTE_READ;
        mr.push(fi.region(&mut rig, 1 << 16, access));
        qps.push(pair);
        cq.push(c);
    }
    let (g0, g1) = ((f[0].gid(), f[0].mac), (f[1].gid(), f[1].mac));
    let (nic0, nic1) = qps.split_at_mut(1);
    for (a, b) in nic0[0].iter_mut().zip(nic1[0].iter_mut()) {
        let (ida, idb) = (a.id, b.id);
        f[0].connect(&mut rig, a, sgid[0], (&g1.0, g1.1, idb), 10);
        f[1].connect(&mut rig, b, sgid[1], (&g0.0, g0.1, ida), 10);
    }
    let ((k0, b0), (k1, b1)) = (mr[0], mr[1]);
    let read = SqBase::WQE_TYPE_READ_WQE;
    f[0].post_send(&mut rig, &mut qps[0][0], read, SIGNAL, &[(b0, k0, 100)], None, Some((b1, k1)), 0);
    let c = cq[0].wait(&mut rig, 0, 100 * MS);
    assert_eq!(cqe_status(&c), 3, "A: LOCAL_QP_OPERATION_ERR, no ORRQ");
    assert_eq!(rig.world.nic_state(0).roce.frames_sent, 0, "A asked for nothing");
    f[0].post_send(&mut rig, &mut qps[0][1], read, SIGNAL, &[(b0, k0, 100)], None, Some((b1, k1)), 0);
    let c = loop {
        let c = cq[0].wait(&mut rig, 0, 100 * MS);
        if u64::from_le_bytes(c[0..8].try_into().unwrap()) == qps[0][1].handle {
            break c;
        }
    };
    assert_eq!(cqe_status(&c), 6, "C: REMOTE_INVALID_REQUEST_ERR, D has no IRRQ to serve it from");
}
