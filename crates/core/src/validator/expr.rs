//! Expression validators: predicates written in [Rhai](https://rhai.rs),
//! the configuration-file counterpart of the paper's `lambda o` and
//! `lambda i, o` (§2.1).
//!
//! # Why Rhai
//!
//! * **Sandboxed**: a script can only call the functions the host
//!   registers; there is no file, network, process or clock access. Here
//!   `print`/`debug` go nowhere, `eval` and `import` are disabled and the
//!   module resolver resolves nothing.
//! * **Bounded**: the engine counts operations and limits string, array and
//!   map sizes, variables, call depth and expression depth, so `loop {}` or
//!   a string that doubles forever ends quickly in an error instead of a
//!   hang or an out-of-memory abort. Rhai's `sleep` is disabled (calling it
//!   is an error). A wall-clock limit ([`MAX_EVAL_TIME`], on a
//!   clock the program installs: the core reads none) backs the operation
//!   count up for the few operations that are slow one
//!   by one (deep copies of nested data), and evaluations run on threads
//!   with a large stack ([`EVAL_STACK_BYTES`], see [`on_eval_stack`]), so
//!   nesting arrays tens of thousands deep is an error, not a stack
//!   overflow.
//! * **Rust-like syntax** that reads like the docs/validators.md examples
//!   (`if input.text.contains("Thank you") { … } else { true }`), with
//!   `"x" in s` as in the paper's Python.
//! * **Pure Rust, maintained, thread-safe** (`sync` feature): one compiled
//!   [`AST`] is shared by all rayon workers.
//!
//! # The language available to a check
//!
//! Variables: `output` (string), `input` (object map of the dataset row's
//! fields: `input.text`, `input.lang`, …; absent fields read as `()`), and
//! `input_text` (the input as one string, [`Input::as_text`]). A script may
//! assign to them, but that affects only its own evaluation: every call
//! starts from fresh values. Undeclared variables are compile errors.
//!
//! Helpers, besides Rhai's standard string functions (`contains`, `len`,
//! `starts_with`, `to_lower`, …):
//!
//! | function | result |
//! | --- | --- |
//! | `count(text, needle)` | non-overlapping occurrences of `needle` (0 for an empty needle), as Python's `str.count` |
//! | `matches(text, regex)` | whether `regex` matches somewhere in `text` |
//! | `count_matches(text, regex)` | the number of non-overlapping matches |
//! | `words(text)` | the number of whitespace-separated words |
//! | `chars(text)` | the number of characters (same as `text.len()`) |
//! | `json(text)` | `text` parsed as JSON into maps, arrays, numbers, strings, bools; `()` when it is not JSON |
//! | `is_json(text)` | whether `text` parses as JSON |
//! | `lower(text)`, `upper(text)`, `trim(text)` | new strings |
//!
//! Regexes are compiled on first use and cached per thread (up to
//! [`REGEX_CACHE_CAPACITY`] patterns), so a literal pattern costs one
//! compilation per worker thread, not one per evaluation.
//!
//! The script's value must be a bool. A non-bool value, a runtime error, an
//! exceeded limit ([`MAX_OPERATIONS`], [`MAX_STRING_SIZE`], …) or an invalid
//! regex yields [`Verdict::Error`] with the reason.

use super::builtin::{compile_regex, count_substring, word_count};
use super::shapes::{recognise, PrefixRule};
use crate::model::Input;
use crate::verdict::Verdict;
use regex::Regex;
use rhai::module_resolvers::DummyModuleResolver;
use rhai::{Dynamic, Engine, EvalAltResult, ImmutableString, Map, Scope, AST};
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Operations one evaluation may perform before it is stopped.
pub const MAX_OPERATIONS: u64 = 100_000;
/// Largest string (in bytes) a script may build.
pub const MAX_STRING_SIZE: usize = 4 << 20;
/// Largest array a script may build.
pub const MAX_ARRAY_SIZE: usize = 100_000;
/// Largest object map a script may build.
pub const MAX_MAP_SIZE: usize = 100_000;
/// Deepest function-call nesting.
pub const MAX_CALL_LEVELS: usize = 32;
/// Deepest expression nesting (global level, inside functions).
pub const MAX_EXPR_DEPTHS: (usize, usize) = (64, 32);
/// Variables a script may hold at once (the three declared ones included):
/// with [`MAX_STRING_SIZE`], what bounds the memory of one evaluation.
pub const MAX_VARIABLES: usize = 64;
/// Functions a script may define.
pub const MAX_FUNCTIONS: usize = 64;
/// Wall-clock time one evaluation may take before it is stopped.
pub const MAX_EVAL_TIME: Duration = Duration::from_secs(1);
/// Operations between two looks at the clock.
const CLOCK_EVERY: u64 = 256;
/// Stack of the threads expressions are evaluated on: deep enough for the
/// deepest data a script can build within its limits (Rhai copies, sizes
/// and drops nested arrays recursively).
pub const EVAL_STACK_BYTES: usize = 256 << 20;
/// Regexes cached per thread by `matches`/`count_matches`.
pub const REGEX_CACHE_CAPACITY: usize = 256;

/// A compile error: 1-based line and column when Rhai reports them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} (line {line:?}, column {column:?})")]
pub struct CompileError {
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

/// The shared, sandboxed engine with the helpers registered.
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(build_engine)
}

fn build_engine() -> Engine {
    let mut e = Engine::new();
    e.set_max_operations(MAX_OPERATIONS)
        .set_max_string_size(MAX_STRING_SIZE)
        .set_max_array_size(MAX_ARRAY_SIZE)
        .set_max_map_size(MAX_MAP_SIZE)
        .set_max_call_levels(MAX_CALL_LEVELS)
        .set_max_expr_depths(MAX_EXPR_DEPTHS.0, MAX_EXPR_DEPTHS.1)
        .set_max_variables(MAX_VARIABLES)
        .set_max_functions(MAX_FUNCTIONS)
        .set_strict_variables(true)
        // `input.field` on an input without that field is an error naming
        // it, not a silent `()` that compares false (test with
        // `"field" in input`).
        .set_fail_on_invalid_map_property(true)
        .set_module_resolver(DummyModuleResolver::new())
        .disable_symbol("eval")
        .disable_symbol("import");
    // Rhai's `sleep` (in its core package) blocks the thread, unseen by the
    // operation count: these registrations shadow it with an error.
    e.register_fn("sleep", |_: i64| -> Result<(), Box<EvalAltResult>> {
        Err(SLEEP_DISABLED.into())
    });
    e.register_fn("sleep", |_: f64| -> Result<(), Box<EvalAltResult>> {
        Err(SLEEP_DISABLED.into())
    });
    e.on_progress(|ops| {
        if ops % CLOCK_EVERY == 0 && past_deadline() {
            Some(Dynamic::from(TIME_UP))
        } else {
            None
        }
    });
    e.on_print(|_| {});
    e.on_debug(|_, _, _| {});

    e.register_fn("count", |text: &str, needle: &str| {
        count_substring(text, needle) as i64
    });
    e.register_fn(
        "matches",
        |text: &str, pattern: &str| -> Result<bool, Box<EvalAltResult>> {
            with_regex(pattern, |re| re.is_match(text))
        },
    );
    e.register_fn(
        "count_matches",
        |text: &str, pattern: &str| -> Result<i64, Box<EvalAltResult>> {
            with_regex(pattern, |re| re.find_iter(text).count() as i64)
        },
    );
    e.register_fn("words", |text: &str| word_count(text) as i64);
    e.register_fn("chars", |text: &str| text.chars().count() as i64);
    e.register_fn("json", |text: &str| {
        match serde_json::from_str::<Value>(text) {
            Ok(v) => json_to_dynamic(&v),
            Err(_) => Dynamic::UNIT,
        }
    });
    e.register_fn("is_json", |text: &str| {
        serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
    });
    e.register_fn("lower", |text: &str| text.to_lowercase());
    e.register_fn("upper", |text: &str| text.to_uppercase());
    e.register_fn("trim", |text: &str| text.trim().to_string());
    e
}

const SLEEP_DISABLED: &str = "`sleep` is not available in checks";

/// The token of an evaluation stopped by [`MAX_EVAL_TIME`].
const TIME_UP: &str = "time limit";

thread_local! {
    /// When the evaluation running on this thread must stop, on the
    /// installed [`Clock`]'s scale.
    static DEADLINE: Cell<Option<Duration>> = const { Cell::new(None) };
    /// Whether this thread is one of the evaluation pool's.
    static ON_EVAL_STACK: Cell<bool> = const { Cell::new(false) };
    static REGEXES: RefCell<HashMap<String, Regex>> = RefCell::new(HashMap::new());
    /// One evaluation scope per thread, reused: its three variables are
    /// overwritten in place on each call rather than pushed anew.
    static SCOPE: RefCell<Scope<'static>> = RefCell::new(declared_scope());
}

/// A monotonic clock: the time since some fixed origin. The core reads no
/// clock of its own (it is pure); a program that evaluates untrusted
/// expressions installs one with [`install_clock`] (the engine does), and
/// each evaluation is then stopped after [`MAX_EVAL_TIME`]. Without one,
/// the operation and size limits alone bound an evaluation.
pub type Clock = fn() -> Duration;

static CLOCK: OnceLock<Clock> = OnceLock::new();

/// Install the clock of the wall-clock limit (the first call wins).
pub fn install_clock(clock: Clock) {
    let _ = CLOCK.set(clock);
}

fn now() -> Option<Duration> {
    CLOCK.get().map(|clock| clock())
}

fn past_deadline() -> bool {
    DEADLINE.with(|d| d.get().zip(now()).is_some_and(|(at, now)| now >= at))
}

fn eval_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("probity-eval-{i}"))
            .stack_size(EVAL_STACK_BYTES)
            .start_handler(|_| ON_EVAL_STACK.with(|c| c.set(true)))
            .build()
            .ok()
    })
    .as_ref()
}

/// Run `f` on a thread of the evaluation pool (a rayon pool whose threads
/// have a stack of [`EVAL_STACK_BYTES`]), waiting for it; directly when
/// this thread already is one. Every expression evaluation goes through
/// it; callers evaluating many (a chunk, one output's checks) wrap the
/// whole batch to pay the hop once.
pub fn on_eval_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if ON_EVAL_STACK.with(Cell::get) {
        return f();
    }
    match eval_pool() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// Run `f` on a thread of the evaluation pool without waiting for it (the
/// caller learns the result through whatever `f` sends); on this thread
/// when the pool could not start. For async callers, which must not block
/// their worker: one hand-over to the pool instead of a blocked worker.
pub fn spawn_on_eval_stack(f: impl FnOnce() + Send + 'static) {
    match eval_pool() {
        Some(pool) => pool.spawn(f),
        None => f(),
    }
}

/// Whether the evaluation pool is unavailable here (it could not start),
/// so an evaluation would run on the caller's own stack.
fn needs_eval_stack() -> bool {
    !ON_EVAL_STACK.with(Cell::get) && eval_pool().is_some()
}

fn with_regex<T>(pattern: &str, f: impl FnOnce(&Regex) -> T) -> Result<T, Box<EvalAltResult>> {
    REGEXES.with(|cell| {
        let mut cache = cell.borrow_mut();
        if let Some(re) = cache.get(pattern) {
            return Ok(f(re));
        }
        let re = compile_regex("pattern", pattern).map_err(|e| e.reason.clone())?;
        if cache.len() >= REGEX_CACHE_CAPACITY {
            cache.clear();
        }
        let out = f(&re);
        cache.insert(pattern.to_string(), re);
        Ok(out)
    })
}

/// Convert JSON into Rhai values: objects → maps, arrays → arrays,
/// integers → `i64` (floats when out of range), `null` → `()`.
pub fn json_to_dynamic(v: &Value) -> Dynamic {
    match v {
        Value::Null => Dynamic::UNIT,
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64().unwrap_or(f64::NAN).into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(a) => a
            .iter()
            .map(json_to_dynamic)
            .collect::<rhai::Array>()
            .into(),
        Value::Object(o) => o
            .iter()
            .map(|(k, v)| (k.as_str().into(), json_to_dynamic(v)))
            .collect::<Map>()
            .into(),
    }
}

/// An input converted once for expressions: `input` and `input_text`.
#[derive(Clone, Debug)]
pub(crate) struct RhaiInput {
    map: Dynamic,
    text: ImmutableString,
}

impl RhaiInput {
    pub(crate) fn new(input: &Input) -> Self {
        let map: Map = input
            .fields
            .to_map()
            .iter()
            .map(|(k, v)| (k.as_str().into(), json_to_dynamic(v)))
            .collect();
        RhaiInput {
            map: map.into(),
            text: input.as_text().into(),
        }
    }
}

/// A Rhai expression compiled once into an [`AST`] and evaluated many
/// times, concurrently. Cloning is cheap (the AST is shared).
#[derive(Clone)]
pub struct Expression {
    source: Arc<str>,
    ast: Arc<AST>,
    uses_input: bool,
    negated: bool,
    /// How a prefix settles it, when its source is a recognised shape
    /// (negated along with the expression).
    prefix_rule: Option<Arc<PrefixRule>>,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expression")
            .field("source", &self.source)
            .field("negated", &self.negated)
            .finish()
    }
}

const DECLARED_VARIABLES: usize = 3;

/// Overwrite a declared variable (re-declaring it if a script shadowed or
/// somehow removed it).
fn set(scope: &mut Scope<'static>, name: &'static str, value: Dynamic) {
    match scope.get_mut(name) {
        Some(slot) => *slot = value,
        None => {
            scope.push_dynamic(name, value);
        }
    }
}

/// The variables a script may name, for strict-variable checking at compile
/// time. They are pushed as plain variables here, not constants: the
/// optimizer would otherwise fold these placeholder values into the AST.
fn declared_scope() -> Scope<'static> {
    let mut scope = Scope::new();
    scope.push("output", ImmutableString::new());
    scope.push("input", Map::new());
    scope.push("input_text", ImmutableString::new());
    scope
}

impl Expression {
    /// Compile `source`. Undeclared variables, syntax errors, `eval` and
    /// `import` are compile errors, reported with line and column.
    pub fn compile(source: &str) -> Result<Self, CompileError> {
        Self::compile_in(source, &declared_scope())
    }

    /// Compile `source` over the input alone: `input` and `input_text` in
    /// scope, and naming `output` a compile error (a condition decided
    /// before any output exists: [`super::condition::Condition`]).
    pub fn compile_over_input(source: &str) -> Result<Self, CompileError> {
        let mut scope = Scope::new();
        scope.push("input", Map::new());
        scope.push("input_text", ImmutableString::new());
        Self::compile_in(source, &scope)
    }

    fn compile_in(source: &str, scope: &Scope<'static>) -> Result<Self, CompileError> {
        let ast = engine()
            .compile_with_scope(scope, source)
            .map_err(|e| CompileError {
                line: e.1.line(),
                column: e.1.position(),
                message: e.0.to_string(),
            })?;
        // `input` and `input_text` are built only for scripts that can
        // name them (the identifier must appear in the source; `eval` is
        // disabled). A false positive only costs time.
        let uses_input = source.contains("input");
        Ok(Expression {
            source: source.into(),
            ast: Arc::new(ast),
            uses_input,
            negated: false,
            prefix_rule: recognise(source).map(Arc::new),
        })
    }

    /// The negation: `Pass` and `Fail` swap, `Error` stays `Error`.
    /// Negating twice gives back the original.
    #[must_use]
    pub fn negate(mut self) -> Self {
        self.negated = !self.negated;
        self.prefix_rule = self
            .prefix_rule
            .map(|r| Arc::new(r.as_ref().clone().negate()));
        self
    }

    /// Whether no output beginning with `prefix` passes, whatever follows
    /// (see [`super::check::Validator::fails_on_prefix`]). Only an
    /// expression that is exactly one of a few shapes, or a conjunction of
    /// them, is ever settled: `count(output, "'") <= 3`,
    /// `len(output) <= 280`, `!output.contains("sorry")`,
    /// `!matches(output, "https?://")`, … (the list is in the `shapes`
    /// module); each is read as the built-in check it computes and decided
    /// by [`Builtin::fails_on_prefix`](super::builtin::Builtin::fails_on_prefix).
    /// Anything else — input, other functions, `||`, `if` — is `false`.
    pub fn fails_on_prefix(&self, prefix: &str) -> bool {
        self.prefix_rule
            .as_ref()
            .is_some_and(|r| r.fails_on_prefix(prefix))
    }

    /// Whether [`Expression::fails_on_prefix`] can ever be true: the
    /// expression is one of the recognised shapes.
    pub fn may_fail_on_prefix(&self) -> bool {
        self.prefix_rule.is_some()
    }

    /// Whether this expression's result is inverted.
    pub fn is_negated(&self) -> bool {
        self.negated
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluate on one output of `input` (converting the input each call;
    /// see [`super::check::Validator::evaluate_prepared`]).
    pub fn evaluate(&self, input: &Input, output: &str) -> Verdict {
        if self.uses_input {
            self.run(Some(&RhaiInput::new(input)), output)
        } else {
            self.run(None, output)
        }
    }

    /// Whether the script can name `input` or `input_text` (so an input
    /// must be converted for it).
    pub fn uses_input(&self) -> bool {
        self.uses_input
    }

    /// Evaluate with the input already converted (`None` when the script
    /// does not use it); see [`super::prepared::PreparedInput`].
    pub(crate) fn evaluate_converted(&self, input: Option<&RhaiInput>, output: &str) -> Verdict {
        self.run(input.filter(|_| self.uses_input), output)
    }

    fn run(&self, input: Option<&RhaiInput>, output: &str) -> Verdict {
        if needs_eval_stack() {
            return on_eval_stack(|| self.run(input, output));
        }
        let attempt = catch_unwind(AssertUnwindSafe(|| {
            let previous = DEADLINE.with(|d| d.replace(now().map(|t| t + MAX_EVAL_TIME)));
            let verdict = SCOPE.with(|cell| match cell.try_borrow_mut() {
                Ok(mut scope) => self.run_in(&mut scope, input, output),
                Err(_) => self.run_in(&mut declared_scope(), input, output),
            });
            DEADLINE.with(|d| d.set(previous));
            verdict
        }));
        match attempt {
            Ok(v) => v,
            Err(_) => {
                DEADLINE.with(|d| d.set(None));
                Verdict::error("expression evaluation panicked")
            }
        }
    }

    fn run_in(
        &self,
        scope: &mut Scope<'static>,
        input: Option<&RhaiInput>,
        output: &str,
    ) -> Verdict {
        // The scope holds exactly the declared variables (a script's own
        // top-level `let`s are rewound after each call). A script may
        // assign to them; that only affects its own evaluation, since every
        // call overwrites all the values it can see.
        scope.rewind(DECLARED_VARIABLES);
        set(scope, "output", ImmutableString::from(output).into());
        if let Some(i) = input {
            set(scope, "input", i.map.clone());
            set(scope, "input_text", i.text.clone().into());
        }
        let result = engine().eval_ast_with_scope::<Dynamic>(scope, &self.ast);
        scope.rewind(DECLARED_VARIABLES);
        match result {
            Ok(v) => match v.flatten().as_bool() {
                Ok(b) => Verdict::from_bool(b != self.negated),
                Err(ty) => Verdict::error(format!(
                    "expression returned a value of type `{ty}`, not a bool"
                )),
            },
            Err(e) => Verdict::error(match *e {
                EvalAltResult::ErrorPropertyNotFound(field, _) => format!(
                    "the input has no field `{field}` (test for it with `\"{field}\" in input`)"
                ),
                EvalAltResult::ErrorTerminated(token, _)
                    if token.clone().into_immutable_string().ok().as_deref() == Some(TIME_UP) =>
                {
                    format!(
                        "expression stopped: it ran longer than its time limit of {} ms",
                        MAX_EVAL_TIME.as_millis()
                    )
                }
                other => format!("expression failed: {other}"),
            }),
        }
    }

    /// The input fields the script reads by name (`input.field`,
    /// `input["field"]`), in order of first appearance: what the dataset
    /// must provide. Found in the source text, so a read inside a branch
    /// that never runs counts too; method calls (`input.keys()`) do not.
    pub fn input_fields(&self) -> Vec<String> {
        static READS: OnceLock<Regex> = OnceLock::new();
        let re = READS.get_or_init(|| {
            Regex::new(
                r#"\binput\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)\b(\s*\()?|\[\s*"([^"]*)"\s*\])"#,
            )
            .expect("a valid pattern")
        });
        let mut out: Vec<String> = Vec::new();
        for c in re.captures_iter(&self.source) {
            let field = match (c.get(1), c.get(2), c.get(3)) {
                (Some(f), None, _) => f.as_str(),
                (_, _, Some(f)) => f.as_str(),
                _ => continue,
            };
            if !out.iter().any(|o| o == field) {
                out.push(field.to_string());
            }
        }
        out
    }
}
