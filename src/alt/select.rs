//! `Select`: a choice over operations known only at run time (API.md).

use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::alt::choice::{ArmSet, Choice, Deadline, Expiry, Plan, Timeout};
use crate::chan::core::Chan;
use crate::chan::ops::{RecvOp, SendOp};
use crate::chan::{Receiver, RecvError, SendError, Sender};
use crate::wait::operation::Operation;

/// What kind of operation an arm is, and on which channel, so `Selected` can check
/// that it is read with the right end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Recv,
    Send,
}

/// An arm of a `Select`: an operation plus what `Selected` needs to read it back.
trait SelectArm: Operation {
    fn kind(&self) -> Kind;
    fn channel(&self) -> *const ();
    /// Drops a fired arm's unread outcome.
    fn discard(&self);
    /// True once the arm can never fire again (a send whose value is gone). Called by
    /// the owner with no choice in progress.
    fn is_spent(&self) -> bool;
}

impl<T> SelectArm for RecvOp<T, &Chan<T>> {
    fn kind(&self) -> Kind {
        Kind::Recv
    }

    fn channel(&self) -> *const () {
        std::ptr::from_ref(self.chan()).cast()
    }

    fn discard(&self) {
        drop(self.take_result());
    }

    fn is_spent(&self) -> bool {
        false
    }
}

impl<T> SelectArm for SendOp<'_, T> {
    fn kind(&self) -> Kind {
        Kind::Send
    }

    fn channel(&self) -> *const () {
        std::ptr::from_ref(self.chan()).cast()
    }

    fn discard(&self) {
        drop(self.take_result());
    }

    fn is_spent(&self) -> bool {
        // SAFETY: no choice is in progress (the caller's contract): the entry is not
        // linked, and its slot is the owner's.
        !unsafe { self.has_value() }
    }
}

type Arm<'a> = Pin<Box<dyn SelectArm + Send + 'a>>;

/// The arms of a `Select`, by index; `None` for removed or spent ones.
#[derive(Default)]
struct Arms<'a> {
    arms: Vec<Option<Arm<'a>>>,
    /// False from the start of a select until its outcome is settled (its `Selected`
    /// dropped, or nothing fired). Found false at the next start, a select was cut
    /// short (a leaked `Selected` or `SelectFuture`, a panicking waker): [`tidy`]
    /// (Arms::tidy) then drops the unread outcomes and spent arms it left.
    clean: bool,
}

impl ArmSet for Arms<'_> {
    fn count(&self) -> usize {
        self.arms.len()
    }

    fn arm(&self, i: usize) -> Option<&dyn Operation> {
        let arm: &dyn SelectArm = self.arms.get(i)?.as_ref()?.as_ref().get_ref();
        Some(arm)
    }
}

/// What a `Selected` needs of the arms, with their lifetime erased (so `Selected` has
/// one lifetime, the borrow of its `Select`).
trait FiredArms {
    fn fired(&self, i: usize, kind: Kind, channel: *const (), what: &str) -> &dyn SelectArm;
    /// The select that fired arm `i` is over: drops its unread outcome, and the arm
    /// itself if it is spent.
    fn settle(&mut self, i: usize);
}

impl FiredArms for Arms<'_> {
    fn fired(&self, i: usize, kind: Kind, channel: *const (), what: &str) -> &dyn SelectArm {
        Arms::fired(self, i, kind, channel, what)
    }

    fn settle(&mut self, i: usize) {
        if let Some(slot) = self.arms.get_mut(i) {
            Arms::settle_arm(slot);
        }
        self.clean = true;
    }
}

impl<'a> Arms<'a> {
    /// Drops arm `slot`'s unread outcome, and the arm if it is spent (a fired send).
    fn settle_arm(slot: &mut Option<Arm<'a>>) {
        if let Some(arm) = slot {
            arm.discard();
            if arm.is_spent() {
                *slot = None;
            }
        }
    }

    /// Settles every arm: after a select that was cut short.
    #[cold]
    fn tidy(&mut self) {
        self.arms.iter_mut().for_each(Arms::settle_arm);
        self.clean = true;
    }

    /// Arm `i`, checked to be of `kind` on the channel at `channel`.
    fn fired(&self, i: usize, kind: Kind, channel: *const (), what: &str) -> &dyn SelectArm {
        assert!(
            i != Select::TIMEOUT,
            "csp: Selected::{what} called on a timeout (index Select::TIMEOUT), which has no \
             outcome; match on Selected::index() first"
        );
        let arm = self.arms[i]
            .as_ref()
            .expect("csp: the selected arm is still there")
            .as_ref()
            .get_ref();
        assert!(
            arm.kind() == kind && arm.channel() == channel,
            "csp: Selected::{what} was given an end of another channel (or of the wrong \
             kind) than the selected arm {i}'s; match on Selected::index() first"
        );
        arm
    }
}

/// A choice among channel operations assembled at run time: the dynamic form of
/// `alt!`. Exactly one arm fires per [`select`](Self::select); a receive arm that did
/// not fire takes nothing, a send arm that did not fire delivers nothing and keeps its
/// value for the next `select` (until [`remove`](Self::remove) or the drop of the
/// `Select`). A fired send arm is spent.
///
/// ```
/// # csp::block_on(async {
/// let (tx1, rx1) = csp::bounded::<u32>(1);
/// let (tx2, rx2) = csp::bounded::<&str>(1);
/// tx2.try_send("two").unwrap();
///
/// let mut sel = csp::Select::new();
/// let a = sel.recv(&rx1);
/// let b = sel.recv(&rx2);
/// let op = sel.select().await;
/// match op.index() {
///     i if i == a => println!("one: {:?}", op.recv(&rx1)),
///     i if i == b => assert_eq!(op.recv(&rx2), Ok("two")),
///     _ => unreachable!(),
/// }
/// # drop(tx1);
/// # });
/// ```
pub struct Select<'a> {
    arms: Arms<'a>,
    biased: bool,
    plan: Plan,
    /// The claim flag of a waiting select, made by the first `select`. It lives here,
    /// boxed, rather than in the `SelectFuture`: the arms' entries point at it, and the
    /// `Select` owns the arms, so only the `Select`'s drop (which always runs before the
    /// arms go) can be trusted to unlink them; a `SelectFuture` may be leaked.
    choice: Option<Box<Choice>>,
    timeout: Option<Expiry>,
}

impl<'a> Select<'a> {
    /// The index [`Selected::index`] has when a timeout fired.
    pub const TIMEOUT: usize = usize::MAX;

    /// A fair choice: among the arms ready at once, each is equally likely to fire.
    ///
    /// ```
    /// let sel = csp::Select::new();
    /// # drop(sel);
    /// ```
    pub fn new() -> Select<'a> {
        Select {
            arms: Arms {
                arms: Vec::new(),
                clean: true,
            },
            biased: false,
            plan: Plan::default(),
            choice: None,
            timeout: None,
        }
    }

    /// A biased choice: the first ready arm in the order they were added fires, as
    /// `prialt!`.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (tx, rx) = csp::bounded::<u8>(2);
    /// tx.try_send(1).unwrap();
    /// let mut sel = csp::Select::new_biased();
    /// let first = sel.recv(&rx);
    /// let _second = sel.send(&tx, 2);
    /// assert_eq!(sel.select().await.index(), first); // both ready: the first wins
    /// # });
    /// ```
    pub fn new_biased() -> Select<'a> {
        let mut select = Select::new();
        select.biased = true;
        select
    }

    /// Adds a receive arm; returns its index.
    ///
    /// ```
    /// let (_tx, rx) = csp::channel::<u8>();
    /// let mut sel = csp::Select::new();
    /// assert_eq!(sel.recv(&rx), 0);
    /// ```
    pub fn recv<T: Send>(&mut self, rx: &'a Receiver<T>) -> usize {
        self.push(Box::pin(RecvOp::new(rx.chan())))
    }

    /// Adds a send arm carrying `value`; returns its index.
    ///
    /// ```
    /// let (tx, _rx) = csp::channel::<u8>();
    /// let mut sel = csp::Select::new();
    /// assert_eq!(sel.send(&tx, 7), 0);
    /// ```
    pub fn send<T: Send>(&mut self, tx: &'a Sender<T>, value: T) -> usize {
        self.push(Box::pin(SendOp::new(tx.chan(), value)))
    }

    fn push(&mut self, arm: Arm<'a>) -> usize {
        self.arms.arms.push(Some(arm));
        self.arms.arms.len() - 1
    }

    /// Puts right what a select cut short left behind, before the arms are used or
    /// changed: a leaked `SelectFuture`'s wait is cancelled (an arm a counterpart had
    /// fired is undone as a dropped select's would be), and a leaked `Selected`'s unread
    /// outcome dropped.
    fn settle(&mut self) {
        if self.cancel_leaked_wait() {
            self.arms.clean = false;
        }
        if !self.arms.clean {
            self.arms.tidy();
        }
    }

    /// Cancels the wait a leaked `SelectFuture` left, if any (true then); an arm that had
    /// fired is undone, as a dropped select's would be.
    fn cancel_leaked_wait(&mut self) -> bool {
        let Some(choice) = self.choice.as_mut().filter(|choice| choice.is_waiting()) else {
            return false;
        };
        let _ = choice.cancel(&self.arms, &self.plan);
        true
    }

    /// Removes arm `i` (dropping a send arm's unsent value); its index is not reused.
    ///
    /// # Panics
    /// If there is no arm `i`.
    ///
    /// ```
    /// let (tx, _rx) = csp::channel::<u8>();
    /// let mut sel = csp::Select::new();
    /// let i = sel.send(&tx, 1);
    /// sel.remove(i);
    /// assert!(sel.try_select().is_none());
    /// ```
    pub fn remove(&mut self, i: usize) {
        self.settle();
        let arm = self
            .arms
            .arms
            .get_mut(i)
            .unwrap_or_else(|| panic!("csp: Select::remove({i}): there is no arm {i}"));
        *arm = None;
    }

    /// A deadline for each [`select`](Self::select), measured from its start: if no arm
    /// fires before it passes, the select completes with index [`Select::TIMEOUT`]
    /// (and no arm takes effect). It applies to every later `select` of this `Select`;
    /// [`try_select`](Self::try_select) never waits, so ignores it. With a timeout, a
    /// select with no arm left waits for the deadline instead of panicking.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (_tx, rx) = csp::channel::<u8>();
    /// let mut sel = csp::Select::new();
    /// sel.recv(&rx);
    /// sel.timeout(std::time::Duration::from_millis(5));
    /// assert_eq!(sel.select().await.index(), csp::Select::TIMEOUT);
    /// # });
    /// ```
    pub fn timeout(&mut self, d: Duration) {
        self.timeout = Some(Expiry::After(d));
    }

    /// As [`timeout`](Self::timeout), with an instant rather than a duration: each later
    /// [`select`](Self::select) completes with index [`Select::TIMEOUT`] once `deadline`
    /// has passed (at once, if it already has and no arm is ready). It replaces a
    /// timeout set before, as `timeout` replaces a deadline.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use std::time::{Duration, Instant};
    /// let (_tx, rx) = csp::channel::<u8>();
    /// let mut sel = csp::Select::new();
    /// sel.recv(&rx);
    /// sel.deadline(Instant::now() + Duration::from_millis(5));
    /// assert_eq!(sel.select().await.index(), csp::Select::TIMEOUT);
    /// # });
    /// ```
    pub fn deadline(&mut self, deadline: Instant) {
        self.timeout = Some(Expiry::At(deadline));
    }

    /// Fires an arm that is ready now, without waiting; `None` if none is.
    ///
    /// Linearizable: `None` means there was one moment at which no arm could complete,
    /// however other threads changed the channels meanwhile; an arm that fires could
    /// complete at the moment it fired (see [Choosing without
    /// waiting](crate#choosing-without-waiting)). A `try_select` that finds an arm ready
    /// costs what a waiting choice that finds one ready does; one that finds none makes
    /// one more pass with all its channels locked at once.
    ///
    /// ```
    /// let (tx, rx) = csp::bounded::<u8>(1);
    /// let mut sel = csp::Select::new();
    /// let i = sel.recv(&rx);
    /// assert!(sel.try_select().is_none());
    /// tx.try_send(4).unwrap();
    /// let op = sel.try_select().unwrap();
    /// assert_eq!((op.index(), op.recv(&rx)), (i, Ok(4)));
    /// ```
    pub fn try_select(&mut self) -> Option<Selected<'_>> {
        self.settle();
        if !self.plan.prepare(&self.arms, self.biased) {
            return None;
        }
        // Settled again by the `Selected`'s drop, or below if nothing fires.
        self.arms.clean = false;
        let Some(fired) = Choice::new().try_now(&self.arms, &mut self.plan) else {
            self.arms.clean = true;
            return None;
        };
        Some(Selected::new(&mut self.arms, fired))
    }

    /// Waits until one arm fires.
    ///
    /// # Panics
    /// When polled with no arm at all (every arm removed or spent): it could never
    /// complete.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (tx, rx) = csp::channel::<u8>();
    /// csp::spawn(async move { tx.send(9).await });
    /// let mut sel = csp::Select::new();
    /// let i = sel.recv(&rx);
    /// let op = sel.select().await;
    /// assert_eq!(op.index(), i);
    /// assert_eq!(op.recv(&rx), Ok(9));
    /// # });
    /// ```
    pub fn select(&mut self) -> SelectFuture<'_, 'a> {
        self.settle();
        self.choice.get_or_insert_with(|| Box::new(Choice::new()));
        // Settled again by the `Selected`'s drop.
        self.arms.clean = false;
        SelectFuture {
            deadline: Deadline::new(self.timeout),
            select: Some(self),
            unwound: false,
            _pinned: PhantomPinned,
        }
    }
}

impl Default for Select<'_> {
    fn default() -> Self {
        Select::new()
    }
}

impl Drop for Select<'_> {
    fn drop(&mut self) {
        // A leaked `SelectFuture` left its wait to us: unlink the entries before the
        // arms and the flag go.
        self.cancel_leaked_wait();
    }
}

impl std::fmt::Debug for Select<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Select")
            .field(
                "arms",
                &self.arms.arms.iter().filter(|a| a.is_some()).count(),
            )
            .field("biased", &self.biased)
            .finish()
    }
}

/// The future of [`Select::select`].
///
/// Leaking it (`mem::forget`) is safe: the wait it started belongs to its `Select`,
/// which cancels it on its next use or its drop.
#[must_use = "futures do nothing unless polled"]
pub struct SelectFuture<'s, 'a> {
    /// `None` once it completed.
    select: Option<&'s mut Select<'a>>,
    /// A poll is under way, or one unwound (a waker's panic, after an arm had fired):
    /// the choice is not to be polled again.
    unwound: bool,
    /// The `Select`'s timeout.
    deadline: Deadline,
    /// The deadline's wheel entry lives inside it.
    _pinned: PhantomPinned,
}

impl<'s, 'a> Future for SelectFuture<'s, 'a> {
    type Output = Selected<'s>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Selected<'s>> {
        // SAFETY: nothing is moved out of the pinned future: `deadline` stays in place,
        // and `select` is a reference, taken only when the choice is done.
        let this = unsafe { self.get_unchecked_mut() };
        // A poll that unwound may have fired an arm whose outcome cannot be undone (a
        // send's value delivered): polling the choice again would count that arm as
        // still to fire. The `Select`'s next `select` or `try_select` settles it.
        assert!(
            !this.unwound,
            "csp: a SelectFuture was polled again after a panic unwound out of its poll; \
             call select() again for a new choice"
        );
        this.unwound = true;
        let polled = this.poll_choice(cx);
        this.unwound = false;
        polled
    }
}

impl<'s> SelectFuture<'s, '_> {
    /// [`poll`](Future::poll)'s work, once it is known not to follow a panic.
    fn poll_choice(&mut self, cx: &mut Context<'_>) -> Poll<Selected<'s>> {
        let this = self;
        let Select {
            arms,
            biased,
            plan,
            choice,
            ..
        } = &mut **this
            .select
            .as_mut()
            .expect("csp: a SelectFuture was polled after it completed");
        let choice = choice.as_mut().expect("csp: `select` makes the choice");
        let fired = if !choice.is_waiting() && !plan.prepare(arms, *biased) {
            assert!(
                this.deadline.is_set(),
                "csp: Select::select() with no arm to wait on (every arm was removed or \
                 spent) and no timeout; it could never complete"
            );
            // SAFETY: the deadline is pinned inside this future.
            std::task::ready!(unsafe { this.deadline.poll(cx) });
            Select::TIMEOUT
        } else {
            // SAFETY: the choice is boxed (it stays put) and owned by the `Select`,
            // whose drop cancels it should this future be leaked; the plan and the
            // arms it names stay unchanged until it completes or is cancelled: the
            // `Select` methods that remove or reuse arms settle (cancel) a waiting
            // choice first, and `recv`/`send` only add boxed arms outside the plan.
            std::task::ready!(unsafe { choice.poll_until(arms, plan, &mut this.deadline, cx) })
                .unwrap_or(Select::TIMEOUT)
        };
        let select = this.select.take().expect("checked above");
        Poll::Ready(Selected::new(&mut select.arms, fired))
    }
}

impl Drop for SelectFuture<'_, '_> {
    fn drop(&mut self) {
        if let Some(select) = self.select.as_mut()
            && let Some(choice) = select.choice.as_mut()
        {
            // An arm that fired before the cancel is undone (`abandon`); the next
            // select settles what that left (a spent send).
            let _ = choice.cancel(&select.arms, &select.plan);
        }
    }
}

impl std::fmt::Debug for SelectFuture<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waiting = self
            .select
            .as_ref()
            .and_then(|select| select.choice.as_ref())
            .is_some_and(|choice| choice.is_waiting());
        f.debug_struct("SelectFuture")
            .field("waiting", &waiting)
            .finish()
    }
}

/// The arm a [`Select`] fired; read its outcome with [`recv`](Self::recv) or
/// [`send`](Self::send), passing the same channel end the arm was made with. Dropped
/// unread, a received value is dropped.
pub struct Selected<'s> {
    arms: &'s mut (dyn FiredArms + Send + 's),
    index: usize,
}

impl<'s> Selected<'s> {
    fn new(arms: &'s mut (dyn FiredArms + Send + 's), index: usize) -> Self {
        Selected { arms, index }
    }

    /// The index of the fired arm (as returned by `Select::recv`/`send`).
    ///
    /// ```
    /// let (tx, rx) = csp::bounded::<u8>(1);
    /// tx.try_send(1).unwrap();
    /// let mut sel = csp::Select::new();
    /// let i = sel.recv(&rx);
    /// assert_eq!(sel.try_select().unwrap().index(), i);
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }

    /// The outcome of the fired receive arm on `rx`'s channel.
    ///
    /// # Panics
    /// If the fired arm is not a receive on `rx`'s channel.
    ///
    /// ```
    /// let (tx, rx) = csp::bounded::<u8>(1);
    /// tx.try_send(5).unwrap();
    /// let mut sel = csp::Select::new();
    /// sel.recv(&rx);
    /// assert_eq!(sel.try_select().unwrap().recv(&rx), Ok(5));
    /// ```
    pub fn recv<T>(self, rx: &Receiver<T>) -> Result<T, RecvError> {
        let channel = std::ptr::from_ref(rx.chan()).cast();
        let arm = self.arms.fired(self.index, Kind::Recv, channel, "recv");
        // SAFETY: a receive arm on this `Chan<T>` was made by `Select::recv::<T>` as a
        // `RecvOp<T, &Chan<T>>` (the channel's address fixes its `T`).
        let op = unsafe { &*std::ptr::from_ref(arm).cast::<RecvOp<T, &Chan<T>>>() };
        op.take_result()
            .expect("csp: a fired receive arm has an outcome")
    }

    /// The outcome of the fired send arm on `tx`'s channel (the arm is spent).
    ///
    /// # Panics
    /// If the fired arm is not a send on `tx`'s channel.
    ///
    /// ```
    /// let (tx, rx) = csp::bounded::<u8>(1);
    /// let mut sel = csp::Select::new();
    /// sel.send(&tx, 3);
    /// assert_eq!(sel.try_select().unwrap().send(&tx), Ok(()));
    /// assert_eq!(rx.try_recv(), Ok(3));
    /// ```
    pub fn send<T>(self, tx: &Sender<T>) -> Result<(), SendError<T>> {
        let channel = std::ptr::from_ref(tx.chan()).cast();
        let arm = self.arms.fired(self.index, Kind::Send, channel, "send");
        // SAFETY: a send arm on this `Chan<T>` was made by `Select::send::<T>` as a
        // `SendOp<T>` (the channel's address fixes its `T`).
        let op = unsafe { &*std::ptr::from_ref(arm).cast::<SendOp<'_, T>>() };
        op.take_result()
            .expect("csp: a fired send arm has an outcome")
    }
}

impl Drop for Selected<'_> {
    fn drop(&mut self) {
        // Unread, a received value is dropped (it was received), a sent one is
        // delivered already; a fired send arm is spent. (A `Selected` leaked instead
        // leaves that to the next select.)
        self.arms.settle(self.index);
    }
}

impl std::fmt::Debug for Selected<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selected")
            .field("index", &self.index)
            .finish()
    }
}
