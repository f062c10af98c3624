//! Running code that may panic without taking the runner down: the driver refusing misuse of its
//! contract (the contract's `Invalid_argument`, which `misuse:` expectations check), or a bug in
//! the driver or the model. The panic becomes a message naming where it happened, and is not
//! printed as it happens. Time limits are not panics: they interrupt the clock (`super::watch`).

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// How many [`catch`] calls are active on this thread.
    static CATCHING: Cell<u32> = const { Cell::new(0) };
    /// Where the last caught panic happened.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Install (once per process) a panic hook that records where a panic happened instead of
/// printing it while a [`catch`] is active on the panicking thread, and otherwise behaves as the
/// hook it replaces.
fn install_hook() {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CATCHING.with(Cell::get) > 0 {
                let at = info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
                LOCATION.with(|l| *l.borrow_mut() = at);
            } else {
                previous(info);
            }
        }));
    });
}

/// A panic that [`catch_panic`] caught.
#[derive(Debug, Clone)]
pub struct Panic {
    /// Where (`FILE:LINE:COL`), when known.
    pub at: Option<String>,
    /// The panic's message.
    pub message: String,
}

impl std::fmt::Display for Panic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.at {
            Some(at) => write!(f, "panicked at {at}: {}", self.message),
            None => write!(f, "panicked: {}", self.message),
        }
    }
}

/// Run `f`; a panic in it is returned as `Err`.
pub fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, Panic> {
    install_hook();
    CATCHING.with(|c| c.set(c.get() + 1));
    LOCATION.with(|l| l.borrow_mut().take());
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(c.get() - 1));
    result.map_err(|payload| {
        let at = LOCATION.with(|l| l.borrow_mut().take());
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(a panic without a message)".to_string());
        Panic { at, message }
    })
}

/// Run `f`; a panic in it is returned as `Err("panicked at FILE:LINE:COL: MESSAGE")`.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_panic(f).map_err(|p| p.to_string())
}

#[cfg(test)]
mod tests {
    use super::catch;

    #[test]
    fn a_panic_becomes_a_message_with_its_location() {
        let e = catch(|| -> u32 { panic!("firmware on fire") }).unwrap_err();
        assert!(e.starts_with("panicked at "), "{e}");
        assert!(e.contains("panic.rs"), "{e}");
        assert!(e.ends_with("firmware on fire"), "{e}");
        let e = catch(|| -> u32 { todo!() }).unwrap_err();
        assert!(e.contains("not yet implemented"), "{e}");
        assert_eq!(catch(|| 7), Ok(7));
    }

    #[test]
    fn catches_nest() {
        let outer = catch(|| {
            let inner = catch(|| -> () { panic!("inner") });
            assert!(inner.unwrap_err().ends_with("inner"));
            panic!("outer")
        });
        assert!(outer.unwrap_err().ends_with("outer"));
    }
}
