//! The walk over the IR's elements: `net`, its `layers` and `edges`,
//! each `layer` (a Const's `data` and output port), and subgraphs, which
//! are read as graphs of their own. What is mirrored from OpenVINO's
//! deserializer, and where this reader is stricter, is in the module doc
//! of [`super`].

use std::collections::BTreeSet;

use super::xml::{Cursor, Element};
use super::{element_width, Const, IrError, Model};
use crate::format::MAX_RANK;

/// The IR versions this reader takes (OpenVINO's IR frontend takes
/// these two).
const VERSIONS: [u32; 2] = [10, 11];

/// Reads the whole XML text.
pub fn read(text: &str) -> Result<Model, IrError> {
    let mut x = Cursor::new(text);
    let net = x.root()?;
    if net.name() != "net" {
        return Err(net.error("the root element is not <net>"));
    }
    let version = number(&net, "version", &net.required("version")?)?;
    let version = VERSIONS
        .into_iter()
        .find(|&v| u64::from(v) == version)
        .ok_or_else(|| net.error(format!("IR version {version}; this reader takes 10 and 11")))?;
    let mut walk = Walk {
        model: Model {
            name: net.attr("name")?.unwrap_or_default().into_owned(),
            version,
            ..Model::default()
        },
        graphs: 0,
    };
    walk.graph(&mut x, &net, 0)?;
    x.finish()?;
    Ok(walk.model)
}

/// What the walk has gathered.
struct Walk {
    model: Model,
    /// Subgraphs met so far.
    graphs: u32,
}

/// One edge's ends, and where it is.
struct Edge {
    from: u64,
    to: u64,
    at: u64,
}

/// What a Const's `<data>` says.
struct Data {
    element_type: String,
    shape: Vec<u64>,
    offset: u64,
    size: u64,
}

impl Walk {
    /// The content of `owner` (`<net>` or a subgraph's element), graph
    /// number `graph`: its `<layers>`, required, and `<edges>`.
    fn graph(
        &mut self,
        x: &mut Cursor<'_>,
        owner: &Element<'_>,
        graph: u32,
    ) -> Result<(), IrError> {
        let mut ids = BTreeSet::new();
        let mut edges = Vec::new();
        let (mut layers_seen, mut edges_seen) = (false, false);
        while let Some(child) = x.next_child(owner)? {
            match child.name() {
                "layers" if layers_seen => return Err(child.error("a second <layers>")),
                "layers" => {
                    layers_seen = true;
                    while let Some(layer) = x.next_child(&child)? {
                        if layer.name() == "layer" {
                            self.layer(x, &layer, graph, &mut ids)?;
                        } else {
                            x.skip(&layer)?;
                        }
                    }
                }
                "edges" if edges_seen => return Err(child.error("a second <edges>")),
                "edges" => {
                    edges_seen = true;
                    read_edges(x, &child, &mut edges)?;
                }
                _ => x.skip(&child)?,
            }
        }
        if !layers_seen {
            return Err(owner.error("no <layers>"));
        }
        for e in edges {
            for end in [e.from, e.to] {
                if !ids.contains(&end) {
                    return Err(IrError::at(
                        format!("an edge names layer {end}, which its graph lacks"),
                        e.at,
                    ));
                }
            }
        }
        Ok(())
    }

    /// One `<layer>`: counted, listed as an input or output, read as a
    /// Const; its subgraphs read.
    fn layer(
        &mut self,
        x: &mut Cursor<'_>,
        layer: &Element<'_>,
        graph: u32,
        ids: &mut BTreeSet<u64>,
    ) -> Result<(), IrError> {
        let id = number(layer, "id", &layer.required("id")?)?;
        let name = layer.required("name")?.into_owned();
        let kind = layer.required("type")?.into_owned();
        layer.required("version")?;
        if !ids.insert(id) {
            return Err(layer.error(format!("layer id {id} given twice in one graph")));
        }
        let is_const = kind == "Const" || kind.eq_ignore_ascii_case("Constant");
        let (mut data, mut data_seen) = (None, false);
        let (mut dims, mut output_seen) = (None, false);
        while let Some(child) = x.next_child(layer)? {
            match child.name() {
                "data" if data_seen => return Err(child.error("a second <data>")),
                "data" => {
                    data_seen = true;
                    if is_const {
                        data = Some(read_data(&child)?);
                    }
                    x.skip(&child)?;
                }
                "output" if is_const && output_seen => return Err(child.error("a second <output>")),
                "output" if is_const => {
                    output_seen = true;
                    dims = read_port_dims(x, &child)?;
                }
                n if n.contains("body") => {
                    self.graphs = self
                        .graphs
                        .checked_add(1)
                        .ok_or_else(|| child.error("more than 2^32 subgraphs"))?;
                    self.graph(x, &child, self.graphs)?;
                }
                _ => x.skip(&child)?,
            }
        }
        let count = self.model.ops.entry(kind.clone()).or_insert(0);
        *count = count.saturating_add(1);
        if graph == 0 && kind == "Parameter" {
            self.model.inputs.push(name.clone());
        }
        if graph == 0 && kind == "Result" {
            self.model.outputs.push(name.clone());
        }
        if is_const {
            let c = make_const(layer, id, graph, name, data, dims)?;
            self.model.consts.push(c);
        }
        Ok(())
    }
}

/// A Const from its layer's parts, checked: it has `<data>`, its port's
/// dims (when it has a port) are its shape, and its size is its shape's.
fn make_const(
    layer: &Element<'_>,
    id: u64,
    graph: u32,
    name: String,
    data: Option<Data>,
    dims: Option<Vec<i64>>,
) -> Result<Const, IrError> {
    let Some(data) = data else {
        return Err(layer.error(format!("Const layer {id} ({name:?}) has no <data>")));
    };
    if let Some(dims) = dims {
        let same = dims.len() == data.shape.len()
            && dims
                .iter()
                .zip(&data.shape)
                .all(|(&d, &s)| u64::try_from(d) == Ok(s));
        if !same {
            return Err(layer.error(format!(
                "Const layer {id} ({name:?}) has shape {:?} in <data> but dims {dims:?} in its output port",
                data.shape
            )));
        }
    }
    let c = Const {
        id,
        graph,
        name,
        element_type: data.element_type,
        shape: data.shape,
        offset: data.offset,
        size: data.size,
    };
    c.check_size()
        .map_err(|what| layer.error(format!("{}: {what}", c.label())))?;
    Ok(c)
}

/// A Const's `<data>` attributes, all four required.
fn read_data(data: &Element<'_>) -> Result<Data, IrError> {
    let element_type = data.required("element_type")?.into_owned();
    if element_width(&element_type).is_none() {
        return Err(data.error(format!(
            "element_type {element_type:?}, which OpenVINO does not define"
        )));
    }
    Ok(Data {
        element_type,
        shape: shape(data, &data.required("shape")?)?,
        offset: number(data, "offset", &data.required("offset")?)?,
        size: number(data, "size", &data.required("size")?)?,
    })
}

/// The dims of the one `<port>` of a Const's `<output>`, if it has one.
fn read_port_dims(x: &mut Cursor<'_>, output: &Element<'_>) -> Result<Option<Vec<i64>>, IrError> {
    let mut dims: Option<Vec<i64>> = None;
    while let Some(port) = x.next_child(output)? {
        if port.name() != "port" {
            x.skip(&port)?;
            continue;
        }
        if dims.is_some() {
            return Err(port.error("a Const has one output, and this is a second <port>"));
        }
        let mut list = Vec::new();
        while let Some(child) = x.next_child(&port)? {
            if child.name() != "dim" {
                x.skip(&child)?;
                continue;
            }
            if list.len() == MAX_RANK {
                return Err(child.error(format!("more than {MAX_RANK} dims")));
            }
            let text = x.text(&child)?;
            list.push(dim(&child, text)?);
        }
        dims = Some(list);
    }
    Ok(dims)
}

/// Each `<edge>`'s layers; its four attributes required, as OpenVINO
/// requires them.
fn read_edges(x: &mut Cursor<'_>, edges: &Element<'_>, out: &mut Vec<Edge>) -> Result<(), IrError> {
    while let Some(e) = x.next_child(edges)? {
        if e.name() == "edge" {
            let from = number(&e, "from-layer", &e.required("from-layer")?)?;
            number(&e, "from-port", &e.required("from-port")?)?;
            let to = number(&e, "to-layer", &e.required("to-layer")?)?;
            number(&e, "to-port", &e.required("to-port")?)?;
            out.push(Edge { from, to, at: e.at });
        }
        x.skip(&e)?;
    }
    Ok(())
}

/// A whole number as OpenVINO's `get_uint64_attr` takes it (`stoll`, so
/// at most `i64::MAX`), without the sign, spaces or leading `+` it also
/// lets through.
fn number(e: &Element<'_>, what: &str, s: &str) -> Result<u64, IrError> {
    let ok = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let n = s
        .parse::<u64>()
        .ok()
        .filter(|&n| ok && n <= i64::MAX as u64);
    n.ok_or_else(|| {
        e.error(format!(
            "{what} {s:?} is not a whole number from 0 to {}",
            i64::MAX
        ))
    })
}

/// A `shape` attribute: comma-separated dims, each with spaces around it
/// or not; empty for a scalar.
fn shape(e: &Element<'_>, s: &str) -> Result<Vec<u64>, IrError> {
    let mut dims = Vec::new();
    if s.is_empty() {
        return Ok(dims);
    }
    for field in s.split(',') {
        if dims.len() == MAX_RANK {
            return Err(e.error(format!("shape {s:?} has more than {MAX_RANK} dims")));
        }
        let field = field.trim_matches(' ');
        if field.starts_with('-') {
            return Err(e.error(format!("shape {s:?} has a negative dim")));
        }
        dims.push(number(e, "a dim of shape", field)?);
    }
    Ok(dims)
}

/// A port's `<dim>`: a whole number, or -1 for a dynamic one (OpenVINO
/// refuses any other negative value).
fn dim(e: &Element<'_>, text: &str) -> Result<i64, IrError> {
    let t = text.trim_matches([' ', '\t', '\r', '\n']);
    if t == "-1" {
        return Ok(-1);
    }
    // number() bounds it by i64::MAX.
    let n = number(e, "dim", t)?;
    i64::try_from(n).map_err(|_| e.error(format!("dim {t:?} is above i64::MAX")))
}
