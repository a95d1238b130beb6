//! Choice: the engine of a choice over several arms (`choice.rs`) behind [`Select`] and
//! `alt!`/`prialt!` (`macro_support.rs`), on the claim flag and operation interface of
//! the waiting layer (`wait/`); and the quick pass an `alt!` of receives runs before it
//! builds its arms (`quick.rs`).
//!
//! May use: `wait`, `chan`, `time`, `runtime`, `task` and below. Nothing but `par`,
//! `pipe` and the crate root reaches into it.
//!
//! # Every shortcut keeps a choice linearizable
//!
//! A choice fires an arm only if that arm could complete at the moment it fired, and a
//! choice that does not wait reports "none ready" only if there was one moment at which
//! no arm could complete (Go's rule for `select` with `default`, crossbeam's for
//! `try_select`). Each fast path keeps that:
//!
//! - **The quick pass** (`Plan::try_each`) tries the arms one at a time, each under its
//!   own channel's lock. An arm it fires completed under that lock, so at that moment:
//!   the choice's flag is idle, registered nowhere, so no counterpart can fire another
//!   arm meanwhile, and nothing else took effect. A pass that fires nothing proves
//!   nothing (between two tries one arm's channel may fill as another's empties), so it
//!   is never the last word: a waiting choice then locks every channel and tries again
//!   before it registers (`Choice::start`), and a non-waiting one makes that same pass
//!   under every lock (`Choice::try_now`); what a pass under all the locks finds held
//!   at one moment, the moment it held them all.
//! - **The readiness hints** (`chan/core.rs`) let the quick pass skip an arm without its
//!   lock. A skip only ever leads to "not fired in the quick pass", which the locked
//!   pass settles without hints; and a hint never says "not ready" to a thread ordered
//!   after the operation that made the arm ready.
//! - **The `alt!` quick pass on receivers** (`quick_pass`, `quick_recv`), run before an
//!   all-receive `alt!` builds its arms, is the same quick pass on `try_recv`s: a
//!   receive it fires completed under its channel's lock; when it fires nothing, the
//!   built choice decides (its own quick pass, then the locked pass).
//! - **A plain `recv`, `send` or `closed`** (`wait/single.rs`) tries and, if it cannot
//!   complete, registers under one lock: there is no moment between the two. A value
//!   handed to a single waiting counterpart is claimed, moved and unlinked under that
//!   counterpart's channel lock, with the counterpart's flag claimed in the same
//!   critical section.
//! - **`after` and `Select::timeout`** wait as any choice does (locked pass, then
//!   registration); the timer only withdraws the choice, and an arm claimed before the
//!   withdrawal still fires. A zero timeout is thus a non-waiting choice too.

pub(crate) mod choice;
#[cfg(all(test, loom))]
mod loom_models;
pub mod macro_support;
mod quick;
mod rng;
mod select;

pub use quick::{quick_pass, quick_recv};
pub use select::{Select, SelectFuture, Selected};
