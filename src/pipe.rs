//! Pipelines: chains of processes connected by channels.
//!
//! Each function here spawns one process, a *stage* (with [`spawn`](crate::spawn), so on
//! the current runtime, or else the default one), and returns the receiving end of its
//! output. Stages are connected by rendezvous channels ([`buffer`]'s output by a bounded
//! one), so a pipeline runs at the pace of its slowest stage, and each stage holds at
//! most one value at a time, besides what buffers hold.
//!
//! A stage ends in one of two ways:
//! - its input is closed and drained: it drops its `Sender`, which closes its output,
//!   so the end of a pipeline's input flows down to its tail;
//! - its output's receivers are all gone: it notices at once, whether it is waiting for
//!   input (it waits in a `prialt! { closed(output), recv(input) }`) or to send (the
//!   send fails), and drops its input, which closes that channel for the stage before.
//!
//! So dropping the tail of a pipeline tears the whole pipeline down, stage by stage up to
//! the [`producer`], and every value in flight is dropped with its channel. (A producer
//! that has ended its stream is no longer part of the pipeline: it runs on to its end.)
//!
//! ```
//! use csp::pipe;
//!
//! # csp::block_on(async {
//! let numbers = pipe::producer(|tx| async move {
//!     for n in 1u64.. {
//!         if tx.send(n).await.is_err() {
//!             return; // the pipeline was torn down
//!         }
//!     }
//! });
//! let squares = pipe::map(numbers, |n| n * n);
//! let odd = pipe::filter(squares, |n| n % 2 == 1);
//!
//! let mut first = Vec::new();
//! for _ in 0..4 {
//!     first.push(odd.recv().await.unwrap());
//! }
//! assert_eq!(first, [1, 9, 25, 49]);
//! drop(odd); // every stage ends, the producer too
//! # });
//! ```
//!
//! A [`Receiver`] is also a [`Stream`](futures::Stream), so a pipeline's tail can be
//! consumed with the usual stream combinators.
//!
//! A stage whose function panics ends as if its input had closed (its output closes
//! after the values it already sent); the panic is reported by the panic hook, as for
//! any detached process.

use std::future::Future;
use std::pin::pin;

use futures::future::{self, Either};

use crate::chan::{Receiver, RecvError, Sender};

/// Spawns a process that runs `f(tx)`, and returns the receiving end of `tx`'s
/// rendezvous channel: the source of a pipeline.
///
/// The process ends when `f`'s future completes or, if sooner, once every receiver is
/// gone before `f` ended its stream (a receiver's `close` then counts as theirs): the
/// future is then dropped where it waits, so a producer ends with its pipeline even
/// while it waits for something else. `f` should still stop when a `send` fails, as a
/// loop that ignores the error never waits again. The channel is `f`'s alone to close
/// from the sending side: dropping (or closing) `tx` ends the stream for the receivers
/// at once, and `f` then runs on to its end, whether or not the receivers stay.
///
/// ```
/// use futures::StreamExt;
///
/// # csp::block_on(async {
/// let letters = csp::pipe::producer(|tx| async move {
///     for c in ['a', 'b', 'c'] {
///         tx.send(c).await.unwrap();
///     }
/// });
/// assert_eq!(letters.collect::<String>().await, "abc");
/// # });
/// ```
#[track_caller]
pub fn producer<T, F, Fut>(f: F) -> Receiver<T>
where
    F: FnOnce(Sender<T>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = crate::channel();
    // Word of the last receiver going before `f` ended its stream, by a channel of its
    // own: `f` holds the only sender of `tx`'s channel, so dropping (or closing) it ends
    // the stream at once and ends nothing else; once it has, the receivers' going tears
    // nothing down, as there is no output left to be unread.
    let (tear_down, torn_down) = crate::bounded::<()>(1);
    rx.chan().on_receivers_gone(Box::new(move |senders_ended| {
        if !senders_ended {
            // The one value ever sent, into room for one: it fails only where the
            // process has ended already. On behalf of the runtime: wherever the last
            // receiver went, this is no use of the channel by foreign code.
            let _ = tear_down.offer(());
        }
    }));
    crate::spawn(async move {
        // `select` polls `f`'s future first, so it sees a failed send before it is
        // dropped for the receivers gone.
        let (work, word) = (pin!(f(tx)), pin!(torn_down.recv()));
        if let Either::Right((Err(RecvError), work)) = future::select(work, word).await {
            // The hook ran (or went) without a word: the stream had ended first.
            work.await;
        }
    });
    rx
}

/// Spawns a stage that applies `f` to each value of `rx`, in order.
///
/// ```
/// use futures::StreamExt;
///
/// # csp::block_on(async {
/// let words = csp::pipe::producer(|tx| async move {
///     for w in ["pipes", "and", "filters"] {
///         tx.send(w).await.unwrap();
///     }
/// });
/// let lengths = csp::pipe::map(words, str::len);
/// assert_eq!(lengths.collect::<Vec<_>>().await, [5, 3, 7]);
/// # });
/// ```
#[track_caller]
pub fn map<T, U>(rx: Receiver<T>, mut f: impl FnMut(T) -> U + Send + 'static) -> Receiver<U>
where
    T: Send + 'static,
    U: Send + 'static,
{
    stage(rx, 0, move |value| Some(f(value)))
}

/// Spawns a stage that passes on the values of `rx` for which `f` returns `true`, in
/// order, and drops the others.
///
/// ```
/// use futures::StreamExt;
///
/// # csp::block_on(async {
/// let numbers = csp::pipe::producer(|tx| async move {
///     for n in 1..=10 {
///         tx.send(n).await.unwrap();
///     }
/// });
/// let multiples_of_3 = csp::pipe::filter(numbers, |n| n % 3 == 0);
/// assert_eq!(multiples_of_3.collect::<Vec<_>>().await, [3, 6, 9]);
/// # });
/// ```
#[track_caller]
pub fn filter<T: Send + 'static>(
    rx: Receiver<T>,
    mut f: impl FnMut(&T) -> bool + Send + 'static,
) -> Receiver<T> {
    stage(rx, 0, move |value| f(&value).then_some(value))
}

/// Spawns a stage that passes on the values of `rx` through a channel buffering up to
/// `n` of them, so the stages before it can run up to `n` values ahead of the stages
/// after it. `buffer(rx, 0)` adds a stage but no buffering.
///
/// Values still buffered when the pipeline is torn down are dropped.
///
/// ```
/// # csp::block_on(async {
/// let numbers = csp::pipe::producer(|tx| async move {
///     for n in 0.. {
///         if tx.send(n).await.is_err() {
///             return;
///         }
///     }
/// });
/// let buffered = csp::pipe::buffer(numbers, 8);
/// assert_eq!(buffered.capacity(), Some(8));
/// assert_eq!(buffered.recv().await, Ok(0));
/// # });
/// ```
#[track_caller]
pub fn buffer<T: Send + 'static>(rx: Receiver<T>, n: usize) -> Receiver<T> {
    stage(rx, n, Some)
}

/// Spawns a stage that passes on the values of every receiver of `rxs` as they come,
/// choosing fairly (uniformly at random) among those with a value ready, so no input
/// can starve another. Each input's values keep their order; the output closes once
/// every input is closed and drained.
///
/// ```
/// use futures::StreamExt;
///
/// # csp::block_on(async {
/// let evens = csp::pipe::producer(|tx| async move {
///     for n in (0..10).step_by(2) {
///         tx.send(n).await.unwrap();
///     }
/// });
/// let odds = csp::pipe::producer(|tx| async move {
///     for n in (1..10).step_by(2) {
///         tx.send(n).await.unwrap();
///     }
/// });
/// let mut all: Vec<u32> = csp::pipe::merge(vec![evens, odds]).collect().await;
/// all.sort_unstable();
/// assert_eq!(all, (0..10).collect::<Vec<_>>());
/// # });
/// ```
#[track_caller]
pub fn merge<T: Send + 'static>(rxs: Vec<Receiver<T>>) -> Receiver<T> {
    let (tx, rx) = crate::channel();
    crate::spawn(async move {
        let mut inputs = rxs;
        while !inputs.is_empty() {
            let Some((i, value)) = next_any(&inputs, &tx).await else {
                break;
            };
            match value {
                Ok(value) => {
                    if tx.send(value).await.is_err() {
                        break;
                    }
                }
                // Closed and drained: stop choosing it.
                Err(RecvError) => drop(inputs.swap_remove(i)),
            }
        }
    });
    rx
}

/// Spawns a stage that passes `step(value)` on, where it is `Some`, for each value of
/// `rx`, through a channel of capacity `capacity`.
#[track_caller]
fn stage<T, U>(
    rx: Receiver<T>,
    capacity: usize,
    mut step: impl FnMut(T) -> Option<U> + Send + 'static,
) -> Receiver<U>
where
    T: Send + 'static,
    U: Send + 'static,
{
    let (tx, out) = crate::bounded(capacity);
    crate::spawn(async move {
        while let Some(value) = next(&rx, &tx).await {
            let Some(value) = step(value) else {
                continue;
            };
            if tx.send(value).await.is_err() {
                break;
            }
        }
    });
    out
}

/// The next value of `input`, or `None` once `input` is closed and drained or the
/// channel of `output` is closed (checked first).
async fn next<T, U>(input: &Receiver<T>, output: &Sender<U>) -> Option<T> {
    crate::prialt! {
        closed(output) => None,
        recv(input) -> value => value.ok(),
    }
}

/// The position and outcome of whichever of `inputs` has a value (or is closed and
/// drained) first, chosen fairly among those ready at once, or `None` once the channel
/// of `output` is closed.
async fn next_any<T>(
    inputs: &[Receiver<T>],
    output: &Sender<T>,
) -> Option<(usize, Result<T, RecvError>)> {
    crate::alt! {
        closed(output) => None,
        recv_any(inputs) -> (i, value) => Some((i, value)),
    }
}
