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

/// A CSV file read one record at a time, so that a large release file is never held whole (same parse as
/// [`Table`]).
pub struct Reader<R> {
    input: R,
    columns: HashMap<String, usize>,
    buf: Vec<u8>,
    pending: std::collections::VecDeque<Vec<String>>,
    record: Vec<String>,
    field: String,
    in_quotes: bool,
    done: bool,
    first: bool,
}

impl<R: std::io::BufRead> Reader<R> {
    /// Reads the header row of `input`.
    pub fn new(input: R) -> std::io::Result<Self> {
        let mut r = Reader {
            input,
            columns: HashMap::new(),
            buf: Vec::new(),
            pending: Default::default(),
            record: Vec::new(),
            field: String::new(),
            in_quotes: false,
            done: false,
            first: true,
        };
        if let Some(header) = r.next_row()? {
            r.columns = header
                .into_iter()
                .enumerate()
                .map(|(i, n)| (n, i))
                .collect();
        }
        Ok(r)
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

    /// The next data row, None at the end.
    pub fn next_row(&mut self) -> std::io::Result<Option<Vec<String>>> {
        while self.pending.is_empty() && !self.done {
            self.buf.clear();
            // Lines end in `\n`, so a multi-byte character is never split between two reads.
            let n = self.input.read_until(b'\n', &mut self.buf)?;
            if n == 0 {
                self.done = true;
                if !self.field.is_empty() || !self.record.is_empty() {
                    self.record.push(std::mem::take(&mut self.field));
                    self.pending.push_back(std::mem::take(&mut self.record));
                }
                break;
            }
            let text = String::from_utf8_lossy(&self.buf).into_owned();
            let text = if self.first {
                self.first = false;
                text.strip_prefix('\u{feff}').unwrap_or(&text).to_string()
            } else {
                text
            };
            self.feed(&text);
        }
        Ok(self.pending.pop_front())
    }

    fn feed(&mut self, text: &str) {
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if self.in_quotes {
                if c == '"' {
                    if chars.peek() == Some(&'"') {
                        self.field.push('"');
                        chars.next();
                    } else {
                        self.in_quotes = false;
                    }
                } else {
                    self.field.push(c);
                }
                continue;
            }
            match c {
                '"' if self.field.is_empty() => self.in_quotes = true,
                ',' => self.record.push(std::mem::take(&mut self.field)),
                '\r' => {}
                '\n' => {
                    self.record.push(std::mem::take(&mut self.field));
                    if !(self.record.len() == 1 && self.record[0].is_empty()) {
                        self.pending.push_back(std::mem::take(&mut self.record));
                    } else {
                        self.record.clear();
                    }
                }
                _ => self.field.push(c),
            }
        }
    }
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

    #[test]
    fn the_streaming_reader_reads_what_the_table_reads() {
        let text =
            "\u{feff}\"A\",\"B\"\r\n\"x, y\",\"say \"\"hi\"\"\"\n1,\"two\nlines\"\n\n3,\"é\"";
        let t = Table::parse(text);
        let mut r = Reader::new(std::io::Cursor::new(text.as_bytes())).unwrap();
        assert!(r.has("A") && r.has("B"));
        let mut rows = Vec::new();
        while let Some(row) = r.next_row().unwrap() {
            rows.push(row);
        }
        assert_eq!(rows, t.rows);
        assert_eq!(r.get(&rows[2], "B"), "é");
    }
}
