//! Every example, run at a small size so none can rot: each example file is included as
//! a module, and the function its `main` calls is called here and its result checked.
//!
//! Each runs under a watchdog (`common::bounded`).

mod common;

use common::bounded;

#[path = "../examples/sieve.rs"]
#[allow(dead_code)]
mod sieve;

#[path = "../examples/ring.rs"]
#[allow(dead_code)]
mod ring;

#[path = "../examples/skynet.rs"]
#[allow(dead_code)]
mod skynet;

#[path = "../examples/philosophers.rs"]
#[allow(dead_code)]
mod philosophers;

#[path = "../examples/pipeline.rs"]
#[allow(dead_code)]
mod pipeline;

#[path = "../examples/tokio_interop.rs"]
#[allow(dead_code)]
mod tokio_interop;

#[path = "../examples/deadlock.rs"]
#[allow(dead_code)]
mod deadlock;

/// Seconds an example may take before the watchdog fails it.
const LIMIT: u64 = 30;

#[test]
fn sieve_finds_the_first_primes() {
    let primes = bounded(LIMIT, || csp::block_on(sieve::primes(10)));
    assert_eq!(primes, [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]);
    let primes = bounded(LIMIT, || csp::block_on(sieve::primes(100)));
    assert_eq!(primes.last(), Some(&541));
}

#[test]
fn ring_hands_the_token_to_the_process_the_formula_says() {
    for passes in [0, 1, 502, 503, 10_000] {
        let holder = bounded(LIMIT, move || csp::block_on(ring::ring(503, passes)));
        assert_eq!(holder as u64, passes % 503 + 1, "after {passes} passes");
    }
}

#[test]
fn skynet_sums_its_leaves() {
    for (leaves, sum) in [(1, 0), (10, 45), (10_000, 49_995_000)] {
        assert_eq!(
            bounded(LIMIT, move || csp::block_on(skynet::skynet(leaves))),
            sum
        );
    }
}

#[test]
fn philosophers_eat_every_meal_with_at_most_four_seated() {
    let dinner = bounded(LIMIT, || csp::block_on(philosophers::dine(50)));
    assert_eq!(dinner.meals, 5 * 50);
    assert!(
        (1..=4).contains(&dinner.most_seated),
        "{} seated at once",
        dinner.most_seated
    );
}

#[test]
fn pipeline_sums_even_squares_and_odd_cubes() {
    let sum = bounded(LIMIT, || {
        csp::block_on(pipeline::even_squares_and_odd_cubes(10))
    });
    assert_eq!(sum, (4 + 16 + 36 + 64 + 100) + (1 + 27 + 125 + 343 + 729));
    let sum = bounded(LIMIT, || {
        csp::block_on(pipeline::even_squares_and_odd_cubes(1000))
    });
    assert_eq!(sum, 125_166_917_000);
}

#[test]
fn tokio_interop_echoes_every_line_upper_cased() {
    let lines = ["one", "two", "Three little words"];
    let echoes = bounded(LIMIT, move || {
        tokio::runtime::Runtime::new()
            .expect("start a tokio runtime")
            .block_on(tokio_interop::serve_clients(2, &lines, 3))
            .expect("the server and clients do their I/O")
    });
    let expected = ["ONE", "TWO", "THREE LITTLE WORDS"];
    assert_eq!(echoes, [expected, expected]);
}

#[test]
fn deadlock_reports_both_processes_and_the_main_future() {
    let report = bounded(LIMIT, || {
        deadlock::report(std::time::Duration::from_millis(50))
    });
    assert!(
        report.starts_with("csp: deadlock: all processes are asleep"),
        "{report}"
    );
    assert!(
        report.contains("the block_on future: waiting on join of process #"),
        "{report}"
    );
    assert_eq!(
        report.matches("examples/deadlock.rs:").count(),
        2,
        "{report}"
    );
    assert_eq!(
        report.matches("waiting on recv on channel #").count(),
        2,
        "{report}"
    );
}
