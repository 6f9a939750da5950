//! An OpenVINO IR (`model.xml` + `model.bin`) as a model
//! ([`crate::format::openvino`]): every Const layer of its graphs is an
//! object, its bytes a range of the `.bin`, served in place. The `.bin`
//! is the XML's name with `.bin` (as OpenVINO's `read_model` finds it),
//! beside it (by URL, beside its URL), opened at open; every Const's size
//! and range are checked against it then.

use std::path::PathBuf;

use super::{no_shards, Input, Model};
use crate::error::{Error, Result, Rule};
use crate::format::openvino::{self, objects, MAX_XML_LEN};
use crate::store::{Open, Store};

impl Model {
    /// Opens an IR from its XML: every rule is checked here.
    pub(super) fn open_openvino(root: Store, overrides: Vec<(String, PathBuf)>) -> Result<Model> {
        no_shards(
            &overrides,
            "an OpenVINO IR has no shards (its weights are the .bin beside it)",
        )?;
        let xml_err = |e: openvino::IrError| Error::reject(Rule::OpenVinoXml, e.to_string());
        if root.len() > MAX_XML_LEN {
            return Err(xml_err(openvino::IrError {
                what: format!(
                    "the XML is {} bytes, more than the {MAX_XML_LEN} this reader takes",
                    root.len()
                ),
                offset: None,
            }));
        }
        let model = openvino::parse(&root.slice(0, root.len())?).map_err(xml_err)?;
        let name = super::file_name(root.path()).unwrap_or("model.xml");
        let plain = crate::store::plain_name(root.path(), name);
        let stem = plain.strip_suffix(".xml").unwrap_or(&plain);
        let bin_name = format!("{stem}.bin");
        let path = crate::store::beside(root.path(), &bin_name);
        let bin = Store::open_one_of(&path, 2, Open::Head).map_err(|e| {
            let missing = match &e {
                Error::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
                Error::At { error, .. } => matches!(**error, Error::Usage(_)),
                _ => false,
            };
            match missing {
                true => Error::reject(Rule::OpenVinoBin, format!("{bin_name:?}: {e}")),
                false => e,
            }
        })?;
        openvino::check_against_bin(&model, bin.len())
            .map_err(|e| Error::reject(Rule::OpenVinoConst, e.to_string()))?;
        let (objects, file) = objects::objects(model, &bin_name);
        let mut model = Model::one_file(root, objects, Input::OpenVino(Box::new(file)));
        model.files = vec![(bin_name, bin)];
        Ok(model)
    }
}
