//! The lexer of label selectors, as apimachinery's `labels.Lexer` scans them: identifiers
//! (any run of bytes up to whitespace or a special symbol), the keywords `in` and `notin`, and
//! the longest run of special symbols (`=`, `!`, `(`, `)`, `,`, `>`, `<`) that is still a token.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(text: &str) -> Option<Token> {
    Some(match text {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// The lexer's tokens of `text`, ending with EndOfString.
pub fn scan(text: &str) -> Vec<(Token, String)> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut pos = 0;
    loop {
        while pos < bytes.len() && is_whitespace(bytes[pos]) {
            pos += 1;
        }
        if pos >= bytes.len() {
            tokens.push((Token::EndOfString, String::new()));
            return tokens;
        }
        let start = pos;
        if is_special(bytes[pos]) {
            // The longest run of special symbols that is still a token.
            let mut end = pos + 1;
            while end < bytes.len()
                && is_special(bytes[end])
                && keyword(&text[start..=end]).is_some()
            {
                end += 1;
            }
            let literal = &text[start..end];
            tokens.push((
                keyword(literal).unwrap_or(Token::Identifier),
                literal.to_owned(),
            ));
            pos = end;
        } else {
            while pos < bytes.len() && !is_special(bytes[pos]) && !is_whitespace(bytes[pos]) {
                pos += 1;
            }
            let literal = String::from_utf8_lossy(&bytes[start..pos]).into_owned();
            let token = match keyword(&literal) {
                Some(t @ (Token::In | Token::NotIn)) => t,
                _ => Token::Identifier,
            };
            tokens.push((token, literal));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_symbols_take_the_longest_token_and_words_their_keywords() {
        let tokens: Vec<(Token, String)> = scan("a!=b,c in (x),!d==e notin");
        let kinds: Vec<Token> = tokens.iter().map(|(t, _)| *t).collect();
        assert_eq!(
            kinds,
            vec![
                Token::Identifier,
                Token::NotEquals,
                Token::Identifier,
                Token::Comma,
                Token::Identifier,
                Token::In,
                Token::OpenPar,
                Token::Identifier,
                Token::ClosedPar,
                Token::Comma,
                Token::DoesNotExist,
                Token::Identifier,
                Token::DoubleEquals,
                Token::Identifier,
                Token::NotIn,
                Token::EndOfString,
            ]
        );
        assert_eq!(scan("=(")[0], (Token::Equals, "=".to_owned()));
    }
}
