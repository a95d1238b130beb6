//! The runtime: a work-stealing pool of worker threads that owns its processes.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::loom::thread::JoinHandle as ThreadHandle;
use crate::runtime::services::Service;
use crate::runtime::{Builder, Handle, Metrics, ProcessInfo, block_on, context};
use crate::tuning::MONITOR_EXIT_POLL;
use crate::wait::JoinHandle;

/// A work-stealing pool of worker threads that runs csp processes.
///
/// Dropping a `Runtime` cancels its remaining processes (their futures are dropped and
/// their `JoinHandle`s resolve to a cancelled [`JoinError`](crate::JoinError)) and joins its
/// worker threads; dropped on one of its own threads, it shuts down without joining.
/// Blocking-pool closures that are already running finish on their own threads.
///
/// ```
/// let rt = csp::Runtime::new().unwrap();
/// let sum = rt.block_on(async {
///     let handles: Vec<_> = (0..10u64).map(|i| csp::spawn(async move { i * i })).collect();
///     let mut sum = 0;
///     for h in handles {
///         sum += h.await.unwrap();
///     }
///     sum
/// });
/// assert_eq!(sum, 285);
/// ```
pub struct Runtime {
    pub(crate) handle: Handle,
    pub(crate) threads: Vec<ThreadHandle<()>>,
    /// The deadlock monitor's thread (`deadlock_monitor.rs`), if one runs.
    pub(crate) monitor: Option<std::thread::JoinHandle<()>>,
    /// Services started beside the workers (`services.rs`): stopped first at shutdown.
    pub(crate) services: Vec<Service>,
    /// The watchdog's thread (`sysmon.rs`), if one runs.
    pub(crate) sysmon: Option<std::thread::JoinHandle<()>>,
}

impl Runtime {
    /// A runtime with one worker per available core.
    ///
    /// # Errors
    /// If a worker thread could not be started.
    ///
    /// ```
    /// let rt = csp::Runtime::new().unwrap();
    /// assert!(rt.metrics().workers >= 1);
    /// ```
    pub fn new() -> std::io::Result<Runtime> {
        Builder::new().build()
    }

    /// A [`Builder`] to configure a runtime.
    ///
    /// ```
    /// let rt = csp::Runtime::builder().worker_threads(2).build().unwrap();
    /// # drop(rt);
    /// ```
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// Runs `future` to completion on the current thread, with this runtime as the
    /// current one, so `csp::spawn` inside it spawns here. The future need not be
    /// `Send`. The calling thread polls only this future; processes run on the workers.
    ///
    /// # Panics
    /// If called while csp is polling a process or another `block_on` future on this
    /// thread (`.await` the future instead).
    ///
    /// ```
    /// let rt = csp::Runtime::new().unwrap();
    /// let local = std::rc::Rc::new(5); // not Send: fine in block_on
    /// assert_eq!(rt.block_on(async { *local + 1 }), 6);
    /// ```
    #[track_caller]
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        block_on::block_on(&self.handle, future)
    }

    /// Spawns a process onto this runtime; see [`Handle::spawn`].
    ///
    /// ```
    /// let rt = csp::Runtime::new().unwrap();
    /// let handle = rt.spawn(async { "done" });
    /// assert_eq!(rt.block_on(handle).unwrap(), "done");
    /// ```
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(future)
    }

    /// A handle that spawns onto this runtime from anywhere.
    ///
    /// ```
    /// let rt = csp::Runtime::new().unwrap();
    /// let handle = rt.handle();
    /// let joined = std::thread::spawn(move || handle.spawn(async { 3 })).join().unwrap();
    /// assert_eq!(rt.block_on(joined).unwrap(), 3);
    /// ```
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// The runtime's counters.
    ///
    /// ```
    /// let rt = csp::Runtime::builder().worker_threads(2).build().unwrap();
    /// rt.block_on(async { csp::spawn(async {}).await.unwrap() });
    /// assert_eq!(rt.metrics().spawned, 1);
    /// ```
    pub fn metrics(&self) -> Metrics {
        self.handle.shared.metrics()
    }

    /// A dump of the live processes (spawned, not yet finished), sorted by id.
    ///
    /// ```
    /// let rt = csp::Runtime::new().unwrap();
    /// let handle = rt.spawn(std::future::pending::<()>());
    /// assert!(rt.processes().iter().any(|p| p.id == handle.id()));
    /// handle.abort();
    /// ```
    pub fn processes(&self) -> Vec<ProcessInfo> {
        self.handle.shared.processes()
    }

    /// The address the runtime's console serves on, as
    /// [`Handle::console_addr`](crate::Handle::console_addr).
    ///
    /// ```
    /// # #[cfg(feature = "console")] {
    /// let rt = csp::Runtime::builder().console("127.0.0.1:0").build().unwrap();
    /// let addr = rt.console_addr().unwrap();
    /// assert!(addr.ip().is_loopback() && addr.port() != 0);
    /// # }
    /// ```
    pub fn console_addr(&self) -> Option<std::net::SocketAddr> {
        self.handle.shared.console_addr()
    }

    /// Who waits on what, as Graphviz DOT text: see
    /// [`Handle::wait_graph`](crate::Handle::wait_graph).
    ///
    /// ```
    /// let rt = csp::Runtime::new().unwrap();
    /// assert!(rt.wait_graph().starts_with("digraph csp {"));
    /// ```
    pub fn wait_graph(&self) -> String {
        self.handle.shared.wait_graph(None)
    }

    /// Shuts the runtime down: cancels every process (dropping its future), then waits
    /// at most `timeout` for the worker threads to stop (and for running blocking-pool
    /// closures to finish). A worker stuck in a process that never returns from `poll`
    /// is left behind, detached, after the timeout, and so are the processes it holds
    /// for its next polls that the watchdog had not taken over yet (with one worker,
    /// or within 5 ms of the stuck poll's start): the one that poll woke last, the one
    /// that rested before it. Their futures are not dropped and their `JoinHandle`s do
    /// not resolve.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = csp::Runtime::new().unwrap();
    /// let handle = rt.spawn(std::future::pending::<()>());
    /// rt.shutdown_timeout(Duration::from_secs(1));
    /// assert!(csp::block_on(handle).unwrap_err().is_cancelled());
    /// ```
    pub fn shutdown_timeout(mut self, timeout: Duration) {
        self.shutdown(Some(Instant::now() + timeout));
    }

    fn shutdown(&mut self, deadline: Option<Instant>) {
        // The console first: it would show the shutdown half done.
        drop(std::mem::take(&mut self.services));
        let shared = &self.handle.shared;
        if !shared.begin_shutdown() {
            return;
        }
        shared.registry().close_and_shutdown_all();
        shared.wake_sysmon();
        // The watchdog returns at its next look, which the unpark above brings at once,
        // unless it is dropping a cancelled future it took over; the deadlock monitor,
        // unparked by `begin_shutdown`, at once, unless its hook is running.
        if let Some(sysmon) = self.sysmon.take() {
            join_until(sysmon, deadline);
        }
        if let Some(monitor) = self.monitor.take() {
            join_until(monitor, deadline);
        }
        let threads = std::mem::take(&mut self.threads);
        let on_own_worker = context::is_worker_thread_of(shared);
        if !on_own_worker && shared.wait_workers(deadline) {
            for thread in threads {
                // A worker never panics (processes' panics are caught); if one did, the
                // panic was already reported on its thread.
                let _ = thread.join();
            }
        }
        if let Some(deadline) = deadline {
            shared
                .blocking()
                .wait_exited(deadline, context::is_pool_thread_of(shared.id()));
        }
        shared.drain_injector();
    }
}

/// Joins `thread`, one of the runtime's own, waiting at most until `deadline`
/// (`shutdown_timeout`) and leaving it behind after, as a worker stuck in a poll is left;
/// not when it is the calling thread (a future's drop, or the deadlock hook, may own the
/// runtime).
fn join_until(thread: std::thread::JoinHandle<()>, deadline: Option<Instant>) {
    if thread.thread().id() == std::thread::current().id() {
        return;
    }
    if let Some(deadline) = deadline {
        while !thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(MONITOR_EXIT_POLL);
        }
    }
    if deadline.is_none() || thread.is_finished() {
        let _ = thread.join();
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.shutdown(None);
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("workers", &self.handle.shared.workers())
            .field("shutting_down", &self.handle.shared.is_shutdown())
            .finish()
    }
}
