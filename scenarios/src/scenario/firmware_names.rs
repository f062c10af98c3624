//! The names a `firmware` fault takes: the model's vocabulary ([`bnxt_model::names`]), which the
//! language shares with `bnxt-model serve --faults` and `bnxt-model ctl`.

pub use bnxt_model::names::*;
