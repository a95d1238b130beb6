//! The scheduling state of a process, as dumps report it.

/// The scheduling state of a live process (see `src/task/state.rs`).
///
/// ```
/// let state = csp::ProcessState::Sleeping;
/// assert_ne!(state, csp::ProcessState::Running);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProcessState {
    /// Waiting for an event; in no run queue.
    Sleeping,
    /// In a run queue, waiting for a worker.
    Queued,
    /// Being polled by a worker.
    Running,
    /// Woken while being polled: it will be queued again when the poll returns.
    Yielding,
}
