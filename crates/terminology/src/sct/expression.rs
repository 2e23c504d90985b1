//! SNOMED CT compositional grammar (post-coordinated expressions such as `367430006:{272741003=24028007}`),
//! the subset codes carry: focus concepts joined by `+`, then attributes, ungrouped or in `{ }` groups, whose
//! values are concepts, nested `( )` expressions, `#` numbers or quoted strings. Terms in pipes are read
//! and dropped: the store's preferred terms are shown instead.

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expression {
    /// The focus concepts.
    pub focus: Vec<u64>,
    /// Ungrouped attributes come first as a group with `grouped: false`.
    pub groups: Vec<Group>,
}

/// Attributes, in a `{ }` group or not.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Written in braces.
    pub grouped: bool,
    /// (attribute name, value) pairs.
    pub attributes: Vec<(u64, AttrValue)>,
}

/// The value of an attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// A concept.
    Concept(u64),
    /// A nested expression in brackets.
    Nested(Box<Expression>),
    /// `#` and a number, as written.
    Number(String),
    /// A quoted string.
    Text(String),
}

impl Expression {
    /// Every concept id the expression names, focus first, in order.
    pub fn concepts(&self) -> Vec<(u64, Role)> {
        let mut out: Vec<(u64, Role)> = self.focus.iter().map(|&f| (f, Role::Focus)).collect();
        for g in &self.groups {
            for (name, value) in &g.attributes {
                out.push((*name, Role::Attribute));
                match value {
                    AttrValue::Concept(c) => out.push((*c, Role::Value)),
                    AttrValue::Nested(e) => out.extend(
                        e.concepts()
                            .into_iter()
                            .map(|(c, r)| (c, if r == Role::Focus { Role::Value } else { r })),
                    ),
                    AttrValue::Number(_) | AttrValue::Text(_) => {}
                }
            }
        }
        out
    }

    /// The expression written with each concept's term: `id|term|` (as tx.fhir.org displays it).
    pub fn render(&self, term: &dyn Fn(u64) -> Option<String>) -> String {
        let concept = |id: u64| match term(id) {
            Some(t) => format!("{id}|{t}|"),
            None => id.to_string(),
        };
        let mut s = self
            .focus
            .iter()
            .map(|&f| concept(f))
            .collect::<Vec<_>>()
            .join("+");
        if self.groups.is_empty() {
            return s;
        }
        s.push(':');
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| {
                let attrs: Vec<String> = g
                    .attributes
                    .iter()
                    .map(|(n, v)| {
                        let value = match v {
                            AttrValue::Concept(c) => concept(*c),
                            AttrValue::Nested(e) => format!("({})", e.render(term)),
                            AttrValue::Number(n) => format!("#{n}"),
                            AttrValue::Text(t) => format!("\"{t}\""),
                        };
                        format!("{}={value}", concept(*n))
                    })
                    .collect();
                if g.grouped {
                    format!("{{{}}}", attrs.join(","))
                } else {
                    attrs.join(",")
                }
            })
            .collect();
        s.push_str(&groups.join(","));
        s
    }
}

/// Where a concept appears in an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A focus concept.
    Focus,
    /// An attribute name.
    Attribute,
    /// An attribute value.
    Value,
}

/// Parses `text`; the error says what was expected where.
pub fn parse(text: &str) -> Result<Expression, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    p.ws();
    // A definition status prefix (`===` equivalent, `<<<` subtype) does not change what is named.
    if p.s[p.pos..].starts_with(b"===") || p.s[p.pos..].starts_with(b"<<<") {
        p.pos += 3;
    }
    let e = p.expression()?;
    p.ws();
    if p.pos != p.s.len() {
        return Err(format!("unexpected text at character {}", p.pos + 1));
    }
    Ok(e)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expression(&mut self) -> Result<Expression, String> {
        self.depth += 1;
        if self.depth > 32 {
            return Err("expression nested too deeply".into());
        }
        let mut focus = vec![self.concept()?];
        while self.eat(b'+') {
            focus.push(self.concept()?);
        }
        let mut groups = Vec::new();
        if self.eat(b':') {
            let mut loose = Group {
                grouped: false,
                attributes: Vec::new(),
            };
            loop {
                self.ws();
                if self.eat(b'{') {
                    let mut g = Group {
                        grouped: true,
                        attributes: vec![self.attribute()?],
                    };
                    while self.eat(b',') {
                        g.attributes.push(self.attribute()?);
                    }
                    if !self.eat(b'}') {
                        return Err(format!("expected '}}' at character {}", self.pos + 1));
                    }
                    groups.push(g);
                } else {
                    loose.attributes.push(self.attribute()?);
                }
                // Groups may follow each other with or without a comma.
                self.ws();
                if !self.eat(b',') && self.s.get(self.pos) != Some(&b'{') {
                    break;
                }
            }
            if !loose.attributes.is_empty() {
                groups.insert(0, loose);
            }
        }
        self.depth -= 1;
        Ok(Expression { focus, groups })
    }

    fn attribute(&mut self) -> Result<(u64, AttrValue), String> {
        let name = self.concept()?;
        if !self.eat(b'=') {
            return Err(format!("expected '=' at character {}", self.pos + 1));
        }
        self.ws();
        let value = match self.s.get(self.pos) {
            Some(b'(') => {
                self.pos += 1;
                let e = self.expression()?;
                if !self.eat(b')') {
                    return Err(format!("expected ')' at character {}", self.pos + 1));
                }
                AttrValue::Nested(Box::new(e))
            }
            Some(b'#') => {
                self.pos += 1;
                let start = self.pos;
                while self.pos < self.s.len()
                    && (self.s[self.pos].is_ascii_digit() || b".-+eE".contains(&self.s[self.pos]))
                {
                    self.pos += 1;
                }
                if start == self.pos {
                    return Err(format!("expected a number at character {}", self.pos + 1));
                }
                AttrValue::Number(String::from_utf8_lossy(&self.s[start..self.pos]).into_owned())
            }
            Some(b'"') => {
                self.pos += 1;
                let start = self.pos;
                while self.pos < self.s.len() && self.s[self.pos] != b'"' {
                    self.pos += 1;
                }
                if self.pos >= self.s.len() {
                    return Err("unterminated string".into());
                }
                let t = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
                self.pos += 1;
                AttrValue::Text(t)
            }
            _ => AttrValue::Concept(self.concept()?),
        };
        Ok((name, value))
    }

    fn concept(&mut self) -> Result<u64, String> {
        self.ws();
        let start = self.pos;
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
            self.pos += 1;
        }
        let digits = &self.s[start..self.pos];
        if !(6..=18).contains(&digits.len()) {
            return Err(format!("expected a concept id at character {}", start + 1));
        }
        let id = std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse().ok())
            .ok_or_else(|| format!("expected a concept id at character {}", start + 1))?;
        // An optional term in pipes.
        if self.eat(b'|') {
            while self.pos < self.s.len() && self.s[self.pos] != b'|' {
                self.pos += 1;
            }
            if self.pos >= self.s.len() {
                return Err("unterminated term (missing '|')".into());
            }
            self.pos += 1;
        }
        Ok(id)
    }
}
