//! [`Builder::enter_tokio`](crate::Builder::enter_tokio) (feature `tokio`): every thread
//! of the runtime enters a tokio runtime's context as it starts and leaves it as it
//! exits, so tokio's sockets and timers work inside csp processes.
//!
//! The guard of the context lives in a thread-local, beside the handle it borrows: tokio
//! gives only a borrowing guard, so each thread keeps its own boxed handle and a guard
//! whose lifetime is extended to `'static`, dropped before the box.

use std::cell::RefCell;
use std::mem::ManuallyDrop;

use tokio::runtime::{EnterGuard, Handle};

/// One thread's entry into a tokio runtime's context.
struct Entered {
    /// Borrows `*handle` (not `'static` in truth): dropped first, by `Drop`.
    guard: ManuallyDrop<EnterGuard<'static>>,
    /// The handle the guard borrows; boxed, so it stays put while the guard lives.
    _handle: Box<Handle>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        // SAFETY: dropped once, here, while the handle it borrows is still alive (the
        // box is dropped after this body).
        unsafe { ManuallyDrop::drop(&mut self.guard) };
    }
}

thread_local! {
    static ENTERED: RefCell<Option<Entered>> = const { RefCell::new(None) };
}

/// Enters `handle`'s context on this thread until [`exit`] (or the thread's end).
pub(crate) fn enter(handle: &Handle) {
    let handle = Box::new(handle.clone());
    let guard = handle.enter();
    // SAFETY: the guard borrows the boxed handle, whose heap address does not change as
    // the box moves; `Entered` drops the guard before the box, and nothing else reaches
    // either, so the borrow never outlives the handle.
    let guard = unsafe { std::mem::transmute::<EnterGuard<'_>, EnterGuard<'static>>(guard) };
    let entered = Entered {
        guard: ManuallyDrop::new(guard),
        _handle: handle,
    };
    let earlier = ENTERED.with(|slot| slot.borrow_mut().replace(entered));
    drop(earlier);
}

/// Leaves the context [`enter`] entered on this thread, if any.
pub(crate) fn exit() {
    let entered = ENTERED.with(|slot| slot.borrow_mut().take());
    drop(entered);
}
