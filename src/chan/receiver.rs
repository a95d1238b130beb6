//! The receiving end, its future, and its `Stream`.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures::stream::{FusedStream, Stream};

use crate::chan::core::{Chan, Side};
use crate::chan::end::{channel_end_methods, sealed};
use crate::chan::error::{RecvError, TryRecvError};
use crate::chan::future::channel_future;
use crate::chan::ops::{ReadOp, RecvOp};
use crate::loom::sync::Arc;
use crate::runtime::block_on::park_on;
use crate::runtime::context;
use crate::task::panic::discard;
use crate::wait::claim::Wakes;
use crate::wait::single::Single;

/// The waiting entry a `Receiver` keeps for `poll_recv`; it holds its own reference to
/// the channel.
type RecvNode<T> = Single<ReadOp<T, Arc<Chan<T>>>>;

/// The receiving end of a channel. Clone it for more receivers (any-to-any: each value
/// goes to exactly one); the channel closes when the last `Receiver` is dropped (or on
/// [`close`](Self::close)). Also a [`Stream`] of the values, ending when the channel is
/// closed and drained.
///
/// ```
/// use futures::StreamExt;
/// # csp::block_on(async {
/// let (tx, mut rx) = csp::unbounded();
/// for i in 0..3 {
///     tx.send(i).await.unwrap();
/// }
/// drop(tx);
/// let all: Vec<i32> = (&mut rx).collect().await;
/// assert_eq!(all, [0, 1, 2]);
/// # });
/// ```
pub struct Receiver<T> {
    /// The entry `poll_recv` and the `Stream` wait with, boxed on first use.
    node: Option<Pin<Box<RecvNode<T>>>>,
    /// The stream has ended.
    terminated: bool,
    chan: Arc<Chan<T>>,
}

// SAFETY: the boxed node (the only part that is not `Sync`) is reached only through
// `&mut self`.
unsafe impl<T: Send> Sync for Receiver<T> {}

impl<T> Receiver<T> {
    pub(crate) fn new(chan: Arc<Chan<T>>) -> Self {
        Receiver {
            node: None,
            terminated: false,
            chan,
        }
    }

    pub(crate) fn chan(&self) -> &Chan<T> {
        &self.chan
    }

    /// Receives a value, waiting until one is available. Fails once the channel is
    /// closed and drained. Dropping the future never loses a value: one handed to it
    /// before the drop goes back to the channel, ahead of all others.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (tx, rx) = csp::channel();
    /// csp::spawn(async move { tx.send(42).await });
    /// assert_eq!(rx.recv().await, Ok(42));
    /// # });
    /// ```
    pub fn recv(&self) -> RecvFuture<'_, T> {
        RecvFuture::new(RecvOp::for_future(&self.chan))
    }

    /// Receives without waiting: a buffered value, or a waiting sender's.
    ///
    /// # Panics
    /// Only if the waker of a sender it wakes panics (foreign code): every sender is
    /// woken first, and the value it took goes back to the channel, ahead of the others.
    ///
    /// ```
    /// let (tx, rx) = csp::bounded(2);
    /// tx.try_send('a').unwrap();
    /// assert_eq!(rx.try_recv(), Ok('a'));
    /// assert_eq!(rx.try_recv(), Err(csp::TryRecvError::Empty));
    /// ```
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.chan.note_use();
        self.try_recv_noted()
    }

    /// A receive for the quick pass of an `alt!` (`alt/quick.rs`): the outcome if the
    /// receive completes now (a value, or the close), `None` if it would wait. An empty
    /// channel is told by its readiness hint, without the lock, when it can be.
    #[inline]
    pub(crate) fn recv_if_ready(&self) -> Option<Result<T, RecvError>> {
        self.chan.note_use();
        if !self.chan.may_recv() {
            return None;
        }
        match self.try_recv_noted() {
            Ok(value) => Some(Ok(value)),
            Err(TryRecvError::Closed) => Some(Err(RecvError)),
            Err(TryRecvError::Empty) => None,
        }
    }

    /// [`try_recv`](Self::try_recv) once the use is noted.
    #[inline]
    fn try_recv_noted(&self) -> Result<T, TryRecvError> {
        let mut wakes = Wakes::default();
        let result = {
            let mut state = self.chan.lock();
            match state.take(None, &mut wakes) {
                Some(value) => Ok(value),
                None if state.is_closed() => Err(TryRecvError::Closed),
                None => Err(TryRecvError::Empty),
            }
        };
        match wakes.run_catching() {
            // The waker of the sender it took from panicked: the value goes back to the
            // channel, ahead of the others, before the panic reaches the caller (unless
            // this thread is unwinding already: then the caller gets the value).
            Err(panic) if !std::thread::panicking() => {
                if let Ok(value) = result {
                    let mut wakes = Wakes::default();
                    self.chan.lock().give_back(value, &mut wakes);
                    // A second panic would only repeat the first; every owner is woken.
                    if let Err(again) = wakes.run_catching() {
                        discard(again);
                    }
                }
                std::panic::resume_unwind(panic)
            }
            // Unwinding already: the payload is let go (its own drop may panic).
            Err(panic) => {
                discard(panic);
                result
            }
            Ok(()) => result,
        }
    }

    /// Receives, blocking the OS thread until a value arrives or the channel closes:
    /// for plain threads and blocking-pool closures.
    ///
    /// # Panics
    /// If called while csp polls a process or a `block_on` future on this thread
    /// (`.await` [`recv`](Self::recv) instead).
    ///
    /// ```
    /// let (tx, rx) = csp::bounded(1);
    /// tx.try_send(5).unwrap();
    /// assert_eq!(rx.recv_blocking(), Ok(5));
    /// ```
    #[track_caller]
    pub fn recv_blocking(&self) -> Result<T, RecvError> {
        context::assert_may_block("Receiver::recv_blocking");
        // A blocked thread is outside every runtime's view.
        self.chan.mark_foreign();
        park_on(self.recv())
    }

    /// Polls for a value, for hand-written futures and streams: the waiting entry lives
    /// in this `Receiver` (boxed once, on first use), so no future needs to be kept.
    ///
    /// Unlike a [`recv`](Self::recv) future, a `Receiver` waiting here is never handed a
    /// value: it is woken when one may be available and takes it when polled again, so
    /// one that stops polling (its `next()` future dropped) keeps nothing from other
    /// receivers. A rendezvous sender waits until it is polled (a rendezvous `try_send`
    /// does not count it as a waiting receiver).
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (tx, mut rx) = csp::bounded(1);
    /// tx.send(3).await.unwrap();
    /// let v = std::future::poll_fn(|cx| rx.poll_recv(cx)).await;
    /// assert_eq!(v, Ok(3));
    /// # });
    /// ```
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, RecvError>> {
        let chan = &self.chan;
        chan.note_use();
        chan.note_user(Side::Recv, cx.waker());
        let node = self
            .node
            .get_or_insert_with(|| Box::pin(Single::new(ReadOp::new(chan.clone()))));
        loop {
            ready!(node.as_mut().poll(cx));
            let result = node.as_ref().op().take_result();
            node.as_mut().consumed();
            if let Some(result) = result {
                return Poll::Ready(result);
            }
            // Woken as a reader: a value may be there now; look again.
        }
    }

    channel_end_methods!(crate::chan::core::Side::Recv);
}

impl<T> sealed::Sealed<T> for Receiver<T> {
    fn channel_addr(&self) -> *const () {
        Arc::as_ptr(&self.chan).cast()
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        self.chan.note_use();
        self.chan.add_receiver();
        Receiver::new(self.chan.clone())
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        // Unlink the node (giving back a value handed to it) before the count drops.
        self.node = None;
        self.chan.drop_receiver();
    }
}

impl<T> Stream for Receiver<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if self.terminated {
            return Poll::Ready(None);
        }
        match ready!(self.poll_recv(cx)) {
            Ok(value) => Poll::Ready(Some(value)),
            Err(RecvError) => {
                self.terminated = true;
                Poll::Ready(None)
            }
        }
    }
}

impl<T> FusedStream for Receiver<T> {
    fn is_terminated(&self) -> bool {
        self.terminated
    }
}

impl<T> std::fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("channel", &self.chan.id())
            .field("capacity", &self.chan.cap())
            .field("closed", &self.chan.is_closed())
            .finish()
    }
}

channel_future! {
    /// The future of [`Receiver::recv`]: the next value, or `Err` once the channel is
    /// closed and drained.
    RecvFuture => RecvOp<T, &'a Chan<T>, false>, Result<T, RecvError>
}
