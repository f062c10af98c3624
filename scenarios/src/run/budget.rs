//! How much memory scenarios running side by side (`--jobs`) may ask for: each scenario's
//! regions (`Scenario::region_bytes`, an upper bound) are counted against a budget, so that a
//! suite of large regions does not exhaust a small machine. A scenario that alone asks for more
//! than the budget still runs, by itself.

/// What the kernel says is available (`MemAvailable` in `/proc/meminfo`), halved; 4 GiB where it
/// cannot be read.
pub fn default_budget() -> u64 {
    std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| mem_available(&t)).map_or(4 << 30, |b| b / 2)
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Whether a scenario whose regions ask for `need` bytes may start while `running` others ask
/// for `in_flight`: always when none runs, else while the sum stays within `budget`.
pub fn admits(in_flight: u64, need: u64, budget: u64, running: usize) -> bool {
    running == 0 || in_flight.saturating_add(need) <= budget
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_start_while_the_budget_holds_and_a_large_one_runs_alone() {
        assert!(admits(0, 10, 100, 0));
        assert!(admits(60, 40, 100, 1));
        assert!(!admits(60, 41, 100, 1));
        assert!(admits(0, 1000, 100, 0), "too large for the budget: runs by itself");
        assert!(!admits(1000, 1, 100, 1), "nothing joins it");
        assert!(!admits(u64::MAX, 1, u64::MAX - 1, 2));
    }

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(mem_available(text), Some(20_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
        assert!(default_budget() > 0);
    }
}

#[cfg(test)]
mod region_bytes {
    use std::path::Path;

    use crate::scenario::load::load_str;

    #[test]
    fn a_scenario_asks_for_its_regions_with_repeats_counted_each_time() {
        let text = "name: t\nabout: t\nnics: 1\nsteps:\n  - open: {nic: 0, as: a}\n  - region: {on: a, as: big, bytes: 1MiB}\n  - repeat:\n      times: 3\n      steps:\n        - region: {on: a, as: r, bytes: 4KiB}\n        - deregister: r\n  - close: a\n";
        let s = load_str(Path::new("t.yaml"), text).unwrap();
        assert_eq!(s[0].region_bytes(), (1 << 20) + 3 * 4096);
    }
}
