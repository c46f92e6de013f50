//! The HTML report in a real browser: Debian's `chromium`, headless.
//!
//! Skipped, with a notice, when `chromium` is not on PATH (CI installs
//! it). Checks the DOM after the page's script ran (`--dump-dom`): the
//! script initialised under the page's Content-Security-Policy, the filter
//! given in the URL hash hid the other checks' rows, nothing hostile became
//! an element; and saves a screenshot under the target directory.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use probity_report::{render, Format};

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
}

/// Run chromium headless with `args` on `url`; its stdout.
fn run(browser: &Path, profile: &Path, args: &[&str], url: &str) -> String {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(url)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = cmd.spawn().expect("start chromium");
    let id = child.id();
    // A watchdog, so a hung browser fails the test instead of the build.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    let watchdog = std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(90) {
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = Command::new("kill").arg(id.to_string()).status();
    });
    let out = child.wait_with_output().expect("wait for chromium");
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = watchdog.join();
    assert!(
        out.status.success(),
        "chromium failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The opening tags in `dom` that contain `needle`.
fn tags_with<'a>(dom: &'a str, needle: &str) -> Vec<&'a str> {
    dom.split('<')
        .map(|t| t.split('>').next().unwrap_or(""))
        .filter(|t| t.contains(needle))
        .collect()
}

fn is_hidden(tag: &str) -> bool {
    tag.split_whitespace()
        .any(|a| a == "hidden" || a.starts_with("hidden="))
}

#[test]
fn report_works_in_chromium() {
    let Some(browser) = chromium() else {
        common::notice(
            "NOTICE: chromium is not on PATH; skipping the browser test of the HTML report",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let report = common::tensor_report(5, 20);
    std::fs::write(&page, render(&report, Format::Html, false)).unwrap();
    let url = format!("file://{}", page.display());

    // 1. With a filter in the hash: the script ran, and applied it.
    let profile = tempfile::tempdir().unwrap();
    let dom = run(
        &browser,
        profile.path(),
        &["--dump-dom"],
        &format!("{url}#validator=1"),
    );
    assert!(
        dom.contains("data-ready=\"1\""),
        "script did not run (CSP?):\n{}",
        &dom[..dom.len().min(2000)]
    );
    let filters = tags_with(&dom, "id=\"filters\"");
    assert_eq!(filters.len(), 1);
    assert!(
        !is_hidden(filters[0]),
        "filters still hidden: {}",
        filters[0]
    );
    // Check rows: only check 1's is shown.
    let rows = tags_with(&dom, "class=\"filterable\" data-validator=");
    assert!(rows.len() >= 6, "{rows:?}");
    for t in &rows {
        let mine = t.contains("data-validator=\"1\"");
        assert_eq!(is_hidden(t), !mine, "{t}");
    }
    // Failing outputs: only those that failed check 1.
    let fails = tags_with(&dom, "class=\"failure filterable\"");
    assert_eq!(fails.len(), report.failures.len());
    let mut shown = 0;
    for t in &fails {
        let v = t
            .split("data-validators=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap();
        let has = v.split(' ').any(|k| k == "1");
        assert_eq!(is_hidden(t), !has, "{t}");
        shown += usize::from(has);
    }
    assert!(shown > 0 && shown < fails.len());
    assert!(dom.contains(&format!("{shown} of {} shown", fails.len())));
    // The input × repetition chart of check 1 is the one shown.
    for t in tags_with(&dom, "figure class=\"rep\"") {
        assert_eq!(is_hidden(t), !t.contains("data-rep=\"1\""), "{t}");
    }
    // Nothing hostile became an element; it is there as text.
    assert!(!dom.contains("<img"), "an <img> element was injected");
    assert_eq!(dom.matches("<script").count(), 1);
    assert!(!dom.contains("<textarea"));
    assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));

    // 2. An input filter combines with the check filter.
    let profile = tempfile::tempdir().unwrap();
    let dom = run(
        &browser,
        profile.path(),
        &["--dump-dom"],
        &format!("{url}#validator=0&input=4"),
    );
    for t in tags_with(&dom, "class=\"failure filterable\"") {
        let ok = t.contains("data-input=\"4\"")
            && t.split("data-validators=\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .is_some_and(|v| v.split(' ').any(|k| k == "0"));
        assert_eq!(is_hidden(t), !ok, "{t}");
    }

    // 3. Without JavaScript everything is readable: nothing is hidden but
    // the (useless) filter controls.
    let profile = tempfile::tempdir().unwrap();
    let dom = run(
        &browser,
        profile.path(),
        &["--dump-dom", "--blink-settings=scriptEnabled=false"],
        &format!("{url}#validator=1"),
    );
    assert!(!dom.contains("data-ready"));
    for t in tags_with(&dom, "filterable")
        .into_iter()
        .chain(tags_with(&dom, "figure class=\"rep\""))
    {
        assert!(!is_hidden(t), "hidden without JS: {t}");
    }

    // 4. A screenshot to look at, next to a copy of the page.
    let keep = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::copy(&page, keep.join("probity-report.html")).unwrap();
    let shot = keep.join("probity-report.png");
    let _ = std::fs::remove_file(&shot);
    let profile = tempfile::tempdir().unwrap();
    run(
        &browser,
        profile.path(),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000",
        ],
        &url,
    );
    assert!(shot.is_file(), "no screenshot at {}", shot.display());
    println!("screenshot of the HTML report: {}", shot.display());
}
