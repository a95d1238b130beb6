// `#[csp::main]` on `main` returning a `Result`, with `?` in the body.
use std::error::Error;

#[csp::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let n: u32 = "42".parse()?;
    let doubled = csp::spawn(async move { n * 2 }).await?;
    assert_eq!(doubled, 84);
    Ok(())
}
