use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // `loadrig ... | head`: when the reader goes away, end quietly as other Unix tools do,
    // instead of panicking inside println!.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
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
