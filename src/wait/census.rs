//! The census of wait sites: every channel that has had a waiting entry linked in it,
//! so that the wait graph (`runtime/wait_graph.rs`) can say who waits where, alts
//! included (a process's own wait record names one channel at most).
//!
//! A channel joins when its first entry is linked, at most once, and leaves when it
//! drops (its [`Enrolment`] is its first field, so it goes first), so the hot paths pay
//! one load of a flag that is already set. The census reaches the channels through raw
//! pointers that stay valid while the census lock is held: a channel leaves under that
//! lock before any of its other fields goes.
//!
//! Lock order. A channel joins while holding its own lock (it is linking an entry), so
//! it takes the census lock inside a channel lock. A survey, which holds the census lock,
//! therefore only *tries* each channel's lock; a channel that is busy is retried after
//! the census lock was let go (`tuning::CENSUS_SURVEY_ROUNDS` times at most), so neither
//! side can wait for the other.
//!
//! A channel leaked with `mem::forget` stays enrolled, pointing at memory that stays
//! valid; the census then keeps it reachable, so a leak checker does not report it.
//!
//! Nothing here orders anything a protocol relies on: the flags and locks are std types,
//! not loom's, and the data is a diagnostic snapshot.

use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::tuning::CENSUS_SURVEY_ROUNDS;
use crate::wait::claim::OwnerTag;

/// What a waiting entry does on its channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Op {
    /// A send offering a value.
    Send,
    /// A receive waiting for a value.
    Recv,
    /// A `closed()` future or `closed` arm.
    Closed,
    /// A `poll_recv` reader (the `Stream`).
    Read,
}

/// One waiting entry: who waits, and for what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Waiting {
    pub(crate) owner: OwnerTag,
    pub(crate) op: Op,
}

/// A channel, as the census sees it.
///
/// Surveys call these methods from any thread, even for a channel whose `T` is not
/// `Send`, so they must touch only what is safe to share across threads whatever `T`
/// is: the id, the capacity, the home, the lock, and under it the wait lists' links
/// and the linked entries' claim flags; never a value.
pub(crate) trait Site {
    /// The channel's id, as in dumps.
    fn id(&self) -> u64;

    /// Its kind, for a picture: `rendezvous`, `bounded(16)`, `unbounded`.
    fn kind(&self) -> String;

    /// True once something outside the runtime that first used it may use it
    /// (`chan/home.rs`).
    fn is_foreign(&self) -> bool;

    /// Reports every linked entry to `out`, under the channel's lock; `false`, having
    /// reported nothing, if the lock is taken.
    fn try_waiting(&self, out: &mut dyn FnMut(Waiting)) -> bool;
}

/// A site's address, lifetime erased: valid while enrolled (module docs).
struct SitePtr(NonNull<dyn Site>);

// SAFETY: a survey on another thread touches only what `Site` promises is safe to share
// across threads whatever the channel's `T` (see `Site`); the pointer itself is only
// sent to be used under the census lock.
unsafe impl Send for SitePtr {}

/// Enrolled sites by channel id.
static CENSUS: Mutex<Option<HashMap<u64, SitePtr>>> = Mutex::new(None);

fn census() -> MutexGuard<'static, Option<HashMap<u64, SitePtr>>> {
    // A panic under the lock (an allocation failure, a survey's callback) can only come
    // between two whole changes of the map: a poisoned map is still consistent.
    CENSUS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A channel's membership in the census: joined at most once, left when dropped.
#[derive(Debug)]
pub(crate) struct Enrolment {
    id: u64,
    joined: AtomicBool,
}

impl Enrolment {
    /// The membership of the site with id `id`, not joined yet.
    pub(crate) fn new(id: u64) -> Enrolment {
        Enrolment {
            id,
            joined: AtomicBool::new(false),
        }
    }

    /// Enrols `site` unless it already is (one load when it is).
    ///
    /// # Safety
    /// `self` is a field of `site`, declared before every field that `site`'s methods
    /// read, so that it drops (and leaves the census) before they do; `site` has no
    /// `Drop` of its own (which would run before its fields drop, while still enrolled),
    /// and does not move while enrolled (it lives in its `Arc` from creation to drop);
    /// and `site`'s id is the one `self` was made with.
    #[inline]
    pub(crate) unsafe fn join(&self, site: &dyn Site) {
        // Relaxed: set once, under the census lock, and re-checked there.
        if !self.joined.load(Ordering::Relaxed) {
            // SAFETY: per the caller.
            unsafe { self.join_cold(site) };
        }
    }

    /// # Safety
    /// As [`join`](Self::join).
    #[cold]
    unsafe fn join_cold(&self, site: &dyn Site) {
        debug_assert_eq!(site.id(), self.id);
        let mut census = census();
        // Relaxed: the census lock orders the flag with the map.
        if self.joined.swap(true, Ordering::Relaxed) {
            return;
        }
        // SAFETY: only the lifetime is erased; the site leaves before the memory its
        // methods read goes (the caller's contract), and every use of the pointer holds
        // the census lock.
        let ptr: NonNull<dyn Site> = unsafe {
            std::mem::transmute::<NonNull<dyn Site + '_>, NonNull<dyn Site + 'static>>(
                NonNull::from(site),
            )
        };
        census
            .get_or_insert_with(HashMap::new)
            .insert(self.id, SitePtr(ptr));
    }
}

impl Drop for Enrolment {
    fn drop(&mut self) {
        if *self.joined.get_mut() {
            let mut census = census();
            if let Some(map) = census.as_mut() {
                map.remove(&self.id);
                if map.is_empty() {
                    // Give the memory back: a program whose channels are all gone holds
                    // none for the census (the soak test checks the heap's baseline).
                    *census = None;
                }
            }
        }
    }
}

/// Calls `f` with each enrolled site's id, kind, foreignness and linked entries. `f`
/// runs under the census lock: it must not drop a channel (whose leaving would take that
/// lock again). A site whose lock
/// stays taken through every round is reported with no entries.
pub(crate) fn survey(mut f: impl FnMut(u64, String, bool, &[Waiting])) {
    let mut pending: Option<Vec<u64>> = None;
    let mut entries = Vec::new();
    for round in 0..CENSUS_SURVEY_ROUNDS {
        let mut busy = Vec::new();
        {
            let census = census();
            let Some(map) = census.as_ref() else { return };
            let ids: Vec<u64> = match &pending {
                None => map.keys().copied().collect(),
                Some(pending) => pending.clone(),
            };
            for id in ids {
                let Some(SitePtr(site)) = map.get(&id) else {
                    continue; // left meanwhile
                };
                // SAFETY: enrolled, and the census lock is held (module docs).
                let site = unsafe { site.as_ref() };
                entries.clear();
                let last_round = round + 1 == CENSUS_SURVEY_ROUNDS;
                if site.try_waiting(&mut |w| entries.push(w)) || last_round {
                    f(site.id(), site.kind(), site.is_foreign(), &entries);
                } else {
                    busy.push(id);
                }
            }
        }
        if busy.is_empty() {
            return;
        }
        pending = Some(busy);
        std::thread::yield_now();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct Fake {
        enrolment: Enrolment,
        id: u64,
        busy: AtomicBool,
    }

    impl Site for Fake {
        fn id(&self) -> u64 {
            self.id
        }
        fn kind(&self) -> String {
            "fake".into()
        }
        fn is_foreign(&self) -> bool {
            false
        }
        fn try_waiting(&self, out: &mut dyn FnMut(Waiting)) -> bool {
            if self.busy.load(Ordering::Relaxed) {
                return false;
            }
            out(Waiting {
                owner: OwnerTag::Process(self.id as usize),
                op: Op::Recv,
            });
            true
        }
    }

    fn fake(id: u64, busy: bool) -> Box<Fake> {
        Box::new(Fake {
            enrolment: Enrolment::new(id),
            id,
            busy: AtomicBool::new(busy),
        })
    }

    fn seen(ids: &[u64]) -> Vec<(u64, usize)> {
        let mut seen = Vec::new();
        survey(|id, _, _, entries| {
            if ids.contains(&id) {
                seen.push((id, entries.len()));
            }
        });
        seen.sort();
        seen
    }

    #[test]
    fn a_site_is_surveyed_from_its_first_join_until_it_drops() {
        let (a, b) = (fake(u64::MAX - 1, false), fake(u64::MAX - 2, false));
        let ids = [a.id, b.id];
        assert_eq!(seen(&ids), []);
        // SAFETY: the enrolment is `Fake`'s first field, made with its id.
        unsafe {
            a.enrolment.join(&*a);
            a.enrolment.join(&*a); // a second join is a no-op
            b.enrolment.join(&*b);
        }
        assert_eq!(seen(&ids), [(b.id, 1), (a.id, 1)]);
        drop(a);
        assert_eq!(seen(&ids), [(b.id, 1)]);
        drop(b);
        assert_eq!(seen(&ids), []);
    }

    #[test]
    fn a_site_whose_lock_stays_taken_is_reported_without_entries() {
        let busy = fake(u64::MAX - 3, true);
        // SAFETY: the enrolment is `Fake`'s first field, made with its id.
        unsafe { busy.enrolment.join(&*busy) };
        assert_eq!(seen(&[busy.id]), [(busy.id, 0)]);
        busy.busy.store(false, Ordering::Relaxed);
        assert_eq!(seen(&[busy.id]), [(busy.id, 1)]);
    }
}
