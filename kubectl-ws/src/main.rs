//! `kubectl-ws`: the `kubectl ws` plugin (see the library docs).

use clap::Parser;
use kubectl_ws::cli::Cli;
use kubectl_ws::output::error_line;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match cli.run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            // cobra's wording, which kcp's plugin prints: "Error: <message>".
            eprintln!("Error: {}", error_line(&error));
            std::process::ExitCode::FAILURE
        }
    }
}
