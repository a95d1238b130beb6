//! What `#[csp::main]` runs: the body on its runtime, then a shutdown bounded in time,
//! whether the body returned or panicked.

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
