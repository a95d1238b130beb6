//! One process, one allocation: the header, the registry links and the future's stage.

use std::future::Future;
use std::panic::Location;
use std::ptr::NonNull;

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::AtomicU64;
use crate::task::JoinError;
use crate::task::header::{Header, Links};
use crate::task::raw::Vtable;
use crate::task::scheduler::SchedulerRef;
use crate::task::state::State;

/// The future while it runs, then its output until the `JoinHandle` takes it.
pub(crate) enum Stage<F: Future> {
    Running(F),
    Finished(Result<F::Output, JoinError>),
    Consumed,
}

/// The whole allocation. `repr(C)` keeps `Prefix`'s fields first, in order.
#[repr(C)]
pub(crate) struct Cell<F: Future> {
    pub(crate) header: Header,
    pub(crate) links: UnsafeCell<Links>,
    #[cfg(feature = "console")]
    pub(crate) stats: crate::task::stats::ProcessStats,
    /// Owned by whoever the state word says (state.rs): the `Running` owner while the
    /// future lives, then the `JoinHandle` or the completer.
    pub(crate) stage: UnsafeCell<Stage<F>>,
}

impl<F: Future> Cell<F> {
    /// Allocates a process and returns the pointer to its header.
    pub(crate) fn allocate(
        future: F,
        state: State,
        vtable: &'static Vtable,
        scheduler: SchedulerRef,
        id: u64,
        spawned_at: &'static Location<'static>,
    ) -> NonNull<Header> {
        let cell = Box::new(Cell {
            header: Header {
                state,
                vtable,
                scheduler,
                join_waker: UnsafeCell::new(None),
                spawned_at,
                id,
                wait: AtomicU64::new(0),
            },
            links: UnsafeCell::new(Links::default()),
            #[cfg(feature = "console")]
            stats: Default::default(),
            stage: UnsafeCell::new(Stage::Running(future)),
        });
        NonNull::from(Box::leak(cell)).cast()
    }
}

// `Cell<F>` must begin like `Prefix` for `Header::links` (and `Header::stats`) to be right.
#[cfg(not(loom))]
const _: () = {
    use crate::task::header::Prefix;
    type Probe = Cell<std::future::Ready<()>>;
    assert!(std::mem::offset_of!(Probe, header) == std::mem::offset_of!(Prefix, header));
    assert!(std::mem::offset_of!(Probe, links) == std::mem::offset_of!(Prefix, links));
    #[cfg(feature = "console")]
    assert!(std::mem::offset_of!(Probe, stats) == std::mem::offset_of!(Prefix, stats));
};
