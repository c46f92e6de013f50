//! Every path in a configuration resolves against the configuration file's
//! directory, not the working directory (docs/config.md, Paths): the
//! inputs, the command provider's program (when written with a `/`) and its
//! arguments (it runs in that directory), in `[system]`, in a judge's
//! `[verifier.system]` and in `probity serve`'s `[upstream]`. The tests
//! keep the process's working directory (the crate) and put the
//! configuration in a temporary directory elsewhere.

use probity_core::Input;
use probity_engine::checks::verifier::JudgeConfig;
use probity_engine::config::Config;
use probity_engine::provider::{CommandConfig, Message, Request, Role};
use probity_engine::system::ProviderConfig;
use std::path::Path;

const CHECK: &str = "[[validator]]\nname = \"any\"\ncheck = \"true\"\n";

fn request(text: &str) -> Request {
    Request {
        messages: vec![Message::text(Role::User, text)],
        repetition: 0,
        attempt: 0,
        input: Input::text("i1", text),
    }
}

fn write_script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// `text` loaded as `dir/probity.toml`, with one input file next to it.
fn load(dir: &Path, text: &str) -> Config {
    std::fs::write(dir.join("inputs.jsonl"), "{\"text\": \"hello\"}\n").unwrap();
    let path = dir.join("probity.toml");
    std::fs::write(&path, text).unwrap();
    Config::load(&path).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

async fn answer(config: &Config) -> Result<String, String> {
    let exp = config.experiment().map_err(|e| e.to_string())?;
    exp.system
        .complete(&request("hello"))
        .await
        .map(|c| c.text)
        .map_err(|e| e.to_string())
}

fn command_config(command: &str) -> String {
    format!(
        "[system]\nprovider = \"command\"\ncommand = {command}\n[experiment]\ninputs = \"inputs.jsonl\"\n{CHECK}"
    )
}

#[tokio::test]
async fn a_program_with_a_slash_resolves_against_the_config_directory() {
    let tmp = tempfile::tempdir().unwrap();
    assert_ne!(std::env::current_dir().unwrap(), tmp.path());
    write_script(&tmp.path().join("answer.sh"), "echo dot-slash");
    write_script(&tmp.path().join("bin/answer.sh"), "echo subdir");
    let c = load(tmp.path(), &command_config(r#"["./answer.sh"]"#));
    assert_eq!(answer(&c).await.unwrap(), "dot-slash");
    let c = load(tmp.path(), &command_config(r#"["bin/answer.sh"]"#));
    assert_eq!(answer(&c).await.unwrap(), "subdir");
}

#[tokio::test]
async fn a_bare_program_is_looked_up_on_path_and_runs_in_the_config_directory() {
    let tmp = tempfile::tempdir().unwrap();
    // `sh` from PATH; its argument `answer.sh` is relative: found because
    // the command runs in the configuration's directory.
    write_script(&tmp.path().join("answer.sh"), "echo \"from $(pwd)\"");
    let c = load(tmp.path(), &command_config(r#"["sh", "answer.sh"]"#));
    let out = answer(&c).await.unwrap();
    let here = tmp.path().canonicalize().unwrap();
    assert_eq!(
        Path::new(out.trim_start_matches("from "))
            .canonicalize()
            .unwrap(),
        here,
        "{out}"
    );
}

#[tokio::test]
async fn an_absolute_program_stays_as_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let script = other.path().join("abs.sh");
    write_script(&script, "echo absolute");
    let c = load(
        tmp.path(),
        &command_config(&format!("[{:?}]", script.to_str().unwrap())),
    );
    assert_eq!(answer(&c).await.unwrap(), "absolute");
}

#[tokio::test]
async fn a_missing_program_names_the_resolved_path() {
    let tmp = tempfile::tempdir().unwrap();
    let c = load(tmp.path(), &command_config(r#"["./missing.sh"]"#));
    let err = answer(&c).await.unwrap_err();
    let dir = std::path::absolute(tmp.path()).unwrap();
    assert!(
        err.contains(&dir.join("./missing.sh").display().to_string()),
        "{err}"
    );
}

#[test]
fn the_config_hash_does_not_depend_on_where_the_file_is() {
    let text = command_config(r#"["./answer.sh"]"#);
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (ca, cb) = (load(a.path(), &text), load(b.path(), &text));
    assert_eq!(ca.hash, cb.hash);
    // The stored configuration is the file as written.
    let json = serde_json::to_string(&ca.file).unwrap();
    assert!(!json.contains(a.path().to_str().unwrap()), "{json}");
}

#[test]
fn judge_providers_resolve_too() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "[experiment]\ninputs = \"inputs.jsonl\"\n{CHECK}\n[[verifier]]\nname = \"judge\"\ninstructions = \"x\"\n[verifier.system]\nprovider = \"command\"\ncommand = [\"./judge.sh\"]\n"
    );
    let c = load(tmp.path(), &text);
    let Some(JudgeConfig::Provider(ProviderConfig::Command(j))) =
        c.file.verifiers[0].system.as_deref()
    else {
        panic!("{:?}", c.file.verifiers[0].system)
    };
    let dir = std::path::absolute(tmp.path()).unwrap();
    assert_eq!(j.base_dir.as_deref(), Some(dir.as_path()));
    assert_eq!(j.program(), dir.join("./judge.sh"));
    // The system (sim here) has no paths; the judge's are its own.
    assert!(matches!(*c.file.system, ProviderConfig::Sim(_)));
}

#[test]
fn serve_upstream_resolves_against_the_guard_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("guard.toml");
    std::fs::write(
        &path,
        format!("[upstream]\nprovider = \"command\"\ncommand = [\"./up.sh\"]\n{CHECK}"),
    )
    .unwrap();
    let loaded = probity_engine::serve::load(&path).unwrap();
    let ProviderConfig::Command(c) = &*loaded.config.upstream else {
        panic!()
    };
    let dir = std::path::absolute(tmp.path()).unwrap();
    assert_eq!(c.program(), dir.join("./up.sh"));
}

#[test]
fn without_a_file_nothing_is_resolved() {
    let c = CommandConfig::new(["./x.sh"]);
    assert_eq!(c.base_dir, None);
    assert_eq!(c.program(), Path::new("./x.sh"));
    // An empty directory (a file name without one) is the working directory.
    let mut p = ProviderConfig::Command(CommandConfig::new(["./x.sh"]));
    p.resolve_paths(Path::new(""));
    let ProviderConfig::Command(c) = p else {
        unreachable!()
    };
    assert_eq!(c.base_dir.unwrap(), std::path::absolute(".").unwrap());
}

#[test]
fn timeout_s_is_the_name_and_timeout_secs_an_alias() {
    for provider in [
        "provider = \"openai\"\nmodel = \"m\"",
        "provider = \"anthropic\"\nmodel = \"m\"",
        "provider = \"http\"\nurl = \"http://x\"",
        "provider = \"command\"\ncommand = [\"cat\"]",
    ] {
        let new: ProviderConfig = toml::from_str(&format!("{provider}\ntimeout_s = 7.5")).unwrap();
        let old: ProviderConfig =
            toml::from_str(&format!("{provider}\ntimeout_secs = 7.5")).unwrap();
        assert_eq!(new, old, "{provider}");
        let json = serde_json::to_value(&new).unwrap();
        assert_eq!(json["timeout_s"], 7.5, "{json}");
        assert!(json.get("timeout_secs").is_none(), "{json}");
        // Both at once is an error, not a silent choice.
        assert!(toml::from_str::<ProviderConfig>(&format!(
            "{provider}\ntimeout_s = 1\ntimeout_secs = 2"
        ))
        .is_err());
    }
}
