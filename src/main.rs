use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = loadrig::cli::Cli::parse();
    match loadrig::run(cli) {
        Ok(code) => code,
        Err(e) => {
            // A closed pipe (`loadrig ... | head`) is not an error.
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
