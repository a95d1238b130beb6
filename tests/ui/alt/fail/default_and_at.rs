async fn f(rx: csp::Receiver<u8>) {
    csp::alt! {
        at(std::time::Instant::now()) => {}
        recv(rx) -> _msg => {}
        default => {}
    }
}

fn main() {}
