//! The examples that `probity init` writes: the paper's two validators
//! (§2.1) on each provider. The simulator's (the default) runs with no key
//! and no network; so does the command provider's, with a small Python
//! script as the system.

/// `probity.toml` for the simulator (what `probity init` writes by default).
pub const CONFIG: &str = include_str!("example/probity.toml");
/// `inputs.jsonl`, twenty questions, half of them thanks (every example).
pub const INPUTS: &str = include_str!("example/inputs.jsonl");
/// `probity.toml` for the `openai` provider.
pub(crate) const OPENAI_CONFIG: &str = include_str!("example/openai.toml");
/// `probity.toml` for the `anthropic` provider.
pub(crate) const ANTHROPIC_CONFIG: &str = include_str!("example/anthropic.toml");
/// `probity.toml` for the `http` provider (aimed at `probity sim serve`).
pub(crate) const HTTP_CONFIG: &str = include_str!("example/http.toml");
/// `probity.toml` for the `command` provider.
pub(crate) const COMMAND_CONFIG: &str = include_str!("example/command.toml");
/// `system.py`, the command example's system under test.
pub(crate) const COMMAND_SCRIPT: &str = include_str!("example/system.py");
pub(crate) const AGENT_CONFIG: &str = include_str!("example/agent.toml");
pub(crate) const AGENT_TASKS: &str = include_str!("example/tasks.jsonl");

/// The provider kinds an example exists for, the default first.
pub const PROVIDERS: [&str; 6] = ["sim", "openai", "anthropic", "http", "command", "agent"];

/// One file of an example.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExampleFile {
    /// The file name, relative to the directory the example is written to.
    pub name: &'static str,
    pub text: &'static str,
    /// Whether to mark it executable (a script).
    pub executable: bool,
}

/// An example: its files and what it needs to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Example {
    pub provider: &'static str,
    pub files: &'static [ExampleFile],
    /// The environment variable holding the key it reads, if any.
    pub key_env: Option<&'static str>,
}

const fn file(name: &'static str, text: &'static str) -> ExampleFile {
    ExampleFile {
        name,
        text,
        executable: false,
    }
}

const SIM: &[ExampleFile] = &[file("probity.toml", CONFIG), file("inputs.jsonl", INPUTS)];
const OPENAI: &[ExampleFile] = &[
    file("probity.toml", OPENAI_CONFIG),
    file("inputs.jsonl", INPUTS),
];
const ANTHROPIC: &[ExampleFile] = &[
    file("probity.toml", ANTHROPIC_CONFIG),
    file("inputs.jsonl", INPUTS),
];
const HTTP: &[ExampleFile] = &[
    file("probity.toml", HTTP_CONFIG),
    file("inputs.jsonl", INPUTS),
];
const COMMAND: &[ExampleFile] = &[
    file("probity.toml", COMMAND_CONFIG),
    file("inputs.jsonl", INPUTS),
    ExampleFile {
        name: "system.py",
        text: COMMAND_SCRIPT,
        executable: true,
    },
];

/// The example for `provider` (one of [`PROVIDERS`]).
const AGENT: &[ExampleFile] = &[
    file("probity.toml", AGENT_CONFIG),
    file("tasks.jsonl", AGENT_TASKS),
];

pub fn example(provider: &str) -> Option<Example> {
    let (files, key_env) = match provider {
        "sim" => (SIM, None),
        "agent" => (AGENT, None),
        "openai" => (OPENAI, Some("OPENAI_API_KEY")),
        "anthropic" => (ANTHROPIC, Some("ANTHROPIC_API_KEY")),
        "http" => (HTTP, Some("HTTP_API_KEY")),
        "command" => (COMMAND, None),
        _ => return None,
    };
    let provider = PROVIDERS.into_iter().find(|p| *p == provider)?;
    Some(Example {
        provider,
        files,
        key_env,
    })
}
