//! "Did you mean …?": the closest of a set of names to a misspelt one.

pub use bnxt_model::names::closest;

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
