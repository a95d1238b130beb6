//! Groups of processes (the processes of one `JoinSet`), for dumps and the wait graph:
//! which group a live process belongs to, and where each group was made.
//!
//! A side table rather than a field of the process header: the header is one cache line
//! that every process pays for, and only processes spawned into a group need the entry.
//! The table is global, keyed by process id (unique across runtimes), and touched only
//! when a group is made, a process joins or leaves one, and a dump is taken. It is the
//! standard library's lock and counter, not the loom facade's: a process-wide static
//! outside every protocol a model checks, as the channel census is (`wait/census.rs`).

use std::collections::HashMap;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Group ids; 0 is never one.
static NEXT_GROUP: AtomicU64 = AtomicU64::new(1);

/// Where each group was made, and the group of each process in one.
#[derive(Default)]
struct Table {
    sites: HashMap<u64, &'static Location<'static>>,
    members: HashMap<u64, u64>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn table() -> MutexGuard<'static, Option<Table>> {
    // Nothing but map inserts and removes runs under the lock: a panic cannot leave it
    // half updated.
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A group of processes, as a dump names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Group {
    pub(crate) id: u64,
    pub(crate) made_at: &'static Location<'static>,
}

/// Makes a group, made at `made_at`.
pub(crate) fn new_group(made_at: &'static Location<'static>) -> u64 {
    // Relaxed: ids need uniqueness only.
    let id = NEXT_GROUP.fetch_add(1, Ordering::Relaxed);
    table()
        .get_or_insert_with(Table::default)
        .sites
        .insert(id, made_at);
    id
}

/// Forgets group `group` (its members leave it one by one, before or after).
pub(crate) fn drop_group(group: u64) {
    if let Some(table) = table().as_mut() {
        table.sites.remove(&group);
    }
}

/// Process `process` joins group `group`.
pub(crate) fn join(group: u64, process: u64) {
    table()
        .get_or_insert_with(Table::default)
        .members
        .insert(process, group);
}

/// Process `process` leaves its group.
pub(crate) fn leave(process: u64) {
    if let Some(table) = table().as_mut() {
        table.members.remove(&process);
    }
}

/// The group of each of `processes` that is in one (for one dump, under one lock).
pub(crate) fn of(processes: impl Iterator<Item = u64>) -> HashMap<u64, Group> {
    let table = table();
    let Some(table) = table.as_ref() else {
        return HashMap::new();
    };
    if table.members.is_empty() {
        return HashMap::new();
    }
    processes
        .filter_map(|process| {
            let &id = table.members.get(&process)?;
            let &made_at = table.sites.get(&id)?;
            Some((process, Group { id, made_at }))
        })
        .collect()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_process_shows_in_its_group_until_it_leaves() {
        let here = Location::caller();
        let group = new_group(here);
        join(group, u64::MAX - 7);
        let found = of([u64::MAX - 7, u64::MAX - 8].into_iter());
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[&(u64::MAX - 7)],
            Group {
                id: group,
                made_at: here
            }
        );
        leave(u64::MAX - 7);
        assert!(of([u64::MAX - 7].into_iter()).is_empty());
        drop_group(group);
    }
}
