//! A waker that csp keeps for code it does not own: another executor's, as a wait holds
//! it (`Owner::Foreign`), or whatever waker awaits a `par!` or a `JoinSet`. Its `wake`,
//! `clone` and `drop` are that code, and any of them may panic.
//!
//! A kept waker is dropped wherever its wait ends, often in the `Drop` of a csp future
//! or guard, and such a drop may run while the thread is unwinding from a panic already.
//! A second panic out of a destructor then aborts the whole process, so a `ForeignWaker`
//! dropped during unwinding catches its waker's panic and lets it go; at any other time
//! that panic unwinds into the caller, as the waker's own drop would.

use std::task::Waker;

use crate::task::panic::drop_foreign;

/// A foreign waker whose drop never panics while the thread unwinds (module docs). As
/// small as a `Waker`, its niche kept (an `Option` of one is no larger).
pub(crate) struct ForeignWaker(Waker);

impl ForeignWaker {
    /// Holds `waker`.
    pub(crate) fn new(waker: Waker) -> ForeignWaker {
        ForeignWaker(waker)
    }

    /// Wakes the task, consuming the waker; its panic unwinds to the caller.
    pub(crate) fn wake(mut self) {
        self.take().wake();
    }

    /// The waker, leaving in its place one whose drop does nothing.
    fn take(&mut self) -> Waker {
        std::mem::replace(&mut self.0, Waker::noop().clone())
    }
}

impl std::ops::Deref for ForeignWaker {
    type Target = Waker;

    fn deref(&self) -> &Waker {
        &self.0
    }
}

impl Drop for ForeignWaker {
    fn drop(&mut self) {
        drop_foreign(self.take());
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{RawWaker, RawWakerVTable, Waker};

    use super::ForeignWaker;

    static DROPS: AtomicUsize = AtomicUsize::new(0);

    /// A waker whose drop counts, then panics.
    fn drop_panics() -> Waker {
        fn clone(_: *const ()) -> RawWaker {
            RawWaker::new(std::ptr::null(), &VTABLE)
        }
        fn nothing(_: *const ()) {}
        fn drop(_: *const ()) {
            DROPS.fetch_add(1, Ordering::SeqCst);
            panic!("this waker's drop panics");
        }
        static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, nothing, nothing, drop);
        // SAFETY: the functions ignore the data pointer and touch nothing else.
        unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) }
    }

    #[test]
    fn a_drop_while_unwinding_keeps_the_first_panic_and_a_plain_drop_unwinds() {
        let before = DROPS.load(Ordering::SeqCst);
        let held = ForeignWaker::new(drop_panics());
        let payload = catch_unwind(AssertUnwindSafe(move || {
            let _held = held;
            panic!("the first panic");
        }))
        .expect_err("the scope panicked");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"the first panic"));
        assert_eq!(
            DROPS.load(Ordering::SeqCst),
            before + 1,
            "the waker was dropped"
        );

        let held = ForeignWaker::new(drop_panics());
        let payload = catch_unwind(AssertUnwindSafe(move || drop(held)))
            .expect_err("not unwinding, the drop's panic comes out");
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&"this waker's drop panics")
        );
        assert_eq!(DROPS.load(Ordering::SeqCst), before + 2);
    }

    #[test]
    fn wake_wakes_once_and_the_waker_compares() {
        let (counter, waker) = crate::task::test_wakers::counting();
        let held = ForeignWaker::new(waker.clone());
        assert!(held.will_wake(&waker));
        assert!(!held.will_wake(Waker::noop()));
        held.wake();
        assert_eq!(counter.wakes(), 1);
        drop(waker);
        assert_eq!(Arc::strong_count(&counter), 1, "no clone is left");
    }

    #[test]
    fn as_small_as_a_waker_with_its_niche() {
        assert_eq!(
            std::mem::size_of::<ForeignWaker>(),
            std::mem::size_of::<Waker>()
        );
        assert_eq!(
            std::mem::size_of::<Option<ForeignWaker>>(),
            std::mem::size_of::<Waker>()
        );
    }
}
