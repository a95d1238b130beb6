//! A sender as a `futures::Sink`, so that `StreamExt::forward` and `SinkExt` work on
//! csp channels.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures::Sink;

use crate::chan::core::Side;
use crate::chan::error::{SendError, TrySendError};
use crate::chan::sender::{SendFuture, Sender};

impl<T> Sender<T> {
    /// This sender as a [`Sink`]: `start_send` hands the value on at once if a receiver
    /// waits or the buffer has room, else keeps it until the next `poll_ready`,
    /// `poll_flush` or `poll_close` finishes sending it (the sink holds one value at a
    /// time). `poll_close` sends what it holds and closes the *sink*: values offered to
    /// it afterwards come back in a [`SendError`]. The channel itself closes as it always
    /// does, when its last [`Sender`] is dropped (or on [`close`](Sender::close)), so a
    /// stream forwarded into one sender's sink does not cut off the other senders: as
    /// with `futures`' channels, where closing a sender's sink closes the channel only
    /// if no other sender is left.
    ///
    /// No value is lost on a closed channel: `start_send` gives its value back in the
    /// [`SendError`], and so does the `poll_*` call that finds a held value
    /// undeliverable. Dropping the sink while it holds a value drops that value
    /// undelivered, as dropping a [`send`](Sender::send) future does.
    ///
    /// The sink is not `Unpin` (it holds a send in progress): pin it to call
    /// [`SinkExt`](futures::SinkExt) methods, or hand it to a combinator that owns it.
    ///
    /// ```
    /// use futures::{SinkExt, StreamExt, stream};
    ///
    /// # csp::block_on(async {
    /// let (tx, rx) = csp::channel::<u32>();
    /// let forwarder = csp::spawn(async move {
    ///     // The channel closes when `tx`, its only sender, drops at the end.
    ///     stream::iter(1..=3).map(Ok).forward(tx.sink()).await
    /// });
    /// let got: Vec<u32> = rx.collect().await;
    /// assert_eq!(got, [1, 2, 3]);
    /// forwarder.await.unwrap().unwrap();
    ///
    /// let (tx, rx) = csp::bounded::<&str>(1);
    /// let mut sink = std::pin::pin!(tx.sink());
    /// sink.send("held").await.unwrap();
    /// drop(rx);
    /// // The channel is closed: the value comes back.
    /// assert_eq!(sink.send("lost?").await, Err(csp::SendError("lost?")));
    /// # });
    /// ```
    pub fn sink(&self) -> SendSink<'_, T> {
        SendSink {
            sender: self,
            closed: false,
            pending: None,
        }
    }
}

pin_project_lite::pin_project! {
    /// A [`Sender`] as a [`Sink`]; made by [`Sender::sink`].
    #[must_use = "sinks do nothing unless used"]
    pub struct SendSink<'a, T> {
        sender: &'a Sender<T>,
        // `poll_close` finished: further values are refused.
        closed: bool,
        // The value `start_send` could not hand on at once, being sent.
        #[pin]
        pending: Option<SendFuture<'a, T>>,
    }
}

impl<T> SendSink<'_, T> {
    /// Finishes sending the held value, if any.
    fn poll_pending(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        let mut this = self.project();
        // `start_send` has no waker to tell its user by: the `poll_ready` before it does.
        this.sender.chan().note_user(Side::Send, cx.waker());
        let Some(send) = this.pending.as_mut().as_pin_mut() else {
            return Poll::Ready(Ok(()));
        };
        let result = ready!(send.poll(cx));
        this.pending.set(None);
        Poll::Ready(result)
    }
}

impl<T> Sink<T> for SendSink<'_, T> {
    type Error = SendError<T>;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.poll_pending(cx)
    }

    /// # Panics
    /// If the sink still holds a value: call `poll_ready` until it is ready first, as
    /// the `Sink` contract asks.
    fn start_send(self: Pin<&mut Self>, value: T) -> Result<(), Self::Error> {
        let mut this = self.project();
        assert!(
            this.pending.is_none(),
            "csp: SendSink::start_send was called while the sink still held a value; \
             poll_ready must return Ready(Ok) before each start_send"
        );
        if *this.closed {
            return Err(SendError(value));
        }
        match this.sender.try_send(value) {
            Ok(()) => Ok(()),
            Err(TrySendError::Closed(value)) => Err(SendError(value)),
            Err(TrySendError::Full(value)) => {
                this.pending.set(Some(this.sender.send(value)));
                Ok(())
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.poll_pending(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        ready!(self.as_mut().poll_pending(cx))?;
        *self.project().closed = true;
        Poll::Ready(Ok(()))
    }
}

impl<T> std::fmt::Debug for SendSink<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendSink")
            .field("sender", self.sender)
            .field("closed", &self.closed)
            .field("holds_a_value", &self.pending.is_some())
            .finish()
    }
}
