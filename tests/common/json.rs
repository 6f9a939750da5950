//! Just enough JSON: what `ztfs ls --json` and `meta.json` contain.

use std::ops::Index;

/// A parsed JSON value; numbers keep their spelling.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(String),
    Text(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

static NULL: Json = Json::Null;

impl Index<&str> for Json {
    type Output = Json;
    /// The member `key` of an object, `null` when absent.
    fn index(&self, key: &str) -> &Json {
        match self {
            Json::Object(m) => m.iter().find(|(k, _)| k == key).map_or(&NULL, |(_, v)| v),
            other => panic!("{other:?} is not an object (looking up {key:?})"),
        }
    }
}

impl Json {
    /// Parses a whole document, panicking on anything malformed.
    pub fn parse(text: &str) -> Json {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        let v = p.value();
        p.ws();
        assert_eq!(p.i, p.s.len(), "trailing bytes after JSON");
        v
    }

    pub fn text(&self) -> &str {
        match self {
            Json::Text(s) => s,
            other => panic!("{other:?} is not a string"),
        }
    }

    pub fn opt_text(&self) -> Option<String> {
        match self {
            Json::Null => None,
            other => Some(other.text().to_string()),
        }
    }

    /// An unsigned integer, plain or as the `{"$int": "..."}` escape
    /// that ztfs writes beyond 2^53 - 1.
    pub fn uint(&self) -> u64 {
        match self {
            Json::Number(n) => n.parse().unwrap_or_else(|e| panic!("{n}: {e}")),
            Json::Object(m) if m.len() == 1 && m[0].0 == "$int" => {
                let n = m[0].1.text();
                n.parse().unwrap_or_else(|e| panic!("{n}: {e}"))
            }
            other => panic!("{other:?} is not a number"),
        }
    }

    pub fn items(&self) -> &[Json] {
        match self {
            Json::Array(a) => a,
            other => panic!("{other:?} is not an array"),
        }
    }

    pub fn is_null(&self) -> bool {
        *self == Json::Null
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> u8 {
        self.ws();
        *self.s.get(self.i).expect("JSON ends early")
    }

    fn eat(&mut self, c: u8) {
        assert_eq!(self.peek(), c, "JSON at byte {}", self.i);
        self.i += 1;
    }

    fn word(&mut self, w: &str, v: Json) -> Json {
        assert!(
            self.s[self.i..].starts_with(w.as_bytes()),
            "JSON at byte {}",
            self.i
        );
        self.i += w.len();
        v
    }

    fn value(&mut self) -> Json {
        match self.peek() {
            b'n' => self.word("null", Json::Null),
            b't' => self.word("true", Json::Bool(true)),
            b'f' => self.word("false", Json::Bool(false)),
            b'"' => Json::Text(self.string()),
            b'[' => Json::Array(self.seq(b'[', b']', Parser::value)),
            b'{' => Json::Object(self.seq(b'{', b'}', Parser::member)),
            _ => self.number(),
        }
    }

    fn seq<T>(&mut self, open: u8, close: u8, item: fn(&mut Self) -> T) -> Vec<T> {
        self.eat(open);
        let mut out = Vec::new();
        if self.peek() == close {
            self.i += 1;
            return out;
        }
        loop {
            out.push(item(self));
            match self.peek() {
                b',' => self.i += 1,
                c if c == close => {
                    self.i += 1;
                    return out;
                }
                c => panic!("JSON: {:?} at byte {}", c as char, self.i),
            }
        }
    }

    fn member(&mut self) -> (String, Json) {
        self.ws();
        let k = self.string();
        self.eat(b':');
        (k, self.value())
    }

    fn number(&mut self) -> Json {
        let start = self.i;
        let num = |c: &u8| c.is_ascii_digit() || b"+-.eE".contains(c);
        while self.s.get(self.i).is_some_and(num) {
            self.i += 1;
        }
        assert!(self.i > start, "JSON: no value at byte {start}");
        Json::Number(String::from_utf8(self.s[start..self.i].to_vec()).expect("ASCII"))
    }

    fn hex4(&mut self) -> u32 {
        let h = std::str::from_utf8(&self.s[self.i..self.i + 4]).expect("ASCII");
        self.i += 4;
        u32::from_str_radix(h, 16).expect("\\u escape")
    }

    fn string(&mut self) -> String {
        self.eat(b'"');
        let mut out = Vec::new();
        loop {
            let c = self.s[self.i];
            self.i += 1;
            match c {
                b'"' => return String::from_utf8(out).expect("JSON string is UTF-8"),
                b'\\' => {
                    let e = self.s[self.i];
                    self.i += 1;
                    let ch = match e {
                        b'n' => '\n',
                        b't' => '\t',
                        b'r' => '\r',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'u' => self.unicode(),
                        other => other as char,
                    };
                    out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                }
                _ => out.push(c),
            }
        }
    }

    fn unicode(&mut self) -> char {
        let hi = self.hex4();
        if !(0xD800..0xDC00).contains(&hi) {
            return char::from_u32(hi).expect("a scalar value");
        }
        assert_eq!(&self.s[self.i..self.i + 2], b"\\u", "lone surrogate");
        self.i += 2;
        let lo = self.hex4();
        char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).expect("a pair")
    }
}
