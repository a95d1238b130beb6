//! Helpers shared by the integration tests: a watchdog, counters, counted futures and
//! wakers, and a probe that tells whether a process's allocation was freed; the helpers
//! of each family of tests in a module of its own (`channels`, `net`, `select`, `signal`).

#![allow(dead_code)] // each test binary uses a different subset

pub mod channels;
pub mod net;
pub mod select;
pub mod signal;

use std::future::Future;
use std::panic::{AssertUnwindSafe, Location};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// Runs `f` on its own thread and returns its result; panics (naming the caller) if it
/// has not returned after `secs` seconds, so a hang fails the test instead of the run.
/// A panic of `f` is resumed on the caller's thread with its original payload.
#[track_caller]
pub fn bounded<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let secs = scaled_secs(secs);
    let caller = Location::caller();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(format!("bounded-{}", caller.line()))
        .spawn(move || {
            let result = std::panic::catch_unwind(AssertUnwindSafe(f));
            let _ = tx.send(result);
        })
        .expect("start the test's thread");
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(value)) => value,
        Ok(Err(payload)) => std::panic::resume_unwind(payload),
        Err(_) => panic!(
            "the test started at {caller} did not finish within {secs} s: it hangs (a lost \
             wake, a deadlock, or a shutdown that never returns?)"
        ),
    }
}

/// Waits until `cond` holds, polling it; panics with `what` after `secs` seconds.
#[track_caller]
pub fn wait_until(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let secs = scaled_secs(secs);
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        if Instant::now() > deadline {
            panic!("timed out after {secs} s waiting until {what}");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits until process `id` of `rt` is in the dump in `state`.
#[track_caller]
pub fn wait_for_state(rt: &csp::Runtime, id: u64, state: csp::ProcessState) {
    wait_until(10, &format!("process #{id} is {state:?}"), || {
        rt.processes()
            .iter()
            .any(|p| p.id == id && p.state == state)
    });
}

/// Waits (10 s at most) until process `id` of `rt` is blocked on something it recorded
/// (`waiting_on` is set).
#[track_caller]
pub fn wait_until_waiting(rt: &csp::Runtime, id: u64) {
    wait_until(10, "the process waits", || {
        rt.processes()
            .iter()
            .any(|p| p.id == id && p.waiting_on.is_some())
    });
}

/// Waits up to `secs` seconds until `rt` has no live process left.
#[track_caller]
pub fn wait_until_no_process(rt: &csp::Runtime, secs: u64) {
    wait_until(secs, "no process of the runtime is left", || {
        rt.metrics().processes_alive == 0
    });
}

/// A shared counter.
#[derive(Clone, Default, Debug)]
pub struct Counter(Arc<AtomicUsize>);

impl Counter {
    pub fn new() -> Counter {
        Counter::default()
    }

    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    pub fn incr(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }
}

/// A value that counts its drops: wrap an output in it to check it is dropped exactly once.
#[derive(Debug)]
pub struct Tracked {
    pub value: u64,
    drops: Counter,
}

impl Tracked {
    pub fn new(value: u64, drops: &Counter) -> Tracked {
        Tracked {
            value,
            drops: drops.clone(),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.incr();
    }
}

/// A value whose drop counts, then panics with `"panic in drop"`.
#[derive(Debug)]
pub struct PanicOnDrop(pub Counter);

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        self.0.incr();
        panic!("panic in drop");
    }
}

/// A future wrapper that counts its polls and its drops.
pub struct Counted<T> {
    inner: Pin<Box<dyn Future<Output = T> + Send>>,
    polls: Counter,
    drops: Counter,
}

/// Wraps `future`; returns the wrapper and its poll and drop counters.
pub fn counted<T>(
    future: impl Future<Output = T> + Send + 'static,
) -> (Counted<T>, Counter, Counter) {
    let polls = Counter::new();
    let drops = Counter::new();
    let wrapper = Counted {
        inner: Box::pin(future),
        polls: polls.clone(),
        drops: drops.clone(),
    };
    (wrapper, polls, drops)
}

impl<T> Future for Counted<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        self.polls.incr();
        self.inner.as_mut().poll(cx)
    }
}

impl<T> Drop for Counted<T> {
    fn drop(&mut self) {
        self.drops.incr();
    }
}

/// A future pending forever that counts its polls and drops: `(future, polls, drops)`.
pub fn pending_counted() -> (Counted<()>, Counter, Counter) {
    counted(std::future::pending::<()>())
}

/// A waker that counts its wakes. Also a leak probe: give it to a `JoinHandle` poll while
/// the process is pending, and the process's allocation holds a clone of it until it is
/// freed, so `Arc::strong_count(&probe) == 1` once every clone is gone means the
/// allocation (and every reference to it) was released.
///
/// [`panicking`](Self::panicking) makes one whose wakes panic with `"waker panics"`
/// (after counting): the foreign code csp must survive without losing or stranding
/// anything.
#[derive(Default, Debug)]
pub struct CountingWaker {
    wakes: AtomicUsize,
    panics: bool,
}

impl CountingWaker {
    pub fn new() -> (Arc<CountingWaker>, Waker) {
        CountingWaker::make(false)
    }

    pub fn panicking() -> (Arc<CountingWaker>, Waker) {
        CountingWaker::make(true)
    }

    fn make(panics: bool) -> (Arc<CountingWaker>, Waker) {
        let probe = Arc::new(CountingWaker {
            wakes: AtomicUsize::new(0),
            panics,
        });
        let waker = Waker::from(probe.clone());
        (probe, waker)
    }

    pub fn wakes(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        if self.panics {
            panic!("waker panics");
        }
    }
}

/// A foreign waker whose first clone runs `on_clone` (say, letting a counterpart into a
/// channel while csp has its lock dropped to clone the waker) and whose clones panic
/// with `"waker drop panics"` when dropped: the foreign code whose drop must not make
/// csp lose a wake. The returned waker itself is inert; leak-free once its clones are
/// gone.
pub fn waker_with_clone_hook(on_clone: impl FnOnce() + Send + 'static) -> Waker {
    use std::sync::Mutex;
    use std::task::{RawWaker, RawWakerVTable};

    type Hook = Mutex<Option<Box<dyn FnOnce() + Send>>>;
    static HOOKS: Mutex<Vec<&'static Hook>> = Mutex::new(Vec::new());

    unsafe fn clone(data: *const ()) -> RawWaker {
        // SAFETY: `data` is a leaked, never freed `Hook`.
        let hook = unsafe { &*data.cast::<Hook>() };
        let run = hook.lock().unwrap().take();
        if let Some(run) = run {
            run();
        }
        RawWaker::new(data, &CLONE)
    }
    unsafe fn nothing(_: *const ()) {}
    unsafe fn drop_clone(_: *const ()) {
        panic!("waker drop panics");
    }
    static ORIGINAL: RawWakerVTable = RawWakerVTable::new(clone, nothing, nothing, nothing);
    static CLONE: RawWakerVTable = RawWakerVTable::new(clone, drop_clone, nothing, drop_clone);

    let on_clone: Box<dyn FnOnce() + Send> = Box::new(on_clone);
    let hook: &'static Hook = Box::leak(Box::new(Mutex::new(Some(on_clone))));
    // Kept reachable, for valgrind's leak check.
    HOOKS.lock().unwrap().push(hook);
    // SAFETY: the vtables uphold the contract for a `data` that is never freed.
    unsafe { Waker::from_raw(RawWaker::new(std::ptr::from_ref(hook).cast(), &ORIGINAL)) }
}

/// Drops `value` while the thread unwinds: moves it into a scope that panics with
/// `"the scope's own panic"`, and checks that this panic, and no later one out of
/// `value`'s drop, is the one that comes out (a panic out of a drop during unwinding
/// would abort the test binary instead).
pub fn drop_while_unwinding<T>(value: T) {
    let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _value = value;
        panic!("the scope's own panic");
    }))
    .expect_err("the scope panicked");
    assert_eq!(
        panic_message(&*payload).as_deref(),
        Some("the scope's own panic")
    );
}

/// `mem::forget` of a boxed value, as a test of a leak does, with its address kept where
/// valgrind's leak check finds it: the block the test leaks on purpose then reads as
/// still reachable, not lost (`.ci/run` fails on definite leaks).
pub fn forget_boxed<T: ?Sized>(boxed: Pin<Box<T>>) {
    static LEAKED: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
    // A `Box`'s block starts where its value does.
    let address = std::ptr::from_ref::<T>(&boxed).cast::<u8>() as usize;
    LEAKED.lock().unwrap().push(address);
    std::mem::forget(boxed);
}

/// Polls `future` once with a waker that does nothing.
pub fn poll_noop<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    let waker = futures::task::noop_waker();
    future.poll(&mut Context::from_waker(&waker))
}

/// Polls `future` once with `waker`.
pub fn poll_with<F: Future + ?Sized>(future: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(waker))
}

/// Polls `future` once with `waker`.
pub fn poll_once<F: Future + Unpin>(future: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

/// The message of a panic payload, if it is a string.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> Option<String> {
    payload
        .downcast_ref::<&'static str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
}

/// Spawns a process that sends `0..values` on `tx`, pausing for 0.7 ms before every
/// 64th value: a counterpart waiting with a shorter timeout races the sends.
pub fn paused_producer(tx: csp::Sender<u32>, values: u32) -> csp::JoinHandle<()> {
    csp::spawn(async move {
        for v in 0..values {
            if v % 64 == 0 {
                csp::sleep(Duration::from_micros(700)).await;
            }
            tx.send(v).await.unwrap();
        }
    })
}

/// A runtime with `workers` worker threads named `{name}-N`.
pub fn runtime(workers: usize, name: &str) -> csp::Runtime {
    csp::Runtime::builder()
        .worker_threads(workers)
        .thread_name(name)
        .build()
        .expect("build a runtime")
}

/// The current thread's name, owned.
pub fn thread_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("<unnamed>")
        .to_owned()
}

/// xorshift64*: a small deterministic generator.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// True when the tests run under valgrind (`CSP_UNDER_VALGRIND` set, as `.ci/run` does
/// for its memory-error pass), where code runs some 30 to 50 times slower.
pub fn under_valgrind() -> bool {
    std::env::var_os("CSP_UNDER_VALGRIND").is_some()
}

/// How many times smaller [`scaled`] makes a size under valgrind.
pub const VALGRIND_SIZE_DIVISOR: u64 = 20;

/// How many times longer [`scaled_secs`] makes a time budget under valgrind (the
/// watchdog of [`bounded`] and the waits of [`wait_until`] go through it).
pub const VALGRIND_TIME_FACTOR: u64 = 5;

/// A stress test's size: `n`, or `n / VALGRIND_SIZE_DIVISOR` (at least 1) under valgrind.
pub fn scaled<N: Size>(n: N) -> N {
    if under_valgrind() {
        N::from_u64((n.to_u64() / VALGRIND_SIZE_DIVISOR).max(1))
    } else {
        n
    }
}

/// A time budget in seconds: `secs`, or `secs * VALGRIND_TIME_FACTOR` under valgrind.
pub fn scaled_secs(secs: u64) -> u64 {
    if under_valgrind() {
        secs * VALGRIND_TIME_FACTOR
    } else {
        secs
    }
}

/// The integer types [`scaled`] takes.
pub trait Size: Copy {
    fn to_u64(self) -> u64;
    fn from_u64(n: u64) -> Self;
}

macro_rules! size {
    ($($t:ty),*) => {$(
        impl Size for $t {
            fn to_u64(self) -> u64 {
                self as u64
            }

            fn from_u64(n: u64) -> Self {
                n as $t
            }
        }
    )*};
}

size!(u64, usize, u32);
