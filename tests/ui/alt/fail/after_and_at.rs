async fn f(rx: csp::Receiver<u8>) {
    csp::alt! {
        recv(rx) -> _msg => {}
        after(std::time::Duration::from_millis(5)) => {}
        at(std::time::Instant::now()) => {}
    }
}

fn main() {}
