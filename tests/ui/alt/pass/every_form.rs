// Every documented arm form, with and without guards, operands by value and by
// reference, trailing commas optional after block bodies.
async fn forms(
    rx: csp::Receiver<u8>,
    tx: csp::Sender<u8>,
    rx_ref: &csp::Receiver<u8>,
    tx_ref: &csp::Sender<u8>,
) -> u8 {
    let ready = true;
    let a = csp::alt! {
        recv(rx) -> msg => msg.unwrap_or(0),
        recv(rx_ref) -> msg if ready => { msg.unwrap_or(1) }
        send(tx, 5) -> res => { res.map(|()| 2).unwrap_or(3) }
        send(tx_ref, 6) -> _ if !ready => 4,
        closed(tx) => 5,
        recv_any(&[&rx, rx_ref]) -> (_i, msg) => msg.unwrap_or(9),
        send_any(&[&tx, tx_ref], 7) -> (i, res) if ready => res.map(|()| i as u8).unwrap_or(8),
        default => 6
    };
    let b = csp::prialt! {
        recv(rx) -> (msg) => msg.unwrap_or(7),
        default => { 8 }
    };
    let c = csp::alt! {
        recv(rx) -> msg => msg.unwrap_or(10),
        after(std::time::Duration::from_millis(5)) => 11,
    };
    let d = csp::prialt! {
        send(tx, 1) -> _res if !ready => 12,
        after(std::time::Duration::from_millis(5)) if ready => { 13 }
    };
    let token = csp::CancellationToken::new();
    let e = csp::alt! {
        recv(rx) -> msg => msg.unwrap_or(14),
        cancelled(token) => 15,
        cancelled(&token) if ready => 16,
        at(std::time::Instant::now() + std::time::Duration::from_millis(5)) => 17,
    };
    let f = csp::prialt! {
        recv(rx) -> msg => msg.unwrap_or(18),
        at(std::time::Instant::now()) if !ready => { 19 }
    };
    a + b + c + d + e + f + reset(rx).await
}

// Go's `timer = time.After(d)` in a select loop: a body assigns to the operand of
// another arm (and of its own), since every arm is dropped before a body runs.
async fn reset(rx: csp::Receiver<u8>) -> u8 {
    let mut idle = csp::after(std::time::Duration::from_millis(5));
    let mut last = 0;
    let mut input = rx;
    loop {
        csp::alt! {
            recv(input) -> msg => match msg {
                Ok(v) => {
                    last = v;
                    idle = csp::after(std::time::Duration::from_millis(5));
                }
                Err(_) => input = csp::channel().1,
            },
            recv(idle) -> _ => return last,
        }
    }
}

fn main() {
    let _ = forms;
}
