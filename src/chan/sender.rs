//! The sending end and its futures.

use crate::chan::core::Chan;
use crate::chan::end::{channel_end_methods, sealed};
use crate::chan::error::{SendError, TrySendError};
use crate::chan::future::channel_future;
use crate::chan::ops::{ClosedOp, SendOp};
use crate::loom::sync::Arc;
use crate::runtime::block_on::park_on;
use crate::runtime::context;
use crate::wait::claim::Wakes;

/// The sending end of a channel. Clone it for more senders (any-to-any); the channel
/// closes when the last `Sender` is dropped (or on [`close`](Self::close)).
///
/// ```
/// # csp::block_on(async {
/// let (tx, rx) = csp::channel();
/// csp::spawn(async move { tx.send("hi").await.unwrap() });
/// assert_eq!(rx.recv().await, Ok("hi"));
/// # });
/// ```
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
}

impl<T> Sender<T> {
    pub(crate) fn new(chan: Arc<Chan<T>>) -> Self {
        Sender { chan }
    }

    pub(crate) fn chan(&self) -> &Chan<T> {
        &self.chan
    }

    /// Sends `value`: completes once a receiver has taken it (rendezvous) or it is
    /// buffered. Fails, giving the value back, if the channel is or becomes closed
    /// first. Dropping the future before it completes drops the value undelivered
    /// (unless a receiver took it just before, in which case it counts as sent).
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (tx, rx) = csp::bounded(1);
    /// tx.send(1).await.unwrap();
    /// assert_eq!(rx.recv().await, Ok(1));
    /// # });
    /// ```
    pub fn send(&self, value: T) -> SendFuture<'_, T> {
        SendFuture::new(SendOp::for_future(&self.chan, value))
    }

    /// Sends without waiting: succeeds if a receiver is waiting or the buffer has room.
    ///
    /// # Panics
    /// Only if the waker of a receiver it wakes panics (foreign code): every receiver is
    /// woken first, and the value counts as sent.
    ///
    /// ```
    /// let (tx, rx) = csp::bounded(1);
    /// assert!(tx.try_send(1).is_ok());
    /// assert!(tx.try_send(2).unwrap_err().is_full());
    /// drop(rx);
    /// assert!(tx.try_send(3).unwrap_err().is_closed());
    /// ```
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.chan.note_use();
        self.offer(value)
    }

    /// `try_send` on behalf of the runtime itself (a timer feeding its channel from a
    /// worker, between polls): not a use that makes the channel foreign.
    pub(crate) fn offer(&self, value: T) -> Result<(), TrySendError<T>> {
        let mut wakes = Wakes::default();
        let result = {
            let mut state = self.chan.lock();
            if state.is_closed() {
                Err(TrySendError::Closed(value))
            } else {
                state
                    .give(value, self.chan.cap(), None, &mut wakes)
                    .map_err(TrySendError::Full)
            }
        };
        wakes.run();
        result
    }

    /// Sends, blocking the OS thread until done: for plain threads and blocking-pool
    /// closures.
    ///
    /// # Panics
    /// If called while csp polls a process or a `block_on` future on this thread
    /// (`.await` [`send`](Self::send) instead).
    ///
    /// ```
    /// let (tx, rx) = csp::channel();
    /// let t = std::thread::spawn(move || tx.send_blocking(9));
    /// assert_eq!(rx.recv_blocking(), Ok(9));
    /// t.join().unwrap().unwrap();
    /// ```
    #[track_caller]
    pub fn send_blocking(&self, value: T) -> Result<(), SendError<T>> {
        context::assert_may_block("Sender::send_blocking");
        // A blocked thread is outside every runtime's view.
        self.chan.mark_foreign();
        park_on(self.send(value))
    }

    /// A future that completes once the channel is closed.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (tx, rx) = csp::channel::<u8>();
    /// csp::spawn(async move { drop(rx) });
    /// tx.closed().await;
    /// assert!(tx.is_closed());
    /// # });
    /// ```
    pub fn closed(&self) -> Closed<'_, T> {
        Closed::new(ClosedOp::new(&self.chan))
    }

    channel_end_methods!(crate::chan::core::Side::Send);
}

impl<T> sealed::Sealed<T> for Sender<T> {
    fn channel_addr(&self) -> *const () {
        Arc::as_ptr(&self.chan).cast()
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.chan.note_use();
        self.chan.add_sender();
        Sender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        self.chan.drop_sender();
    }
}

impl<T> std::fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("channel", &self.chan.id())
            .field("capacity", &self.chan.cap())
            .field("closed", &self.chan.is_closed())
            .finish()
    }
}

channel_future! {
    /// The future of [`Sender::send`]: `Ok` once a receiver took the value (rendezvous)
    /// or it is buffered; `Err` with the value if the channel closed first.
    SendFuture => SendOp<'a, T, false>, Result<(), SendError<T>>
}

channel_future! {
    /// The future of [`Sender::closed`]: completes once the channel is closed.
    Closed => ClosedOp<'a, T>, ()
}
