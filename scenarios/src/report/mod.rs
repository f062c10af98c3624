//! Reports of a run. Only the console report exists yet; JUnit and JSON will sit beside it.

pub mod console;
