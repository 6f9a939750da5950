//! A cursor over the IR's XML text: quick-xml's events, walked one
//! element's content at a time, with the limits this reader sets.
//!
//! What it refuses, whatever the element: a DOCTYPE (so no DTD and no
//! entity declared in one), an entity reference other than the five
//! predefined and character references (quick-xml resolves no other), an
//! attribute given twice, an element nested deeper than [`MAX_DEPTH`],
//! more than [`MAX_ELEMENTS`] elements or [`MAX_ATTRIBUTES`] attributes on
//! one, an end tag that does not match, a document that ends inside an
//! element, and markup or text outside the root element. Comments and
//! processing instructions are stepped over. Namespaces are not resolved:
//! `x:net` is a name like any other, and not `net`.
//!
//! Nothing here recurses: the depth is a counter, and an element the
//! reader has no use for is stepped over by counting its start and end
//! tags.

use std::borrow::Cow;

use quick_xml::events::attributes::Attributes;
use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

use super::{IrError, MAX_ATTRIBUTES, MAX_DEPTH, MAX_ELEMENTS};

/// One element's start tag: its name and attributes, where it is, and
/// whether content follows (`<x>` rather than `<x/>`).
pub struct Element<'a> {
    /// The text between `<` and `>`: the name, then the attributes.
    tag: Cow<'a, str>,
    name_len: usize,
    /// Byte offset of its `<` in the XML.
    pub at: u64,
    /// `<x>`: content and an end tag follow, to be read with
    /// [`Cursor::next_child`] or stepped over with [`Cursor::skip`].
    pub open: bool,
}

impl<'a> Element<'a> {
    /// The element whose start tag `e` was read at byte `at` of `text`.
    fn new(text: &'a str, e: &BytesStart<'_>, at: u64, open: bool) -> Result<Element<'a>, IrError> {
        let name_len = e.name().as_ref().len();
        // The tag's text is the input's just after `<`: borrowed from
        // there when it is (always, for a reader over a slice).
        let start = usize::try_from(at).ok().and_then(|a| a.checked_add(1));
        let borrowed = start
            .and_then(|s| text.get(s..s.checked_add(e.len())?))
            .filter(|t| t.as_bytes() == &e[..]);
        let tag = match borrowed {
            Some(t) => Cow::Borrowed(t),
            None => Cow::Owned(
                String::from_utf8(e.to_vec())
                    .map_err(|_| IrError::at("a start tag is not UTF-8", at))?,
            ),
        };
        let element = Element {
            tag,
            name_len,
            at,
            open,
        };
        element.check_attributes()?;
        Ok(element)
    }

    /// The element's name, as written.
    pub fn name(&self) -> &str {
        self.tag.get(..self.name_len).unwrap_or_default()
    }

    fn attributes(&self) -> Attributes<'_> {
        let mut a = Attributes::new(&self.tag, self.name_len);
        // quick-xml's own check compares each key with every earlier one;
        // check_attributes sorts instead.
        a.with_checks(false);
        a
    }

    /// Every attribute well-formed, at most [`MAX_ATTRIBUTES`], none twice.
    fn check_attributes(&self) -> Result<(), IrError> {
        let mut keys = Vec::new();
        for a in self.attributes() {
            let a = a.map_err(|e| self.error(format!("a malformed attribute: {e}")))?;
            // Every value is resolved once, read or not, so that an
            // unknown entity is refused wherever it is.
            a.normalized_value(XmlVersion::Implicit1_0).map_err(|e| {
                let key = String::from_utf8_lossy(a.key.as_ref());
                self.error(format!("attribute {key:?}: {e}"))
            })?;
            if keys.len() == MAX_ATTRIBUTES {
                return Err(self.error(format!("more than {MAX_ATTRIBUTES} attributes")));
            }
            keys.push(a.key.into_inner());
        }
        keys.sort_unstable();
        match keys.windows(2).find(|w| w[0] == w[1]) {
            Some(w) => Err(self.error(format!(
                "attribute {:?} given twice",
                String::from_utf8_lossy(w[0])
            ))),
            None => Ok(()),
        }
    }

    /// Attribute `key`'s value, its references resolved and its tabs and
    /// line breaks made spaces (as XML and pugixml, OpenVINO's parser,
    /// read attributes); `None` when absent.
    pub fn attr(&self, key: &str) -> Result<Option<Cow<'_, str>>, IrError> {
        for a in self.attributes() {
            let a = a.map_err(|e| self.error(format!("a malformed attribute: {e}")))?;
            if a.key.as_ref() == key.as_bytes() {
                let value = a
                    .normalized_value(XmlVersion::Implicit1_0)
                    .map_err(|e| self.error(format!("attribute {key:?}: {e}")))?;
                return Ok(Some(value));
            }
        }
        Ok(None)
    }

    /// Attribute `key`'s value; an error naming it when absent.
    pub fn required(&self, key: &str) -> Result<Cow<'_, str>, IrError> {
        self.attr(key)?
            .ok_or_else(|| self.error(format!("no {key:?} attribute")))
    }

    /// An error about this element, at its offset.
    pub fn error(&self, what: impl std::fmt::Display) -> IrError {
        IrError::at(format!("<{}>: {what}", self.name()), self.at)
    }
}

/// The reader's place in the XML.
pub struct Cursor<'a> {
    text: &'a str,
    /// Where the reader's text starts in `text`: after a byte order mark,
    /// which the cursor takes off itself so that offsets count it.
    base: u64,
    reader: Reader<&'a [u8]>,
    /// Elements open around the place.
    depth: usize,
    /// Elements read so far.
    elements: u64,
    /// Whether any event was read: an XML declaration must come first.
    started: bool,
}

/// What the next event is, as far as the walk is concerned.
enum Step<'a> {
    Start(Element<'a>),
    End,
    /// Text: whitespace only, or not.
    Text {
        blank: bool,
    },
    /// A CDATA section, or an entity or character reference in text.
    Content,
    Eof,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`.
    pub fn new(text: &'a str) -> Cursor<'a> {
        let body = text.strip_prefix('\u{feff}').unwrap_or(text);
        Cursor {
            text,
            base: (text.len() - body.len()) as u64,
            reader: Reader::from_str(body),
            depth: 0,
            elements: 0,
            started: false,
        }
    }

    /// Where the reader is, in bytes from the start of `text`.
    fn pos(&self) -> u64 {
        self.base + self.reader.buffer_position()
    }

    /// A quick-xml error, where quick-xml says it is.
    fn xml_error(&self, e: quick_xml::Error) -> IrError {
        IrError::at(
            format!("not XML: {e}"),
            self.base + self.reader.error_position(),
        )
    }

    /// Reads the next event that matters, counting depth and elements.
    fn step(&mut self) -> Result<Step<'a>, IrError> {
        loop {
            let at = self.pos();
            let event = self.reader.read_event().map_err(|e| self.xml_error(e))?;
            let first = !std::mem::replace(&mut self.started, true);
            let open = matches!(event, Event::Start(_));
            return Ok(match event {
                Event::Start(e) | Event::Empty(e) => {
                    self.elements += 1;
                    if self.elements > MAX_ELEMENTS {
                        return Err(IrError::at(
                            format!("more than {MAX_ELEMENTS} elements"),
                            at,
                        ));
                    }
                    if open {
                        self.depth += 1;
                        if self.depth > MAX_DEPTH {
                            return Err(IrError::at(
                                format!("elements nested deeper than {MAX_DEPTH}"),
                                at,
                            ));
                        }
                    }
                    Step::Start(Element::new(self.text, &e, at, open)?)
                }
                Event::End(_) => {
                    self.depth = self.depth.saturating_sub(1);
                    Step::End
                }
                Event::Text(t) => Step::Text {
                    blank: t.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n')),
                },
                Event::GeneralRef(r) => {
                    check_reference(&r, at)?;
                    Step::Content
                }
                Event::CData(_) => Step::Content,
                Event::Comment(_) | Event::PI(_) => continue,
                Event::Decl(d) if first => {
                    check_declaration(&d, at)?;
                    continue;
                }
                Event::Decl(_) => {
                    return Err(IrError::at("an XML declaration after the start", at))
                }
                Event::DocType(_) => {
                    return Err(IrError::at(
                        "a DOCTYPE: this reader takes no DTD (nor the entities one declares)",
                        at,
                    ))
                }
                Event::Eof => Step::Eof,
            });
        }
    }

    /// The root element; before it only an XML declaration, comments,
    /// processing instructions and whitespace.
    pub fn root(&mut self) -> Result<Element<'a>, IrError> {
        loop {
            let at = self.pos();
            match self.step()? {
                Step::Start(e) => return Ok(e),
                Step::Text { blank: true } => {}
                Step::Eof => return Err(IrError::at("no root element", at)),
                _ => return Err(IrError::at("content before the root element", at)),
            }
        }
    }

    /// After the root element: only comments, processing instructions and
    /// whitespace, to the end.
    pub fn finish(&mut self) -> Result<(), IrError> {
        loop {
            let at = self.pos();
            match self.step()? {
                Step::Eof => return Ok(()),
                Step::Text { blank: true } => {}
                _ => return Err(IrError::at("content after the root element", at)),
            }
        }
    }

    /// The next child element of `parent` (whose start tag was the last
    /// element read and whose children before this one were each read to
    /// their end); `None` at `parent`'s end tag. Text other than
    /// whitespace among the children is refused: the IR's structural
    /// elements hold none.
    pub fn next_child(&mut self, parent: &Element<'_>) -> Result<Option<Element<'a>>, IrError> {
        if !parent.open {
            return Ok(None);
        }
        loop {
            let at = self.pos();
            match self.step()? {
                Step::Start(e) => return Ok(Some(e)),
                Step::End => return Ok(None),
                Step::Text { blank: true } => {}
                Step::Text { blank: false } | Step::Content => {
                    return Err(IrError::at(
                        format!("text inside <{}>, which holds elements", parent.name()),
                        at,
                    ))
                }
                Step::Eof => return Err(parent.error("the XML ends before its end tag")),
            }
        }
    }

    /// Steps over `e`'s content, whatever it is, to its end tag.
    pub fn skip(&mut self, e: &Element<'_>) -> Result<(), IrError> {
        if !e.open {
            return Ok(());
        }
        let mut open = 1u64;
        loop {
            match self.step()? {
                Step::Start(child) if child.open => open += 1,
                Step::End => {
                    open -= 1;
                    if open == 0 {
                        return Ok(());
                    }
                }
                Step::Eof => return Err(e.error("the XML ends before its end tag")),
                _ => {}
            }
        }
    }

    /// `e`'s text content, as written (references are refused: the text
    /// this reader takes, a number, needs none); `""` when empty.
    pub fn text(&mut self, e: &Element<'_>) -> Result<&'a str, IrError> {
        if !e.open {
            return Ok("");
        }
        let mut text = "";
        loop {
            let at = self.pos();
            let event = self
                .reader
                .read_event()
                .map_err(|err| self.xml_error(err))?;
            match event {
                Event::Text(t) if text.is_empty() => {
                    text = match t.into_inner() {
                        Cow::Borrowed(b) => std::str::from_utf8(b)
                            .map_err(|_| IrError::at("text is not UTF-8", at))?,
                        Cow::Owned(_) => return Err(e.error("text split by a reference")),
                    };
                }
                Event::End(_) => {
                    self.depth = self.depth.saturating_sub(1);
                    return Ok(text);
                }
                Event::Comment(_) | Event::PI(_) => {}
                Event::Eof => return Err(e.error("the XML ends before its end tag")),
                _ => return Err(e.error("holds more than plain text")),
            }
        }
    }
}

/// An XML declaration names version 1.0 or 1.1 and, if any encoding,
/// UTF-8: the text was read as UTF-8.
fn check_declaration(d: &quick_xml::events::BytesDecl<'_>, at: u64) -> Result<(), IrError> {
    let bad = |what: String| IrError::at(format!("XML declaration: {what}"), at);
    let version = d.version().map_err(|e| bad(e.to_string()))?;
    if !matches!(version.as_ref(), b"1.0" | b"1.1") {
        let v = String::from_utf8_lossy(&version);
        return Err(bad(format!("version {v:?}")));
    }
    if let Some(encoding) = d.encoding() {
        let encoding = encoding.map_err(|e| bad(e.to_string()))?;
        if !encoding.eq_ignore_ascii_case(b"utf-8") && !encoding.eq_ignore_ascii_case(b"utf8") {
            let enc = String::from_utf8_lossy(&encoding);
            return Err(bad(format!("encoding {enc:?}: this reader reads UTF-8")));
        }
    }
    Ok(())
}

/// A reference in text is a character reference to a character XML
/// allows, or one of the five predefined entities: no DTD declares others.
fn check_reference(r: &quick_xml::events::BytesRef<'_>, at: u64) -> Result<(), IrError> {
    let ok = if r.is_char_ref() {
        matches!(r.resolve_char_ref(), Ok(Some(_)))
    } else {
        matches!(r.as_ref(), b"lt" | b"gt" | b"amp" | b"apos" | b"quot")
    };
    if ok {
        return Ok(());
    }
    let name = String::from_utf8_lossy(r.as_ref());
    Err(IrError::at(
        format!("reference &{name}; names no character or predefined entity"),
        at,
    ))
}
