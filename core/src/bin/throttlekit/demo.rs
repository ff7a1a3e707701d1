pub fn run(_args: &[String]) -> Result<bool, String> { Ok(true) }
