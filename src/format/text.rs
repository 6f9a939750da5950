//! [`Text`]: an immutable string that the manifest's many objects and parts
//! share instead of each holding a copy.
//!
//! A mount keeps the typed manifest for its whole life, one [`super::Part`]
//! per part, and most of their texts repeat (`data`, `dense`, `f32`, a
//! shard's name): one allocation per distinct value is enough. Shapes
//! repeat as much and are shared the same way. `Text` reads
//! like a `&str` (it derefs to one and compares with one) so holders of a
//! manifest do not care how it is stored.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// An immutable, cheaply cloned string: one pointer (8 bytes, and an
/// `Option<Text>` too), as a part holds four of them. The box costs a
/// second allocation per distinct text, of which a manifest has few.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Text(Arc<Box<str>>);

impl Text {
    /// The text as a `&str`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text(Arc::new(s.into()))
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(Arc::new(s.into_boxed_str()))
    }
}

impl From<&Text> for String {
    fn from(t: &Text) -> String {
        t.as_str().to_string()
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<Text> for str {
    fn eq(&self, other: &Text) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Text> for &str {
    fn eq(&self, other: &Text) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Text> for String {
    fn eq(&self, other: &Text) -> bool {
        self == other.as_str()
    }
}

/// Texts that recur while a manifest is mapped, each kept once; and
/// shapes, which recur as much (every layer's tensors have the same).
#[derive(Default)]
pub(crate) struct Texts {
    texts: std::collections::HashSet<Text>,
    shapes: std::collections::HashMap<Box<[u64]>, crate::format::Shape>,
}

impl Texts {
    /// The shared copy of `s`, made on its first appearance.
    pub(crate) fn get(&mut self, s: &str) -> Text {
        if let Some(t) = self.texts.get(s) {
            return t.clone();
        }
        let t = Text::from(s);
        self.texts.insert(t.clone());
        t
    }

    /// The shared copy of shape `dims`, made on its first appearance.
    pub(crate) fn shape(&mut self, dims: &[u64]) -> crate::format::Shape {
        if let Some(s) = self.shapes.get(dims) {
            return s.clone();
        }
        let s = crate::format::shape(dims);
        self.shapes.insert(dims.into(), s.clone());
        s
    }
}
