//! The row-major view of a Hurray tensor stored in another dense layout:
//! the descriptor's layout turned into a [`Relayout`] over buffer 0.

use super::relayout::{Inner, Order, Relayout, Simple, Tiling};
use crate::format::hurray::objects::{data_of, Data};
use crate::format::hurray::{Layout, Tensor, TileInner, TileOrder, Tiled};

/// The relayout serving tensor `t`'s `data`, when its elements are in a
/// dense layout other than row-major (`None` otherwise); an error says
/// why a view that should exist cannot be made.
pub fn relayout(t: &Tensor) -> Option<Result<Relayout, String>> {
    if data_of(t) != Data::Relayout {
        return None;
    }
    let d = &t.descriptor;
    let order = match &d.layout {
        Layout::ColumnMajor => Order::ColumnMajor,
        Layout::Strided(s) => Order::Strided(s.clone()),
        Layout::Tiled(x) => Order::Tiled(tiling(x)),
        Layout::Morton(bits) => Order::Morton(bits.clone()),
        Layout::Hilbert { order } => Order::Hilbert { order: *order },
        _ => return None,
    };
    let bits = d.elem.bits();
    let buffer0 = d.buffers.first().map_or(0, |b| b.size);
    Some(
        Relayout::new(&d.shape, bits, order, d.byte_offset).and_then(|r| {
            if r.stored_extent() > buffer0 {
                Err(format!(
                    "buffer 0 holds {buffer0} bytes; the layout reaches byte {}",
                    r.stored_extent()
                ))
            } else {
                Ok(r)
            }
        }),
    )
}

fn simple(o: &TileOrder) -> Simple {
    match o {
        TileOrder::RowMajor => Simple::RowMajor,
        TileOrder::ColumnMajor => Simple::ColumnMajor,
        TileOrder::Strided(s) => Simple::Strided(s.clone()),
    }
}

fn tiling(x: &Tiled) -> Tiling {
    Tiling {
        tile: x.tile.clone(),
        outer: simple(&x.outer),
        inner: match &x.inner {
            TileInner::Order(o) => Inner::Simple(simple(o)),
            TileInner::Tiled(t) => Inner::Tiled(Box::new(tiling(t))),
        },
    }
}
