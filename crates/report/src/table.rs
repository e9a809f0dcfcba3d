//! Plain aligned text tables for people.

/// A table: a header row and data rows. Columns whose cells are all numbers are right-aligned,
/// others left-aligned.
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    pub fn render(&self) -> String {
        let cols = self
            .header
            .len()
            .max(self.rows.iter().map(Vec::len).max().unwrap_or(0));
        let mut width = vec![0; cols];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate() {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let numeric: Vec<bool> = (0..cols)
            .map(|i| {
                let mut cells = self
                    .rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .filter(|c| !c.is_empty())
                    .peekable();
                cells.peek().is_some() && cells.all(|c| looks_numeric(c))
            })
            .collect();
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = " ".repeat(width[i] - c.chars().count());
                if numeric[i] {
                    line.push_str(&pad);
                    line.push_str(c);
                } else {
                    line.push_str(c);
                    line.push_str(&pad);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// A number, possibly signed, with an optional unit suffix such as `%` or `x`.
fn looks_numeric(cell: &str) -> bool {
    let body = cell.trim_end_matches(['%', 'x']);
    !body.is_empty() && body.parse::<f64>().is_ok() || cell == "-"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(["name", "ipc"]);
        t.row(["gzip-like", "1.3"]).row(["mcf", "0.17"]);
        assert_eq!(
            t.render(),
            "name        ipc\ngzip-like   1.3\nmcf        0.17\n"
        );
    }
}
