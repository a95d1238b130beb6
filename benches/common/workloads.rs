//! The workloads, shared by the criterion benches (`benches/runtime.rs` for
//! [`WORKLOADS`], `benches/channels.rs` for [`CHANNEL_WORKLOADS`], `benches/timers.rs` for
//! [`TIMER_WORKLOADS`]) and the `vs_tokio` example, which include this file with
//! `#[path]`.
//!
//! Each workload is written once, generic over [`Executor`], and instantiated for csp and
//! for tokio, so both runtimes run exactly the same shape of work. A workload runs one
//! full iteration on a runtime built beforehand and asserts its result; timing it is the
//! caller's job.
//!
//! The channel workloads reach channels through the executor too: csp's own channels
//! against `tokio::sync::mpsc`. Tokio has no rendezvous channel, so where csp uses
//! `csp::channel()` tokio uses its closest, `mpsc::channel(1)`, whose send completes once
//! the value is buffered rather than once the receiver has it.
//!
//! The exception is `select4`'s consumer, which needs each runtime's choice macro
//! (`csp::alt!`, `tokio::select!`): it is written once per runtime, side by side in
//! [`Select4`], and the rest of the workload is shared.

// Each includer uses a different subset.
#![allow(dead_code)]

use std::fmt::Debug;
use std::future::Future;

use futures::FutureExt;
use futures::channel::oneshot;

/// Worker threads of every runtime under test. In both runtimes the thread that calls
/// `block_on` runs no spawned work, so these are the only threads that run processes.
pub const WORKER_THREADS: usize = 2;

/// [`WORKER_THREADS`], unless `CSP_BENCH_WORKERS` asks for another count (to measure how
/// the two runtimes scale on a larger machine).
pub fn worker_threads() -> usize {
    positive_env("CSP_BENCH_WORKERS", WORKER_THREADS)
}

/// The positive integer in environment variable `name`, or `default` if it is unset.
pub fn positive_env(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or_else(|| panic!("{name} must be a positive integer, not {value:?}")),
        Err(_) => default,
    }
}

/// Processes spawned by `spawn_many` and `spawn_remote`.
const SPAWNS: usize = 100_000;
/// Processes in `yield_many`.
const YIELDERS: usize = 200;
/// How often each `yield_many` process yields.
const YIELDS_PER_PROCESS: usize = 10_000;
/// Processes in `chained_spawn`'s chain.
const CHAIN_LENGTH: usize = 10_000;
/// Round trips in `ping_pong`.
pub const ROUND_TRIPS: usize = 200_000;
/// Processes in `ring`.
const RING_SIZE: usize = 503;
/// Times `ring`'s token passes from one process to the next.
pub const HOPS: usize = 1_000_000;
/// Producers in `fan_in`.
const PRODUCERS: usize = 16;
/// Values each `fan_in` producer sends.
const VALUES_PER_PRODUCER: usize = 62_500;
/// The capacity of `fan_in`'s channel.
const FAN_IN_CAPACITY: usize = 128;
/// Children of each inner `skynet` node, and the capacity of its channel.
const SKYNET_FANOUT: u64 = 10;
/// Leaves of the `skynet` tree (six levels of ten).
const SKYNET_LEAVES: u64 = 1_000_000;
/// Channels, and producers, in `select4`.
const SELECT4_CHANNELS: usize = 4;
/// Values each `select4` producer sends.
const SELECT4_VALUES_PER_PRODUCER: usize = 250_000;
/// Values `select4`'s consumer receives, one per choice.
const SELECT4_VALUES: usize = SELECT4_CHANNELS * SELECT4_VALUES_PER_PRODUCER;
/// The capacity of each of `select4`'s channels.
const SELECT4_CAPACITY: usize = 16;
/// Processes in `timers`.
const SLEEPERS: usize = 10_000;
/// Sleeps each `timers` process makes, one after the other.
const SLEEPS_PER_PROCESS: usize = 10;
/// How long each of those sleeps lasts.
const SLEEP: std::time::Duration = std::time::Duration::from_millis(1);

/// What a workload needs from a runtime.
pub trait Executor {
    /// What spawning returns: awaiting it yields the process's output.
    type JoinHandle<T: Send + 'static>: Future<Output = Result<T, Self::JoinError>>
        + Send
        + Unpin
        + 'static;
    /// Why a process produced no output.
    type JoinError: Debug;

    /// Builds a multi-threaded runtime with `workers` worker threads.
    fn with_workers(workers: usize) -> Self;

    /// Runs `future` to completion on the calling thread.
    fn block_on<F: Future>(&self, future: F) -> F::Output;

    /// Spawns onto this runtime from outside it: from a plain thread, not one of its
    /// workers, through the runtime's global queue.
    fn spawn_outside<F>(&self, future: F) -> Self::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;

    /// Spawns onto the current runtime; called from inside one of its processes.
    fn spawn<F>(future: F) -> Self::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;

    /// Reschedules the current process behind the others.
    fn yield_now() -> impl Future<Output = ()> + Send;

    /// Waits for `duration` on this runtime's timers.
    fn sleep(duration: std::time::Duration) -> impl Future<Output = ()> + Send;

    /// The sending end of this runtime's channels.
    type Sender<T: Send + 'static>: SendEnd<T>;
    /// The receiving end of this runtime's channels.
    type Receiver<T: Send + 'static>: RecvEnd<T>;

    /// A channel whose send completes once a receiver has the value: csp's
    /// `channel()`; for tokio, which has none, `mpsc::channel(1)`.
    fn rendezvous<T: Send + 'static>() -> (Self::Sender<T>, Self::Receiver<T>);

    /// A channel buffering up to `capacity` values: `csp::bounded`,
    /// `tokio::sync::mpsc::channel`.
    fn bounded<T: Send + 'static>(capacity: usize) -> (Self::Sender<T>, Self::Receiver<T>);
}

/// What a workload needs from a channel's sending end.
pub trait SendEnd<T: Send + 'static>: Clone + Send + 'static {
    /// Sends `value`; gives it back if the channel is closed.
    fn send(&self, value: T) -> impl Future<Output = Result<(), T>> + Send;
}

/// What a workload needs from a channel's receiving end.
pub trait RecvEnd<T: Send + 'static>: Send + 'static {
    /// Receives the next value; `None` once the channel is closed and empty.
    fn recv(&mut self) -> impl Future<Output = Option<T>> + Send;
}

// Each runtime's own futures, adapted by `FutureExt::map` (a field, no state machine of
// its own), so that the workloads time the channels rather than wrappers around them.

impl<T: Send + 'static> SendEnd<T> for csp::Sender<T> {
    fn send(&self, value: T) -> impl Future<Output = Result<(), T>> + Send {
        csp::Sender::send(self, value).map(|sent| sent.map_err(|e| e.0))
    }
}

impl<T: Send + 'static> RecvEnd<T> for csp::Receiver<T> {
    fn recv(&mut self) -> impl Future<Output = Option<T>> + Send {
        csp::Receiver::recv(self).map(Result::ok)
    }
}

impl<T: Send + 'static> SendEnd<T> for tokio::sync::mpsc::Sender<T> {
    fn send(&self, value: T) -> impl Future<Output = Result<(), T>> + Send {
        tokio::sync::mpsc::Sender::send(self, value).map(|sent| sent.map_err(|e| e.0))
    }
}

impl<T: Send + 'static> RecvEnd<T> for tokio::sync::mpsc::Receiver<T> {
    fn recv(&mut self) -> impl Future<Output = Option<T>> + Send {
        tokio::sync::mpsc::Receiver::recv(self)
    }
}

impl Executor for csp::Runtime {
    type JoinHandle<T: Send + 'static> = csp::JoinHandle<T>;
    type JoinError = csp::JoinError;

    /// Deadlock detection is on, as by default, unless `CSP_BENCH_DEADLOCK_DETECTION=off`
    /// (to measure what it costs).
    fn with_workers(workers: usize) -> Self {
        let detection = std::env::var("CSP_BENCH_DEADLOCK_DETECTION").map_or(true, |v| v != "off");
        csp::Runtime::builder()
            .worker_threads(workers)
            .deadlock_detection(detection)
            .build()
            .expect("failed to build the csp runtime")
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        csp::Runtime::block_on(self, future)
    }

    fn spawn_outside<F>(&self, future: F) -> Self::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        csp::Runtime::spawn(self, future)
    }

    fn spawn<F>(future: F) -> Self::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        csp::spawn(future)
    }

    fn yield_now() -> impl Future<Output = ()> + Send {
        csp::yield_now()
    }

    fn sleep(duration: std::time::Duration) -> impl Future<Output = ()> + Send {
        csp::sleep(duration)
    }

    type Sender<T: Send + 'static> = csp::Sender<T>;
    type Receiver<T: Send + 'static> = csp::Receiver<T>;

    fn rendezvous<T: Send + 'static>() -> (Self::Sender<T>, Self::Receiver<T>) {
        csp::channel()
    }

    fn bounded<T: Send + 'static>(capacity: usize) -> (Self::Sender<T>, Self::Receiver<T>) {
        csp::bounded(capacity)
    }
}

impl Executor for tokio::runtime::Runtime {
    type JoinHandle<T: Send + 'static> = tokio::task::JoinHandle<T>;
    type JoinError = tokio::task::JoinError;

    fn with_workers(workers: usize) -> Self {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
            .expect("failed to build the tokio runtime")
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        tokio::runtime::Runtime::block_on(self, future)
    }

    fn spawn_outside<F>(&self, future: F) -> Self::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        tokio::runtime::Runtime::spawn(self, future)
    }

    fn spawn<F>(future: F) -> Self::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        tokio::spawn(future)
    }

    fn yield_now() -> impl Future<Output = ()> + Send {
        tokio::task::yield_now()
    }

    fn sleep(duration: std::time::Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(duration)
    }

    type Sender<T: Send + 'static> = tokio::sync::mpsc::Sender<T>;
    type Receiver<T: Send + 'static> = tokio::sync::mpsc::Receiver<T>;

    fn rendezvous<T: Send + 'static>() -> (Self::Sender<T>, Self::Receiver<T>) {
        tokio::sync::mpsc::channel(1)
    }

    fn bounded<T: Send + 'static>(capacity: usize) -> (Self::Sender<T>, Self::Receiver<T>) {
        tokio::sync::mpsc::channel(capacity)
    }
}

/// One workload: its name and its instantiation for each runtime.
pub struct Workload {
    pub name: &'static str,
    pub csp: fn(&csp::Runtime),
    pub tokio: fn(&tokio::runtime::Runtime),
    /// How many of what one iteration does, for a time per unit (`(200_000, "round
    /// trip")`), where that is the figure of interest.
    pub unit: Option<(usize, &'static str)>,
    /// Messages (or spawns) one iteration makes, for criterion's throughput.
    pub elements: u64,
}

/// One criterion group per workload, with a `csp` and a `tokio` function each, on
/// runtimes built once with the same number of workers. Throughput is in the workload's
/// elements (messages, spawns, yields); sampling is flat, as an iteration takes
/// milliseconds to seconds.
pub fn bench_groups(c: &mut criterion::Criterion, workloads: &[Workload]) {
    let workers = worker_threads();
    let csp = csp::Runtime::with_workers(workers);
    let tokio = tokio::runtime::Runtime::with_workers(workers);
    for workload in workloads {
        let mut group = c.benchmark_group(workload.name);
        group.sampling_mode(criterion::SamplingMode::Flat);
        group.throughput(criterion::Throughput::Elements(workload.elements));
        group.bench_function("csp", |b| b.iter(|| (workload.csp)(&csp)));
        group.bench_function("tokio", |b| b.iter(|| (workload.tokio)(&tokio)));
        group.finish();
    }
}

/// Every workload, in the order they are reported.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        name: "spawn_many",
        csp: spawn_many,
        tokio: spawn_many,
        unit: None,
        elements: SPAWNS as u64,
    },
    Workload {
        name: "spawn_remote",
        csp: spawn_remote,
        tokio: spawn_remote,
        unit: None,
        elements: SPAWNS as u64,
    },
    Workload {
        name: "yield_many",
        csp: yield_many,
        tokio: yield_many,
        unit: None,
        elements: (YIELDERS * YIELDS_PER_PROCESS) as u64,
    },
    Workload {
        name: "chained_spawn",
        csp: chained_spawn,
        tokio: chained_spawn,
        unit: None,
        elements: CHAIN_LENGTH as u64,
    },
];

/// The channel workloads, in the order they are reported.
pub const CHANNEL_WORKLOADS: &[Workload] = &[
    Workload {
        name: "ping_pong",
        csp: ping_pong,
        tokio: ping_pong,
        unit: Some((ROUND_TRIPS, "round trip")),
        elements: ROUND_TRIPS as u64,
    },
    Workload {
        name: "ring",
        csp: ring,
        tokio: ring,
        unit: Some((HOPS, "hop")),
        elements: HOPS as u64,
    },
    Workload {
        name: "fan_in",
        csp: fan_in,
        tokio: fan_in,
        unit: None,
        elements: (PRODUCERS * VALUES_PER_PRODUCER) as u64,
    },
    Workload {
        name: "skynet",
        csp: skynet,
        tokio: skynet,
        unit: None,
        // Every node sends its sum once.
        elements: SKYNET_LEAVES * SKYNET_FANOUT / (SKYNET_FANOUT - 1),
    },
    Workload {
        name: "select4",
        csp: select4,
        tokio: select4,
        // Every choice but the four that find a channel closed receives one value.
        unit: Some((SELECT4_VALUES, "alt")),
        elements: SELECT4_VALUES as u64,
    },
];

/// The timer workloads.
pub const TIMER_WORKLOADS: &[Workload] = &[Workload {
    name: "timers",
    csp: timers,
    tokio: timers,
    unit: None,
    elements: (SLEEPERS * SLEEPS_PER_PROCESS) as u64,
}];

/// Spawns `root` from outside the runtime and blocks until it finishes, so the work
/// `root` spawns starts from inside a process.
pub fn run_in_process<E, F>(rt: &E, root: F) -> F::Output
where
    E: Executor,
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    rt.block_on(rt.spawn_outside(root))
        .expect("the root process failed")
}

/// Awaits every handle in order and sums the outputs.
async fn join_sum<E: Executor>(handles: Vec<E::JoinHandle<usize>>) -> usize {
    let mut sum = 0;
    for handle in handles {
        sum += handle.await.expect("a process failed");
    }
    sum
}

/// The sum of `0..n`, what `join_sum` returns for processes that return their index.
fn sum_below(n: usize) -> usize {
    n * (n - 1) / 2
}

/// Spawn and join throughput from inside the runtime: a root process spawns 100,000
/// processes, each returning its index, then joins them all.
fn spawn_many<E: Executor>(rt: &E) {
    let sum = run_in_process(rt, async {
        let handles: Vec<_> = (0..SPAWNS).map(|i| E::spawn(async move { i })).collect();
        join_sum::<E>(handles).await
    });
    assert_eq!(sum, sum_below(SPAWNS));
}

/// Spawn throughput from outside the runtime: the calling thread, which must be a plain
/// thread (neither a worker nor inside `block_on`), spawns 100,000 processes through the
/// runtime's global queue, then `block_on` joins them all.
fn spawn_remote<E: Executor>(rt: &E) {
    let handles: Vec<_> = (0..SPAWNS)
        .map(|i| rt.spawn_outside(async move { i }))
        .collect();
    assert_eq!(rt.block_on(join_sum::<E>(handles)), sum_below(SPAWNS));
}

/// Rescheduling cost: 200 processes, spawned from a root process, each yield 10,000
/// times.
fn yield_many<E: Executor>(rt: &E) {
    let yields = run_in_process(rt, async {
        let handles: Vec<_> = (0..YIELDERS)
            .map(|_| {
                E::spawn(async {
                    for _ in 0..YIELDS_PER_PROCESS {
                        E::yield_now().await;
                    }
                    YIELDS_PER_PROCESS
                })
            })
            .collect();
        join_sum::<E>(handles).await
    });
    assert_eq!(yields, YIELDERS * YIELDS_PER_PROCESS);
}

/// Spawn latency when each spawn depends on the last: a chain of 10,000 detached
/// processes, each spawning the next; the last reports the chain's length to the root
/// process over a oneshot channel.
fn chained_spawn<E: Executor>(rt: &E) {
    let length = run_in_process(rt, async {
        let (done, length) = oneshot::channel();
        spawn_link::<E>(1, done);
        length.await.expect("the chain dropped its sender")
    });
    assert_eq!(length, CHAIN_LENGTH);
}

/// Spawns link `position` of `chained_spawn`'s chain.
fn spawn_link<E: Executor>(position: usize, done: oneshot::Sender<usize>) {
    let link = E::spawn(async move {
        if position == CHAIN_LENGTH {
            done.send(position).expect("the root stopped waiting");
        } else {
            spawn_link::<E>(position + 1, done);
        }
    });
    drop(link); // detached
}

/// Channel latency, one message each way at a time: the root process sends 200,000
/// numbers to a second process over a rendezvous channel, which sends each back plus one
/// over another.
fn ping_pong<E: Executor>(rt: &E) {
    let replies = run_in_process(rt, async {
        let (ping, mut pinged) = E::rendezvous::<usize>();
        let (pong, mut ponged) = E::rendezvous::<usize>();
        let ponger = E::spawn(async move {
            let mut replies = 0;
            while let Some(n) = pinged.recv().await {
                pong.send(n + 1)
                    .await
                    .expect("the pinger stopped listening");
                replies += 1;
            }
            replies
        });
        for n in 0..ROUND_TRIPS {
            ping.send(n).await.expect("the ponger stopped listening");
            assert_eq!(ponged.recv().await, Some(n + 1));
        }
        drop(ping); // ends the ponger's loop
        ponger.await.expect("the ponger failed")
    });
    assert_eq!(replies, ROUND_TRIPS);
}

/// The thread-ring benchmark: 503 processes in a ring, each receiving from its own
/// rendezvous channel and sending to the next one's. The root process hands process 0 a
/// token worth 1,000,000; each process passes it on less one, and the one that receives
/// 0 stops and returns its index, which closes the ring down: its end of its successor's
/// channel drops, so the successor's `recv` fails and it stops too, and so on round.
fn ring<E: Executor + 'static>(rt: &E) {
    run_in_process(rt, ring_hops::<E>(HOPS));
}

/// [`ring`]'s token: a type no other workload sends, so that the `instructions`
/// example, which runs `ring` beside `ping_pong` (`usize`), compiles channel code of its
/// own for each; sharing it moved `ping_pong`'s count by some 55 instructions.
type RingToken = u32;

/// [`ring`]'s process: passes a token `hops` times round the ring, and checks that
/// exactly the process it stopped at says so.
pub async fn ring_hops<E: Executor + 'static>(hops: usize) {
    let token = RingToken::try_from(hops).expect("fewer hops than a ring token counts");
    let (mut successors, inboxes): (Vec<_>, Vec<_>) =
        (0..RING_SIZE).map(|_| E::rendezvous::<RingToken>()).unzip();
    let first = successors[0].clone();
    successors.rotate_left(1); // process `i` sends to channel `i + 1`
    let processes: Vec<_> = inboxes
        .into_iter()
        .zip(successors)
        .enumerate()
        .map(|(index, (mut inbox, successor))| {
            E::spawn(async move {
                while let Some(token) = inbox.recv().await {
                    if token == 0 {
                        return Some(index);
                    }
                    if successor.send(token - 1).await.is_err() {
                        break;
                    }
                }
                None
            })
        })
        .collect();
    first
        .send(token)
        .await
        .expect("process 0 stopped receiving");
    drop(first);
    let mut stopped_at = None;
    for process in processes {
        if let Some(index) = process.await.expect("a ring process failed") {
            assert!(
                stopped_at.is_none(),
                "two processes received the last token"
            );
            stopped_at = Some(index);
        }
    }
    assert_eq!(stopped_at, Some(hops % RING_SIZE));
}

/// Producer number `producer` of a many-producer workload: sends its share of the values,
/// `producer * count..(producer + 1) * count`, then drops its sender.
async fn send_range<S: SendEnd<u64>>(sender: S, producer: usize, count: usize) {
    let first = (producer * count) as u64;
    for value in first..first + count as u64 {
        sender
            .send(value)
            .await
            .expect("the consumer stopped receiving");
    }
}

/// Contention on one channel: 16 producer processes send 62,500 numbers each (together
/// `0..1_000_000`) into one bounded channel of capacity 128, which the root process
/// drains and sums.
fn fan_in<E: Executor>(rt: &E) {
    let (count, sum) = run_in_process(rt, async {
        let (sender, mut receiver) = E::bounded::<u64>(FAN_IN_CAPACITY);
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|producer| {
                let sender = sender.clone();
                E::spawn(send_range(sender, producer, VALUES_PER_PRODUCER))
            })
            .collect();
        drop(sender); // the channel closes once every producer is done
        let (mut count, mut sum) = (0, 0);
        while let Some(value) = receiver.recv().await {
            count += 1;
            sum += value;
        }
        for producer in producers {
            producer.await.expect("a producer failed");
        }
        (count, sum)
    });
    let values = (PRODUCERS * VALUES_PER_PRODUCER) as u64;
    assert_eq!(count, values);
    assert_eq!(sum, values * (values - 1) / 2);
}

/// The skynet benchmark: a tree of processes, ten children per node, six levels, a
/// million leaves. Leaf `i` sends `i` to its parent; every inner node sends the sum of
/// its children's. Each inner node receives from its own channel, bounded to its ten
/// children (`csp::bounded(10)`, `mpsc::channel(10)`), so no child waits to send: it
/// finishes as soon as its sum is known. The children are detached: only the messages
/// report back.
fn skynet<E: Executor>(rt: &E) {
    let total = run_in_process(rt, async {
        let (sender, mut receiver) = E::bounded::<u64>(1);
        spawn_skynet::<E>(sender, 0, SKYNET_LEAVES);
        receiver.recv().await.expect("the tree's root failed")
    });
    assert_eq!(total, SKYNET_LEAVES * (SKYNET_LEAVES - 1) / 2);
}

/// Spawns the `skynet` node covering leaves `first..first + leaves`, which sends their
/// sum on `parent`.
fn spawn_skynet<E: Executor>(parent: E::Sender<u64>, first: u64, leaves: u64) {
    let node = E::spawn(async move {
        let sum = if leaves == 1 {
            first
        } else {
            let (sender, mut receiver) = E::bounded::<u64>(SKYNET_FANOUT as usize);
            let per_child = leaves / SKYNET_FANOUT;
            for child in 0..SKYNET_FANOUT {
                spawn_skynet::<E>(sender.clone(), first + child * per_child, per_child);
            }
            drop(sender);
            let mut sum = 0;
            for _ in 0..SKYNET_FANOUT {
                sum += receiver.recv().await.expect("a child failed");
            }
            sum
        };
        parent
            .send(sum)
            .await
            .expect("the parent stopped receiving");
    });
    drop(node); // detached
}

/// Choice over several channels: 4 producer processes send 250,000 numbers each
/// (together `0..1_000_000`), each into its own bounded channel of capacity 16; the root
/// process receives them all with a 4-arm choice (see [`Select4`]), repeated until every
/// channel is closed and drained, and counts and sums them.
fn select4<E: Select4>(rt: &E) {
    let tally = run_in_process(rt, async {
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..SELECT4_CHANNELS)
            .map(|_| E::bounded::<u64>(SELECT4_CAPACITY))
            .unzip();
        let producers: Vec<_> = senders
            .into_iter()
            .enumerate()
            .map(|(producer, sender)| {
                // Dropping `sender` at the end closes this producer's channel.
                E::spawn(send_range(sender, producer, SELECT4_VALUES_PER_PRODUCER))
            })
            .collect();
        let Ok(receivers) = receivers.try_into() else {
            unreachable!("one receiver per channel")
        };
        let tally = E::consume_select4(receivers).await;
        for producer in producers {
            producer.await.expect("a producer failed");
        }
        tally
    });
    let values = SELECT4_VALUES as u64;
    assert_eq!(tally.count, values);
    assert_eq!(tally.sum, values * (values - 1) / 2);
}

/// What `select4`'s consumer has received so far, and from which channels it still may.
struct Select4Tally {
    count: u64,
    sum: u64,
    open: [bool; SELECT4_CHANNELS],
}

impl Select4Tally {
    fn new() -> Self {
        Select4Tally {
            count: 0,
            sum: 0,
            open: [true; SELECT4_CHANNELS],
        }
    }

    /// Takes what a choice got from channel `channel`: a value, or `None` once the
    /// channel is closed and drained, after which the consumer no longer chooses it.
    fn take(&mut self, channel: usize, value: Option<u64>) {
        match value {
            Some(value) => {
                self.count += 1;
                self.sum += value;
            }
            None => self.open[channel] = false,
        }
    }

    fn any_open(&self) -> bool {
        self.open.contains(&true)
    }
}

/// `select4`'s consumer, one per runtime, as it needs the runtime's choice macro.
trait Select4: Executor {
    /// Receives from all four channels, one value per choice among those still open,
    /// until every channel is closed and drained. Both macros pick uniformly at random
    /// among ready arms; an arm whose guard (`if open[i]`) is false takes no part.
    fn consume_select4(
        receivers: [Self::Receiver<u64>; SELECT4_CHANNELS],
    ) -> impl Future<Output = Select4Tally> + Send;
}

impl Select4 for csp::Runtime {
    async fn consume_select4(
        [rx0, rx1, rx2, rx3]: [csp::Receiver<u64>; SELECT4_CHANNELS],
    ) -> Select4Tally {
        let mut tally = Select4Tally::new();
        while tally.any_open() {
            let open = tally.open;
            csp::alt! {
                recv(rx0) -> m if open[0] => tally.take(0, m.ok()),
                recv(rx1) -> m if open[1] => tally.take(1, m.ok()),
                recv(rx2) -> m if open[2] => tally.take(2, m.ok()),
                recv(rx3) -> m if open[3] => tally.take(3, m.ok()),
            }
        }
        tally
    }
}

impl Select4 for tokio::runtime::Runtime {
    async fn consume_select4(
        [mut rx0, mut rx1, mut rx2, mut rx3]: [tokio::sync::mpsc::Receiver<u64>; SELECT4_CHANNELS],
    ) -> Select4Tally {
        let mut tally = Select4Tally::new();
        while tally.any_open() {
            let open = tally.open;
            tokio::select! {
                m = rx0.recv(), if open[0] => tally.take(0, m),
                m = rx1.recv(), if open[1] => tally.take(1, m),
                m = rx2.recv(), if open[2] => tally.take(2, m),
                m = rx3.recv(), if open[3] => tally.take(3, m),
            }
        }
        tally
    }
}

/// Timer throughput: a root process spawns 10,000 processes, each sleeping 1 ms ten times
/// in a row, and joins them. With perfect timers it takes 10 ms; the rest is the cost of
/// arming, expiring and waking 100,000 sleeps (and the timers' lateness).
fn timers<E: Executor>(rt: &E) {
    let sum = run_in_process(rt, async {
        let sleepers = (0..SLEEPERS)
            .map(|i| {
                E::spawn(async move {
                    for _ in 0..SLEEPS_PER_PROCESS {
                        E::sleep(SLEEP).await;
                    }
                    i
                })
            })
            .collect();
        join_sum::<E>(sleepers).await
    });
    assert_eq!(sum, sum_below(SLEEPERS));
}
