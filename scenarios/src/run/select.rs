//! Choosing which scenarios of a suite to run: `--filter` (`--exact`), `--tag`, `--skip-tag`.

use crate::scenario::Scenario;

/// Which scenarios to run.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Only scenarios whose name contains this.
    pub filter: Option<String>,
    /// The filter is the whole name.
    pub exact: bool,
    /// Only scenarios with at least one of these tags (all when empty).
    pub tags: Vec<String>,
    /// No scenario with any of these tags.
    pub skip_tags: Vec<String>,
}

impl Selection {
    /// Whether `scenario` is chosen.
    pub fn chooses(&self, scenario: &Scenario) -> bool {
        let has = |t: &String| scenario.tags.contains(t);
        self.filter
            .as_ref()
            .is_none_or(|f| if self.exact { scenario.name == *f } else { scenario.name.contains(f.as_str()) })
            && (self.tags.is_empty() || self.tags.iter().any(has))
            && !self.skip_tags.iter().any(has)
    }
}
