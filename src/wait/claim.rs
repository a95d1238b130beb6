//! The claim flag: one per choice (a plain `send`/`recv` future, or every arm of an
//! `alt!`), shared by all its waiting entries, so that exactly one counterpart completes
//! it.
//!
//! | value       | meaning                                     | changed by                   |
//! |-------------|---------------------------------------------|------------------------------|
//! | `IDLE`      | not registered anywhere                     | the owner, to `WAITING` or `WAITING_ON_ONE` |
//! | `WAITING`   | entries are linked in channels' wait lists   | a claimer (`BUSY`), or the owner (`CANCELLED`) |
//! | `WAITING_ON_ONE` | as `WAITING`, with one entry, in one channel | as `WAITING`          |
//! | `BUSY`      | a claimer is moving the value               | that claimer, to `CLAIMED`   |
//! | `CANCELLED` | the owner gave up; nobody may claim it      | the owner, back to `IDLE`     |
//! | `CLAIMED+i` | arm `i` fired; its entry is unlinked         | the owner, back to `IDLE`     |
//!
//! A claimer changes the flag only while holding the lock of the channel where it found
//! the entry; the owner registers and cancels only while holding the locks of every
//! channel it is registered on. So a flag seen `WAITING` under the owner's locks cannot
//! become `BUSY` meanwhile, and `BUSY` is only ever seen by the owner's lock-free check
//! (the fast path of a poll after a wake), which then takes the lock and waits for it.
//!
//! Claimers of a `WAITING` flag race each other (each holds the lock of a different
//! channel), so a claim is a compare-and-swap. A flag registered on one channel only (a
//! plain `send` or `recv`) says so with `WAITING_ON_ONE`: every change to it is then made
//! under that one channel's lock, and a claimer takes it with a plain store, one atomic
//! read-modify-write less on every rendezvous.

use std::marker::PhantomPinned;
use std::mem::ManuallyDrop;
use std::task::Waker;

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::task::TaskRef;
use crate::task::panic::FirstPanic;
use crate::task::waker::process_of;
use crate::wait::foreign::ForeignWaker;
use crate::wait::parker::{Parker, parker_arc_of, parker_of};

const IDLE: usize = 0;
const WAITING: usize = 1;
const WAITING_ON_ONE: usize = 2;
const BUSY: usize = 3;
const CANCELLED: usize = 4;
const CLAIMED: usize = 5;

/// Who to wake when a claim completes.
pub(crate) enum Owner {
    /// A csp process, by an internal reference.
    Process(TaskRef),
    /// A `block_on` future (or a blocking call), by an internal reference to its thread.
    Main(std::sync::Arc<Parker>),
    /// Anything else (another executor).
    Foreign(ForeignWaker),
}

impl Owner {
    /// The owner behind `waker`: a csp process gets an internal reference rather than a
    /// waker clone.
    #[inline]
    pub(crate) fn from_waker(waker: &Waker) -> Owner {
        Owner::internal(waker).unwrap_or_else(|| Owner::foreign(waker))
    }

    /// `waker` as another executor's, by a clone: foreign code runs (the clone, and
    /// later the drop), so never under a channel lock.
    #[inline]
    pub(crate) fn foreign(waker: &Waker) -> Owner {
        Owner::Foreign(ForeignWaker::new(waker.clone()))
    }

    /// The owner behind `waker` if csp can hold it by an internal reference (a process,
    /// a `block_on` future): making one runs no foreign code, unlike cloning a waker.
    #[inline]
    pub(crate) fn internal(waker: &Waker) -> Option<Owner> {
        if let Some(raw) = process_of(waker) {
            return Some(Owner::Process(TaskRef::new(raw)));
        }
        parker_arc_of(waker).map(Owner::Main)
    }

    /// True if waking `self` would wake the owner behind `waker`.
    pub(crate) fn will_wake(&self, waker: &Waker) -> bool {
        match self {
            Owner::Process(task) => process_of(waker) == Some(task.raw()),
            Owner::Main(parker) => {
                parker_of(waker).is_some_and(|other| std::ptr::eq(other, &**parker))
            }
            Owner::Foreign(own) => own.will_wake(waker),
        }
    }

    /// Who this is, for the wait graph.
    #[inline]
    pub(crate) fn tag(&self) -> OwnerTag {
        match self {
            Owner::Process(task) => OwnerTag::Process(task.raw().as_ptr().as_ptr() as usize),
            Owner::Main(parker) => OwnerTag::Main(parker.runtime()),
            Owner::Foreign(_) => OwnerTag::Foreign,
        }
    }

    /// Wakes the owner, consuming the reference (a process goes to the current worker's
    /// handoff slot when woken by another process of its runtime). A foreign waker's
    /// panic unwinds to the caller, unless the thread is unwinding already
    /// (`task::panic::resume`).
    pub(crate) fn wake(self) {
        let mut panic = FirstPanic::default();
        self.wake_catching(&mut panic);
        panic.resume();
    }

    /// Wakes the owner; a foreign waker's panic is caught into `panic`.
    #[inline]
    pub(crate) fn wake_catching(self, panic: &mut FirstPanic) {
        match self {
            Owner::Process(task) => task.wake(),
            Owner::Main(parker) => parker.unpark(),
            Owner::Foreign(waker) => panic.catch(|| waker.wake()),
        }
    }
}

/// Who owns a claim, as the wait graph names it: kept beside the owner, which only the
/// flag's protocol may touch, so that a survey can read it under any one of the owner's
/// channel locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OwnerTag {
    /// Not waiting yet.
    None,
    /// The process whose header is at this address (a number to compare with the
    /// addresses of live processes, never a pointer to follow: the entry that names it
    /// may be unlinked, and the process gone, by the time a survey looks further).
    Process(usize),
    /// A `block_on` future (or a blocking call) of runtime `id` (0: of none).
    Main(u64),
    /// Another executor's task.
    Foreign,
}

// The low bits of the tag word: a process header's address has them clear (a header is
// aligned to at least 8), so a process costs no encoding on the hot path.
const TAG_KIND_BITS: u32 = 3;
const TAG_MAIN: u64 = 1;
const TAG_FOREIGN: u64 = 2;
const _: () = assert!(std::mem::align_of::<crate::task::header::Header>() >= 1 << TAG_KIND_BITS);

impl OwnerTag {
    #[inline]
    fn encode(self) -> u64 {
        match self {
            OwnerTag::None => 0,
            OwnerTag::Process(address) => address as u64,
            OwnerTag::Main(runtime) => (runtime << TAG_KIND_BITS) | TAG_MAIN,
            OwnerTag::Foreign => TAG_FOREIGN,
        }
    }

    fn decode(word: u64) -> OwnerTag {
        match word & ((1 << TAG_KIND_BITS) - 1) {
            _ if word == 0 => OwnerTag::None,
            0 => OwnerTag::Process(word as usize),
            TAG_MAIN => OwnerTag::Main(word >> TAG_KIND_BITS),
            _ => OwnerTag::Foreign,
        }
    }
}

/// A panic caught from foreign code (a waker), to resume once the work it interrupted
/// is complete.
pub(crate) type Panic = crate::task::panic::Payload;

/// Resumes a panic caught from foreign code, unless this thread is unwinding already.
pub(crate) use crate::task::panic::resume;

/// Owners to wake once the caller drops its channel locks (a foreign waker may re-enter
/// the channel). Holds the first inline, so the common single wake allocates nothing.
///
/// A batch survives a panicking waker: every owner in it is woken, then the first panic
/// is resumed ([`run`](Self::run)) or handed back ([`run_catching`](Self::run_catching)).
/// Only a foreign waker can panic; csp's own wakes (a process, a `block_on` thread) run
/// no user code. A batch dropped unrun wakes nobody, so no foreign code (a waker's drop
/// included) may run between the claims that fill it and its run.
#[derive(Default)]
pub(crate) struct Wakes {
    first: Option<Owner>,
    more: Vec<Owner>,
}

impl Wakes {
    #[inline]
    pub(crate) fn push(&mut self, owner: Option<Owner>) {
        let Some(owner) = owner else { return };
        if self.first.is_none() {
            self.first = Some(owner);
        } else {
            self.more.push(owner);
        }
    }

    /// Wakes them all, then resumes the first panic of a waker, if any; call with no
    /// channel lock held, and with the caller's state recorded (the panic unwinds
    /// through it).
    #[inline]
    pub(crate) fn run(self) {
        if let Err(panic) = self.run_catching() {
            resume(panic);
        }
    }

    /// Wakes them all; returns the first panic of a waker, for the caller to resume once
    /// it has put its own state right.
    #[inline]
    pub(crate) fn run_catching(self) -> Result<(), Panic> {
        let Wakes { first, more } = self;
        // Most operations wake nobody, and most of the rest one process: both cases are
        // decided inline, and `more` (empty, never allocated in both) needs no drop.
        match first {
            None => {
                debug_assert_eq!(more.capacity(), 0);
                std::mem::forget(more);
                Ok(())
            }
            Some(Owner::Process(task)) if more.capacity() == 0 => {
                std::mem::forget(more);
                wake_process(task);
                Ok(())
            }
            Some(first) => Wakes::wake_all(first, more),
        }
    }

    #[inline(never)]
    fn wake_all(first: Owner, more: Vec<Owner>) -> Result<(), Panic> {
        let mut panic = FirstPanic::default();
        first.wake_catching(&mut panic);
        for owner in more {
            owner.wake_catching(&mut panic);
        }
        panic.into_result()
    }
}

/// The wake of a batch's one process (csp's own code, which does not panic), out of
/// line: the callers inline only the test that leads here.
#[inline(never)]
fn wake_process(task: TaskRef) {
    task.wake();
}

/// What the owner finds when it looks at its flag without a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// Registered and not claimed yet (or a claimer is mid-way: take the lock to know).
    Pending,
    /// Arm `i` fired.
    Claimed(usize),
}

/// The claim flag and the owner to wake.
pub(crate) struct Claim {
    state: AtomicUsize,
    /// Written by the owner while `IDLE` (or `WAITING` under all its locks); taken by
    /// the claimer that moved the flag to `BUSY`. `ManuallyDrop`: `Drop` takes an owner
    /// left here and drops it, after which the cell holds `None` and has nothing to
    /// drop; without it, every drop of a flag would carry the glue of an `Owner`'s drop
    /// (too big to inline) for a slot that is almost always empty.
    owner: ManuallyDrop<UnsafeCell<Option<Owner>>>,
    /// The owner's [`OwnerTag`], written with it. A std atomic, not loom's: it orders
    /// nothing, and only the wait graph reads it.
    tag: std::sync::atomic::AtomicU64,
    /// Claimers reach the flag through raw pointers from other threads while its owner
    /// holds it: `!Unpin`, so the owner's `&mut` to its choice asserts no uniqueness
    /// over it.
    _pinned: PhantomPinned,
}

// SAFETY: `owner` is accessed by one party at a time, as the flag's protocol (module docs)
// assigns it; `Owner` is Send (a process reference, a parker or a `ForeignWaker`).
unsafe impl Send for Claim {}
// SAFETY: as above.
unsafe impl Sync for Claim {}

impl Claim {
    pub(crate) fn new() -> Claim {
        Claim {
            state: AtomicUsize::new(IDLE),
            owner: ManuallyDrop::new(UnsafeCell::new(None)),
            tag: std::sync::atomic::AtomicU64::new(0),
            _pinned: PhantomPinned,
        }
    }

    /// The owner registers: stores who to wake and opens the flag to claimers. Called
    /// under the locks of every channel it registers on, before the entries are linked.
    #[inline]
    pub(crate) fn begin_wait(&self, owner: Owner) {
        self.open(owner, WAITING);
    }

    /// As [`begin_wait`](Self::begin_wait), for a choice that links one entry, in one
    /// channel, under whose lock every later change to the flag is made (module docs).
    #[inline]
    pub(crate) fn begin_wait_on_one(&self, owner: Owner) {
        self.open(owner, WAITING_ON_ONE);
    }

    #[inline]
    fn open(&self, owner: Owner, waiting: usize) {
        self.set_tag(&owner);
        // SAFETY: IDLE (or a cancelled/claimed flag being reused): no claimer can reach
        // the flag, so the owner slot is ours.
        let previous = self
            .owner
            .with_mut(|slot| unsafe { (*slot).replace(owner) });
        debug_assert!(previous.is_none());
        // Release: a claimer that acquires WAITING sees the owner and the entries' values.
        self.state.store(waiting, Ordering::Release);
    }

    /// The owner, polled again while waiting, stores `fresh` as the one to wake and
    /// returns the previous one, to drop after unlocking. Called under the locks of every
    /// channel it is registered on (so no claimer is mid-way).
    pub(crate) fn replace_owner(&self, fresh: Owner) -> Option<Owner> {
        debug_assert!(matches!(
            self.state.load(Ordering::Relaxed),
            WAITING | WAITING_ON_ONE
        ));
        self.set_tag(&fresh);
        // SAFETY: WAITING under all the owner's locks: no claimer holds BUSY.
        self.owner
            .with_mut(|slot| unsafe { (*slot).replace(fresh) })
    }

    #[inline]
    fn set_tag(&self, owner: &Owner) {
        // Relaxed: read by surveys only, under a lock of a channel the entry is linked
        // in, which the owner held when it wrote the tag.
        self.tag
            .store(owner.tag().encode(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Registered and not claimed or cancelled, for the wait graph: a snapshot.
    pub(crate) fn is_waiting(&self) -> bool {
        // Relaxed: a snapshot for a picture, ordering nothing.
        matches!(self.state.load(Ordering::Relaxed), WAITING | WAITING_ON_ONE)
    }

    /// Who waits on this flag, for the wait graph. Read under the lock of a channel
    /// where one of its entries is linked.
    pub(crate) fn owner_tag(&self) -> OwnerTag {
        // Relaxed: see `set_tag`.
        OwnerTag::decode(self.tag.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// A counterpart claims the flag: true if it won, and must then move the value and
    /// call [`finish`](Self::finish). Called under the lock of the channel where the
    /// counterpart found the entry.
    #[must_use]
    #[inline]
    pub(crate) fn try_claim(&self) -> bool {
        // Relaxed: the caller's lock orders this after the registration, which the owner
        // made under the same lock; the compare-and-swap below decides a race.
        match self.state.load(Ordering::Relaxed) {
            WAITING_ON_ONE => {
                // Relaxed: every change to this flag is made under the lock the caller
                // holds (`begin_wait_on_one`), so nobody can change it between the load
                // and this store. The owner's lock-free look reads BUSY as pending, and
                // `finish` publishes the outcome with a release store.
                self.state.store(BUSY, Ordering::Relaxed);
                true
            }
            // Acquire: see the owner's registration (owner slot, entry values), made
            // under the locks of all its channels, not only the caller's.
            WAITING => self
                .state
                .compare_exchange(WAITING, BUSY, Ordering::Acquire, Ordering::Relaxed)
                .is_ok(),
            _ => false,
        }
    }

    /// Completes a won claim for arm `arm`: returns the owner to wake (after the caller
    /// drops its locks).
    #[must_use]
    #[inline]
    pub(crate) fn finish(&self, arm: usize) -> Option<Owner> {
        // SAFETY: BUSY belongs to this claimer, and so does the owner slot.
        let owner = self.owner.with_mut(|owner| unsafe { (*owner).take() });
        // Release: the owner, acquiring CLAIMED, sees the moved value and the unlinking.
        self.state.store(CLAIMED + arm, Ordering::Release);
        owner
    }

    /// The owner's lock-free look at its flag.
    #[inline]
    pub(crate) fn seen(&self) -> Seen {
        // Acquire: pairs with `finish`, so a claimed value is visible.
        match self.state.load(Ordering::Acquire) {
            s if s >= CLAIMED => Seen::Claimed(s - CLAIMED),
            _ => Seen::Pending,
        }
    }

    /// The owner gives up (under all its locks): `Ok` with the owner to drop (after
    /// unlocking) if it was still waiting (nobody can claim it now; the owner must unlink
    /// its entries), `Err(arm)` if arm `arm` already fired (its entry is unlinked).
    #[inline]
    pub(crate) fn cancel(&self) -> Result<Option<Owner>, usize> {
        // Acquire: as `seen`, should the flag have fired.
        let waiting = match self.state.load(Ordering::Acquire) {
            s if s >= CLAIMED => return Err(s - CLAIMED),
            s @ (WAITING | WAITING_ON_ONE) => s,
            // Under all the owner's locks no claimer is mid-way (module docs).
            s => unreachable!("csp: a claim flag was cancelled in state {s}"),
        };
        match self
            .state
            .compare_exchange(waiting, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                // SAFETY: CANCELLED: no claimer will touch the owner slot again.
                Ok(self.owner.with_mut(|owner| unsafe { (*owner).take() }))
            }
            Err(s) => {
                debug_assert!(s >= CLAIMED, "cancel of a flag in state {s}");
                Err(s - CLAIMED)
            }
        }
    }

    /// Back to `IDLE` once the owner has consumed the outcome (for a reusable choice).
    #[inline]
    pub(crate) fn reset(&self) {
        // Relaxed: only the owner sees the flag outside WAITING.
        self.state.store(IDLE, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state.load(Ordering::Relaxed) {
            IDLE => "idle".to_owned(),
            WAITING | WAITING_ON_ONE => "waiting".to_owned(),
            BUSY => "busy".to_owned(),
            CANCELLED => "cancelled".to_owned(),
            s => format!("claimed(arm {})", s - CLAIMED),
        };
        f.debug_struct("Claim").field("state", &state).finish()
    }
}

impl Drop for Claim {
    #[inline]
    fn drop(&mut self) {
        // Most flags end with no owner left (a claimer or the cancel took it): a test,
        // in place. SAFETY: `&mut self`: nobody else can reach the flag.
        if self.owner.with(|owner| unsafe { (*owner).is_some() }) {
            self.drop_owner();
        }
    }
}

impl Claim {
    /// The rare drop of an owner a flag still held, out of the way of the common one. The
    /// cell is left holding `None`, which needs no drop of its own (the field is
    /// `ManuallyDrop`).
    #[cold]
    #[inline(never)]
    fn drop_owner(&mut self) {
        // SAFETY: as in `drop`.
        drop(self.owner.with_mut(|owner| unsafe { (*owner).take() }));
    }
}
