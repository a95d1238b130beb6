//! The census of wait sites: every channel that has had a waiting entry linked in it,
//! so that the wait graph (`runtime/wait_graph.rs`) can say who waits where, alts
//! included (a process's own wait record names one channel at most), and deadlock
//! reports (`runtime/deadlock.rs`) can name each channel by where it was made.
//!
//! A site also tells, per side, which process last used it ([`LastUsers`]): the wait
//! graph draws, from a channel someone waits on, a dashed edge to whoever last used the
//! other side, the process that could have ended the wait.
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
use std::panic::Location;
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

/// Which process last used each side of a site: the address of its header, as
/// [`OwnerTag::Process`] has it (a number to compare with the addresses of live
/// processes, never a pointer to follow), or of the `block_on` future's parker; 0 when
/// unknown (never used, or last used by something csp cannot name). A hint: a process
/// that ended may have left its address to a new one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LastUsers {
    /// The last user of the sending side: a send, or an alt's send arm.
    pub(crate) sender: usize,
    /// The last user of the receiving side: a receive, a `poll_recv`, an alt's recv arm.
    pub(crate) receiver: usize,
}

/// A channel, as the census sees it.
///
/// Surveys call these methods from any thread, even for a channel whose `T` is not
/// `Send`, so they must touch only what is safe to share across threads whatever `T`
/// is: the id, the capacity, the birthplace, the home, the last users, the lock, and
/// under it the wait lists' links and the linked entries' claim flags; never a value.
pub(crate) trait Site {
    /// The channel's id, as in dumps.
    fn id(&self) -> u64;

    /// Its kind, for a picture: `rendezvous`, `bounded(16)`, `unbounded`.
    fn kind(&self) -> String;

    /// Where it was made: the caller of `csp::channel`, `bounded`, `unbounded` (or of
    /// whatever public function made it, through `#[track_caller]`), else a place in
    /// csp itself (a channel csp makes for its own use).
    fn made_at(&self) -> &'static Location<'static>;

    /// Who last used each of its sides (a snapshot of hints, read without the lock).
    fn last_users(&self) -> LastUsers;

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
    /// and does not move while enrolled (it lives in its `Arc`, or a cancellation
    /// token's `Box`, from creation to drop); and `site`'s id is the one `self` was made
    /// with.
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

/// A site as a survey found it.
#[derive(Debug)]
pub(crate) struct Surveyed<'a> {
    /// The channel's id.
    pub(crate) id: u64,
    /// Its kind ([`Site::kind`]).
    pub(crate) kind: String,
    /// True once something outside its runtime may use it ([`Site::is_foreign`]).
    pub(crate) foreign: bool,
    /// Where it was made ([`Site::made_at`]).
    pub(crate) made_at: &'static Location<'static>,
    /// Who last used each side ([`Site::last_users`]).
    pub(crate) last_users: LastUsers,
    /// Its linked entries that still wait.
    pub(crate) waiting: &'a [Waiting],
}

impl Surveyed<'_> {
    /// The channel's name in reports and pictures: `channel #7 (rendezvous, made at
    /// src/main.rs:3:5)`.
    pub(crate) fn name(&self) -> String {
        channel_name(self.id, &self.kind, self.made_at)
    }
}

/// A channel's name in reports and pictures: its id, its kind and where it was made.
pub(crate) fn channel_name(id: u64, kind: &str, made_at: &Location<'_>) -> String {
    format!("channel #{id} ({kind}, made at {made_at})")
}

/// Calls `f` with each enrolled site as found ([`Surveyed`]). `f` runs under the census
/// lock: it must not drop a channel (whose leaving would take that lock again). A site
/// whose lock stays taken through every round is reported with no entries.
pub(crate) fn survey(mut f: impl FnMut(&Surveyed<'_>)) {
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
                    f(&Surveyed {
                        id: site.id(),
                        kind: site.kind(),
                        foreign: site.is_foreign(),
                        made_at: site.made_at(),
                        last_users: site.last_users(),
                        waiting: &entries,
                    });
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

/// The names ([`channel_name`]) of the enrolled sites among `ids`, by id: no channel
/// lock is taken.
pub(crate) fn names(ids: &[u64]) -> HashMap<u64, String> {
    let census = census();
    let Some(map) = census.as_ref() else {
        return HashMap::new();
    };
    ids.iter()
        .filter_map(|&id| {
            let SitePtr(site) = map.get(&id)?;
            // SAFETY: enrolled, and the census lock is held (module docs).
            let site = unsafe { site.as_ref() };
            Some((id, channel_name(id, &site.kind(), site.made_at())))
        })
        .collect()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct Fake {
        enrolment: Enrolment,
        id: u64,
        made_at: &'static Location<'static>,
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
        fn made_at(&self) -> &'static Location<'static> {
            self.made_at
        }
        fn last_users(&self) -> LastUsers {
            LastUsers {
                sender: 8,
                receiver: 16,
            }
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

    #[track_caller]
    fn fake(id: u64, busy: bool) -> Box<Fake> {
        Box::new(Fake {
            enrolment: Enrolment::new(id),
            id,
            made_at: Location::caller(),
            busy: AtomicBool::new(busy),
        })
    }

    fn seen(ids: &[u64]) -> Vec<(u64, usize)> {
        let mut seen = Vec::new();
        survey(|site| {
            if ids.contains(&site.id) {
                seen.push((site.id, site.waiting.len()));
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

    #[test]
    fn a_survey_names_each_site_by_kind_and_birthplace_with_its_last_users() {
        let site = fake(u64::MAX - 4, false);
        let line = line!() - 1;
        // SAFETY: the enrolment is `Fake`'s first field, made with its id.
        unsafe { site.enrolment.join(&*site) };
        let mut found = None;
        survey(|s| {
            if s.id == site.id {
                found = Some((s.name(), s.last_users));
            }
        });
        let expected = format!("channel #{} (fake, made at {}:{line}:20)", site.id, file!());
        let users = LastUsers {
            sender: 8,
            receiver: 16,
        };
        assert_eq!(found, Some((expected.clone(), users)));
        assert_eq!(
            names(&[site.id, u64::MAX - 5]),
            HashMap::from([(site.id, expected)])
        );
    }
}
