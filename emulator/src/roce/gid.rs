//! The hardware GID table: what ADD_GID, MODIFY_GID and DELETE_GID manage (bnxt_re qplib_sp.c
//! `bnxt_qplib_add_sgid`, `bnxt_qplib_del_sgid`, `bnxt_qplib_update_sgid`). ADD_GID answers with
//! the index of the entry, which MODIFY_QP later names as `sgid_index`.

use super::caps::MAX_GID;

/// One source GID and the MAC frames sent from it carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GidEntry {
    /// The GID, in wire order.
    pub gid: [u8; 16],
    /// Source MAC, in wire order.
    pub mac: [u8; 6],
}

/// The table.
#[derive(Debug, Clone)]
pub struct GidTable {
    entries: Vec<Option<GidEntry>>,
}

impl Default for GidTable {
    fn default() -> GidTable {
        GidTable { entries: vec![None; MAX_GID as usize] }
    }
}

impl GidTable {
    /// Put `entry` at the lowest free index; `None` when the table is full.
    pub fn add(&mut self, entry: GidEntry) -> Option<u16> {
        let i = self.entries.iter().position(Option::is_none)?;
        self.entries[i] = Some(entry);
        Some(i as u16)
    }

    /// Replace the entry at `index`; false if there is none.
    pub fn modify(&mut self, index: u16, entry: GidEntry) -> bool {
        match self.entries.get_mut(usize::from(index)) {
            Some(slot @ Some(_)) => {
                *slot = Some(entry);
                true
            }
            _ => false,
        }
    }

    /// Remove the entry at `index`; false if there is none.
    pub fn delete(&mut self, index: u16) -> bool {
        match self.entries.get_mut(usize::from(index)) {
            Some(slot @ Some(_)) => {
                *slot = None;
                true
            }
            _ => false,
        }
    }

    /// The entry at `index`.
    pub fn get(&self, index: u16) -> Option<&GidEntry> {
        self.entries.get(usize::from(index)).and_then(Option::as_ref)
    }

    /// Whether any entry carries `gid`.
    pub fn contains_gid(&self, gid: &[u8; 16]) -> bool {
        self.entries.iter().flatten().any(|e| &e.gid == gid)
    }

    /// Whether an entry carries `mac`.
    pub fn has_mac(&self, mac: &[u8; 6]) -> bool {
        self.entries.iter().flatten().any(|e| &e.mac == mac)
    }

    /// Entries in use.
    pub fn len(&self) -> usize {
        self.entries.iter().flatten().count()
    }

    /// Whether no entry is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
