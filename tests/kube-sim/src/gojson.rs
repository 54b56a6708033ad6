//! The syntax errors Go's `encoding/json` reports for malformed JSON (`invalid character 'n'
//! looking for beginning of object key string`, `unexpected end of JSON input`), so decoding
//! failures read as the apiserver's do. [`syntax_error`] checks a whole document.

/// Go's message for the first syntax error in `text`, or None when it is valid JSON.
pub fn syntax_error(text: &[u8]) -> Option<String> {
    let mut scanner = Scanner { text, at: 0 };
    scanner.space();
    if let Err(e) = scanner.value() {
        return Some(e);
    }
    scanner.space();
    scanner.peek().map(|c| invalid(c, "after top-level value"))
}

/// Go's `quoteChar`: the character in single quotes.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_owned(),
        b'"' => "'\"'".to_owned(),
        c if c.is_ascii_graphic() || c == b' ' => format!("'{}'", char::from(c)),
        c => format!("'\\x{c:02x}'"),
    }
}

fn invalid(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote_char(c))
}

const END: &str = "unexpected end of JSON input";

struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn next(&mut self) -> Result<u8, String> {
        let c = self.peek().ok_or_else(|| END.to_owned())?;
        self.at += 1;
        Ok(c)
    }

    fn space(&mut self) {
        while self
            .peek()
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn value(&mut self) -> Result<(), String> {
        match self.next()? {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => self.string(),
            b't' => self.literal(b"rue", "true"),
            b'f' => self.literal(b"alse", "false"),
            b'n' => self.literal(b"ull", "null"),
            b'-' | b'0'..=b'9' => {
                self.at -= 1;
                self.number()
            }
            c => Err(invalid(c, "looking for beginning of value")),
        }
    }

    fn object(&mut self) -> Result<(), String> {
        self.space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(());
        }
        loop {
            match self.next()? {
                b'"' => self.string()?,
                c => return Err(invalid(c, "looking for beginning of object key string")),
            }
            self.space();
            match self.next()? {
                b':' => {}
                c => return Err(invalid(c, "after object key")),
            }
            self.space();
            self.value()?;
            self.space();
            match self.next()? {
                b',' => self.space(),
                b'}' => return Ok(()),
                c => return Err(invalid(c, "after object key:value pair")),
            }
        }
    }

    fn array(&mut self) -> Result<(), String> {
        self.space();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(());
        }
        loop {
            self.space();
            self.value()?;
            self.space();
            match self.next()? {
                b',' => {}
                b']' => return Ok(()),
                c => return Err(invalid(c, "after array element")),
            }
        }
    }

    fn string(&mut self) -> Result<(), String> {
        loop {
            match self.next()? {
                b'"' => return Ok(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            let c = self.next()?;
                            if !c.is_ascii_hexdigit() {
                                return Err(invalid(c, "in \\u hexadecimal character escape"));
                            }
                        }
                    }
                    c => return Err(invalid(c, "in string escape code")),
                },
                c if c < 0x20 => return Err(invalid(c, "in string literal")),
                _ => {}
            }
        }
    }

    fn literal(&mut self, rest: &[u8], word: &str) -> Result<(), String> {
        for expected in rest {
            let c = self.next()?;
            if c != *expected {
                let context = format!("in literal {word} (expecting {})", quote_char(*expected));
                return Err(invalid(c, &context));
            }
        }
        Ok(())
    }

    fn number(&mut self) -> Result<(), String> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            c => return Err(invalid(c, "in numeric literal")),
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            match self.next()? {
                b'0'..=b'9' => self.digits(),
                c => return Err(invalid(c, "after decimal point in numeric literal")),
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            match self.next()? {
                b'0'..=b'9' => self.digits(),
                c => return Err(invalid(c, "in exponent of numeric literal")),
            }
        }
        Ok(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_go() {
        assert_eq!(
            syntax_error(b"{not json").as_deref(),
            Some("invalid character 'n' looking for beginning of object key string")
        );
        assert_eq!(syntax_error(b"{\"a\": 1").as_deref(), Some(END));
        assert_eq!(syntax_error(b"").as_deref(), Some(END));
        assert_eq!(
            syntax_error(b"{\"a\" 1}").as_deref(),
            Some("invalid character '1' after object key")
        );
        assert_eq!(
            syntax_error(b"[1 2]").as_deref(),
            Some("invalid character '2' after array element")
        );
        assert_eq!(
            syntax_error(b"{} x").as_deref(),
            Some("invalid character 'x' after top-level value")
        );
        assert_eq!(syntax_error(b"tru").as_deref(), Some(END));
        assert_eq!(
            syntax_error(b"nul!").as_deref(),
            Some("invalid character '!' in literal null (expecting 'l')")
        );
        assert_eq!(
            syntax_error(br#"{"a": [1, -2.5e3, "x\u00e9", true, null]}"#),
            None
        );
    }
}
