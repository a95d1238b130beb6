//! A cancellation signal apart from channel closure: [`CancellationToken`].
//!
//! Each token is a channel that never carries a value and closes only when the token is
//! cancelled, so waiting for a cancellation is waiting for a close: the `Closed` future,
//! and a `closed` arm in the choice engine (the `cancelled(token)` arm of `alt!`), with
//! the claim protocol the channels' loom models check. The channel is private to the
//! token: no `Sender` or `Receiver` exists whose drop could close it.
//!
//! Children: a token keeps weak references to the children made from it; a child keeps
//! its parent alive, so a chain of tokens whose middle links were dropped still passes a
//! cancellation on. `cancel` closes every channel of the subtree, depth first, each
//! before it reads that node's list of children; `child_token` checks the parent's close
//! under the lock that guards the list, so a child made after its parent was cancelled
//! is born cancelled. A child's channel is foreign from birth (its ancestors may be
//! cancelled from anywhere).

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use crate::chan::Closed;
use crate::chan::core::Chan;
use crate::chan::ops::ClosedOp;
use crate::loom::sync::Mutex;
use crate::task::panic::FirstPanic;

/// A signal that processes wait for, in `alt!` (`cancelled(token) => ..`) or as a
/// future ([`cancelled`](Self::cancelled)), and that is cancelled only by a call to
/// [`cancel`](Self::cancel): never because clones were dropped, unlike a channel, which
/// closes when its last sender goes, on success as on failure.
///
/// Clones share one signal. A [child](Self::child_token) is cancelled with its parent
/// (and with the parent's parent, and so on), and can be cancelled alone.
///
/// ```
/// # csp::block_on(async {
/// let (work_tx, work) = csp::bounded::<u32>(16);
/// let stop = csp::CancellationToken::new();
/// let worker = csp::spawn({
///     let stop = stop.clone();
///     async move {
///         let mut done = 0;
///         loop {
///             csp::alt! {
///                 recv(work) -> item => match item {
///                     Ok(_) => done += 1,
///                     Err(_) => return done, // no more work
///                 },
///                 cancelled(stop) => return done,
///             }
///         }
///     }
/// });
/// work_tx.send(1).await.unwrap();
/// stop.cancel();
/// // The worker stops on the token, however many senders are still alive.
/// assert!(worker.await.unwrap() <= 1);
/// # drop(work_tx);
/// # });
/// ```
///
/// Deadlock detection treats a token as it treats a channel: a process waiting on a
/// token that only processes of its runtime can cancel counts as blocked, one that a
/// plain thread or another executor has touched does not. A clone moved to such code
/// and not yet used there is invisible: call [`mark_foreign`](Self::mark_foreign) before
/// moving it. A process waiting on a child token never counts as blocked (its
/// ancestors, wherever they are, may cancel it).
pub struct CancellationToken {
    node: Arc<Node>,
}

struct Node {
    /// Closed when the token is cancelled; never holds a value. Boxed, as a channel a
    /// wait has enrolled in the census must not move (`wait/census.rs`), and a node
    /// moves out of its `Arc` when its last child goes ([`Node`]'s `Drop`).
    chan: Box<Chan<Infallible>>,
    /// The children made from this token; dead ones pruned as new ones are added.
    children: Mutex<Vec<Weak<Node>>>,
    /// Kept alive while this node lives, so that a token whose clones are all gone
    /// still passes its ancestors' cancellation on to its descendants.
    parent: Option<Arc<Node>>,
}

impl Drop for Node {
    fn drop(&mut self) {
        // A chain of ancestors that only this node kept alive goes one by one, not by
        // recursion: a million nested child tokens must not overflow the stack.
        let mut parent = self.parent.take();
        while let Some(node) = parent {
            parent = match Arc::try_unwrap(node) {
                Ok(mut node) => node.parent.take(),
                Err(_) => None,
            };
        }
    }
}

impl Node {
    fn new(chan: Chan<Infallible>, parent: Option<Arc<Node>>) -> Arc<Node> {
        Arc::new(Node {
            chan: Box::new(chan),
            children: Mutex::new(Vec::new()),
            parent,
        })
    }
}

impl CancellationToken {
    /// A token not cancelled.
    ///
    /// ```
    /// let token = csp::CancellationToken::new();
    /// assert!(!token.is_cancelled());
    /// ```
    #[track_caller]
    pub fn new() -> CancellationToken {
        CancellationToken {
            node: Node::new(Chan::new(Some(0)), None),
        }
    }

    /// Cancels the token, its clones and its children (theirs too): every process
    /// waiting on any of them is woken, and when `cancel` returns, all of them are
    /// cancelled. Cancelling a cancelled token wakes nobody. If a waiter's waker panics,
    /// the rest are still woken and the subtree still cancelled; then the first such
    /// panic is resumed (or let go, if this thread is unwinding already, as in the
    /// `Drop` of a [`DropGuard`]).
    ///
    /// ```
    /// let token = csp::CancellationToken::new();
    /// let clone = token.clone();
    /// token.cancel();
    /// assert!(clone.is_cancelled());
    /// ```
    pub fn cancel(&self) {
        // Every node of the subtree, even one cancelled before: a `cancel` racing this
        // one may have closed a node and not yet reached its children, and this call
        // returns only once the whole subtree is cancelled.
        let mut panicked = FirstPanic::default();
        let mut stack = vec![self.node.clone()];
        while let Some(node) = stack.pop() {
            node.chan.note_use();
            // A waiter's waker may panic as the close wakes it: the close has happened
            // by then, so go on with the children, and resume the first panic after
            // (a later one's payload is let go with its own drop's panic caught).
            panicked.catch(|| {
                node.chan.close();
            });
            // After the close: a child made from now on sees it and is born cancelled.
            let children = node.children.lock();
            stack.extend(children.iter().filter_map(Weak::upgrade));
        }
        panicked.resume();
    }

    /// True once the token is cancelled.
    ///
    /// ```
    /// let parent = csp::CancellationToken::new();
    /// let child = parent.child_token();
    /// parent.cancel();
    /// assert!(child.is_cancelled());
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.node.chan.is_closed()
    }

    /// A future that completes once the token is cancelled (at once if it is).
    ///
    /// ```
    /// # csp::block_on(async {
    /// let token = csp::CancellationToken::new();
    /// csp::spawn({
    ///     let token = token.clone();
    ///     async move { token.cancel() }
    /// });
    /// token.cancelled().await;
    /// assert!(token.is_cancelled());
    /// # });
    /// ```
    pub fn cancelled(&self) -> Cancelled<'_> {
        Cancelled {
            inner: Closed::new(ClosedOp::new(&self.node.chan)),
        }
    }

    /// A token cancelled with this one (and with its ancestors), which can also be
    /// cancelled alone, leaving this one as it is. Made from a cancelled token, it is
    /// cancelled already.
    ///
    /// ```
    /// let parent = csp::CancellationToken::new();
    /// let child = parent.child_token();
    /// child.cancel();
    /// assert!(child.is_cancelled() && !parent.is_cancelled());
    /// ```
    #[track_caller]
    pub fn child_token(&self) -> CancellationToken {
        // Foreign from birth: its ancestors may be cancelled from anywhere, so a wait on
        // it never counts as blocked (see the type's docs).
        let child = Node::new(Chan::new_foreign(Some(0)), Some(self.node.clone()));
        let mut children = self.node.children.lock();
        if self.node.chan.is_closed() {
            drop(children);
            // Nobody waits on it yet: nothing to wake, nothing to panic.
            child.chan.close();
        } else {
            if children.len() == children.capacity() {
                // Prune before the list grows: a long-lived parent of many short-lived
                // children keeps a list as long as the children alive, amortized.
                children.retain(|child| child.strong_count() > 0);
            }
            children.push(Arc::downgrade(&child));
        }
        CancellationToken { node: child }
    }

    /// Tells deadlock detection that code outside the runtime may cancel this token (a
    /// clone moved, unused, to a plain thread: a signal handler, say), as
    /// [`Sender::mark_foreign`](crate::Sender::mark_foreign) does for a channel. A clone
    /// made or used outside the runtime marks it by itself; one only moved there does not.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let shutdown = csp::CancellationToken::new();
    /// shutdown.mark_foreign();
    /// let on_signal = shutdown.clone();
    /// std::thread::spawn(move || on_signal.cancel()); // as a signal handler would
    /// shutdown.cancelled().await; // never reported as a deadlock while it waits
    /// # });
    /// ```
    pub fn mark_foreign(&self) {
        self.node.chan.mark_foreign();
    }

    /// A guard that cancels the token when dropped (unless
    /// [`disarm`](DropGuard::disarm)ed): on every way out of a scope, an early return
    /// and a panic included. A waiter's waker that panics as the drop cancels is
    /// resumed as [`cancel`](Self::cancel) resumes it, except while the thread unwinds
    /// already: then that panic is reported by the panic hook and dropped (a second
    /// panic out of a drop would abort the process), and the one under way goes on.
    ///
    /// ```
    /// let token = csp::CancellationToken::new();
    /// {
    ///     let _guard = token.clone().drop_guard();
    /// }
    /// assert!(token.is_cancelled());
    /// ```
    pub fn drop_guard(self) -> DropGuard {
        DropGuard { token: Some(self) }
    }

    /// The channel whose close is the cancellation, for the `cancelled(token)` arm.
    pub(crate) fn chan(&self) -> &Chan<Infallible> {
        &self.node.chan
    }
}

impl Clone for CancellationToken {
    fn clone(&self) -> Self {
        // A clone made outside the runtime that made the token lets code there cancel
        // it, as a clone of a channel end does (`chan/home.rs`).
        self.node.chan.note_use();
        CancellationToken {
            node: self.node.clone(),
        }
    }
}

impl Default for CancellationToken {
    #[track_caller]
    fn default() -> Self {
        CancellationToken::new()
    }
}

impl fmt::Debug for CancellationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancellationToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// The future of [`CancellationToken::cancelled`]: completes once the token is
/// cancelled. Dropped before then, it leaves nothing behind.
#[must_use = "futures do nothing unless polled"]
pub struct Cancelled<'a> {
    inner: Closed<'a, Infallible>,
}

impl Future for Cancelled<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: `inner` is structurally pinned: never moved out of `self`.
        unsafe { self.map_unchecked_mut(|this| &mut this.inner) }.poll(cx)
    }
}

impl fmt::Debug for Cancelled<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cancelled").finish_non_exhaustive()
    }
}

/// Cancels its token when dropped: [`CancellationToken::drop_guard`].
#[must_use = "dropped at once, the guard cancels its token at once"]
pub struct DropGuard {
    token: Option<CancellationToken>,
}

impl DropGuard {
    /// Gives the token back without cancelling it.
    ///
    /// ```
    /// let token = csp::CancellationToken::new();
    /// let guard = token.clone().drop_guard();
    /// let _token = guard.disarm();
    /// assert!(!token.is_cancelled());
    /// ```
    pub fn disarm(mut self) -> CancellationToken {
        self.token
            .take()
            .expect("a DropGuard holds its token until dropped")
    }
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if let Some(token) = &self.token {
            token.cancel();
        }
    }
}

impl fmt::Debug for DropGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DropGuard")
            .field("token", &self.token)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_list_of_children_stays_as_long_as_the_children_alive() {
        let parent = CancellationToken::new();
        let kept: Vec<_> = (0..10).map(|_| parent.child_token()).collect();
        for _ in 0..20_000 {
            drop(parent.child_token());
        }
        let len = parent.node.children.lock().len();
        assert!(len <= 2 * kept.len() + 1, "{len} children listed, 10 alive");
        parent.cancel();
        assert!(kept.iter().all(CancellationToken::is_cancelled));
    }

    #[test]
    fn a_node_moved_out_of_its_arc_leaves_its_channel_where_it_was() {
        // A wait enrols the channel in the census by its address (`wait/census.rs`);
        // `Node`'s drop moves a parent out of its `Arc`.
        let token = CancellationToken::new();
        let waker = std::task::Waker::noop();
        let polled = std::pin::pin!(token.cancelled()).poll(&mut Context::from_waker(waker));
        assert!(polled.is_pending());
        let at: *const Chan<Infallible> = token.chan();
        let node = Arc::try_unwrap(token.node)
            .ok()
            .expect("the only reference");
        assert_eq!(
            std::ptr::from_ref::<Chan<Infallible>>(&node.chan),
            at,
            "the channel moved with its node, away from where the census points"
        );
    }

    #[test]
    fn a_long_chain_of_children_drops_without_recursion() {
        let root = CancellationToken::new();
        let mut token = root.clone();
        // Deep enough to overflow a test thread's 2 MiB stack if dropped by recursion.
        for _ in 0..100_000 {
            token = token.child_token();
        }
        let leaf = token.clone();
        root.cancel();
        assert!(leaf.is_cancelled());
        drop((root, token, leaf));
    }
}
