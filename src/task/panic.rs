//! Panics caught from user code, and how their payloads are let go.
//!
//! A panic's payload is the panicking code's own value, whose `Drop` may panic in turn.
//! A worker (or the watchdog, or the caller of a hook) that catches a panic in order to
//! go on must not let that second panic unwind through it: [`discard`] catches it and
//! keeps its payload, undropped, for the rest of the program's life (a few bytes, once in
//! a program's life), where a leak checker sees it still reachable.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

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

/// Resumes a caught panic; lets it go instead ([`discard`]: its payload's own `Drop` may
/// panic too) if this thread is unwinding already, since a second panic would abort the
/// process.
pub(crate) fn resume(payload: Payload) {
    if std::thread::panicking() {
        discard(payload);
    } else {
        resume_unwind(payload);
    }
}

/// Runs `f`, which runs user code, discarding a panic of it.
pub(crate) fn catching(f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        discard(payload);
    }
}

/// Drops each of `values`, which are user code's, one at a time, discarding each drop's
/// panic: none is kept from going by another's panic, and none panics while another's
/// unwinds (which would abort the process).
pub(crate) fn drop_each<T>(values: impl IntoIterator<Item = T>) {
    for value in values {
        catching(move || drop(value));
    }
}

/// Drops `value`, whose `Drop` is foreign code (a waker another executor made): should
/// this thread be unwinding already, a panic of that drop is discarded, since a second
/// panic would abort the process; otherwise it unwinds into the caller as usual.
pub(crate) fn drop_foreign<T>(value: T) {
    if std::thread::panicking() {
        catching(move || drop(value));
    } else {
        drop(value);
    }
}

/// The panics of several calls of user code that must all run (the wakers of one
/// event, say): the first is kept, to resume once every call is done; later ones are
/// discarded.
#[derive(Default)]
pub(crate) struct FirstPanic(Option<Payload>);

impl FirstPanic {
    /// Runs `f`, catching a panic of it.
    pub(crate) fn catch(&mut self, f: impl FnOnce()) {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
            match self.0 {
                None => self.0 = Some(payload),
                Some(_) => discard(payload),
            }
        }
    }

    /// The first panic caught, if any.
    pub(crate) fn into_result(self) -> Result<(), Payload> {
        self.0.map_or(Ok(()), Err)
    }

    /// Resumes the first panic caught, if any, as [`resume`] does.
    pub(crate) fn resume(self) {
        if let Some(payload) = self.0 {
            resume(payload);
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
        catching(|| std::panic::panic_any(PanicsOnDrop));
        discard(Box::new(PanicsOnDrop));
    }

    #[test]
    fn every_call_runs_and_the_first_panic_is_the_one_kept() {
        let mut ran = 0;
        let mut panic = FirstPanic::default();
        panic.catch(|| ran += 1);
        panic.catch(|| std::panic::panic_any("first"));
        panic.catch(|| std::panic::panic_any(PanicsOnDrop));
        panic.catch(|| ran += 1);
        assert_eq!(ran, 2);
        let first = panic.into_result().expect_err("two calls panicked");
        assert_eq!(first.downcast_ref::<&str>(), Some(&"first"));
    }
}
