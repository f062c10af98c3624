//! Work requests as the transport takes them: typed, already read out of the QP's rings by the
//! slow path, which keeps the ring slots and reports completions back by [`SendWqe::id`] and
//! [`RecvWqe::id`].

use super::status::ReqStatus;

/// Bytes an atomic operates on, and its local buffer receives (IBA §9.4.5: 64-bit operands).
pub const ATOMIC_BYTES: u32 = 8;

/// Largest message: 2^31 bytes (the seed contract's limit, and the RETH DMA length rdma_rxe
/// rxe_resp.c `check_length` accepts).
pub const MAX_MESSAGE: u32 = 1 << 31;

/// SGEs a work request holds in place, with no heap allocation. Most work requests carry one or
/// two (our driver posts one a WQE); longer lists go to the heap. A larger array makes every work
/// request larger to move: room for the six of a static-mode WQE cost more instructions a message
/// than it saved.
pub const INLINE_SGES: usize = 2;

/// The SGE list of a work request: up to [`INLINE_SGES`] in place, more on the heap. Every
/// message would otherwise cost an allocation and a free for its list.
pub type SgeList = smallvec::SmallVec<[Sge; INLINE_SGES]>;

/// A scatter/gather element: `len` bytes at `addr` of the local region named by `lkey`. The
/// transport does not interpret the address or key; the [`Memory`](super::memory::Memory)
/// implementation checks and translates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sge {
    /// Address in the region (a virtual address, as in the WQE).
    pub addr: u64,
    /// Local key of the region.
    pub lkey: u32,
    /// Bytes.
    pub len: u32,
}

/// The operation of a send work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SendOp {
    /// SEND, with immediate data if `imm` is set (consumes a receive at the peer).
    Send {
        /// Immediate data.
        imm: Option<u32>,
    },
    /// RDMA WRITE of the gathered bytes to `va` of the peer region `rkey`; with immediate data
    /// (which consumes a receive at the peer) if `imm` is set.
    RdmaWrite {
        /// Remote virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
        /// Immediate data.
        imm: Option<u32>,
    },
    /// RDMA READ of `length` bytes at `va` of the peer region `rkey` into the local SGEs.
    RdmaRead {
        /// Remote virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Atomic compare-and-swap of the 8 bytes at `va` of the peer region `rkey`: `swap` is
    /// written there if they equal `compare`; their original value lands in the local SGEs
    /// (IBA Vol 1 §9.4.5).
    CompareSwap {
        /// Remote virtual address (8-byte aligned).
        va: u64,
        /// Remote key.
        rkey: u32,
        /// Compare data.
        compare: u64,
        /// Swap data.
        swap: u64,
    },
    /// Atomic fetch-and-add of `add` to the 8 bytes at `va` of the peer region `rkey`; their
    /// original value lands in the local SGEs.
    FetchAdd {
        /// Remote virtual address (8-byte aligned).
        va: u64,
        /// Remote key.
        rkey: u32,
        /// Add data.
        add: u64,
    },
}

impl SendOp {
    /// Whether this is an RDMA READ.
    pub fn is_read(&self) -> bool {
        matches!(self, SendOp::RdmaRead { .. })
    }

    /// Whether this is an atomic (compare-and-swap or fetch-and-add).
    pub fn is_atomic(&self) -> bool {
        matches!(self, SendOp::CompareSwap { .. } | SendOp::FetchAdd { .. })
    }

    /// Whether it is answered by responses of its own and takes one of the responder's
    /// resources (an RDMA READ or an atomic: what `max_rd_atomic` and `max_dest_rd_atomic`
    /// count, IBA §11.2.4.2).
    pub fn takes_responder_resources(&self) -> bool {
        self.is_read() || self.is_atomic()
    }

    /// A short name for logs and completions: `send`, `send-imm`, `write`, `write-imm`, `read`,
    /// `cmp-swap`, `fetch-add`.
    pub fn name(&self) -> &'static str {
        match self {
            SendOp::Send { imm: None } => "send",
            SendOp::Send { imm: Some(_) } => "send-imm",
            SendOp::RdmaWrite { imm: None, .. } => "write",
            SendOp::RdmaWrite { imm: Some(_), .. } => "write-imm",
            SendOp::RdmaRead { .. } => "read",
            SendOp::CompareSwap { .. } => "cmp-swap",
            SendOp::FetchAdd { .. } => "fetch-add",
        }
    }
}

/// A send work request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendWqe {
    /// Opaque to the transport: returned in the completion (the slow path's ring slot or WR id).
    pub id: u64,
    /// What to do.
    pub op: SendOp,
    /// Local buffers: gathered from for SEND and WRITE, scattered into for READ.
    pub sges: SgeList,
    /// Message length in bytes: the first `length` bytes of the SGE list (which must hold at
    /// least that many).
    pub length: u32,
    /// Whether a successful completion is reported (an error always is; IBA §10.7.3.1).
    pub signaled: bool,
    /// Solicited event: set SE on the message's last packet.
    pub solicited: bool,
}

/// A receive work request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecvWqe {
    /// Opaque to the transport: returned in the completion.
    pub id: u64,
    /// Buffers an incoming SEND lands in, at increasing offsets.
    pub sges: SgeList,
}

impl RecvWqe {
    /// Bytes the SGEs hold.
    pub fn capacity(&self) -> u64 {
        self.sges.iter().map(|s| u64::from(s.len)).sum()
    }
}

impl SendWqe {
    /// Why this request cannot be started, as the status of its completion: a length past
    /// [`MAX_MESSAGE`] or past what the SGEs hold, or an atomic whose length is not
    /// [`ATOMIC_BYTES`], is a local length error (Linux `IB_WC_LOC_LEN_ERR`; the BCM57608's
    /// `CQ_REQ_STATUS_LOCAL_LENGTH_ERR`).
    pub fn check(&self) -> Result<(), ReqStatus> {
        let held: u64 = self.sges.iter().map(|s| u64::from(s.len)).sum();
        if self.length > MAX_MESSAGE || u64::from(self.length) > held {
            return Err(ReqStatus::LocalLength);
        }
        if self.op.is_atomic() && self.length != ATOMIC_BYTES {
            return Err(ReqStatus::LocalLength);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wqe(length: u32, sges: &[u32]) -> SendWqe {
        SendWqe {
            id: 1,
            op: SendOp::Send { imm: None },
            sges: sges.iter().map(|&len| Sge { addr: 0, lkey: 1, len }).collect(),
            length,
            signaled: true,
            solicited: false,
        }
    }

    #[test]
    fn a_length_past_the_sges_or_the_limit_is_a_local_length_error() {
        assert_eq!(wqe(0, &[]).check(), Ok(()));
        assert_eq!(wqe(10, &[4, 6]).check(), Ok(()));
        assert_eq!(wqe(9, &[4, 6]).check(), Ok(()));
        assert_eq!(wqe(11, &[4, 6]).check(), Err(ReqStatus::LocalLength));
        assert_eq!(wqe(MAX_MESSAGE + 1, &[u32::MAX, u32::MAX]).check(), Err(ReqStatus::LocalLength));
        assert_eq!(RecvWqe { id: 0, sges: wqe(0, &[u32::MAX, u32::MAX]).sges }.capacity(), 2 * u64::from(u32::MAX));
    }
}
