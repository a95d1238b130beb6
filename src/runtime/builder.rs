//! Configuring and starting a runtime.

use std::io;
use std::time::Duration;

use crate::loom::thread;
use crate::runtime::{Handle, Runtime, Shared, default, worker};

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
        let (shared, queues) = Shared::new(workers, self.thread_name.clone(), deadlock_grace);
        let mut runtime = Runtime {
            handle: Handle {
                shared: shared.clone(),
            },
            threads: Vec::with_capacity(workers),
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
        Ok(runtime)
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
