//! Why a process produced no output.

use std::any::Any;
use std::fmt;

/// The error a [`JoinHandle`](crate::JoinHandle) resolves to when its process did not run
/// to completion: it was cancelled (aborted, or its runtime shut down) or it panicked.
///
/// ```
/// let rt = csp::Runtime::new().unwrap();
/// let err = rt.block_on(async {
///     csp::spawn(async { panic!("boom") }).await.unwrap_err()
/// });
/// assert!(err.is_panic());
/// assert_eq!(*err.into_panic().downcast::<&str>().unwrap(), "boom");
/// ```
pub struct JoinError {
    id: u64,
    repr: Repr,
}

enum Repr {
    Cancelled,
    Panic(SyncPanic),
}

/// A panic payload made `Sync` by allowing access only through ownership.
struct SyncPanic(Box<dyn Any + Send + 'static>);

// SAFETY: the payload is reachable only by value (`into_panic`) or through `&mut`, never
// through a shared reference, so sharing a `&SyncPanic` across threads exposes nothing.
unsafe impl Sync for SyncPanic {}

impl JoinError {
    pub(crate) fn cancelled(id: u64) -> JoinError {
        JoinError {
            id,
            repr: Repr::Cancelled,
        }
    }

    pub(crate) fn panicked(id: u64, payload: Box<dyn Any + Send + 'static>) -> JoinError {
        JoinError {
            id,
            repr: Repr::Panic(SyncPanic(payload)),
        }
    }

    /// True if the process panicked.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let err = csp::spawn(async { panic!() }).await.unwrap_err();
    /// assert!(err.is_panic() && !err.is_cancelled());
    /// # });
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panic(_))
    }

    /// True if the process was cancelled: aborted through its `JoinHandle`, or dropped
    /// by the shutdown of its runtime.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let handle = csp::spawn(std::future::pending::<()>());
    /// handle.abort();
    /// assert!(handle.await.unwrap_err().is_cancelled());
    /// # });
    /// ```
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// The id of the process (as in `ProcessInfo::id` and `JoinHandle::id`).
    ///
    /// ```
    /// # csp::block_on(async {
    /// let handle = csp::spawn(async { panic!() });
    /// let id = handle.id();
    /// assert_eq!(handle.await.unwrap_err().id(), id);
    /// # });
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The panic payload, to resume with `std::panic::resume_unwind`.
    ///
    /// # Panics
    /// If the process was cancelled rather than panicking; use
    /// [`try_into_panic`](Self::try_into_panic) when either may happen.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let err = csp::spawn(async { panic!("{}", 42) }).await.unwrap_err();
    /// assert_eq!(*err.into_panic().downcast::<String>().unwrap(), "42");
    /// # });
    /// ```
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        match self.try_into_panic() {
            Ok(payload) => payload,
            Err(err) => panic!(
                "csp: JoinError::into_panic called on an error that is not a panic ({err}); \
                 check is_panic() first or use try_into_panic()"
            ),
        }
    }

    /// The panic payload, or the error itself if the process was cancelled.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let handle = csp::spawn(std::future::pending::<()>());
    /// handle.abort();
    /// let err = handle.await.unwrap_err();
    /// assert!(err.try_into_panic().unwrap_err().is_cancelled());
    /// # });
    /// ```
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match self.repr {
            Repr::Panic(SyncPanic(payload)) => Ok(payload),
            Repr::Cancelled => Err(self),
        }
    }
}

/// The message of a panic payload, when it is a string.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "process #{} was cancelled", self.id),
            Repr::Panic(SyncPanic(payload)) => match panic_message(payload.as_ref()) {
                Some(message) => write!(f, "process #{} panicked: {message}", self.id),
                None => write!(f, "process #{} panicked", self.id),
            },
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Cancelled => write!(f, "JoinError::Cancelled(process #{})", self.id),
            Repr::Panic(SyncPanic(payload)) => match panic_message(payload.as_ref()) {
                Some(message) => {
                    write!(f, "JoinError::Panic(process #{}, {message:?})", self.id)
                }
                None => write!(f, "JoinError::Panic(process #{}, ..)", self.id),
            },
        }
    }
}

impl std::error::Error for JoinError {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_process_and_the_panic_message() {
        assert_eq!(
            JoinError::cancelled(7).to_string(),
            "process #7 was cancelled"
        );
        let err = JoinError::panicked(9, Box::new("boom"));
        assert_eq!(err.to_string(), "process #9 panicked: boom");
        assert_eq!(format!("{err:?}"), "JoinError::Panic(process #9, \"boom\")");
        let err = JoinError::panicked(9, Box::new(5_u8));
        assert_eq!(err.to_string(), "process #9 panicked");
    }

    #[test]
    #[should_panic(expected = "not a panic")]
    fn into_panic_of_a_cancellation_says_what_to_do() {
        let _ = JoinError::cancelled(1).into_panic();
    }

    #[test]
    fn is_send_sync_static_error() {
        fn check<E: std::error::Error + Send + Sync + 'static>() {}
        check::<JoinError>();
    }
}
