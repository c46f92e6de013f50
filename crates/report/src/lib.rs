//! Reports of a run: text, JSON, JUnit XML, Markdown.
