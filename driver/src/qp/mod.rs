//! Queue pairs: a send ring and a receive ring, reliable-connected to one queue pair of a peer
//! (the contract's "Queue pairs").
//!
//! Each ring holds 4095 entries ([`Qp::room`]); completions come in the order of the entries,
//! and an entry's slot is free once its completion is taken ([`Qp::poll`], [`Qp::wait`]).
//! Posting ([`Qp::send`], [`Qp::receive`], [`Qp::read`]) is stores to memory and one doorbell
//! store. The two rings are separate values ([`SendQueue`], [`RecvQueue`]) that
//! [`Qp::split`] lends out, so that each may run on its own thread; making, connecting and
//! destroying need the whole queue pair, so they cannot run while a half is lent.
//!
//! Misuse panics (the contract's Invalid_argument): a call on a closed NIC, a post on an
//! unconnected queue pair or into a full ring, a call on a destroyed queue pair but for
//! [`Qp::endpoint`], [`Qp::room`] and a second [`Qp::destroy`].

mod core;
mod cq;
mod endpoint;
mod half;
mod ledger;
pub(crate) mod modify;
mod recv;
mod send;
mod status;
mod wqe;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bnxt_hsi::roce::qp::QpState;

pub use endpoint::Endpoint;
pub use recv::RecvQueue;
pub use send::{MAX_MESSAGE, SendQueue};
pub use status::{Completion, Status};

use self::core::QpCore;
use crate::error::Error;
use crate::nic::Nic;
use crate::region::Region;
use crate::roce::Counted;

/// Which ring of a queue pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// The send ring (sends and reads).
    Send,
    /// The receive ring.
    Receive,
}

/// A reliable-connected queue pair of a NIC.
pub struct Qp {
    core: Arc<QpCore>,
    sq: SendQueue,
    rq: RecvQueue,
    endpoint: Endpoint,
    destroyed: Option<Result<(), Error>>,
}

impl std::fmt::Debug for Qp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Qp").field("nic", &self.core.roce.name).field("endpoint", &self.endpoint).finish()
    }
}

impl Qp {
    /// Make a queue pair on `nic`: its two CQs, its rings (4096 slots each), CREATE_QP as RC,
    /// then MODIFY_QP to INIT.
    ///
    /// # Errors
    ///
    /// [`Error::Limit`] if the NIC holds as many queue pairs as the open allowed;
    /// [`Error::Pci`] if memory cannot be had; the firmware's refusal or silence.
    ///
    /// # Panics
    ///
    /// On a closed NIC.
    pub fn make(nic: &Nic) -> Result<Qp, Error> {
        let roce = nic.roce();
        roce.check_open();
        roce.acquire(Counted::Qp)?;
        let core = match QpCore::make(roce) {
            Ok(core) => core,
            Err(e) => {
                roce.release(Counted::Qp);
                return Err(e);
            }
        };
        roce.register(core.id, core.clone());
        let endpoint = Endpoint::new(&roce.identity, core.qpn);
        Ok(Qp {
            sq: SendQueue::new(core.clone(), endpoint.psn),
            rq: RecvQueue::new(core.clone()),
            core,
            endpoint,
            destroyed: None,
        })
    }

    /// What a peer needs to connect to this queue pair.
    pub fn endpoint(&self) -> Endpoint {
        self.endpoint
    }

    /// Connect to the queue pair at `peer`: MODIFY_QP to RTR (towards the peer, RoCE v2 over
    /// IPv4, path MTU 4096) and to RTS.
    ///
    /// # Errors
    ///
    /// The firmware's refusal or silence; a queue pair refused at RTS may be connected again.
    ///
    /// # Panics
    ///
    /// On a closed NIC, or a destroyed or already connected queue pair.
    pub fn connect(&mut self, peer: &Endpoint) -> Result<(), Error> {
        self.core.check_usable("connect");
        let roce = &self.core.roce;
        let fixed = self.core.fixed;
        if self.core.state() == Some(QpState::Init) {
            let path = modify::Path { peer: *peer, sgid_index: roce.gid_index };
            roce.command(modify::to_rtr(&fixed, &path, &roce.caps))?;
            self.core.set_state(QpState::Rtr);
            self.core.peer_local.store(peer.mac == roce.identity.mac, Ordering::Release);
            if self.rq.posted_any() {
                self.rq.ring();
            }
        }
        if self.core.state() != Some(QpState::Rtr) {
            panic!("{}: connect on a queue pair that is already connected", roce.name);
        }
        roce.command(modify::to_rts(&fixed, self.endpoint.psn, &roce.caps))?;
        self.core.set_state(QpState::Rts);
        tracing::debug!(nic = %roce.name, qpn = self.core.qpn, peer = peer.qpn, "queue pair connected");
        Ok(())
    }

    /// Lend the two rings out, to run on two threads.
    pub fn split(&mut self) -> (&mut SendQueue, &mut RecvQueue) {
        (&mut self.sq, &mut self.rq)
    }

    /// Send `len` bytes of `region` from `at` (see [`SendQueue::send`]).
    pub fn send(&mut self, region: &Region, at: usize, len: usize) {
        self.sq.send(region, at, len)
    }

    /// Post a receive (see [`RecvQueue::receive`]).
    pub fn receive(&mut self, region: &Region, at: usize, len: usize) {
        self.rq.receive(region, at, len)
    }

    /// RDMA READ between two regions of this NIC (see [`SendQueue::read`]).
    pub fn read(&mut self, region: &Region, at: usize, from: &Region, from_at: usize, len: usize) {
        self.sq.read(region, at, from, from_at, len)
    }

    /// The oldest completion of `side`, if it has one.
    pub fn poll(&mut self, side: Side) -> Option<Completion> {
        match side {
            Side::Send => self.sq.poll(),
            Side::Receive => self.rq.poll(),
        }
    }

    /// The oldest completion of `side`, waiting at most `timeout` for it (on the NIC's clock).
    pub fn wait(&mut self, side: Side, timeout: Duration) -> Option<Completion> {
        match side {
            Side::Send => self.sq.wait(timeout),
            Side::Receive => self.rq.wait(timeout),
        }
    }

    /// More entries `side`'s ring takes now.
    pub fn room(&self, side: Side) -> usize {
        match side {
            Side::Send => self.sq.room(),
            Side::Receive => self.rq.room(),
        }
    }

    /// Destroy the queue pair (DESTROY_QP, then its CQs) and free its memory. Work outstanding
    /// is abandoned, as bnxt_re abandons it. A second call sends nothing and returns what the
    /// first returned.
    ///
    /// # Errors
    ///
    /// The firmware's refusal or silence; the memory then stays allocated until close.
    ///
    /// # Panics
    ///
    /// On a closed NIC (unless destroyed before).
    pub fn destroy(&mut self) -> Result<(), Error> {
        if let Some(r) = &self.destroyed {
            return r.clone();
        }
        let roce = self.core.roce.clone();
        roce.check_open();
        let (r, memory) = self.core.tear();
        match &r {
            Ok(()) => drop(memory),
            Err(e) => {
                tracing::warn!(nic = %roce.name, qpn = self.core.qpn, error = %e, "destroying a queue pair failed; its memory is kept until close");
                roce.keep(memory);
            }
        }
        roce.unregister(self.core.id);
        roce.release(Counted::Qp);
        self.destroyed = Some(r.clone());
        r
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        if self.destroyed.is_none() && !self.core.roce.is_closed() {
            let _ = self.destroy();
        }
    }
}

#[cfg(test)]
mod tests;
