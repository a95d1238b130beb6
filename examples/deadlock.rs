//! What csp reports for a deadlocked program, instead of hanging: two processes that
//! greet each other once, then each wait for the other to speak again (a protocol
//! mismatch, the common real deadlock), and a main that waits for one of them.
//!
//! ```text
//! cargo run --example deadlock
//! ```
//!
//! With `CSP_DEADLOCK_DOT=path` set, the report also writes the wait graph there, as
//! Graphviz DOT (the picture in the README): each process's wait on its inbox, a dashed
//! edge from each inbox to the process that last sent on it, and the cycle those make,
//! in red:
//!
//! ```text
//! CSP_DEADLOCK_DOT=deadlock.dot cargo run --example deadlock
//! dot -Tsvg deadlock.dot -o deadlock.svg
//! ```

use std::time::Duration;

/// Runs the broken program on a runtime with a short grace period and returns the
/// deadlock report it panics with.
pub fn report(grace: Duration) -> String {
    let rt = csp::Runtime::builder()
        .worker_threads(2)
        .deadlock_grace(grace)
        .build()
        .expect("failed to build the runtime");
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async {
            let (to_alice, alice_inbox) = csp::channel::<&str>();
            let (to_bob, bob_inbox) = csp::channel::<&str>();
            // One greeting each way goes through; then each waits for the other to
            // speak again, and neither does.
            let alice = csp::spawn(async move {
                to_bob.send("hi bob").await.ok();
                let reply = alice_inbox.recv().await;
                let more = alice_inbox.recv().await;
                (reply, more)
            });
            let _bob = csp::spawn(async move {
                let greeting = bob_inbox.recv().await;
                to_alice.send("hi alice").await.ok();
                let more = bob_inbox.recv().await;
                (greeting, more)
            });
            alice.await
        })
    }));
    match outcome {
        Err(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "a panic without a message".to_owned()),
        Ok(_) => "no deadlock?".to_owned(),
    }
}

fn main() {
    // The report is the panic's message; keep the default hook from printing it twice.
    std::panic::set_hook(Box::new(|_| {}));
    println!("{}", report(Duration::from_millis(200)));
}
