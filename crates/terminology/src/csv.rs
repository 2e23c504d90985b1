//! A small RFC 4180 reader for the LOINC release files: comma separated, fields optionally quoted, `""` inside
//! quotes, line breaks inside quoted fields. Never fails: a stray quote is taken as text.

use std::collections::HashMap;

/// A CSV file read whole: the header row and the data rows.
#[derive(Debug, Default)]
pub struct Table {
    columns: HashMap<String, usize>,
    /// The data rows (the header excluded).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Parses `text` (a UTF-8 BOM is skipped).
    pub fn parse(text: &str) -> Table {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut records = parse_records(text).into_iter();
        let columns = records
            .next()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, name)| (name, i))
            .collect();
        Table {
            columns,
            rows: records.collect(),
        }
    }

    /// Whether the header names `column`.
    pub fn has(&self, column: &str) -> bool {
        self.columns.contains_key(column)
    }

    /// The value of `column` in `row` ("" when the column or the value is missing).
    pub fn get<'a>(&self, row: &'a [String], column: &str) -> &'a str {
        self.columns
            .get(column)
            .and_then(|&i| row.get(i))
            .map(|s| s.trim())
            .unwrap_or("")
    }
}

fn parse_records(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut in_quotes = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if in_quotes {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    field.push('"');
                    chars.next();
                } else {
                    in_quotes = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' if field.is_empty() => in_quotes = true,
            ',' => record.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                record.push(std::mem::take(&mut field));
                if !(record.len() == 1 && record[0].is_empty()) {
                    records.push(std::mem::take(&mut record));
                } else {
                    record.clear();
                }
            }
            _ => field.push(c),
        }
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_commas_and_line_breaks() {
        let t = Table::parse(
            "\u{feff}\"A\",\"B\"\r\n\"x, y\",\"say \"\"hi\"\"\"\n1,\"two\nlines\"\n\n",
        );
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.get(&t.rows[0], "A"), "x, y");
        assert_eq!(t.get(&t.rows[0], "B"), "say \"hi\"");
        assert_eq!(t.get(&t.rows[1], "B"), "two\nlines");
        assert_eq!(t.get(&t.rows[1], "C"), "");
    }
}
