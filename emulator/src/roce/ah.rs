//! Address handles (address vectors) as the firmware keeps them: what CREATE_AH gave, looked up
//! by the AV id a UD send WQE names in `avid` (roce_hsi.h `cmdq_create_ah`, `sq_send.avid`;
//! bnxt_re qplib_sp.c `bnxt_qplib_create_ah`, `bnxt_qplib_destroy_ah`).

use std::collections::BTreeMap;

/// One address handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressHandle {
    /// `ah_handle` (the driver's cookie).
    pub handle: u64,
    /// Protection domain.
    pub pd: u32,
    /// Destination GID, in wire order.
    pub dgid: [u8; 16],
    /// Hardware GID index of the source GID (the index ADD_GID answered).
    pub sgid_index: u16,
    /// Destination MAC, in wire order.
    pub dest_mac: [u8; 6],
    /// Hop limit (IPv4 TTL for RoCE v2 over IPv4).
    pub hop_limit: u8,
    /// Traffic class (IPv4 DSCP/ECN).
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
}

/// The address handles of one function, by AV id.
#[derive(Debug, Default, Clone)]
pub struct AhTable {
    by_id: BTreeMap<u32, AddressHandle>,
}

impl AhTable {
    /// Keep `ah` under the smallest free id below `limit`; `None` when all are used.
    pub fn insert(&mut self, ah: AddressHandle, limit: u32) -> Option<u32> {
        let id = (0..limit).find(|i| !self.by_id.contains_key(i))?;
        self.by_id.insert(id, ah);
        Some(id)
    }

    /// The handle with AV id `id`.
    pub fn get(&self, id: u32) -> Option<&AddressHandle> {
        self.by_id.get(&id)
    }

    /// Forget AV id `id`; false if there was none.
    pub fn remove(&mut self, id: u32) -> bool {
        self.by_id.remove(&id).is_some()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ah(pd: u32) -> AddressHandle {
        AddressHandle {
            handle: 7,
            pd,
            dgid: [0; 16],
            sgid_index: 0,
            dest_mac: [2, 0, 0, 0, 0, 1],
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
        }
    }

    #[test]
    fn ids_are_reused_and_bounded_by_the_limit() {
        let mut t = AhTable::default();
        assert_eq!(t.insert(ah(1), 2), Some(0));
        assert_eq!(t.insert(ah(2), 2), Some(1));
        assert_eq!(t.insert(ah(3), 2), None);
        assert!(t.remove(0));
        assert!(!t.remove(0));
        assert_eq!(t.insert(ah(4), 2), Some(0));
        assert_eq!(t.get(0).map(|a| a.pd), Some(4));
        assert_eq!(t.len(), 2);
    }
}
