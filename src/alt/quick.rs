//! The quick pass of an `alt!` whose channel arms are all receives: run by the macro's
//! expansion straight on the receivers, before it builds any arm, and the whole `alt!`
//! when one of them is ready (the common case of a loop that drains its channels).
//!
//! It is the quick pass the choice would run itself ([`choice.rs`](super::choice)), less
//! the building: each enabled arm, in the same order (written order for `prialt!`, else
//! each one drawn uniformly from those not tried yet), completes now if it can, under its
//! own channel's lock, and the first that does fires. No claim flag is needed, as nothing
//! is registered: each try is an independent `try_recv`. An arm whose channel's
//! readiness hint says it is empty is skipped without its lock, as in the choice.
//!
//! When no arm is ready, the expansion builds the arms and runs the choice as before,
//! whose own quick pass tries again (a counterpart may have come meanwhile) before it
//! registers. A default arm fires only after that.

use std::borrow::Borrow;

use crate::alt::choice::try_in_order;
use crate::chan::{Receiver, RecvError};

/// Tries the enabled arms (`enabled[i]`) with `try_arm` until one fires, in the order a
/// choice would (`biased`: as written); the arm that fired, or `None`.
#[doc(hidden)]
#[inline]
pub fn quick_pass<const N: usize>(
    enabled: [bool; N],
    biased: bool,
    try_arm: impl FnMut(usize) -> bool,
) -> Option<usize> {
    let mut order = [0; N];
    let mut len = 0;
    for (i, &enabled) in enabled.iter().enumerate() {
        // Written, then kept by moving past it (no branch on `enabled`); `len <= i`,
        // and `N` arms of a macro's expansion are far fewer than 2^32.
        order[len] = i as u32;
        len += usize::from(enabled);
    }
    try_in_order(&mut order[..len], biased, try_arm)
}

/// One arm's try: the outcome of receiving from `rx` if that completes now (a value, or
/// the close), `None` if it would wait.
#[doc(hidden)]
#[inline]
pub fn quick_recv<T, R: Borrow<Receiver<T>> + ?Sized>(rx: &R) -> Option<Result<T, RecvError>> {
    rx.borrow().recv_if_ready()
}
