//! What `alt!` and `prialt!` expand to: typed arms the expansion keeps as locals, and
//! a future choosing among a fixed array of them (no allocation per choice). Public for
//! the macros only (`csp::__private`); not part of the API.

use std::borrow::Borrow;
use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::alt::choice::{ArmSet, Choice, Plan};
use crate::alt::operation::Operation;
use crate::chan::core::Chan;
use crate::chan::ops::{ClosedOp, RecvOp, SendOp};
use crate::chan::{Receiver, RecvError, SendError, Sender};

/// What [`AltFuture`] resolves to when the `default` arm runs.
pub const DEFAULT: usize = usize::MAX;

/// A type-erased reference to an arm, for [`alt`].
#[derive(Clone, Copy)]
pub struct ArmRef<'a>(&'a dyn Operation);

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

// SAFETY: `&self` methods only make an `ArmRef`; the state inside is reached under the
// channel lock or by the owning choice, and `outcome` takes `&mut self`.
unsafe impl<T: Send> Sync for RecvArm<'_, T> {}
// SAFETY: as for `RecvArm`.
unsafe impl<T: Send> Sync for SendArm<'_, T> {}
// SAFETY: as for `RecvArm`.
unsafe impl<T: Send> Sync for ClosedArm<'_, T> {}

impl<'a, T> RecvArm<'a, T> {
    /// An arm receiving from `rx` (a `Receiver` or a reference to one).
    pub fn new<R: Borrow<Receiver<T>> + ?Sized>(rx: &'a R) -> Self {
        RecvArm(RecvOp::new(rx.borrow().chan()))
    }

    /// The arm, for [`alt`].
    pub fn arm(&self) -> ArmRef<'_> {
        ArmRef(&self.0)
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
        ArmRef(&self.0)
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
        ArmRef(&self.0)
    }
}

struct Arms<'a, const N: usize>([Option<ArmRef<'a>>; N]);

impl<const N: usize> ArmSet for Arms<'_, N> {
    fn count(&self) -> usize {
        N
    }

    fn arm(&self, i: usize) -> Option<&dyn Operation> {
        self.0[i].map(|arm| arm.0)
    }
}

/// A choice among `arms` (`None`: disabled by its guard): fair, or `biased` to the
/// first ready arm; with `has_default`, resolves to [`DEFAULT`] instead of waiting.
pub fn alt<const N: usize>(
    arms: [Option<ArmRef<'_>>; N],
    biased: bool,
    has_default: bool,
) -> AltFuture<'_, N> {
    AltFuture {
        arms: Arms(arms),
        plan: Plan::default(),
        choice: Choice::new(),
        biased,
        has_default,
        _pinned: PhantomPinned,
    }
}

/// The future of an `alt!`: the index of the arm that fired, or [`DEFAULT`].
#[must_use = "futures do nothing unless polled"]
pub struct AltFuture<'a, const N: usize> {
    arms: Arms<'a, N>,
    plan: Plan,
    choice: Choice,
    biased: bool,
    has_default: bool,
    /// The arms' entries point at `choice` while it waits.
    _pinned: PhantomPinned,
}

impl<const N: usize> Future for AltFuture<'_, N> {
    type Output = usize;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        // SAFETY: nothing is moved out of the pinned future.
        let this = unsafe { self.get_unchecked_mut() };
        if !this.choice.is_waiting() {
            let any = this.plan.prepare(&this.arms, this.biased);
            if this.has_default {
                return Poll::Ready(
                    any.then(|| this.choice.try_now(&this.arms, &this.plan))
                        .flatten()
                        .unwrap_or(DEFAULT),
                );
            }
            assert!(
                any,
                "csp: alt! with every arm disabled by its guard and no default arm would \
                 wait forever"
            );
        }
        // SAFETY: `this` is pinned, and the arms and plan stay unchanged until the choice
        // completes or is cancelled on drop.
        unsafe { this.choice.poll(&this.arms, &this.plan, cx) }
    }
}

impl<const N: usize> Drop for AltFuture<'_, N> {
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

opaque_debug!(ArmRef<'a>, RecvArm<'a, T>, SendArm<'a, T>, ClosedArm<'a, T>);

impl<const N: usize> std::fmt::Debug for AltFuture<'_, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AltFuture")
            .field("arms", &N)
            .field("waiting", &self.choice.is_waiting())
            .finish()
    }
}
