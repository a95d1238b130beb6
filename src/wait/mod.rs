//! The waiting protocol: how an operation that cannot complete now waits, and how
//! whoever completes it wakes its owner. The floor that channels, choice and timers build
//! on; none of them defines it.
//!
//! - `claim.rs`: the claim flag shared by every arm of one choice, the `Owner` to wake
//!   (a process, a thread parked in `block_on`, a foreign waker), and the batch of wakes
//!   run after a channel's lock is dropped;
//! - `foreign.rs`: a foreign waker as a wait holds it, whose drop never panics while the
//!   thread unwinds;
//! - `operation.rs`: the interface every kind of waiting operation implements (try now,
//!   register, unregister, take the result), so one engine drives them all;
//! - `single.rs`: the wait of one operation, behind the plain channel futures;
//! - `parker.rs`: the thread parker of `block_on` and of the blocking channel calls;
//! - `join.rs`: [`JoinHandle`], the wait for a process's output;
//! - `record.rs`, `epoch.rs`: what a blocked owner records that it waits on, for process
//!   dumps and deadlock detection, and the foreign epoch that marks a record stale;
//! - `census.rs`: the channels that have had waiters, and who waits in each, for the
//!   wait graph.
//!
//! May use: `task` (an owner can be a process), `loom`, `tuning`, `id`. Must never reach
//! into it from below: `task`. Channels (`chan`), timers (`time`) and choice (`alt`)
//! build on it; the runtime uses the parker and the records.
//!
//! # The rules every wait follows
//!
//! A waiting operation puts an entry in a channel's wait list, and from then on other
//! threads reach that entry, its claim flag and its value slot through raw pointers.
//! What keeps that sound and live, whatever safe code does around it (leak a future
//! with `mem::forget`, panic in a waker or in the `Drop` of a `T`):
//!
//! 1. **Memory a list can reach is owned by something whose destructor always runs.**
//!    That is pinned memory (a future's, whose drop guarantee `Pin` gives), or memory
//!    whose owner unlinks it itself before freeing it. A future that merely borrows the
//!    memory is not enough: it may be leaked while the owner lives on. So a `Select`
//!    owns its arms and its claim flag and cancels a wait its leaked `SelectFuture` left
//!    (`alt/select.rs`); an `alt!` arm, and every channel operation, unlinks its own
//!    entry when dropped while linked (`chan/ops.rs`); a new choice refuses an arm that
//!    an earlier one left linked, unread or spent.
//! 2. **State is recorded before any foreign code runs.** A waker's `wake`, `clone` or
//!    `drop`, and a `T`'s `Drop`, may panic and unwind through the caller: by then the
//!    caller's state must say what its destructor has to undo (a future is `Waiting`
//!    before the wakes of its registration run, `Done` before those of its completion).
//! 3. **No foreign code and no panic under a channel lock.** Owners to wake are carried
//!    out in [`Wakes`](claim::Wakes) and woken after unlocking; values to drop are
//!    dropped after unlocking; checks that could fail run before locking. The locks are
//!    held through guards that release them on unwinding all the same.
//! 4. **A batch of wakes survives a panicking waker.** Every owner in it is woken, then
//!    the first panic is resumed to the caller, or, where no caller can take it (a
//!    worker firing timers, a runtime shutting down), dropped once the panic hook has
//!    reported it: a worker never dies of a waker's panic. A value the panicking call
//!    had taken goes back to its channel first.
//! 5. **No second panic while a thread unwinds.** A future or guard dropped by a
//!    panicking scope still drops the wakers it kept and wakes the owners it must: a
//!    waker's panic then is let go (`foreign.rs`, `task::panic::resume`), as one out of
//!    a destructor during unwinding would abort the process.

pub(crate) mod census;
pub(crate) mod claim;
pub(crate) mod epoch;
pub(crate) mod foreign;
pub(crate) mod join;
pub(crate) mod operation;
pub(crate) mod parker;
pub(crate) mod record;
pub(crate) mod single;

pub use join::JoinHandle;
pub(crate) use record::WaitOn;
