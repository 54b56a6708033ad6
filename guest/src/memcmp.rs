//! The component's `memcmp`, which every comparison of strings and byte slices calls. There is
//! no libc in wasm32-unknown-unknown, and the fallback Rust links (compiler-builtins) compares
//! one byte per loop iteration; a sync pass compares hundreds of kilobytes of equal names,
//! labels and contents, which this version does eight bytes at a time (BENCHMARKS.md, "decide:
//! what crosses the boundary"). Linked for wasm32 only: compiler-builtins defines its
//! own as a weak symbol, which this one replaces (and its `bcmp` calls `memcmp`: this one);
//! native builds keep the system's. No comparison of slices may appear in here: it would call
//! `memcmp`, this very function.

/// `memcmp` of `a` and `b` (of equal length): negative, zero or positive as `a` sorts before,
/// with or after `b`, the first differing byte deciding as unsigned numbers.
pub fn compare(a: &[u8], b: &[u8]) -> i32 {
    let n = a.len().min(b.len());
    let mut i = 0;
    // Words first, as long as they are equal.
    while i + 8 <= n {
        let x = u64::from_ne_bytes(word(a, i));
        let y = u64::from_ne_bytes(word(b, i));
        if x != y {
            break;
        }
        i += 8;
    }
    while i < n {
        let (x, y) = (a[i], b[i]);
        if x != y {
            return i32::from(x) - i32::from(y);
        }
        i += 1;
    }
    0
}

fn word(bytes: &[u8], at: usize) -> [u8; 8] {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    word
}

/// # Safety
/// `a` and `b` must each point to `n` readable bytes (the C contract of `memcmp`).
#[cfg(target_arch = "wasm32")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: the caller guarantees `n` readable bytes at `a` and at `b`.
    let (a, b) = unsafe {
        (
            core::slice::from_raw_parts(a, n),
            core::slice::from_raw_parts(b, n),
        )
    };
    compare(a, b)
}

#[cfg(test)]
mod tests {
    use super::compare;

    /// The sign `memcmp` must give, from Rust's own ordering of byte slices.
    fn expected(a: &[u8], b: &[u8]) -> i32 {
        a.cmp(b) as i32
    }

    #[test]
    fn agrees_with_the_ordering_of_byte_slices_at_every_length_and_position() {
        for n in 0..40 {
            let a: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
            assert_eq!(compare(&a, &a), 0, "equal, {n} bytes");
            for at in 0..n {
                for delta in [1u8, 0x80, 0xff] {
                    let mut b = a.clone();
                    b[at] = b[at].wrapping_add(delta);
                    assert_eq!(
                        compare(&a, &b).signum(),
                        expected(&a, &b),
                        "{n} bytes, at {at}"
                    );
                    assert_eq!(
                        compare(&b, &a).signum(),
                        expected(&b, &a),
                        "{n} bytes, at {at}"
                    );
                    // The first difference decides, whatever follows.
                    if at + 1 < n {
                        b[at + 1..].fill(0);
                        assert_eq!(compare(&a, &b).signum(), expected(&a, &b));
                    }
                }
            }
        }
    }

    #[test]
    fn answers_with_the_difference_of_the_first_differing_bytes() {
        assert_eq!(
            compare(b"abcdefgh-xyz", b"abcdefgh-xaz"),
            i32::from(b'y') - i32::from(b'a')
        );
        assert_eq!(compare(b"\x01", b"\xff"), 1 - 255);
        assert_eq!(compare(b"", b""), 0);
    }
}
