async fn f(rx: csp::Receiver<u8>) {
    csp::alt! {
        recv(rx) -> _msg => {}
        at(std::time::Duration::from_millis(5)) => {}
    }
}

fn main() {}
