//! Unique ids for processes (and channels): drawn from per-thread blocks of one global
//! counter, so making an id writes nothing shared except once per block.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::tuning::ID_BLOCK;

/// A global counter handing out blocks of ids. Not part of any protocol, so it is a
/// plain std atomic rather than a loom one.
pub(crate) struct IdSource {
    next_block: AtomicU64,
}

impl IdSource {
    pub(crate) const fn new() -> IdSource {
        IdSource {
            next_block: AtomicU64::new(1),
        }
    }

    fn take_block(&self) -> u64 {
        // Relaxed: ids need uniqueness only, which the atomic add gives in any order.
        self.next_block.fetch_add(ID_BLOCK, Ordering::Relaxed)
    }
}

/// One thread's current block: the next id and the end of the block.
pub(crate) struct IdBlock {
    next: Cell<u64>,
    end: Cell<u64>,
}

impl IdBlock {
    pub(crate) const fn new() -> IdBlock {
        IdBlock {
            next: Cell::new(0),
            end: Cell::new(0),
        }
    }

    pub(crate) fn next(&self, source: &IdSource) -> u64 {
        let mut id = self.next.get();
        if id == self.end.get() {
            id = source.take_block();
            self.end.set(id + ID_BLOCK);
        }
        self.next.set(id + 1);
        id
    }
}

static PROCESS_IDS: IdSource = IdSource::new();
static CHANNEL_IDS: IdSource = IdSource::new();

std::thread_local! {
    static PROCESS_BLOCK: IdBlock = const { IdBlock::new() };
    static CHANNEL_BLOCK: IdBlock = const { IdBlock::new() };
}

/// A new process id: unique in this OS process, never reused, never 0.
pub(crate) fn next_process_id() -> u64 {
    PROCESS_BLOCK
        .try_with(|block| block.next(&PROCESS_IDS))
        // During thread-local teardown: take a block of one's own.
        .unwrap_or_else(|_| PROCESS_IDS.take_block())
}

/// A new channel id: unique in this OS process, never reused, never 0.
pub(crate) fn next_channel_id() -> u64 {
    CHANNEL_BLOCK
        .try_with(|block| block.next(&CHANNEL_IDS))
        .unwrap_or_else(|_| CHANNEL_IDS.take_block())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_across_threads_and_small() {
        let source = IdSource::new();
        let ids: Vec<u64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        let block = IdBlock::new();
                        (0..1000).map(|_| block.next(&source)).collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let set: HashSet<u64> = ids.iter().copied().collect();
        assert_eq!(set.len(), 4000);
        assert!(!set.contains(&0));
        assert!(*set.iter().max().unwrap() < 4 * 1000 + 4 * ID_BLOCK);
    }
}
