//! What `alt!` and `prialt!` expand to: typed arms the expansion keeps as pinned
//! locals, and a future choosing among them (no allocation per choice). Public for the
//! macros only (`csp::__private`); not part of the API, but sound however safe code uses
//! it:
//! - an arm's entry is linked only while the arm is pinned, and an arm dropped with its
//!   entry still linked (its future leaked) unlinks it itself (the operations' `Drop`);
//! - an [`AltFuture`] holds its arms by `Pin<&mut _>`, so no two choices share one at
//!   once, and an arm whose earlier choice left it linked, unread or spent is refused
//!   with a panic, before any channel is touched;
//! - an `AltFuture` is `Send` exactly when its arms are.

use std::borrow::Borrow;
use std::convert::Infallible;
use std::future::Future;
use std::marker::{PhantomData, PhantomPinned};
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::alt::choice::{ArmSet, Choice, Deadline, Expiry, NoDeadline, Plan, Timeout};
use crate::cancel::CancellationToken;
use crate::chan::core::Chan;
use crate::chan::ops::{ClosedOp, RecvOp, SendOp};
use crate::chan::{Receiver, RecvError, SendError, Sender};
use crate::loom::cell::UnsafeCell;
use crate::wait::operation::Operation;

/// What [`AltFuture`] resolves to when the `default` arm runs.
pub const DEFAULT: usize = usize::MAX;

/// What [`AltFuture`] resolves to when the `after` (or `at`) arm's time is up.
pub const AFTER: usize = usize::MAX - 1;

/// A type-erased reference to an arm, inside [`AltFuture`]: one operation, or the many
/// of a `recv_any` or `send_any` arm. Neither `Send` nor `Sync`: the future is `Send`
/// through the typed arms it holds ([`ArmList`]).
#[derive(Clone, Copy)]
pub struct ArmRef<'a>(Slot<'a>);

#[derive(Clone, Copy)]
enum Slot<'a> {
    One(&'a dyn Operation),
    Many(&'a dyn ManyArms),
}

/// The operations of a `recv_any` or `send_any` arm.
trait ManyArms {
    fn len(&self) -> usize;
    fn get(&self, i: usize) -> &dyn Operation;
}

impl Slot<'_> {
    fn len(self) -> usize {
        match self {
            Slot::One(_) => 1,
            Slot::Many(many) => many.len(),
        }
    }
}

mod sealed {
    /// Only this module's arms and lists of them.
    pub trait Sealed {}
}

/// An arm of an `alt!`.
pub trait AltArm: sealed::Sealed {
    /// The arm, for its one choice: a second call (the arm put in a second choice)
    /// panics.
    #[doc(hidden)]
    fn arm_ref(self: Pin<&mut Self>) -> ArmRef<'_>;
}

/// The arms of an `alt!`, as the expansion passes them to [`alt`]: a list
/// `(arm0, (arm1, (.., ())))` of `Option<Pin<&mut A>>` (`None`: a false guard).
pub trait ArmList<'a>: sealed::Sealed {
    /// How many arms.
    const LEN: usize;

    /// Writes the arms' references into `out`, in order.
    #[doc(hidden)]
    fn refs(self, out: &mut [Option<ArmRef<'a>>]);
}

impl sealed::Sealed for () {}

impl<'a> ArmList<'a> for () {
    const LEN: usize = 0;

    #[inline]
    fn refs(self, _out: &mut [Option<ArmRef<'a>>]) {}
}

impl<A: AltArm, Rest> sealed::Sealed for (Option<Pin<&mut A>>, Rest) {}

impl<'a, A: AltArm, Rest: ArmList<'a>> ArmList<'a> for (Option<Pin<&'a mut A>>, Rest) {
    const LEN: usize = 1 + Rest::LEN;

    #[inline]
    fn refs(self, out: &mut [Option<ArmRef<'a>>]) {
        let (first, rest) = self;
        out[0] = first.map(AltArm::arm_ref);
        rest.refs(&mut out[1..]);
    }
}

/// Panics unless the arm can serve a new choice: a choice it served before may have
/// left its entry linked (a leaked future) or its outcome unread, or spent its value.
#[inline]
fn check_fresh(fresh: bool) {
    assert!(
        fresh,
        "csp: an alt! arm serves one choice; build a new arm for each"
    );
}

/// A receive arm.
pub struct RecvArm<'a, T> {
    op: RecvOp<T, &'a Chan<T>>,
}

/// A send arm, holding its value until it fires (or is dropped).
pub struct SendArm<'a, T> {
    op: SendOp<'a, T>,
}

/// A `closed(tx)` arm.
pub struct ClosedArm<'a, T> {
    op: ClosedOp<'a, T>,
}

/// A `recv_any(&rxs)` arm: a receive on each of a run-time number of channels.
pub struct RecvAnyArm<'a, T> {
    ops: Vec<RecvOp<T, &'a Chan<T>>>,
}

/// A `send_any(&txs, value)` arm: one value, offered on each of a run-time number of
/// channels; the send that fires takes it.
pub struct SendAnyArm<'a, T> {
    ops: Vec<SendOp<'a, T>>,
    /// The value, in a heap cell the ops' entries point at (so it stays put however the
    /// arm moves); only reached through them. Owned: freed by `Drop`, after the ops.
    value: NonNull<UnsafeCell<Option<T>>>,
    _owns: PhantomData<Box<UnsafeCell<Option<T>>>>,
}

impl<T> Drop for SendAnyArm<'_, T> {
    fn drop(&mut self) {
        // Each op unlinks its entry, if linked, as it drops.
        drop(std::mem::take(&mut self.ops));
        // SAFETY: `value` came from `Box::into_raw` in `new` and is freed only here,
        // after every op that pointed at it is gone.
        drop(unsafe { Box::from_raw(self.value.as_ptr()) });
    }
}

// SAFETY: it owns its value cell as a `Box` would; the ops are `Send` for `T: Send`.
unsafe impl<T: Send> Send for SendAnyArm<'_, T> {}

impl<'a, T> RecvArm<'a, T> {
    /// An arm receiving from `rx` (a `Receiver` or a reference to one).
    pub fn new<R: Borrow<Receiver<T>> + ?Sized>(rx: &'a R) -> Self {
        RecvArm {
            op: RecvOp::new(rx.borrow().chan()),
        }
    }

    /// The fired arm's outcome.
    pub fn outcome(self: Pin<&mut Self>) -> Result<T, RecvError> {
        self.op
            .take_result()
            .expect("csp: a fired receive arm has an outcome")
    }
}

impl<'a, T> SendArm<'a, T> {
    /// An arm sending `value` on `tx` (a `Sender` or a reference to one).
    pub fn new<S: Borrow<Sender<T>> + ?Sized>(tx: &'a S, value: T) -> Self {
        SendArm {
            op: SendOp::new(tx.borrow().chan(), value),
        }
    }

    /// The fired arm's outcome.
    pub fn outcome(self: Pin<&mut Self>) -> Result<(), SendError<T>> {
        self.op
            .take_result()
            .expect("csp: a fired send arm has an outcome")
    }
}

impl<'a, T> ClosedArm<'a, T> {
    /// An arm that fires once the channel of `tx` is closed.
    pub fn new<S: Borrow<Sender<T>> + ?Sized>(tx: &'a S) -> Self {
        ClosedArm {
            op: ClosedOp::new(tx.borrow().chan()),
        }
    }
}

impl<'a> ClosedArm<'a, Infallible> {
    /// A `cancelled(token)` arm: fires once `token` is cancelled (its channel closed).
    pub fn cancelled<S: Borrow<CancellationToken> + ?Sized>(token: &'a S) -> Self {
        ClosedArm {
            op: ClosedOp::new(token.borrow().chan()),
        }
    }
}

impl<'a, T> RecvAnyArm<'a, T> {
    /// An arm receiving from any of `rxs` (a slice, array or `Vec` of `Receiver`s or of
    /// references to them); empty, it is a disabled arm.
    pub fn new<S, R>(rxs: &'a S) -> Self
    where
        S: AsRef<[R]> + ?Sized,
        R: Borrow<Receiver<T>> + 'a,
    {
        RecvAnyArm {
            ops: rxs
                .as_ref()
                .iter()
                .map(|rx| RecvOp::new(rx.borrow().chan()))
                .collect(),
        }
    }

    /// The outcome of the receive on the `i`th channel, which fired.
    pub fn outcome(self: Pin<&mut Self>, i: usize) -> Result<T, RecvError> {
        self.ops[i]
            .take_result()
            .expect("csp: a fired receive arm has an outcome")
    }
}

impl<'a, T> SendAnyArm<'a, T> {
    /// An arm sending `value` on whichever of `txs` (a slice, array or `Vec` of
    /// `Sender`s or of references to them) can take it first; empty, it is a disabled
    /// arm (and `value` is dropped with it).
    pub fn new<S, W>(txs: &'a S, value: T) -> Self
    where
        S: AsRef<[W]> + ?Sized,
        W: Borrow<Sender<T>> + 'a,
    {
        let value = NonNull::from(Box::leak(Box::new(UnsafeCell::new(Some(value)))));
        let ops = txs
            .as_ref()
            .iter()
            // SAFETY: the cell outlives the ops (`Drop` frees it after them), and only
            // the ops touch it while the choice runs, each as its own slot: the claim
            // flag lets exactly one of them take the value.
            .map(|tx| unsafe { SendOp::with_shared_value(tx.borrow().chan(), value) })
            .collect();
        SendAnyArm {
            ops,
            value,
            _owns: PhantomData,
        }
    }

    /// The outcome of the send on the `i`th channel, which fired.
    pub fn outcome(self: Pin<&mut Self>, i: usize) -> Result<(), SendError<T>> {
        self.ops[i]
            .take_result()
            .expect("csp: a fired send arm has an outcome")
    }
}

/// `AltArm` for an arm of one operation (`one`) or of many (`many`).
macro_rules! alt_arm {
    ($name:ident, one $field:ident) => {
        alt_arm!(@impl $name, |arm| arm.$field.can_serve(), Slot::One(&arm.$field));
    };
    ($name:ident, many $field:ident) => {
        alt_arm!(
            @impl $name,
            |arm| arm.$field.iter().all(|op| op.can_serve()),
            Slot::Many(&arm.$field)
        );
    };
    (@impl $name:ident, |$arm:ident| $fresh:expr, $slot:expr) => {
        impl<T> sealed::Sealed for $name<'_, T> {}

        impl<T> AltArm for $name<'_, T> {
            #[inline]
            fn arm_ref(self: Pin<&mut Self>) -> ArmRef<'_> {
                let $arm = self.into_ref().get_ref();
                check_fresh($fresh);
                ArmRef($slot)
            }
        }
    };
}

alt_arm!(RecvArm, one op);
alt_arm!(SendArm, one op);
alt_arm!(ClosedArm, one op);
alt_arm!(RecvAnyArm, many ops);
alt_arm!(SendAnyArm, many ops);

impl<O: Operation> ManyArms for Vec<O> {
    fn len(&self) -> usize {
        self.len()
    }

    fn get(&self, i: usize) -> &dyn Operation {
        &self[i]
    }
}

/// The arms of an `alt!`, as the choice engine sees them: one index per operation,
/// a `recv_any` or `send_any` arm's operations side by side.
struct Arms<'a, const N: usize> {
    arms: [Option<ArmRef<'a>>; N],
    /// The engine index of each arm's first operation; `None` when every arm has one
    /// operation (no `recv_any` or `send_any`), so engine indices are arm positions.
    starts: Option<[usize; N]>,
    /// Operations in all.
    count: usize,
}

impl<'a, const N: usize> Arms<'a, N> {
    #[inline]
    fn new(arms: [Option<ArmRef<'a>>; N]) -> Self {
        let many = arms
            .iter()
            .flatten()
            .any(|arm| matches!(arm.0, Slot::Many(_)));
        if !many {
            return Arms {
                arms,
                starts: None,
                count: N,
            };
        }
        let mut starts = [0; N];
        let mut count = 0;
        for (start, arm) in starts.iter_mut().zip(&arms) {
            *start = count;
            count += arm.map_or(1, |arm| arm.0.len());
        }
        Arms {
            arms,
            starts: Some(starts),
            count,
        }
    }

    /// The arm (as written) and the operation within it of engine index `i`.
    #[inline]
    fn locate(&self, i: usize) -> (usize, usize) {
        match &self.starts {
            None => (i, 0),
            Some(starts) => {
                let arm = starts.partition_point(|&start| start <= i) - 1;
                (arm, i - starts[arm])
            }
        }
    }
}

impl<const N: usize> ArmSet for Arms<'_, N> {
    #[inline]
    fn count(&self) -> usize {
        self.count
    }

    #[inline]
    fn is_enabled(&self, i: usize) -> bool {
        match self.starts {
            // One operation an arm: enabled with its arm.
            None => self.arms[i].is_some(),
            Some(_) => self.arm(i).is_some(),
        }
    }

    #[inline]
    fn has_multi_arms(&self) -> bool {
        self.starts.is_some()
    }

    #[inline]
    fn arm_of(&self, i: usize) -> usize {
        self.locate(i).0
    }

    #[inline]
    fn arm(&self, i: usize) -> Option<&dyn Operation> {
        let (arm, within) = self.locate(i);
        match self.arms[arm]?.0 {
            Slot::One(op) => Some(op),
            Slot::Many(many) => (within < many.len()).then(|| many.get(within)),
        }
    }
}

/// A choice among `arms` (`None`: disabled by its guard; `N` of them): fair, or `biased`
/// to the first ready arm; with `has_default`, resolves to [`DEFAULT`] instead of
/// waiting. Resolves to the fired arm's position as written and, for a `recv_any` or
/// `send_any` arm, the position of the channel within it (0 otherwise).
#[inline]
pub fn alt<'a, const N: usize, L: ArmList<'a>>(
    arms: L,
    biased: bool,
    has_default: bool,
) -> AltFuture<'a, N, L, NoDeadline> {
    AltFuture::new(arms, biased, has_default, NoDeadline)
}

/// As [`alt`], with an `after` arm: resolves to [`AFTER`] once `after` has passed since
/// its first poll found no arm ready, with no arm fired since (`None`: the arm's guard
/// is false).
#[inline]
pub fn alt_after<'a, const N: usize, L: ArmList<'a>>(
    arms: L,
    biased: bool,
    has_default: bool,
    after: Option<Duration>,
) -> AltFuture<'a, N, L, Deadline> {
    AltFuture::new(
        arms,
        biased,
        has_default,
        Deadline::new(after.map(Expiry::After)),
    )
}

/// As [`alt`], with an `at` arm: resolves to [`AFTER`] once the instant `at` has passed
/// with no arm fired (`None`: the arm's guard is false).
#[inline]
pub fn alt_at<'a, const N: usize, L: ArmList<'a>>(
    arms: L,
    biased: bool,
    has_default: bool,
    at: Option<Instant>,
) -> AltFuture<'a, N, L, Deadline> {
    AltFuture::new(arms, biased, has_default, Deadline::new(at.map(Expiry::At)))
}

/// The future of an `alt!`: the arm that fired (and the channel within a `recv_any` or
/// `send_any` arm), [`DEFAULT`] or [`AFTER`]. `L` is its arms, `D` its `after` arm if it
/// has one.
#[must_use = "futures do nothing unless polled"]
pub struct AltFuture<'a, const N: usize, L, D: Timeout> {
    arms: Arms<'a, N>,
    plan: Plan,
    choice: Choice,
    biased: bool,
    has_default: bool,
    /// Completed, or a poll unwound out of it: polled again, it panics before touching
    /// a channel.
    done: bool,
    /// The `after` arm.
    deadline: D,
    /// The typed arms behind `arms`, borrowed exclusively for `'a`: what makes the
    /// future `Send` (or not).
    _arms: PhantomData<L>,
    /// The arms' entries point at `choice` while it waits; the deadline's wheel entry
    /// lives inside it.
    _pinned: PhantomPinned,
}

// SAFETY: the type-erased references in `arms` come from the arm borrows in `L`
// (`ArmList`, sealed), held exclusively for `'a`: sending the future sends those borrows,
// sound when `L` is `Send` (each arm is). Counterparts on other threads reach the arms'
// entries only under their channels' locks. The rest (`Plan`, `Choice`) is `Send`.
unsafe impl<const N: usize, L: Send, D: Timeout + Send> Send for AltFuture<'_, N, L, D> {}
// SAFETY: `&AltFuture` reaches nothing but `Debug`'s look at a `bool`.
unsafe impl<const N: usize, L: Sync, D: Timeout + Sync> Sync for AltFuture<'_, N, L, D> {}

impl<'a, const N: usize, L: ArmList<'a>, D: Timeout> AltFuture<'a, N, L, D> {
    #[inline]
    fn new(list: L, biased: bool, has_default: bool, deadline: D) -> Self {
        const { assert!(L::LEN == N, "csp: alt! passes N arms") };
        let mut arms = [None; N];
        list.refs(&mut arms);
        AltFuture {
            arms: Arms::new(arms),
            plan: Plan::default(),
            choice: Choice::new(),
            biased,
            has_default,
            done: false,
            deadline,
            _arms: PhantomData,
            _pinned: PhantomPinned,
        }
    }
}

impl<const N: usize, L, D: Timeout> Future for AltFuture<'_, N, L, D> {
    type Output = (usize, usize);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<(usize, usize)> {
        // SAFETY: nothing is moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        assert!(
            !this.done,
            "csp: an alt! future was polled after it completed, or after a panic unwound \
             out of its poll"
        );
        // Done unless this poll returns `Pending`. A poll that unwinds (a woken peer's
        // waker panicking after an arm fired) leaves it done: polled again, it would try
        // a fired send arm whose value is gone, after claiming a receiver for it.
        this.done = true;
        let polled = this.poll_choice(cx);
        if polled.is_pending() {
            this.done = false;
        }
        polled
    }
}

impl<const N: usize, L, D: Timeout> AltFuture<'_, N, L, D> {
    /// [`poll`](Future::poll)'s work.
    #[inline(always)]
    fn poll_choice(&mut self, cx: &mut Context<'_>) -> Poll<(usize, usize)> {
        let this = self;
        if !this.choice.is_waiting() {
            let any = this.plan.prepare(&this.arms, this.biased);
            if this.has_default {
                let fired = any
                    .then(|| this.choice.try_now(&this.arms, &mut this.plan))
                    .flatten();
                return Poll::Ready(fired.map_or((DEFAULT, 0), |fired| this.arms.locate(fired)));
            }
            if !any {
                assert!(
                    this.deadline.is_set(),
                    "csp: alt! with every arm disabled by its guard and no default or after \
                     arm would wait forever"
                );
                // Only the timeout is left to wait for.
                // SAFETY: the deadline is pinned inside this future.
                std::task::ready!(unsafe { this.deadline.poll(cx) });
                return Poll::Ready((AFTER, 0));
            }
        }
        // SAFETY: `this` is pinned, so is the choice's flag; the arms are pinned and
        // borrowed for as long as this future lives, and stay unchanged until the choice
        // completes or is cancelled on drop (should this future be leaked instead, each
        // arm unlinks its own entry when it drops).
        let fired = std::task::ready!(unsafe {
            this.choice
                .poll_until(&this.arms, &mut this.plan, &mut this.deadline, cx)
        });
        Poll::Ready(fired.map_or((AFTER, 0), |fired| this.arms.locate(fired)))
    }
}

impl<const N: usize, L, D: Timeout> Drop for AltFuture<'_, N, L, D> {
    fn drop(&mut self) {
        // A fired arm's outcome is undone (`abandon`): nothing else took effect. Most
        // alts end completed, with nothing to cancel: a test, inline.
        if self.choice.is_waiting() {
            let _ = self.choice.cancel(&self.arms, &self.plan);
        }
    }
}

/// `Debug` for the expansion's types, which have nothing useful to show.
macro_rules! opaque_debug {
    ($($name:ident $(<$($param:tt),*>)?),*) => {$(
        impl$(<$($param),*>)? std::fmt::Debug for $name$(<$($param),*>)? {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(concat!(stringify!($name), " { .. }"))
            }
        }
    )*};
}

opaque_debug!(
    ArmRef<'a>,
    RecvArm<'a, T>,
    SendArm<'a, T>,
    ClosedArm<'a, T>,
    RecvAnyArm<'a, T>,
    SendAnyArm<'a, T>
);

impl<const N: usize, L, D: Timeout> std::fmt::Debug for AltFuture<'_, N, L, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AltFuture")
            .field("arms", &N)
            .field("waiting", &self.choice.is_waiting())
            .finish()
    }
}
