//! What the console learns by watching over time: how long polls take, how long each
//! process has waited, and the history its plots draw.
//!
//! Poll times come from sampling, not from clocks on the workers' path: each worker
//! publishes the id of the process it is polling (a store before and after each poll,
//! with the feature only), and the console's thread reads it every
//! [`CONSOLE_SAMPLE_PERIOD`]. A poll that `k` consecutive samples see (the same process,
//! the worker's poll count unchanged) lasted at least `k - 1` periods: that is its
//! length as reported, so a long poll is never overstated. Time spent polling adds one
//! period per sample that finds the process being polled: over many polls, an unbiased
//! estimate of the time, however short each poll is.

use std::collections::{HashMap, VecDeque};
use std::panic::Location;
use std::time::{Duration, Instant};

use crate::loom::sync::atomic::Ordering;
use crate::runtime::{Metrics, ProcessInfo, Shared};
use crate::tuning::{
    BUSY_REQUEUES_PER_TICK, CONSOLE_HISTORY, CONSOLE_SAMPLE_PERIOD, LONG_POLL_WARNING,
    LONG_POLLS_KEPT,
};

/// The last sample of one worker.
#[derive(Default, Clone, Copy)]
struct WorkerSample {
    /// The worker's poll count then.
    polls: u64,
    /// The process it was polling (0: none).
    id: u64,
    /// Consecutive samples that found this same poll in progress.
    run: u32,
}

/// What the console has learnt of one process.
#[derive(Debug, Clone)]
pub(super) struct Figures {
    /// Samples that found it being polled.
    pub(super) busy_samples: u64,
    /// Its longest poll, as sampled.
    pub(super) longest_poll: Duration,
    /// The wait it was last seen in (its wait word), and since when.
    wait_word: u64,
    pub(super) waiting_since: Option<Instant>,
    /// Its poll and requeue counts at the last tick, and the increase over that tick.
    polls_at_tick: u64,
    requeues_at_tick: u64,
    pub(super) polls_last_tick: u64,
    pub(super) requeues_last_tick: u64,
}

impl Figures {
    fn new() -> Figures {
        Figures {
            busy_samples: 0,
            longest_poll: Duration::ZERO,
            wait_word: 0,
            waiting_since: None,
            polls_at_tick: 0,
            requeues_at_tick: 0,
            polls_last_tick: 0,
            requeues_last_tick: 0,
        }
    }

    /// Time spent polling, as sampled.
    pub(super) fn busy(&self) -> Duration {
        CONSOLE_SAMPLE_PERIOD * u32::try_from(self.busy_samples).unwrap_or(u32::MAX)
    }

    /// Woken inside its own polls, again and again, over the last tick.
    pub(super) fn is_busy_waking(&self) -> bool {
        self.requeues_last_tick >= BUSY_REQUEUES_PER_TICK
            && self.requeues_last_tick * 2 > self.polls_last_tick
    }
}

/// A poll that held its worker at least [`LONG_POLL_WARNING`].
#[derive(Debug, Clone)]
pub(super) struct LongPoll {
    pub(super) process: u64,
    pub(super) spawned_at: Option<&'static Location<'static>>,
    pub(super) worker: usize,
    /// Its length as sampled (a lower bound).
    pub(super) length: Duration,
    /// Still running at the last sample.
    pub(super) ongoing: bool,
    /// When it started, about.
    pub(super) started: Instant,
    /// The worker's poll count during it, which tells one poll from the next.
    pub(super) polls: u64,
}

/// One point of the plots.
#[derive(Debug, Clone)]
pub(super) struct Point {
    pub(super) at: Instant,
    pub(super) metrics: Metrics,
}

/// The console's memory of the runtime.
pub(super) struct Sampler {
    workers: Vec<WorkerSample>,
    figures: HashMap<u64, Figures>,
    spawn_sites: HashMap<u64, &'static Location<'static>>,
    long_polls: VecDeque<LongPoll>,
    history: VecDeque<Point>,
}

impl Sampler {
    pub(super) fn new(shared: &Shared) -> Sampler {
        Sampler {
            workers: vec![WorkerSample::default(); shared.workers()],
            figures: HashMap::new(),
            spawn_sites: HashMap::new(),
            long_polls: VecDeque::with_capacity(LONG_POLLS_KEPT),
            history: VecDeque::with_capacity(CONSOLE_HISTORY),
        }
    }

    /// Looks at what each worker is polling (module docs).
    pub(super) fn sample(&mut self, shared: &Shared, now: Instant) {
        for (index, last) in self.workers.iter_mut().enumerate() {
            // Relaxed: figures. The id is written before the poll starts counting, so a
            // sample may pair the previous poll's count with the new id for one period:
            // it then starts a run that the next sample restarts, which shows as one
            // sample.
            let polls = shared.held(index).polls();
            let id = shared.counters(index).polling.load(Ordering::Relaxed);
            let same = id != 0 && id == last.id && polls == last.polls;
            if !same {
                // The poll the last sample saw has ended.
                for long in self.long_polls.iter_mut() {
                    if long.worker == index && long.polls == last.polls {
                        long.ongoing = false;
                    }
                }
            }
            *last = WorkerSample {
                polls,
                id,
                run: if same {
                    last.run + 1
                } else {
                    u32::from(id != 0)
                },
            };
            if id == 0 {
                continue;
            }
            let figures = self.figures.entry(id).or_insert_with(Figures::new);
            figures.busy_samples += 1;
            let length = CONSOLE_SAMPLE_PERIOD * (last.run - 1);
            figures.longest_poll = figures.longest_poll.max(length);
            if length >= LONG_POLL_WARNING {
                let spawned_at = self.spawn_sites.get(&id).copied();
                note_long_poll(
                    &mut self.long_polls,
                    index,
                    id,
                    polls,
                    length,
                    now,
                    spawned_at,
                );
            }
        }
    }

    /// Once a [`CONSOLE_TICK`](crate::tuning::CONSOLE_TICK): a point of history, the
    /// processes' waits aged, their wake counts differenced, the ended ones forgotten.
    pub(super) fn tick(&mut self, shared: &Shared, processes: &[ProcessInfo], now: Instant) {
        if self.history.len() == CONSOLE_HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(Point {
            at: now,
            metrics: shared.metrics(),
        });
        self.update(shared, processes, now);
    }

    /// Ages the waits and differences the counts of `processes`, and forgets the
    /// processes that ended.
    fn update(&mut self, shared: &Shared, processes: &[ProcessInfo], now: Instant) {
        let counts = super::snapshot::counts(shared);
        let mut live = HashMap::with_capacity(processes.len());
        for p in processes {
            live.insert(p.id, ());
            self.spawn_sites.insert(p.id, p.spawned_at);
            let figures = self.figures.entry(p.id).or_insert_with(Figures::new);
            if let Some(c) = counts.get(&p.id) {
                figures.polls_last_tick = c.polls - figures.polls_at_tick.min(c.polls);
                figures.requeues_last_tick = c.requeues - figures.requeues_at_tick.min(c.requeues);
                figures.polls_at_tick = c.polls;
                figures.requeues_at_tick = c.requeues;
                if c.wait_word == 0 || p.waiting_on.is_none() {
                    figures.waiting_since = None;
                    figures.wait_word = 0;
                } else if c.wait_word != figures.wait_word || figures.waiting_since.is_none() {
                    figures.wait_word = c.wait_word;
                    figures.waiting_since = Some(now);
                }
            }
        }
        self.figures.retain(|id, _| live.contains_key(id));
        self.spawn_sites.retain(|id, _| live.contains_key(id));
    }

    /// The figures of process `id`, if the console has seen it.
    pub(super) fn figures(&self, id: u64) -> Option<&Figures> {
        self.figures.get(&id)
    }

    /// The long polls, newest first.
    pub(super) fn long_polls(&self) -> impl Iterator<Item = &LongPoll> {
        self.long_polls.iter()
    }

    /// The plots' points, oldest first.
    pub(super) fn history(&self) -> &VecDeque<Point> {
        &self.history
    }
}

/// Records (or lengthens) the long poll of process `id` on `worker`.
fn note_long_poll(
    long_polls: &mut VecDeque<LongPoll>,
    worker: usize,
    id: u64,
    polls: u64,
    length: Duration,
    now: Instant,
    spawned_at: Option<&'static Location<'static>>,
) {
    if let Some(long) = long_polls
        .iter_mut()
        .find(|l| l.worker == worker && l.polls == polls && l.process == id)
    {
        long.length = length;
        long.ongoing = true;
        return;
    }
    if long_polls.len() == LONG_POLLS_KEPT {
        long_polls.pop_back();
    }
    long_polls.push_front(LongPoll {
        process: id,
        spawned_at,
        worker,
        length,
        ongoing: true,
        started: now.checked_sub(length).unwrap_or(now),
        polls,
    });
}
