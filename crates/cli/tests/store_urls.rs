//! A store URL holding a password, as a user meets it on a bad day: in the
//! environment while asking for `--help`, in a `--set`, mistyped, with an
//! unescaped `@` in the password, with the password as a percent-encoded
//! parameter. The password is never printed, and no mistyped URL becomes
//! a file. No server is needed: nothing here gets as far as connecting,
//! or it connects to a port where nothing listens.

use crate::common;

use common::{probity_cmd, text};
use std::process::Output;

const SECRET: &str = "S3cr3t-pw";

fn probity_in(dir: &std::path::Path, args: &[&str], store_env: Option<&str>) -> Output {
    let mut c = probity_cmd();
    c.current_dir(dir).args(args);
    match store_env {
        Some(url) => c.env("PROBITY_STORE", url),
        None => c.env_remove("PROBITY_STORE"),
    };
    c.output().unwrap()
}

fn assert_hidden(out: &Output, what: &str) {
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    for part in [SECRET, "ss:w/rd", "TOPSECRETQ"] {
        assert!(!all.contains(part), "{what}: {part} shown:\n{all}");
    }
}

#[test]
fn help_never_shows_the_store_variables_password() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("postgres://ci:{SECRET}@127.0.0.1:9/probity");
    for command in ["runs", "run", "report", "serve", "view"] {
        let out = probity_in(dir.path(), &[command, "--help"], Some(&url));
        assert_eq!(out.status.code(), Some(0), "{command}");
        assert!(text(&out.stdout).contains("PROBITY_STORE"), "{command}");
        assert_hidden(&out, command);
    }
}

#[test]
fn a_set_store_url_with_a_password_is_refused_without_showing_it() {
    let dir = tempfile::tempdir().unwrap();
    assert!(probity_in(dir.path(), &["init", "demo"], None)
        .status
        .success());
    let set = format!("store.url=postgres://ci:{SECRET}@127.0.0.1:9/probity");
    let out = probity_in(
        dir.path(),
        &["run", "demo/probity.toml", "--set", &set],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("holds a password"),
        "{}",
        text(&out.stderr)
    );
    assert_hidden(&out, "--set");
}

#[test]
fn mistyped_or_unreadable_urls_are_refused_and_never_become_files() {
    let dir = tempfile::tempdir().unwrap();
    for (store, says) in [
        (
            format!("postgres//ci:{SECRET}@127.0.0.1/probity"),
            "needs `postgres://`",
        ),
        (
            "postgres://ci:p@ss:w/rd#x%y@127.0.0.1:5432/probity".to_string(),
            "unescaped `@`",
        ),
        (format!("file:{SECRET}.db"), "without `file:`"),
    ] {
        let out = probity_in(dir.path(), &["runs", "--store", &store], None);
        assert_eq!(out.status.code(), Some(2), "{store}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
        assert_hidden(&out, &store);
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_percent_encoded_password_parameter_is_masked_and_refused_in_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let url = "postgres://127.0.0.1:9/probity?user=ci&pass%77ord=TOPSECRETQ";
    let out = probity_in(dir.path(), &["runs", "--store", url], None);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("pass%77ord=***"),
        "{}",
        text(&out.stderr)
    );
    assert_hidden(&out, "--store");
    // In `[store] url` it is a password written in the file: refused.
    assert!(probity_in(dir.path(), &["init", "demo"], None)
        .status
        .success());
    let config = dir.path().join("demo/probity.toml");
    let mut text_of = std::fs::read_to_string(&config).unwrap();
    text_of.push_str(&format!("\n[store]\nurl = \"{url}\"\n"));
    std::fs::write(&config, text_of).unwrap();
    let out = probity_in(dir.path(), &["run", "demo/probity.toml"], None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("holds a password"));
    assert_hidden(&out, "[store] url");
}

#[test]
fn an_unreadable_url_is_a_usage_error_naming_the_part() {
    let dir = tempfile::tempdir().unwrap();
    for (url, says) in [
        (
            format!("postgres://ci:{SECRET}@127.0.0.1:54x2/db"),
            "option `port`",
        ),
        (
            format!("postgres://ci:{SECRET}@127.0.0.1/db?bogus=1"),
            "unknown option `bogus`",
        ),
        (
            format!("postgres://ci:{SECRET}@127.0.0.1/db?sslmode=bogus"),
            "option `sslmode`",
        ),
    ] {
        let out = probity_in(dir.path(), &["runs", "--store", &url], None);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {err}");
        assert!(
            err.contains(says) && err.contains("not a valid PostgreSQL URL"),
            "{err}"
        );
        assert_hidden(&out, &url);
    }
}
