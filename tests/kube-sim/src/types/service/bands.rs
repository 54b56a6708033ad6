//! How kube-apiserver's allocators pick a free cluster IP or node port when the client asks for
//! none (KEP-3070 and KEP-3668, the `ipallocator`'s `allocateNextService` and the bitmap
//! allocator's `randomScanStrategyWithOffset`): the range is split into a lower band, left to
//! values clients request, and an upper band; a dynamic pick starts at a random value of the
//! upper band and takes the first free one going up (wrapping round within the band), and only
//! when the upper band is full does the same in the lower band.

/// The size of the lower band of a service CIDR of `cidr_size` addresses:
/// `min(max(16, size / 16), 256)`, none for ranges of 16 addresses or fewer.
pub fn ip_lower_band(cidr_size: u64) -> u64 {
    lower_band(cidr_size, 16, 256, 16)
}

/// The size of the lower band of a node port range of `range_size` ports:
/// `min(max(16, size / 32), 128)`, none for ranges of 16 ports or fewer.
pub fn port_lower_band(range_size: u64) -> u64 {
    lower_band(range_size, 16, 128, 32)
}

/// `calculateRangeOffset`: `min(max(min, size / step), max)`, 0 when `size <= min`.
fn lower_band(size: u64, min: u64, max: u64, step: u64) -> u64 {
    if size <= min {
        return 0;
    }
    (size / step).clamp(min, max)
}

/// The offset (in `0..size`) of a free value, `reserved` being the lower band's size; None when
/// every value is taken. Each candidate is checked once with `is_free`.
pub fn pick(size: u64, reserved: u64, is_free: impl FnMut(u64) -> bool) -> Option<u64> {
    pick_from(size, reserved, random_below, is_free)
}

fn pick_from(
    size: u64,
    reserved: u64,
    mut random: impl FnMut(u64) -> u64,
    mut is_free: impl FnMut(u64) -> bool,
) -> Option<u64> {
    let reserved = reserved.min(size);
    let upper = size - reserved;
    let band = |first: u64, len: u64, start: u64| (0..len).map(move |i| first + (start + i) % len);
    let upper_start = if upper > 0 { random(upper) } else { 0 };
    let lower_start = if reserved > 0 { random(reserved) } else { 0 };
    band(reserved, upper, upper_start)
        .chain(band(0, reserved, lower_start))
        .find(|offset| is_free(*offset))
}

/// A random number in `0..bound` (`bound` > 0), from the system's random source.
fn random_below(bound: u64) -> u64 {
    let bits = uuid::Uuid::new_v4().as_u128();
    // The high 64 bits of a v4 UUID are random but for the version nibble: use the low ones.
    (bits as u64) % bound
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_bands_are_sized_like_kube_apiservers() {
        assert_eq!(ip_lower_band(256), 16); // /24
        assert_eq!(ip_lower_band(16), 0); // /28
        assert_eq!(ip_lower_band(32), 16); // /27
        assert_eq!(ip_lower_band(1 << 16), 256); // /16
        assert_eq!(port_lower_band(2768), 86); // 30000-32767
        assert_eq!(port_lower_band(10), 0);
    }

    #[test]
    fn picks_go_up_from_a_random_start_in_the_upper_band_then_the_lower() {
        // Upper band 4..10 starting at its third value (6), 6 and 7 taken: 8.
        let taken = [6, 7];
        let pick = pick_from(10, 4, |_| 2, |v| !taken.contains(&v));
        assert_eq!(pick, Some(8));
        // Wrapping round within the upper band.
        let pick = pick_from(10, 4, |_| 5, |v| v != 9);
        assert_eq!(pick, Some(4));
        // Upper band full: the lower band, from its own random start.
        let pick = pick_from(10, 4, |bound| bound - 1, |v| v < 4);
        assert_eq!(pick, Some(3));
        assert_eq!(pick_from(10, 4, |_| 0, |_| false), None);
        // No lower band; and a band as large as the range.
        assert_eq!(pick_from(3, 0, |_| 1, |_| true), Some(1));
        assert_eq!(pick_from(3, 3, |_| 1, |_| true), Some(1));
    }

    #[test]
    fn every_value_is_found_and_checked_once() {
        let mut checked = Vec::new();
        let found = pick(20, 5, |v| {
            checked.push(v);
            false
        });
        assert_eq!(found, None);
        checked.sort_unstable();
        assert_eq!(checked, (0..20).collect::<Vec<_>>());
        assert!(random_below(7) < 7);
    }
}
