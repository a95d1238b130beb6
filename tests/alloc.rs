//! No heap allocation per message: once a channel is in steady state, sending and
//! receiving allocate nothing, on the rendezvous path (`csp::channel()`, values handed
//! from a waiting sender to a receiver and back) and on the bounded path (`bounded(16)`,
//! values through the buffer, the producer and the consumer each waiting at times), on
//! one worker and on two. Nor per timer: a `sleep` armed in the wheel and dropped
//! allocates nothing, so a million of them leave memory flat.
//!
//! A counting global allocator counts allocations while a window is open (a global
//! switch), in two tallies:
//!
//! - `in_processes`: allocations made while one of the test's processes is being polled.
//!   That is the whole message path: the `send` and `recv` futures, the channel, the
//!   wakes they make and the scheduling of the woken process (into the handoff slot or a
//!   run queue). It must be exactly 0.
//! - `on_runtime`: allocations made on any thread of the runtime under test (its workers,
//!   whatever they are doing, and the thread blocked in `block_on`). This also sees the
//!   scheduler's idle path: a worker that runs out of work parks on a listener kept on
//!   its stack, so sleeping allocates nothing, except that a thread's first sleep creates
//!   its parker. If a thread first sleeps inside the window (a worker kept busy through
//!   the whole warm-up), that one allocation is counted, so this tally may reach one per
//!   thread, never one per message.
//!
//! Each test opens the window after a warm-up, exchanges `MESSAGES` messages, closes it
//! and checks both tallies. The tests run one at a time (`SERIAL`), so no other test's
//! runtime works while a window is open; the test harness's own threads are never
//! counted.
//!
//! The `*_are_counted` tests are the control: the same exchanges with boxed messages, an
//! allocation per message, must be counted, on whichever worker each process runs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

mod common;

/// Messages exchanged before the window opens, so every buffer the channel, the run
/// queues and the wake paths grow to has grown.
const WARM_UP: u64 = 10_000;
/// Messages exchanged while the window is open.
const MESSAGES: u64 = 100_000;
/// Allocations the runtime's threads may make once each, not per message: a thread's
/// parker, created the first time it sleeps (module docs), for each of at most two
/// workers and the `block_on` thread. An allocation per message would be 100,000.
const ONE_TIME_ALLOCATIONS: usize = 3;
/// Messages the producer of the bounded tests sends after the window, so it is still
/// sending, not finishing, when the window closes.
const TAIL: u64 = 1_000;
/// The capacity of the bounded channel.
const CAPACITY: usize = 16;
/// How long a test may take, waiting for its turn included.
const TIMEOUT_SECS: u64 = 60;

#[test]
fn rendezvous_ping_pong_allocates_nothing_one_worker() {
    run("rendezvous", 1, rendezvous_ping_pong::<u64>).assert_none_per_message();
}

#[test]
fn rendezvous_ping_pong_allocates_nothing_two_workers() {
    run("rendezvous", 2, rendezvous_ping_pong::<u64>).assert_none_per_message();
}

#[test]
fn bounded_producer_consumer_allocates_nothing_one_worker() {
    run("bounded", 1, bounded_producer_consumer::<u64>).assert_none_per_message();
}

#[test]
fn bounded_producer_consumer_allocates_nothing_two_workers() {
    run("bounded", 2, bounded_producer_consumer::<u64>).assert_none_per_message();
}

/// The control for the rendezvous tests: each round trip boxes two messages, one in the
/// pinger and one in the ponger, whichever workers they run on.
#[test]
fn rendezvous_boxed_messages_are_counted() {
    for workers in [1, 2] {
        run(
            "rendezvous, boxed",
            workers,
            rendezvous_ping_pong::<Box<u64>>,
        )
        .assert_at_least(2 * MESSAGES as usize);
    }
}

/// The control for the bounded tests: the producer boxes each message; while the
/// consumer receives `MESSAGES` of them, the producer boxes at least `MESSAGES -
/// CAPACITY - 1` (at most `CAPACITY` wait in the buffer and one in a `send`).
#[test]
fn bounded_boxed_messages_are_counted() {
    for workers in [1, 2] {
        run(
            "bounded, boxed",
            workers,
            bounded_producer_consumer::<Box<u64>>,
        )
        .assert_at_least(MESSAGES as usize - CAPACITY - 1);
    }
}

#[test]
fn alt_over_two_channels_allocates_nothing_one_worker() {
    run("alt", 1, alt_consumer::<u64>).assert_none_per_message();
}

#[test]
fn alt_over_two_channels_allocates_nothing_two_workers() {
    run("alt", 2, alt_consumer::<u64>).assert_none_per_message();
}

#[test]
fn alt_boxed_messages_are_counted() {
    run("alt", 2, alt_consumer::<Box<u64>>).assert_at_least(MESSAGES as usize - 2 * CAPACITY);
}

/// Sleeps armed and dropped while the window is open.
const DROPPED_SLEEPS: usize = 1_000_000;

/// A million sleeps, each armed in the wheel (polled once) and then dropped pending: the
/// entry lives inside the `Sleep`, and the drop takes it out of the wheel again, so no
/// allocation is made and memory stays flat however many are created.
#[test]
fn a_million_armed_and_dropped_sleeps_allocate_nothing() {
    run("sleeps", 1, armed_and_dropped_sleeps).assert_none_per_message();
}

async fn armed_and_dropped_sleeps() -> Tally {
    async fn arm_and_drop(sleeps: usize) {
        for _ in 0..sleeps {
            let mut sleep = pin!(csp::sleep(Duration::from_secs(3600)));
            assert!(futures::poll!(sleep.as_mut()).is_pending());
        }
    }
    spawn_counted(async {
        arm_and_drop(1_000).await;
        let window = Window::open();
        arm_and_drop(DROPPED_SLEEPS).await;
        window.close()
    })
    .await
    .expect("the sleeper failed")
}

/// A message: `u64` itself, or a boxed one for the controls.
trait Message: Send + 'static {
    fn new(n: u64) -> Self;
    fn get(&self) -> u64;
}

impl Message for u64 {
    fn new(n: u64) -> u64 {
        n
    }

    fn get(&self) -> u64 {
        *self
    }
}

impl Message for Box<u64> {
    fn new(n: u64) -> Box<u64> {
        Box::new(n)
    }

    fn get(&self) -> u64 {
        **self
    }
}

/// Two processes exchange `WARM_UP + MESSAGES` round trips over two rendezvous
/// channels; returns the allocations counted during the last `MESSAGES`.
async fn rendezvous_ping_pong<M: Message>() -> Tally {
    let (to_ponger, from_pinger) = csp::channel::<M>();
    let (to_pinger, from_ponger) = csp::channel::<M>();
    let ponger = spawn_counted(async move {
        while let Ok(message) = from_pinger.recv().await {
            let reply = M::new(message.get() + 1);
            if to_pinger.send(reply).await.is_err() {
                break;
            }
        }
    });
    let pinger = spawn_counted(async move {
        let round_trip = async |n: u64| {
            assert!(to_ponger.send(M::new(n)).await.is_ok(), "the ponger left");
            let reply = from_ponger.recv().await.expect("the ponger left");
            assert_eq!(reply.get(), n + 1);
        };
        for n in 0..WARM_UP {
            round_trip(n).await;
        }
        let window = Window::open();
        for n in WARM_UP..WARM_UP + MESSAGES {
            round_trip(n).await;
        }
        window.close()
    });
    let tally = pinger.await.expect("the pinger failed");
    ponger.await.expect("the ponger failed");
    tally
}

/// A producer process sends `WARM_UP + MESSAGES + TAIL` messages into a
/// `bounded(CAPACITY)` channel, which a consumer process receives; returns the
/// allocations counted while the consumer received the `MESSAGES` after the first
/// `WARM_UP`.
async fn bounded_producer_consumer<M: Message>() -> Tally {
    let (sender, receiver) = csp::bounded::<M>(CAPACITY);
    let producer = spawn_counted(async move {
        for n in 0..WARM_UP + MESSAGES + TAIL {
            assert!(sender.send(M::new(n)).await.is_ok(), "the consumer left");
        }
    });
    let consumer = spawn_counted(async move {
        let mut expected = 0;
        let mut receive = async || {
            let message = receiver.recv().await.expect("the producer left early");
            assert_eq!(message.get(), expected);
            expected += 1;
        };
        for _ in 0..WARM_UP {
            receive().await;
        }
        let window = Window::open();
        for _ in 0..MESSAGES {
            receive().await;
        }
        let tally = window.close();
        for _ in 0..TAIL {
            receive().await;
        }
        assert!(receiver.recv().await.is_err(), "one message too many");
        tally
    });
    let tally = consumer.await.expect("the consumer failed");
    producer.await.expect("the producer failed");
    tally
}

/// Two producers each fill a `bounded(CAPACITY)` channel; a consumer receives from both
/// with an `alt!` of two fixed arms, `WARM_UP + MESSAGES + TAIL` times; returns the
/// allocations counted during the `MESSAGES` alts after the warm-up.
async fn alt_consumer<M: Message>() -> Tally {
    let (a_tx, a_rx) = csp::bounded::<M>(CAPACITY);
    let (b_tx, b_rx) = csp::bounded::<M>(CAPACITY);
    let total = WARM_UP + MESSAGES + TAIL;
    let producers = [a_tx, b_tx].map(|tx| {
        spawn_counted(async move {
            // Each producer sends at least its share; the rest fail once the consumer
            // is done and drops the receivers.
            for n in 0..total {
                if tx.send(M::new(n)).await.is_err() {
                    break;
                }
            }
        })
    });
    let consumer = spawn_counted(async move {
        let receive = async || {
            let message = csp::alt! {
                recv(a_rx) -> m => m,
                recv(b_rx) -> m => m,
            };
            assert!(message.expect("a producer left early").get() < total);
        };
        for _ in 0..WARM_UP {
            receive().await;
        }
        let window = Window::open();
        for _ in 0..MESSAGES {
            receive().await;
        }
        let tally = window.close();
        for _ in 0..TAIL {
            receive().await;
        }
        tally
    });
    let tally = consumer.await.expect("the consumer failed");
    for producer in producers {
        producer.await.expect("a producer failed");
    }
    tally
}

/// Runs `scenario` on a fresh runtime of `workers` workers whose threads count; one test
/// at a time, within `TIMEOUT_SECS`. Prints the tally (`--nocapture` shows it).
fn run<F: Future<Output = Tally> + Send + 'static>(
    name: &str,
    workers: usize,
    scenario: fn() -> F,
) -> Tally {
    let tally = common::bounded(TIMEOUT_SECS, move || {
        let _turn = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        ON_RUNTIME_THREAD.set(true);
        let rt = counted_runtime(workers);
        rt.block_on(rt.spawn(scenario()))
            .expect("the scenario failed")
    });
    eprintln!("{name}, {workers} worker(s): {tally:?}");
    tally
}

/// A runtime of `workers` workers whose threads count: one process per worker marks its
/// thread and then spins, holding that worker, until every worker is marked, so no
/// worker can run two of them.
fn counted_runtime(workers: usize) -> csp::Runtime {
    let rt = csp::Runtime::builder()
        .worker_threads(workers)
        .thread_name("alloc-test")
        .build()
        .expect("failed to build the runtime");
    let marked = Arc::new(AtomicUsize::new(0));
    let markers: Vec<_> = (0..workers)
        .map(|_| {
            let marked = marked.clone();
            rt.spawn(async move {
                ON_RUNTIME_THREAD.set(true);
                marked.fetch_add(1, Ordering::SeqCst);
                let deadline = Instant::now() + Duration::from_secs(10);
                while marked.load(Ordering::SeqCst) < workers {
                    assert!(
                        Instant::now() < deadline,
                        "a worker stayed idle while a process waited in a queue"
                    );
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    for marker in markers {
        rt.block_on(marker).expect("a marker process failed");
    }
    rt
}

/// Spawns `future` as a process whose polls count as `in_processes`.
fn spawn_counted<F>(future: F) -> csp::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    csp::spawn(InProcess(Box::pin(future)))
}

/// A process's future, marking its thread as polling a process while it polls.
struct InProcess<F>(Pin<Box<F>>);

impl<F: Future> Future for InProcess<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let outer = IN_PROCESS.replace(true);
        let poll = self.0.as_mut().poll(cx);
        IN_PROCESS.set(outer);
        poll
    }
}

/// One test's turn at counting.
static SERIAL: Mutex<()> = Mutex::new(());

thread_local! {
    /// Whether this thread is one of the runtime's under test (or the test's own).
    static ON_RUNTIME_THREAD: Cell<bool> = const { Cell::new(false) };
    /// Whether this thread is polling one of the test's processes.
    static IN_PROCESS: Cell<bool> = const { Cell::new(false) };
}

/// Whether the window is open.
static COUNTING: AtomicBool = AtomicBool::new(false);
/// Allocations counted since the window opened, while polling a process.
static IN_PROCESSES: AtomicUsize = AtomicUsize::new(0);
/// Allocations counted since the window opened, on the runtime's threads.
static ON_RUNTIME: AtomicUsize = AtomicUsize::new(0);

/// The allocations counted in a window.
#[derive(Debug, Clone, Copy)]
struct Tally {
    /// While polling the test's processes: the message path.
    in_processes: usize,
    /// On any of the runtime's threads, the above included.
    on_runtime: usize,
}

impl Tally {
    #[track_caller]
    fn assert_none_per_message(self) {
        assert_eq!(
            self.in_processes, 0,
            "{self:?}: the message path allocated while {MESSAGES} messages went through"
        );
        assert!(
            self.on_runtime <= ONE_TIME_ALLOCATIONS,
            "{self:?}: the runtime's threads allocated {} times while {MESSAGES} messages \
             went through; at most {ONE_TIME_ALLOCATIONS} one-time allocations are expected",
            self.on_runtime
        );
    }

    #[track_caller]
    fn assert_at_least(self, expected: usize) {
        assert!(
            self.in_processes >= expected && self.on_runtime >= self.in_processes,
            "{self:?}: expected at least {expected} allocations in the processes, as many \
             on the runtime"
        );
    }
}

/// The open measurement window.
#[must_use = "close the window to read the tally"]
struct Window(());

impl Window {
    fn open() -> Window {
        IN_PROCESSES.store(0, Ordering::SeqCst);
        ON_RUNTIME.store(0, Ordering::SeqCst);
        COUNTING.store(true, Ordering::SeqCst);
        Window(())
    }

    fn close(self) -> Tally {
        COUNTING.store(false, Ordering::SeqCst);
        Tally {
            in_processes: IN_PROCESSES.load(Ordering::SeqCst),
            on_runtime: ON_RUNTIME.load(Ordering::SeqCst),
        }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// `System`, counting allocations (reallocations included) while the window is open.
struct CountingAllocator;

impl CountingAllocator {
    fn count() {
        // Relaxed: the window's edges are a few instructions wide at worst, and an
        // allocation per message would be counted MESSAGES times inside it.
        if !COUNTING.load(Ordering::Relaxed) {
            return;
        }
        // Const thread locals without destructors: reading them never allocates and
        // never fails, even while the thread exits.
        if ON_RUNTIME_THREAD.try_with(Cell::get).unwrap_or(false) {
            ON_RUNTIME.fetch_add(1, Ordering::Relaxed);
        }
        if IN_PROCESS.try_with(Cell::get).unwrap_or(false) {
            IN_PROCESSES.fetch_add(1, Ordering::Relaxed);
        }
    }
}

// SAFETY: every method forwards to `System`; counting touches no allocation.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::count();
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::count();
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::count();
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
