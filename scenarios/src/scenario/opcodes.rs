//! Names of the reliable-connected BTH opcodes, as scenarios (wire fault rules), transcripts and
//! ladder diagrams write them.
//!
//! The values are the IBA's (Vol 1 §9.2.1, BTH OpCode: transport 000 = RC in bits 7-5, the
//! operation in bits 4-0), as Linux's include/rdma/ib_pack.h names them (`IB_OPCODE_RC_*`,
//! here without the prefix).

/// Every RC opcode with its name.
pub const RC_OPCODES: [(u8, &str); 20] = [
    (0x00, "SEND_FIRST"),
    (0x01, "SEND_MIDDLE"),
    (0x02, "SEND_LAST"),
    (0x03, "SEND_LAST_WITH_IMMEDIATE"),
    (0x04, "SEND_ONLY"),
    (0x05, "SEND_ONLY_WITH_IMMEDIATE"),
    (0x06, "RDMA_WRITE_FIRST"),
    (0x07, "RDMA_WRITE_MIDDLE"),
    (0x08, "RDMA_WRITE_LAST"),
    (0x09, "RDMA_WRITE_LAST_WITH_IMMEDIATE"),
    (0x0a, "RDMA_WRITE_ONLY"),
    (0x0b, "RDMA_WRITE_ONLY_WITH_IMMEDIATE"),
    (0x0c, "RDMA_READ_REQUEST"),
    (0x0d, "RDMA_READ_RESPONSE_FIRST"),
    (0x0e, "RDMA_READ_RESPONSE_MIDDLE"),
    (0x0f, "RDMA_READ_RESPONSE_LAST"),
    (0x10, "RDMA_READ_RESPONSE_ONLY"),
    (0x11, "ACKNOWLEDGE"),
    (0x12, "ATOMIC_ACKNOWLEDGE"),
    (0x13, "COMPARE_SWAP"),
];

/// The name of `opcode` (`SEND_ONLY`), or `0x..` for one that has none here.
pub fn opcode_name(opcode: u8) -> String {
    match RC_OPCODES.iter().find(|(v, _)| *v == opcode) {
        Some((_, name)) => (*name).to_string(),
        None => format!("0x{opcode:02x}"),
    }
}

/// The opcode named `name` (any case).
pub fn opcode_by_name(name: &str) -> Option<u8> {
    RC_OPCODES.iter().find(|(_, n)| n.eq_ignore_ascii_case(name)).map(|(v, _)| *v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_opcodes_are_numbers() {
        for (v, n) in RC_OPCODES {
            assert_eq!(opcode_by_name(n), Some(v));
            assert_eq!(opcode_name(v), n);
        }
        assert_eq!(opcode_by_name("send_only"), Some(4));
        assert_eq!(opcode_name(0x64), "0x64");
    }
}
