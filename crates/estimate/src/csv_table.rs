//! The comma-separated files the estimator reads (windows and counter samples), read with the
//! csv crate (quoted fields may hold commas, quotes and line breaks): `#` comments (`# key:
//! value` ones before the header are kept), one header row, then rows with as many cells as the
//! header. Errors name the file, the line and the column.

use crate::error::EstimateError;

/// The 1-based line of byte `offset` of `text`.
fn line_at(text: &str, offset: u64) -> usize {
    let bytes = text.as_bytes();
    let mut end = (offset as usize).min(bytes.len());
    // A record's position may be at the blank lines the reader skipped before it.
    while end < bytes.len() && (bytes[end] == b'\n' || bytes[end] == b'\r') {
        end += 1;
    }
    bytes[..end].iter().filter(|&&b| b == b'\n').count() + 1
}

/// A parsed file: header, metadata comments and rows, cells trimmed.
pub(crate) struct CsvTable<'a> {
    file: &'a str,
    pub header: Vec<String>,
    /// `# key: value` comments before the header.
    pub meta: Vec<(String, String)>,
    pub rows: Vec<CsvRow>,
}

/// One data row and the line it starts on (1-based).
pub(crate) struct CsvRow {
    pub line: usize,
    pub cells: Vec<String>,
}

impl<'a> CsvTable<'a> {
    /// Splits `text` into header and rows; `Ok(None)` when it has no header row.
    pub fn parse(text: &'a str, file: &'a str) -> Result<Option<Self>, EstimateError> {
        // The comments before the header carry metadata; the csv reader skips every comment.
        let meta = text
            .lines()
            .map(|l| l.trim_end_matches('\r'))
            .take_while(|l| l.trim().is_empty() || l.starts_with('#'))
            .filter_map(|l| l.strip_prefix('#')?.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .comment(Some(b'#'))
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let mut table: Option<CsvTable<'a>> = None;
        let mut meta = Some(meta);
        for record in reader.records() {
            let record = record.map_err(|e| EstimateError::BadLine {
                file: file.into(),
                line: e.position().map_or(0, |p| line_at(text, p.byte())),
                reason: e.to_string(),
            })?;
            // The line a record starts on, counted from its byte offset (comment and blank
            // lines included, as an editor shows them).
            let line = record.position().map_or(0, |p| line_at(text, p.byte()));
            let cells: Vec<String> = record.iter().map(str::to_string).collect();
            let Some(t) = &mut table else {
                table = Some(CsvTable {
                    file,
                    header: cells,
                    meta: meta.take().unwrap_or_default(),
                    rows: Vec::new(),
                });
                continue;
            };
            if cells.len() != t.header.len() {
                return Err(EstimateError::BadLine {
                    file: file.into(),
                    line,
                    reason: format!("{} cells, the header has {}", cells.len(), t.header.len()),
                });
            }
            t.rows.push(CsvRow { line, cells });
        }
        Ok(table)
    }

    /// The header as one line (for messages).
    pub fn header_line(&self) -> String {
        self.header.join(",").escape_debug().to_string()
    }

    /// The index of a header column.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| *h == name)
    }

    /// Fails naming every one of `required` the header lacks; `hint(missing)` says what the file
    /// should have looked like.
    pub fn require(
        &self,
        required: &[&str],
        hint: impl FnOnce(&str) -> String,
    ) -> Result<(), EstimateError> {
        let missing: Vec<&str> = required
            .iter()
            .copied()
            .filter(|c| self.column(c).is_none())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(EstimateError::MissingColumns {
            file: self.file.into(),
            columns: hint(&missing.join(", ")),
        })
    }

    /// An error about the cell of `row` in column `col`.
    pub fn bad(&self, row: &CsvRow, col: usize, reason: String) -> EstimateError {
        EstimateError::BadValue {
            file: self.file.into(),
            line: row.line,
            // A quoted header cell may hold a line break; the message stays one line.
            column: self.header[col].escape_debug().to_string(),
            reason,
        }
    }
}
