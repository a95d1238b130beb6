async fn f(rx: csp::Receiver<u8>) {
    csp::alt! {
        recv(rx) => {}
    }
}

fn main() {}
