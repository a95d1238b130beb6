//! Integration tests of `par!` and `try_par!`: outputs in written order, branches as
//! parallel processes on the current (or default) runtime and spawned at the branch,
//! `par!`'s panics (every branch still ends, and the first panicking one in written
//! order is resumed), `try_par!` failing fast (the first panic or `Err` aborts every
//! other branch, and is handed on once they have all ended, their futures dropped),
//! cancellation by dropping, and cancellation by a runtime's shutdown. Every test runs
//! under a watchdog (`common::bounded`).

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::mpsc;

use futures::FutureExt;

mod common;

use common::{
    Counter, Rng, Tracked, bounded, panic_message, runtime, thread_name, wait_until,
    wait_until_no_process,
};

/// Yields `n` times, so that a branch ends after others have had a chance to run.
async fn yield_times(n: u64) {
    for _ in 0..n {
        csp::yield_now().await;
    }
}

/// Yields until `counter` reaches `n`.
async fn yield_until(counter: &Counter, n: usize) {
    while counter.get() < n {
        csp::yield_now().await;
    }
}

#[test]
fn a_tuple_holds_the_outputs_in_written_order() {
    bounded(30, || {
        let rt = runtime(2, "par-tuple");
        rt.block_on(async {
            // Each branch waits for the next one: they end in reverse written order.
            let (tx1, rx1) = csp::channel::<()>();
            let (tx2, rx2) = csp::channel::<()>();
            let (a, b, c) = csp::par!(
                async move {
                    rx1.recv().await.unwrap();
                    1u8
                },
                async move {
                    rx2.recv().await.unwrap();
                    tx1.send(()).await.unwrap();
                    "two"
                },
                async move {
                    tx2.send(()).await.unwrap();
                    String::from("three")
                },
            );
            assert_eq!((a, b, c.as_str()), (1, "two", "three"));

            let () = csp::par!();
            let one: (u64,) = csp::par!(async { 1 });
            assert_eq!(one, (1,));
        });
        assert_eq!(rt.metrics().spawned, 4);
    });
}

#[test]
fn the_replicated_form_holds_the_outputs_in_index_order() {
    bounded(30, || {
        let rt = runtime(4, "par-replicated");
        rt.block_on(async {
            let mut rng = Rng::new(7);
            let delays: Vec<u64> = (0..64).map(|_| rng.below(20)).collect();
            let squares = csp::par!(
                for (i, delay) in delays.into_iter().enumerate() => async move {
                    yield_times(delay).await;
                    i * i
                }
            );
            assert_eq!(squares, (0..64).map(|i| i * i).collect::<Vec<_>>());

            let words = vec![String::from("a"), String::from("bb"), String::from("ccc")];
            let lengths = csp::par!(for word in words => async move { word.len() },);
            assert_eq!(lengths, [1, 2, 3]);
        });
    });
}

#[test]
fn an_empty_iterator_gives_an_empty_vec_and_spawns_nothing() {
    bounded(30, || {
        let rt = runtime(1, "par-empty");
        let outputs: Vec<u8> =
            rt.block_on(async { csp::par!(for i in std::iter::empty::<u8>() => async move { i }) });
        assert!(outputs.is_empty());
        assert_eq!(rt.metrics().spawned, 0);
    });
}

#[test]
fn branches_are_processes_running_in_parallel() {
    bounded(30, || {
        let rt = runtime(2, "par-parallel");
        let caller = rt.spawn(async {
            // A rendezvous in each direction: run one after the other in one process,
            // the first branch would wait forever for the second.
            let (to_b, from_a) = csp::channel::<u32>();
            let (to_a, from_b) = csp::channel::<u32>();
            csp::par!(
                async move {
                    to_b.send(1).await.unwrap();
                    let reply = from_b.recv().await.unwrap();
                    (reply, thread_name())
                },
                async move {
                    let got = from_a.recv().await.unwrap();
                    to_a.send(got + 1).await.unwrap();
                    (got, thread_name())
                },
            )
        });
        let ((reply, thread_a), (got, thread_b)) = rt.block_on(caller).unwrap();
        assert_eq!((reply, got), (2, 1));
        // Spawned on the caller's runtime: one process for the caller, one per branch.
        assert!(thread_a.starts_with("par-parallel-"), "{thread_a}");
        assert!(thread_b.starts_with("par-parallel-"), "{thread_b}");
        assert_eq!(rt.metrics().spawned, 3);
    });
}

/// Waits until `gate` closes, then returns `line`.
async fn parked(line: u32, gate: csp::Receiver<()>) -> u32 {
    assert!(gate.recv().await.is_err());
    line
}

#[test]
fn the_process_of_each_branch_is_spawned_at_the_branch() {
    bounded(30, || {
        let rt = runtime(1, "par-location");
        rt.block_on(async {
            let (open, gate) = csp::channel::<()>();
            let mut par = pin!(async {
                csp::par!(parked(line!(), gate.clone()), parked(line!(), gate.clone()),)
            });
            assert!(futures::poll!(par.as_mut()).is_pending());
            let mut spawned_at: Vec<u32> = rt
                .processes()
                .iter()
                .map(|process| {
                    assert_eq!(process.spawned_at.file(), file!());
                    process.spawned_at.line()
                })
                .collect();
            spawned_at.sort_unstable();
            drop(open);
            let (first, second) = par.await;
            assert_eq!(spawned_at, [first, second]);
        });
    });
}

#[test]
fn from_a_plain_thread_the_branches_run_on_the_default_runtime() {
    bounded(30, || {
        let names = std::thread::spawn(|| {
            csp::block_on(async { csp::par!(for _ in 0..4 => async { thread_name() }) })
        })
        .join()
        .unwrap();
        assert_eq!(names.len(), 4);
        for name in names {
            assert!(name.starts_with("csp-worker-"), "{name}");
        }
    });
}

#[test]
fn a_panic_stops_no_branch_and_the_first_in_written_order_is_resumed() {
    // API.md: par! still waits for every branch, then resumes the panic of the first
    // panicking branch in written order: here the second branch, which panics after the
    // third has.
    bounded(30, || {
        let rt = runtime(2, "par-panics");
        let panicked = Counter::new();
        let finished = Counter::new();
        let output_drops = Counter::new();
        let par = async {
            csp::par!(
                // Completes: its output is dropped, once.
                {
                    let output_drops = output_drops.clone();
                    async move { Tracked::new(0, &output_drops) }
                },
                {
                    let panicked = panicked.clone();
                    async move {
                        yield_until(&panicked, 1).await;
                        panic!("second branch");
                    }
                },
                {
                    let panicked = panicked.clone();
                    async move {
                        panicked.incr();
                        panic!("third branch");
                    }
                },
                // Ends well after both panics: waited for, never aborted.
                {
                    let (panicked, finished) = (panicked.clone(), finished.clone());
                    async move {
                        yield_until(&panicked, 1).await;
                        yield_times(50).await;
                        finished.incr();
                    }
                },
            )
        };
        let payload = rt
            .block_on(AssertUnwindSafe(par).catch_unwind())
            .expect_err("par! resumes a branch's panic");
        assert_eq!(
            panic_message(payload.as_ref()).as_deref(),
            Some("second branch")
        );
        // All of it before par! returned: no waiting here.
        assert_eq!(finished.get(), 1, "the last branch ran to its end");
        assert_eq!(
            output_drops.get(),
            1,
            "the first branch's output is dropped once"
        );
        assert_eq!(
            rt.metrics().processes_alive,
            0,
            "a branch's process is left"
        );
    });
}

#[test]
fn a_panic_is_resumed_in_the_calling_process() {
    bounded(30, || {
        let rt = runtime(2, "par-caller");
        let panicked = Counter::new();
        let finished = Counter::new();
        let caller = {
            let (panicked, finished) = (panicked.clone(), finished.clone());
            rt.spawn(async move {
                csp::par!(for i in 0..8 => {
                    let (panicked, finished) = (panicked.clone(), finished.clone());
                    async move {
                        match i {
                            // First in written order, after branch 7 in time.
                            5 => {
                                yield_until(&panicked, 1).await;
                                panic!("branch {i}");
                            }
                            7 => {
                                panicked.incr();
                                panic!("branch {i}");
                            }
                            _ => {
                                yield_times(i).await;
                                finished.incr();
                            }
                        }
                    }
                })
            })
        };
        let err = rt.block_on(caller).unwrap_err();
        assert!(err.is_panic(), "{err}");
        assert_eq!(
            panic_message(err.into_panic().as_ref()).as_deref(),
            Some("branch 5")
        );
        assert_eq!(finished.get(), 6, "every other branch ran to its end");
        assert_eq!(rt.metrics().processes_alive, 0);
    });
}

#[test]
fn outputs_kept_are_dropped_before_the_panic_unwinds_through_block_on() {
    // A branch completes with a value whose drop panics; another branch panics after.
    // The kept output must be dropped before the panic is resumed: dropped while that
    // panic unwinds through `block_on`, its own panic would abort the process.
    bounded(30, || {
        let rt = runtime(2, "par-outputs");
        let drops = Counter::new();
        let result = catch_unwind(AssertUnwindSafe(|| {
            let drops = drops.clone();
            rt.block_on(async move {
                let (kept, ()) = csp::par!(async move { common::PanicOnDrop(drops) }, async {
                    yield_times(20).await;
                    panic!("the second branch");
                },);
                drop(kept);
            })
        }));
        let payload = result.expect_err("the second branch's panic is resumed");
        assert_eq!(
            panic_message(payload.as_ref()).as_deref(),
            Some("the second branch")
        );
        assert_eq!(drops.get(), 1, "the first branch's output is dropped once");
        assert_eq!(rt.metrics().processes_alive, 0);
    });
}

#[test]
fn outputs_kept_are_dropped_before_try_par_returns_its_error() {
    // Two branches complete with values whose drop panics; a third returns `Err` after.
    // The join drops both outputs before it returns the error, each drop's panic caught:
    // dropped with the join instead, the second would panic while the first's panic
    // unwinds, and abort the process.
    bounded(30, || {
        // One worker: the branches run in turn, so the first two have completed by the
        // time the third sees them done.
        let rt = runtime(1, "try-par-outputs");
        let drops = Counter::new();
        let completed = Counter::new();
        let result = rt.block_on(async {
            let output = |drops: &Counter, completed: &Counter| {
                let (drops, completed) = (drops.clone(), completed.clone());
                async move {
                    completed.incr();
                    Ok(common::PanicOnDrop(drops))
                }
            };
            let failing = {
                let completed = completed.clone();
                async move {
                    yield_until(&completed, 2).await;
                    Err::<(), _>("the third branch")
                }
            };
            csp::try_par!(
                output(&drops, &completed),
                output(&drops, &completed),
                failing
            )
            .map(|_| ())
        });
        assert_eq!(result, Err("the third branch"));
        assert_eq!(drops.get(), 2, "each output is dropped once");
        wait_until_no_process(&rt, 10);
    });
}

#[test]
fn a_pending_par_dropped_with_outputs_whose_drop_panics_panics_once() {
    // Two branches completed with values whose drop panics, and the join is dropped
    // while a third still runs: the first drop's panic comes out of the join's drop,
    // and the second, during that unwinding, is let go instead of aborting.
    bounded(30, || {
        let rt = runtime(1, "par-drop-outputs");
        let drops = Counter::new();
        let payload = catch_unwind(AssertUnwindSafe(|| {
            rt.block_on(async {
                let (first, second) = (drops.clone(), drops.clone());
                let mut par = pin!(async move {
                    csp::par!(
                        async move { common::PanicOnDrop(first) },
                        async move { common::PanicOnDrop(second) },
                        std::future::pending::<()>(),
                    )
                });
                assert!(futures::poll!(par.as_mut()).is_pending());
                wait_until(10, "the first two branches ended", || {
                    rt.metrics().processes_alive == 1
                });
                // The join takes both ends in, and waits on the third branch.
                assert!(futures::poll!(par.as_mut()).is_pending());
            })
        }))
        .expect_err("the first output's drop panics out of the join's drop");
        assert_eq!(
            panic_message(payload.as_ref()).as_deref(),
            Some("panic in drop")
        );
        assert_eq!(drops.get(), 2, "each output is dropped once");
        wait_until_no_process(&rt, 10);
    });
}

#[test]
fn a_panicking_worker_stops_a_try_par_pool_that_would_otherwise_wait_forever() {
    // The pool of try_par!'s example, with a panic: four workers share a queue whose
    // producer sends ten items and then waits (forever, here) for more; the worker that
    // takes item 7 panics. Only the abort of the others ends the try_par!.
    bounded(30, || {
        let rt = runtime(2, "par-pool");
        let handled = Counter::new();
        let worker_drops = Counter::new();
        let payload = rt.block_on(async {
            let (items_tx, items) = csp::bounded::<u32>(4);
            let (_more_tx, more) = csp::channel::<()>();
            let producer = async move {
                for item in 0..10 {
                    items_tx.send(item).await.unwrap();
                }
                let _ = more.recv().await; // waits for more work: never comes
                Ok::<_, ()>(())
            };
            let (handled, worker_drops) = (handled.clone(), worker_drops.clone());
            let pool = async move {
                csp::try_par!(for _ in 0..4 => {
                    let (items, handled) = (items.clone(), handled.clone());
                    let guard = Tracked::new(0, &worker_drops);
                    async move {
                        let _guard = guard;
                        while let Ok(item) = items.recv().await {
                            assert_ne!(item, 7, "item 7 is malformed");
                            handled.incr();
                        }
                        Ok(())
                    }
                })
                .map(|_| ())
            };
            // The pool's panic fails the outer try_par!, which aborts the producer.
            AssertUnwindSafe(async { csp::try_par!(producer, pool) })
                .catch_unwind()
                .await
                .expect_err("the pool fails")
        });
        let message = panic_message(payload.as_ref()).unwrap();
        assert!(message.contains("item 7 is malformed"), "{message}");
        assert_eq!(worker_drops.get(), 4, "every worker's future is dropped");
        assert!(handled.get() < 10, "item 7 was handled");
        wait_until_no_process(&rt, 10);
    });
}

#[test]
fn a_panic_in_an_aborted_branchs_drop_does_not_replace_the_first_failure() {
    bounded(30, || {
        let rt = runtime(2, "par-drop-panic");
        let started = Counter::new();
        let drop_panics = Counter::new();
        let par = async {
            csp::try_par!(
                {
                    let (started, drop_panics) = (started.clone(), drop_panics.clone());
                    async move {
                        let _bomb = common::PanicOnDrop(drop_panics);
                        started.incr();
                        std::future::pending::<Result<(), ()>>().await
                    }
                },
                {
                    let started = started.clone();
                    async move {
                        yield_until(&started, 1).await;
                        if started.get() > 0 {
                            panic!("the failure");
                        }
                        Ok(())
                    }
                },
            )
        };
        let payload = rt
            .block_on(AssertUnwindSafe(par).catch_unwind())
            .expect_err("try_par! fails");
        assert_eq!(
            panic_message(payload.as_ref()).as_deref(),
            Some("the failure")
        );
        assert_eq!(
            drop_panics.get(),
            1,
            "the aborted branch's future is dropped once"
        );
        assert_eq!(rt.metrics().processes_alive, 0);
    });
}

#[test]
fn try_par_returns_the_first_error_once_every_other_branch_has_ended() {
    bounded(30, || {
        let rt = runtime(2, "try-par");
        let started = Counter::new();
        let drops = Counter::new();
        let output_drops = Counter::new();
        let result = rt.block_on(async {
            csp::try_par!(
                {
                    let output_drops = output_drops.clone();
                    async move { Ok(Tracked::new(0, &output_drops)) }
                },
                {
                    let (endless, output_drops) = (endless(&started, &drops), output_drops.clone());
                    async move {
                        endless.await;
                        Ok(Tracked::new(1, &output_drops))
                    }
                },
                {
                    let started = started.clone();
                    async move {
                        yield_until(&started, 1).await;
                        Err::<Tracked, _>(format!("branch {}", 2))
                    }
                },
            )
        });
        assert_eq!(result.err().as_deref(), Some("branch 2"));
        assert_eq!(drops.get(), 1, "the endless branch's future is dropped");
        assert_eq!(
            output_drops.get(),
            1,
            "the first branch's output is dropped once"
        );
        assert_eq!(rt.metrics().processes_alive, 0);

        // All well: the outputs, in order, tuple and replicated.
        let all = rt.block_on(async {
            let tuple = csp::try_par!(async { Ok::<_, String>(1u8) }, async { Ok("two") });
            let squares = csp::try_par!(for i in 1..=4u64 => async move { Ok::<_, String>(i * i) });
            (tuple, squares)
        });
        assert_eq!(all, (Ok((1, "two")), Ok(vec![1, 4, 9, 16])));
        let empty: Result<(), String> = rt.block_on(async { csp::try_par!() });
        assert_eq!(empty, Ok(()));
    });
}

#[test]
fn try_par_resumes_a_panic_and_a_replicated_error_aborts_the_rest() {
    bounded(30, || {
        let rt = runtime(2, "try-par-panic");
        let started = Counter::new();
        let drops = Counter::new();
        let caller = {
            let (started, drops) = (started.clone(), drops.clone());
            rt.spawn(async move {
                csp::try_par!(
                    {
                        let endless = endless(&started, &drops);
                        async move {
                            endless.await;
                            Ok::<u8, String>(0)
                        }
                    },
                    {
                        let started = started.clone();
                        async move {
                            yield_until(&started, 1).await;
                            if started.get() > 0 {
                                panic!("a panic, not an Err");
                            }
                            Ok::<u8, String>(1)
                        }
                    },
                )
            })
        };
        let err = rt.block_on(caller).unwrap_err();
        assert_eq!(
            panic_message(err.into_panic().as_ref()).as_deref(),
            Some("a panic, not an Err")
        );
        assert_eq!(drops.get(), 1);

        let started = Counter::new();
        let drops = Counter::new();
        let result = rt.block_on(async {
            csp::try_par!(for i in 0..16u32 => {
                let (started, drops) = (started.clone(), drops.clone());
                async move {
                    if i == 9 {
                        yield_until(&started, 15).await;
                        return Err(i);
                    }
                    endless(&started, &drops).await;
                    Ok(i)
                }
            })
        });
        assert_eq!(result, Err(9));
        assert_eq!(drops.get(), 15);
        assert_eq!(rt.metrics().processes_alive, 0);
    });
}

/// A branch that counts its start and, with a guard, its drop, and never ends.
fn endless(started: &Counter, drops: &Counter) -> impl Future<Output = ()> + Send + 'static {
    let (started, drops) = (started.clone(), drops.clone());
    async move {
        let _guard = Tracked::new(0, &drops);
        started.incr();
        std::future::pending::<()>().await
    }
}

#[test]
fn dropping_a_pending_par_aborts_every_branch() {
    bounded(30, || {
        let rt = runtime(2, "par-drop");
        let started = Counter::new();
        let drops = Counter::new();
        rt.block_on(async {
            let (done_tx, done_rx) = csp::bounded::<u8>(1);
            let finished = async move {
                done_tx.send(3).await.unwrap();
                3
            };
            let mut par = pin!(async {
                csp::par!(
                    endless(&started, &drops),
                    finished,
                    endless(&started, &drops),
                )
            });
            // Polled once, the par! has spawned its branches.
            assert!(futures::poll!(par.as_mut()).is_pending());
            yield_until(&started, 2).await;
            assert_eq!(done_rx.recv().await, Ok(3));
            assert!(futures::poll!(par.as_mut()).is_pending());
        });
        // The block_on future, and the par! in it, are gone.
        wait_until(10, "both endless branches are dropped", || drops.get() == 2);
        wait_until_no_process(&rt, 10);
    });
}

#[test]
fn aborting_the_process_of_a_replicated_par_aborts_every_branch() {
    bounded(30, || {
        let rt = runtime(2, "par-abort");
        let started = Counter::new();
        let drops = Counter::new();
        let caller = {
            let (started, drops) = (started.clone(), drops.clone());
            rt.spawn(async move {
                csp::par!(for _ in 0..16 => endless(&started, &drops));
            })
        };
        wait_until(10, "every branch has started", || started.get() == 16);
        caller.abort();
        assert!(rt.block_on(caller).unwrap_err().is_cancelled());
        wait_until(10, "every branch is dropped", || drops.get() == 16);
        wait_until_no_process(&rt, 10);
    });
}

/// Runs the `par!` that `par` makes on the blocking pool of a runtime, awaited by
/// another executor (so the shutdown does not drop it; its branches are on the runtime),
/// drops the runtime once the `endless` branch given `started` and `drops` has started,
/// and returns the message of the panic par! ends with, and how many endless branches
/// were dropped.
fn par_cut_by_a_shutdown<F>(
    name: &str,
    par: impl FnOnce(Counter, Counter) -> F + Send + 'static,
) -> (String, usize)
where
    F: Future<Output = ()>,
{
    let rt = runtime(1, name);
    let started = Counter::new();
    let drops = Counter::new();
    let (outcome_tx, outcome_rx) = mpsc::channel();
    {
        let (started, drops) = (started.clone(), drops.clone());
        rt.handle().spawn_blocking(move || {
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                futures::executor::block_on(par(started, drops))
            }));
            outcome_tx.send(outcome).unwrap();
        });
    }
    wait_until(10, "the endless branch has started", || started.get() == 1);
    drop(rt);
    let payload = outcome_rx.recv().unwrap().expect_err("par! panics");
    (panic_message(payload.as_ref()).unwrap(), drops.get())
}

#[test]
fn a_branch_cancelled_by_its_runtime_shutting_down_makes_par_panic() {
    bounded(30, || {
        let (message, drops) = par_cut_by_a_shutdown("par-shutdown", |started, drops| async move {
            csp::par!(async { 1 }, endless(&started, &drops));
        });
        assert!(
            message.starts_with("csp: par! branch 1 did not complete: process #")
                && message.ends_with("was cancelled (its runtime is shutting down)"),
            "{message}"
        );
        assert_eq!(drops, 1);
    });
}

/// A value whose drop panics.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("an output's drop panics");
    }
}

#[test]
fn outputs_kept_when_the_runtime_cancels_a_later_branch_are_dropped_with_panics_caught() {
    // Two branches completed with values whose drops panic; the third is cancelled by
    // the shutdown. par! panics saying so: the two drops' panics are caught (reported),
    // neither replaces that message, and the second cannot abort the process.
    bounded(30, || {
        let (message, drops) =
            par_cut_by_a_shutdown("par-shutdown-drops", |started, drops| async move {
                csp::par!(
                    async { PanicsOnDrop },
                    async { PanicsOnDrop },
                    endless(&started, &drops)
                );
            });
        assert!(
            message.starts_with("csp: par! branch 2 did not complete"),
            "{message}"
        );
        assert_eq!(drops, 1);
    });
}

#[test]
fn a_deadlock_inside_a_par_is_reported() {
    // The join keeps csp's own reference to its owner's waker, so deadlock detection
    // still sees the `block_on` future waiting on csp.
    bounded(30, || {
        let rt = csp::Runtime::builder()
            .worker_threads(2)
            .deadlock_grace(std::time::Duration::from_millis(100))
            .build()
            .unwrap();
        let payload = catch_unwind(AssertUnwindSafe(|| {
            rt.block_on(async {
                let (_tx, rx) = csp::channel::<u8>();
                csp::par!(async move { rx.recv().await }, async { 1 })
            })
        }))
        .expect_err("the deadlock was not reported");
        let report = panic_message(payload.as_ref()).unwrap();
        assert!(
            report.starts_with("csp: deadlock: all processes are asleep"),
            "{report}"
        );
    });
}
