//! The command provider and the closure provider.

use crate::common;

use probity_core::Input;
use probity_engine::provider::{
    CommandConfig, CommandProvider, Completion, FnProvider, Message, Provider, ProviderError,
    Request, Role, StdinMode,
};
use probity_engine::system::ProviderConfig;
use std::time::Duration;

fn request(text: &str) -> Request {
    Request {
        messages: vec![
            Message::text(Role::System, "SYS"),
            Message::text(Role::User, text),
        ],
        repetition: 2,
        attempt: 1,
        input: Input::text("id-9", text),
    }
}

fn sh(script: &str) -> CommandConfig {
    CommandConfig::new(["/bin/sh", "-c", script])
}

/// The message of the command error `config` answers a call with.
async fn command_error(config: CommandConfig) -> String {
    let err = CommandProvider::new(config)
        .unwrap()
        .complete(&request("x"))
        .await
        .unwrap_err();
    match err {
        ProviderError::Command(msg) => msg,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn cat_echoes_the_prompt() {
    let p = CommandProvider::new(CommandConfig::new(["cat"])).unwrap();
    let out = p.complete(&request("hello world")).await.unwrap();
    assert_eq!(out.text, "SYS\n\nhello world");
}

#[tokio::test]
async fn json_stdin_carries_the_request() {
    let mut c = CommandConfig::new(["cat"]);
    c.stdin = StdinMode::Json;
    let out = CommandProvider::new(c)
        .unwrap()
        .complete(&request("hi"))
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out.text).unwrap();
    assert_eq!(v["repetition"], 2);
    assert_eq!(v["attempt"], 1);
    assert_eq!(v["input"]["id"], "id-9");
    assert_eq!(v["messages"][1]["content"], "hi");
}

#[tokio::test]
async fn shell_script_with_env_and_trim() {
    let mut c = sh("read line; echo \"$PREFIX: $line\"; echo");
    c.env.insert("PREFIX".into(), "got".into());
    let p = CommandProvider::new(c.clone()).unwrap();
    assert_eq!(p.complete(&request("x")).await.unwrap().text, "got: SYS");
    c.trim = false;
    let p = CommandProvider::new(c).unwrap();
    assert_eq!(
        p.complete(&request("x")).await.unwrap().text,
        "got: SYS\n\n"
    );
}

#[tokio::test]
async fn non_zero_exit_reports_status_and_stderr_tail() {
    let p = CommandProvider::new(sh("cat >/dev/null; echo 'model exploded' >&2; exit 3")).unwrap();
    let err = p.complete(&request("x")).await.unwrap_err();
    let ProviderError::Command(msg) = &err else {
        panic!("{err:?}")
    };
    assert!(msg.contains('3'), "{msg}");
    assert!(msg.contains("model exploded"), "{msg}");
    // A program that ignores stdin and fails is still reported properly.
    let err = CommandProvider::new(sh("exit 1"))
        .unwrap()
        .complete(&request("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, ProviderError::Command(_)), "{err:?}");
    // A missing program.
    let err = CommandProvider::new(CommandConfig::new(["/nonexistent/probity-prog"]))
        .unwrap()
        .complete(&request("x"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("probity-prog"), "{err}");
}

/// A program that writes more than an output may be is stopped, the call
/// failing with that cause (not a timeout, not a 100 MB output kept),
/// even while it also fills stderr; one just under the limit is read whole.
#[tokio::test]
async fn an_output_over_the_limit_is_stopped_and_named() {
    use probity_engine::provider::MAX_OUTPUT_BYTES;
    let mut c =
        sh("cat >/dev/null; yes 'spam spam spam' >&2 & head -c 100000000 /dev/zero | tr '\\0' x");
    c.timeout_s = 60.0;
    let msg = command_error(c).await;
    assert!(msg.contains("more than 16 MiB to stdout"), "{msg}");
    let just_under = MAX_OUTPUT_BYTES - 1;
    let out = CommandProvider::new(sh(&format!(
        "cat >/dev/null; head -c {just_under} /dev/zero | tr '\\0' y"
    )))
    .unwrap()
    .complete(&request("x"))
    .await
    .unwrap();
    assert_eq!(out.text.len() as u64, just_under);
}

#[tokio::test]
async fn timeout_kills_the_child() {
    let mut c = sh("sleep 5; echo late");
    c.timeout_s = 0.3;
    let t0 = std::time::Instant::now();
    let err = CommandProvider::new(c)
        .unwrap()
        .complete(&request("x"))
        .await
        .unwrap_err();
    assert_eq!(err, ProviderError::Timeout(Duration::from_millis(300)));
    assert!(t0.elapsed() < Duration::from_secs(3));
}

#[test]
fn config_from_toml_and_validation() {
    let p: ProviderConfig = toml::from_str(
        "provider = \"command\"\ncommand = [\"cat\"]\nstdin = \"json\"\ntimeout_secs = 5",
    )
    .unwrap();
    let ProviderConfig::Command(c) = &p else {
        panic!("{p:?}")
    };
    assert_eq!(c.stdin, StdinMode::Json);
    assert!(p.build().unwrap().fingerprint().starts_with("command|"));
    assert!(toml::from_str::<ProviderConfig>(
        "provider = \"command\"\ncommand = [\"cat\"]\nbogus = 1"
    )
    .is_err());
    assert!(toml::from_str::<ProviderConfig>("provider = \"nope\"").is_err());
    let empty: ProviderConfig = toml::from_str("provider = \"command\"\ncommand = []").unwrap();
    assert!(empty.build().is_err());
    let mut c = CommandConfig::new(["cat"]);
    c.timeout_s = 0.0;
    assert!(CommandProvider::new(c).is_err());
}

#[tokio::test]
async fn closure_provider() {
    let p = FnProvider::new(|req: &Request| {
        if req.repetition > 5 {
            return Err(ProviderError::Server {
                status: 503,
                body: "busy".into(),
            });
        }
        Ok(Completion {
            text: format!("{} #{}", req.input.as_text(), req.repetition),
            ..Completion::default()
        })
    })
    .with_fingerprint("echo-v1");
    assert_eq!(p.complete(&request("hey")).await.unwrap().text, "hey #2");
    let mut r = request("hey");
    r.repetition = 6;
    assert!(p.complete(&r).await.unwrap_err().is_retryable());
    assert_eq!(p.fingerprint(), "echo-v1");
    // Usable as a trait object.
    let dynp: std::sync::Arc<dyn Provider> = std::sync::Arc::new(p);
    assert_eq!(dynp.complete(&request("a")).await.unwrap().text, "a #2");
}

/// A program that leaves a child of its own behind, holding its stdout and
/// stderr open, is answered when it exits, not when that child does (or
/// at the timeout): its output, or its exit status with its stderr.
#[tokio::test]
async fn a_background_grandchild_holding_the_pipes_does_not_hold_the_call() {
    let mut ok = sh("cat >/dev/null; echo answer; sleep 3 &");
    ok.timeout_s = 2.0;
    let out = CommandProvider::new(ok)
        .unwrap()
        .complete(&request("x"))
        .await
        .unwrap();
    assert_eq!(out.text, "answer");
    let mut failing = sh("cat >/dev/null; echo 'bad things' >&2; sleep 3 & exit 3");
    failing.timeout_s = 2.0;
    let msg = command_error(failing).await;
    assert!(
        msg.contains("exit status: 3") && msg.contains("bad things"),
        "{msg}"
    );
}

/// A program with `stdin = "json"` gets the conversation whole: what it
/// read from stdin (written to a file by the program itself) holds the
/// four messages exactly, tool call and result included.
#[tokio::test]
async fn a_json_program_reads_the_whole_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let got = dir.path().join("got.json");
    let mut c = sh("cat > \"$GOT\"; echo done");
    c.env.insert("GOT".into(), got.display().to_string());
    c.stdin = StdinMode::Json;
    let input = common::conversation_input("trip", common::trip_conversation());
    let out = CommandProvider::new(c)
        .unwrap()
        .complete(&common::conversation_request(&input))
        .await
        .unwrap();
    assert_eq!(out.text, "done");
    let read: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&got).unwrap()).unwrap();
    assert_eq!(read["messages"], common::trip_conversation());
    assert_eq!(read["input"]["id"], "trip");
}

/// `stdin = "prompt"` has room for text only: a conversation with an
/// assistant turn is refused before the program starts, naming the input,
/// the message and what would carry it.
#[tokio::test]
async fn a_prompt_program_refuses_a_conversation_it_cannot_carry() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let mut c = sh("touch \"$RAN\"; cat");
    c.env.insert("RAN".into(), ran.display().to_string());
    let input = common::conversation_input("trip", common::trip_conversation());
    let err = CommandProvider::new(c)
        .unwrap()
        .complete(&common::conversation_request(&input))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot send input \"trip\": message 1 (assistant): stdin = \"prompt\" sends text only and has no place for an assistant turn with tool calls; set stdin = \"json\" to send the conversation whole"
    );
    assert!(!err.is_retryable());
    assert!(!ran.exists(), "the program must not run");
}

/// A closure gets the messages whole.
#[tokio::test]
async fn a_closure_gets_the_whole_conversation() {
    let p = FnProvider::new(|req: &Request| {
        Ok(Completion {
            text: probity_core::conversation::to_openai(&req.messages).to_string(),
            ..Completion::default()
        })
    });
    let input = common::conversation_input("trip", common::trip_conversation());
    let out = p
        .complete(&common::conversation_request(&input))
        .await
        .unwrap();
    let got: serde_json::Value = serde_json::from_str(&out.text).unwrap();
    assert_eq!(got, common::trip_conversation());
}
