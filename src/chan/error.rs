//! Why a channel operation failed.

use std::fmt;

/// The channel was closed: the value comes back.
///
/// ```
/// # csp::block_on(async {
/// let (tx, rx) = csp::bounded(1);
/// drop(rx);
/// let err = tx.send(5).await.unwrap_err();
/// assert_eq!(err.into_inner(), 5);
/// # });
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SendError<T>(pub T);

impl<T> SendError<T> {
    /// The value that could not be sent.
    ///
    /// ```
    /// assert_eq!(csp::SendError("x").into_inner(), "x");
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError { .. }")
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending on a closed channel")
    }
}

impl<T> std::error::Error for SendError<T> {}

/// The channel is closed and holds no more values.
///
/// ```
/// # csp::block_on(async {
/// let (tx, rx) = csp::unbounded::<u8>();
/// drop(tx);
/// assert_eq!(rx.recv().await, Err(csp::RecvError));
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecvError;

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("receiving on a closed and empty channel")
    }
}

impl std::error::Error for RecvError {}

/// Why [`Sender::try_send`](crate::Sender::try_send) failed; the value comes back.
///
/// ```
/// let (tx, _rx) = csp::bounded(1);
/// tx.try_send(1).unwrap();
/// assert_eq!(tx.try_send(2), Err(csp::TrySendError::Full(2)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TrySendError<T> {
    /// No room (for a rendezvous channel: no receiver waiting).
    Full(T),
    /// The channel is closed.
    Closed(T),
}

impl<T> TrySendError<T> {
    /// True for [`Full`](Self::Full).
    ///
    /// ```
    /// assert!(csp::TrySendError::Full(1).is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// True for [`Closed`](Self::Closed).
    ///
    /// ```
    /// assert!(csp::TrySendError::Closed(1).is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, TrySendError::Closed(_))
    }

    /// The value that could not be sent.
    ///
    /// ```
    /// assert_eq!(csp::TrySendError::Full(7).into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(value) | TrySendError::Closed(value) => value,
        }
    }
}

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(err: SendError<T>) -> Self {
        TrySendError::Closed(err.0)
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("sending on a full channel"),
            TrySendError::Closed(_) => f.write_str("sending on a closed channel"),
        }
    }
}

impl<T> std::error::Error for TrySendError<T> {}

/// Why [`Receiver::try_recv`](crate::Receiver::try_recv) failed.
///
/// ```
/// let (tx, rx) = csp::bounded::<u8>(1);
/// assert_eq!(rx.try_recv(), Err(csp::TryRecvError::Empty));
/// drop(tx);
/// assert_eq!(rx.try_recv(), Err(csp::TryRecvError::Closed));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TryRecvError {
    /// Nothing to receive right now.
    Empty,
    /// The channel is closed and holds no more values.
    Closed,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("receiving on an empty channel"),
            TryRecvError::Closed => f.write_str("receiving on a closed and empty channel"),
        }
    }
}

impl std::error::Error for TryRecvError {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct NoDebug;

    #[test]
    fn debug_needs_no_debug_payload_and_errors_are_errors() {
        assert_eq!(format!("{:?}", SendError(NoDebug)), "SendError { .. }");
        assert_eq!(format!("{:?}", TrySendError::Full(NoDebug)), "Full(..)");
        fn is_error<E: std::error::Error + Send + Sync + 'static>() {}
        is_error::<SendError<NoDebug>>();
        is_error::<TrySendError<NoDebug>>();
        is_error::<RecvError>();
        is_error::<TryRecvError>();
        let err: TrySendError<u8> = SendError(3).into();
        assert_eq!(err, TrySendError::Closed(3));
        assert_eq!(
            TryRecvError::Closed.to_string(),
            "receiving on a closed and empty channel"
        );
    }
}
