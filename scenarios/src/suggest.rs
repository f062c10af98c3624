//! "Did you mean …?": the closest of a set of names to a misspelt one.

/// The candidate closest to `name` (ignoring case), if it is close enough to be a likely typo.
pub fn closest<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    /// Jaro-Winkler similarity at or above which a candidate counts as a typo of the name.
    const LIKELY_TYPO: f64 = 0.8;
    let name = name.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&name, &c.to_ascii_lowercase()), c))
        .filter(|(score, _)| *score >= LIKELY_TYPO)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn typos_find_their_key_and_nonsense_finds_nothing() {
        let keys = ["nic", "as", "expect"];
        assert_eq!(closest("ass", keys), Some("as"));
        assert_eq!(closest("nics", keys), Some("nic"));
        assert_eq!(closest("expcet", keys), Some("expect"));
        assert_eq!(closest("zzz", keys), None);
        let requests = ["FUNC_DRV_RGTR", "FUNC_DRV_UNRGTR", "FUNC_QCAPS"];
        assert_eq!(closest("FUNC_DRV_RGSTR", requests), Some("FUNC_DRV_RGTR"));
        assert_eq!(closest("func_qcap", requests), Some("FUNC_QCAPS"));
    }
}
