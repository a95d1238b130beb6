async fn f(rx: csp::Receiver<u8>) {
    csp::alt! {
        recv(rx) -> _msg => {}
        default => {}
        default => {}
    }
}

fn main() {}
