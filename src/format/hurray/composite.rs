//! Composite tensors across the file (file-format.md § Composite Tensors,
//! layouts/composite.md § Binding and § Validation): a head binds the next
//! `member_count` tensors in descriptor-offset order (pre-order when
//! nested, at most 8 levels deep), and each composition rule is checked
//! per member and at close.
//!
//! Partition close-time check: member boxes lie inside the head (their
//! shard section says so), their volumes sum to the head's, and no two
//! non-empty boxes overlap; together that is exact cover. The overlap test
//! sweeps the boxes sorted along the dimension with the most distinct
//! starts, comparing only boxes whose ranges meet there: O(n log n) for
//! the usual row, column or grid splits, quadratic only for boxes that all
//! share one range in every dimension.

use super::{Layout, Tensor};
use crate::error::{Error, Result, Rule};

/// Deepest nesting of composite heads (layouts/composite.md § Binding).
pub const MAX_COMPOSITE_DEPTH: usize = 8;

fn bad(detail: String) -> Error {
    Error::reject(Rule::HurrayComposite, detail)
}

/// Checks every composite in `tensors` taken in descriptor-offset order.
pub(crate) fn check(tensors: &[Tensor]) -> Result<()> {
    let mut order: Vec<&Tensor> = tensors.iter().collect();
    order.sort_by_key(|t| t.descriptor_offset);
    let mut i = 0;
    while i < order.len() {
        i = visit(&order, i, None, 1)?;
    }
    Ok(())
}

/// Checks the tensor at `i` as a member of `parent` (rule, head), and when
/// it is a head, its members; returns the index after its subtree.
fn visit(
    order: &[&Tensor],
    i: usize,
    parent: Option<(u8, &Tensor)>,
    depth: usize,
) -> Result<usize> {
    let t = order[i];
    let member_rule = parent.map(|(r, _)| r);
    if t.descriptor.composite_member.is_some() && member_rule != Some(2) {
        return Err(bad(format!(
            "tensor {:?} carries a composite member section but is not an overlay member",
            &*t.name
        )));
    }
    let Layout::Composite(h) = t.descriptor.layout else {
        return Ok(i + 1);
    };
    if depth > MAX_COMPOSITE_DEPTH {
        return Err(bad(format!(
            "composite {:?} nests deeper than {MAX_COMPOSITE_DEPTH} levels",
            &*t.name
        )));
    }
    if h.rule == 2 && h.members == 0 {
        return Err(bad(format!(
            "overlay {:?} has no members (it needs a base)",
            &*t.name
        )));
    }
    let mut next = i + 1;
    let mut members = Vec::with_capacity((h.members as usize).min(order.len()));
    for m in 0..h.members {
        if next >= order.len() {
            return Err(bad(format!(
                "composite {:?} is torn: member {m} of {} is missing",
                &*t.name, h.members
            )));
        }
        let member = order[next];
        check_member(h.rule, t, member, m)?;
        members.push(member);
        next = visit(order, next, Some((h.rule, t)), depth + 1)?;
    }
    if h.rule == 1 {
        check_partition(t, &members)?;
    }
    Ok(next)
}

fn check_member(rule: u8, head: &Tensor, m: &Tensor, k: u32) -> Result<()> {
    let ctx = format!("member {k} {:?} of composite {:?}", &*m.name, &*head.name);
    let hd = &head.descriptor;
    let md = &m.descriptor;
    if rule == 3 {
        return Ok(());
    }
    let Some(shard) = &md.shard else {
        return Err(bad(format!(
            "{ctx}: a partition or overlay member has no shard section"
        )));
    };
    if shard.parent_shape != hd.shape {
        return Err(bad(format!(
            "{ctx}: parent_shape {:?} is not the head's shape {:?}",
            shard.parent_shape, hd.shape
        )));
    }
    // A quantized member's decoded type is not an element type tag; only
    // unquantized members can be compared with the head.
    if md.quantization.is_none() && md.elem != hd.elem {
        return Err(bad(format!(
            "{ctx}: element type {} is not the head's {}",
            md.elem.name(),
            hd.elem.name()
        )));
    }
    if rule == 2 {
        let role = md.composite_member.map(|c| c.role);
        let whole = shard.offset.iter().all(|&o| o == 0) && md.shape == hd.shape;
        match (k, role) {
            (0, Some(1)) if whole => {}
            (0, Some(1)) => {
                return Err(bad(format!(
                    "{ctx}: the base does not span the head's index space"
                )))
            }
            (0, _) => {
                return Err(bad(format!(
                    "{ctx}: the first overlay member is not a base (role 1)"
                )))
            }
            (_, Some(0)) => {}
            _ => {
                return Err(bad(format!(
                    "{ctx}: an overlay member after the base is not a correction (role 0)"
                )))
            }
        }
    }
    Ok(())
}

fn check_partition(head: &Tensor, members: &[&Tensor]) -> Result<()> {
    let shape = &head.descriptor.shape;
    if shape.contains(&u64::MAX)
        || members
            .iter()
            .any(|m| m.descriptor.shape.contains(&u64::MAX))
    {
        return Ok(()); // dynamic dimensions: cover cannot be decided
    }
    let volume = |s: &[u64]| {
        s.iter()
            .try_fold(1u128, |a, &x| a.checked_mul(u128::from(x)))
    };
    let whole = volume(shape);
    let sum = members
        .iter()
        .try_fold(0u128, |a, m| a.checked_add(volume(&m.descriptor.shape)?));
    if whole.is_none() || sum != whole {
        return Err(bad(format!(
            "partition {:?}: member volumes sum to {sum:?}, the head has {whole:?} elements",
            &*head.name
        )));
    }
    // Boxes as (lo, hi) per dimension; empty boxes cannot overlap.
    let boxes: Vec<Vec<(u64, u64)>> = members
        .iter()
        .filter(|m| !m.descriptor.shape.contains(&0))
        .filter_map(|m| {
            let s = m.descriptor.shard.as_ref()?;
            Some(
                s.offset
                    .iter()
                    .zip(&m.descriptor.shape)
                    .map(|(&o, &n)| (o, o + n))
                    .collect(),
            )
        })
        .collect();
    if let Some((a, b)) = find_overlap(&boxes, shape.len()) {
        return Err(bad(format!(
            "partition {:?}: members' boxes {:?} and {:?} overlap",
            &*head.name, boxes[a], boxes[b]
        )));
    }
    Ok(())
}

/// Two overlapping boxes, if any (see the module doc).
fn find_overlap(boxes: &[Vec<(u64, u64)>], rank: usize) -> Option<(usize, usize)> {
    if rank == 0 {
        return (boxes.len() > 1).then_some((0, 1));
    }
    let dim = (0..rank)
        .max_by_key(|&k| {
            let mut starts: Vec<u64> = boxes.iter().map(|b| b[k].0).collect();
            starts.sort_unstable();
            starts.dedup();
            starts.len()
        })
        .unwrap_or(0);
    let mut idx: Vec<usize> = (0..boxes.len()).collect();
    idx.sort_by_key(|&i| boxes[i][dim].0);
    let meets =
        |a: &[(u64, u64)], b: &[(u64, u64)]| a.iter().zip(b).all(|(x, y)| x.0 < y.1 && y.0 < x.1);
    let mut active: Vec<usize> = Vec::new();
    for &i in &idx {
        let start = boxes[i][dim].0;
        active.retain(|&j| boxes[j][dim].1 > start);
        if let Some(&j) = active.iter().find(|&&j| meets(&boxes[i], &boxes[j])) {
            return Some((j, i));
        }
        active.push(i);
    }
    None
}

/// The direct members of every composite head, as indexes into `tensors`
/// (index order), by head index ascending. The file has passed
/// the composite checks of `read_file`, so every head has all its members.
pub fn members(tensors: &[Tensor]) -> Vec<(usize, Vec<usize>)> {
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    order.sort_by_key(|&i| tensors[i].descriptor_offset);
    // The position in `order` after the subtree rooted at position `p`.
    fn end_of(tensors: &[Tensor], order: &[usize], p: usize, depth: usize) -> usize {
        let Layout::Composite(h) = tensors[order[p]].descriptor.layout else {
            return p + 1;
        };
        let mut next = p + 1;
        for _ in 0..h.members {
            if next >= order.len() || depth > MAX_COMPOSITE_DEPTH {
                break;
            }
            next = end_of(tensors, order, next, depth + 1);
        }
        next
    }
    let mut out = Vec::new();
    for (p, &i) in order.iter().enumerate() {
        let Layout::Composite(h) = tensors[i].descriptor.layout else {
            continue;
        };
        let mut direct = Vec::with_capacity((h.members as usize).min(order.len()));
        let mut next = p + 1;
        for _ in 0..h.members {
            let Some(&m) = order.get(next) else { break };
            direct.push(m);
            next = end_of(tensors, &order, next, 1);
        }
        out.push((i, direct));
    }
    out.sort_by_key(|e| e.0);
    out
}
