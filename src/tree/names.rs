//! TEMPORARY: replaced by the real escaping module.
pub const NAME_MAX: usize = 255;
pub struct Reserved<'a> {
    pub exact: &'a [&'a str],
    pub suffixes: &'a [&'a str],
}
impl Reserved<'_> {
    pub const NONE: Reserved<'static> = Reserved {
        exact: &[],
        suffixes: &[],
    };
}
pub fn escape(name: &str, _reserved: &Reserved<'_>, _max_len: usize) -> String {
    name.replace('/', "%2F")
}
pub fn unescape(component: &str) -> Option<String> {
    Some(component.replace("%2F", "/"))
}
pub fn is_shortened(component: &str) -> bool {
    component.contains("%~")
}
