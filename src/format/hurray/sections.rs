//! The fixed-size optional descriptor sections (metadata.md § Statistics
//! Section, § Extension Type Section, § Composite Member Section): each
//! read from exactly its bytes and checked on its own.

use super::bytes::Cursor;
use super::{CompositeMember, ExtensionType, Stats};
use crate::error::{Error, Result, Rule};

fn rej(rule: Rule, detail: String) -> Error {
    Error::reject(rule, detail)
}

/// The 72-byte statistics section. Fields whose `computed_mask` bit is
/// clear are not judged ("MUST be treated as unknown, regardless of their
/// encoded value").
pub(crate) fn read_stats(c: &mut Cursor<'_>) -> Result<Stats> {
    let computed_mask = c.u32("computed_mask")?;
    let reserved = c.u32("statistics reserved")?;
    let s = Stats {
        computed_mask,
        nnz: c.u64("nnz")?,
        sparsity_ratio: c.f64("sparsity_ratio")?,
        value_min: c.f64("value_min")?,
        value_max: c.f64("value_max")?,
        value_abs_max: c.f64("value_abs_max")?,
        value_mean: c.f64("value_mean")?,
        value_stddev: c.f64("value_stddev")?,
        nm_n: c.u8("nm_n")?,
        nm_m: c.u8("nm_m")?,
        has_nan: c.u8("has_nan")?,
        has_inf: c.u8("has_inf")?,
    };
    let reserved2 = c.u32("statistics reserved2")?;
    let bad = |m: String| Err(rej(Rule::HurrayStats, m));
    if computed_mask >> 6 != 0 {
        return bad(format!(
            "computed_mask {computed_mask:#x} sets reserved bits 6..31"
        ));
    }
    if reserved != 0 || reserved2 != 0 {
        return bad("statistics reserved bytes are not zero".into());
    }
    let valid = |bit: u32| computed_mask & (1 << bit) != 0;
    if valid(1) && !(0.0..=1.0).contains(&s.sparsity_ratio) {
        return bad(format!(
            "sparsity_ratio {:?} is outside [0, 1]",
            s.sparsity_ratio
        ));
    }
    // NaN fails too.
    if valid(3) && s.value_stddev.partial_cmp(&0.0).is_none_or(|o| o.is_lt()) {
        return bad(format!("value_stddev {:?} is not >= 0", s.value_stddev));
    }
    if valid(4) && s.nm_n > s.nm_m {
        return bad(format!("nm_n {} exceeds nm_m {}", s.nm_n, s.nm_m));
    }
    if valid(5) && (s.has_nan > 1 || s.has_inf > 1) {
        return bad(format!(
            "has_nan {} / has_inf {} are not 0 or 1",
            s.has_nan, s.has_inf
        ));
    }
    Ok(s)
}

/// The 20-byte extension type section.
pub(crate) fn read_extension(c: &mut Cursor<'_>) -> Result<ExtensionType> {
    let b: [u8; 20] = c.array("extension type section")?;
    let bit_width = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let packing_factor = b[4];
    let bad = |m: String| Err(rej(Rule::HurrayType, format!("extension type: {m}")));
    if bit_width == 0 {
        return bad("bit_width is 0".into());
    }
    let packing_ok = match bit_width {
        1 | 2 | 4 => u32::from(packing_factor) == 8 / bit_width,
        w if w >= 8 => packing_factor == 1,
        _ => false,
    };
    if !packing_ok {
        return bad(format!(
            "bit_width {bit_width} with packing_factor {packing_factor} is not allowed"
        ));
    }
    let flag = |v: u8, what: &str| {
        if v > 1 {
            Err(rej(
                Rule::HurrayType,
                format!("extension type: {what} {v} is not 0 or 1"),
            ))
        } else {
            Ok(v == 1)
        }
    };
    let is_float = flag(b[5], "is_float")?;
    let is_signed = flag(b[6], "is_signed")?;
    let has_nan = flag(b[16], "has_nan")?;
    let has_inf = flag(b[17], "has_inf")?;
    let exponent_bias = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
    if b[10] != 0 || b[11] != 0 || b[18] != 0 || b[19] != 0 {
        return bad("reserved bytes are not zero".into());
    }
    if is_float && (is_signed || b[7] > 1) {
        return bad(format!(
            "a float type has is_signed {} and sign_bits {}",
            b[6], b[7]
        ));
    }
    if !is_float && (b[7] != 0 || b[8] != 0 || b[9] != 0 || exponent_bias != 0) {
        return bad("an integer type has sign, exponent, mantissa bits or bias".into());
    }
    Ok(ExtensionType {
        bit_width,
        packing_factor,
        is_float,
        is_signed,
        sign_bits: b[7],
        exponent_bits: b[8],
        mantissa_bits: b[9],
        exponent_bias,
        has_nan,
        has_inf,
    })
}

/// The 16-byte composite member section.
pub(crate) fn read_member(c: &mut Cursor<'_>) -> Result<CompositeMember> {
    let b: [u8; 16] = c.array("composite member section")?;
    if b[0] > 1 {
        return Err(rej(
            Rule::HurrayComposite,
            format!("member_role {:#04x} is not 0 or 1", b[0]),
        ));
    }
    if b[1..].iter().any(|&x| x != 0) {
        return Err(rej(
            Rule::HurrayComposite,
            "composite member reserved bytes are not zero".into(),
        ));
    }
    Ok(CompositeMember { role: b[0] })
}
