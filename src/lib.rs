//! # csp: communicating sequential processes for Rust
//!
//! Processes are plain Rust futures, run by a work-stealing executor. They talk over
//! channels: rendezvous by default ([`channel`]: a send completes when a receiver has
//! taken the value), also [`bounded`] and [`unbounded`]. A send to a waiting receiver
//! hands over the value and the CPU: the receiver runs next on the same worker.
//!
//! ```
//! let rt = csp::Runtime::new().unwrap();
//! let total = rt.block_on(async {
//!     let (tx, rx) = csp::channel::<u64>();
//!     // Four workers, each sending its result over the same channel.
//!     for i in 1..=4u64 {
//!         let tx = tx.clone();
//!         csp::spawn(async move { tx.send(i * 10).await.unwrap() });
//!     }
//!     drop(tx); // the channel closes once every worker's Sender is gone
//!     let mut total = 0;
//!     while let Ok(v) = rx.recv().await {
//!         total += v;
//!     }
//!     total
//! });
//! assert_eq!(total, 100);
//! ```
//!
//! Processes can be spawned from anywhere, including plain threads and other executors,
//! and their [`JoinHandle`]s awaited from anywhere:
//!
//! ```
//! let handle = std::thread::spawn(|| csp::spawn(async { "from a thread" }))
//!     .join()
//!     .unwrap();
//! assert_eq!(csp::block_on(handle).unwrap(), "from a thread");
//! ```
//!
//! Beyond channels:
//!
//! - [`alt!`] and [`prialt!`] choose among sends and receives atomically (exactly one
//!   fires, no value is lost), with guards, timeouts (`after`, `at`), cancellation
//!   (`cancelled`) and `default`; [`Select`] builds such a choice at run time.
//! - Structured concurrency: [`par!`] runs futures as parallel processes and waits for
//!   all of them, and [`try_par!`] does so for `Result`s; in both, the first failure
//!   aborts the other branches. A [`JoinSet`] owns a set of processes, aborted when it is
//!   dropped; a [`CancellationToken`] is a cancellation signal apart from channel
//!   closure. [`pipe`] chains processes into pipelines that tear down when their tail is
//!   dropped.
//! - Timers are events like any other: [`sleep`], [`timeout`], and the channels
//!   [`after`] and [`tick`], which compose with `alt!`.
//! - With the `io` feature (on by default), `csp::net` has sockets for processes, served
//!   by the runtime's own I/O driver, which its workers sleep in while they wait for
//!   work;
//!   [`Builder::on_thread_start`] can put csp's threads in another runtime's context
//!   (with the `tokio` feature, `Builder::enter_tokio` does it for tokio in one line),
//!   and [`Sender::sink`] makes a sender a `futures::Sink`.
//! - [`#[csp::main]`](macro@main) and [`#[csp::test]`](macro@test) run an `async fn` on
//!   a runtime; a program whose processes all wait on one another forever is reported,
//!   naming each process and what it waits on, instead of hanging (see
//!   [`Builder::deadlock_detection`], and [`Builder::on_deadlock`] for a runtime no
//!   `block_on` waits on). [`Handle::metrics`] and [`Handle::processes`] read a
//!   runtime's counters and dump from anywhere.
//! - With the `console` feature, [`Builder::console`] (or `CSP_CONSOLE=addr`) serves a
//!   page that shows the running program: its processes and what each waits on, the
//!   wait graph, plots of the counters and warnings such as a poll that held its worker
//!   too long; with JSON, SVG and Prometheus `/metrics` beside it. `kill -QUIT` prints
//!   the processes and the wait graph, and the program goes on.
//!
//! ```
//! use std::time::Duration;
//!
//! #[csp::main(worker_threads = 2)]
//! async fn main() {
//!     let (tx, rx) = csp::channel::<u64>();
//!     let (sum, ()) = csp::par!(
//!         async move {
//!             let mut sum = 0;
//!             loop {
//!                 csp::alt! {
//!                     recv(rx) -> v => match v {
//!                         Ok(v) => sum += v,
//!                         Err(_) => break sum, // every sender is gone
//!                     },
//!                     after(Duration::from_secs(5)) => break sum,
//!                 }
//!             }
//!         },
//!         async move {
//!             for v in 1..=10 {
//!                 tx.send(v).await.unwrap();
//!             }
//!         },
//!     );
//!     assert_eq!(sum, 55);
//! }
//! ```
//!
//! # Choosing without waiting
//!
//! A choice that does not wait ([`Select::try_select`], `alt!` and `prialt!` with a
//! `default` arm, an `after` arm of zero) acts on the channels' state at one moment:
//! it fires an arm that could complete at the moment it fired, or it reports that none
//! was ready only if there was a moment at which none could complete. Two channels of
//! which one always holds a value (another thread moving a token between them, say)
//! never make `default` fire. The same holds for `try_send`, `try_recv`, `len`,
//! `is_empty` and `is_full`, each of which decides under its channel's lock, and for a
//! `closed` arm. The argument for each shortcut that keeps a choice fast is in
//! `src/alt/mod.rs`.
//!
//! # A process that blocks its thread
//!
//! A process that does blocking work inside `poll` (a long computation, a blocking
//! system call) holds its worker for that long, as in any async runtime: use
//! [`spawn_blocking`] for such work. What it woke meanwhile does not wait for it: a
//! process woken into that worker's handoff slot, the ones pushed out of the slot and
//! the worker's resting process are taken over by the runtime's watchdog once the poll
//! has run 5 ms, and another worker runs them ([`Metrics::takeovers`] counts it; with
//! two workers or more, on Linux, where the `membarrier` system call lets the worker's
//! side of that agreement cost nothing). Elsewhere they wait for the poll to return, as
//! tokio's LIFO slot does.
//!
//! Where things are: the process state machine in `src/task/state.rs`, the scheduling
//! policy in `src/runtime/worker.rs`, the channel core in `src/chan/core.rs`, and the
//! claim flag every choice completes through in `src/wait/claim.rs`.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, missing_debug_implementations)]

// The macros name their support code `::csp::__private`; this lets the crate use them too.
extern crate self as csp;

/// The README's examples, run as doc tests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod alt;
mod cancel;
mod chan;
#[cfg(all(feature = "console", not(loom)))]
mod console;
mod id;
mod join_set;
pub(crate) mod loom;
mod par;
pub mod pipe;
mod runtime;
mod task;
mod time;
mod tuning;
mod wait;

pub use alt::{Select, SelectFuture, Selected};
pub use cancel::{CancellationToken, Cancelled, DropGuard};
/// CSP choice: waits until one of several channel operations can complete, performs
/// exactly that one, and evaluates to its arm's body. Among arms ready at once, one is
/// picked uniformly at random, a `recv_any` or `send_any` arm counting as one arm however
/// many of its channels are ready ([`prialt!`] picks the first in written order).
///
/// ```
/// # csp::block_on(async {
/// let (tx, rx) = csp::bounded::<u32>(1);
/// let (out, out_rx) = csp::bounded::<&str>(1);
/// tx.try_send(7).unwrap();
/// let got = csp::alt! {
///     recv(rx) -> msg => msg.ok(),
///     send(out, "hello") -> res => { res.unwrap(); None }
/// };
/// // Either arm could fire (both were ready); exactly one did.
/// assert!(got == Some(7) || out_rx.try_recv() == Ok("hello"));
/// # });
/// ```
///
/// Arms, each optionally guarded by `if condition` (evaluated once, before waiting; a
/// false guard disables the arm and skips evaluating a send's value):
/// - `recv(rx) -> msg => ..`: `msg: Result<T, RecvError>`;
/// - `send(tx, value) -> res => ..`: `res: Result<(), SendError<T>>`; a send arm that
///   does not fire delivers nothing and its value is dropped;
/// - `recv_any(&rxs) -> (i, msg) => ..`: a receive on each receiver of a slice (or
///   array, or `Vec`) of receivers or of references to them; `i` is the position of the
///   one that fired; an empty set is a disabled arm;
/// - `send_any(&txs, value) -> (i, res) => ..`: one value, offered on each sender of a
///   slice (or array, or `Vec`); whichever can take it first does, and `i` is its
///   position; an empty set is a disabled arm;
/// - `closed(tx) => ..`: fires once the channel of `tx` is closed;
/// - `cancelled(token) => ..`: fires once the [`CancellationToken`] `token` (or a
///   reference to one) is cancelled;
/// - `after(duration) => ..`: fires once `duration` has passed since the alt started
///   with no other arm fired;
/// - `at(deadline) => ..`: fires once the [`Instant`](std::time::Instant) `deadline`
///   has passed with no other arm fired (at once if it has passed and no arm is ready);
///   an alt takes one `after` or `at` arm;
/// - `default => ..`: runs if no arm is ready right now (the alt does not wait; not
///   together with `after` or `at`). The choice is linearizable, as Go's `select` with
///   `default` and crossbeam's `try_select` are: `default` runs only if there was one
///   moment at which no other arm could complete, whatever other threads do to the
///   channels meanwhile (see [Choosing without waiting](crate#choosing-without-waiting)).
///
/// Channel operands may be ends or references to ends; they are borrowed, never moved,
/// and only while the alt chooses: the chosen arm's body runs after every arm has been
/// dropped, so a body may assign to what another arm's operand borrowed (Go's timer
/// reset, below). `return`, `?`, `break` and `continue` in a body act on the enclosing
/// function or loop.
/// Dropping the future that contains a pending `alt!` has no effect on any channel
/// (except that an operation a counterpart already committed to still takes effect: a
/// value handed to a recv arm goes back to its channel). With every arm disabled and no
/// `default` or `after`, the alt panics.
///
/// ```
/// # csp::block_on(async {
/// let (tx, rx) = csp::channel::<u32>();
/// let nothing_yet = csp::alt! {
///     recv(rx) -> msg => Some(msg),
///     default => None,
/// };
/// assert_eq!(nothing_yet, None);
/// # drop(tx);
/// # });
/// ```
///
/// A timeout, and a value for whichever of several workers is free first:
///
/// ```
/// use std::time::Duration;
///
/// # csp::block_on(async {
/// let (workers, inboxes): (Vec<_>, Vec<_>) = (0..3).map(|_| csp::bounded::<u32>(1)).unzip();
/// workers[0].try_send(0).unwrap(); // worker 0 is busy
/// let (jobs_tx, jobs) = csp::channel::<u32>();
/// let handed_to = csp::alt! {
///     send_any(&workers, 42) -> (i, res) => { res.unwrap(); Some(i) },
///     recv(jobs) -> _job => None,
///     after(Duration::from_millis(50)) => None,
/// };
/// assert!(matches!(handed_to, Some(1 | 2)));
/// # drop((jobs_tx, inboxes));
/// # });
/// ```
///
/// An idle timeout reset by every message, as Go's `timer = time.After(d)` in a
/// `select` loop, and a deadline for the whole conversation:
///
/// ```
/// use std::time::{Duration, Instant};
///
/// # csp::block_on(async {
/// let (tx, rx) = csp::bounded::<u32>(4);
/// for i in 0..3 {
///     tx.try_send(i).unwrap();
/// }
/// let give_up = Instant::now() + Duration::from_secs(10);
/// let mut idle = csp::after(Duration::from_millis(20));
/// let mut got = Vec::new();
/// loop {
///     csp::alt! {
///         recv(rx) -> msg => {
///             got.push(msg.unwrap());
///             idle = csp::after(Duration::from_millis(20)); // `idle` was an operand
///         }
///         recv(idle) -> _ => break, // 20 ms without a message
///         at(give_up) => break,
///     }
/// }
/// assert_eq!(got, [0, 1, 2]);
/// # drop(tx);
/// # });
/// ```
pub use csp_macros::alt;
pub use join_set::{JoinNext, JoinSet};

/// As [`alt!`], but among arms ready at once, the first in written order fires.
///
/// ```
/// # csp::block_on(async {
/// let (tx1, rx1) = csp::bounded::<u8>(1);
/// let (tx2, rx2) = csp::bounded::<u8>(1);
/// tx1.try_send(1).unwrap();
/// tx2.try_send(2).unwrap();
/// let first = csp::prialt! {
///     recv(rx1) -> v => v.unwrap(),
///     recv(rx2) -> v => v.unwrap(),
/// };
/// assert_eq!(first, 1);
/// # });
/// ```
pub use csp_macros::prialt;

/// Parallel composition: runs each branch as a process of its own and waits for all of
/// them.
///
/// `par!(a, b, ..)` evaluates to the tuple of the branches' outputs, in written order
/// (`par!()` is `()`, and `par!(a)` the 1-tuple `(a,)`). Since the branches are separate
/// processes, they can talk to each other:
///
/// ```
/// # csp::block_on(async {
/// let (tx, rx) = csp::channel::<u32>();
/// let (sent, got) = csp::par!(
///     async move { tx.send(7).await.is_ok() },
///     async move { rx.recv().await.unwrap() * 6 },
/// );
/// assert!(sent);
/// assert_eq!(got, 42);
/// # });
/// ```
///
/// `par!(for PATTERN in ITERATOR => FUTURE)` runs `FUTURE` as a process for each item of
/// the iterator and evaluates to a `Vec` of the outputs, in the iterator's order:
///
/// ```
/// # csp::block_on(async {
/// let squares = csp::par!(for i in 1..=4u64 => async move { i * i });
/// assert_eq!(squares, [1, 4, 9, 16]);
/// # });
/// ```
///
/// `FUTURE` is evaluated once per item, inside a loop of `par!`'s own: an unlabelled
/// `break` or `continue` there that no loop inside `FUTURE` takes is a compile error
/// (it would act on that loop, not on yours); a labelled one leaves `par!` for your
/// loop, aborting the branches spawned so far, as `?` there does.
///
/// `par!` awaits, so it goes inside `async` code. Each branch is evaluated and
/// [`spawn`]ed in written order, on the current runtime (or the default one), so it must
/// be `Send + 'static`: move what it needs into it (`futures::join!` joins futures that
/// borrow, inside one process). The process of a branch is `spawned_at` the branch.
///
/// A branch that panics stops no other: `par!` still waits for every branch to end,
/// then resumes in the caller the panic of the first panicking branch in written order
/// (as [`std::thread::scope`] waits for its threads); the other panics are dropped.
/// Outputs of branches that completed are dropped before the panic is resumed (a panic
/// of such a drop is reported by the panic hook and goes no further). (A branch
/// cancelled because its runtime is shutting down, with no branch failed, makes `par!`
/// panic with a message that says so.)
///
/// ```
/// # csp::block_on(async {
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
/// use futures::FutureExt;
///
/// let finished = Arc::new(AtomicBool::new(false));
/// let par = {
///     let finished = finished.clone();
///     async move {
///         csp::par!(
///             async {
///                 csp::sleep(Duration::from_millis(20)).await;
///                 panic!("first in written order");
///             },
///             async { panic!("first in time") },
///             async move {
///                 csp::sleep(Duration::from_millis(40)).await;
///                 finished.store(true, Ordering::SeqCst);
///             },
///         )
///     }
/// };
/// let payload = std::panic::AssertUnwindSafe(par).catch_unwind().await.unwrap_err();
/// assert_eq!(*payload.downcast::<&str>().unwrap(), "first in written order");
/// assert!(finished.load(Ordering::SeqCst)); // waited for, not aborted
/// # });
/// ```
///
/// So a branch that waits for a peer that panicked waits for ever (deadlock detection
/// reports it): to stop the others at the first failure, use [`try_par!`], which fails
/// fast on a panic or an `Err`.
///
/// Dropping the future that contains a pending `par!` aborts every branch still running:
/// their futures are dropped by their workers, soon after, not before that drop returns
/// (a branch in the middle of a poll finishes the poll first).
pub use csp_macros::par;

/// As [`par!`], for branches that return `Result<_, E>` (one `E` for all): evaluates to
/// `Ok` of the outputs, or to the first error, and fails fast. The first branch to fail,
/// by returning `Err` or by panicking, has every other branch still running aborted (as
/// [`JoinHandle::abort`] does); once each has ended, its future dropped, `try_par!`
/// returns that `Err` (or resumes that panic), the first in time: a later one, often a
/// consequence (a branch that finds its peers aborted and unwraps a failed send), never
/// replaces it. A branch caught in a long poll ends when that poll returns. The role of
/// tokio's `try_join!` and Go's `errgroup`, with the branches as parallel processes.
///
/// ```
/// # csp::block_on(async {
/// // A pool of four workers; one fails at item 10, the others would wait forever.
/// let (_keep_open, rx) = csp::channel::<u32>();
/// let failed = csp::try_par!(for worker in 0..4 => {
///     let rx = rx.clone();
///     async move {
///         if worker == 2 {
///             return Err("item 10 is malformed");
///         }
///         while let Ok(_item) = rx.recv().await {} // never ends on its own
///         Ok(())
///     }
/// });
/// assert_eq!(failed, Err("item 10 is malformed"));
/// # });
/// ```
///
/// The tuple form, and the outputs when every branch succeeds:
///
/// ```
/// # csp::block_on(async {
/// use std::time::Duration;
///
/// async fn fetch(id: u32) -> Result<u32, String> {
///     if id == 3 {
///         return Err(format!("record {id} is missing"));
///     }
///     csp::sleep(Duration::from_secs(3600)).await; // cancelled long before
///     Ok(id)
/// }
///
/// let all = csp::try_par!(fetch(1), fetch(2), fetch(3));
/// assert_eq!(all, Err("record 3 is missing".to_string()));
///
/// let squares = csp::try_par!(for i in 1..=3u64 => async move { Ok::<_, String>(i * i) });
/// assert_eq!(squares, Ok(vec![1, 4, 9]));
/// # });
/// ```
///
/// As with `par!`, `try_par!(a, b, ..)` makes a tuple (`Result<(A, B, ..), E>`) and
/// `try_par!(for PATTERN in ITERATOR => FUTURE)` a `Vec` (`Result<Vec<T>, E>`); each
/// branch is a process, so it must be `Send + 'static`.
pub use csp_macros::try_par;

/// Runs an `async fn` on a new csp runtime; usually `main`.
///
/// The function becomes a plain `fn` of the same name, visibility, attributes and return
/// type. It builds a [`Runtime`] with deadlock detection on, [`block_on`](Runtime::block_on)s
/// the body, then shuts the runtime down with
/// [`shutdown_timeout`](Runtime::shutdown_timeout) of one second, so a detached process
/// that never ends cannot hold up the program's exit. `main` may return `()` or a
/// `Result<(), E: Debug>`:
///
/// ```
/// #[csp::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let n: u64 = "21".parse()?;
///     let doubled = csp::spawn(async move { n * 2 }).await?;
///     assert_eq!(doubled, 42);
///     Ok(())
/// }
/// ```
///
/// `worker_threads = N` (an integer literal, at least 1) sets the number of worker
/// threads; by default there is one per core. The attribute fits any `async fn` without
/// parameters:
///
/// ```
/// #[csp::main(worker_threads = 2)]
/// async fn sum_of_squares() -> u64 {
///     csp::par!(for i in 1..=3u64 => async move { i * i }).into_iter().sum()
/// }
///
/// assert_eq!(sum_of_squares(), 14);
/// ```
///
/// `console = "addr"` serves the runtime's console there ([`Builder::console`]; feature
/// `console`):
///
/// ```no_run
/// #[csp::main(console = "127.0.0.1:6669")]
/// async fn main() {
///     // Open http://127.0.0.1:6669/ while this runs.
///     csp::sleep(std::time::Duration::from_secs(60)).await;
/// }
/// ```
pub use csp_macros::main;

/// Runs an `async fn` test on a new csp runtime.
///
/// The function becomes a `#[test]` of the same name that builds a [`Runtime`] with
/// deadlock detection on and [`block_on`](Runtime::block_on)s the body; the runtime is
/// dropped when the test ends (if the body panicked, with
/// [`shutdown_timeout`](Runtime::shutdown_timeout)`(1 s)`, so that a worker stuck in a
/// poll cannot hold the failure back from the harness; a body that returns, an `Err`
/// included, drops it plainly, waiting for every worker). It takes `worker_threads = N` and `console = "addr"` as
/// [`main`](macro@main) does, may return a `Result` as any test may, and composes with other test attributes
/// such as `#[should_panic]`:
///
/// ```
/// #[csp::test]
/// async fn rendezvous() {
///     let (tx, rx) = csp::channel();
///     csp::spawn(async move { tx.send("ping").await.unwrap() });
///     assert_eq!(rx.recv().await, Ok("ping"));
/// }
///
/// #[csp::test(worker_threads = 2)]
/// #[should_panic(expected = "boom")]
/// async fn a_branch_panics() {
///     csp::par!(async {}, async { panic!("boom") });
/// }
/// ```
pub use csp_macros::test;

#[cfg(all(feature = "io", not(loom)))]
pub mod net;

/// What the macros expand to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::alt::macro_support::*;
    pub use crate::alt::{quick_pass, quick_recv};
    pub use crate::par::macro_support::*;
    pub use crate::runtime::entry::{run_main, run_test};
}
pub use chan::{
    ChannelEnd, Closed, Receiver, RecvError, RecvFuture, SendError, SendFuture, SendSink, Sender,
    TryRecvError, TrySendError, bounded, channel, unbounded,
};
pub use runtime::{
    Builder, Handle, Metrics, ProcessInfo, ProcessState, Runtime, block_on, spawn, spawn_blocking,
    yield_now,
};
pub use task::JoinError;
pub use time::{Elapsed, Sleep, Timeout, after, sleep, sleep_until, tick, timeout};
pub use wait::JoinHandle;
