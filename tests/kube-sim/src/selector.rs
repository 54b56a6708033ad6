//! Label selectors, parsed and matched as apimachinery's `labels.Parse` does: its lexer
//! ([`crate::label_lexer`]), its recursive-descent parser with the same error messages
//! (`unable to parse requirement: found '', expected: ',' or ')'`), and `NewRequirement`'s
//! validation of keys and values (see [`crate::label_syntax`]).
//!
//! Label selectors are evaluated against an object's [`Labels`], which the store extracts
//! once per write.

use crate::label_lexer::{Token, scan};
use crate::label_syntax::{self, FieldError};
use crate::object::Labels;
use crate::status::ApiError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and without duplicates, as the parser's string set lists them.
    values: Vec<String>,
}

/// A parsed `labelSelector`; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// Parses a selector; errors are 400 Bad Requests worded as `labels.Parse` words them.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let mut parser = Parser::new(text);
        let mut requirements = parser.parse().map_err(ApiError::bad_request)?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self(requirements))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        self.0.iter().all(|r| r.matches(labels))
    }

    /// The requirements that only objects carrying `key` with one of the listed values can
    /// meet (`key=value`, `key in (values)`), as `(key, values)`: what a label index can answer.
    pub fn equality_terms(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.0.iter().filter_map(|r| match r.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => {
                Some((r.key.as_str(), r.values.as_slice()))
            }
            _ => None,
        })
    }
}

impl Requirement {
    fn matches(&self, labels: &Labels) -> bool {
        let label = labels.get(&self.key);
        let has = |v: &String| self.values.contains(v);
        let compare = |ordering: std::cmp::Ordering| {
            let parse = |s: &str| s.parse::<i64>().ok();
            let (Some(have), Some(want)) = (
                label.and_then(|l| parse(l)),
                self.values.first().and_then(|v| parse(v)),
            ) else {
                return false;
            };
            have.cmp(&want) == ordering
        };
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => label.is_some_and(has),
            Operator::NotEquals | Operator::NotIn => label.is_none_or(|l| !has(l)),
            Operator::Exists => label.is_some(),
            Operator::DoesNotExist => label.is_none(),
            Operator::GreaterThan => compare(std::cmp::Ordering::Greater),
            Operator::LessThan => compare(std::cmp::Ordering::Less),
        }
    }

    /// `NewRequirement`: the key, and each value, must be valid.
    fn new(key: String, operator: Operator, values: Vec<String>) -> Result<Self, String> {
        let mut errors: Vec<FieldError> = Vec::new();
        if let Some(error) = label_syntax::label_key_error("key", &key) {
            errors.push(error);
        }
        if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
            for (i, value) in values.iter().enumerate() {
                if value.parse::<i64>().is_err() {
                    let detail = "for 'Gt', 'Lt' operators, the value must be an integer";
                    errors.push(FieldError::invalid(&format!("values[{i}]"), value, detail));
                }
            }
        }
        for (i, value) in values.iter().enumerate() {
            let path = format!("values[{i}][{key}]");
            errors.extend(label_syntax::label_value_error(&path, value));
        }
        match errors.len() {
            0 => Ok(Self {
                key,
                operator,
                values,
            }),
            1 => Err(errors[0].to_string()),
            _ => {
                let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
                Err(format!("[{}]", all.join(", ")))
            }
        }
    }
}

/// Whether the parser reads keys and operators, or values (where `in`/`notin` are plain words).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    tokens: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn new(text: &str) -> Self {
        Self {
            tokens: scan(text),
            position: 0,
        }
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        let (token, literal) = self.tokens[self.position.min(self.tokens.len() - 1)].clone();
        let token = match token {
            Token::In | Token::NotIn if context == Context::Values => Token::Identifier,
            other => other,
        };
        (token, literal)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let next = self.lookahead(context);
        self.position += 1;
        next
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (next, literal) = self.lookahead(Context::Values);
                            if !matches!(next, Token::Identifier | Token::DoesNotExist) {
                                return Err(format!(
                                    "found '{literal}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.key_and_inferred_operator()?;
        if let Some(operator @ (Operator::Exists | Operator::DoesNotExist)) = operator {
            return Requirement::new(key, operator, Vec::new());
        }
        let operator = self.operator()?;
        let mut values = match operator {
            Operator::In | Operator::NotIn => self.values()?,
            _ => self.exact_value()?,
        };
        values.sort();
        values.dedup();
        Requirement::new(key, operator, values)
    }

    fn key_and_inferred_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut token, mut literal) = self.consume(Context::Values);
        if token == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        if let Some(error) = label_syntax::label_key_error("", &literal) {
            return Err(error.to_string());
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    /// `(a, b, c)`.
    fn values(&mut self) -> Result<Vec<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.identifiers()?;
                if self.consume(Context::Values).0 != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!(
                "found '{literal}', expected: ',', ')' or identifier"
            )),
        }
    }

    /// A comma-separated list of possibly empty identifiers, up to (not including) `)`.
    fn identifiers(&mut self) -> Result<Vec<String>, String> {
        let mut values = Vec::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    values.push(literal);
                    let (next, literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => {}
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    let (next, _) = self.lookahead(Context::Values);
                    if next == Token::ClosedPar {
                        values.push(String::new());
                        return Ok(values);
                    }
                    if next == Token::Comma {
                        values.push(String::new());
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        let (token, _) = self.lookahead(Context::Values);
        if matches!(token, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            Ok(vec![literal])
        } else {
            Err(format!("found '{literal}', expected: identifier"))
        }
    }
}

#[cfg(test)]
#[path = "selector_tests.rs"]
mod tests;
