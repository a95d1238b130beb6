//! The channel lock: a spin lock, since every critical section is a handful of pointer
//! moves (link or claim an entry, move one value) and is never held across user code.
//! It spins with a growing backoff and yields its thread to the OS after a while, so a
//! holder that was preempted gets the CPU back.

use crate::loom::sync::atomic::{AtomicBool, Ordering};
use crate::loom::{spin_loop, thread};
use crate::tuning::CHANNEL_LOCK_SPIN_ROUNDS;

pub(crate) struct RawLock {
    locked: AtomicBool,
}

impl RawLock {
    pub(crate) fn new() -> RawLock {
        RawLock {
            locked: AtomicBool::new(false),
        }
    }

    #[inline]
    pub(crate) fn lock(&self) {
        // Acquire: the critical section sees what the previous holder wrote.
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        self.lock_contended();
    }

    #[cold]
    fn lock_contended(&self) {
        let mut round = 0;
        loop {
            // Relaxed: only a hint of when to try the acquiring exchange again.
            while self.locked.load(Ordering::Relaxed) {
                if round < CHANNEL_LOCK_SPIN_ROUNDS {
                    for _ in 0..1 << round {
                        spin_loop();
                    }
                    round += 1;
                } else {
                    thread::yield_now();
                }
            }
            // Acquire: as in `lock`.
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    /// Takes the lock if it is free; true if it did.
    pub(crate) fn try_lock(&self) -> bool {
        // Acquire: as in `lock`.
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// # Safety
    /// The caller must hold the lock.
    #[inline]
    pub(crate) unsafe fn unlock(&self) {
        // Release: publishes the critical section to the next holder.
        self.locked.store(false, Ordering::Release);
    }
}
