//! The state a runtime's workers, handles and processes share.

use std::future::Future;
use std::panic::Location;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::id::next_process_id;
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::runtime::blocking::{BlockingPool, BlockingTask};
#[cfg(feature = "io")]
use crate::runtime::driver::Driver;
use crate::runtime::held::Held;
use crate::runtime::hooks::ThreadHooks;
use crate::runtime::idle::Idle;
use crate::runtime::latch::Latch;
use crate::runtime::metrics::{self, Metrics, WorkerCounters, bump};
use crate::runtime::queue::{Injector, LocalQueue, Steal, Stealer};
use crate::runtime::queue_age::QueueAges;
use crate::runtime::registry::Registry;
use crate::runtime::timer::Timers;
use crate::runtime::worker::Local;
use crate::runtime::{Handle, ProcessInfo, ProcessState, context};
use crate::task::state::Shutdown;
use crate::task::{self, NewTask, Notified, RawTask, Schedule, Scheduler};
use crate::tuning::DISPLACED_BATCH;
use crate::wait::JoinHandle;
use crate::wait::WaitOn;

/// One take-over, as the console shows it: which worker's poll held which processes.
#[cfg(feature = "console")]
#[derive(Debug, Clone)]
pub(crate) struct TakeOver {
    pub(crate) worker: usize,
    /// The worker's poll count during the poll that held them: which poll it was.
    pub(crate) poll: u64,
    /// The ids of the processes moved off the worker.
    pub(crate) processes: Vec<u64>,
}

/// What a runtime's threads share.
///
/// Most fields are read-mostly once built, and sit together. A field that threads write
/// while the runtime is busy has its cache lines to itself (`CachePadded`), so that its
/// writes do not take the read-mostly lines away from every other core: `idle`'s counts
/// (each worker that searches or parks), `remote_spawned` (each spawn from outside),
/// `timers` (each timer armed) and `io` (each turn of the driver). The injector and the
/// per-worker arrays pad themselves. Unpadded, the compiler put `remote_spawned` on the
/// line of `idle`'s counts and the registry's pointer on the driver's last line. On a
/// 16-core machine, in the release profile, the padding took the time a plain thread
/// spends spawning 100,000 processes (`spawn_remote`) from 74-78 ms to 66 ms at 4
/// workers, and from 64-68 ms to 55 ms at 16; the LTO build's ratio to tokio moved less
/// (docs/performance.md, 2026-11-26).
pub(crate) struct Shared {
    /// Unique among the runtimes of this process, never 0.
    id: u64,
    injector: Injector,
    stealers: Box<[Stealer]>,
    /// How long each worker's queue has held a batch (thieves wait a grace).
    queue_ages: QueueAges,
    counters: Box<[CachePadded<WorkerCounters>]>,
    /// Each worker's held processes and the gate to them (`held.rs`).
    held: Box<[CachePadded<Held>]>,
    /// Times the watchdog took over a long poll's held processes (`sysmon.rs`).
    pub(super) takeovers: AtomicU64,
    /// The latest take-overs, for the console's long-poll warnings (`sysmon.rs`).
    #[cfg(feature = "console")]
    pub(crate) takeover_log: std::sync::Mutex<std::collections::VecDeque<TakeOver>>,
    /// The watchdog's thread, if one runs (`sysmon.rs`).
    pub(super) sysmon: std::sync::OnceLock<std::thread::Thread>,
    /// The watchdog sleeps until a worker wakes up (`sysmon_sleep`).
    sysmon_asleep: AtomicBool,
    /// Spawns from outside this runtime's workers.
    remote_spawned: CachePadded<AtomicU64>,
    idle: CachePadded<Idle>,
    registry: Registry,
    blocking: BlockingPool,
    shutdown: AtomicBool,
    workers_running: Latch,
    timers: CachePadded<Timers>,
    /// How long everything must stay blocked before `block_on` reports a deadlock
    /// (`None`: detection off).
    pub(super) deadlock_grace: Option<Duration>,
    /// `block_on` futures running now (detection needs exactly one: it cannot see the
    /// others).
    pub(super) main_futures: AtomicUsize,
    /// Run by each worker and blocking-pool thread as it starts and as it exits.
    hooks: ThreadHooks,
    /// The deadlock monitor's thread, unparked at shutdown (`deadlock_monitor.rs`).
    pub(super) monitor: std::sync::OnceLock<std::thread::Thread>,
    /// The address the console serves on, once it does (`services.rs`).
    console_addr: std::sync::OnceLock<std::net::SocketAddr>,
    /// The I/O driver, made when the first source registers: a runtime that never
    /// touches a socket keeps no poll, no file descriptor for it.
    #[cfg(feature = "io")]
    io: CachePadded<std::sync::OnceLock<Driver>>,
}

impl Scheduler for Shared {
    type JoinWaiter = crate::wait::join::JoinHooks;

    #[inline(always)]
    fn schedule(this: &Arc<Shared>, entry: Notified, how: Schedule) {
        Shared::schedule(this, entry, how);
    }

    #[inline(always)]
    fn wake(this: &Arc<Shared>, task: RawTask) {
        Shared::wake(this, task);
    }

    #[inline(always)]
    fn wake_by_ref(this: &Arc<Shared>, task: RawTask) {
        Shared::wake_by_ref(this, task);
    }

    #[inline]
    fn release(&self, task: RawTask) -> bool {
        self.registry.remove(task)
    }

    fn id(&self) -> u64 {
        self.id
    }

    #[inline]
    fn blank_wait(&self) -> u64 {
        crate::wait::record::blank_wait(self.id)
    }
}

impl Shared {
    /// A runtime's shared state and its workers' queues (threads are started by the
    /// caller, so loom models can drive workers by hand).
    pub(crate) fn new(
        workers: usize,
        thread_name: String,
        deadlock_grace: Option<Duration>,
        hooks: ThreadHooks,
    ) -> (Arc<Shared>, Vec<LocalQueue>) {
        let (queues, stealers): (Vec<_>, Vec<_>) = (0..workers).map(|_| LocalQueue::new()).unzip();
        // Std's atomic, not the facade's: a process-wide counter outside every model.
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let shared = Arc::new(Shared {
            // Relaxed: only uniqueness matters.
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            injector: Injector::default(),
            stealers: stealers.into_boxed_slice(),
            queue_ages: QueueAges::new(workers),
            counters: (0..workers).map(|_| CachePadded::default()).collect(),
            held: (0..workers)
                .map(|_| CachePadded::new(Held::new(DISPLACED_BATCH)))
                .collect(),
            takeovers: AtomicU64::new(0),
            #[cfg(feature = "console")]
            takeover_log: std::sync::Mutex::new(std::collections::VecDeque::new()),
            sysmon: std::sync::OnceLock::new(),
            sysmon_asleep: AtomicBool::new(false),
            remote_spawned: CachePadded::new(AtomicU64::new(0)),
            idle: CachePadded::new(Idle::new(workers)),
            registry: Registry::new(workers),
            blocking: BlockingPool::new(thread_name),
            shutdown: AtomicBool::new(false),
            workers_running: Latch::new(0),
            timers: CachePadded::new(Timers::new(workers)),
            deadlock_grace,
            main_futures: AtomicUsize::new(0),
            hooks,
            monitor: std::sync::OnceLock::new(),
            console_addr: std::sync::OnceLock::new(),
            #[cfg(feature = "io")]
            io: CachePadded::new(std::sync::OnceLock::new()),
        });
        (shared, queues)
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn workers(&self) -> usize {
        self.stealers.len()
    }

    pub(crate) fn idle(&self) -> &Idle {
        &self.idle
    }

    pub(crate) fn injector(&self) -> &Injector {
        &self.injector
    }

    pub(crate) fn stealers(&self) -> &[Stealer] {
        &self.stealers
    }

    pub(crate) fn queue_ages(&self) -> &QueueAges {
        &self.queue_ages
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    pub(crate) fn blocking(&self) -> &BlockingPool {
        &self.blocking
    }

    pub(crate) fn hooks(&self) -> &ThreadHooks {
        &self.hooks
    }

    pub(crate) fn timers(&self) -> &Timers {
        &self.timers
    }

    /// The I/O driver, if a source has registered.
    #[cfg(feature = "io")]
    #[inline]
    pub(crate) fn io(&self) -> Option<&Driver> {
        self.io.get()
    }

    /// The I/O driver, made now if no source has registered yet.
    #[cfg(feature = "io")]
    #[cfg_attr(all(loom, not(test)), allow(dead_code))] // the sockets are left out
    pub(crate) fn io_driver(&self) -> std::io::Result<&Driver> {
        if let Some(driver) = self.io.get() {
            return Ok(driver);
        }
        let made = Driver::new()?;
        let mut fresh = false;
        let driver = self.io.get_or_init(|| {
            fresh = true;
            made
        });
        if fresh {
            // SeqCst, with the fence in `begin_shutdown`: either that sees this driver
            // and shuts it down, or this sees the shutdown.
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            if self.is_shutdown() {
                driver.shut_down();
            }
            // Every worker may be asleep outside it: one wakes, and next parks in it.
            self.idle.notify_work();
        }
        Ok(driver)
    }

    pub(crate) fn counters(&self, worker: usize) -> &WorkerCounters {
        &self.counters[worker]
    }

    /// Worker `worker`'s held processes (`held.rs`).
    pub(crate) fn held(&self, worker: usize) -> &Held {
        &self.held[worker]
    }

    /// The watchdog, finding every worker asleep, sleeps until one wakes up
    /// ([`worker_awake`](Self::worker_awake)) or the runtime shuts down.
    pub(crate) fn sysmon_sleep(&self) {
        // SeqCst, here and in the load below, against `worker_awake`'s: either this
        // sees the worker awake, or that sees this asleep (and unparks it; an unpark
        // before the park is kept by the thread's token).
        self.sysmon_asleep.store(true, Ordering::SeqCst);
        if self.idle.all_asleep() && !self.is_shutdown() {
            std::thread::park();
        }
        self.sysmon_asleep.store(false, Ordering::SeqCst);
    }

    /// A worker woke up from a park: the watchdog, if it sleeps, looks again.
    #[inline]
    pub(crate) fn worker_awake(&self) {
        // SeqCst: see `sysmon_sleep`. After `Idle::finish_park`'s SeqCst decrement.
        if self.sysmon_asleep.load(Ordering::SeqCst) {
            self.wake_sysmon();
        }
    }

    /// Unparks the watchdog's thread (asleep, or at shutdown).
    #[cold]
    pub(crate) fn wake_sysmon(&self) {
        if let Some(sysmon) = self.sysmon.get() {
            sysmon.unpark();
        }
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        // Acquire: a worker that sees shutdown also sees everything done before it.
        self.shutdown.load(Ordering::Acquire)
    }

    /// True if any run queue holds work (the last look before a worker parks).
    pub(crate) fn has_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }

    /// Puts a process on a run queue: this worker's, if the caller is one of this
    /// runtime's workers, else the injector.
    ///
    /// Takes the `Arc`: once a remote entry is pushed, the caller may hold nothing that
    /// keeps the runtime alive (a wake's reference became the entry's, which a shutdown
    /// may drop at once), so the remote path holds its own reference while it finishes.
    /// A worker's own `Local` keeps its runtime alive, so the local path takes none.
    #[inline(always)]
    pub(crate) fn schedule(this: &Arc<Shared>, entry: Notified, how: Schedule) {
        // Not `context::with_worker`: the compiler leaves that closure out of line, and
        // with it the constant `how` of the wake path (raw.rs's vtable).
        if let Some(local) = this.own_worker() {
            local.schedule(entry, how);
            return;
        }
        // The reference is taken here, so that `this` itself (the process's, lent) can
        // stay in a register rather than be passed by address.
        Shared::schedule_remote(Arc::clone(this), entry);
    }

    /// Wakes `task`, consuming a reference the caller gives up: a process polled on one
    /// of this runtime's workers hands it to that worker's slot (`Running` already,
    /// `task/state.rs`; the worker's resting process with no atomic operation at all);
    /// any other waker queues it ([`schedule`](Self::schedule)).
    #[inline(always)]
    pub(crate) fn wake(this: &Arc<Shared>, task: RawTask) {
        let Some(local) = this.polling_worker() else {
            task.wake_by_val();
            return;
        };
        local.wake_by_val(task);
    }

    /// Wakes `task`, keeping the caller's reference: the resting process of the worker
    /// whose poll wakes it goes to that worker's handoff slot; any other is woken as
    /// [`RawTask::wake_by_ref`] does.
    #[inline(always)]
    pub(crate) fn wake_by_ref(this: &Arc<Shared>, task: RawTask) {
        match this.polling_worker() {
            Some(local) => local.wake_by_ref(task),
            None => task.wake_by_ref(),
        }
    }

    /// This thread's worker, if it is one of this runtime's.
    #[inline(always)]
    fn own_worker(&self) -> Option<&Local> {
        let local = context::worker_ptr()?;
        // SAFETY: this thread's worker, on its stack for as long as its loop runs,
        // which outlasts every caller here (a wake, schedule or spawn made on this
        // thread, inside that loop); only this thread uses it.
        let local = unsafe { local.as_ref() };
        local.belongs_to(self).then_some(local)
    }

    /// This thread's worker, if it is one of this runtime's and polls a process: the
    /// one whose slots a wake from here may fill.
    #[inline(always)]
    fn polling_worker(&self) -> Option<&Local> {
        let local = self.own_worker()?;
        context::is_polling().then_some(local)
    }

    /// [`schedule`](Self::schedule) from a thread that is not one of this runtime's
    /// workers: to the injector.
    #[inline(never)]
    fn schedule_remote(this: Arc<Shared>, entry: Notified) {
        this.push_remote(entry);
    }

    pub(crate) fn push_remote(&self, entry: Notified) {
        self.injector.push(entry);
        // Includes a SeqCst fence, which orders the push before the shutdown check.
        self.idle.notify_work();
        // SeqCst: with the fence above, and `begin_shutdown`'s SeqCst store before its
        // drain, either the drain sees this entry or this load sees the shutdown.
        if self.shutdown.load(Ordering::SeqCst) {
            self.drain_injector();
        }
    }

    /// Spawns a process.
    pub(crate) fn spawn<F>(
        this: &Arc<Self>,
        future: F,
        spawned_at: &'static Location<'static>,
    ) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let task = task::allocate(future, this.clone(), next_process_id(), spawned_at, false);
        if !this.registry.insert(task.registry) {
            return Self::reject(task);
        }
        let NewTask { entry, join, .. } = task;
        if let Some(local) = this.own_worker() {
            bump(&local.counters().spawned);
            local.schedule(entry, Schedule::Spawn);
        } else {
            // Relaxed: a counter, read only for metrics.
            this.remote_spawned.fetch_add(1, Ordering::Relaxed);
            this.push_remote(entry);
        }
        // SAFETY: the handle's reference, of a process whose output is `F::Output`.
        unsafe { JoinHandle::from_raw(join) }
    }

    /// Runs `f` on the blocking pool.
    pub(crate) fn spawn_blocking<F, R>(
        this: &Arc<Self>,
        f: F,
        spawned_at: &'static Location<'static>,
    ) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let task = task::allocate(
            BlockingTask::new(f),
            this.clone(),
            next_process_id(),
            spawned_at,
            true,
        );
        if !this.registry.insert(task.registry) {
            return Self::reject(task);
        }
        let handle = Handle {
            shared: this.clone(),
        };
        // SAFETY: the handle's reference, of a task whose output is `R`.
        let join = unsafe { JoinHandle::from_raw(task.join) };
        if let Err(err) = this.blocking.submit(task.entry, &handle) {
            // The task was cancelled, its closure dropped: the handle goes with the panic.
            drop(join);
            panic!("csp: could not start a blocking-pool thread: {err}");
        }
        join
    }

    /// A spawn onto a runtime that is shutting down: cancelled at once.
    fn reject<T>(task: NewTask) -> JoinHandle<T> {
        let NewTask {
            registry,
            entry,
            join,
        } = task;
        // Never linked nor polled: the transition gives this caller the future.
        let outcome = registry.transition_to_shutdown();
        debug_assert_eq!(outcome, Shutdown::Cancel);
        // SAFETY: the registry entry's reference, which `insert` did not take, and its
        // transition.
        unsafe { registry.finish_shutdown(outcome) };
        drop(entry);
        // SAFETY: the handle's reference, of a process whose output is `T` (the caller's).
        unsafe { JoinHandle::from_raw(join) }
    }

    /// Starts shutting down: no new processes, workers and pool threads told to exit.
    /// False if shutdown had already begun.
    pub(crate) fn begin_shutdown(&self) -> bool {
        // SeqCst: see `push_remote`.
        if self.shutdown.swap(true, Ordering::SeqCst) {
            return false;
        }
        self.idle.notify_all();
        self.blocking.shutdown();
        self.timers.shutdown();
        if let Some(monitor) = self.monitor.get() {
            monitor.unpark();
        }
        #[cfg(feature = "io")]
        {
            // SeqCst: see `io_driver`.
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            if let Some(driver) = self.io.get() {
                driver.shut_down();
            }
        }
        true
    }

    /// Drops every entry in the injector (at shutdown; the processes are cancelled
    /// through the registry).
    pub(crate) fn drain_injector(&self) {
        loop {
            match self.injector.steal() {
                Steal::Success(entry) => entry.discard(),
                Steal::Empty => return,
                Steal::Retry => crate::loom::spin_loop(),
            }
        }
    }

    pub(crate) fn worker_started(&self) {
        self.workers_running.add(1);
    }

    pub(crate) fn worker_exited(&self) {
        self.workers_running.count_down();
    }

    /// Waits for every worker thread to leave its loop, until `deadline` if given.
    pub(crate) fn wait_workers(&self, deadline: Option<std::time::Instant>) -> bool {
        self.workers_running.wait(deadline)
    }

    /// Records the address the console serves on (once).
    #[cfg_attr(not(feature = "console"), allow(dead_code))]
    pub(crate) fn set_console_addr(&self, addr: std::net::SocketAddr) {
        let _ = self.console_addr.set(addr);
    }

    /// The address the console serves on, if it does.
    pub(crate) fn console_addr(&self) -> Option<std::net::SocketAddr> {
        self.console_addr.get().copied()
    }

    pub(crate) fn metrics(&self) -> Metrics {
        let mut m = Metrics {
            workers: self.workers(),
            processes_alive: self.registry.processes(),
            // Relaxed: a counter, read only for metrics.
            spawned: self.remote_spawned.load(Ordering::Relaxed),
            timers_armed: self.timers.len() as u64,
            // Relaxed: a counter, read only for metrics.
            takeovers: self.takeovers.load(Ordering::Relaxed),
            ..Metrics::default()
        };
        metrics::sum_into(&mut m, &self.counters);
        m.polls = self.held.iter().map(|held| held.polls()).sum();
        m
    }

    pub(crate) fn processes(&self) -> Vec<ProcessInfo> {
        let mut out = Vec::new();
        self.registry.for_each(|raw| {
            let state = raw.state().load();
            if state.is_blocking() || state.is_complete() {
                return;
            }
            let header = raw.header();
            let state = state.process_state();
            // Relaxed: the wait word is a hint for the dump; a stale one is at most one
            // poll old.
            let waiting_on = match state {
                ProcessState::Sleeping => {
                    WaitOn::decode(header.wait.load(Ordering::Relaxed)).map(|w| w.to_string())
                }
                _ => None,
            };
            out.push(ProcessInfo {
                id: header.id,
                state,
                spawned_at: header.spawned_at,
                waiting_on,
                group: None,
            });
        });
        out.sort_by_key(|p| p.id);
        let groups = crate::runtime::groups::of(out.iter().map(|p| p.id));
        for p in &mut out {
            p.group = groups.get(&p.id).map(|group| group.id);
        }
        out
    }
}
