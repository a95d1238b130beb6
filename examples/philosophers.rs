//! Dining philosophers, with a butler, as in Hoare's "Communicating Sequential Processes".
//!
//! Five philosophers sit at a round table with a fork between each two neighbours, and
//! each needs both of their forks to eat. Were all five to pick up their left fork at
//! once, none could ever pick up a right one: a deadlock. A butler prevents it by
//! letting at most four sit at the table at a time. The butler is one `alt!` in a loop
//! with a guard: it takes a request to sit down only while fewer than four are seated,
//! and a request to stand up at any time. A philosopher asking to sit while four are
//! seated waits in its `send` until someone stands up.
//!
//! A fork is a channel holding one token: a philosopher picks it up by receiving the
//! token, and puts it down by sending it back.
//!
//! ```text
//! cargo run --example philosophers
//! ```

use csp::{JoinHandle, Receiver, Sender};

/// Philosophers at the table, and forks.
const PHILOSOPHERS: usize = 5;

/// Philosophers the butler lets sit at once.
const SEATS: usize = PHILOSOPHERS - 1;

/// Meals each philosopher eats.
const MEALS: u32 = 1000;

#[csp::main]
async fn main() {
    let dinner = dine(MEALS).await;
    assert!(dinner.most_seated <= SEATS, "the butler let too many sit");
    println!(
        "philosophers: {PHILOSOPHERS} philosophers ate {} meals, never more than {SEATS} \
         at the table",
        dinner.meals
    );
}

/// How a dinner went.
#[derive(Debug)]
pub struct Dinner {
    /// Meals eaten, by all the philosophers together.
    pub meals: u32,
    /// The most philosophers seated at once.
    pub most_seated: usize,
}

/// Five philosophers eat `meals` meals each.
pub async fn dine(meals: u32) -> Dinner {
    let (sit, sit_requests) = csp::channel();
    let (stand, stand_requests) = csp::channel();
    let butler = csp::spawn(butler(sit_requests, stand_requests));

    let forks: Vec<Fork> = (0..PHILOSOPHERS).map(|_| Fork::new()).collect();
    let philosophers: Vec<JoinHandle<u32>> = (0..PHILOSOPHERS)
        .map(|i| {
            let left = forks[i].clone();
            let right = forks[(i + 1) % PHILOSOPHERS].clone();
            csp::spawn(philosopher(meals, left, right, sit.clone(), stand.clone()))
        })
        .collect();
    // The butler's channels close once every philosopher has gone home.
    drop((sit, stand));

    let mut eaten = 0;
    for philosopher in philosophers {
        eaten += philosopher.await.expect("a philosopher choked");
    }
    let most_seated = butler.await.expect("the butler failed");
    Dinner {
        meals: eaten,
        most_seated,
    }
}

/// Seats philosophers, at most [`SEATS`] at a time, until they have all gone home; returns
/// the most seated at once.
async fn butler(sit_requests: Receiver<()>, stand_requests: Receiver<()>) -> usize {
    let mut seated = 0;
    let mut most_seated = 0;
    loop {
        csp::alt! {
            recv(sit_requests) -> request if seated < SEATS => match request {
                Ok(()) => seated += 1,
                Err(_) => break, // every philosopher has gone home
            },
            recv(stand_requests) -> request => match request {
                Ok(()) => seated -= 1,
                Err(_) => break,
            },
        }
        most_seated = most_seated.max(seated);
    }
    most_seated
}

/// A philosopher's life: think, sit down, pick up both forks, eat, put them down, stand
/// up; `meals` times. Returns the meals eaten.
async fn philosopher(
    meals: u32,
    left: Fork,
    right: Fork,
    sit: Sender<()>,
    stand: Sender<()>,
) -> u32 {
    let mut eaten = 0;
    for _ in 0..meals {
        pass_time().await; // think
        sit.send(()).await.expect("the butler is there");
        left.pick_up().await;
        right.pick_up().await;
        pass_time().await; // eat
        eaten += 1;
        left.put_down().await;
        right.put_down().await;
        stand.send(()).await.expect("the butler is there");
    }
    eaten
}

/// Lets the other processes run for a while.
async fn pass_time() {
    for _ in 0..3 {
        csp::yield_now().await;
    }
}

/// A fork: a channel with room for one token, which is there while the fork lies on the
/// table.
#[derive(Clone)]
struct Fork {
    put: Sender<()>,
    take: Receiver<()>,
}

impl Fork {
    fn new() -> Fork {
        let (put, take) = csp::bounded(1);
        put.try_send(())
            .expect("an empty channel has room for the fork");
        Fork { put, take }
    }

    async fn pick_up(&self) {
        self.take.recv().await.expect("the fork stays on the table");
    }

    async fn put_down(&self) {
        self.put.send(()).await.expect("the fork has its place");
    }
}
