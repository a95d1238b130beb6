// A body whose value does not match the declared return type: the error points at the
// body's last statement, not at the attribute.
#[csp::main]
async fn main() {
    Ok(())
}

#[csp::main]
async fn missing_return_type() {
    return Ok(());
}

#[csp::main]
async fn extra_semicolon() -> Result<(), String> {
    Ok(());
}
