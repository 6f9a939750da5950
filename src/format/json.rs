//! STUB
use super::cbor::Value;
pub fn to_json(_v: &Value<'_>, _out: &mut String) {
    todo!()
}
pub fn to_json_pretty(_v: &Value<'_>, _out: &mut String) {
    todo!()
}
