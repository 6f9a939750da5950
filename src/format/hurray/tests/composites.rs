//! Composite heads and members across the file.

use super::builder::*;
use crate::error::Rule;
use crate::format::hurray::read_file;

fn head(rule: u8, op: u8, members: u32, shape: &[u64]) -> D {
    let mut d = D::dense(0x03, shape, 0);
    d.layout = 0x0B;
    d.handles.clear();
    d.layout_fields = vec![rule, op, 0, 0];
    d.layout_fields.extend(members.to_le_bytes());
    d
}

/// A float32 member of `shape` at `offset` inside `parent`.
fn member(shape: &[u64], offset: &[u64], parent: &[u64], role: Option<u8>) -> D {
    let n: u64 = shape.iter().product();
    let mut d = D::dense(0x03, shape, n * 4);
    d.flags = 2;
    d.sections = [u64s(parent), u64s(offset)].concat();
    if let Some(r) = role {
        d.flags |= 16;
        d.sections.push(r);
        d.sections.extend([0; 15]);
    }
    d
}

#[track_caller]
fn rule(tensors: Vec<T>) -> Option<Rule> {
    read_file(&file(tensors).build().bytes)
        .err()
        .map(|e| e.rule().unwrap())
}

#[test]
fn a_partition_must_tile_its_head() {
    let p = [4, 4];
    let ok = vec![
        t("h", head(1, 0, 2, &p)),
        t("m0", member(&[2, 4], &[0, 0], &p, None)),
        t("m1", member(&[2, 4], &[2, 0], &p, None)),
    ];
    assert_eq!(rule(ok.clone()), None);
    let mut gap = ok.clone();
    gap[2].desc = member(&[1, 4], &[2, 0], &p, None);
    assert_eq!(rule(gap), Some(Rule::HurrayComposite));
    let mut overlap = ok.clone();
    overlap.push(t("m2", member(&[1, 1], &[3, 3], &p, None)));
    overlap[0].desc = head(1, 0, 3, &p);
    overlap[2].desc = member(&[2, 4], &[1, 0], &p, None);
    assert_eq!(rule(overlap), Some(Rule::HurrayComposite));
    let mut wrong_parent = ok.clone();
    wrong_parent[1].desc = member(&[2, 4], &[0, 0], &[4, 8], None);
    assert_eq!(rule(wrong_parent), Some(Rule::HurrayComposite));
    let mut no_shard = ok;
    no_shard[1].desc = D::dense(0x03, &[2, 4], 32);
    assert_eq!(rule(no_shard), Some(Rule::HurrayComposite));
}

#[test]
fn torn_and_open_composites() {
    let p = [4];
    assert_eq!(
        rule(vec![
            t("h", head(1, 0, 2, &p)),
            t("m", member(&[4], &[0], &p, None))
        ]),
        Some(Rule::HurrayComposite)
    );
    assert_eq!(
        rule(vec![t("h", head(3, 0, u32::MAX, &p))]),
        Some(Rule::HurrayComposite)
    );
    assert_eq!(
        rule(vec![t("h", head(2, 1, 0, &p))]),
        Some(Rule::HurrayComposite)
    );
    assert_eq!(
        rule(vec![t("h", head(4, 0, 0, &p))]),
        Some(Rule::HurrayLayout)
    );
    assert_eq!(
        rule(vec![t("h", head(1, 1, 0, &p))]),
        Some(Rule::HurrayLayout)
    );
}

#[test]
fn overlay_roles() {
    let p = [4];
    let base = member(&[4], &[0], &p, Some(1));
    let corr = member(&[1], &[2], &p, Some(0));
    assert_eq!(
        rule(vec![
            t("h", head(2, 2, 2, &p)),
            t("b", base.clone()),
            t("c", corr.clone())
        ]),
        None
    );
    assert_eq!(
        rule(vec![
            t("h", head(2, 2, 2, &p)),
            t("c", corr.clone()),
            t("b", base.clone())
        ]),
        Some(Rule::HurrayComposite)
    );
    let half = member(&[2], &[0], &p, Some(1));
    assert_eq!(
        rule(vec![t("h", head(2, 1, 1, &p)), t("b", half)]),
        Some(Rule::HurrayComposite)
    );
    // A member section outside an overlay.
    assert_eq!(rule(vec![t("x", corr)]), Some(Rule::HurrayComposite));
}

#[test]
fn groups_nest_up_to_8_deep() {
    let nest = |depth: usize| {
        let mut v: Vec<T> = (0..depth)
            .map(|i| t(&format!("h{i}"), head(3, 0, 1, &[1])))
            .collect();
        v.push(t("leaf", D::dense(0x10, &[1], 1)));
        v
    };
    assert_eq!(rule(nest(8)), None);
    assert_eq!(rule(nest(9)), Some(Rule::HurrayComposite));
}

#[test]
fn decision_padding_after_a_head_to_the_alignment() {
    let p = [4];
    let mut v = vec![t("h", head(3, 0, 1, &p)), t("m", D::dense(0x10, &[4], 4))];
    assert_eq!(rule(v.clone()), None);
    v[0].pad_to_alignment = true;
    assert_eq!(rule(v), None);
}
