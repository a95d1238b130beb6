//! `csp::pipe` from the outside: what each combinator passes on and in which order,
//! `merge`'s fairness, and teardown: dropping a pipeline's tail ends every stage, up to
//! the producer, and drops every value in flight exactly once; closing its input ends
//! every stage after it.
//!
//! Every test runs under a watchdog (`common::bounded`) on a runtime of its own, so
//! `Runtime::metrics().processes_alive` counts the pipeline's processes and nothing else.

use std::collections::HashMap;
use std::future::pending;

use csp::{ProcessState, Receiver, RecvError, Runtime, pipe};
use futures::StreamExt;

mod common;

use common::{Counter, Tracked, bounded, runtime, wait_until, wait_until_no_process};

/// Seconds a test may take before the watchdog fails it.
const LIMIT: u64 = 20;

/// A producer of `0..n`.
fn numbers(n: u64) -> Receiver<u64> {
    pipe::producer(move |tx| async move {
        for i in 0..n {
            if tx.send(i).await.is_err() {
                return;
            }
        }
    })
}

/// A producer of `Tracked` values `0, 1, 2, ..` without end, counting them in `made`;
/// `alive` drops with the producer's process.
fn tracked(made: &Counter, drops: &Counter, alive: Tracked) -> Receiver<Tracked> {
    let (made, drops) = (made.clone(), drops.clone());
    pipe::producer(move |tx| async move {
        let _alive = alive;
        for i in 0.. {
            made.incr();
            if tx.send(Tracked::new(i, &drops)).await.is_err() {
                return;
            }
        }
    })
}

/// Waits until every live process of `rt` (there are `n`) sleeps: the pipeline is full.
#[track_caller]
fn wait_until_all_sleep(rt: &Runtime, n: usize) {
    wait_until(LIMIT, "every process of the pipeline waits", || {
        let processes = rt.processes();
        processes.len() == n && processes.iter().all(|p| p.state == ProcessState::Sleeping)
    });
}

// ---------------------------------------------------------------------------------------
// What each combinator passes on
// ---------------------------------------------------------------------------------------

#[test]
fn producer_sends_what_its_function_sends_then_closes() {
    bounded(LIMIT, || {
        let rt = runtime(2, "producer");
        rt.block_on(async {
            let rx = numbers(5);
            for i in 0..5 {
                assert_eq!(rx.recv().await, Ok(i));
            }
            assert_eq!(rx.recv().await, Err(RecvError));
            assert_eq!(
                rx.capacity(),
                Some(0),
                "stages are joined by rendezvous channels"
            );
        });
        wait_until_no_process(&rt, LIMIT);
    });
}

#[test]
fn map_applies_its_function_in_order() {
    bounded(LIMIT, || {
        let rt = runtime(2, "map");
        let out: Vec<String> = rt.block_on(pipe::map(numbers(100), |i| format!("#{i}")).collect());
        let expected: Vec<String> = (0..100).map(|i| format!("#{i}")).collect();
        assert_eq!(out, expected);
        wait_until_no_process(&rt, LIMIT);
    });
}

#[test]
fn map_may_change_the_type_and_keep_state() {
    bounded(LIMIT, || {
        let rt = runtime(2, "map-state");
        let mut total = 0;
        let running: Vec<u64> = rt.block_on(
            pipe::map(numbers(6), move |i| {
                total += i;
                total
            })
            .collect(),
        );
        assert_eq!(running, [0, 1, 3, 6, 10, 15]);
    });
}

#[test]
fn filter_keeps_matching_values_in_order() {
    bounded(LIMIT, || {
        let rt = runtime(2, "filter");
        let kept: Vec<u64> = rt.block_on(pipe::filter(numbers(50), |i| i % 7 == 3).collect());
        assert_eq!(kept, [3, 10, 17, 24, 31, 38, 45]);
        let none: Vec<u64> = rt.block_on(pipe::filter(numbers(50), |_| false).collect());
        assert!(none.is_empty());
        wait_until_no_process(&rt, LIMIT);
    });
}

#[test]
fn buffer_passes_values_on_in_order() {
    bounded(LIMIT, || {
        let rt = runtime(2, "buffer");
        for n in [0, 1, 3, 64] {
            let out: Vec<u64> = rt.block_on(pipe::buffer(numbers(20), n).collect());
            assert_eq!(out, (0..20).collect::<Vec<_>>(), "buffer({n})");
        }
        wait_until_no_process(&rt, LIMIT);
    });
}

#[test]
fn buffer_lets_the_stages_before_it_run_ahead() {
    bounded(LIMIT, || {
        let rt = runtime(2, "buffer-ahead");
        let rx = rt.block_on(async { pipe::buffer(numbers(100), 4) });
        assert_eq!(rx.capacity(), Some(4));
        // Nobody receives, yet four values get buffered.
        wait_until(LIMIT, "the buffer is full", || rx.is_full());
        wait_until_all_sleep(&rt, 2);
        assert_eq!(rx.len(), 4);
        let out: Vec<u64> = rt.block_on(rx.take(10).collect());
        assert_eq!(out, (0..10).collect::<Vec<_>>());
    });
}

#[test]
fn merge_passes_on_every_value_keeping_each_inputs_order() {
    bounded(LIMIT, || {
        let rt = runtime(2, "merge");
        let tagged = |tag: u64, n: u64| pipe::map(numbers(n), move |i| (tag, i));
        let out: Vec<(u64, u64)> =
            rt.block_on(pipe::merge(vec![tagged(0, 30), tagged(1, 5), tagged(2, 100)]).collect());
        let mut seen: HashMap<u64, Vec<u64>> = HashMap::new();
        for (tag, i) in out {
            seen.entry(tag).or_default().push(i);
        }
        assert_eq!(seen[&0], (0..30).collect::<Vec<_>>());
        assert_eq!(seen[&1], (0..5).collect::<Vec<_>>());
        assert_eq!(seen[&2], (0..100).collect::<Vec<_>>());
        wait_until_no_process(&rt, LIMIT);
    });
}

#[test]
fn merge_of_nothing_closes_at_once() {
    bounded(LIMIT, || {
        let rt = runtime(2, "merge-none");
        let out: Vec<u64> = rt.block_on(pipe::merge::<u64>(Vec::new()).collect());
        assert!(out.is_empty());
        wait_until_no_process(&rt, LIMIT);
    });
}

#[test]
fn merge_interleaves_fairly() {
    const N: usize = 2000;
    bounded(LIMIT, || {
        let rt = runtime(2, "merge-fair");
        // Two producers, each always ready with another value.
        let forever = |tag: usize| {
            pipe::producer(move |tx| async move { while tx.send(tag).await.is_ok() {} })
        };
        let counts = rt.block_on(async {
            let merged = pipe::merge(vec![forever(0), forever(1)]);
            let mut counts = [0; 2];
            for _ in 0..N {
                counts[merged.recv().await.unwrap()] += 1;
            }
            counts
        });
        for (tag, count) in counts.into_iter().enumerate() {
            assert!(
                (N * 3 / 10..=N * 7 / 10).contains(&count),
                "producer {tag} got {count} of the first {N} values: {counts:?}"
            );
        }
        wait_until_no_process(&rt, LIMIT);
    });
}

#[test]
fn a_pipeline_runs_on_the_current_runtime_and_reports_its_call_sites() {
    bounded(LIMIT, || {
        let rt = runtime(2, "call-sites");
        let tail = rt.block_on(async {
            let tail = pipe::buffer(pipe::filter(pipe::map(numbers(10), |i| i), |_| true), 2);
            pipe::merge(vec![tail])
        });
        let processes = rt.processes();
        assert_eq!(processes.len(), 5);
        for p in &processes {
            assert_eq!(p.spawned_at.file(), file!(), "process {}", p.id);
        }
        drop(tail);
        wait_until_no_process(&rt, LIMIT);
    });
}

// ---------------------------------------------------------------------------------------
// Teardown
// ---------------------------------------------------------------------------------------

#[test]
fn dropping_the_tail_ends_every_stage_and_drops_every_value_once() {
    bounded(LIMIT, || {
        let rt = runtime(2, "teardown");
        let (made, drops, ended) = (Counter::new(), Counter::new(), Counter::new());
        let (first_map, filter_alive, last_map) = (
            Tracked::new(1, &ended),
            Tracked::new(2, &ended),
            Tracked::new(3, &ended),
        );
        let tail = rt.block_on(async {
            let source = tracked(&made, &drops, Tracked::new(0, &ended));
            let doubled = pipe::map(source, move |mut t: Tracked| {
                let _alive = &first_map;
                t.value *= 2;
                t
            });
            let some = pipe::filter(doubled, move |t| {
                let _alive = &filter_alive;
                t.value % 3 != 0
            });
            let buffered = pipe::buffer(some, 4);
            let tail = pipe::map(buffered, move |mut t: Tracked| {
                let _alive = &last_map;
                t.value += 1;
                t
            });
            for expected in [3, 5, 9, 11, 15] {
                assert_eq!(tail.recv().await.unwrap().value, expected);
            }
            tail
        });
        // Let the pipeline fill up: every stage holds or waits to send a value.
        wait_until_all_sleep(&rt, 5);
        assert!(made.get() > 5);
        assert_eq!(ended.get(), 0);

        drop(tail);
        wait_until_no_process(&rt, LIMIT);
        assert_eq!(ended.get(), 4, "every stage's closure was dropped");
        assert_eq!(
            drops.get(),
            made.get(),
            "every value made was dropped exactly once"
        );
    });
}

#[test]
fn teardown_reaches_a_producer_blocked_in_send() {
    bounded(LIMIT, || {
        let rt = runtime(2, "blocked-send");
        let (made, drops, ended) = (Counter::new(), Counter::new(), Counter::new());
        let tail = rt.block_on(async {
            let tail = pipe::map(tracked(&made, &drops, Tracked::new(0, &ended)), |t| t);
            for i in 0..3 {
                assert_eq!(tail.recv().await.unwrap().value, i);
            }
            tail
        });
        // The map stage waits to send value 3, the producer to send value 4.
        wait_until_all_sleep(&rt, 2);
        assert_eq!(made.get(), 5);

        drop(tail);
        wait_until_no_process(&rt, LIMIT);
        assert_eq!(ended.get(), 1, "the producer ended");
        assert_eq!(
            drops.get(),
            5,
            "the values in flight, 3 and 4, were dropped"
        );
    });
}

#[test]
fn teardown_reaches_a_stage_waiting_for_input() {
    bounded(LIMIT, || {
        let rt = runtime(2, "waiting-input");
        let ended = Counter::new();
        let alive = Tracked::new(0, &ended);
        // A producer that never sends, and keeps its sender (the stream stays open):
        // the stages after it wait for input.
        let tail = rt.block_on(async {
            let silent = pipe::producer(move |tx: csp::Sender<u64>| async move {
                let _tx = tx;
                let _alive = alive;
                pending::<()>().await
            });
            pipe::merge(vec![pipe::buffer(pipe::map(silent, |i| i + 1), 3)])
        });
        wait_until_all_sleep(&rt, 4);
        drop(tail);
        wait_until_no_process(&rt, LIMIT);
        assert_eq!(ended.get(), 1, "the producer's future was dropped");
    });
}

#[test]
fn a_producer_ends_with_its_receivers_even_if_it_ignores_failed_sends() {
    bounded(LIMIT, || {
        let rt = runtime(2, "careless");
        let ended = Counter::new();
        let alive = Tracked::new(0, &ended);
        rt.block_on(async {
            let rx = pipe::producer(move |tx| async move {
                let _alive = alive;
                let _ = tx.send(1).await;
                let _ = tx.send(2).await;
                // Waits for something other than the channel.
                pending::<()>().await
            });
            assert_eq!(rx.recv().await, Ok(1));
        });
        wait_until_no_process(&rt, LIMIT);
        assert_eq!(ended.get(), 1);
    });
}

#[test]
fn a_producer_that_drops_its_sender_ends_the_stream_and_runs_on() {
    producer_ends_its_stream_then_runs_on(true);
}

#[test]
fn a_producer_that_closes_its_channel_ends_the_stream_and_runs_on() {
    producer_ends_its_stream_then_runs_on(false);
}

/// The producer hands over its values, ends its stream (dropping its sender, or closing
/// the channel and keeping it), then waits for the consumer's word, which comes only
/// after the consumer has seen the stream end and dropped its receiver: a producer whose
/// stream has ended is not torn down by its receivers going.
fn producer_ends_its_stream_then_runs_on(drop_sender: bool) {
    bounded(LIMIT, move || {
        let rt = runtime(2, "producer-ends-stream");
        let finished = Counter::new();
        let (ack, acked) = csp::channel::<()>();
        let done = finished.clone();
        let rx = rt.block_on(async {
            pipe::producer(move |tx| async move {
                tx.send(1u64).await.unwrap();
                let kept = if drop_sender {
                    drop(tx);
                    None
                } else {
                    assert!(tx.close());
                    Some(tx)
                };
                acked.recv().await.unwrap();
                drop(kept);
                done.incr();
            })
        });
        // The receiver goes with the collect, having seen the end.
        assert_eq!(rt.block_on(rx.collect::<Vec<_>>()), [1], "the stream ends");
        // A teardown would have been set off by now: the producer would be woken, or
        // gone. It still waits for its word, the one process left.
        wait_until(LIMIT, "the producer waits for its word", || {
            let processes = rt.processes();
            processes.len() == 1
                && processes[0].state == ProcessState::Sleeping
                && processes[0].waiting_on.is_some()
        });
        rt.block_on(ack.send(()))
            .expect("the producer still waits for the word");
        wait_until(LIMIT, "the producer ran to its end", || finished.get() == 1);
        wait_until_no_process(&rt, LIMIT);
    });
}

#[test]
fn a_producer_is_torn_down_when_a_receiver_closes_its_channel_and_all_go() {
    // A close from the receivers' side is theirs: the stream was not ended by `f`.
    bounded(LIMIT, || {
        let rt = runtime(2, "receiver-closes");
        let ended = Counter::new();
        let alive = Tracked::new(0, &ended);
        let rx = rt.block_on(async {
            pipe::producer(move |tx: csp::Sender<u64>| async move {
                let _tx = tx;
                let _alive = alive;
                pending::<()>().await
            })
        });
        assert!(rx.close());
        drop(rx);
        wait_until_no_process(&rt, LIMIT);
        assert_eq!(ended.get(), 1);
    });
}

#[test]
fn a_producer_that_closes_its_channel_runs_to_its_end() {
    // Closing its own channel ends the stream, not the producer: its receivers are
    // still there, so nothing tears it down.
    bounded(LIMIT, || {
        let rt = runtime(2, "producer-closes");
        let finished = Counter::new();
        rt.block_on(async {
            let done = finished.clone();
            let rx = pipe::producer(move |tx| async move {
                tx.send(1u64).await.unwrap();
                assert!(tx.close());
                csp::yield_now().await;
                done.incr();
            });
            assert_eq!(rx.recv().await, Ok(1));
            assert_eq!(rx.recv().await, Err(RecvError));
            wait_until(LIMIT, "the producer ran to its end", || finished.get() == 1);
        });
        wait_until_no_process(&rt, LIMIT);
    });
}

#[test]
fn closing_the_input_ends_every_stage_after_it() {
    bounded(LIMIT, || {
        let rt = runtime(2, "input-closes");
        let (made, drops) = (Counter::new(), Counter::new());
        let (tx, rx) = csp::channel::<Tracked>();
        let tail = rt.block_on(async {
            let odd = pipe::filter(pipe::map(rx, |t| t), |t| t.value % 2 == 1);
            let nothing = pipe::producer(|_tx| async {});
            let tail = pipe::merge(vec![pipe::buffer(odd, 8), nothing]);
            for i in 0..10 {
                made.incr();
                tx.send(Tracked::new(i, &drops)).await.unwrap();
            }
            tail
        });
        // The last odd values wait in the buffer; closing the input flushes them through.
        drop(tx);
        let out: Vec<u64> = rt.block_on(tail.map(|t| t.value).collect::<Vec<_>>());
        assert_eq!(out, [1, 3, 5, 7, 9]);
        wait_until_no_process(&rt, LIMIT);
        assert_eq!(drops.get(), made.get());
    });
}

#[test]
fn a_stage_whose_function_panics_closes_its_output() {
    bounded(LIMIT, || {
        let rt = runtime(2, "panicking-stage");
        let out: Vec<u64> = rt.block_on(
            pipe::map(numbers(10), |i| {
                assert!(i < 3, "the stage fails at {i}");
                i
            })
            .collect(),
        );
        assert_eq!(out, [0, 1, 2]);
        wait_until_no_process(&rt, LIMIT);
    });
}
