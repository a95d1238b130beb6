//! The blocking pool: OS threads for `spawn_blocking` closures, grown on demand up to
//! [`BLOCKING_MAX_THREADS`] and retired after [`BLOCKING_KEEP_ALIVE`] idle.
//!
//! A blocking closure is a task like a process (same allocation, state word, registry
//! entry and `JoinHandle`), marked `BLOCKING`, whose future runs the closure in one poll.
//! Its run queue entry travels to a pool thread over a crossbeam channel. Runtime
//! shutdown cancels closures that have not started (through the registry) and never
//! waits for a running one longer than its timeout.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::loom::sync::{Arc, Condvar, Mutex};
use crate::loom::thread;
use crate::runtime::{Handle, context};
use crate::task::Notified;
use crate::tuning::{BLOCKING_KEEP_ALIVE, BLOCKING_MAX_THREADS};

/// The future of a blocking task: runs the closure to completion in its one poll.
pub(crate) struct BlockingTask<F>(Option<F>);

impl<F> BlockingTask<F> {
    pub(crate) fn new(f: F) -> BlockingTask<F> {
        BlockingTask(Some(f))
    }
}

impl<F> Unpin for BlockingTask<F> {}

impl<F: FnOnce() -> R, R> Future for BlockingTask<F> {
    type Output = R;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<R> {
        let f = self
            .0
            .take()
            .expect("csp: a blocking task was polled after it completed");
        Poll::Ready(f())
    }
}

pub(crate) struct BlockingPool {
    /// `Some(entry)`: run it; `None`: exit (one per thread at shutdown).
    sender: Sender<Option<Notified>>,
    receiver: Receiver<Option<Notified>>,
    state: Mutex<PoolState>,
    /// Signalled when the last thread, or the last but one, exits (`wait_exited`).
    all_exited: Condvar,
    thread_name: String,
}

struct PoolState {
    threads: usize,
    /// Threads waiting for work that no submitted entry has claimed yet.
    idle: usize,
    /// Entries sent while every thread was busy and the pool at its size limit: the
    /// next threads to finish take them instead of counting as idle.
    queued: usize,
    /// Entries submitted whose run has not returned yet: the closure ran, its output
    /// (if nobody will read it) dropped, and what either woke is queued by then.
    unfinished: usize,
    shutdown: bool,
    spawned: usize,
}

impl BlockingPool {
    pub(crate) fn new(thread_name: String) -> BlockingPool {
        let (sender, receiver) = crossbeam_channel::unbounded();
        BlockingPool {
            sender,
            receiver,
            state: Mutex::new(PoolState {
                threads: 0,
                idle: 0,
                queued: 0,
                unfinished: 0,
                shutdown: false,
                spawned: 0,
            }),
            all_exited: Condvar::new(),
            thread_name,
        }
    }

    /// Hands a blocking task's entry to an idle thread, or to a new one. Fails only if
    /// the new thread could not start: the task is then cancelled, its closure dropped
    /// on this thread, never run.
    pub(crate) fn submit(&self, entry: Notified, handle: &Handle) -> std::io::Result<()> {
        let mut state = self.state.lock();
        if state.shutdown {
            drop(state);
            // Shutdown cancels the task through the registry; the entry is stale.
            drop(entry);
            return Ok(());
        }
        state.unfinished += 1;
        if state.idle == 0 && state.threads < BLOCKING_MAX_THREADS {
            state.threads += 1;
            state.spawned += 1;
            let index = state.spawned;
            drop(state);
            return self.start_thread(index, entry, handle);
        }
        if state.idle > 0 {
            state.idle -= 1;
        } else {
            state.queued += 1;
        }
        // Sent under the lock (an unbounded send never blocks), so that `shutdown`,
        // which drains the channel under this lock, cannot miss it.
        self.sender
            .send(Some(entry))
            .expect("csp: the blocking pool's channel closed while its runtime lives");
        Ok(())
    }

    /// Starts pool thread number `index`, counted already, with `entry` as its first
    /// work, handed over directly: should the thread not start, the entry comes back
    /// here (from the slot the thread would have taken it from), and its task is
    /// cancelled, rather than left in the channel for a thread that may never come.
    fn start_thread(&self, index: usize, entry: Notified, handle: &Handle) -> std::io::Result<()> {
        let first = Arc::new(Mutex::new(Some(entry)));
        let spawned = if start_fails() {
            Err(std::io::ErrorKind::WouldBlock.into())
        } else {
            let (first, handle) = (first.clone(), handle.clone());
            thread::Builder::new()
                .name(format!("{}-blocking-{index}", self.thread_name))
                .spawn(move || {
                    let first = first.lock().take();
                    handle.shared.blocking().thread_main(&handle, first);
                })
        };
        let Err(err) = spawned else { return Ok(()) };
        // The closure never ran: the entry is still in the slot.
        let entry = first.lock().take();
        self.state.lock().unfinished -= 1;
        self.thread_exited();
        if let Some(entry) = entry {
            entry.cancel();
        }
        Err(err)
    }

    /// A pool thread: runs `first`, then what the channel brings, until told to exit or
    /// idle for [`BLOCKING_KEEP_ALIVE`].
    fn thread_main(&self, handle: &Handle, first: Option<Notified>) {
        let _enter = context::enter(handle.clone());
        context::set_pool_thread(handle.shared.id());
        handle.shared.hooks().thread_started();
        if let Some(entry) = first {
            self.run(entry);
        }
        loop {
            match self.receiver.recv_timeout(BLOCKING_KEEP_ALIVE) {
                Ok(Some(entry)) => self.run(entry),
                Ok(None) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    let mut state = self.state.lock();
                    // Retire only if an idle thread is unclaimed (this one); otherwise a
                    // submitted entry is on its way to us.
                    if state.idle > 0 {
                        state.idle -= 1;
                        drop(state);
                        break;
                    }
                }
            }
        }
        handle.shared.hooks().thread_stopping();
        self.thread_exited();
    }

    /// Runs one entry on this pool thread, then counts the thread free: for an entry
    /// sent with no thread to take it, if one waits, else idle.
    fn run(&self, entry: Notified) {
        entry.run();
        let mut state = self.state.lock();
        state.unfinished -= 1;
        if state.queued > 0 {
            state.queued -= 1;
        } else {
            state.idle += 1;
        }
    }

    fn thread_exited(&self) {
        let mut state = self.state.lock();
        state.threads -= 1;
        // At 1 too: a shutdown called on a pool thread waits for the others alone.
        if state.threads <= 1 {
            self.all_exited.notify_all();
        }
    }

    /// Stops taking work, drops entries not yet picked up (their tasks are cancelled
    /// through the registry) and tells every thread to exit when it is free.
    pub(crate) fn shutdown(&self) {
        let (threads, stale) = {
            let mut state = self.state.lock();
            state.shutdown = true;
            // Under the lock: every submitted entry is in the channel by now.
            let stale: Vec<_> = self.receiver.try_iter().collect();
            state.unfinished -= stale.iter().flatten().count();
            (state.threads, stale)
        };
        drop(stale);
        for _ in 0..threads {
            let _ = self.sender.send(None);
        }
    }

    /// True while a blocking task runs or waits to (deadlock detection: it may still
    /// wake a process or close a channel, even after it left the registry, as it drops
    /// an output nobody reads). Once false, everything such a task did is visible to the
    /// caller, through the state lock that the task's thread took after its run.
    pub(crate) fn has_unfinished_work(&self) -> bool {
        self.state.lock().unfinished > 0
    }

    /// Waits until every pool thread has exited or `deadline` passes; but for the
    /// caller's own thread, if `on_own_thread` (a closure on this pool shutting its
    /// runtime down), which cannot exit before the call returns.
    pub(crate) fn wait_exited(&self, deadline: Instant, on_own_thread: bool) {
        let mut state = self.state.lock();
        while state.threads > usize::from(on_own_thread) {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            state = self.all_exited.wait_timeout(state, deadline - now);
        }
    }
}

#[cfg(test)]
std::thread_local! {
    /// Makes this thread's next start of a pool thread fail, as an exhausted system does.
    static FAIL_NEXT_START: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a test asked this thread's next start of a pool thread to fail.
#[cfg(test)]
fn start_fails() -> bool {
    FAIL_NEXT_START.with(|fail| fail.replace(false))
}

/// Makes this thread's next start of a pool thread fail (`fail`), or not.
#[cfg(test)]
pub(crate) fn fail_next_start(fail: bool) {
    FAIL_NEXT_START.with(|next| next.set(fail));
}

/// Only tests make a start fail.
#[cfg(not(test))]
#[inline(always)]
fn start_fails() -> bool {
    false
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::fail_next_start;

    /// Counts its drops.
    struct Dropped(Arc<AtomicUsize>);

    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn runtime() -> crate::Runtime {
        crate::Builder::new().worker_threads(1).build().unwrap()
    }

    /// A `spawn_blocking` on `rt` whose thread fails to start: it panics, and its
    /// closure is dropped. Returns how often the closure ran (it must not, ever).
    fn spawn_failing(rt: &crate::Runtime) -> Arc<AtomicUsize> {
        let (ran, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        fail_next_start(true);
        let spawned = catch_unwind(AssertUnwindSafe(|| {
            let (ran, guard) = (ran.clone(), Dropped(dropped.clone()));
            rt.handle().spawn_blocking(move || {
                let _guard = guard;
                ran.fetch_add(1, Ordering::SeqCst);
            })
        }));
        assert!(spawned.is_err(), "spawn_blocking panics");
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "the closure is dropped");
        ran
    }

    #[test]
    fn a_thread_that_cannot_start_in_an_empty_pool_cancels_its_closure_and_panics() {
        // It stayed in the channel, counted as an idle thread that did not exist.
        let rt = runtime();
        let ran = spawn_failing(&rt);
        assert_eq!(rt.metrics().processes_alive, 0, "the task is left behind");
        // The pool's books are right: the next call starts a thread, and runs.
        assert_eq!(rt.block_on(rt.handle().spawn_blocking(|| 7)).unwrap(), 7);
        assert_eq!(ran.load(Ordering::SeqCst), 0, "the cancelled closure ran");
    }

    #[test]
    fn a_thread_that_cannot_start_beside_a_busy_one_cancels_its_closure_and_the_pool_goes_on() {
        // Left in the channel for the busy thread, the closure ran after its caller had
        // seen a panic, or never, if that thread retired first.
        let rt = runtime();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let busy = rt.handle().spawn_blocking(move || released.recv().unwrap());
        let ran = spawn_failing(&rt);
        release.send(()).unwrap();
        rt.block_on(busy).unwrap();
        // The freed thread is idle, and takes the next closure.
        assert_eq!(rt.block_on(rt.handle().spawn_blocking(|| 8)).unwrap(), 8);
        assert_eq!(ran.load(Ordering::SeqCst), 0, "the cancelled closure ran");
        assert_eq!(rt.metrics().processes_alive, 0);
    }
}
