async fn f(tx: csp::Sender<u8>) {
    csp::alt! {
        send(tx) -> _res => {}
    }
}

fn main() {}
