//! Prints the XXH3-64 (seed 0) of standard input as a decimal u64: the
//! footer's manifest hash, for the benchmark's stdlib-only file builder.

use std::io::Read;

fn main() -> std::io::Result<()> {
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes)?;
    println!("{}", xxhash_rust::xxh3::xxh3_64(&bytes));
    Ok(())
}
