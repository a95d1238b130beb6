//! The registry of live processes: what runtime shutdown walks to cancel processes that
//! sit in no queue, and what `Runtime::processes()` and the metrics read.
//!
//! Sharded by process id, each shard an intrusive doubly linked list (the links follow
//! the process header) under its own lock, so a process completing on any worker unlinks
//! itself without a global lock. Each linked process holds one reference for its entry;
//! whoever unlinks it takes that reference over.

use std::ptr::NonNull;

use crossbeam_utils::CachePadded;

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Mutex;
use crate::task::RawTask;
use crate::task::header::{Header, Links};
use crate::task::state::Shutdown;
use crate::tuning::REGISTRY_SHARDS_PER_WORKER;

pub(crate) struct Registry {
    shards: Box<[CachePadded<Mutex<Shard>>]>,
    mask: usize,
}

struct Shard {
    head: Option<NonNull<Header>>,
    /// Linked processes, not counting `spawn_blocking` tasks.
    processes: u64,
    /// Set at shutdown: nothing new may be linked.
    closed: bool,
}

// SAFETY: the pointers are headers of processes that the shard holds a reference to, and
// the list is read and written only under the shard's lock.
unsafe impl Send for Shard {}

impl Shard {
    /// The links of a process in this shard; borrowed from the shard (its lock guard),
    /// so they are only used under the lock.
    fn links_of(&self, ptr: NonNull<Header>) -> &UnsafeCell<Links> {
        // SAFETY: only called on processes linked here (or being linked), which the
        // shard keeps alive while its lock is held.
        unsafe { Header::links(ptr) }
    }

    fn push_front(&mut self, ptr: NonNull<Header>) {
        let old_head = self.head;
        // SAFETY: the shard lock is held (links are only touched under it).
        self.links_of(ptr).with_mut(|links| unsafe {
            (*links).prev = None;
            (*links).next = old_head;
        });
        if let Some(old) = old_head {
            // SAFETY: as above.
            self.links_of(old)
                .with_mut(|links| unsafe { (*links).prev = Some(ptr) });
        }
        self.head = Some(ptr);
    }

    /// Unlinks `ptr` if it is linked here; false if it is not.
    fn unlink(&mut self, ptr: NonNull<Header>) -> bool {
        // SAFETY: the shard lock is held.
        let (prev, next) = self
            .links_of(ptr)
            .with(|links| unsafe { ((*links).prev, (*links).next) });
        if prev.is_none() && self.head != Some(ptr) {
            return false;
        }
        match prev {
            // SAFETY: the shard lock is held; `p` is linked, so live.
            Some(p) => self
                .links_of(p)
                .with_mut(|links| unsafe { (*links).next = next }),
            None => self.head = next,
        }
        if let Some(n) = next {
            // SAFETY: as above.
            self.links_of(n)
                .with_mut(|links| unsafe { (*links).prev = prev });
        }
        // SAFETY: as above.
        self.links_of(ptr).with_mut(|links| unsafe {
            (*links).prev = None;
            (*links).next = None;
        });
        true
    }
}

fn counts_as_process(raw: RawTask) -> u64 {
    u64::from(!raw.state().load().is_blocking())
}

impl Registry {
    pub(crate) fn new(workers: usize) -> Registry {
        // Under loom, one shard: ids come from a global counter that differs between
        // explorations, and a model must touch the same locks in every one.
        let shards = if cfg!(loom) {
            1
        } else {
            (workers * REGISTRY_SHARDS_PER_WORKER).next_power_of_two()
        };
        Registry {
            shards: (0..shards)
                .map(|_| {
                    CachePadded::new(Mutex::new(Shard {
                        head: None,
                        processes: 0,
                        closed: false,
                    }))
                })
                .collect(),
            mask: shards - 1,
        }
    }

    fn shard(&self, raw: RawTask) -> &Mutex<Shard> {
        // Truncating the id is fine: only its low bits pick the shard.
        &self.shards[raw.id() as usize & self.mask]
    }

    /// Links a new process, taking over its registry reference. False if the runtime is
    /// shutting down: the reference stays with the caller, who must cancel the process.
    #[must_use]
    pub(crate) fn insert(&self, raw: RawTask) -> bool {
        let mut shard = self.shard(raw).lock();
        if shard.closed {
            return false;
        }
        shard.push_front(raw.as_ptr());
        shard.processes += counts_as_process(raw);
        true
    }

    /// Unlinks a completed process. True if it was linked: its registry reference is then
    /// the caller's to release. False if shutdown already took it.
    #[must_use]
    pub(crate) fn remove(&self, raw: RawTask) -> bool {
        let mut shard = self.shard(raw).lock();
        if !shard.unlink(raw.as_ptr()) {
            return false;
        }
        shard.processes -= counts_as_process(raw);
        true
    }

    /// Closes every shard, then cancels every linked process in place (or leaves it to
    /// the worker polling it) and releases its registry reference.
    ///
    /// Each process's shutdown transition is made under the lock that unlinked it. A
    /// process takes that lock to leave the registry (`remove`) before it publishes its
    /// completion, so one found linked here is never complete, and one found `Running`
    /// gets the registry's reference passed to its poller (`REGISTRY_LEFT`) before that
    /// poller can learn that it did not unlink the process itself. Made after the unlock,
    /// the transition could find the process completed by a poller that relied on the
    /// registry's reference (`task/loan.rs`), and free it under that poller.
    pub(crate) fn close_and_shutdown_all(&self) {
        for shard in self.shards.iter() {
            shard.lock().closed = true;
        }
        for shard in self.shards.iter() {
            loop {
                let (raw, outcome) = {
                    let mut shard = shard.lock();
                    let Some(head) = shard.head else { break };
                    let unlinked = shard.unlink(head);
                    debug_assert!(unlinked);
                    // SAFETY: a linked header, whose registry reference we now hold.
                    let raw = unsafe { RawTask::from_raw(head) };
                    shard.processes -= counts_as_process(raw);
                    let outcome = raw.transition_to_shutdown();
                    debug_assert_ne!(outcome, Shutdown::Done, "{raw:?} was linked");
                    (raw, outcome)
                };
                // Outside the lock: the cancelled future's drop and completion may touch
                // the registry again.
                // SAFETY: the registry reference taken over above, and its transition.
                unsafe { raw.finish_shutdown(outcome) };
            }
        }
    }

    /// Calls `f` on every linked process, one shard lock at a time.
    pub(crate) fn for_each(&self, mut f: impl FnMut(RawTask)) {
        for shard in self.shards.iter() {
            let shard = shard.lock();
            let mut cursor = shard.head;
            while let Some(ptr) = cursor {
                // SAFETY: linked, so live while the lock is held.
                f(unsafe { RawTask::from_raw(ptr) });
                // SAFETY: the shard lock is held.
                cursor = shard.links_of(ptr).with(|links| unsafe { (*links).next });
            }
        }
    }

    /// Live processes (`spawn_blocking` tasks not counted).
    pub(crate) fn processes(&self) -> u64 {
        self.shards.iter().map(|shard| shard.lock().processes).sum()
    }
}
