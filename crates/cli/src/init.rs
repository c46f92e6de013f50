//! `probity init`: a working example to start from.

use crate::failure::Failure;
use clap::Args;
use probity_engine::example;
use std::path::PathBuf;

#[derive(Args)]
pub struct InitArgs {
    /// Directory to write probity.toml and inputs.jsonl into.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Overwrite existing files.
    #[arg(long)]
    force: bool,
}

pub fn run(args: &InitArgs) -> Result<u8, Failure> {
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| Failure::usage(format!("cannot create {}: {e}", args.dir.display())))?;
    let files = [
        ("probity.toml", example::CONFIG),
        ("inputs.jsonl", example::INPUTS),
    ];
    for (name, _) in &files {
        let path = args.dir.join(name);
        if path.exists() && !args.force {
            return Err(Failure::usage(format!(
                "{} exists; not overwriting it (use --force to replace it)",
                path.display()
            )));
        }
    }
    for (name, text) in files {
        let path = args.dir.join(name);
        std::fs::write(&path, text)
            .map_err(|e| Failure::usage(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("wrote {}", path.display());
    }
    eprintln!(
        "next: probity run {}",
        args.dir.join("probity.toml").display()
    );
    Ok(0)
}
