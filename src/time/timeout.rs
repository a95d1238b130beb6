//! `timeout`: a future with a deadline.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;

use crate::time::sleep::{Sleep, sleep};

/// Runs `future` for at most `duration`: `Ok` with its output if it completes first,
/// `Err(Elapsed)` (and `future` dropped with the `Timeout`) otherwise.
///
/// The future is polled before the deadline is checked, so one that is ready when the
/// deadline has just passed still gives its output.
///
/// ```
/// use std::time::Duration;
///
/// # csp::block_on(async {
/// let (_tx, rx) = csp::channel::<u32>();
/// let waited = csp::timeout(Duration::from_millis(5), rx.recv()).await;
/// assert_eq!(waited, Err(csp::Elapsed));
///
/// let quick = csp::timeout(Duration::from_secs(5), async { 7 }).await;
/// assert_eq!(quick, Ok(7));
/// # });
/// ```
pub fn timeout<F: Future>(duration: Duration, future: F) -> Timeout<F> {
    Timeout {
        future,
        sleep: sleep(duration),
    }
}

pin_project! {
    /// The future of [`timeout`].
    #[must_use = "futures do nothing unless polled"]
    #[derive(Debug)]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        #[pin]
        sleep: Sleep,
    }
}

impl<F> Timeout<F> {
    /// The wrapped future.
    ///
    /// ```
    /// let t = csp::timeout(std::time::Duration::from_secs(1), std::future::ready(3));
    /// assert_eq!(t.into_inner().into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> F {
        self.future
    }

    /// A reference to the wrapped future.
    ///
    /// ```
    /// let t = csp::timeout(std::time::Duration::from_secs(1), std::future::ready(3));
    /// let _inner: &std::future::Ready<i32> = t.get_ref();
    /// ```
    pub fn get_ref(&self) -> &F {
        &self.future
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        this.sleep.poll(cx).map(|()| Err(Elapsed))
    }
}

/// The error of a [`timeout`] whose deadline passed first.
///
/// ```
/// assert_eq!(csp::Elapsed.to_string(), "deadline has elapsed");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Elapsed;

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}
