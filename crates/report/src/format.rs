//! The output formats ([`Format`]) and their names. Names and aliases are
//! written once, in strum's attributes.

use std::fmt;

/// An output format of a report. Its names come from strum: the canonical
/// name (`text`, `json`, `junit`, `markdown`, `html`) is what [`Format::name`]
/// and `Display` give; parsing is case-insensitive and also accepts the
/// aliases `txt`, `xml`, `md`, `gfm` and `htm`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    strum::Display,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantNames,
)]
#[strum(
    serialize_all = "lowercase",
    ascii_case_insensitive,
    parse_err_ty = UnknownFormat,
    parse_err_fn = UnknownFormat::of
)]
pub enum Format {
    #[default]
    #[strum(to_string = "text", serialize = "txt")]
    Text,
    Json,
    #[strum(to_string = "junit", serialize = "xml")]
    Junit,
    #[strum(to_string = "markdown", serialize = "md", serialize = "gfm")]
    Markdown,
    #[strum(to_string = "html", serialize = "htm")]
    Html,
}

impl Format {
    /// Every format, in the order of [`Format::NAMES`].
    pub const ALL: [Format; 5] = [
        Format::Text,
        Format::Json,
        Format::Junit,
        Format::Markdown,
        Format::Html,
    ];
    /// The canonical names (for a CLI's possible values).
    pub const NAMES: &'static [&'static str] = <Format as strum::VariantNames>::VARIANTS;

    /// The canonical name: `text`, `json`, `junit`, `markdown` or `html`.
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// Error of parsing a [`Format`] name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFormat(pub String);

impl UnknownFormat {
    fn of(name: &str) -> Self {
        UnknownFormat(name.to_string())
    }
}

impl fmt::Display for UnknownFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown report format `{}`: expected one of {}",
            self.0,
            Format::NAMES.join(", ")
        )
    }
}

impl std::error::Error for UnknownFormat {}
