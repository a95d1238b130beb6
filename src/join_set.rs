//! [`JoinSet`]: a set of processes owned by a value.
//!
//! Each process's `JoinHandle` is kept in a slot with a waker of its own, which, when
//! the process completes, puts the slot's index on the set's list of notified slots and
//! wakes whoever awaits the set. So `join_next` polls only the handles that were
//! notified: O(1) per completion however many processes the set holds. A new slot
//! starts notified, so that its handle is polled once, to register its waker.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
// `std`'s `Arc`: the slot wakers are `std::task::Wake`rs.
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use crate::loom::sync::Mutex;
use crate::loom::sync::atomic::{AtomicBool, Ordering};
use crate::runtime::{Handle, groups};
use crate::task::JoinError;
use crate::task::panic::{FirstPanic, discard, drop_each};
use crate::wait::JoinHandle;
use crate::wait::foreign::ForeignWaker;
use crate::wait::join::{internal_clone, wake_same};
use crate::wait::record::record_join_set;

/// A set of processes owned by a value, the role of tokio's `JoinSet`: spawn into it,
/// await whichever finishes next, abort them all. Dropping the set aborts every process
/// still in it (their futures are dropped at their next chance), so no process outlives
/// the scope that owns the set unless it is [detached](Self::detach_all).
///
/// Its processes show as a group: their [`ProcessInfo::group`](crate::ProcessInfo) is
/// the set's [`id`](Self::id), and the wait graph draws them in a box labelled with the
/// place the set was made.
///
/// ```
/// # csp::block_on(async {
/// let mut set = csp::JoinSet::new();
/// for i in 0..4u64 {
///     set.spawn(async move { i * i });
/// }
/// let mut squares = Vec::new();
/// while let Some(done) = set.join_next().await {
///     squares.push(done.unwrap());
/// }
/// squares.sort();
/// assert_eq!(squares, [0, 1, 4, 9]);
/// # });
/// ```
pub struct JoinSet<T> {
    slots: Vec<Option<Slot<T>>>,
    /// Free slot indices.
    free: Vec<usize>,
    /// How many slots hold a process.
    len: usize,
    notified: Arc<Notified>,
    /// The set's group id (`runtime/groups.rs`).
    group: u64,
    /// The runtime every process spawned into the set belongs to: `Some` while all
    /// did, for deadlock detection (a wait on the set is one only that runtime ends).
    runtime: Runtimes,
}

/// The runtimes of the processes spawned into a set so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runtimes {
    None,
    One(u64),
    Several,
}

struct Slot<T> {
    handle: JoinHandle<T>,
    waker: Arc<SlotWaker>,
}

/// What the slots' wakers share with the set.
struct Notified {
    state: Mutex<NotifiedState>,
}

#[derive(Default)]
struct NotifiedState {
    /// Indices of slots whose process may have completed, in the order they were woken:
    /// taken from the front, so that the set hands out processes in the order they end.
    slots: VecDeque<usize>,
    /// Whoever awaits the set.
    waiter: Option<ForeignWaker>,
}

impl Notified {
    /// Only queue pushes and pops and waker swaps run under the lock.
    fn lock(&self) -> impl std::ops::DerefMut<Target = NotifiedState> + '_ {
        self.state.lock()
    }
}

/// The waker of one slot's handle.
struct SlotWaker {
    index: usize,
    /// On the notified list already: a second wake adds nothing.
    queued: AtomicBool,
    notified: Arc<Notified>,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Pairs with the set's store of false before it polls the handle, so a wake
        // after that poll started queues the slot again.
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let waiter = {
            let mut state = self.notified.lock();
            state.slots.push_back(self.index);
            state.waiter.take()
        };
        // Outside the lock: the waker is the awaiting side's code.
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }
}

impl<T> JoinSet<T> {
    /// An empty set.
    ///
    /// ```
    /// let set = csp::JoinSet::<()>::new();
    /// assert!(set.is_empty());
    /// ```
    #[track_caller]
    pub fn new() -> JoinSet<T> {
        JoinSet {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
            notified: Arc::new(Notified {
                state: Mutex::new(NotifiedState::default()),
            }),
            group: groups::new_group(Location::caller()),
            runtime: Runtimes::None,
        }
    }

    /// The set's id, as [`ProcessInfo::group`](crate::ProcessInfo) names it.
    ///
    /// ```
    /// let rt = csp::Runtime::new().unwrap();
    /// let mut set = csp::JoinSet::new();
    /// let id = set.spawn_on(std::future::pending::<()>(), &rt.handle());
    /// let info = rt.processes().into_iter().find(|p| p.id == id).unwrap();
    /// assert_eq!(info.group, Some(set.id()));
    /// ```
    pub fn id(&self) -> u64 {
        self.group
    }

    /// How many processes the set holds (running, or ended and not yet joined).
    ///
    /// ```
    /// let mut set = csp::JoinSet::new();
    /// set.spawn(async {});
    /// assert_eq!(set.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the set holds no process.
    ///
    /// ```
    /// assert!(csp::JoinSet::<u8>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Spawns `future` into the set, as [`csp::spawn`](crate::spawn) would (on the
    /// current runtime, else the default one); returns its process id.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let mut set = csp::JoinSet::new();
    /// let id = set.spawn(async { 7 });
    /// assert!(id > 0);
    /// assert_eq!(set.join_next().await.unwrap().unwrap(), 7);
    /// # });
    /// ```
    #[track_caller]
    pub fn spawn<F>(&mut self, future: F) -> u64
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        self.insert(crate::spawn(future))
    }

    /// As [`spawn`](Self::spawn), on the runtime of `handle`.
    ///
    /// ```
    /// let rt = csp::Runtime::new().unwrap();
    /// let mut set = csp::JoinSet::new();
    /// set.spawn_on(async { 1 }, &rt.handle());
    /// assert_eq!(rt.block_on(set.join_next()).unwrap().unwrap(), 1);
    /// ```
    #[track_caller]
    pub fn spawn_on<F>(&mut self, future: F, handle: &Handle) -> u64
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        self.insert(handle.spawn(future))
    }

    fn insert(&mut self, handle: JoinHandle<T>) -> u64 {
        let id = handle.id();
        self.runtime = match self.runtime {
            Runtimes::None => Runtimes::One(handle.runtime_id()),
            Runtimes::One(runtime) if runtime == handle.runtime_id() => Runtimes::One(runtime),
            _ => Runtimes::Several,
        };
        groups::join(self.group, id);
        let index = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        let waker = Arc::new(SlotWaker {
            index,
            queued: AtomicBool::new(false),
            notified: self.notified.clone(),
        });
        self.slots[index] = Some(Slot {
            handle,
            waker: waker.clone(),
        });
        self.len += 1;
        // Notified from the start: the next poll of the set polls its handle,
        // registering its waker. Until then the process's end wakes nobody, so a waiter
        // already registered (a hand-written future that polled the set, then spawned
        // into it, and waits for that process) is woken now to make that poll.
        Wake::wake_by_ref(&waker);
        id
    }

    /// Waits for the next process of the set to end and removes it: its output, or how
    /// it failed; `None` if the set is empty. Cancel-safe: dropping the future before it
    /// completes takes nothing out of the set.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let mut set = csp::JoinSet::new();
    /// set.spawn(async { panic!("boom") });
    /// let err = set.join_next().await.unwrap().unwrap_err();
    /// assert!(err.is_panic());
    /// assert!(set.join_next().await.is_none());
    /// # });
    /// ```
    pub fn join_next(&mut self) -> JoinNext<'_, T> {
        JoinNext { set: self }
    }

    /// As [`join_next`](Self::join_next), with the process id beside the result.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let mut set = csp::JoinSet::new();
    /// let id = set.spawn(async { "done" });
    /// let (ended, result) = set.join_next_with_id().await.unwrap();
    /// assert_eq!((ended, result.unwrap()), (id, "done"));
    /// # });
    /// ```
    pub async fn join_next_with_id(&mut self) -> Option<(u64, Result<T, JoinError>)> {
        std::future::poll_fn(|cx| self.poll_join_next_with_id(cx)).await
    }

    /// The next process that has ended, if one has, without waiting.
    ///
    /// ```
    /// let mut set = csp::JoinSet::<()>::new();
    /// assert!(set.try_join_next().is_none());
    /// ```
    pub fn try_join_next(&mut self) -> Option<Result<T, JoinError>> {
        match self.next_ended(None) {
            Poll::Ready(done) => done.map(|(_, result)| result),
            Poll::Pending => None,
        }
    }

    /// Polls for the next process to end: `join_next` for a hand-written future.
    /// Registers `cx`'s waker if none has ended.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let mut set = csp::JoinSet::new();
    /// set.spawn(async { 3 });
    /// let next = std::future::poll_fn(|cx| set.poll_join_next(cx)).await;
    /// assert_eq!(next.unwrap().unwrap(), 3);
    /// # });
    /// ```
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        self.poll_join_next_with_id(cx)
            .map(|done| done.map(|(_, result)| result))
    }

    fn poll_join_next_with_id(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<(u64, Result<T, JoinError>)>> {
        self.next_ended(Some(cx.waker()))
    }

    /// The next process that has ended; if none has, `Pending`, and `waiter` (if any)
    /// is woken when one does.
    fn next_ended(&mut self, waiter: Option<&Waker>) -> Poll<Option<(u64, Result<T, JoinError>)>> {
        if self.len == 0 {
            return Poll::Ready(None);
        }
        loop {
            let popped = self.notified.lock().slots.pop_front();
            let Some(index) = popped else {
                if let Some(waiter) = waiter {
                    self.wait(waiter);
                }
                return Poll::Pending;
            };
            // A stale index (its slot emptied, or refilled since) polls at most a
            // handle that is not ready, which registers its waker again: harmless.
            let Some(slot) = self.slots.get_mut(index).and_then(Option::as_mut) else {
                continue;
            };
            // Before the poll: a completion during it queues the slot again. Release:
            // if the poll registers this waker, the completer that takes it through the
            // process's state word sees this store before it swaps the flag.
            slot.waker.queued.store(false, Ordering::Release);
            let waker = Waker::from(slot.waker.clone());
            let polled = Pin::new(&mut slot.handle).poll(&mut Context::from_waker(&waker));
            if let Poll::Ready(result) = polled {
                let slot = self.slots[index].take().expect("the slot just polled");
                let id = slot.handle.id();
                groups::leave(id);
                self.free.push(index);
                self.len -= 1;
                if self.len == 0 {
                    // Empty: the runtimes of processes gone no longer bar deadlock
                    // detection from the set's next processes.
                    self.runtime = Runtimes::None;
                }
                return Poll::Ready(Some((id, result)));
            }
        }
    }

    /// Registers `waiter` to be woken when a process of the set ends, and records the
    /// wait. It is kept as csp's own reference to a process's or `block_on` future's
    /// waker, and recorded, so that deadlock detection sees a wait on the set's
    /// processes, not one something outside csp may end. A foreign waker's clone and
    /// drop run its code: outside the lock; a slot queued meanwhile wakes the waiter.
    fn wait(&mut self, waiter: &Waker) {
        let same = {
            let state = self.notified.lock();
            state.waiter.as_ref().is_some_and(|w| wake_same(w, waiter))
        };
        if !same {
            let new = ForeignWaker::new(internal_clone(waiter));
            let (old, queued) = {
                let mut state = self.notified.lock();
                (state.waiter.replace(new), !state.slots.is_empty())
            };
            drop(old);
            if queued {
                // A slot queued while the new waiter was not yet there took the old one
                // (or none): wake this one, once, to look.
                waiter.wake_by_ref();
            }
        }
        let runtime = match self.runtime {
            Runtimes::One(runtime) => Some(runtime),
            Runtimes::None | Runtimes::Several => None,
        };
        record_join_set(waiter, self.group, runtime);
    }

    /// Aborts every process in the set (as [`JoinHandle::abort`] does); they stay in
    /// the set until joined, each ending with a cancellation unless it had completed.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let mut set = csp::JoinSet::new();
    /// set.spawn(std::future::pending::<()>());
    /// set.abort_all();
    /// assert!(set.join_next().await.unwrap().unwrap_err().is_cancelled());
    /// # });
    /// ```
    pub fn abort_all(&mut self) {
        for slot in self.slots.iter().flatten() {
            slot.handle.abort();
        }
    }

    /// Aborts the process `id` if it is in the set; true if it is.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let mut set = csp::JoinSet::new();
    /// let id = set.spawn(std::future::pending::<()>());
    /// assert!(set.abort(id));
    /// assert!(set.join_next().await.unwrap().unwrap_err().is_cancelled());
    /// # });
    /// ```
    pub fn abort(&mut self, id: u64) -> bool {
        match self
            .slots
            .iter()
            .flatten()
            .find(|slot| slot.handle.id() == id)
        {
            Some(slot) => {
                slot.handle.abort();
                true
            }
            None => false,
        }
    }

    /// Removes every process from the set without aborting it: each runs on, detached.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (tx, rx) = csp::channel();
    /// let mut set = csp::JoinSet::new();
    /// set.spawn(async move { tx.send(1).await.unwrap() });
    /// set.detach_all();
    /// drop(set);
    /// assert_eq!(rx.recv().await, Ok(1));
    /// # });
    /// ```
    pub fn detach_all(&mut self) {
        for slot in self.slots.drain(..).flatten() {
            groups::leave(slot.handle.id());
        }
        self.free.clear();
        self.len = 0;
        self.runtime = Runtimes::None;
        // A list of its own: the detached processes' slot wakers still hold the old one,
        // and may yet queue their stale indices there.
        self.notified = Arc::new(Notified {
            state: Mutex::new(NotifiedState::default()),
        });
    }

    /// Aborts every process and waits until each has ended (its future dropped),
    /// emptying the set. What they left (outputs of those that had ended) is dropped;
    /// should such a drop panic, the first panic is resumed once every process has
    /// ended.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let mut set = csp::JoinSet::new();
    /// set.spawn(std::future::pending::<()>());
    /// set.shutdown().await;
    /// assert!(set.is_empty());
    /// # });
    /// ```
    pub async fn shutdown(&mut self) {
        self.abort_and_end_all().await.resume();
    }

    /// Aborts every process and waits until each has ended, dropping what each left
    /// (outputs, panics' payloads: the user's) with its drop's panic caught, so that
    /// every process is waited for; the first such panic is returned.
    async fn abort_and_end_all(&mut self) -> FirstPanic {
        self.abort_all();
        let mut panicked = FirstPanic::default();
        while let Some(done) = self.join_next().await {
            panicked.catch(move || drop(done));
        }
        panicked
    }

    /// Waits for every process and returns their outputs, in the order they ended. The
    /// first to fail (a panic, or a cancellation) has the others aborted, and once they
    /// have ended, its panic is resumed (a cancellation panics with a message that says
    /// so).
    ///
    /// ```
    /// # csp::block_on(async {
    /// let mut set = csp::JoinSet::new();
    /// for i in 0..3 {
    ///     set.spawn(async move { i });
    /// }
    /// let mut all = set.join_all().await;
    /// all.sort();
    /// assert_eq!(all, [0, 1, 2]);
    /// # });
    /// ```
    pub async fn join_all(mut self) -> Vec<T> {
        let mut outputs = Vec::with_capacity(self.len);
        while let Some(done) = self.join_next().await {
            match done {
                Ok(output) => outputs.push(output),
                Err(err) => {
                    // Nobody reads the outputs gathered so far, nor what the others
                    // leave: each goes now, its drop's panic caught and let go (one
                    // while the panic below unwinds would abort the process).
                    drop_each(outputs);
                    if let Err(payload) = self.abort_and_end_all().await.into_result() {
                        discard(payload);
                    }
                    match err.try_into_panic() {
                        Ok(payload) => std::panic::resume_unwind(payload),
                        Err(err) => panic!("csp: JoinSet::join_all: {err}"),
                    }
                }
            }
        }
        outputs
    }
}

impl<T> Default for JoinSet<T> {
    #[track_caller]
    fn default() -> Self {
        JoinSet::new()
    }
}

impl<T> Drop for JoinSet<T> {
    fn drop(&mut self) {
        for slot in self.slots.drain(..).flatten() {
            slot.handle.abort();
            groups::leave(slot.handle.id());
        }
        groups::drop_group(self.group);
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet")
            .field("id", &self.group)
            .field("len", &self.len)
            .finish()
    }
}

/// The future of [`JoinSet::join_next`].
#[must_use = "futures do nothing unless polled"]
pub struct JoinNext<'a, T> {
    set: &'a mut JoinSet<T>,
}

impl<T> Future for JoinNext<'_, T> {
    type Output = Option<Result<T, JoinError>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().set.poll_join_next(cx)
    }
}

impl<T> fmt::Debug for JoinNext<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinNext").field("set", &self.set).finish()
    }
}
