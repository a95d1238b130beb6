//! Run queues: each worker's local FIFO queue (crossbeam-deque's `Worker`, stolen from
//! through its `Stealer`s) and the runtime's global `Injector`.
//!
//! crossbeam-deque has no loom support, so under `--cfg loom` the same three types are
//! small mutex-protected deques with the same methods: a test double for the models,
//! not a replacement of the dependency.

use crate::task::Notified;

/// The result of one steal attempt.
pub(crate) enum Steal {
    /// Got one process to run now (and possibly moved more into the thief's queue).
    Success(Notified),
    /// Nothing there.
    Empty,
    /// Lost a race with another thief; worth trying again. (The loom stand-in never
    /// loses such races: it locks.)
    #[cfg_attr(loom, allow(dead_code))]
    Retry,
}

#[cfg(not(loom))]
mod imp {
    use super::Steal;
    use crate::task::Notified;

    fn convert(steal: crossbeam_deque::Steal<Notified>) -> Steal {
        match steal {
            crossbeam_deque::Steal::Success(task) => Steal::Success(task),
            crossbeam_deque::Steal::Empty => Steal::Empty,
            crossbeam_deque::Steal::Retry => Steal::Retry,
        }
    }

    /// A worker's own queue; only its worker pushes and pops.
    pub(crate) struct LocalQueue(crossbeam_deque::Worker<Notified>);

    /// Another worker's view of a local queue.
    pub(crate) struct Stealer(crossbeam_deque::Stealer<Notified>);

    /// The runtime-wide queue for work arriving from outside the workers.
    #[derive(Default)]
    pub(crate) struct Injector(crossbeam_deque::Injector<Notified>);

    impl LocalQueue {
        pub(crate) fn new() -> (LocalQueue, Stealer) {
            let worker = crossbeam_deque::Worker::new_fifo();
            let stealer = worker.stealer();
            (LocalQueue(worker), Stealer(stealer))
        }

        pub(crate) fn push(&self, task: Notified) {
            self.0.push(task)
        }

        pub(crate) fn pop(&self) -> Option<Notified> {
            self.0.pop()
        }

        pub(crate) fn is_empty(&self) -> bool {
            self.0.is_empty()
        }
    }

    impl Stealer {
        pub(crate) fn is_empty(&self) -> bool {
            self.0.is_empty()
        }

        /// Moves half of this queue (rounded up) into `dest` and pops one of them.
        pub(crate) fn steal_half_and_pop(&self, dest: &LocalQueue) -> Steal {
            let half = self.0.len().div_ceil(2).max(1);
            convert(self.0.steal_batch_with_limit_and_pop(&dest.0, half))
        }
    }

    impl Injector {
        pub(crate) fn push(&self, task: Notified) {
            self.0.push(task)
        }

        pub(crate) fn is_empty(&self) -> bool {
            self.0.is_empty()
        }

        pub(crate) fn steal(&self) -> Steal {
            convert(self.0.steal())
        }

        /// Moves up to `limit` processes into `dest` and pops one of them.
        pub(crate) fn steal_batch_and_pop(&self, dest: &LocalQueue, limit: usize) -> Steal {
            convert(self.0.steal_batch_with_limit_and_pop(&dest.0, limit))
        }
    }
}

#[cfg(loom)]
mod imp {
    use super::Steal;
    use crate::loom::sync::{Arc, Mutex};
    use crate::task::Notified;
    use std::collections::VecDeque;

    type Deque = Arc<Mutex<VecDeque<Notified>>>;

    pub(crate) struct LocalQueue(Deque);
    pub(crate) struct Stealer(Deque);
    #[derive(Default)]
    pub(crate) struct Injector(Mutex<VecDeque<Notified>>);

    impl LocalQueue {
        pub(crate) fn new() -> (LocalQueue, Stealer) {
            let deque: Deque = Arc::new(Mutex::new(VecDeque::new()));
            (LocalQueue(deque.clone()), Stealer(deque))
        }

        pub(crate) fn push(&self, task: Notified) {
            self.0.lock().push_back(task)
        }

        pub(crate) fn pop(&self) -> Option<Notified> {
            self.0.lock().pop_front()
        }

        pub(crate) fn is_empty(&self) -> bool {
            self.0.lock().is_empty()
        }
    }

    /// Takes up to `limit` from the front of `src`, then (with `src` unlocked, so two
    /// workers stealing from each other cannot deadlock) moves all but the first to `dest`.
    fn move_batch(
        src: &Mutex<VecDeque<Notified>>,
        dest: &LocalQueue,
        limit: impl FnOnce(usize) -> usize,
    ) -> Steal {
        let batch: Vec<Notified> = {
            let mut src = src.lock();
            let len = src.len();
            src.drain(..limit(len).min(len)).collect()
        };
        let mut batch = batch.into_iter();
        let Some(first) = batch.next() else {
            return Steal::Empty;
        };
        dest.0.lock().extend(batch);
        Steal::Success(first)
    }

    impl Stealer {
        pub(crate) fn is_empty(&self) -> bool {
            self.0.lock().is_empty()
        }

        pub(crate) fn steal_half_and_pop(&self, dest: &LocalQueue) -> Steal {
            move_batch(&self.0, dest, |len| len.div_ceil(2).max(1))
        }
    }

    impl Injector {
        pub(crate) fn push(&self, task: Notified) {
            self.0.lock().push_back(task)
        }

        pub(crate) fn is_empty(&self) -> bool {
            self.0.lock().is_empty()
        }

        pub(crate) fn steal(&self) -> Steal {
            match self.0.lock().pop_front() {
                Some(task) => Steal::Success(task),
                None => Steal::Empty,
            }
        }

        pub(crate) fn steal_batch_and_pop(&self, dest: &LocalQueue, limit: usize) -> Steal {
            move_batch(&self.0, dest, |_| limit)
        }
    }
}

pub(crate) use imp::{Injector, LocalQueue, Stealer};
