//! `probity init`: a working example to start from, for any provider.

use crate::failure::Failure;
use clap::{Args, ValueEnum};
use probity_engine::config::example;
use std::path::{Path, PathBuf};

/// The provider the example configuration uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InitProvider {
    /// The built-in simulated model: runs with no key and no network.
    Sim,
    /// The OpenAI API or any OpenAI-compatible server (needs OPENAI_API_KEY).
    Openai,
    /// The Anthropic messages API (needs ANTHROPIC_API_KEY).
    Anthropic,
    /// Any HTTP JSON endpoint (as written: `probity sim serve`; needs HTTP_API_KEY).
    Http,
    /// A program run once per call (writes system.py, a Python stand-in).
    Command,
    /// An agent: the simulated shop assistant and customer (no key).
    Agent,
}

impl InitProvider {
    fn name(self) -> &'static str {
        match self {
            InitProvider::Sim => "sim",
            InitProvider::Openai => "openai",
            InitProvider::Anthropic => "anthropic",
            InitProvider::Http => "http",
            InitProvider::Command => "command",
            InitProvider::Agent => "agent",
        }
    }
}

#[derive(Args)]
pub struct InitArgs {
    /// Directory to write probity.toml and inputs.jsonl (and any script) into.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// The provider of the example's system under test.
    #[arg(long, value_enum, default_value = "sim")]
    provider: InitProvider,
    /// Overwrite existing files.
    #[arg(long)]
    force: bool,
}

pub fn run(args: &InitArgs) -> Result<u8, Failure> {
    let ex = example::example(args.provider.name())
        .ok_or_else(|| Failure::usage(format!("no example for {:?}", args.provider.name())))?;
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| Failure::usage(format!("cannot create {}: {e}", args.dir.display())))?;
    for f in ex.files {
        let path = args.dir.join(f.name);
        if path.exists() && !args.force {
            return Err(Failure::usage(format!(
                "{} exists; not overwriting it (use --force to replace it)",
                path.display()
            )));
        }
    }
    for f in ex.files {
        let path = args.dir.join(f.name);
        std::fs::write(&path, f.text)
            .map_err(|e| Failure::usage(format!("cannot write {}: {e}", path.display())))?;
        if f.executable {
            make_executable(&path)?;
        }
        probity_engine::stderr_line!("wrote {}", path.display());
    }
    let config = args.dir.join("probity.toml");
    match ex.key_env {
        Some(var) => probity_engine::stderr_line!(
            "next: set {var} (the key is read from it at run time, never stored), then: probity run {}",
            config.display()
        ),
        None => probity_engine::stderr_line!("next: probity run {}", config.display()),
    }
    Ok(0)
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<(), Failure> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| Failure::usage(format!("cannot make {} executable: {e}", path.display())))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<(), Failure> {
    Ok(())
}
