//! `Config::from_parts`: a configuration assembled in code (the Python
//! package) is checked as a file is, with validators built in code placed
//! at their columns.

use probity_core::Validator;
use probity_engine::config::{Config, ConfigFile};
use std::path::Path;

fn file(text: &str) -> ConfigFile {
    toml::from_str(text).unwrap()
}

const TABLES: &str = r#"
name = "parts"
[[input]]
text = "Thank you!"
[[validator]]
name = "table_a"
kind = "contains"
value = "welcome"
[[validator]]
name = "table_b"
check = "true"
"#;

fn code(name: &str) -> Validator {
    Validator::new(name).check(|o: &str| !o.is_empty())
}

#[test]
fn code_validators_go_to_their_columns_among_the_tables() {
    let c = Config::from_parts(
        file(TABLES),
        "described",
        Path::new("/tmp/probity.py"),
        vec![
            (0, code("code_0")),
            (2, code("code_2")),
            (99, code("code_last")),
        ],
    )
    .unwrap();
    let names: Vec<&str> = c
        .checks
        .validators
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["code_0", "table_a", "code_2", "table_b", "code_last"]
    );
}

#[test]
fn code_validators_alone_are_checks_and_are_checked_like_tables() {
    let no_tables = "name = \"parts\"\n[[input]]\ntext = \"x\"\n";
    assert!(
        Config::from_parts(file(no_tables), "", Path::new("p.py"), vec![(0, code("c"))]).is_ok()
    );
    let e = Config::from_parts(file(no_tables), "", Path::new("p.py"), Vec::new())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("at least one check"), "{e}");
    let e = Config::from_parts(
        file(TABLES),
        "",
        Path::new("p.py"),
        vec![(0, code("table_a"))],
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("two checks are named \"table_a\""), "{e}");
    let bad = code("c").minimum_success_percentage(2.0);
    let e = Config::from_parts(file(no_tables), "", Path::new("p.py"), vec![(0, bad)])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("minimum_success_percentage"), "{e}");
}

#[test]
fn the_description_of_code_is_part_of_the_hash() {
    let hash = |text: &str| {
        Config::from_parts(file(TABLES), text, Path::new("p.py"), vec![(0, code("c"))])
            .unwrap()
            .hash
    };
    assert_eq!(hash("lambda o: len(o) > 0"), hash("lambda o: len(o) > 0"));
    assert_ne!(hash("lambda o: len(o) > 0"), hash("lambda o: len(o) > 1"));
}
