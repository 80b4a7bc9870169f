//! `--token-auth-file`: static bearer tokens from a CSV file, as kube-apiserver's token file
//! authenticator. Each record is `token,user,uid[,"group1,group2,..."]`; leading spaces in a
//! field are skipped, fields may be quoted (`""` inside quotes is a quote), records with an
//! empty token are skipped, and a later record for a token replaces an earlier one.

use std::collections::HashMap;

use crate::auth::UserInfo;

/// What is wrong with a token file (the line is 1-based).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenFileError {
    #[error(
        "line {line}: must have at least 3 columns (token, user name, user uid), found {found}"
    )]
    TooFewColumns { line: usize, found: usize },
    #[error("line {line}: bare \" in a non-quoted field")]
    BareQuote { line: usize },
    #[error("line {line}: extraneous or missing \" in a quoted field")]
    Quote { line: usize },
}

/// The users of a token file, by token.
#[derive(Clone, Debug, Default)]
pub struct TokenFile {
    users: HashMap<String, UserInfo>,
}

impl TokenFile {
    /// Reads the file's text.
    pub fn parse(text: &str) -> Result<TokenFile, TokenFileError> {
        let mut users = HashMap::new();
        for (line, record) in records(text)? {
            if record.len() < 3 {
                return Err(TokenFileError::TooFewColumns { line, found: record.len() });
            }
            let token = record[0].trim();
            if token.is_empty() {
                tracing::warn!(line, "empty token in the token file, record skipped");
                continue;
            }
            let groups: Vec<String> = match record.get(3) {
                Some(groups) => groups.split(',').map(String::from).collect(),
                None => Vec::new(),
            };
            let mut user = UserInfo::authenticated(record[1].trim().to_string(), groups);
            user.uid = record[2].trim().to_string();
            if users.insert(token.to_string(), user).is_some() {
                tracing::warn!(line, "duplicate token in the token file, the later one is used");
            }
        }
        Ok(TokenFile { users })
    }

    /// The user of `token`, if the file has it.
    pub fn authenticate(&self, token: &str) -> Option<UserInfo> {
        self.users.get(token).cloned()
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

/// The CSV records of `text` with the line each starts on; blank lines are skipped.
fn records(text: &str) -> Result<Vec<(usize, Vec<String>)>, TokenFileError> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while chars.peek().is_some() {
        let start = line;
        let mut record = Vec::new();
        let mut field = String::new();
        let mut at_field_start = true;
        let mut quoted = false;
        let mut blank = true;
        loop {
            let Some(c) = chars.next() else {
                if quoted {
                    return Err(TokenFileError::Quote { line: start });
                }
                break;
            };
            if quoted {
                match c {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    '"' => {
                        quoted = false;
                        if !matches!(chars.peek(), None | Some(',') | Some('\n') | Some('\r')) {
                            return Err(TokenFileError::Quote { line });
                        }
                    }
                    '\n' => {
                        line += 1;
                        field.push(c);
                    }
                    _ => field.push(c),
                }
                continue;
            }
            match c {
                '\r' if chars.peek() == Some(&'\n') => {}
                '\n' => {
                    line += 1;
                    break;
                }
                ',' => {
                    record.push(std::mem::take(&mut field));
                    at_field_start = true;
                    blank = false;
                }
                ' ' | '\t' if at_field_start => {}
                '"' if at_field_start => {
                    quoted = true;
                    at_field_start = false;
                    blank = false;
                }
                '"' => return Err(TokenFileError::BareQuote { line }),
                _ => {
                    field.push(c);
                    at_field_start = false;
                    blank = false;
                }
            }
        }
        if !blank {
            record.push(field);
            out.push((start, record));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_upstreams_format() {
        let file = TokenFile::parse(
            "tok1,alice,u1\n\n  tok2, bob , u2 ,\"dev,ops\"\r\n,empty,u3\ntok1,alice2,u4,admins\n",
        )
        .unwrap();
        assert_eq!(file.len(), 2);
        let bob = file.authenticate("tok2").unwrap();
        assert_eq!((bob.name.as_str(), bob.uid.as_str()), ("bob", "u2"));
        assert_eq!(bob.groups, ["dev", "ops", "system:authenticated"]);
        let alice = file.authenticate("tok1").unwrap();
        assert_eq!((alice.name.as_str(), alice.uid.as_str()), ("alice2", "u4"));
        assert_eq!(alice.groups, ["admins", "system:authenticated"]);
        assert_eq!(file.authenticate("nope"), None);
        assert_eq!(file.authenticate(""), None);
    }

    #[test]
    fn quotes_inside_quoted_fields() {
        let file = TokenFile::parse("\"t,1\",\"a \"\"b\"\"\",u").unwrap();
        assert_eq!(file.authenticate("t,1").unwrap().name, "a \"b\"");
    }

    #[test]
    fn malformed_files_say_where() {
        assert_eq!(
            TokenFile::parse("a,b,c\ntok,user\n").unwrap_err(),
            TokenFileError::TooFewColumns { line: 2, found: 2 }
        );
        assert_eq!(
            TokenFile::parse("a,b,c\nt\"ok,user,u\n").unwrap_err(),
            TokenFileError::BareQuote { line: 2 }
        );
        assert_eq!(
            TokenFile::parse("\"tok,user,u\n").unwrap_err(),
            TokenFileError::Quote { line: 1 }
        );
        assert_eq!(
            TokenFile::parse("a,b,c\n\"tok\"x,user,u\n").unwrap_err(),
            TokenFileError::Quote { line: 2 }
        );
    }
}
