//! A count of threads still running, that a shutdown can wait on with a deadline.

use std::time::Instant;

use crate::loom::sync::{Condvar, Mutex};

pub(crate) struct Latch {
    remaining: Mutex<usize>,
    zero: Condvar,
}

impl Latch {
    pub(crate) fn new(count: usize) -> Latch {
        Latch {
            remaining: Mutex::new(count),
            zero: Condvar::new(),
        }
    }

    pub(crate) fn add(&self, n: usize) {
        *self.remaining.lock() += n;
    }

    pub(crate) fn count_down(&self) {
        let mut remaining = self.remaining.lock();
        *remaining -= 1;
        if *remaining == 0 {
            self.zero.notify_all();
        }
    }

    /// Waits until the count is zero or `deadline` passes (forever with `None`); true if
    /// it reached zero.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> bool {
        let mut remaining = self.remaining.lock();
        while *remaining > 0 {
            remaining = match deadline {
                None => self.zero.wait(remaining),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return false;
                    }
                    self.zero.wait_timeout(remaining, deadline - now)
                }
            };
        }
        true
    }
}
