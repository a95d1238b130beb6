//! Panics caught from user code, and how their payloads are let go.
//!
//! A panic's payload is the panicking code's own value, whose `Drop` may panic in turn.
//! A worker (or the watchdog, or the caller of a hook) that catches a panic in order to
//! go on must not let that second panic unwind through it: [`discard`] catches it and
//! keeps its payload, undropped, for the rest of the program's life (a few bytes, once in
//! a program's life), where a leak checker sees it still reachable.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What `catch_unwind` gives back for a panic.
pub(crate) type Payload = Box<dyn Any + Send>;

/// The payloads of panics raised by dropping another payload: never dropped, since
/// dropping them may panic again. A std mutex, not loom's: it orders nothing the models
/// look at.
static KEPT: std::sync::Mutex<Vec<Payload>> = std::sync::Mutex::new(Vec::new());

/// Drops a caught panic's payload; should that drop panic, the second payload is kept.
pub(crate) fn discard(payload: Payload) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        KEPT.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(again);
    }
}

/// Runs `f`, which runs user code, discarding a panic of it; true if `f` returned.
pub(crate) fn catching(f: impl FnOnce()) -> bool {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(()) => true,
        Err(payload) => {
            discard(payload);
            false
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A payload whose drop panics, as a user's type may.
    struct PanicsOnDrop;

    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("the payload's drop panicked");
        }
    }

    #[test]
    fn a_payload_whose_drop_panics_is_let_go_without_unwinding() {
        assert!(!catching(|| std::panic::panic_any(PanicsOnDrop)));
        discard(Box::new(PanicsOnDrop));
        assert!(catching(|| {}));
    }
}
