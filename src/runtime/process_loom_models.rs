//! loom models of a process's state word (`task/state.rs`), driven through the real
//! vtable and a real runtime's shared state: `Shared::spawn`
//! allocates the process, `Notified::run` is the worker's poll step, and the wakes, aborts
//! and drops go through the real `Waker`, `JoinHandle` and reference count.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release --lib loom`.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use loom::future::block_on;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

use crate::loom::sync::Mutex;
use crate::runtime::Shared;
use crate::runtime::queue::Steal;
use crate::task::JoinError;
use crate::wait::JoinHandle;
use crate::wait::claim::Owner;

/// A future that counts its polls and drops, keeps its latest waker where a test thread
/// can take it, and completes on the poll numbered `ready_at` (1-based).
struct Probe {
    polls: Arc<AtomicUsize>,
    drops: Arc<AtomicUsize>,
    waker: Arc<Mutex<Option<Waker>>>,
    ready_at: usize,
}

/// A process future's polls and drops, and the waker it kept (shared with the future,
/// for a model to read and take).
#[derive(Clone)]
pub(crate) struct Counters {
    pub(crate) polls: Arc<AtomicUsize>,
    pub(crate) drops: Arc<AtomicUsize>,
    pub(crate) waker: Arc<Mutex<Option<Waker>>>,
}

impl Counters {
    pub(crate) fn new() -> Counters {
        Counters {
            polls: Arc::new(AtomicUsize::new(0)),
            drops: Arc::new(AtomicUsize::new(0)),
            waker: Arc::new(Mutex::new(None)),
        }
    }

    fn probe(&self, ready_at: usize) -> Probe {
        Probe {
            polls: self.polls.clone(),
            drops: self.drops.clone(),
            waker: self.waker.clone(),
            ready_at,
        }
    }

    pub(crate) fn polls(&self) -> usize {
        self.polls.load(Ordering::SeqCst)
    }

    pub(crate) fn drops(&self) -> usize {
        self.drops.load(Ordering::SeqCst)
    }

    pub(crate) fn take_waker(&self) -> Option<Waker> {
        self.waker.lock().take()
    }
}

impl Future for Probe {
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        let n = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
        *self.waker.lock() = Some(cx.waker().clone());
        if n >= self.ready_at {
            Poll::Ready(n)
        } else {
            Poll::Pending
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn new_runtime() -> Arc<Shared> {
    Shared::new(1, "loom".to_owned(), None, Default::default()).0
}

/// Runs every entry in the injector, as a worker would; returns how many ran.
fn run_queued(shared: &Shared) -> usize {
    let mut ran = 0;
    loop {
        match shared.injector().steal() {
            Steal::Success(entry) => {
                entry.run();
                ran += 1;
            }
            Steal::Empty => return ran,
            Steal::Retry => thread::yield_now(),
        }
    }
}

/// Spawns a probe and runs its first poll, leaving it asleep with its waker stored.
fn spawn_asleep(shared: &Arc<Shared>, counters: &Counters, ready_at: usize) -> JoinHandle<usize> {
    let join = Shared::spawn(
        &shared,
        counters.probe(ready_at),
        std::panic::Location::caller(),
    );
    assert_eq!(run_queued(shared), 1);
    assert_eq!(counters.polls(), 1);
    join
}

fn shutdown(shared: &Arc<Shared>) {
    assert!(shared.begin_shutdown());
    shared.registry().close_and_shutdown_all();
    shared.drain_injector();
}

/// Spawns `future` (counting in `counters`, complete on its second poll) and runs its
/// first poll while another thread wakes it as soon as `wake` finds what to wake it by
/// (and says true): the process is polled exactly once more, and completes.
fn wake_racing_first_poll(
    future: impl Future<Output = usize> + Send + 'static,
    counters: &Counters,
    wake: impl Fn() -> bool + Send + 'static,
) {
    let shared = new_runtime();
    let join = Shared::spawn(&shared, future, std::panic::Location::caller());

    let waker_thread = thread::spawn(move || {
        while !wake() {
            thread::yield_now();
        }
    });
    run_queued(&shared);
    waker_thread.join().unwrap();
    run_queued(&shared);

    assert_eq!(counters.polls(), 2, "exactly one poll per wake, none lost");
    assert_eq!(block_on(join).unwrap(), 2);
    assert_eq!(counters.drops(), 1);
    shutdown(&shared);
}

/// A wake from another thread racing the poll that registered the waker: whether it
/// lands while Running (→ Yielding, requeued by the poller) or after (→ Queued by the
/// waker), the process is polled exactly once more.
#[test]
fn loom_wake_racing_poll() {
    loom::model(|| {
        let counters = Counters::new();
        let taker = counters.clone();
        wake_racing_first_poll(counters.probe(2), &counters, move || {
            taker.take_waker().map(Waker::wake).is_some()
        });
    });
}

/// A wake racing the poll that completes the process: the wake does nothing (or marks a
/// Yielding that completion overrides); there is one poll and the output is delivered.
#[test]
fn loom_wake_racing_completion() {
    loom::model(|| {
        let shared = new_runtime();
        let counters = Counters::new();
        let join = Shared::spawn(&shared, counters.probe(1), std::panic::Location::caller());

        let waker_thread = {
            let counters = counters.clone();
            thread::spawn(move || {
                loop {
                    if let Some(waker) = counters.take_waker() {
                        waker.wake_by_ref();
                        drop(waker);
                        return;
                    }
                    thread::yield_now();
                }
            })
        };
        run_queued(&shared);
        waker_thread.join().unwrap();
        assert_eq!(
            run_queued(&shared),
            0,
            "a completed process is never queued again"
        );

        assert_eq!(counters.polls(), 1);
        assert_eq!(counters.drops(), 1);
        assert_eq!(block_on(join).unwrap(), 1);
        shutdown(&shared);
    });
}

/// An abort racing a wake of a sleeping process, with a worker running the queue
/// meanwhile: the future is dropped exactly once, and the output is `Ok` exactly when
/// the process got its second poll before the abort took effect.
#[test]
fn loom_wake_racing_abort() {
    loom::model(|| {
        let shared = new_runtime();
        let counters = Counters::new();
        let join = Arc::new(spawn_asleep(&shared, &counters, 2));
        let waker = counters
            .take_waker()
            .expect("the first poll stored a waker");

        let aborter = {
            let join = join.clone();
            thread::spawn(move || join.abort())
        };
        let worker = {
            let shared = shared.clone();
            thread::spawn(move || {
                waker.wake();
                run_queued(&shared);
            })
        };
        aborter.join().unwrap();
        worker.join().unwrap();
        run_queued(&shared);

        let join = Arc::try_unwrap(join).expect("both threads are done with the handle");
        let result = block_on(join);
        assert_eq!(counters.drops(), 1, "the future is dropped exactly once");
        match result {
            Ok(n) => assert_eq!((n, counters.polls()), (2, 2)),
            Err(err) => {
                assert!(err.is_cancelled());
                assert_eq!(counters.polls(), 1, "no poll after the abort");
            }
        }
        shutdown(&shared);
    });
}

/// The `JoinHandle` registering its waker races the completion of the process: the
/// handle is always woken (a lost wake would leave `block_on` parked: loom reports it).
#[test]
fn loom_join_waker_racing_completion() {
    loom::model(|| {
        let shared = new_runtime();
        let counters = Counters::new();
        let join = Shared::spawn(&shared, counters.probe(1), std::panic::Location::caller());

        let worker = {
            let shared = shared.clone();
            thread::spawn(move || {
                while run_queued(&shared) == 0 {
                    thread::yield_now();
                }
            })
        };
        assert_eq!(block_on(join).unwrap(), 1);
        worker.join().unwrap();
        assert_eq!(counters.drops(), 1);
        shutdown(&shared);
    });
}

/// The last reference may go with the `JoinHandle`, with a waker, or with the worker
/// completing the process: whichever is last frees the process, exactly once (loom
/// reports a double free of the runtime reference it holds, or a leak).
#[test]
fn loom_last_reference_drop() {
    loom::model(|| {
        let shared = new_runtime();
        let counters = Counters::new();
        let join = spawn_asleep(&shared, &counters, 2);
        let waker = counters
            .take_waker()
            .expect("the first poll stored a waker");
        let extra = waker.clone();

        let dropper = thread::spawn(move || drop(join));
        let worker = {
            let shared = shared.clone();
            thread::spawn(move || {
                waker.wake();
                run_queued(&shared);
            })
        };
        drop(extra);
        dropper.join().unwrap();
        worker.join().unwrap();
        run_queued(&shared);

        assert_eq!(counters.polls(), 2);
        assert_eq!(counters.drops(), 1);
        drop(counters.take_waker());
        shutdown(&shared);
    });
}

/// Runtime shutdown racing a wake of a sleeping process: the future is dropped exactly
/// once, by shutdown or by a cancelled poll, and the handle resolves to cancelled.
#[test]
fn loom_shutdown_racing_wake() {
    loom::model(|| {
        let shared = new_runtime();
        let counters = Counters::new();
        let join = spawn_asleep(&shared, &counters, 3);
        let waker = counters
            .take_waker()
            .expect("the first poll stored a waker");

        let waker_thread = thread::spawn(move || waker.wake());
        shutdown(&shared);
        waker_thread.join().unwrap();
        shared.drain_injector();

        assert_eq!(counters.drops(), 1);
        assert!(block_on(join).unwrap_err().is_cancelled());
    });
}

/// A future that, on each poll before the one numbered `ready_at`, takes an internal
/// reference to its own process the way a channel wait does (`Owner::internal`, which
/// takes the poll's lent reference: `task/loan.rs`) and leaves it where a test thread
/// can wake it. It checks, after handing the reference out, that its process was not
/// freed under its own poll (the allocation's drop would have dropped it).
pub(super) struct Lender {
    polls: Arc<AtomicUsize>,
    drops: Arc<AtomicUsize>,
    owner: Arc<Mutex<Option<Owner>>>,
    ready_at: usize,
}

impl Future for Lender {
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        let n = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
        if n >= self.ready_at {
            return Poll::Ready(n);
        }
        let owner = Owner::internal(cx.waker()).expect("a process's waker");
        let previous = self.owner.lock().replace(owner);
        drop(previous);
        thread::yield_now();
        assert_eq!(
            self.drops.load(Ordering::SeqCst),
            0,
            "a process was freed while its poll ran"
        );
        Poll::Pending
    }
}

impl Drop for Lender {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

pub(super) fn lender(
    counters: &Counters,
    owner: &Arc<Mutex<Option<Owner>>>,
    ready_at: usize,
) -> Lender {
    Lender {
        polls: counters.polls.clone(),
        drops: counters.drops.clone(),
        owner: owner.clone(),
        ready_at,
    }
}

/// The reference a poll lends to its own wait is woken from another thread while the
/// poll is still running, or after: the process is polled exactly once more, and every
/// reference is released exactly once (loom reports the runtime reference a process
/// holds if it leaks, or a double release).
#[test]
fn loom_lent_reference_woken_racing_poll() {
    loom::model(|| {
        let counters = Counters::new();
        let owner = Arc::new(Mutex::new(None));
        let future = lender(&counters, &owner, 2);
        wake_racing_first_poll(future, &counters, move || {
            let lent = owner.lock().take();
            lent.map(Owner::wake).is_some()
        });
    });
}

/// Shutdown races the poll of a detached process that lent its reference, and the
/// lent reference is woken right after the shutdown: with the registry's reference
/// gone to shutdown, the process must still outlive its poll (shutdown leaves that
/// reference to the poller), and be freed exactly once.
#[test]
fn loom_shutdown_racing_lent_poll() {
    loom::model(|| {
        let shared = new_runtime();
        let counters = Counters::new();
        let owner = Arc::new(Mutex::new(None));
        drop(Shared::spawn(
            &shared,
            lender(&counters, &owner, 3),
            std::panic::Location::caller(),
        ));

        let shutdown_thread = {
            let shared = shared.clone();
            let owner = owner.clone();
            thread::spawn(move || {
                shutdown(&shared);
                let lent = owner.lock().take();
                if let Some(lent) = lent {
                    lent.wake();
                }
            })
        };
        run_queued(&shared);
        shutdown_thread.join().unwrap();
        run_queued(&shared);
        shared.drain_injector();
        drop(owner.lock().take());

        assert!(counters.polls() <= 1);
        assert_eq!(counters.drops(), 1, "the future is dropped exactly once");
    });
}

/// What the models of a completion racing the registry walker of a shutdown watch.
#[derive(Clone)]
pub(super) struct Race {
    /// Drops of the [`Output`]s a [`Finisher`] made (its output, or the payload of its
    /// drop's panic). Leaked, so that a second drop of one, through memory freed under
    /// its completer, is counted rather than crash the model.
    outputs: &'static AtomicUsize,
    /// Set while the walker runs.
    walking: Arc<AtomicBool>,
    /// Set by a [`Finisher`] that returned its output, or was dropped, while the walker
    /// ran: the model reached the race it is about.
    overlapped: Arc<AtomicBool>,
}

impl Race {
    pub(super) fn new() -> Race {
        Race {
            outputs: Box::leak(Box::new(AtomicUsize::new(0))),
            walking: Arc::new(AtomicBool::new(false)),
            overlapped: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Drops of outputs (and drop panics' payloads) so far.
    pub(super) fn outputs(&self) -> usize {
        self.outputs.load(Ordering::SeqCst)
    }

    /// True if a finisher completed or was dropped while the walker ran.
    pub(super) fn overlapped(&self) -> bool {
        self.overlapped.load(Ordering::SeqCst)
    }

    /// Runs the registry walker of a shutdown, as `Runtime::drop` does (without the
    /// injector's drain, which the model does once the race is over).
    pub(super) fn walk(&self, shared: &Shared) {
        self.walking.store(true, Ordering::SeqCst);
        assert!(shared.begin_shutdown());
        shared.registry().close_and_shutdown_all();
        self.walking.store(false, Ordering::SeqCst);
    }

    fn note_overlap(&self) {
        if self.walking.load(Ordering::SeqCst) {
            self.overlapped.store(true, Ordering::SeqCst);
        }
    }

    fn output(&self) -> Output {
        Output {
            drops: self.outputs,
        }
    }
}

/// What a [`Finisher`] returns (or panics with): counts its drops, so that a second
/// drop of one (a completer touching a process freed under it) shows.
#[derive(Debug)]
pub(super) struct Output {
    drops: &'static AtomicUsize,
}

impl Drop for Output {
    fn drop(&mut self) {
        // A free switch, so that a model reaches a second drop of the same output while
        // the first is under way without spending a preemption on it.
        thread::yield_now();
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// A [`Lender`] whose last poll lends too: on its poll numbered `ready_at` it takes an
/// internal reference to its own process, which takes over the poll's (`task/loan.rs`),
/// and releases it at once, as a receive polled once on a channel whose sender then goes
/// away does; then it yields its thread (so that a model reaches what races the
/// completion without spending a preemption on it) and returns an [`Output`]. Its
/// poller completes the process holding no reference of its own. With `panic_on_drop`,
/// its drop panics with an [`Output`] as the payload, which the process's result keeps
/// (`JoinError::panicked`): a cancelled process's result, too, then shows a second drop.
pub(super) struct Finisher {
    /// Both dropped by hand, before any panic of the drop: under loom, every model
    /// thread runs on one OS thread, so a loom operation while unwinding (a counter, an
    /// `Arc`'s count) could switch to another model thread that would count as
    /// panicking, and poison any lock it releases.
    lender: ManuallyDrop<Lender>,
    race: ManuallyDrop<Race>,
    panic_on_drop: bool,
}

impl Future for Finisher {
    type Output = Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Output> {
        let ready_at = self.lender.ready_at;
        if self.lender.polls.load(Ordering::SeqCst) + 1 < ready_at {
            return Pin::new(&mut *self.lender).poll(cx).map(|_| unreachable!());
        }
        self.lender.polls.fetch_add(1, Ordering::SeqCst);
        drop(Owner::internal(cx.waker()).expect("a process's waker"));
        // A free switch to another thread, right before the poller completes the process.
        thread::yield_now();
        self.race.note_overlap();
        Poll::Ready(self.race.output())
    }
}

impl Drop for Finisher {
    fn drop(&mut self) {
        self.race.note_overlap();
        let payload = self.race.output();
        // SAFETY: each dropped once, here, and not used after.
        unsafe {
            ManuallyDrop::drop(&mut self.lender);
            ManuallyDrop::drop(&mut self.race);
        }
        if self.panic_on_drop {
            // Not `panic!`: no panic hook, so no message for every execution.
            std::panic::resume_unwind(Box::new(payload));
        }
        // Not a panic: no second drop to see.
        std::mem::forget(payload);
    }
}

pub(super) fn finisher(
    counters: &Counters,
    owner: &Arc<Mutex<Option<Owner>>>,
    race: &Race,
    ready_at: usize,
    panic_on_drop: bool,
) -> Finisher {
    Finisher {
        lender: ManuallyDrop::new(lender(counters, owner, ready_at)),
        race: ManuallyDrop::new(race.clone()),
        panic_on_drop,
    }
}

/// A `JoinHandle`'s waker that tells whether it was woken after its last clone was
/// dropped: what a completer that reads the join-waker slot of a process freed under it
/// does (the slot's clone went with the allocation, the waker it reads is what the
/// freed memory still holds). Its data outlives every clone (the watch keeps it), so
/// such a wake is recorded rather than crashing the model.
pub(super) struct JoinWatch {
    /// `Waker`s made from this watch and not yet dropped.
    live: AtomicUsize,
    /// Woken while no `Waker` of it was alive.
    woken_dead: AtomicBool,
}

impl JoinWatch {
    pub(super) fn new() -> std::sync::Arc<JoinWatch> {
        std::sync::Arc::new(JoinWatch {
            live: AtomicUsize::new(0),
            woken_dead: AtomicBool::new(false),
        })
    }

    /// A waker of this watch.
    pub(super) fn waker(self: &std::sync::Arc<JoinWatch>) -> Waker {
        self.live.fetch_add(1, Ordering::SeqCst);
        let data = std::sync::Arc::into_raw(self.clone()).cast::<()>();
        // SAFETY: `WATCH_VTABLE`'s functions take `data` as the `Arc` it came from.
        unsafe { Waker::from_raw(RawWaker::new(data, &WATCH_VTABLE)) }
    }

    /// True if a waker of this watch was woken after the last one was dropped.
    pub(super) fn woken_dead(&self) -> bool {
        self.woken_dead.load(Ordering::SeqCst)
    }

    /// With `joined`, `join` and a waker of this watch stored in its slot (so the
    /// process's completer will read it); else `join` dropped, the process detached.
    pub(super) fn keep_join<T>(
        self: &std::sync::Arc<JoinWatch>,
        joined: bool,
        mut join: JoinHandle<T>,
    ) -> Option<(JoinHandle<T>, Waker)> {
        if !joined {
            drop(join);
            return None;
        }
        let waker = self.waker();
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut join).poll(&mut cx).is_pending());
        Some((join, waker))
    }

    /// Polls `join` with `waker` until it is ready, yielding in between, then drops
    /// both before the result (whose drop may yield): the handle's last reference may go
    /// while the completer still runs.
    pub(super) fn resolve<T>((mut join, waker): (JoinHandle<T>, Waker)) -> Result<T, JoinError> {
        let mut cx = Context::from_waker(&waker);
        let result = loop {
            if let Poll::Ready(result) = Pin::new(&mut join).poll(&mut cx) {
                break result;
            }
            thread::yield_now();
        };
        drop((join, waker));
        result
    }
}

static WATCH_VTABLE: RawWakerVTable =
    RawWakerVTable::new(watch_clone, watch_wake, watch_wake_by_ref, watch_drop);

/// # Safety
/// `data` is an `Arc<JoinWatch>` made by `JoinWatch::waker`, still counted.
unsafe fn watch(data: *const ()) -> &'static JoinWatch {
    // SAFETY: per the caller; the test's own `Arc` outlives every use.
    unsafe { &*data.cast::<JoinWatch>() }
}

/// # Safety
/// As [`watch`].
unsafe fn watch_clone(data: *const ()) -> RawWaker {
    // SAFETY: a waker of the watch is being cloned, so its count is held.
    unsafe {
        std::sync::Arc::increment_strong_count(data.cast::<JoinWatch>());
        watch(data).live.fetch_add(1, Ordering::SeqCst);
    }
    RawWaker::new(data, &WATCH_VTABLE)
}

/// # Safety
/// `data` is an `Arc<JoinWatch>` made by `JoinWatch::waker`, whose test still holds the
/// watch (a waker read from a freed process may have given up its own count).
unsafe fn watch_wake_by_ref(data: *const ()) {
    // SAFETY: the test holds the watch for longer than any waker may be used.
    let watch = unsafe { watch(data) };
    if watch.live.load(Ordering::SeqCst) == 0 {
        watch.woken_dead.store(true, Ordering::SeqCst);
    }
}

/// # Safety
/// As [`watch`]; the waker's count is given up.
unsafe fn watch_wake(data: *const ()) {
    // SAFETY: as `watch_wake_by_ref`, then as `watch_drop`.
    unsafe {
        watch_wake_by_ref(data);
        watch_drop(data);
    }
}

/// # Safety
/// As [`watch`]; the waker's count is given up.
unsafe fn watch_drop(data: *const ()) {
    // SAFETY: a waker of the watch is dropped, giving up its count.
    unsafe {
        watch(data).live.fetch_sub(1, Ordering::SeqCst);
        std::sync::Arc::decrement_strong_count(data.cast::<JoinWatch>());
    }
}

/// Counts the executions of a model of a completion racing the walker in which the
/// completion overlapped the walk ([`Race::overlapped`]): across executions, outside
/// the model.
pub(super) struct Overlaps(std::sync::atomic::AtomicUsize);

impl Overlaps {
    pub(super) const fn new() -> Overlaps {
        Overlaps(std::sync::atomic::AtomicUsize::new(0))
    }

    /// Runs `model` under loom, each execution saying whether its race overlapped, and
    /// checks that some did.
    pub(super) fn model(
        &'static self,
        what: &str,
        model: impl Fn() -> bool + Sync + Send + 'static,
    ) {
        use std::sync::atomic::Ordering::Relaxed;
        self.0.store(0, Relaxed);
        loom::model(move || {
            if model() {
                self.0.fetch_add(1, Relaxed);
            }
        });
        assert!(
            self.0.load(Relaxed) > 0,
            "{what}: no execution completed the process while the walker ran"
        );
    }
}

/// A process whose poll lent its reference and then returns `Ready` completes on this
/// thread against the registry walker of a shutdown (`Registry::close_and_shutdown_all`)
/// on another: whether the walker unlinks it before or after its poller reaches the
/// registry, the process outlives its completion, its future and its output are each
/// dropped exactly once, and a `JoinHandle`'s waker stored in the slot is never read
/// from a freed process. Once with the process detached (the registry's reference is
/// all that keeps it alive while it completes), once with a `JoinHandle` whose waker is
/// stored, which the walker's thread resolves and drops as soon as the walk is done.
#[test]
fn lent_completion_races_shutdown() {
    static DETACHED: Overlaps = Overlaps::new();
    static JOINED: Overlaps = Overlaps::new();
    DETACHED.model("detached", || lent_completion_racing_walker(false));
    JOINED.model("joined", || lent_completion_racing_walker(true));
}

/// One execution of [`lent_completion_races_shutdown`]: true if the completion
/// overlapped the walk.
fn lent_completion_racing_walker(joined: bool) -> bool {
    let shared = new_runtime();
    let counters = Counters::new();
    let race = Race::new();
    let owner = Arc::new(Mutex::new(None));
    let join = Shared::spawn(
        &shared,
        finisher(&counters, &owner, &race, 1, false),
        std::panic::Location::caller(),
    );
    let watch = JoinWatch::new();
    let walker = {
        let (shared, race) = (shared.clone(), race.clone());
        let join = watch.keep_join(joined, join);
        thread::spawn(move || {
            race.walk(&shared);
            join.map(JoinWatch::resolve)
        })
    };
    run_queued(&shared);
    let result = walker.join().unwrap();
    shared.drain_injector();

    assert!(
        !watch.woken_dead(),
        "the completer read the join waker of a process freed under it"
    );
    if let Some(result) = &result {
        assert_eq!(result.is_ok(), counters.polls() == 1, "{result:?}");
    }
    drop(result);
    assert_eq!(counters.drops(), 1, "the future is dropped exactly once");
    assert_eq!(
        race.outputs(),
        counters.polls(),
        "an output is dropped exactly once, if the poll made one"
    );
    race.overlapped()
}

/// A blocking-pool thread that cannot start hands its first closure back to the caller
/// (`blocking.rs`), which cancels its task, while a runtime shutdown races the spawn
/// (its walker cancelling the task, its drain of the pool): the closure never runs, it
/// is dropped exactly once, and every reference is released (loom reports a leak).
#[test]
fn loom_failed_pool_start_racing_shutdown() {
    loom::model(|| {
        let shared = new_runtime();
        let counters = Counters::new();
        let ran = Arc::new(AtomicBool::new(false));
        let closure = {
            let (probe, ran) = (counters.probe(1), ran.clone());
            move || {
                drop(probe);
                ran.store(true, Ordering::SeqCst);
            }
        };
        let shutter = {
            let shared = shared.clone();
            thread::spawn(move || shutdown(&shared))
        };
        crate::runtime::blocking::fail_next_start(true);
        let spawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Shared::spawn_blocking(&shared, closure, std::panic::Location::caller())
        }));
        crate::runtime::blocking::fail_next_start(false);
        shutter.join().unwrap();
        shared.drain_injector();
        // Spawned after the shutdown began: refused, or cancelled by its walker.
        if let Ok(join) = spawned {
            assert!(block_on(join).unwrap_err().is_cancelled());
        }
        assert!(!ran.load(Ordering::SeqCst), "the closure ran");
        assert_eq!(counters.drops(), 1, "the closure is dropped exactly once");
    });
}
