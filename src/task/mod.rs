//! Processes: one heap allocation each, holding a 64-byte header, the registry links and
//! the future (later its output).
//!
//! - `state.rs`: the state word and every transition of it (start reading here);
//! - `header.rs`, `cell.rs`: the allocation's layout;
//! - `raw.rs`: the type-erased vtable, pointers and run queue entries;
//! - `harness.rs`: poll, cancel, complete, read the output;
//! - `waker.rs`: the `Waker` of a process;
//! - `join.rs`, `error.rs`: `JoinHandle` and `JoinError`.

mod cell;
mod error;
mod harness;
pub(crate) mod header;
mod join;
#[cfg(all(test, loom))]
mod loom_models;
pub(crate) mod raw;
pub(crate) mod state;
pub(crate) mod waker;

use std::future::Future;
use std::panic::Location;

pub use error::JoinError;
pub use join::JoinHandle;
pub(crate) use raw::{Notified, RawTask, TaskRef};

use crate::loom::sync::Arc;
use crate::runtime::Shared;

/// What a new process starts with: its registry entry's reference (as a pointer), its
/// first run queue entry and its `JoinHandle`.
pub(crate) struct NewTask<T> {
    pub(crate) registry: RawTask,
    pub(crate) entry: Notified,
    pub(crate) join: JoinHandle<T>,
}

/// Allocates a process (or, with `blocking`, a `spawn_blocking` task) for `future`.
pub(crate) fn allocate<F>(
    future: F,
    shared: Arc<Shared>,
    id: u64,
    spawned_at: &'static Location<'static>,
    blocking: bool,
) -> NewTask<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let state = if blocking {
        state::State::new_blocking()
    } else {
        state::State::new_process()
    };
    let ptr = cell::Cell::allocate(future, state, raw::vtable::<F>(), shared, id, spawned_at);
    // SAFETY: just allocated, with three references: one each for the registry entry,
    // the run queue entry and the JoinHandle, handed out here.
    unsafe {
        let raw = RawTask::from_raw(ptr);
        NewTask {
            registry: raw,
            entry: Notified::from_raw(raw),
            join: JoinHandle::from_raw(raw),
        }
    }
}
