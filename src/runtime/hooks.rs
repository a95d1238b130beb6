//! The thread hooks of [`Builder::on_thread_start`](crate::Builder::on_thread_start) and
//! [`Builder::on_thread_stop`](crate::Builder::on_thread_stop): user code run on every
//! thread the runtime starts, its workers and its blocking-pool threads.
//!
//! A hook is foreign code and may panic. A panic is caught and reported on standard
//! error, and the thread goes on as if the hook had returned: a worker that died before
//! its loop would strand every process queued on it, and one that died on its way out
//! would leave shutdown waiting for it.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::task::panic::discard;

/// A hook, shared by every thread of the runtime.
pub(crate) type Hook = Arc<dyn Fn() + Send + Sync + 'static>;

/// The hooks a runtime's threads run as they start and as they exit.
#[derive(Clone, Default)]
pub(crate) struct ThreadHooks {
    pub(crate) start: Option<Hook>,
    pub(crate) stop: Option<Hook>,
    /// The tokio runtime whose context every thread enters (`Builder::enter_tokio`).
    #[cfg(feature = "tokio")]
    pub(crate) tokio: Option<tokio::runtime::Handle>,
}

impl ThreadHooks {
    /// Runs the start hook, if any, on the current thread (before it runs any work),
    /// inside the tokio context if one was given.
    pub(crate) fn thread_started(&self) {
        #[cfg(feature = "tokio")]
        if let Some(tokio) = &self.tokio {
            crate::runtime::tokio_context::enter(tokio);
        }
        run(self.start.as_ref(), "on_thread_start");
    }

    /// Runs the stop hook, if any, on the current thread (as it exits), then leaves the
    /// tokio context.
    pub(crate) fn thread_stopping(&self) {
        run(self.stop.as_ref(), "on_thread_stop");
        #[cfg(feature = "tokio")]
        if self.tokio.is_some() {
            crate::runtime::tokio_context::exit();
        }
    }
}

fn run(hook: Option<&Hook>, which: &str) {
    let Some(hook) = hook else {
        return;
    };
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| hook())) {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string payload".to_owned());
        let thread = std::thread::current();
        eprintln!(
            "csp: the {which} hook panicked on thread {}: {message}; the thread goes on \
             as if the hook had returned",
            thread.name().unwrap_or("<unnamed>")
        );
        // The payload's own drop is foreign code too.
        discard(payload);
    }
}

impl fmt::Debug for ThreadHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadHooks")
            .field("on_thread_start", &self.start.is_some())
            .field("on_thread_stop", &self.stop.is_some())
            .finish_non_exhaustive()
    }
}
