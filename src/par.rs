//! Parallel composition: the future that `par!` awaits.
//!
//! `par!` spawns each branch as a process and wraps its `JoinHandle` in a [`ParBranch`],
//! which aborts the process if it is dropped before the process ends. A [`ParJoin`] owns
//! the branches (a nested tuple of them for `par!(a, b, ..)`, a `Vec` for the replicated
//! form) and awaits them one after the other, in written order: it must wait for every
//! branch anyway, and waiting on one at a time costs O(n) polls for the whole join, with
//! a single waker registered at a time and nothing allocated while waiting. Once every
//! branch has ended it hands out the outputs in order, or resumes the panic of the first
//! branch, in written order, that did not complete.

use std::fmt;
use std::future::Future;
use std::mem;
use std::panic;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::task::JoinError;
use crate::wait::JoinHandle;

/// One branch of a `par!`: its process while it runs, then how it ended.
///
/// Dropping a branch whose process is still running aborts the process.
pub struct ParBranch<T> {
    state: Branch<T>,
}

enum Branch<T> {
    Running(JoinHandle<T>),
    Ended(Result<T, JoinError>),
    Taken,
}

impl<T> ParBranch<T> {
    /// A branch running `process`.
    pub fn new(process: JoinHandle<T>) -> ParBranch<T> {
        ParBranch {
            state: Branch::Running(process),
        }
    }

    /// Waits until the process has ended and keeps its result.
    fn poll_end(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let Branch::Running(process) = &mut self.state {
            let result = ready!(Pin::new(process).poll(cx));
            self.state = Branch::Ended(result);
        }
        Poll::Ready(())
    }

    /// The result, once the process has ended.
    fn take(&mut self) -> Result<T, JoinError> {
        match mem::replace(&mut self.state, Branch::Taken) {
            Branch::Ended(result) => result,
            Branch::Running(_) | Branch::Taken => {
                unreachable!("a par! branch's result taken before it ended, or twice")
            }
        }
    }
}

impl<T> Drop for ParBranch<T> {
    fn drop(&mut self) {
        if let Branch::Running(process) = &self.state {
            process.abort();
        }
    }
}

impl<T> fmt::Debug for ParBranch<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.state {
            Branch::Running(process) => f.debug_tuple("Running").field(process).finish(),
            Branch::Ended(Ok(_)) => f.write_str("Completed"),
            Branch::Ended(Err(err)) => f.debug_tuple("Failed").field(err).finish(),
            Branch::Taken => f.write_str("Taken"),
        }
    }
}

/// The branches of a `par!`, in written order: `()`, or a [`ParBranch`] followed by
/// more branches (`(ParBranch<A>, (ParBranch<B>, ()))` for `par!(a, b)`), or a `Vec` of
/// branches of one output type (the replicated form).
pub trait ParBranches {
    /// What the branches evaluate to: the outputs in written order.
    type Output;

    /// How many branches there are.
    fn count(&self) -> usize;

    /// Waits until branch `index` (`< count()`) has ended.
    fn poll_branch(&mut self, index: usize, cx: &mut Context<'_>) -> Poll<()>;

    /// Once every branch has ended: the outputs, or the position and error of the first
    /// branch in written order that did not complete.
    fn take_outputs(&mut self) -> Result<Self::Output, (usize, JoinError)>;
}

impl ParBranches for () {
    type Output = ();

    fn count(&self) -> usize {
        0
    }

    fn poll_branch(&mut self, index: usize, _: &mut Context<'_>) -> Poll<()> {
        unreachable!("par! branch {index} of none")
    }

    fn take_outputs(&mut self) -> Result<(), (usize, JoinError)> {
        Ok(())
    }
}

impl<T, Rest: ParBranches> ParBranches for (ParBranch<T>, Rest) {
    type Output = (T, Rest::Output);

    fn count(&self) -> usize {
        1 + self.1.count()
    }

    fn poll_branch(&mut self, index: usize, cx: &mut Context<'_>) -> Poll<()> {
        match index {
            0 => self.0.poll_end(cx),
            _ => self.1.poll_branch(index - 1, cx),
        }
    }

    fn take_outputs(&mut self) -> Result<(T, Rest::Output), (usize, JoinError)> {
        let first = self.0.take().map_err(|err| (0, err));
        let rest = self.1.take_outputs().map_err(|(i, err)| (i + 1, err));
        match (first, rest) {
            (Ok(first), Ok(rest)) => Ok((first, rest)),
            (Err(err), Ok(_)) | (Ok(_), Err(err)) => Err(err),
            (Err(a), Err(b)) => Err(first_failure(a, b)),
        }
    }
}

impl<T> ParBranches for Vec<ParBranch<T>> {
    type Output = Vec<T>;

    fn count(&self) -> usize {
        self.len()
    }

    fn poll_branch(&mut self, index: usize, cx: &mut Context<'_>) -> Poll<()> {
        self[index].poll_end(cx)
    }

    fn take_outputs(&mut self) -> Result<Vec<T>, (usize, JoinError)> {
        let mut outputs = Vec::with_capacity(self.len());
        let mut failed = None;
        for (i, branch) in self.iter_mut().enumerate() {
            match branch.take() {
                Ok(output) => outputs.push(output),
                Err(err) => {
                    failed = Some(match failed {
                        None => (i, err),
                        Some(earlier) => first_failure(earlier, (i, err)),
                    });
                }
            }
        }
        match failed {
            None => Ok(outputs),
            Some(failure) => Err(failure),
        }
    }
}

/// Which of two failed branches `par!` reports (`earlier` comes first in written
/// order): the first that panicked, else the first cancelled.
fn first_failure(earlier: (usize, JoinError), later: (usize, JoinError)) -> (usize, JoinError) {
    if !earlier.1.is_panic() && later.1.is_panic() {
        later
    } else {
        earlier
    }
}

/// The future of a `par!`: waits for every branch to end, then evaluates to their
/// outputs in written order, or resumes the panic of the first branch in written order
/// that panicked. Dropping it before then aborts every branch still running.
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct ParJoin<B> {
    branches: B,
    /// The first branch not known to have ended; `count()` once all have, and
    /// `usize::MAX` after the outputs were handed out.
    next: usize,
}

// No output is ever pinned: they are moved out by value.
impl<B> Unpin for ParJoin<B> {}

impl<B: ParBranches> ParJoin<B> {
    /// Joins `branches`.
    pub fn new(branches: B) -> ParJoin<B> {
        ParJoin { branches, next: 0 }
    }
}

impl<T> ParJoin<Vec<ParBranch<T>>> {
    /// A replicated join with room for `capacity` branches; add them with
    /// [`push`](Self::push) before polling.
    pub fn with_capacity(capacity: usize) -> Self {
        ParJoin::new(Vec::with_capacity(capacity))
    }

    /// Adds the branch running `process`.
    pub fn push(&mut self, process: JoinHandle<T>) {
        debug_assert_eq!(self.next, 0, "a branch added to a par! already polled");
        self.branches.push(ParBranch::new(process));
    }
}

impl<B: ParBranches> Future for ParJoin<B> {
    type Output = B::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<B::Output> {
        let this = self.get_mut();
        let count = this.branches.count();
        assert!(
            this.next <= count,
            "a par! future polled after it completed"
        );
        while this.next < count {
            ready!(this.branches.poll_branch(this.next, cx));
            this.next += 1;
        }
        this.next = usize::MAX;
        match this.branches.take_outputs() {
            Ok(outputs) => Poll::Ready(outputs),
            Err((index, err)) => match err.try_into_panic() {
                Ok(payload) => panic::resume_unwind(payload),
                // Nothing but the join holds a branch's handle, so only the runtime
                // shutting down can have cancelled it.
                Err(err) => panic!(
                    "csp: par! branch {index} did not complete: {err} (its runtime is \
                     shutting down)"
                ),
            },
        }
    }
}

impl<B: ParBranches> fmt::Debug for ParJoin<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.branches.count();
        f.debug_struct("ParJoin")
            .field("branches", &count)
            .field("ended", &self.next.min(count))
            .finish()
    }
}

/// What `par!` expands to; not part of the API.
pub mod macro_support {
    pub use super::{ParBranch, ParBranches, ParJoin};
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_first_panic_is_reported_before_an_earlier_cancellation() {
        let cancelled = |i| (i, JoinError::cancelled(i as u64));
        let panicked = |i| (i, JoinError::panicked(i as u64, Box::new("boom")));
        assert_eq!(first_failure(cancelled(0), panicked(3)).0, 3);
        assert_eq!(first_failure(panicked(1), panicked(2)).0, 1);
        assert_eq!(first_failure(panicked(1), cancelled(2)).0, 1);
        assert_eq!(first_failure(cancelled(0), cancelled(2)).0, 0);
    }
}
