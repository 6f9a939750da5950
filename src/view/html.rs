//! Text into HTML: every name and string from a model goes through
//! [`esc`] (or [`href_name`] in a link), so a tensor named `<script>` or a
//! GGUF string holding markup is text on the page.

use std::fmt::Write;

/// `s` as HTML text or an attribute's value (quoted with `"`).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Controls shown as what they are, not passed to the page.
            c if c.is_control() && c != '\n' && c != '\t' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// `name` as a query value: every byte but letters and digits escaped.
pub fn href_name(name: &str) -> String {
    percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// A whole page: its title, the style, and `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head>\n<body>{body}</body></html>\n",
        esc(title)
    )
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:1.5em 2em;color:#222}\
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}\
table{border-collapse:collapse}td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}\
td.n{text-align:right;font-family:monospace}\
ul{list-style:none;padding-left:1.2em;margin:0}summary{cursor:pointer}\
.meta{color:#666;font-size:.9em}code,pre{font-family:monospace}\
pre{background:#f6f6f6;padding:.5em;max-height:30em;overflow:auto}\
svg{background:#fafafa;border:1px solid #ddd}img.heat{image-rendering:pixelated;border:1px solid #ddd}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_text() {
        assert_eq!(
            esc("<script>alert('x')</script>&\"\u{1b}"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;\\u{1b}"
        );
        assert_eq!(href_name("a.b/c d&e"), "a%2Eb%2Fc%20d%26e");
    }
}
