//! Helpers shared by the `net_*` integration tests: frames of every RC kind, and an ICRC
//! computed without the model's code (a bitwise CRC-32, not crc32fast).
#![allow(dead_code)]

use bnxt_model::net::bth::BthRepr;
use bnxt_model::net::ext::{AethRepr, NakCode, RethRepr, Syndrome};
use bnxt_model::net::roce::{Path, Transport, build_frame};
use bnxt_model::net::{MacAddr, Opcode};

/// The MAC of test NIC `n`.
pub fn mac(n: u8) -> MacAddr {
    MacAddr([0x02, 0x00, 0x5e, 0x10, 0x20, n])
}

/// One frame of every opcode the model handles, with payloads of awkward sizes.
pub fn every_kind(path: &Path, dest_qp: u32) -> Vec<Vec<u8>> {
    let reth = RethRepr { va: 0x7f00_1234_5000, rkey: 0x1234, dma_len: 9000 };
    let ack = AethRepr { syndrome: Syndrome::Ack { credits: 0x1f }, msn: 12 };
    let kinds: Vec<(Transport, usize)> = vec![
        (Transport::bth(BthRepr::new(Opcode::SendFirst, dest_qp, 0)), 4096),
        (Transport::bth(BthRepr::new(Opcode::SendMiddle, dest_qp, 1)), 4096),
        (Transport::bth(BthRepr::new(Opcode::SendLast, dest_qp, 2)), 1),
        (Transport { immdt: Some(0xabad_cafe), ..Transport::bth(BthRepr::new(Opcode::SendLastImm, dest_qp, 3)) }, 2),
        (Transport::bth(BthRepr::new(Opcode::SendOnly, dest_qp, 4)), 0),
        (Transport { immdt: Some(7), ..Transport::bth(BthRepr::new(Opcode::SendOnlyImm, dest_qp, 5)) }, 3),
        (Transport { reth: Some(reth), ..Transport::bth(BthRepr::new(Opcode::WriteFirst, dest_qp, 6)) }, 4096),
        (Transport::bth(BthRepr::new(Opcode::WriteMiddle, dest_qp, 7)), 4096),
        (Transport::bth(BthRepr::new(Opcode::WriteLast, dest_qp, 8)), 808),
        (Transport { immdt: Some(9), ..Transport::bth(BthRepr::new(Opcode::WriteLastImm, dest_qp, 9)) }, 5),
        (Transport { reth: Some(reth), ..Transport::bth(BthRepr::new(Opcode::WriteOnly, dest_qp, 10)) }, 77),
        (
            Transport {
                reth: Some(reth),
                immdt: Some(11),
                ..Transport::bth(BthRepr::new(Opcode::WriteOnlyImm, dest_qp, 11))
            },
            64,
        ),
        (Transport { reth: Some(reth), ..Transport::bth(BthRepr::new(Opcode::ReadRequest, dest_qp, 12)) }, 0),
        (Transport { aeth: Some(ack), ..Transport::bth(BthRepr::new(Opcode::ReadResponseFirst, dest_qp, 12)) }, 4096),
        (Transport::bth(BthRepr::new(Opcode::ReadResponseMiddle, dest_qp, 13)), 4096),
        (Transport { aeth: Some(ack), ..Transport::bth(BthRepr::new(Opcode::ReadResponseLast, dest_qp, 14)) }, 807),
        (Transport { aeth: Some(ack), ..Transport::bth(BthRepr::new(Opcode::ReadResponseOnly, dest_qp, 15)) }, 13),
        (Transport { aeth: Some(ack), ..Transport::bth(BthRepr::new(Opcode::Acknowledge, dest_qp, 15)) }, 0),
        (
            Transport {
                aeth: Some(AethRepr { syndrome: Syndrome::RnrNak { timer: 14 }, msn: 12 }),
                ..Transport::bth(BthRepr::new(Opcode::Acknowledge, dest_qp, 16))
            },
            0,
        ),
        (
            Transport {
                aeth: Some(AethRepr { syndrome: Syndrome::Nak(NakCode::PsnSequenceError), msn: 12 }),
                ..Transport::bth(BthRepr::new(Opcode::Acknowledge, dest_qp, 16))
            },
            0,
        ),
        (
            Transport {
                aeth: Some(AethRepr { syndrome: Syndrome::Nak(NakCode::RemoteAccessError), msn: 12 }),
                ..Transport::bth(BthRepr::new(Opcode::Acknowledge, dest_qp, 16))
            },
            0,
        ),
    ];
    kinds
        .into_iter()
        .map(|(t, len)| {
            let payload: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(7)).collect();
            let mut f = Vec::new();
            build_frame(path, &t, &payload, &mut f).expect("valid test frame");
            f
        })
        .collect()
}

/// CRC-32 (IEEE 802.3, reflected, init and final xor all ones), bit by bit.
fn crc32_bitwise(data: impl IntoIterator<Item = u8>) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// Whether an Ethernet frame holding RoCE v2 over IPv4 carries the right ICRC, computed from the
/// rules of IBA Annex A17 without the model's code: 8 bytes of ones, then the IP packet up to the
/// ICRC with ToS, TTL, IP checksum, UDP checksum and BTH byte 4 set to ones. `None` when the frame
/// is not IPv4/UDP 4791 or is too short to hold an ICRC.
pub fn independent_icrc_ok(frame: &[u8]) -> Option<bool> {
    if frame.len() < 14 + 20 + 8 + 12 + 4 || frame[12..14] != [0x08, 0x00] || frame[14] != 0x45 || frame[23] != 17 {
        return None;
    }
    if u16::from_be_bytes([frame[36], frame[37]]) != 4791 {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([frame[16], frame[17]]));
    if total < 20 + 8 + 12 + 4 || 14 + total > frame.len() {
        return None;
    }
    let mut ip = frame[14..14 + total].to_vec();
    let carried = u32::from_le_bytes([ip[total - 4], ip[total - 3], ip[total - 2], ip[total - 1]]);
    ip.truncate(total - 4);
    for i in [1, 8, 10, 11, 20 + 6, 20 + 7, 20 + 8 + 4] {
        ip[i] = 0xff;
    }
    Some(crc32_bitwise([0xffu8; 8].into_iter().chain(ip)) == carried)
}
