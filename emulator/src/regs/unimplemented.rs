//! Bookkeeping of register accesses the model does not implement: warn once per offset, count
//! every hit, record an event for each.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::events::{AccessKind, EventKind, Recorder};

/// Counts of unimplemented register accesses, by (BAR, offset, load/store).
#[derive(Debug, Default, Clone)]
pub struct Unimplemented {
    hits: BTreeMap<(u8, u64, AccessKind), u64>,
    total: u64,
}

/// One unimplemented register access, as counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnimplementedHit {
    /// BAR index.
    pub bar: u8,
    /// Offset into the BAR.
    pub offset: u64,
    /// Load or store.
    pub access: AccessKind,
    /// How many times.
    pub count: u64,
}

impl Unimplemented {
    /// Count an access to `bar`+`offset` the model does not implement (`what` names the region),
    /// warn if it is the first at that offset, and record an event.
    #[allow(clippy::too_many_arguments)]
    pub fn hit(
        &mut self,
        rec: &mut Recorder,
        now: Duration,
        bar: u8,
        offset: u64,
        access: AccessKind,
        value: u64,
        what: &'static str,
    ) {
        let n = self.hits.entry((bar, offset, access)).or_insert(0);
        *n += 1;
        self.total += 1;
        if *n == 1 {
            tracing::warn!(
                bar,
                offset = format_args!("0x{offset:x}"),
                ?access,
                value,
                what,
                "unimplemented register access"
            );
        }
        rec.record(now, EventKind::UnimplementedAccess { bar, offset, access, value, what });
    }

    /// Every unimplemented access so far, by offset.
    pub fn hits(&self) -> Vec<UnimplementedHit> {
        self.hits
            .iter()
            .map(|(&(bar, offset, access), &count)| UnimplementedHit { bar, offset, access, count })
            .collect()
    }

    /// Total number of unimplemented accesses.
    pub fn total(&self) -> u64 {
        self.total
    }
}
