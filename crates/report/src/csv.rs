//! CSV for programs, through the csv crate: a field holding a comma, a quote or a line break
//! is quoted, so every name round-trips through the project's own readers.

/// The CSV text of `header` and `rows`, after `#` comment lines (`preamble`, one per entry;
/// line breaks inside an entry become spaces, so a comment stays one line).
pub fn csv_text<R, S>(preamble: &[String], header: &[&str], rows: R) -> String
where
    R: IntoIterator,
    R::Item: IntoIterator<Item = S>,
    S: AsRef<[u8]>,
{
    let mut out = Vec::new();
    for line in preamble {
        out.extend_from_slice(format!("# {}\n", line.replace(['\n', '\r'], " ")).as_bytes());
    }
    {
        let mut w = csv::WriterBuilder::new()
            .flexible(false)
            .from_writer(&mut out);
        w.write_record(header).expect("writing to memory");
        for row in rows {
            w.write_record(row)
                .expect("writing to memory (rows as wide as the header)");
        }
        w.flush().expect("writing to memory");
    }
    String::from_utf8(out).expect("UTF-8 in, UTF-8 out")
}

/// A float as CSV shows it: empty for a missing value (NaN or `None`).
pub fn num(v: impl Into<Option<f64>>) -> String {
    match v.into() {
        Some(x) if !x.is_nan() => format!("{x}"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_commas_quotes_and_breaks_are_quoted() {
        let rows = vec![
            vec!["a,b".to_string(), "say \"hi\"".into()],
            vec!["two\nlines".to_string(), "plain".into()],
        ];
        let text = csv_text(&["note: x\ny".to_string()], &["name", "value"], rows);
        // RFC 4180: quoted fields, doubled quotes; the comment kept on one line.
        assert_eq!(
            text,
            "# note: x y\nname,value\n\"a,b\",\"say \"\"hi\"\"\"\n\"two\nlines\",plain\n"
        );
        assert_eq!(num(f64::NAN), "");
        assert_eq!(num(None), "");
        assert_eq!(num(0.25), "0.25");
    }
}
