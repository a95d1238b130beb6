//! Configuring and starting a runtime.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::loom::thread;
use crate::runtime::deadlock_monitor::{self, DeadlockHook};
use crate::runtime::hooks::ThreadHooks;
use crate::runtime::{Handle, Runtime, Shared, default, services, sysmon, worker};

/// Configures a [`Runtime`]: worker count, thread names, deadlock detection.
///
/// ```
/// let rt = csp::Runtime::builder()
///     .worker_threads(2)
///     .thread_name("my-pool")
///     .build()
///     .unwrap();
/// assert_eq!(rt.block_on(async { csp::spawn(async { 1 + 1 }).await.unwrap() }), 2);
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    worker_threads: Option<usize>,
    thread_name: String,
    deadlock_detection: bool,
    deadlock_grace: Duration,
    on_deadlock: Option<DeadlockHook>,
    hooks: ThreadHooks,
    console: Option<String>,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}

impl Builder {
    /// The defaults: one worker per available core, threads named `csp-worker-N`,
    /// deadlock detection on with a 1 s grace period.
    ///
    /// ```
    /// let rt = csp::Builder::new().build().unwrap();
    /// # drop(rt);
    /// ```
    pub fn new() -> Builder {
        Builder {
            worker_threads: None,
            thread_name: "csp-worker".to_owned(),
            deadlock_detection: true,
            deadlock_grace: Duration::from_secs(1),
            on_deadlock: None,
            hooks: ThreadHooks::default(),
            console: None,
        }
    }

    /// The number of worker threads; at least 1 ([`build`](Self::build) returns an
    /// error for 0). The thread that calls `block_on` is not a worker: it polls only
    /// the `block_on` future.
    ///
    /// ```
    /// let rt = csp::Runtime::builder().worker_threads(3).build().unwrap();
    /// assert_eq!(rt.metrics().workers, 3);
    /// assert!(csp::Runtime::builder().worker_threads(0).build().is_err());
    /// ```
    pub fn worker_threads(&mut self, n: usize) -> &mut Self {
        self.worker_threads = Some(n);
        self
    }

    /// The prefix of the worker threads' names: workers are `{name}-0`, `{name}-1`, …,
    /// blocking-pool threads `{name}-blocking-1`, ….
    ///
    /// ```
    /// let rt = csp::Runtime::builder().thread_name("pool").worker_threads(1).build().unwrap();
    /// let name = rt.block_on(async {
    ///     csp::spawn(async { std::thread::current().name().unwrap().to_owned() }).await.unwrap()
    /// });
    /// assert_eq!(name, "pool-0");
    /// ```
    pub fn thread_name(&mut self, name: impl Into<String>) -> &mut Self {
        self.thread_name = name.into();
        self
    }

    /// Turns deadlock detection on (the default) or off.
    ///
    /// With it on, `block_on` panics with a report (`csp: deadlock: all processes are
    /// asleep`, then each blocked process with its id, spawn location and what it waits
    /// on) once its future and every process of the runtime have been blocked on one
    /// another's channels, alts and joins for the [grace period](Self::deadlock_grace),
    /// with no timer armed, no blocking task alive, and nothing outside csp able to wake
    /// them (a channel used outside the runtime, a waker held by a foreign future). Off,
    /// a deadlocked program hangs.
    ///
    /// ```
    /// let rt = csp::Runtime::builder().deadlock_grace(std::time::Duration::from_millis(50)).build().unwrap();
    /// let report = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
    ///     rt.block_on(async {
    ///         let (_tx, rx) = csp::channel::<u8>();
    ///         rx.recv().await // nobody else can ever send
    ///     })
    /// }));
    /// assert!(report.is_err());
    ///
    /// let rt = csp::Runtime::builder().deadlock_detection(false).build().unwrap();
    /// # drop(rt);
    /// ```
    pub fn deadlock_detection(&mut self, on: bool) -> &mut Self {
        self.deadlock_detection = on;
        self
    }

    /// How long every process must have been blocked before a deadlock is reported
    /// (default 1 s; see [`deadlock_detection`](Self::deadlock_detection)).
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = csp::Runtime::builder().deadlock_grace(Duration::from_millis(200)).build().unwrap();
    /// # drop(rt);
    /// ```
    pub fn deadlock_grace(&mut self, d: Duration) -> &mut Self {
        self.deadlock_grace = d;
        self
    }

    /// Runs `f` on every thread the runtime starts, its workers and its blocking-pool
    /// threads, before the thread runs any work; the thread is already in the runtime
    /// ([`Handle::current`] works). Setting it again replaces the earlier hook.
    ///
    /// A panic in `f` is caught and reported on standard error, and the thread goes on
    /// as if `f` had returned: a hook cannot stop a worker or lose a process.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let started = Arc::new(AtomicUsize::new(0));
    /// let counter = started.clone();
    /// let rt = csp::Runtime::builder()
    ///     .worker_threads(2)
    ///     .on_thread_start(move || {
    ///         counter.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// rt.block_on(async { csp::spawn_blocking(|| ()).await.unwrap() });
    /// drop(rt);
    /// // Two workers and one blocking-pool thread.
    /// assert_eq!(started.load(Ordering::SeqCst), 3);
    /// ```
    ///
    /// The hooks put csp's threads inside another runtime's context, say tokio's, so that
    /// its sockets work inside csp processes (a thread-local keeps the guard, which the
    /// stop hook drops on the same thread):
    ///
    /// ```
    /// use std::cell::RefCell;
    ///
    /// thread_local! {
    ///     static TOKIO: RefCell<Option<tokio::runtime::EnterGuard<'static>>> =
    ///         const { RefCell::new(None) };
    /// }
    ///
    /// let tokio_rt = tokio::runtime::Runtime::new().unwrap();
    /// // 'static, so that the guards borrowing it may live in a thread-local: one handle,
    /// // kept in a static.
    /// static TOKIO_HANDLE: std::sync::OnceLock<tokio::runtime::Handle> =
    ///     std::sync::OnceLock::new();
    /// let tokio: &'static tokio::runtime::Handle =
    ///     TOKIO_HANDLE.get_or_init(|| tokio_rt.handle().clone());
    /// let rt = csp::Runtime::builder()
    ///     .on_thread_start(move || TOKIO.with(|g| *g.borrow_mut() = Some(tokio.enter())))
    ///     .on_thread_stop(|| drop(TOKIO.with(|g| g.borrow_mut().take())))
    ///     .build()
    ///     .unwrap();
    /// let port = rt.block_on(async {
    ///     csp::spawn(async {
    ///         let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    ///         listener.local_addr().unwrap().port()
    ///     })
    ///     .await
    ///     .unwrap()
    /// });
    /// assert_ne!(port, 0);
    /// // csp's threads drop their guards (at shutdown) before tokio's runtime goes.
    /// drop(rt);
    /// drop(tokio_rt);
    /// ```
    pub fn on_thread_start<F: Fn() + Send + Sync + 'static>(&mut self, f: F) -> &mut Self {
        self.hooks.start = Some(Arc::new(f));
        self
    }

    /// Reports deadlocks where no `block_on` is there to: calls `f` with the report
    /// (the text `block_on` panics with, less its line about the `block_on` future) when
    /// every process of the runtime has been blocked on the others for the
    /// [grace period](Self::deadlock_grace), and the runtime goes on. For the default
    /// runtime driven from tokio or a plain thread ([`build_default`](Self::build_default)),
    /// and for servers whose main thread does something else.
    ///
    /// The rule is `block_on`'s, so a report is never false: a process waiting on a
    /// timer, I/O, a foreign future, or a channel something outside the runtime has
    /// used (a plain thread, a tokio task) never counts as blocked; a channel end moved
    /// to such code counts from its first use there (call
    /// [`mark_foreign`](crate::Sender::mark_foreign) before moving it). While a
    /// `block_on` future runs, `block_on` does the detecting. A thread of the runtime
    /// wakes once per grace period to look; `f` runs on it, once per deadlock, and a
    /// panic in `f` is caught and reported on standard error. With
    /// [`deadlock_detection(false)`](Self::deadlock_detection), nothing runs.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    ///
    /// let (reports, reported) = mpsc::channel();
    /// let rt = csp::Runtime::builder()
    ///     .deadlock_grace(Duration::from_millis(50))
    ///     .on_deadlock(move |report| {
    ///         eprintln!("{report}"); // a log line, here, as well
    ///         let _ = reports.send(report.to_owned());
    ///     })
    ///     .build()
    ///     .unwrap();
    /// // Two processes, each waiting for the other; nobody calls block_on. (Channels
    /// // made in a process: made here, on a plain thread, they would be foreign.)
    /// rt.spawn(async {
    ///     let (to_a, from_b) = csp::channel::<u8>();
    ///     let (to_b, from_a) = csp::channel::<u8>();
    ///     csp::spawn(async move {
    ///         let _keep = to_b;
    ///         from_b.recv().await
    ///     });
    ///     csp::spawn(async move {
    ///         let _keep = to_a;
    ///         from_a.recv().await
    ///     });
    /// });
    /// let report = reported.recv_timeout(Duration::from_secs(10)).unwrap();
    /// assert!(report.starts_with("csp: deadlock: all processes are asleep"));
    /// ```
    pub fn on_deadlock<F: Fn(&str) + Send + Sync + 'static>(&mut self, f: F) -> &mut Self {
        self.on_deadlock = Some(DeadlockHook(Arc::new(f)));
        self
    }

    /// Puts every thread of the runtime, workers and blocking-pool threads, inside the
    /// context of the tokio runtime of `handle` (feature `tokio`), so that processes can
    /// use tokio's sockets, timers and `tokio::spawn`: what the
    /// [`on_thread_start`](Self::on_thread_start) recipe does, in one line. The context is
    /// entered before the start hook runs and left after the stop hook. The thread that
    /// calls [`Runtime::block_on`](crate::Runtime::block_on) is the caller's: a
    /// `block_on` future uses tokio only if its thread is in tokio's context already.
    ///
    /// Drop the csp runtime before the tokio runtime: tokio's I/O stops with its runtime.
    ///
    /// ```
    /// let tokio_rt = tokio::runtime::Runtime::new().unwrap();
    /// let rt = csp::Runtime::builder()
    ///     .enter_tokio(tokio_rt.handle().clone())
    ///     .build()
    ///     .unwrap();
    /// let slept = rt.block_on(async {
    ///     csp::spawn(async {
    ///         tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    ///         "slept on tokio's timer, in a csp process"
    ///     })
    ///     .await
    ///     .unwrap()
    /// });
    /// assert!(slept.starts_with("slept"));
    /// drop(rt);
    /// drop(tokio_rt);
    /// ```
    #[cfg(feature = "tokio")]
    pub fn enter_tokio(&mut self, handle: tokio::runtime::Handle) -> &mut Self {
        self.hooks.tokio = Some(handle);
        self
    }

    /// Runs `f` on every thread the runtime started, workers and blocking-pool threads,
    /// as the thread exits (after its last piece of work; still in the runtime). Setting
    /// it again replaces the earlier hook. A panic in `f` is caught and reported on
    /// standard error, as with [`on_thread_start`](Self::on_thread_start).
    ///
    /// Workers exit when the runtime shuts down, and [`Runtime::shutdown_timeout`] (or
    /// dropping the runtime) returns after theirs ran; a blocking-pool thread exits when
    /// it has been idle for a while, or at shutdown, where `shutdown_timeout` waits for
    /// it up to its timeout and a plain drop does not wait.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let stopped = Arc::new(AtomicUsize::new(0));
    /// let counter = stopped.clone();
    /// let rt = csp::Runtime::builder()
    ///     .worker_threads(3)
    ///     .on_thread_stop(move || {
    ///         counter.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .build()
    ///     .unwrap();
    /// drop(rt);
    /// assert_eq!(stopped.load(Ordering::SeqCst), 3);
    /// ```
    pub fn on_thread_stop<F: Fn() + Send + Sync + 'static>(&mut self, f: F) -> &mut Self {
        self.hooks.stop = Some(Arc::new(f));
        self
    }

    /// Starts the runtime's worker threads.
    ///
    /// # Errors
    /// `InvalidInput` if `worker_threads(0)` was set; the OS error if a thread could not
    /// be started.
    ///
    /// ```
    /// let err = csp::Runtime::builder().worker_threads(0).build().unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    /// ```
    pub fn build(&mut self) -> io::Result<Runtime> {
        let workers = match self.worker_threads {
            Some(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "csp: worker_threads(0): a runtime needs at least one worker thread; \
                     pass n >= 1, or leave it unset for one worker per core",
                ));
            }
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let deadlock_grace = self.deadlock_detection.then_some(self.deadlock_grace);
        let (shared, queues) = Shared::new(
            workers,
            self.thread_name.clone(),
            deadlock_grace,
            self.hooks.clone(),
        );
        let mut runtime = Runtime {
            handle: Handle {
                shared: shared.clone(),
            },
            threads: Vec::with_capacity(workers),
            monitor: None,
            services: Vec::new(),
            sysmon: None,
        };
        for (index, queue) in queues.into_iter().enumerate() {
            let shared = shared.clone();
            shared.worker_started();
            let started = thread::Builder::new()
                .name(format!("{}-{index}", self.thread_name))
                .spawn(move || worker::run_worker(shared, index, queue));
            match started {
                Ok(thread) => runtime.threads.push(thread),
                Err(err) => {
                    runtime.handle.shared.worker_exited();
                    // Dropping the runtime stops the workers already started.
                    return Err(err);
                }
            }
        }
        if let (Some(grace), Some(hook)) = (deadlock_grace, &self.on_deadlock) {
            let (shared, hook) = (shared.clone(), hook.clone());
            let monitor = std::thread::Builder::new()
                .name(format!("{}-deadlock", self.thread_name))
                .spawn(move || deadlock_monitor::run(shared, grace, hook))?;
            let _ = runtime.handle.shared.monitor.set(monitor.thread().clone());
            runtime.monitor = Some(monitor);
        }
        if workers >= 2 && crate::loom::asymmetric::available() {
            let shared = shared.clone();
            let sysmon = std::thread::Builder::new()
                .name(format!("{}-watchdog", self.thread_name))
                .spawn(move || sysmon::run(shared))?;
            runtime.sysmon = Some(sysmon);
        }
        #[cfg(feature = "console")]
        services::runtime_built(&runtime.handle.shared);
        match (&self.console, services::console_from_env()) {
            (Some(addr), _) => {
                let console = services::start_console(&runtime.handle, addr)?;
                runtime.services.push(console);
            }
            (None, Some(addr)) => match services::start_console(&runtime.handle, &addr) {
                Ok(console) => runtime.services.push(console),
                Err(err) => eprintln!("csp: CSP_CONSOLE={addr}: no console: {err}"),
            },
            (None, None) => {}
        }
        Ok(runtime)
    }

    /// Serves the console on `addr` (e.g. `"127.0.0.1:6669"`; port 0 picks a free one)
    /// once the runtime is built: a page, from a thread of its own, that shows the
    /// running program (its processes, the wait graph, plots of its counters, warnings),
    /// with `/api/processes` (JSON), `/api/graph.dot`, `/api/graph.svg` and `/metrics`
    /// (Prometheus). It prints the address it serves on to standard error, and stops
    /// when the runtime drops. The environment variable `CSP_CONSOLE=addr` turns it on
    /// for a program built with the feature without a change to its code; an address
    /// given here wins.
    ///
    /// The page shows program data (spawn sites, what each process waits on): serve it
    /// on a loopback address unless you mean to show it to your network. On a loopback
    /// address it answers only requests for a loopback host (`localhost` or a name under
    /// it, an address in `127.0.0.0/8`, `[::1]`; with or without the port, or no `Host`
    /// at all, which no browser sends), and refuses others with 403: a web page whose
    /// host name is pointed at `127.0.0.1` cannot read it through the visitor's browser.
    ///
    /// Needs the `console` feature; without it, [`build`](Self::build) fails with
    /// `Unsupported`, saying so. With it, `build` fails if `addr` cannot be bound
    /// (while a console asked for by `CSP_CONSOLE` that cannot bind only says so on
    /// standard error, since every runtime of the program reads the variable).
    ///
    /// ```
    /// let rt = csp::Runtime::builder().console("127.0.0.1:0").build();
    /// # #[cfg(feature = "console")]
    /// # { drop(rt.unwrap()); }
    /// # #[cfg(not(feature = "console"))]
    /// # assert_eq!(rt.unwrap_err().kind(), std::io::ErrorKind::Unsupported);
    /// ```
    pub fn console(&mut self, addr: impl Into<String>) -> &mut Self {
        self.console = Some(addr.into());
        self
    }

    /// Starts the process-wide default runtime (the one the free [`spawn`](crate::spawn)
    /// and [`block_on`](crate::block_on) use outside any runtime) with this
    /// configuration, instead of the defaults it would start with on first use.
    ///
    /// # Errors
    /// If the default runtime has already started (`AlreadyExists`: call this before
    /// anything uses it), or as [`build`](Self::build).
    ///
    /// ```
    /// let handle = csp::Runtime::builder().worker_threads(2).build_default().unwrap();
    /// assert_eq!(csp::block_on(async { csp::spawn(async { 5 }).await.unwrap() }), 5);
    /// // Once started, it cannot be configured again.
    /// assert!(csp::Runtime::builder().build_default().is_err());
    /// # drop(handle);
    /// ```
    pub fn build_default(&mut self) -> io::Result<Handle> {
        if default::is_started() {
            return Err(default::already_started());
        }
        default::install(self.build()?)
    }
}
