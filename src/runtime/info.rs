//! What `Runtime::processes()` reports about each live process.

use std::panic::Location;

pub use crate::task::ProcessState;

/// One live process, as [`Runtime::processes`](crate::Runtime::processes) reports it.
///
/// ```
/// let rt = csp::Runtime::new().unwrap();
/// let handle = rt.spawn(std::future::pending::<()>());
/// let info = rt.processes().into_iter().find(|p| p.id == handle.id()).unwrap();
/// assert!(info.spawned_at.file().ends_with(".rs"));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProcessInfo {
    /// Unique id (as [`JoinHandle::id`](crate::JoinHandle::id)), never reused.
    pub id: u64,
    /// The scheduling state at the moment of the dump.
    pub state: ProcessState,
    /// Where it was spawned.
    pub spawned_at: &'static Location<'static>,
    /// What a sleeping process waits on, e.g. `"recv on channel #7"`, `"send on
    /// channel #4"`, `"join of process #9"`; `None` when it is not sleeping or waits on
    /// something csp does not know (a timer of another runtime, I/O).
    pub waiting_on: Option<String>,
    /// The [`JoinSet`](crate::JoinSet) the process was spawned into, by its
    /// [`id`](crate::JoinSet::id), while the set holds it.
    pub group: Option<u64>,
}
