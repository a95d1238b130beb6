//! What `alt!` and `prialt!` expand to: typed arms the expansion keeps as locals, and
//! a future choosing among a fixed array of them (no allocation per choice). Public for
//! the macros only (`csp::__private`); not part of the API, and sound only as the
//! expansion uses it: an [`AltFuture`] is dropped (never leaked) before its arms.

use std::borrow::Borrow;
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::alt::choice::{ArmSet, Choice, Deadline, NoDeadline, Plan, Timeout};
use crate::alt::operation::Operation;
use crate::chan::core::Chan;
use crate::chan::ops::{ClosedOp, RecvOp, SendOp};
use crate::chan::{Receiver, RecvError, SendError, Sender};
use crate::loom::cell::UnsafeCell;

/// What [`AltFuture`] resolves to when the `default` arm runs.
pub const DEFAULT: usize = usize::MAX;

/// What [`AltFuture`] resolves to when the `after` arm's time is up.
pub const AFTER: usize = usize::MAX - 1;

/// A type-erased reference to an arm, for [`alt`]: one operation, or the many of a
/// `recv_any` or `send_any` arm.
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

// SAFETY: an arm's state is touched only under its channel's lock or by the choice that
// owns it (through the future polling it), never through a shared reference elsewhere.
unsafe impl Send for ArmRef<'_> {}
// SAFETY: as above.
unsafe impl Sync for ArmRef<'_> {}

/// A receive arm.
pub struct RecvArm<'a, T>(RecvOp<T, &'a Chan<T>>);

/// A send arm, holding its value until it fires (or is dropped).
pub struct SendArm<'a, T>(SendOp<'a, T>);

/// A `closed(tx)` arm.
pub struct ClosedArm<'a, T>(ClosedOp<'a, T>);

/// A `recv_any(&rxs)` arm: a receive on each of a run-time number of channels.
pub struct RecvAnyArm<'a, T>(Vec<RecvOp<T, &'a Chan<T>>>);

/// A `send_any(&txs, value)` arm: one value, offered on each of a run-time number of
/// channels; the send that fires takes it.
pub struct SendAnyArm<'a, T> {
    ops: Vec<SendOp<'a, T>>,
    /// The value, in a heap cell the ops' entries point at (so it stays put however the
    /// arm moves); only reached through them. Owned: freed by `Drop`, after the ops.
    value: NonNull<UnsafeCell<Option<T>>>,
    _owns: std::marker::PhantomData<Box<UnsafeCell<Option<T>>>>,
}

impl<T> Drop for SendAnyArm<'_, T> {
    fn drop(&mut self) {
        drop(std::mem::take(&mut self.ops));
        // SAFETY: `value` came from `Box::into_raw` in `new` and is freed only here,
        // after every op that pointed at it is gone.
        drop(unsafe { Box::from_raw(self.value.as_ptr()) });
    }
}

// SAFETY: `&self` methods only make an `ArmRef`; the state inside is reached under the
// channel lock or by the owning choice, and `outcome` takes `&mut self`.
unsafe impl<T: Send> Sync for RecvArm<'_, T> {}
// SAFETY: as for `RecvArm`.
unsafe impl<T: Send> Sync for SendArm<'_, T> {}
// SAFETY: as for `RecvArm`.
unsafe impl<T: Send> Sync for ClosedArm<'_, T> {}
// SAFETY: as for `RecvArm`.
unsafe impl<T: Send> Sync for RecvAnyArm<'_, T> {}
// SAFETY: as for `RecvArm`; the shared value is reached like a send's own slot.
unsafe impl<T: Send> Sync for SendAnyArm<'_, T> {}
// SAFETY: it owns its value cell as a `Box` would; the ops are `Send` for `T: Send`.
unsafe impl<T: Send> Send for SendAnyArm<'_, T> {}

impl<'a, T> RecvArm<'a, T> {
    /// An arm receiving from `rx` (a `Receiver` or a reference to one).
    pub fn new<R: Borrow<Receiver<T>> + ?Sized>(rx: &'a R) -> Self {
        RecvArm(RecvOp::new(rx.borrow().chan()))
    }

    /// The arm, for [`alt`].
    pub fn arm(&self) -> ArmRef<'_> {
        ArmRef(Slot::One(&self.0))
    }

    /// The fired arm's outcome.
    pub fn outcome(&mut self) -> Result<T, RecvError> {
        self.0
            .take_result()
            .expect("csp: a fired receive arm has an outcome")
    }
}

impl<'a, T> SendArm<'a, T> {
    /// An arm sending `value` on `tx` (a `Sender` or a reference to one).
    pub fn new<S: Borrow<Sender<T>> + ?Sized>(tx: &'a S, value: T) -> Self {
        SendArm(SendOp::new(tx.borrow().chan(), value))
    }

    /// The arm, for [`alt`].
    pub fn arm(&self) -> ArmRef<'_> {
        ArmRef(Slot::One(&self.0))
    }

    /// The fired arm's outcome.
    pub fn outcome(&mut self) -> Result<(), SendError<T>> {
        self.0
            .take_result()
            .expect("csp: a fired send arm has an outcome")
    }
}

impl<'a, T> ClosedArm<'a, T> {
    /// An arm that fires once the channel of `tx` is closed.
    pub fn new<S: Borrow<Sender<T>> + ?Sized>(tx: &'a S) -> Self {
        ClosedArm(ClosedOp::new(tx.borrow().chan()))
    }

    /// The arm, for [`alt`].
    pub fn arm(&self) -> ArmRef<'_> {
        ArmRef(Slot::One(&self.0))
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
        RecvAnyArm(
            rxs.as_ref()
                .iter()
                .map(|rx| RecvOp::new(rx.borrow().chan()))
                .collect(),
        )
    }

    /// The arm, for [`alt`].
    pub fn arm(&self) -> ArmRef<'_> {
        ArmRef(Slot::Many(&self.0))
    }

    /// The outcome of the receive on the `i`th channel, which fired.
    pub fn outcome(&mut self, i: usize) -> Result<T, RecvError> {
        self.0[i]
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
            _owns: std::marker::PhantomData,
        }
    }

    /// The arm, for [`alt`].
    pub fn arm(&self) -> ArmRef<'_> {
        ArmRef(Slot::Many(&self.ops))
    }

    /// The outcome of the send on the `i`th channel, which fired.
    pub fn outcome(&mut self, i: usize) -> Result<(), SendError<T>> {
        self.ops[i]
            .take_result()
            .expect("csp: a fired send arm has an outcome")
    }
}

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
    fn arm(&self, i: usize) -> Option<&dyn Operation> {
        let (arm, within) = self.locate(i);
        match self.arms[arm]?.0 {
            Slot::One(op) => Some(op),
            Slot::Many(many) => (within < many.len()).then(|| many.get(within)),
        }
    }
}

/// A choice among `arms` (`None`: disabled by its guard): fair, or `biased` to the
/// first ready arm; with `has_default`, resolves to [`DEFAULT`] instead of waiting.
/// Resolves to the fired arm's position as written and, for a `recv_any` or `send_any`
/// arm, the position of the channel within it (0 otherwise).
#[inline]
pub fn alt<const N: usize>(
    arms: [Option<ArmRef<'_>>; N],
    biased: bool,
    has_default: bool,
) -> AltFuture<'_, N, NoDeadline> {
    AltFuture::new(arms, biased, has_default, NoDeadline)
}

/// As [`alt`], with an `after` arm: resolves to [`AFTER`] once `after` has passed since
/// its first poll found no arm ready, with no arm fired since (`None`: the arm's guard
/// is false).
#[inline]
pub fn alt_after<const N: usize>(
    arms: [Option<ArmRef<'_>>; N],
    biased: bool,
    has_default: bool,
    after: Option<Duration>,
) -> AltFuture<'_, N, Deadline> {
    AltFuture::new(arms, biased, has_default, Deadline::new(after))
}

/// The future of an `alt!`: the arm that fired (and the channel within a `recv_any` or
/// `send_any` arm), [`DEFAULT`] or [`AFTER`]. `D` is its `after` arm, if it has one.
#[must_use = "futures do nothing unless polled"]
pub struct AltFuture<'a, const N: usize, D: Timeout> {
    arms: Arms<'a, N>,
    plan: Plan,
    choice: Choice,
    biased: bool,
    has_default: bool,
    /// The `after` arm.
    deadline: D,
    /// The arms' entries point at `choice` while it waits; the deadline's wheel entry
    /// lives inside it.
    _pinned: PhantomPinned,
}

impl<'a, const N: usize, D: Timeout> AltFuture<'a, N, D> {
    #[inline]
    fn new(arms: [Option<ArmRef<'a>>; N], biased: bool, has_default: bool, deadline: D) -> Self {
        AltFuture {
            arms: Arms::new(arms),
            plan: Plan::default(),
            choice: Choice::new(),
            biased,
            has_default,
            deadline,
            _pinned: PhantomPinned,
        }
    }
}

impl<const N: usize, D: Timeout> Future for AltFuture<'_, N, D> {
    type Output = (usize, usize);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<(usize, usize)> {
        // SAFETY: nothing is moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        if !this.choice.is_waiting() {
            let any = this.plan.prepare(&this.arms, this.biased);
            if this.has_default {
                return Poll::Ready(
                    match any
                        .then(|| this.choice.try_now(&this.arms, &this.plan))
                        .flatten()
                    {
                        Some(fired) => this.arms.locate(fired),
                        None => (DEFAULT, 0),
                    },
                );
            }
            if !any {
                assert!(
                    this.deadline.is_set(),
                    "csp: alt! with every arm disabled by its guard and no default or after \
                     arm would wait forever"
                );
                // Only the timeout is left to wait for.
                // SAFETY: the deadline is pinned inside this future.
                return unsafe { this.deadline.poll(cx) }.map(|()| (AFTER, 0));
            }
        }
        // SAFETY: `this` is pinned, and the arms and plan stay unchanged until the
        // choice completes or is cancelled on drop.
        let fired = std::task::ready!(unsafe {
            this.choice
                .poll_until(&this.arms, &mut this.plan, &mut this.deadline, cx)
        });
        Poll::Ready(match fired {
            Some(fired) => this.arms.locate(fired),
            None => (AFTER, 0),
        })
    }
}

impl<const N: usize, D: Timeout> Drop for AltFuture<'_, N, D> {
    fn drop(&mut self) {
        // A fired arm's outcome is undone (`abandon`): nothing else took effect.
        let _ = self.choice.cancel(&self.arms, &self.plan);
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

impl<const N: usize, D: Timeout> std::fmt::Debug for AltFuture<'_, N, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AltFuture")
            .field("arms", &N)
            .field("waiting", &self.choice.is_waiting())
            .finish()
    }
}
