//! Command provider: one process per call, prompt on stdin, output on stdout.

use super::error::ConfigError;
use super::types::{unsendable, Completion, Provider, ProviderError, Request};
use super::util;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

/// What the command receives on stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StdinMode {
    /// The rendered prompt: the messages' contents joined by blank lines
    /// (system prompt first). Text only: a conversation with more than
    /// system messages and one user turn is refused, naming the message
    /// (use `json`).
    #[default]
    Prompt,
    /// The whole [`Request`] as one JSON object:
    /// `{"messages": […], "repetition", "attempt", "input": {"id", "fields"}}`,
    /// the messages whole in OpenAI's chat shape (`role`, `content`, and
    /// `tool_calls`, `tool_call_id`, `name` where a message has them).
    Json,
}

fn default_timeout() -> f64 {
    60.0
}
fn default_trim() -> bool {
    true
}

/// Settings of the `command` provider.
///
/// ```toml
/// provider = "command"
/// command = ["python3", "my_system.py", "--flag"]   # argv; no shell
/// stdin = "prompt"                                  # prompt | json
/// timeout_s = 60                                    # per call; the child is killed
/// trim = true                                       # strip trailing whitespace of stdout
/// env = { MODE = "test" }                           # extra environment variables
/// ```
///
/// Paths, when the configuration comes from a file
/// ([`ProviderConfig::resolve_paths`](super::ProviderConfig::resolve_paths)
/// sets [`base_dir`](Self::base_dir) to the file's directory): a program
/// written with a `/` and not absolute (`./system.sh`, `bin/system`) is
/// taken relative to that directory; a bare name (`python3`) is looked up
/// on `PATH`; an absolute path stays as it is. The command runs in that
/// directory, so relative arguments (`my_system.py`) resolve against it too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandConfig {
    pub command: Vec<String>,
    #[serde(default)]
    pub stdin: StdinMode,
    /// Per-call timeout in seconds (`timeout_secs`, the older name, is
    /// still accepted).
    #[serde(default = "default_timeout", alias = "timeout_secs")]
    pub timeout_s: f64,
    #[serde(default = "default_trim")]
    pub trim: bool,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    /// The directory relative paths resolve against and the command runs
    /// in: the configuration file's directory (absolute), set by
    /// [`ProviderConfig::resolve_paths`](super::ProviderConfig::resolve_paths).
    /// `None` (a configuration built in code): the process's working
    /// directory. Never read from or written to configuration.
    #[serde(skip)]
    pub base_dir: Option<PathBuf>,
}

impl CommandConfig {
    /// Runs `argv` with the prompt on stdin and defaults otherwise.
    pub fn new<S: Into<String>>(argv: impl IntoIterator<Item = S>) -> Self {
        CommandConfig {
            command: argv.into_iter().map(Into::into).collect(),
            stdin: StdinMode::Prompt,
            timeout_s: default_timeout(),
            trim: default_trim(),
            env: Default::default(),
            base_dir: None,
        }
    }

    /// The program to start: `command[0]`, relative to
    /// [`base_dir`](Self::base_dir) when it is a relative path with a `/`.
    pub fn program(&self) -> PathBuf {
        let written = self.command.first().map(String::as_str).unwrap_or("");
        let p = Path::new(written);
        match &self.base_dir {
            Some(base) if p.is_relative() && written.contains('/') => base.join(p),
            _ => p.to_path_buf(),
        }
    }
}

/// The `command` provider: spawns `command[0]` with arguments
/// `command[1..]` (no shell) for every call, writes the prompt (or the
/// request as JSON) to stdin and closes it, and returns stdout (lossily
/// decoded as UTF-8). A non-zero exit is `ProviderError::Command` with the
/// exit status and the tail of stderr; exceeding the timeout kills the child
/// and is `ProviderError::Timeout`.
#[derive(Debug)]
pub struct CommandProvider {
    config: CommandConfig,
    program: PathBuf,
    timeout: Duration,
}

/// How much of stderr a failure quotes (the end of it).
const STDERR_TAIL: usize = 1000;

/// The most stdout one call may write: an output, stored with the run and
/// checked by every check, not a stream of data. A program that writes
/// more is stopped and the call fails (the run's database would otherwise
/// grow by whatever it wrote: 4 × 50 MB outputs made a 200 MB store).
pub const MAX_OUTPUT_BYTES: u64 = 16 * 1024 * 1024;

/// How long the pipes are still read once the program has exited: what
/// it wrote is already in them, so they end at once unless a child it left
/// behind holds them open; that child's later writing is not the answer.
const PIPE_GRACE: Duration = Duration::from_millis(250);

/// Read `pipe` into `keep` until it ends, `stop` is set, or `keep` says it
/// has had enough (returns false); empty without a pipe.
async fn read_pipe(
    pipe: Option<impl AsyncRead + Unpin>,
    mut stop: watch::Receiver<bool>,
    mut keep: impl FnMut(&mut Vec<u8>, &[u8]) -> bool,
) -> Vec<u8> {
    let mut out = Vec::new();
    let Some(mut pipe) = pipe else {
        return out;
    };
    let mut buf = [0u8; 8192];
    loop {
        tokio::select! {
            read = pipe.read(&mut buf) => match read {
                Ok(n) if n > 0 => {
                    if !keep(&mut out, &buf[..n]) {
                        break;
                    }
                }
                _ => break,
            },
            _ = stop.wait_for(|s| *s) => break,
        }
    }
    out
}

/// Up to `limit` bytes of `pipe`; reading stops there.
async fn read_at_most(
    pipe: Option<impl AsyncRead + Unpin>,
    stop: watch::Receiver<bool>,
    limit: u64,
) -> Vec<u8> {
    read_pipe(pipe, stop, |out, bytes| {
        let room = (limit as usize).saturating_sub(out.len());
        out.extend_from_slice(&bytes[..bytes.len().min(room)]);
        out.len() < limit as usize
    })
    .await
}

/// All of `pipe` read, the last `4 × STDERR_TAIL` bytes kept: a program
/// that writes much to stderr is never blocked on a full pipe, and memory
/// stays bounded.
async fn read_tail(pipe: Option<impl AsyncRead + Unpin>, stop: watch::Receiver<bool>) -> Vec<u8> {
    let keep = 4 * STDERR_TAIL;
    read_pipe(pipe, stop, |tail, bytes| {
        tail.extend_from_slice(bytes);
        if tail.len() > 2 * keep {
            tail.drain(..tail.len() - keep);
        }
        true
    })
    .await
}

/// The error of a program that wrote more than [`MAX_OUTPUT_BYTES`].
fn too_much(program: &Path) -> ProviderError {
    ProviderError::Command(format!(
        "{program:?} wrote more than {} MiB to stdout; an output is at most that (it was stopped)",
        MAX_OUTPUT_BYTES / (1024 * 1024)
    ))
}

impl CommandProvider {
    /// Validates the configuration (a non-empty argv, a positive timeout).
    pub fn new(config: CommandConfig) -> Result<Self, ConfigError> {
        if config.command.first().is_none_or(|p| p.is_empty()) {
            return Err(ConfigError::Invalid(
                "command must be a non-empty list: program and arguments".into(),
            ));
        }
        let timeout = util::timeout(config.timeout_s, "timeout_s")?;
        Ok(CommandProvider {
            program: config.program(),
            config,
            timeout,
        })
    }

    fn stdin_bytes(&self, request: &Request) -> Result<Vec<u8>, ProviderError> {
        match self.config.stdin {
            StdinMode::Prompt => {
                if let Some((i, what)) = util::beyond_prompt(&request.messages) {
                    return Err(unsendable(
                        request,
                        i,
                        &format!("stdin = \"prompt\" sends text only and has no place for {what}; set stdin = \"json\" to send the conversation whole"),
                    ));
                }
                Ok(request
                    .messages
                    .iter()
                    .map(|m| m.content.as_str())
                    .collect::<Vec<_>>()
                    .join("\n\n")
                    .into_bytes())
            }
            StdinMode::Json => serde_json::to_vec(&serde_json::json!({
                "messages": probity_core::conversation::to_openai(&request.messages),
                "repetition": request.repetition,
                "attempt": request.attempt,
                "input": request.input,
            }))
            .map_err(|e| ProviderError::Command(format!("cannot encode the request: {e}"))),
        }
    }

    async fn run(&self, input: Vec<u8>) -> Result<Completion, ProviderError> {
        let program = &self.program;
        let mut command = tokio::process::Command::new(program);
        if let Some(dir) = &self.config.base_dir {
            command.current_dir(dir);
        }
        let mut child = command
            .args(&self.config.command[1..])
            .envs(&self.config.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                let dir = match &self.config.base_dir {
                    Some(d) => format!(" in {}", d.display()),
                    None => String::new(),
                };
                ProviderError::Command(format!("cannot start {program:?}{dir}: {e}"))
            })?;
        let mut stdin = child.stdin.take();
        let writer = async move {
            if let Some(stdin) = stdin.as_mut() {
                // A child that exits without reading its input is not an
                // error of ours (broken pipe): ignore write failures.
                let _ = stdin.write_all(&input).await;
                let _ = stdin.shutdown().await;
            }
            drop(stdin);
        };
        // Both pipes are drained on tasks of their own (a child blocked on
        // a full stderr pipe would never finish its stdout) while the
        // child is awaited; once it has exited they are read for
        // `PIPE_GRACE` more, not for as long as a child it left behind
        // holds them open.
        let (stop, stopped) = watch::channel(false);
        let mut stdout = tokio::spawn(read_at_most(
            child.stdout.take(),
            stopped.clone(),
            MAX_OUTPUT_BYTES + 1,
        ));
        let stderr = tokio::spawn(read_tail(child.stderr.take(), stopped));
        let writer = tokio::spawn(writer);
        let mut early = None;
        let status = loop {
            tokio::select! {
                status = child.wait() => break status,
                read = &mut stdout, if early.is_none() => {
                    let read = read.unwrap_or_default();
                    if read.len() as u64 > MAX_OUTPUT_BYTES {
                        stderr.abort();
                        let _ = child.kill().await;
                        return Err(too_much(program));
                    }
                    early = Some(read);
                }
            }
        }
        .map_err(|e| ProviderError::Command(format!("waiting for {program:?}: {e}")))?;
        // It has exited: it reads no more input (a child it left behind
        // may hold stdin open, and would hold the write forever).
        writer.abort();
        tokio::spawn(async move {
            tokio::time::sleep(PIPE_GRACE).await;
            let _ = stop.send(true);
        });
        let stdout = match early {
            Some(read) => read,
            None => stdout.await.unwrap_or_default(),
        };
        if stdout.len() as u64 > MAX_OUTPUT_BYTES {
            return Err(too_much(program));
        }
        let output = std::process::Output {
            status,
            stdout,
            stderr: stderr.await.unwrap_or_default(),
        };
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let stderr = stderr.trim_end();
            let mut start = stderr.len().saturating_sub(STDERR_TAIL);
            while !stderr.is_char_boundary(start) {
                start += 1;
            }
            return Err(ProviderError::Command(format!(
                "{program:?} exited with {}: {}",
                output.status,
                &stderr[start..]
            )));
        }
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        if self.config.trim {
            text.truncate(text.trim_end().len());
        }
        Ok(Completion {
            text,
            input_tokens: None,
            output_tokens: None,
        })
    }
}

#[async_trait::async_trait]
impl Provider for CommandProvider {
    async fn complete(&self, request: &Request) -> Result<Completion, ProviderError> {
        let input = self.stdin_bytes(request)?;
        match tokio::time::timeout(self.timeout, self.run(input)).await {
            Ok(r) => r,
            // Dropping the future drops the child, which kill_on_drop kills.
            Err(_) => Err(ProviderError::Timeout(self.timeout)),
        }
    }

    fn fingerprint(&self) -> String {
        // Environment values may be secrets: only their digest is included.
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for (k, v) in &self.config.env {
            h.update(k.as_bytes());
            h.update([0]);
            h.update(v.as_bytes());
            h.update([0]);
        }
        let env = hex::encode(&h.finalize()[..8]);
        format!(
            "command|{}",
            serde_json::json!({
                "command": self.config.command,
                "stdin": self.config.stdin,
                "trim": self.config.trim,
                "env": env,
            })
        )
    }
}
