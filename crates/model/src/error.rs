//! Errors that name where bad input came from: the file (or preset), the field and the value.

use std::fmt;

/// Where a description came from, for error messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A preset embedded in the binary (`name`, and the repository file it was built from).
    Preset { name: String, file: &'static str },
    /// A file the user named.
    File(std::path::PathBuf),
    /// Text given directly (tests, generated descriptions).
    Inline(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Preset { file, .. } => write!(f, "{file}"),
            Origin::File(p) => write!(f, "{}", p.display()),
            Origin::Inline(label) => write!(f, "{label}"),
        }
    }
}

/// Bad input in a machine or workload description. Displays as one line.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{origin}:{line}:{column}: {message}")]
    Parse {
        origin: Origin,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{origin}: {field} = {value}: {reason}")]
    Invalid {
        origin: Origin,
        field: String,
        value: String,
        reason: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("unknown {kind} {name:?}{hint}: {}", if known.is_empty() { "no such file".to_string() } else { format!("not a preset ({known}) and no such file") })]
    Unknown {
        kind: &'static str,
        name: String,
        /// ` (did you mean "…"?)` for a near miss, or empty.
        hint: String,
        known: String,
    },
    #[error("override {text:?}: {reason}")]
    Override { text: String, reason: String },
    /// A file that parsed but breaks a rule of its kind (the reason names the field and value).
    #[error("{origin}: {reason}")]
    Rule { origin: Origin, reason: String },
}

impl ModelError {
    /// A description's `name` as tables, headers and files show it: not empty, and one line of
    /// visible text (no control character).
    pub(crate) fn check_name(origin: &Origin, name: &str) -> Result<(), Self> {
        if !crate::is_visible_name(name) {
            return Err(ModelError::invalid(
                origin,
                "name",
                format!("{name:?}"),
                "must be a visible name (not empty, no control characters)",
            ));
        }
        Ok(())
    }

    pub(crate) fn invalid(
        origin: &Origin,
        field: impl Into<String>,
        value: impl fmt::Display,
        reason: impl Into<String>,
    ) -> Self {
        ModelError::Invalid {
            origin: origin.clone(),
            field: field.into(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// Converts a TOML error into a one-line error with line and column.
    pub(crate) fn from_toml(origin: &Origin, text: &str, err: &toml::de::Error) -> Self {
        let (line, column) = match err.span() {
            Some(span) => line_column(text, span.start),
            None => (0, 0),
        };
        let message = err.message().replace('\n', " ").trim().to_string();
        ModelError::Parse {
            origin: origin.clone(),
            line,
            column,
            message,
        }
    }
}

/// 1-based line and column of a byte offset.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
