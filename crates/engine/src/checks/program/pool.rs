//! A pool of long-running processes of one program, each answering one
//! JSON line with one JSON line.
//!
//! The protocol (docs/validators.md, "Programs"): for every output, one
//! line on the process's stdin,
//! `{"input_id": "q1", "input": {"text": …, …}, "output": "…"}`, and one
//! line back on its stdout, `{"verdict": "pass" | "fail" | "error",
//! "reason": "…"}` (`reason` optional). A process handles one request at a
//! time; the pool starts up to `processes` of them, on demand, and reuses
//! them. A process that crashes, answers with a line that is not a
//! verdict, or does not answer within the timeout is killed (it can no
//! longer be trusted to be in step) and the output's cell is an Error
//! whose cause names the program; the next request starts a fresh one.
//! Nothing here panics. Dropping the pool kills its processes.

use probity_core::validator::Explained;
use probity_core::Verdict;
use serde::Deserialize;
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How much of a process's stderr (its end) a cause quotes.
const STDERR_TAIL: usize = 1000;
/// How much of a bad answer a cause quotes.
const QUOTE: usize = 200;

/// What a pool runs and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramSettings {
    /// The program (resolved: absolute, relative to the working
    /// directory, or a bare name looked up on `PATH`).
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// The directory the processes run in (`None`: this process's).
    pub dir: Option<PathBuf>,
    /// How long one answer may take.
    pub timeout: Duration,
    /// Processes at most, at least 1.
    pub processes: usize,
    /// How the program is named in causes: the command as written.
    pub label: String,
}

/// One running process.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<std::io::Result<String>>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Default)]
struct State {
    idle: Vec<Worker>,
    /// Processes started and not yet discarded (idle or busy).
    live: usize,
}

/// The processes of one program validator: see the module documentation.
pub struct ProgramPool {
    settings: ProgramSettings,
    state: Mutex<State>,
    freed: Condvar,
}

impl std::fmt::Debug for ProgramPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramPool")
            .field("settings", &self.settings)
            .finish()
    }
}

/// A line the program answers with.
#[derive(Deserialize)]
struct Answer {
    verdict: AnswerVerdict,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum AnswerVerdict {
    Pass,
    Fail,
    Error,
}

/// Why a request got no verdict; the worker is discarded.
struct Broken(String);

impl ProgramPool {
    /// A pool that starts processes on demand (none yet).
    pub fn new(mut settings: ProgramSettings) -> Self {
        settings.processes = settings.processes.max(1);
        ProgramPool {
            settings,
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
        }
    }

    /// The settings the pool was made with.
    pub fn settings(&self) -> &ProgramSettings {
        &self.settings
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state half-made
        // (every change is one assignment): go on with it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The program's verdict on `output` of the input `input_id` with
    /// `fields`, and its reason. Blocks until a process is free and has
    /// answered, or the timeout. Every failure is an Error verdict naming
    /// the program.
    pub fn judge(
        &self,
        input_id: &str,
        fields: &serde_json::Map<String, serde_json::Value>,
        output: &str,
    ) -> Explained {
        let line = serde_json::json!({"input_id": input_id, "input": fields, "output": output});
        let mut line = line.to_string();
        line.push('\n');
        let mut worker = match self.acquire() {
            Ok(w) => w,
            Err(Broken(cause)) => return (Verdict::error(self.cause(&cause)), None),
        };
        match self.ask(&mut worker, &line) {
            Ok(verdict) => {
                self.release(worker);
                verdict
            }
            Err(Broken(cause)) => {
                drop(worker);
                self.discard();
                (Verdict::error(self.cause(&cause)), None)
            }
        }
    }

    fn cause(&self, what: &str) -> String {
        format!("program `{}`: {what}", self.settings.label)
    }

    /// An idle process, a new one when fewer than `processes` run, or the
    /// next one freed.
    fn acquire(&self) -> Result<Worker, Broken> {
        let mut state = self.lock();
        loop {
            if let Some(w) = state.idle.pop() {
                return Ok(w);
            }
            if state.live < self.settings.processes {
                state.live += 1;
                drop(state);
                return self.spawn().inspect_err(|_| self.discard());
            }
            state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn release(&self, worker: Worker) {
        self.lock().idle.push(worker);
        self.freed.notify_one();
    }

    /// One process fewer (it crashed, was killed, or never started).
    fn discard(&self) {
        let mut state = self.lock();
        state.live = state.live.saturating_sub(1);
        drop(state);
        self.freed.notify_one();
    }

    fn spawn(&self) -> Result<Worker, Broken> {
        let s = &self.settings;
        let mut command = Command::new(&s.program);
        if let Some(dir) = &s.dir {
            command.current_dir(dir);
        }
        let mut child = command
            .args(&s.args)
            .envs(&s.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                let dir = s
                    .dir
                    .as_ref()
                    .map(|d| format!(" in {}", d.display()))
                    .unwrap_or_default();
                Broken(format!("cannot start {:?}{dir}: {e}", s.program))
            })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Broken("its standard streams could not be opened".into()));
        };
        let (tx, lines) = mpsc::channel();
        std::thread::Builder::new()
            .name("probity-program-out".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| Broken(format!("cannot start a reader thread: {e}")))?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let sink = tail.clone();
        std::thread::Builder::new()
            .name("probity-program-err".into())
            .spawn(move || keep_tail(stderr, &sink))
            .map_err(|e| Broken(format!("cannot start a reader thread: {e}")))?;
        Ok(Worker {
            child,
            stdin,
            lines,
            stderr: tail,
        })
    }

    fn ask(&self, w: &mut Worker, line: &str) -> Result<Explained, Broken> {
        let sent = w
            .stdin
            .write_all(line.as_bytes())
            .and_then(|()| w.stdin.flush());
        if sent.is_err() {
            return Err(self.exited(w));
        }
        let answer = match w.lines.recv_timeout(self.settings.timeout) {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => return Err(Broken(format!("cannot read its answer: {e}"))),
            Err(RecvTimeoutError::Disconnected) => return Err(self.exited(w)),
            Err(RecvTimeoutError::Timeout) => {
                return Err(Broken(format!(
                    "no answer within {:.3}s (timeout_s); the process was stopped",
                    self.settings.timeout.as_secs_f64()
                )))
            }
        };
        let parsed: Answer = serde_json::from_str(answer.trim()).map_err(|e| {
            Broken(format!(
                "answered with a line that is not a verdict ({e}): {:?}; expected {{\"verdict\": \"pass\" | \"fail\" | \"error\", \"reason\": \"…\"}}",
                truncate(&answer, QUOTE)
            ))
        })?;
        Ok(match parsed.verdict {
            AnswerVerdict::Pass => (Verdict::Pass, parsed.reason),
            AnswerVerdict::Fail => (Verdict::Fail, parsed.reason),
            AnswerVerdict::Error => (
                Verdict::error(self.cause(&format!(
                    "error: {}",
                    parsed.reason.as_deref().unwrap_or("no reason given")
                ))),
                None,
            ),
        })
    }

    /// The process ended (or closed its streams): its exit status and the
    /// end of its stderr.
    fn exited(&self, w: &mut Worker) -> Broken {
        // The reader saw end of file; give the process a moment to exit
        // so that its status (and last words on stderr) can be reported.
        let mut status = None;
        for _ in 0..50 {
            if let Ok(Some(s)) = w.child.try_wait() {
                status = Some(s);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let stderr = {
            let tail = w.stderr.lock().unwrap_or_else(|p| p.into_inner());
            String::from_utf8_lossy(&tail.iter().copied().collect::<Vec<u8>>()).into_owned()
        };
        let status = status.map_or_else(
            || "closed its output".to_string(),
            |s| format!("exited ({s})"),
        );
        let stderr = stderr.trim();
        if stderr.is_empty() {
            Broken(format!("{status} without answering"))
        } else {
            Broken(format!("{status} without answering; stderr: {stderr}"))
        }
    }
}

/// Keep the last [`STDERR_TAIL`] bytes of `from` in `tail`.
fn keep_tail(mut from: impl Read, tail: &Mutex<VecDeque<u8>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
        t.extend(&buf[..n]);
        let excess = t.len().saturating_sub(STDERR_TAIL);
        t.drain(..excess);
    }
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}
