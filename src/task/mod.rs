//! Processes: one heap allocation each, holding a 64-byte header, the registry links and
//! the future (later its output).
//!
//! - `state.rs`: the state word and every transition of it (start reading here);
//! - `header.rs`, `cell.rs`: the allocation's layout; `stats.rs`: the console's
//!   per-process figures (feature `console`);
//! - `raw.rs`: the type-erased vtable, pointers and run queue entries;
//! - `harness.rs`: poll, cancel, complete, read the output;
//! - `loan.rs`: the poll's reference, lent to the first reference the poll takes to its
//!   own process;
//! - `waker.rs`: the `Waker` of a process;
//! - `scheduler.rs`: the interface through which a process reaches its runtime;
//! - `join_waiter.rs`, `error.rs`: what `JoinHandle` (in `wait/`) hands the vtable, and
//!   `JoinError`;
//! - `process_state.rs`: the state a dump reports.
//!
//! The floor of the crate's layers: it may use `loom`, `tuning` and `id` only, and knows
//! no runtime, channel, wait or choice. The layers above fill in its interfaces: the
//! runtime implements `Scheduler`, and names as its `JoinWaiter` the waiting layer's.
//! Its loom models, which drive processes through a real runtime, live in `runtime/`.

mod cell;
mod error;
mod harness;
pub(crate) mod header;
pub(crate) mod join_waiter;
mod loan;
pub(crate) mod panic;
mod process_state;
pub(crate) mod raw;
mod scheduler;
pub(crate) mod state;
#[cfg(feature = "console")]
pub(crate) mod stats;
#[cfg(all(test, not(loom)))]
pub(crate) mod test_wakers;
pub(crate) mod waker;

use std::future::Future;
use std::panic::Location;

pub use error::JoinError;
pub use process_state::ProcessState;
pub(crate) use raw::{Handed, Notified, RawTask, Resting, TaskRef, Unslept};
use scheduler::SchedulerRef;
pub(crate) use scheduler::{Schedule, Scheduler};

use crate::loom::sync::Arc;

/// What a new process starts with: its registry entry's reference (as a pointer), its
/// first run queue entry, and its `JoinHandle`'s reference (as a pointer, for the
/// waiting layer's `JoinHandle` to take over).
pub(crate) struct NewTask {
    pub(crate) registry: RawTask,
    pub(crate) entry: Notified,
    pub(crate) join: RawTask,
}

/// Allocates a process (or, with `blocking`, a `spawn_blocking` task) for `future`.
pub(crate) fn allocate<F, S>(
    future: F,
    scheduler: Arc<S>,
    id: u64,
    spawned_at: &'static Location<'static>,
    blocking: bool,
) -> NewTask
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    S: Scheduler,
{
    let state = if blocking {
        state::State::new_blocking()
    } else {
        state::State::new_process()
    };
    let scheduler = SchedulerRef::new(scheduler);
    let vtable = raw::vtable::<F, S>();
    let ptr = cell::Cell::allocate(future, state, vtable, scheduler, id, spawned_at);
    // SAFETY: just allocated, with three references: one each for the registry entry,
    // the run queue entry and the JoinHandle, handed out here.
    unsafe {
        let raw = RawTask::from_raw(ptr);
        NewTask {
            registry: raw,
            entry: Notified::from_raw(raw),
            join: raw,
        }
    }
}
