//! The worker loop: where each worker thread finds its next process. This file is the
//! scheduling policy (DESIGN.md, "Scheduling").
//!
//! In order, a worker runs:
//! 1. every [`GLOBAL_QUEUE_INTERVAL`] ticks, a batch from the injector (so work from
//!    outside the pool is never starved by local work);
//! 2. its handoff slot: the process the last poll woke or spawned, so it runs next on the
//!    same core with its message hot in cache; after [`MAX_CONSECUTIVE_HANDOFFS`] in a
//!    row, the slot's occupant goes to the back of the queue if others wait there, and
//!    so does one whose poll put more than [`HANDOFF_STALE_SENDS`] values in channel
//!    buffers after waking it (below). The processes a poll pushes out of the slot (it
//!    woke or spawned several) are held back, unseen by thieves, and go to the back of
//!    the queue together when the poll ends, or as soon as [`DISPLACED_BATCH`] have
//!    gathered;
//! 3. the head of its own FIFO queue;
//! 4. a batch from the injector;
//! 5. processes woken by timers that came due (the wheel is also advanced at every
//!    periodic injector check, so timers fire while every worker is busy);
//! 6. half of a random victim's queue (searching, at most half the workers at a time),
//!    spinning a few rounds, then yielding its thread, before it parks (with a socket
//!    registered, a searcher that finds no work anywhere parks after the spins, below).
//!    A queue that a batch (a poll's, the injector's) reached less than
//!    [`STEAL_GRACE`](crate::tuning::STEAL_GRACE) ago is left to its owner; what a
//!    socket's or a timer's waker queued alone is not held back (`queue_age.rs`). The
//!    parking worker that sees the wheel's earliest deadline parks with a timeout to it.
//!    With the `io` feature, a parked worker sleeps inside the I/O reactor and drives it
//!    (`worker/park.rs`): a socket's waker puts its process on that worker's queue.
//!
//! A worker that parks while only such fresh work exists parks as the *watcher* (one at
//! a time, `idle.rs`): it sleeps until that work ripens and looks again. A batch a busy
//! worker puts in its own queue meanwhile wakes nobody. A worker that finds no work at
//! all sleeps until woken: it once watched on a timer while another worker was busy
//! (every 50 µs, up to 16 times in a row), which saved the busy worker a futex wake-up
//! per batch it published, but a server paid for those looks: at 50 connections
//! `http_hello` served 150,000 requests/s at 6 µs of CPU each with them, 195,000 at
//! 4.8 µs without (the watcher's wake-ups took the core from the busy worker and wrk),
//! and the channel workloads of `vs_tokio` measured the same within their noise.
//!
//! A watcher whose sleep ends looks once and parks again, rather than spin and yield as
//! a searcher does. A searcher that finds only fresh work, on the other hand, still spins
//! until the work ripens: parking as the watcher instead left the second worker idle
//! past the ripening (a timed sleep ends late), and skynet took about 330 ms, not 230.
//!
//! A searcher that finds no work at all, not even fresh work, while sockets are
//! registered, parks after its tight spins instead of yielding: in a server the next work
//! comes through the I/O driver, and a worker parked in the driver wakes for an event at
//! once, where one yielding does not look at it. With one worker pinned to a core and
//! wrk on the other, `http_hello` made 1.16 `sched_yield` calls a request before this (a
//! worker that ran out of work looked 16 times, yielding after each look from the 4th
//! on, then parked), and none after. Its CPU a request at 50 connections measured 6.01
//! µs against 6.24 (tokio 5.99; medians of 5 alternated runs, whose ranges overlap), so
//! the gain is the calls, not a figure beyond the noise. Without sockets the search is as
//! DESIGN.md has it: channel work appears in queues, not in the driver. The trade: a
//! runtime with a socket registered that mostly passes messages parks its searchers
//! sooner, and its busy workers wake them more often (no benchmark here mixes the two).
//!
//! A process whose poll returns `Pending` rests in the worker's *resting slot*, still
//! `Running`, its transition to `Sleeping` put off (`task::Resting`): woken by the next
//! poll on this worker (the other end of a ping-pong, a child it awaits), it moves to the
//! handoff slot with no atomic operation, where a sleep and a wake cost a compare-and-swap
//! each (4 of a ping-pong round trip's 8 read-modify-writes). Otherwise it goes to sleep
//! when that next poll ends, or before the worker looks beyond its slots and queue, ends
//! a round budget, or exits. To every other thread it is a process being polled: a wake
//! marks it `Yielding` and an abort or shutdown `CANCELLED`, and the put-off transition
//! acts on either, so one poll's length is the longest it waits for them (as a process in
//! the handoff slot waits).
//!
//! A process that a poll on this worker wakes enters the slot already `Running`
//! (`Shared::wake`, `task/state.rs`), so running it from the slot costs no transition; one
//! that leaves the slot unpolled (pushed out, or over the budget) goes back to `Queued`
//! first, since a thief may take it from the queue.
//!
//! The handoff slot is filled only while this worker polls a process, and is emptied by
//! step 2 right after that poll returns, so it never holds a process while the worker
//! parks. A process can wait in the slot only for the rest of the poll that woke it; a
//! poll that blocks its thread would keep it there, with the processes it pushed out of
//! the slot and the resting one, none stealable. So the three slots live in the
//! runtime's shared state (`held.rs`), where the watchdog (`sysmon.rs`) takes them over
//! once a poll has run past [`LONG_POLL_TAKEOVER`](crate::tuning::LONG_POLL_TAKEOVER):
//! the worker passes a gate that costs no atomic read-modify-write and no fence when
//! its poll's own code wakes a process into them, and the watchdog pays for the
//! agreement with a heavy fence, rarely. tokio's LIFO slot cannot be stolen; Go's
//! runnext can.
//!
//! Holding those back is what keeps message passing between processes on one worker
//! when it pays: a receiver that drains a buffer wakes one waiting sender per message
//! (each message it takes makes room for one). Published one by one, every sender
//! would be stolen by an idle worker at once, send one message into the full buffer
//! from the other core, and block again: one steal and a round of cache misses per
//! message. Published when the receiver blocks, they refill the buffer in a batch.
//!
//! The same batching is why a process woken early in a poll that goes on sending does
//! not run next: a sender that wakes its receiver with its first value and then fills
//! the buffer would otherwise hand the receiver one buffer's worth at a time, while
//! the senders queued behind (woken by that receiver's last round) wait with their own
//! channels empty to it. Sent to the back of the queue, the receiver finds them all
//! refilled. A ping-pong poll, which wakes its peer and blocks soon after, buffers
//! nothing and keeps the slot. Values are counted on the thread
//! (`context::count_buffered`, one increment per buffered send), not timed.

use std::cell::Cell;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use crate::loom::spin_loop;
use crate::loom::sync::Arc;
#[cfg(feature = "console")]
use crate::loom::sync::atomic::Ordering;
use crate::loom::thread;
use crate::runtime::held::Held;
use crate::runtime::metrics::{WorkerCounters, bump};
use crate::runtime::queue::{LocalQueue, Steal};
use crate::runtime::timer::timers::ParkTimeout;
use crate::runtime::{Handle, Shared, context};
use crate::task::{Handed, Notified, RawTask, Resting, Schedule, Unslept};
use crate::tuning::{
    DISPLACED_BATCH, GLOBAL_QUEUE_INTERVAL, HANDOFF_STALE_SENDS, INJECTOR_BATCH,
    MAX_CONSECUTIVE_HANDOFFS, SEARCH_ROUNDS, TIGHT_SPIN_ROUNDS,
};

#[cfg(all(test, loom))]
pub(crate) mod loom_models;
mod park;
#[cfg(all(test, not(loom)))]
mod tests;

/// A worker's own state, on its thread's stack; reached from wakers through the
/// thread-local context, never from another thread.
pub(crate) struct Local {
    index: usize,
    shared: Arc<Shared>,
    /// `shared`'s id, which every poll marks the thread with (`context::polling`).
    runtime_id: u64,
    /// This worker's counters in `shared`, reached without indexing on every poll.
    counters: NonNull<WorkerCounters>,
    queue: LocalQueue,
    /// The handoff slot, the processes a poll pushed out of it and the resting process
    /// (module docs), in `shared`, where the watchdog can take them over from a long
    /// poll (`held.rs`). Reached without indexing, as `counters` is.
    held: NonNull<Held>,
    /// Processes run from the slot in a row.
    handoff_streak: Cell<u32>,
    /// The thread's count of buffered values (`context::buffered`) when the slot was
    /// last filled.
    handoff_filled_at: Cell<u32>,
    /// Scheduling ticks left until the periodic injector check.
    tick: Cell<u32>,
    /// This worker counts in `Idle`'s searching count. Never while the handoff slot is
    /// full: the slot fills only during a poll, and a worker stops searching before it
    /// polls.
    searching: Cell<bool>,
    /// xorshift state for picking steal victims.
    rng: Cell<u64>,
    /// This worker's poll count when it last parked.
    polls_at_park: Cell<u64>,
    /// Its last park was a watch.
    watched: Cell<bool>,
    /// How this worker sleeps when it parks (`park.rs`).
    sleep: park::Sleep,
}

/// A process for a worker to run next.
#[derive(Debug)]
pub(crate) enum Next {
    /// A run queue entry (`Queued`).
    Queued(Notified),
    /// A process a wake handed to this worker's slot, `Running` already (`task/state.rs`).
    Handed(Handed),
}

impl Next {
    /// Runs the process; one whose poll returned `Pending` comes back still `Running`.
    #[inline(always)]
    fn run(self) -> Option<Resting> {
        match self {
            Next::Queued(entry) => entry.run_resting(),
            Next::Handed(handed) => handed.run(),
        }
    }

    /// The process.
    #[cfg(feature = "console")]
    pub(crate) fn raw(&self) -> crate::task::RawTask {
        match self {
            Next::Queued(entry) => entry.raw(),
            Next::Handed(handed) => handed.raw(),
        }
    }

    /// As a run queue entry, for a process leaving the handoff slot unpolled.
    #[inline]
    pub(crate) fn into_queued(self) -> Notified {
        match self {
            Next::Queued(entry) => entry,
            Next::Handed(handed) => handed.into_queued(),
        }
    }
}

impl From<Notified> for Next {
    #[inline(always)]
    fn from(entry: Notified) -> Next {
        Next::Queued(entry)
    }
}

/// What one look at the other workers' queues found.
enum Found {
    /// A process to run (and maybe more, moved into this worker's queue).
    Process(Notified),
    /// Work, but only in queues that filled within the grace: look again soon.
    Fresh,
    /// No work anywhere.
    Nothing,
}

/// What a worker's last look before sleeping found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    /// Work it may take now.
    Ripe,
    /// Work only in other workers' queues that filled within the grace; the first
    /// ripens in this long.
    Fresh(Duration),
    /// No work anywhere.
    Nothing,
}

/// How a worker that `prepare_park` lets sleep sleeps.
#[derive(Debug, Clone, Copy)]
struct Park {
    /// The timer wheel's deadline, if this worker armed it.
    timeout: ParkTimeout,
    /// If it is the watcher: how long until it looks again.
    watch: Option<Duration>,
}

impl Park {
    /// True if the worker sleeps as the watcher.
    fn is_watch(&self) -> bool {
        self.watch.is_some()
    }
}

/// What the worker loop does after a round of `Local::step`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// It ran something (a process, or timers that fired): go on.
    Ran,
    /// Nothing to do: park.
    Park,
    /// The runtime is shutting down.
    Exit,
}

/// Runs worker `index` of `shared` on the current thread until shutdown.
pub(crate) fn run_worker(shared: Arc<Shared>, index: usize, queue: LocalQueue) {
    let local = Local::new(shared, index, queue);
    {
        // SAFETY: `local` outlives the guard and stays on this thread.
        let _worker = unsafe { context::WorkerGuard::new(&local) };
        local.shared.hooks().thread_started();
        local.run();
        // Before the stop hook: the futures dropped here may need what the start hook
        // set up (another runtime's context, say).
        local.drain();
        local.shared.hooks().thread_stopping();
        // And after it: what the hook woke (it closed a channel, say) went to this
        // worker's queue, which nobody else drains now.
        local.drain();
    }
    local.shared.worker_exited();
}

impl Local {
    pub(crate) fn new(shared: Arc<Shared>, index: usize, queue: LocalQueue) -> Local {
        Local {
            index,
            counters: NonNull::from(shared.counters(index)),
            held: NonNull::from(shared.held(index)),
            runtime_id: shared.id(),
            shared,
            queue,
            handoff_streak: Cell::new(0),
            handoff_filled_at: Cell::new(0),
            tick: Cell::new(GLOBAL_QUEUE_INTERVAL),
            searching: Cell::new(false),
            // Any odd, index-dependent seed: victims need only differ between workers.
            rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ (((index as u64) << 1) | 1)),
            polls_at_park: Cell::new(0),
            watched: Cell::new(false),
            sleep: park::Sleep::new(),
        }
    }

    pub(crate) fn handle(&self) -> Handle {
        Handle {
            shared: self.shared.clone(),
        }
    }

    /// This worker's index among its runtime's workers.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// True if this worker belongs to `shared`'s runtime.
    pub(crate) fn belongs_to(&self, shared: &Shared) -> bool {
        std::ptr::eq(&*self.shared, shared)
    }

    /// This worker's held processes and their gate (`held.rs`).
    #[inline(always)]
    fn held(&self) -> &Held {
        // SAFETY: it points into `self.shared`, which `self` keeps alive.
        unsafe { self.held.as_ref() }
    }

    #[inline]
    pub(crate) fn counters(&self) -> &WorkerCounters {
        // SAFETY: it points into `self.shared`, which `self` keeps alive.
        unsafe { self.counters.as_ref() }
    }

    /// Puts a process of this worker's runtime on this worker.
    #[inline(always)]
    pub(crate) fn schedule(&self, entry: Notified, how: Schedule) {
        match how {
            Schedule::Yield => self.requeue(entry),
            Schedule::Wake | Schedule::Spawn if context::is_polling() => {
                self.fill_handoff(Next::Queued(entry));
            }
            Schedule::Wake | Schedule::Spawn => self.schedule_idle(entry),
        }
    }

    /// Wakes `task` from a poll on this worker, consuming the caller's reference: this
    /// worker's resting process goes to the handoff slot with no atomic operation, a
    /// sleeping one `Running` with one (`Shared::wake`); both through one pass of the
    /// gate (`held.rs`).
    #[inline(always)]
    pub(crate) fn wake_by_val(&self, task: RawTask) {
        let held = self.held();
        let gate = held.enter();
        if gate.is_open() {
            // SAFETY: this worker's slots, behind an open gate (or between polls).
            let handed = match unsafe { self.take_resting(task) } {
                // SAFETY: the caller's reference, to the resting process, given up.
                Some(resting) => Some(unsafe { resting.woken(task) }),
                None => task.hand_off_by_val(),
            };
            if let Some(handed) = handed {
                // SAFETY: as above.
                unsafe { self.fill_open(Next::Handed(handed)) };
            }
            held.leave(gate);
        } else {
            held.leave(gate);
            // Taken over: the resting process, if it is `task`, is the taker's, and
            // the wake goes by the state word, as one from another thread would.
            if let Some(handed) = task.hand_off_by_val() {
                self.taken_over(Next::Handed(handed));
            }
        }
    }

    /// As [`wake_by_val`](Self::wake_by_val), keeping the caller's reference: only this
    /// worker's resting process goes to the slot from here; any other is woken as
    /// [`RawTask::wake_by_ref`] does.
    #[inline(always)]
    pub(crate) fn wake_by_ref(&self, task: RawTask) {
        let held = self.held();
        let gate = held.enter();
        if gate.is_open() {
            // SAFETY: this worker's slots, behind an open gate (or between polls).
            if let Some(resting) = unsafe { self.take_resting(task) } {
                // SAFETY: as above.
                unsafe { self.fill_open(Next::Handed(resting.woken_by_ref())) };
                held.leave(gate);
                return;
            }
        }
        held.leave(gate);
        task.wake_by_ref();
    }

    /// Takes this worker's resting process if it is `task`.
    ///
    /// # Safety
    /// Only between polls or behind an open gate (`held.rs`).
    #[inline(always)]
    unsafe fn take_resting(&self, task: RawTask) -> Option<Resting> {
        // SAFETY: the caller's contract.
        unsafe {
            self.held().with_slots(|slots| match &slots.resting {
                Some(resting) if resting.raw() == task => slots.resting.take(),
                _ => None,
            })
        }
    }

    /// Puts the resting process to sleep, if there is one: true if there was.
    #[inline]
    fn put_resting_to_sleep(&self) -> bool {
        // SAFETY: this worker's slots, between polls.
        match unsafe { self.held().with_slots(|slots| slots.resting.take()) } {
            Some(resting) => {
                self.sleep(resting);
                true
            }
            None => false,
        }
    }

    /// Makes a resting process's put-off transition, and finishes one that did not end
    /// in `Sleeping` ([`finish_unslept`](Self::finish_unslept)).
    #[inline(always)]
    fn sleep(&self, resting: Resting) {
        if let Some(unslept) = resting.sleep() {
            self.finish_unslept(unslept);
        }
    }

    /// Re-queues a process that a wake kept from sleeping, or drops the future of one
    /// cancelled while it rested as a poll would, with the thread marked as polling:
    /// that `Drop` is user code on a worker, which must not block it
    /// (`context::assert_may_block`), and whose wakes go to the handoff slot.
    #[inline(never)]
    fn finish_unslept(&self, unslept: Unslept) {
        if unslept.drops_future() {
            {
                let _polling = context::polling(self.runtime_id);
                unslept.finish();
            }
            // What the drop woke into the full handoff slot pushed its occupant out, as
            // a poll's wakes do: published now, since this may run between polls.
            self.publish_displaced();
        } else {
            unslept.finish();
        }
    }

    /// Puts `next` in the handoff slot, through the gate (`held.rs`).
    #[inline(always)]
    fn fill_handoff(&self, next: Next) {
        let held = self.held();
        let gate = held.enter();
        if gate.is_open() {
            // SAFETY: behind an open gate (or between polls).
            unsafe { self.fill_open(next) };
            held.leave(gate);
        } else {
            held.leave(gate);
            self.taken_over(next);
        }
    }

    /// Puts `next` in the handoff slot; what was there is pushed out.
    ///
    /// # Safety
    /// Only between polls or behind an open gate (`held.rs`).
    #[inline(always)]
    unsafe fn fill_open(&self, next: Next) {
        self.handoff_filled_at.set(context::buffered());
        // SAFETY: the caller's contract.
        let previous = unsafe { self.held().with_slots(|slots| slots.handoff.replace(next)) };
        if let Some(previous) = previous {
            self.displace(previous.into_queued());
        }
    }

    /// A process woken into the slot while the watchdog holds it (`held.rs`): to the
    /// injector, where any worker finds it.
    #[cold]
    #[inline(never)]
    fn taken_over(&self, next: Next) {
        self.shared.push_remote(next.into_queued());
    }

    /// A process woken during its own poll: to the back of the queue, never the slot;
    /// no wake-up of another worker, as this one is busy with exactly this work.
    #[inline(never)]
    fn requeue(&self, entry: Notified) {
        self.enqueue(entry);
    }

    /// A wake or spawn on this worker while it polls nothing (a timer, a socket's
    /// waker, a drop between polls): to the queue, where another worker may take it at
    /// once unless a batch whose clock runs is there before it (`queue_age.rs`).
    #[inline(never)]
    fn schedule_idle(&self, entry: Notified) {
        let ages = self.shared.queue_ages();
        let was_empty = self.queue.is_empty();
        if was_empty {
            // No batch: a clock left running by a race with a thief stops.
            ages.stop_clock(self.index);
        }
        self.queue.push(entry);
        // A socket's waker run by the reactor this worker sleeps in: the worker wakes up
        // for it itself (`park.rs`).
        if !self.sleep.woke_self() {
            // Stopped just above if the queue was empty: no second look at the word.
            if was_empty || ages.clock_stopped(self.index) {
                self.shared.idle().notify_work();
            } else {
                // Behind a fresh batch, it waits with it.
                self.shared.idle().notify_fresh();
            }
        }
    }

    /// The worker loop (`park.rs` runs it, sleeping whenever a round says `Park`).
    fn run(&self) {
        park::run(self);
    }

    /// Runs rounds of `step` until one says park or exit, or `budget` rounds ran (then
    /// `Step::Ran`).
    fn run_rounds(&self, budget: u32) -> Step {
        for _ in 0..budget {
            match self.step() {
                Step::Ran => {}
                other => return other,
            }
        }
        // The caller may look elsewhere (the reactor) before the next round.
        self.put_resting_to_sleep();
        Step::Ran
    }

    /// One round of the loop: runs one process if it finds one, else says what next.
    #[inline(always)]
    fn step(&self) -> Step {
        if let Some(entry) = self.next_task() {
            // `next_task` has stopped the search, if there was one.
            self.poll(entry);
            return Step::Ran;
        }
        // Before the worker looks beyond its own slots and queue (and perhaps parks):
        // put off no longer, and look again at what that re-queued.
        if self.put_resting_to_sleep() {
            return Step::Ran;
        }
        if self.shared.is_shutdown() {
            return Step::Exit;
        }
        // Out of work: timers that expired may have woken some.
        if self.shared.timers().fire_due() {
            return Step::Ran;
        }
        if let Some(entry) = self.search() {
            self.run_task(entry);
            return Step::Ran;
        }
        if self.shared.is_shutdown() {
            return Step::Exit;
        }
        Step::Park
    }

    /// Runs what this worker has at hand (its slots, its queue, the injector) until
    /// nothing is left, without searching or parking: how the tests drive a worker.
    #[cfg(test)]
    pub(crate) fn run_at_hand(&self) {
        loop {
            while let Some(entry) = self.next_task() {
                self.run_task(entry);
            }
            if !self.put_resting_to_sleep() {
                return;
            }
        }
    }

    /// Ends the runtime of a worker a test drives by hand on its own thread: lets go of
    /// `guard` (this worker's), shuts the runtime down, and drops what this worker and
    /// the injector still hold.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn shut_down_by_hand(&self, guard: context::WorkerGuard) {
        drop(guard);
        assert!(self.shared.begin_shutdown());
        self.drain();
        self.shared.drain_injector();
    }

    /// Runs `entry`, found by a search (or by `next_task`).
    #[inline(always)]
    fn run_task(&self, entry: impl Into<Next>) {
        self.found_work();
        self.poll(entry.into());
    }

    /// This worker found a process to run: it stops searching, if it was.
    #[inline(always)]
    fn found_work(&self) {
        if self.searching.replace(false) && self.shared.idle().stop_searching() {
            // The last searcher found work: more may have come meanwhile that woke
            // nobody, so pass the word on.
            self.shared.idle().notify_work();
        }
    }

    /// Runs `entry`, once this worker is not searching.
    #[inline(always)]
    fn poll(&self, entry: Next) {
        debug_assert!(!self.searching.get());
        // Relaxed: the console samples it from its own thread, for a figure.
        #[cfg(feature = "console")]
        self.counters()
            .polling
            .store(entry.raw().id(), Ordering::Relaxed);
        self.held().begin_poll();
        let rested = {
            let _polling = context::polling(self.runtime_id);
            entry.run()
        };
        self.held().end_poll();
        #[cfg(feature = "console")]
        self.counters().polling.store(0, Ordering::Relaxed);
        // The process resting before this poll, unless the poll woke it, waited long
        // enough: it goes to sleep, and the one this poll left takes its place.
        // SAFETY: this worker's slots, between polls.
        let previous = unsafe {
            self.held()
                .with_slots(|slots| std::mem::replace(&mut slots.resting, rested))
        };
        if let Some(previous) = previous {
            self.sleep(previous);
        }
        self.publish_displaced();
    }

    /// Holds back `entry`, pushed out of the handoff slot by the poll in progress
    /// (module docs); publishes the batch once it is full.
    #[inline(never)]
    fn displace(&self, entry: Notified) {
        // SAFETY: this worker's slots, behind the open gate of `fill_handoff` (or
        // between polls).
        let full = unsafe {
            self.held().with_slots(|slots| {
                slots.displaced.push(entry);
                slots.displaced.len() >= DISPLACED_BATCH
            })
        };
        if full {
            self.publish_displaced_now();
        }
    }

    /// Moves the processes pushed out of the handoff slot to the back of the queue, in
    /// the order they were pushed out, where idle workers may take them.
    #[inline]
    fn publish_displaced(&self) {
        // Most polls push nobody out of the slot: a test, inline, of the length alone.
        // SAFETY: this worker's slots, between polls.
        if !unsafe { self.held().with_slots(|slots| slots.displaced.is_empty()) } {
            self.publish_displaced_now();
        }
    }

    #[inline(never)]
    fn publish_displaced_now(&self) {
        // One batch: its clock is seen to once, not for each process in it.
        self.batch_arriving(self.queue.is_empty());
        // SAFETY: this worker's slots, between polls or behind the open gate of
        // `fill_handoff`; the queue's push does not touch them.
        unsafe {
            self.held().with_slots(|slots| {
                for entry in slots.displaced.drain(..) {
                    self.queue.push(entry);
                }
            });
        }
        self.shared.idle().notify_fresh();
    }

    /// The next process to run, if this worker has one at hand (steps 1 to 5 of the
    /// module docs). A worker that was searching stops: it found work.
    #[inline(always)]
    fn next_task(&self) -> Option<Next> {
        let tick = self.tick.get() - 1;
        self.tick.set(tick);
        if tick == 0 {
            self.tick.set(GLOBAL_QUEUE_INTERVAL);
            if self.shared.is_shutdown() {
                return None;
            }
            // Timers fire even while every worker is busy.
            self.shared.timers().fire_due();
            if let Some(entry) = self.pop_injector() {
                self.found_work();
                return Some(entry.into());
            }
        }
        // SAFETY: this worker's slots, between polls.
        if let Some(entry) = unsafe { self.held().with_slots(|slots| slots.handoff.take()) } {
            // A full slot means a poll since the last search.
            debug_assert!(!self.searching.get());
            let streak = self.handoff_streak.get();
            // The budget only protects processes waiting in the queue: with none, the
            // chain goes on (and nobody else is woken to split it up). A process woken
            // early in a poll that went on sending waits its turn (module docs).
            let fresh = context::buffered().wrapping_sub(self.handoff_filled_at.get())
                <= HANDOFF_STALE_SENDS;
            if fresh && streak < MAX_CONSECUTIVE_HANDOFFS || self.queue.is_empty() {
                self.handoff_streak.set(streak + 1);
                bump(&self.counters().handoffs);
                return Some(entry);
            }
            self.enqueue(entry.into_queued());
            self.shared.idle().notify_fresh();
        }
        self.handoff_streak.set(0);
        if let Some(entry) = self.queue.pop() {
            if self.queue.is_empty() {
                self.shared.queue_ages().stop_clock(self.index);
            }
            self.found_work();
            return Some(entry.into());
        }
        let entry = self.pop_injector()?;
        self.found_work();
        Some(entry.into())
    }

    /// Puts `entry`, part of a batch a poll on this worker woke or spawned, at the back
    /// of this worker's queue.
    #[inline]
    fn enqueue(&self, entry: Notified) {
        self.batch_arriving(self.queue.is_empty());
        self.queue.push(entry);
    }

    /// A batch is about to reach this worker's queue, which was empty just before if
    /// `was_empty`: starts the queue's clock unless it runs (`queue_age.rs`).
    #[inline]
    fn batch_arriving(&self, was_empty: bool) {
        let ages = self.shared.queue_ages();
        if was_empty || ages.clock_stopped(self.index) {
            ages.start_clock(self.index);
        }
    }

    fn pop_injector(&self) -> Option<Notified> {
        let was_empty = self.queue.is_empty();
        loop {
            match self
                .shared
                .injector()
                .steal_batch_and_pop(&self.queue, INJECTOR_BATCH)
            {
                Steal::Success(entry) => {
                    if !self.queue.is_empty() {
                        self.batch_arriving(was_empty);
                        // A batch came with it: let a sleeping worker help once it may.
                        self.shared.idle().notify_fresh();
                    }
                    return Some(entry);
                }
                Steal::Empty => return None,
                Steal::Retry => spin_loop(),
            }
        }
    }

    /// Looks for work elsewhere for a few rounds; `None` means park.
    fn search(&self) -> Option<Notified> {
        if !self.searching.get() {
            if !self.shared.idle().try_start_searching() {
                return None;
            }
            self.searching.set(true);
        }
        if self.just_watched() {
            // A watch just ended: one look, then park again (and watch again, if it
            // still should) rather than spin beside the busy workers (module docs).
            return match self.steal() {
                Found::Process(entry) => Some(entry),
                Found::Fresh | Found::Nothing => None,
            };
        }
        let mut round = 0;
        while round < SEARCH_ROUNDS {
            match self.steal() {
                Found::Process(entry) => return Some(entry),
                // Work its owner is about to run, or that will soon be old enough to
                // take: keep looking, yielding between looks, rather than park.
                Found::Fresh => round = round.max(TIGHT_SPIN_ROUNDS),
                Found::Nothing => {
                    round += 1;
                    // No work anywhere, and sockets registered: the next work most
                    // likely comes through the driver, which a parked worker sleeps in
                    // and wakes for at once. Past the tight spins, park (module docs).
                    if round >= TIGHT_SPIN_ROUNDS && self.serves_sockets() {
                        return None;
                    }
                }
            }
            if round < TIGHT_SPIN_ROUNDS {
                for _ in 0..1 << round {
                    spin_loop();
                }
            } else {
                thread::yield_now();
            }
        }
        None
    }

    /// Whether any source is registered with this runtime's I/O driver (a hint:
    /// `Driver::has_sources`).
    #[inline]
    fn serves_sockets(&self) -> bool {
        #[cfg(feature = "io")]
        return self
            .shared
            .io()
            .is_some_and(crate::runtime::driver::Driver::has_sources);
        #[cfg(not(feature = "io"))]
        false
    }

    /// One look for work: the injector, then half of the first ripe queue from a random
    /// victim on.
    fn steal(&self) -> Found {
        if let Some(entry) = self.pop_injector() {
            return Found::Process(entry);
        }
        let stealers = self.shared.stealers();
        let ages = self.shared.queue_ages();
        let n = stealers.len();
        let start = self.next_random() as usize % n;
        let mut now = None;
        let mut found = Found::Nothing;
        for offset in 0..n {
            let victim = (start + offset) % n;
            if victim == self.index || stealers[victim].is_empty() {
                continue;
            }
            if !ages.is_ripe(victim, *now.get_or_insert_with(|| ages.now())) {
                found = Found::Fresh;
                continue;
            }
            loop {
                match stealers[victim].steal_half_and_pop(&self.queue) {
                    Steal::Success(entry) => {
                        bump(&self.counters().steals);
                        // The half taken has waited out its grace on the victim: ripe
                        // here too (`queue_age.rs`).
                        ages.stop_clock(self.index);
                        return Found::Process(entry);
                    }
                    Steal::Empty => break,
                    Steal::Retry => spin_loop(),
                }
            }
        }
        found
    }

    /// Parks until notified or the wheel's next deadline (the loom models' way in; the
    /// loop parks through `park.rs`).
    #[cfg(all(test, loom))]
    fn park(&self) {
        park::park(self);
    }

    /// After `Idle::begin_park` and registering a listener on the idle event: the last
    /// look at the queues and the timers. `None`: work came, do not sleep (the park is
    /// over); else sleep until the deadline of `deadline(park)`, if any, then call
    /// `finish_park`.
    fn prepare_park(&self) -> Option<Park> {
        let idle = self.shared.idle();
        let was_last_searcher = idle.registered(self.searching.replace(false));
        // The last look (idle.rs): work that arrived on our way to sleep. Then timers:
        // fire what came due on the way, and arm the next deadline unless another parked
        // worker waits for it (timers.rs).
        let look = self.look();
        let timeout = if look == Look::Ripe || self.shared.is_shutdown() {
            ParkTimeout::Fired
        } else {
            self.shared.timers().before_park()
        };
        if timeout == ParkTimeout::Fired {
            idle.finish_park();
            // Counted asleep for a moment: the watchdog may have gone to sleep on it.
            self.shared.worker_awake();
            if was_last_searcher {
                // That work saw a searcher and woke nobody: this worker takes some, a
                // sleeper may take the rest.
                idle.notify_work();
            }
            // The work seen may be for another worker to take (the one searching, while
            // this one may not search): pause before the next look rather than spin on
            // the counters that worker is changing. Under loom, a yield to it.
            spin_loop();
            return None;
        }
        bump(&self.counters().parks);
        Some(Park {
            timeout,
            watch: self.watch(look),
        })
    }

    /// The last look before sleeping, at every queue.
    fn look(&self) -> Look {
        if !self.queue.is_empty() || !self.shared.injector().is_empty() {
            return Look::Ripe;
        }
        let ages = self.shared.queue_ages();
        let mut now = None;
        let mut soonest: Option<Duration> = None;
        for (victim, stealer) in self.shared.stealers().iter().enumerate() {
            if victim == self.index || stealer.is_empty() {
                continue;
            }
            let ripens_in = ages.ripens_in(victim, *now.get_or_insert_with(|| ages.now()));
            if ripens_in.is_zero() {
                return Look::Ripe;
            }
            soonest = Some(soonest.map_or(ripens_in, |s| s.min(ripens_in)));
        }
        soonest.map_or(Look::Nothing, Look::Fresh)
    }

    /// This worker's poll count.
    fn polls(&self) -> u64 {
        self.held().polls()
    }

    /// True if this worker's last park was a watch and it has run no process since.
    fn just_watched(&self) -> bool {
        self.watched.get() && self.polls() == self.polls_at_park.get()
    }

    /// Whether the worker about to sleep after `look` watches (module docs), and for how
    /// long: if there is fresh work, until it ripens, unless another worker watches.
    fn watch(&self, look: Look) -> Option<Duration> {
        self.polls_at_park.set(self.polls());
        let Look::Fresh(ripens_in) = look else {
            return None;
        };
        self.shared.idle().try_watch().then_some(ripens_in)
    }

    /// When a worker that `prepare_park` let sleep as `park` wakes up.
    fn deadline(&self, park: Park) -> Option<Instant> {
        let timer = match park.timeout {
            ParkTimeout::Until(tick) => self.shared.timers().instant_of(tick),
            _ => None,
        };
        let watch = park.watch.map(|watch| Instant::now() + watch);
        timer.into_iter().chain(watch).min()
    }

    /// The worker woke up from the sleep `prepare_park` prepared.
    fn finish_park(&self, park: Park) {
        if let ParkTimeout::Until(tick) = park.timeout {
            self.shared.timers().after_park(tick);
        }
        let idle = self.shared.idle();
        self.watched.set(park.is_watch());
        if park.is_watch() {
            // Before this worker's next look (idle.rs).
            idle.stop_watching();
        }
        idle.finish_park();
        self.shared.worker_awake();
        // Woken for new work: go and find it as a searcher.
        if idle.try_start_searching() {
            self.searching.set(true);
        }
    }

    fn next_random(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
    }

    /// Drops the entries left in the slots and the queue at shutdown (their processes are
    /// cancelled through the registry). Running one that shutdown left to this worker
    /// (`Notified::discard`) drops its future, as a poll would: under the polling mark,
    /// on this worker, whose queue and slots take what such a drop wakes: it goes on
    /// until they are empty.
    #[cold]
    #[inline(never)]
    fn drain(&self) {
        let _polling = context::polling(self.runtime_id);
        loop {
            let mut drained = self.put_resting_to_sleep();
            // SAFETY: this worker's slots, between polls.
            if let Some(next) = unsafe { self.held().with_slots(|slots| slots.handoff.take()) } {
                next.into_queued().discard();
                drained = true;
            }
            // Held-back entries join the queue, drained below.
            self.publish_displaced();
            while let Some(entry) = self.queue.pop() {
                entry.discard();
                drained = true;
            }
            if !drained {
                return;
            }
        }
    }
}
