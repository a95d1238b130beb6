//! Parallel composition: the future that `par!` and `try_par!` await.
//!
//! The macros spawn each branch as a process running a [`ParTask`], the branch's future
//! wrapped to report a failure (a panic, or for `try_par!` an `Err`) to the branches'
//! shared [`ParGroup`] the moment it happens, with the branch's place in written order,
//! and keep its `JoinHandle` in a [`ParBranch`], which aborts the process if it is
//! dropped before the process ends. A [`ParJoin`] owns the branches (a nested tuple of
//! them for `par!(a, b, ..)`, a `Vec` for the replicated form) and awaits them one after
//! the other, in written order: it must wait for every branch anyway, and waiting on one
//! at a time costs O(n) polls for the whole join, with a single waker registered in a
//! branch at a time and nothing allocated while waiting.
//!
//! What a failure does depends on the macro:
//! - `par!` (API.md): a panic stops nothing. The join waits for every branch to end,
//!   then resumes the panic of the first panicking branch in written order; the group
//!   keeps that one, whichever came first in time.
//! - `try_par!` fails fast (DESIGN.md): the first failure in time, a panic or an `Err`,
//!   wakes the join at once (the group holds its waker), which aborts every branch still
//!   running, waits until each has ended (its future dropped), and then resumes the
//!   panic or returns the error.
//!
//! Once every branch has completed the join hands out the outputs in order.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll, Waker, ready};

use crate::loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use crate::loom::sync::{Arc, Mutex};
use crate::task::JoinError;
use crate::task::panic::{catching, discard, drop_each, drop_foreign};
use crate::wait::JoinHandle;
use crate::wait::foreign::ForeignWaker;
use crate::wait::join::{internal_clone, wake_same};

/// Why a branch failed: what the join hands on.
enum Failure<E> {
    Panic(Box<dyn std::any::Any + Send + 'static>),
    Err(E),
}

/// What the branches of one `par!` or `try_par!` share with its join: the failure to
/// hand on, and the join's waker. `E` is the branches' error type (`Infallible` for
/// `par!`).
pub struct ParGroup<E> {
    shared: Arc<Group<E>>,
}

struct Group<E> {
    /// Set once, under the lock, with a failure that stops the other branches
    /// (`try_par!`'s). Read without the lock, it spares the join's polls the lock once
    /// a branch has failed.
    aborting: AtomicBool,
    /// Branches spawned so far: the next one's place in written order (the macros
    /// spawn them in that order, on one thread).
    spawned: AtomicUsize,
    state: Mutex<GroupState<E>>,
}

struct GroupState<E> {
    /// The failure to hand on, with its branch's place in written order, until the
    /// join takes it: the first in time for `try_par!`, the first in written order for
    /// `par!`.
    failure: Option<(usize, Failure<E>)>,
    /// The join's waker, from its latest poll.
    join: Option<ForeignWaker>,
}

impl<E> Drop for GroupState<E> {
    /// A failure the join never took (it was dropped first) goes with the group, which
    /// may go in the `Drop` of a join whose owner is unwinding (`drop_failure`).
    fn drop(&mut self) {
        if let Some((_, failure)) = self.failure.take() {
            drop_failure(failure);
        }
    }
}

/// Drops a failure nobody will hand on: a panic's payload is let go as every caught
/// panic's is (`discard`: its own drop may panic), a branch's error is the user's code
/// (`drop_foreign`: its panic is let go only while the thread unwinds).
fn drop_failure<E>(failure: Failure<E>) {
    match failure {
        Failure::Panic(payload) => discard(payload),
        Failure::Err(err) => drop_foreign(err),
    }
}

impl<E> ParGroup<E> {
    /// A group with no branch failed.
    #[allow(clippy::new_without_default)] // made only by the macros
    pub fn new() -> ParGroup<E> {
        ParGroup {
            shared: Arc::new(Group {
                aborting: AtomicBool::new(false),
                spawned: AtomicUsize::new(0),
                state: Mutex::new(GroupState {
                    failure: None,
                    join: None,
                }),
            }),
        }
    }
}

impl<E> Group<E> {
    /// Records `failure` of branch `index`. One that `aborts` (`try_par!`'s) is kept if
    /// it is the first in time, and wakes the join, which stops the other branches; any
    /// other (a `par!` branch's panic) is kept if no branch before it in written order
    /// failed, and stops nothing.
    fn fail(&self, index: usize, failure: Failure<E>, aborts: bool) {
        let mut state = self.state.lock();
        let keep = match &state.failure {
            None => true,
            Some((kept, _)) => !aborts && index < *kept,
        };
        if !keep {
            drop(state);
            // A failure not handed on is dropped, outside the lock: its `Drop` is user
            // code.
            drop_failure(failure);
            return;
        }
        let replaced = state.failure.replace((index, failure));
        let join = if aborts {
            // Release: pairs with the join's lock-free look; its looks under the lock
            // are ordered by the lock.
            self.aborting.store(true, Ordering::Release);
            state.join.take()
        } else {
            None
        };
        drop(state);
        if let Some((_, replaced)) = replaced {
            drop_failure(replaced);
        }
        if let Some(join) = join {
            join.wake();
        }
    }

    /// Whether a branch has failed so as to stop the others; if none has, `waker` is
    /// woken when one does.
    ///
    /// The waker is kept as csp's own reference when it is a process's or a `block_on`
    /// future's (`wait/join.rs`), so that deadlock detection still sees the join's owner
    /// as waiting on csp (its branches' handles record what it waits on). Cloning a
    /// foreign waker and dropping the one it replaces run the waker's code: outside the
    /// lock.
    fn failed_or_register(&self, waker: &Waker) -> bool {
        // Acquire: pairs with the store in `fail` (see there).
        if self.aborting.load(Ordering::Acquire) {
            return true;
        }
        {
            let state = self.state.lock();
            // Relaxed: stored under this lock.
            if self.aborting.load(Ordering::Relaxed) {
                return true;
            }
            if state
                .join
                .as_ref()
                .is_some_and(|join| wake_same(join, waker))
            {
                return false;
            }
        }
        let new = ForeignWaker::new(internal_clone(waker));
        let (failed, old) = {
            let mut state = self.state.lock();
            // Relaxed: stored under this lock.
            match self.aborting.load(Ordering::Relaxed) {
                true => (true, Some(new)),
                false => (false, state.join.replace(new)),
            }
        };
        drop(old);
        failed
    }

    /// The failure to hand on, once.
    fn take_failure(&self) -> Option<Failure<E>> {
        self.state.lock().failure.take().map(|(_, failure)| failure)
    }
}

/// How a branch's output splits into what the join hands out and a failure.
#[diagnostic::on_unimplemented(
    message = "a `try_par!` branch must evaluate to a `Result`, not `{O}`",
    label = "this branch's future has output `{O}`",
    note = "every branch of `try_par!` returns `Result<_, E>`, with one `E` for all; \
            `par!` takes branches of any output"
)]
pub trait ParKind<O> {
    /// What the join hands out for the branch.
    type Value;
    /// The failure that cancels the other branches.
    type Error;
    /// Whether a panic cancels the other branches (`try_par!`), or waits for them to
    /// end and is handed on in written order (`par!`, API.md).
    const PANIC_ABORTS: bool;

    /// The value, or the failure.
    fn split(output: O) -> Result<Self::Value, Self::Error>;
}

/// `par!`'s branches: any output; only a panic fails.
#[derive(Debug)]
pub enum All {}

impl<O> ParKind<O> for All {
    type Value = O;
    type Error = Infallible;
    const PANIC_ABORTS: bool = false;

    #[inline]
    fn split(output: O) -> Result<O, Infallible> {
        Ok(output)
    }
}

/// `try_par!`'s branches: a `Result`, whose `Err` fails as a panic does.
#[derive(Debug)]
pub enum Try {}

impl<T, E> ParKind<Result<T, E>> for Try {
    type Value = T;
    type Error = E;
    const PANIC_ABORTS: bool = true;

    #[inline]
    fn split(output: Result<T, E>) -> Result<T, E> {
        output
    }
}

/// A branch's future, as its process runs it: a failure goes to the group the moment it
/// happens (which, in a `try_par!`, wakes the join), and the process completes with
/// `None`.
pub struct ParTask<F, K: ParKind<F::Output>>
where
    F: Future,
{
    /// Pinned with the task; dropped in place by `Drop`, exactly once.
    future: ManuallyDrop<F>,
    group: Arc<Group<K::Error>>,
    /// The branch's place in written order.
    index: usize,
}

impl<F, K> Future for ParTask<F, K>
where
    F: Future,
    K: ParKind<F::Output>,
{
    type Output = Option<K::Value>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<K::Value>> {
        // SAFETY: `future` is structurally pinned: it is never moved out of the task,
        // only dropped in place by `Drop`.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        let future = unsafe { Pin::new_unchecked(&mut *this.future) };
        // A panic is caught here, not by the worker, so that the group weighs it
        // against the others (and, in a `try_par!`, the join hears of it now, not when
        // it comes to this branch's handle in written order).
        match panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(match K::split(output) {
                Ok(value) => Some(value),
                Err(err) => {
                    this.group.fail(this.index, Failure::Err(err), true);
                    None
                }
            }),
            Err(payload) => {
                this.group
                    .fail(this.index, Failure::Panic(payload), K::PANIC_ABORTS);
                Poll::Ready(None)
            }
        }
    }
}

impl<F, K> Drop for ParTask<F, K>
where
    F: Future,
    K: ParKind<F::Output>,
{
    fn drop(&mut self) {
        // SAFETY: the only place the future is dropped; never touched again.
        let dropped = panic::catch_unwind(AssertUnwindSafe(|| unsafe {
            ManuallyDrop::drop(&mut self.future)
        }));
        if let Err(payload) = dropped {
            // A future whose drop panics fails its branch as a panic in its poll does.
            self.group
                .fail(self.index, Failure::Panic(payload), K::PANIC_ABORTS);
        }
    }
}

/// Spawns `future` as a branch of the `par!` or `try_par!` whose branches share `group`.
#[track_caller]
pub fn spawn_branch<K, F>(group: &ParGroup<K::Error>, future: F) -> ParBranch<K::Value>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    K: ParKind<F::Output> + 'static,
    K::Value: Send + 'static,
    K::Error: Send + 'static,
{
    // Relaxed: the macros spawn a group's branches on one thread, in written order.
    let index = group.shared.spawned.fetch_add(1, Ordering::Relaxed);
    ParBranch {
        state: Branch::Running(crate::spawn(ParTask::<F, K> {
            future: ManuallyDrop::new(future),
            group: group.shared.clone(),
            index,
        })),
    }
}

/// One branch of a `par!`: its process while it runs, then how it ended.
///
/// Dropping a branch whose process is still running aborts the process.
pub struct ParBranch<T> {
    state: Branch<T>,
}

enum Branch<T> {
    Running(JoinHandle<Option<T>>),
    /// `Ok(None)`: it failed (the failure is the group's); `Err`: cancelled.
    Ended(Result<Option<T>, JoinError>),
    Taken,
}

impl<T> ParBranch<T> {
    /// Waits until the process has ended and keeps its result.
    fn poll_end(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let Branch::Running(process) = &mut self.state {
            let result = ready!(Pin::new(process).poll(cx));
            self.state = Branch::Ended(result);
        }
        Poll::Ready(())
    }

    /// Aborts the process if it is still running.
    fn abort(&self) {
        if let Branch::Running(process) = &self.state {
            process.abort();
        }
    }

    /// Drops what an ended branch kept (its output, if it completed), discarding a
    /// panic of that drop (reported by the panic hook).
    fn discard(&mut self) {
        if let Branch::Ended(_) = self.state {
            let ended = std::mem::replace(&mut self.state, Branch::Taken);
            catching(move || drop(ended));
        }
    }

    /// The output, once the process has ended: `Err(None)` if it failed, the
    /// cancellation if it was cancelled.
    fn take(&mut self) -> Result<T, Option<JoinError>> {
        match std::mem::replace(&mut self.state, Branch::Taken) {
            Branch::Ended(Ok(output)) => output.ok_or(None),
            Branch::Ended(Err(err)) => Err(Some(err)),
            Branch::Running(_) | Branch::Taken => {
                unreachable!("a par! branch's result taken before it ended, or twice")
            }
        }
    }
}

impl<T> Drop for ParBranch<T> {
    fn drop(&mut self) {
        self.abort();
        // An output kept from a completed branch is the user's value: should its drop
        // panic while an earlier branch's output unwinds out of the join's drop, the
        // second panic is let go rather than aborting the process.
        if let Branch::Ended(_) = self.state {
            drop_foreign(std::mem::replace(&mut self.state, Branch::Taken));
        }
    }
}

impl<T> fmt::Debug for ParBranch<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.state {
            Branch::Running(process) => f.debug_tuple("Running").field(process).finish(),
            Branch::Ended(Ok(Some(_))) => f.write_str("Completed"),
            Branch::Ended(Ok(None)) => f.write_str("Failed"),
            Branch::Ended(Err(err)) => f.debug_tuple("Cancelled").field(err).finish(),
            Branch::Taken => f.write_str("Taken"),
        }
    }
}

/// The first branch in written order that did not complete: its position, and its
/// cancellation (`None`: it failed).
pub type Missing = (usize, Option<JoinError>);

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

    /// Aborts every branch still running.
    fn abort(&self);

    /// Once every branch has ended: the outputs, or the position of the first branch
    /// in written order that did not complete, with its cancellation (`None`: it
    /// failed).
    fn take_outputs(&mut self) -> Result<Self::Output, Missing>;

    /// Once every branch has ended: drops the outputs kept, each drop's panic discarded
    /// (`ParBranch::discard`), before the join panics.
    fn discard(&mut self);
}

impl ParBranches for () {
    type Output = ();

    fn count(&self) -> usize {
        0
    }

    fn poll_branch(&mut self, index: usize, _: &mut Context<'_>) -> Poll<()> {
        unreachable!("par! branch {index} of none")
    }

    fn abort(&self) {}

    fn take_outputs(&mut self) -> Result<(), Missing> {
        Ok(())
    }

    fn discard(&mut self) {}
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

    fn abort(&self) {
        self.0.abort();
        self.1.abort();
    }

    fn take_outputs(&mut self) -> Result<(T, Rest::Output), Missing> {
        let first = self.0.take().map_err(|err| (0, err))?;
        match self.1.take_outputs() {
            Ok(rest) => Ok((first, rest)),
            Err((i, err)) => {
                // The user's value, read by no one: its drop's panic caught, as
                // `discard` catches the others'.
                catching(move || drop(first));
                Err((i + 1, err))
            }
        }
    }

    fn discard(&mut self) {
        self.0.discard();
        self.1.discard();
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

    fn abort(&self) {
        self.iter().for_each(ParBranch::abort);
    }

    fn take_outputs(&mut self) -> Result<Vec<T>, Missing> {
        let mut outputs = Vec::with_capacity(self.len());
        for (i, branch) in self.iter_mut().enumerate() {
            match branch.take() {
                Ok(output) => outputs.push(output),
                Err(err) => {
                    // As in the tuple's: each taken output's drop caught on its own.
                    drop_each(outputs);
                    return Err((i, err));
                }
            }
        }
        Ok(outputs)
    }

    fn discard(&mut self) {
        self.iter_mut().for_each(ParBranch::discard);
    }
}

/// The future of a `par!` or `try_par!`: waits for every branch to end, then evaluates
/// to their outputs in written order, or resumes the panic of the first panicking
/// branch in written order (`par!`). In a `try_par!` the first branch to fail (panic,
/// or return `Err`) has every other branch aborted; once they have all ended, the join
/// resumes the panic or evaluates to the error. Dropping it before then aborts every
/// branch still running.
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct ParJoin<B, E> {
    branches: B,
    group: ParGroup<E>,
    /// The first branch not known to have ended; `count()` once all have, and
    /// `usize::MAX` after the outputs were handed out.
    next: usize,
    /// Whether a failure had the branches aborted (`try_par!`).
    aborted: bool,
}

// No output is ever pinned: they are moved out by value.
impl<B, E> Unpin for ParJoin<B, E> {}

impl<B: ParBranches, E> ParJoin<B, E> {
    /// Joins `branches`, spawned into `group`.
    pub fn new(branches: B, group: ParGroup<E>) -> ParJoin<B, E> {
        ParJoin {
            branches,
            group,
            next: 0,
            aborted: false,
        }
    }
}

impl<T, E> ParJoin<Vec<ParBranch<T>>, E> {
    /// A replicated join with room for `capacity` branches; add them with
    /// [`push`](Self::push) before polling.
    pub fn with_capacity(capacity: usize, group: ParGroup<E>) -> Self {
        ParJoin::new(Vec::with_capacity(capacity), group)
    }

    /// Adds a branch spawned into this join's group ([`group`](Self::group)).
    pub fn push(&mut self, branch: ParBranch<T>) {
        debug_assert_eq!(self.next, 0, "a branch added to a par! already polled");
        self.branches.push(branch);
    }

    /// The group to spawn this join's branches into.
    pub fn group(&self) -> &ParGroup<E> {
        &self.group
    }
}

impl<B: ParBranches, E> Future for ParJoin<B, E> {
    type Output = Result<B::Output, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<B::Output, E>> {
        let this = self.get_mut();
        let count = this.branches.count();
        assert!(
            this.next <= count,
            "a par! future polled after it completed"
        );
        loop {
            if !this.aborted && this.group.shared.failed_or_register(cx.waker()) {
                this.branches.abort();
                this.aborted = true;
            }
            if this.next == count {
                break;
            }
            ready!(this.branches.poll_branch(this.next, cx));
            this.next += 1;
        }
        this.next = usize::MAX;
        let failure = this.group.shared.take_failure();
        if failure.is_some() {
            // Nobody will read the outputs of the branches that completed: they go now,
            // each drop's panic caught, not with the join (after an error is returned,
            // or while a panic unwinds through the caller, where a second panic from
            // one's drop would abort the process).
            this.branches.discard();
        }
        match failure {
            Some(Failure::Panic(payload)) => panic::resume_unwind(payload),
            Some(Failure::Err(err)) => Poll::Ready(Err(err)),
            None => match this.branches.take_outputs() {
                Ok(outputs) => Poll::Ready(Ok(outputs)),
                // Nothing but the join holds a branch's handle, and no branch failed, so
                // only the runtime shutting down can have cancelled it.
                Err((index, Some(err))) => {
                    // As above: the outputs kept go before the panic.
                    this.branches.discard();
                    panic!(
                        "csp: par! branch {index} did not complete: {err} (its runtime is \
                         shutting down)"
                    )
                }
                Err((index, None)) => {
                    unreachable!("par! branch {index} failed, and its group has no failure")
                }
            },
        }
    }
}

impl<B: ParBranches, E> fmt::Debug for ParJoin<B, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.branches.count();
        f.debug_struct("ParJoin")
            .field("branches", &count)
            .field("ended", &self.next.min(count))
            .field("aborted", &self.aborted)
            .finish()
    }
}

impl<E> fmt::Debug for ParGroup<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParGroup")
            // Relaxed: a snapshot for display.
            .field("aborting", &self.shared.aborting.load(Ordering::Relaxed))
            .finish()
    }
}

impl<F: Future, K: ParKind<F::Output>> fmt::Debug for ParTask<F, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParTask").finish_non_exhaustive()
    }
}

/// `par!`'s output: its join's, which cannot be an error.
#[inline]
pub fn into_ok<T>(result: Result<T, Infallible>) -> T {
    match result {
        Ok(value) => value,
        Err(never) => match never {},
    }
}

/// What `par!` and `try_par!` expand to; not part of the API.
pub mod macro_support {
    pub use super::{
        All, Missing, ParBranch, ParBranches, ParGroup, ParJoin, ParKind, ParTask, Try, into_ok,
        spawn_branch,
    };
}
