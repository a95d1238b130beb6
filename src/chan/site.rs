//! A channel as a wait site of the census (`wait/census.rs`): it joins when its first
//! entry is linked, and a survey lists its entries' owners under its lock.

use crate::chan::core::Chan;
use crate::wait::census::{Site, Waiting};

impl<T> Chan<T> {
    /// Joins the census unless it already has (one load then). Called while linking an
    /// entry.
    #[inline]
    pub(crate) fn enrol(&self) {
        // SAFETY: the enrolment is the channel's first field, made with its id; `Chan`
        // has no `Drop` of its own, and lives in the `Arc` that `chan::pair` makes for
        // it from creation to drop.
        unsafe { self.enrolment.join(self) }
    }
}

impl<T> Site for Chan<T> {
    fn id(&self) -> u64 {
        Chan::id(self)
    }

    fn kind(&self) -> String {
        match self.cap() {
            None => "unbounded".to_owned(),
            Some(0) => "rendezvous".to_owned(),
            Some(cap) => format!("bounded({cap})"),
        }
    }

    fn is_foreign(&self) -> bool {
        Chan::is_foreign(self)
    }

    fn try_waiting(&self, out: &mut dyn FnMut(Waiting)) -> bool {
        let Some(state) = self.try_lock() else {
            return false;
        };
        state.for_each_entry(&mut |op, claim| {
            // An entry of a choice that fired on another channel stays linked until
            // its owner unlinks it: it no longer waits.
            if claim.is_waiting() {
                out(Waiting {
                    owner: claim.owner_tag(),
                    op,
                })
            }
        });
        true
    }
}
