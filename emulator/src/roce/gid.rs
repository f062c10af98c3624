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
    /// One past the highest index in use: lookups (one or two a frame) stop there instead of
    /// scanning all [`MAX_GID`] slots.
    end: usize,
    /// The last destination [`GidTable::accepts`] accepted (own MAC, MAC, IPv4), until the
    /// table changes.
    accepted: Option<([u8; 6], [u8; 6], [u8; 4])>,
}

impl Default for GidTable {
    fn default() -> GidTable {
        GidTable { entries: vec![None; MAX_GID as usize], end: 0, accepted: None }
    }
}

impl GidTable {
    /// Put `entry` at the lowest free index; `None` when the table is full.
    pub fn add(&mut self, entry: GidEntry) -> Option<u16> {
        let i = self.entries.iter().position(Option::is_none)?;
        self.entries[i] = Some(entry);
        self.accepted = None;
        self.end = self.end.max(i + 1);
        Some(i as u16)
    }

    /// Replace the entry at `index`; false if there is none.
    pub fn modify(&mut self, index: u16, entry: GidEntry) -> bool {
        match self.entries.get_mut(usize::from(index)) {
            Some(slot @ Some(_)) => {
                *slot = Some(entry);
                self.accepted = None;
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
                self.accepted = None;
                while self.end > 0 && self.entries[self.end - 1].is_none() {
                    self.end -= 1;
                }
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
        self.in_use().any(|e| &e.gid == gid)
    }

    /// Whether an entry carries `mac`.
    pub fn has_mac(&self, mac: &[u8; 6]) -> bool {
        self.in_use().any(|e| &e.mac == mac)
    }

    /// Whether a frame to `mac` and `ip` is for the NIC whose own MAC is `own`: `mac` is the
    /// NIC's or a GID entry's, and a GID entry is the IPv4-mapped GID of `ip`. The answer for
    /// the last destination accepted is kept until the table changes (a QP's frames all go to
    /// one destination).
    pub fn accepts(&mut self, own: [u8; 6], mac: [u8; 6], ip: [u8; 4]) -> bool {
        if self.accepted == Some((own, mac, ip)) {
            return true;
        }
        let ours = (mac == own || self.has_mac(&mac)) && self.contains_gid(&bnxt_hsi::roce::gid::ipv4_mapped_gid(ip));
        if ours {
            self.accepted = Some((own, mac, ip));
        }
        ours
    }

    /// The entries in use, by index.
    fn in_use(&self) -> impl Iterator<Item = &GidEntry> {
        self.entries[..self.end].iter().flatten()
    }

    /// Entries in use.
    pub fn len(&self) -> usize {
        self.in_use().count()
    }

    /// Whether no entry is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u8) -> GidEntry {
        GidEntry { gid: [n; 16], mac: [2, 0, 0, 0, 0, n] }
    }

    #[test]
    fn lookups_see_every_entry_in_use_and_none_deleted() {
        let mut t = GidTable::default();
        assert_eq!((t.add(entry(1)), t.add(entry(2)), t.add(entry(3))), (Some(0), Some(1), Some(2)));
        assert!(t.delete(2) && t.delete(1));
        assert!(!t.has_mac(&entry(3).mac) && !t.contains_gid(&entry(2).gid));
        assert!(t.has_mac(&entry(1).mac) && t.len() == 1);
        // The freed slots are taken again, and an entry far up the table is found.
        for n in 4..(MAX_GID as u8 + 3) {
            assert!(t.add(entry(n)).is_some());
        }
        assert_eq!(t.add(entry(0)), None, "the table is full");
        assert!(t.contains_gid(&entry(MAX_GID as u8 + 2).gid) && t.len() == MAX_GID as usize);
        assert!(t.delete(0));
        assert!(!t.has_mac(&entry(1).mac) && t.has_mac(&entry(MAX_GID as u8 + 2).mac));
        assert!(t.modify(5, entry(200)) && t.has_mac(&entry(200).mac));
    }

    #[test]
    fn a_destination_is_accepted_while_its_entries_stand() {
        let own = [2, 0, 0, 0, 0, 9];
        let ip = [10, 0, 0, 9];
        let mine = GidEntry { gid: bnxt_hsi::roce::gid::ipv4_mapped_gid(ip), mac: own };
        let mut t = GidTable::default();
        assert!(!t.accepts(own, own, ip), "no GID yet");
        let i = t.add(mine).unwrap();
        assert!(t.accepts(own, own, ip) && t.accepts(own, own, ip));
        assert!(!t.accepts(own, own, [10, 0, 0, 8]) && !t.accepts(own, [2, 0, 0, 0, 0, 8], ip));
        assert!(t.modify(i, GidEntry { gid: [0; 16], mac: own }));
        assert!(!t.accepts(own, own, ip), "the entry changed");
        assert!(t.modify(i, mine) && t.accepts(own, own, ip));
        assert!(t.delete(i));
        assert!(!t.accepts(own, own, ip), "the entry went");
        // Another MAC of the NIC (a GID entry's) is accepted as its own.
        let other = [2, 0, 0, 0, 0, 7];
        t.add(GidEntry { gid: mine.gid, mac: other }).unwrap();
        assert!(t.accepts(own, other, ip) && t.accepts(own, own, ip));
    }
}
