//! The comma-separated files the estimator reads (windows and counter samples): `#` comments
//! (`# key: value` ones before the header are kept), one header row, then rows with as many
//! cells as the header. Errors name the file, the line and the column.

use crate::error::EstimateError;

/// A parsed file: header, metadata comments and rows, cells trimmed.
pub(crate) struct CsvTable<'a> {
    file: &'a str,
    pub header: Vec<&'a str>,
    /// `# key: value` comments before the header.
    pub meta: Vec<(String, String)>,
    pub rows: Vec<CsvRow<'a>>,
}

/// One data row and the line it came from (1-based).
pub(crate) struct CsvRow<'a> {
    pub line: usize,
    pub cells: Vec<&'a str>,
}

impl<'a> CsvTable<'a> {
    /// Splits `text` into header and rows; `Ok(None)` when it has no header row.
    pub fn parse(text: &'a str, file: &'a str) -> Result<Option<Self>, EstimateError> {
        let mut table: Option<CsvTable<'a>> = None;
        let mut meta = Vec::new();
        for (k, line) in text.lines().enumerate() {
            let line_no = k + 1;
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            if let Some(c) = line.strip_prefix('#') {
                if table.is_none() {
                    if let Some((k, v)) = c.split_once(':') {
                        meta.push((k.trim().to_string(), v.trim().to_string()));
                    }
                }
                continue;
            }
            let cells: Vec<&str> = line.split(',').map(str::trim).collect();
            let Some(t) = &mut table else {
                table = Some(CsvTable {
                    file,
                    header: cells,
                    meta: std::mem::take(&mut meta),
                    rows: Vec::new(),
                });
                continue;
            };
            if cells.len() != t.header.len() {
                return Err(EstimateError::BadLine {
                    file: file.into(),
                    line: line_no,
                    reason: format!("{} cells, the header has {}", cells.len(), t.header.len()),
                });
            }
            t.rows.push(CsvRow {
                line: line_no,
                cells,
            });
        }
        Ok(table)
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
            column: self.header[col].to_string(),
            reason,
        }
    }
}
