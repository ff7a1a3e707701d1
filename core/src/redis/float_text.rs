//! A script argument's non-integral number as text: the digits of Rust's `Display` for `f64`
//! (`format!("{v}")`: the shortest that reads back as `v`, in positional notation, never an
//! exponent), written from `zmij`'s shortest digits instead of the standard library's float
//! formatter. Both find the shortest round-trip digits; only the layout differs (`zmij` writes
//! `1e-7`, `Display` `0.0000001`). The core already links `zmij` (the spec reader's messages),
//! so the WebAssembly module carries one float formatter, not two. The tests hold it to
//! `format!("{v}")` over generated values of every magnitude.

/// `format!("{v}")`, byte for byte.
pub(crate) fn display(v: f64) -> String {
    let mut buf = zmij::Buffer::new();
    if !v.is_finite() {
        // `zmij` writes `NaN`, `inf` and `-inf`, as `Display` does.
        return buf.format(v).to_owned();
    }
    let text = buf.format_finite(v);
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exp) = match text.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    // The digits without the point, and where the point goes among them.
    let int_len = mantissa.find('.').unwrap_or(mantissa.len());
    let digits: Vec<u8> = mantissa.bytes().filter(|b| *b != b'.').collect();
    let lead = digits.iter().take_while(|d| **d == b'0').count();
    let digits = &digits[lead..];
    let mut digits = digits[..digits.iter().rposition(|d| *d != b'0').map_or(0, |i| i + 1)].to_vec();
    let mut point = int_len as i32 + exp - lead as i32;
    // A tie: `v` exactly halfway between these digits and the next ones up. `zmij` rounds it
    // to the even last digit, `Display` up (and a carry into a new first digit moves the point).
    if !digits.is_empty() && is_half_above(v.abs(), &digits, point) && round_up(&mut digits) {
        point += 1;
    }
    let digits = &digits[..];

    let mut out = String::with_capacity(digits.len() + 24);
    if negative {
        out.push('-');
    }
    let text = |d: &[u8]| std::str::from_utf8(d).unwrap_or_default().to_owned();
    if digits.is_empty() {
        out.push('0');
    } else if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
        out.push_str(&text(digits));
    } else if point as usize >= digits.len() {
        out.push_str(&text(digits));
        out.extend(std::iter::repeat_n('0', point as usize - digits.len()));
    } else {
        let (int, frac) = digits.split_at(point as usize);
        out.push_str(&text(int));
        out.push('.');
        out.push_str(&text(frac));
    }
    out
}

/// Whether `v` (finite, `> 0`) is exactly `0.DIGITS5 × 10^point`: the digits, then a 5.
fn is_half_above(v: f64, digits: &[u8], point: i32) -> bool {
    // That number is N × 10^q, N the digits and the 5 as an integer.
    let Some(n) = digits.iter().try_fold(0u64, |n, d| n.checked_mul(10)?.checked_add(u64::from(d - b'0'))) else {
        return false;
    };
    let Some(n) = n.checked_mul(10).and_then(|n| n.checked_add(5)) else { return false };
    let q = point - digits.len() as i32 - 1;
    // v = m × 2^e exactly.
    let bits = v.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    let (m, e) = if exp_bits == 0 { (frac, -1074) } else { (frac | (1 << 52), exp_bits - 1075) };
    // Each side as odd × 2^k: N × 5^q × 2^q = m × 2^e when q >= 0, N = m × 5^-q × 2^(e - q)
    // when q < 0 (5^|q| on the side it multiplies, checked: a product past u128 is no match).
    let five = |k: i32| (0..k).try_fold(1u128, |p, _| p.checked_mul(5));
    let (n_odd, n_two) = (u128::from(n >> n.trailing_zeros()), n.trailing_zeros() as i32);
    let (m_odd, m_two) = (u128::from(m >> m.trailing_zeros()), m.trailing_zeros() as i32 + e);
    if q >= 0 {
        five(q).and_then(|f| n_odd.checked_mul(f)) == Some(m_odd) && n_two + q == m_two
    } else {
        five(-q).and_then(|f| m_odd.checked_mul(f)) == Some(n_odd) && n_two == m_two - q
    }
}

/// Adds one to the last of `digits` (ASCII), carrying; `true` when a digit was added in front
/// (`99` to `100`: the point moves one place right).
fn round_up(digits: &mut Vec<u8>) -> bool {
    for d in digits.iter_mut().rev() {
        if *d == b'9' {
            *d = b'0';
        } else {
            *d += 1;
            return false;
        }
    }
    digits.insert(0, b'1');
    true
}

#[cfg(test)]
mod tests {
    use super::display;

    fn same(v: f64) {
        assert_eq!(display(v), format!("{v}"), "bits {:#x}", v.to_bits());
    }

    #[test]
    fn edges_read_as_display_writes_them() {
        for v in [
            0.0,
            -0.0,
            0.1,
            -0.1,
            0.5,
            1.5,
            1e-7,
            1e-5,
            1e15,
            1e16,
            1e21,
            1e22,
            1e23,
            123456.789,
            0.000123,
            5e-324,
            -5e-324,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
            f64::EPSILON,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            9_007_199_254_740_993.0,
            0.30000000000000004,
            2.5e-8,
            // 2127524128142182.25: halfway between ...182.2 and ...182.3.
            f64::from_bits(0x431e_3be3_3fa2_cd99),
            -f64::from_bits(0x431e_3be3_3fa2_cd99),
            4503599627370495.5,
            9007199254740991.0 * 0.5,
        ] {
            same(v);
        }
    }

    #[test]
    fn generated_values_read_as_display_writes_them() {
        // xorshift64*: any bit pattern (every exponent, subnormals, NaNs), then decimals of a
        // few digits at every scale (the values script arguments hold: rates, fractions).
        let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            s.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        for _ in 0..200_000 {
            // Halfway cases: a whole number of 50 to 53 bits and a binary fraction (the
            // 17th digit's ties), and the same scaled by powers of two.
            let whole = (next() >> 11) as f64;
            let frac = [0.25, 0.5, 0.75, 0.125, 0.375][(next() % 5) as usize];
            same(whole + frac);
            same((whole + frac) * 2f64.powi((next() % 120) as i32 - 60));
            same(f64::from_bits(next()));
            let digits = (next() % 1_000_000) as f64;
            let scale = (next() % 40) as i32 - 20;
            same(digits * 10f64.powi(scale));
            same(digits / 10f64.powi(-scale));
        }
    }
}
