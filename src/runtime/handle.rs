//! A cloneable reference to a runtime, for spawning onto it from anywhere.

use std::future::Future;
use std::panic::Location;

use crate::loom::sync::Arc;
use crate::runtime::{Metrics, ProcessInfo, Shared, context};
use crate::wait::JoinHandle;

/// A cloneable, `Send + Sync` reference to a [`Runtime`](crate::Runtime) that spawns onto
/// it from anywhere: a plain thread, a tokio task, another runtime.
///
/// ```
/// let rt = csp::Runtime::new().unwrap();
/// let handle = rt.handle();
/// let from_thread = std::thread::spawn(move || handle.spawn(async { 40 + 2 }))
///     .join()
///     .unwrap();
/// assert_eq!(rt.block_on(from_thread).unwrap(), 42);
/// ```
#[derive(Clone)]
pub struct Handle {
    pub(crate) shared: Arc<Shared>,
}

impl Handle {
    /// The handle of the runtime the current thread is in: one of its workers, inside
    /// its `block_on`, or on its blocking pool.
    ///
    /// # Panics
    /// Outside any csp runtime, with a message saying what to use instead.
    ///
    /// ```
    /// let rt = csp::Runtime::new().unwrap();
    /// rt.block_on(async {
    ///     let handle = csp::Handle::current();
    ///     handle.spawn(async {}).await.unwrap();
    /// });
    /// ```
    #[track_caller]
    pub fn current() -> Handle {
        Handle::try_current().unwrap_or_else(|| {
            panic!(
                "csp: Handle::current() called outside a csp runtime; call it from a csp \
                 process, inside Runtime::block_on or on a spawn_blocking thread, or use \
                 Handle::try_current(), or csp::spawn (which falls back to the default \
                 runtime), or keep a Handle from Runtime::handle()"
            )
        })
    }

    /// As [`current`](Self::current), but `None` outside a runtime.
    ///
    /// ```
    /// assert!(csp::Handle::try_current().is_none());
    /// ```
    pub fn try_current() -> Option<Handle> {
        context::current_handle()
    }

    /// The runtime a new timer binds to: the current one, or the default one outside any
    /// runtime (and while the current one shuts down); and the shard of its timers to
    /// arm in (`context::timer_home`).
    pub(crate) fn for_timer() -> (Handle, usize) {
        let (handle, shard) = context::timer_home();
        match handle {
            Some(handle) if !handle.shared.is_shutdown() => (handle, shard),
            _ => (super::default::handle(), shard),
        }
    }

    /// As [`for_timer`](Self::for_timer), for a sleep; `None` for a process's own sleep
    /// (`of_process` says the sleep is polled with a process's waker; asked only on a
    /// runtime that shuts down) polled on a worker of a runtime that shuts down: its
    /// runtime is about to drop it (every process polled there is: the shutdown's walk
    /// cancels it), its timer would never fire, and the default runtime must not be
    /// started for it. A worker's thread hooks, and other executors, are no such
    /// process: their sleeps move to the default runtime.
    pub(crate) fn for_sleep(of_process: impl FnOnce() -> bool) -> Option<(Handle, usize)> {
        let (handle, shard) = context::timer_home();
        match handle {
            Some(handle) if !handle.shared.is_shutdown() => Some((handle, shard)),
            Some(_) if context::worker_ptr().is_some() && context::is_polling() && of_process() => {
                None
            }
            _ => Some((super::default::handle(), shard)),
        }
    }

    /// Spawns a process onto this runtime and returns its [`JoinHandle`]. The process
    /// starts running at once, whether or not the handle is awaited; dropping the
    /// handle detaches it. On a runtime that is shutting down, the handle resolves to a
    /// cancelled [`JoinError`](crate::JoinError).
    ///
    /// ```
    /// let rt = csp::Runtime::new().unwrap();
    /// let h = rt.handle().spawn(async { 7 });
    /// assert_eq!(rt.block_on(h).unwrap(), 7);
    /// ```
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        Shared::spawn(&self.shared, future, Location::caller())
    }

    /// Runs the blocking closure `f` on this runtime's blocking pool, a set of threads
    /// apart from the workers, so it cannot stall processes. The pool grows on demand up
    /// to 512 threads; idle threads exit after 10 s.
    ///
    /// ```
    /// let rt = csp::Runtime::new().unwrap();
    /// let h = rt.handle().spawn_blocking(|| std::fs::metadata(".").is_ok());
    /// assert!(rt.block_on(h).unwrap());
    /// ```
    #[track_caller]
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        Shared::spawn_blocking(&self.shared, f, Location::caller())
    }

    /// The counters of the handle's runtime, as [`Runtime::metrics`](crate::Runtime::metrics)
    /// reads them: from inside a process (`#[csp::main]`), or for the default runtime,
    /// from anywhere.
    ///
    /// ```
    /// #[csp::main(worker_threads = 2)]
    /// async fn spawned_so_far() -> u64 {
    ///     csp::spawn(async {}).await.unwrap();
    ///     let metrics = csp::Handle::current().metrics();
    ///     assert_eq!(metrics.workers, 2);
    ///     metrics.spawned
    /// }
    ///
    /// assert_eq!(spawned_so_far(), 1);
    /// ```
    pub fn metrics(&self) -> Metrics {
        self.shared.metrics()
    }

    /// A dump of the live processes of the handle's runtime, sorted by id, as
    /// [`Runtime::processes`](crate::Runtime::processes) takes it.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (_tx, rx) = csp::channel::<u8>();
    /// let waiter = csp::spawn(async move { rx.recv().await });
    /// let handle = csp::Handle::current();
    /// while !handle.processes().iter().any(|p| p.id == waiter.id() && p.waiting_on.is_some()) {
    ///     csp::yield_now().await;
    /// }
    /// # });
    /// ```
    pub fn processes(&self) -> Vec<ProcessInfo> {
        self.shared.processes()
    }

    /// The address the runtime's console serves on ([`Builder::console`] or
    /// `CSP_CONSOLE`, feature `console`), or `None` if it serves none.
    ///
    /// [`Builder::console`]: crate::Builder::console
    ///
    /// ```
    /// let rt = csp::Runtime::builder().worker_threads(1).build().unwrap();
    /// # if std::env::var_os("CSP_CONSOLE").is_none() {
    /// assert_eq!(rt.handle().console_addr(), None);
    /// # }
    /// ```
    pub fn console_addr(&self) -> Option<std::net::SocketAddr> {
        self.shared.console_addr()
    }

    /// Who waits on what, as [Graphviz](https://graphviz.org) DOT text: the runtime's
    /// live processes and the channels they wait on as nodes, each wait an edge from the
    /// waiter, labelled with what it waits for.
    ///
    /// - a process is a box `p<id>` labelled with its id, state, spawn site and recorded
    ///   wait; a channel is an ellipse `c<id>` labelled with its id and kind, dashed and
    ///   marked `foreign` once something outside the runtime may use it;
    /// - a `recv`, `send` or `closed` edge runs from a process to a channel it waits on;
    ///   a process blocked in an `alt!` has one edge per channel, labelled `alt: recv`
    ///   or `alt: send`;
    /// - a `join` edge runs from a process to the process whose end it awaits;
    /// - a `foreign` edge runs to the `foreign` node from a sleeping process that csp's
    ///   channels do not account for: it waits on a timer, I/O or another executor, or a
    ///   waker of it is held outside csp;
    /// - the runtime's `block_on` futures are the node `main` (their channel waits show;
    ///   a `block_on` future's join shows in the graph a deadlock report writes).
    ///
    /// It is a snapshot of a running system: a process may be caught between two waits.
    /// Render it with `dot -Tsvg graph.dot -o graph.svg`. When deadlock detection fires
    /// and the environment variable `CSP_DEADLOCK_DOT` names a file, the same graph is
    /// written there and the report says so.
    ///
    /// ```
    /// let rt = csp::Runtime::new().unwrap();
    /// let (tx, rx) = csp::channel::<u32>();
    /// let receiver = rt.spawn(async move { rx.recv().await });
    /// // Wait until the receiver is asleep on its channel.
    /// while !rt.handle().wait_graph().contains(&format!("p{} -> c", receiver.id())) {
    ///     std::thread::yield_now();
    /// }
    /// let dot = rt.handle().wait_graph();
    /// assert!(dot.starts_with("digraph csp {"));
    /// assert!(dot.contains("[label=\"recv\"]"));
    /// tx.send_blocking(7).unwrap();
    /// assert_eq!(rt.block_on(receiver).unwrap(), Ok(7));
    /// ```
    pub fn wait_graph(&self) -> String {
        self.shared.wait_graph(None)
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("workers", &self.shared.workers())
            .field("shutting_down", &self.shared.is_shutdown())
            .finish()
    }
}
