//! What `#[csp::main]` and `#[csp::test]` run: the body on its runtime, then the
//! runtime's end, bounded in time where the body panicked (and, for `main`, always).

use std::future::Future;

use crate::runtime::Runtime;
use crate::tuning::MAIN_SHUTDOWN_TIMEOUT;

/// Runs `body` on `runtime` to completion and shuts the runtime down with
/// [`shutdown_timeout`](Runtime::shutdown_timeout) (1 s, API.md), so a
/// detached process that never ends cannot hold up the program's exit. The shutdown
/// runs from a guard, so a body that panics is bounded the same way: a plain drop of
/// the runtime would wait for every worker, and one stuck in a poll would hang the
/// panic's unwinding for ever.
pub fn run_main<F: Future>(runtime: Runtime, body: F) -> F::Output {
    let runtime = ShutDownOnDrop(Some(runtime));
    runtime.get().block_on(body)
}

/// Runs a test's `body` on `runtime` to completion. A body that returns drops the
/// runtime as usual, waiting for every worker (a detached process that never ends then
/// shows as a test that never ends). A body that panics shuts the runtime down with
/// [`shutdown_timeout`](Runtime::shutdown_timeout) instead, as `run_main` does, so that
/// a worker stuck in a poll (a process spinning on a flag the failed assertion left
/// unset, say) cannot keep the panic from reaching the test harness. A test that fails
/// by returning an `Err` is not told apart from one that passes: its runtime is dropped
/// plainly.
pub fn run_test<F: Future>(runtime: Runtime, body: F) -> F::Output {
    let mut runtime = ShutDownOnDrop(Some(runtime));
    let output = runtime.get().block_on(body);
    drop(runtime.0.take());
    output
}

/// Shuts its runtime down, bounded in time, when dropped.
struct ShutDownOnDrop(Option<Runtime>);

impl ShutDownOnDrop {
    fn get(&self) -> &Runtime {
        self.0
            .as_ref()
            .expect("the runtime is taken only by the drop")
    }
}

impl Drop for ShutDownOnDrop {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_timeout(MAIN_SHUTDOWN_TIMEOUT);
        }
    }
}
