//! A Hurray file's tensors as the dense objects a pack writes: each
//! tensor's row-major elements (as the mount's `data` serves them: a range
//! of the file, or a view computed from another dense layout or from a
//! partition's members) under the zTensor type with the same bytes.
//!
//! A tensor with no row-major data (quantized, sparse, block-paged,
//! overlay or group composites, dynamic dimensions, private layouts) or
//! with an element type zTensor has no type for is refused, naming the
//! tensor and why: a pack writes every tensor or none.

use std::collections::HashMap;

use crate::decode::hurray::View;
use crate::error::{Error, Result};
use crate::format::hurray::objects::{data_of, ztensor_type, Data, DATA};
use crate::format::hurray::{composite_members, File};
use crate::format::manifest::{Object, Part};
use crate::format::text::Texts;
use crate::format::types::ElementType;

/// The objects to write, and the computed views by object name.
pub struct Objects {
    /// Dense objects, one part `data` each; a direct tensor's blob is its
    /// range of the file.
    pub objects: Vec<Object>,
    /// The views of tensors whose data is computed.
    pub views: HashMap<Box<str>, View>,
}

/// The objects of `file`'s tensors. A member of a partition composite is
/// written as a tensor of its own too (it is one in the file).
pub fn objects(file: &File) -> Result<Objects> {
    let members = composite_members(&file.tensors);
    let mut texts = Texts::default();
    let (data, dense) = (texts.get(DATA), texts.get("dense"));
    let mut out = Objects {
        objects: Vec::with_capacity(file.tensors.len()),
        views: HashMap::new(),
    };
    for (i, t) in file.tensors.iter().enumerate() {
        let d = &t.descriptor;
        let refuse = |why: String| {
            Error::Unsupported(format!(
                "Hurray tensor {:?} cannot be packed: {why}",
                t.name
            ))
        };
        let (dtype, logical) = ztensor_type(d.elem).ok_or_else(|| {
            refuse(format!(
                "zTensor has no type with the bytes of {}",
                d.elem.name()
            ))
        })?;
        let ty = ElementType {
            dtype,
            logical: logical.map(|l| texts.get(l)),
        };
        let (offset, length) = match data_of(t) {
            Data::Direct { offset, length } => (offset, length),
            Data::Computed => {
                let view = crate::decode::hurray::view(file, i, &members)
                    .expect("computed data has a view")
                    .map_err(&refuse)?;
                let len = view.len();
                out.views.insert(t.name.clone(), view);
                (0, len)
            }
            Data::Absent(why) => return Err(refuse(why)),
        };
        out.objects.push(Object {
            name: t.name.clone(),
            shape: texts.shape(&d.shape),
            layout: dense.clone(),
            attributes: None,
            parts: smallvec::smallvec![Part::raw(data.clone(), ty, offset, length)],
        });
    }
    Ok(out)
}
