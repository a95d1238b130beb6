async fn f(rx: csp::Receiver<u8>) {
    csp::prialt! {
        recv(rx) -> _msg => {}
        after(std::time::Duration::from_millis(5)) => {}
        after(std::time::Duration::from_millis(9)) => {}
    }
}

fn main() {}
