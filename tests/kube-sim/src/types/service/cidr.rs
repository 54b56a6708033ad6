//! The service network, kube-apiserver's `--service-cluster-ip-range` (single-stack IPv4 here):
//! parsed as `netutils.ParseCIDRSloppy` does (host bits are masked off), limited as the
//! apiserver limits it (`validateMaxCIDRRange`: a prefix of at least 12), and the addresses its
//! allocator hands out: every address but the network and broadcast ones, the first of them
//! being the `kubernetes` Service's.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// An IPv4 service CIDR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceCidr {
    network: u32,
    prefix: u8,
}

/// The recorded server's range, kube-sim's default.
pub const DEFAULT: ServiceCidr = ServiceCidr {
    network: u32::from_be_bytes([10, 0, 0, 0]),
    prefix: 24,
};

impl Default for ServiceCidr {
    fn default() -> Self {
        DEFAULT
    }
}

impl ServiceCidr {
    /// Addresses the allocator can hand out (the range without its network and broadcast
    /// addresses).
    pub fn usable(&self) -> u64 {
        (1u64 << (32 - self.prefix)) - 2
    }

    /// Addresses in the range, network and broadcast included (what the allocator's bands are
    /// sized from).
    pub fn size(&self) -> u64 {
        1u64 << (32 - self.prefix)
    }

    /// The `offset`-th usable address (0: the first, the `kubernetes` Service's).
    pub fn address(&self, offset: u64) -> Ipv4Addr {
        debug_assert!(offset < self.usable());
        // The offset is below 2^32 - 2, since the prefix is at least 12.
        Ipv4Addr::from(self.network + 1 + u32::try_from(offset).unwrap_or(u32::MAX - 1))
    }

    /// The offset of `ip` among the usable addresses; None outside them.
    pub fn offset_of(&self, ip: Ipv4Addr) -> Option<u64> {
        let offset = u64::from(u32::from(ip).wrapping_sub(self.network));
        (offset >= 1 && offset <= self.usable()).then(|| offset - 1)
    }
}

impl FromStr for ServiceCidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (address, prefix) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not a CIDR (ADDRESS/PREFIX)"))?;
        let address: Ipv4Addr = address.parse().map_err(|_| {
            format!("{text:?} is not an IPv4 CIDR (kube-sim serves single-stack IPv4 only)")
        })?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| *p <= 32)
            .ok_or_else(|| format!("{text:?} has an invalid prefix length"))?;
        if prefix < 12 {
            return Err(format!(
                "{text} is too large; for 32-bit addresses, the mask must be >= 12"
            ));
        }
        if prefix > 30 {
            return Err(format!(
                "{text} is too small: it has no address for a Service besides kubernetes"
            ));
        }
        let mask = u32::MAX << (32 - prefix);
        Ok(Self {
            network: u32::from(address) & mask,
            prefix,
        })
    }
}

impl fmt::Display for ServiceCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.network), self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_recorded_range() {
        assert_eq!(DEFAULT.to_string(), "10.0.0.0/24");
        assert_eq!(DEFAULT.usable(), 254);
        assert_eq!(DEFAULT.address(0), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(DEFAULT.address(253), Ipv4Addr::new(10, 0, 0, 254));
        assert_eq!(DEFAULT.offset_of(Ipv4Addr::new(10, 0, 0, 1)), Some(0));
        for outside in [
            [10, 0, 0, 0],
            [10, 0, 0, 255],
            [10, 0, 1, 1],
            [9, 255, 255, 255],
        ] {
            assert_eq!(DEFAULT.offset_of(Ipv4Addr::from(outside)), None);
        }
    }

    #[test]
    fn ranges_parse_masked_and_within_limits() {
        let wide: ServiceCidr = "10.96.3.7/12".parse().unwrap();
        assert_eq!(wide.to_string(), "10.96.0.0/12");
        assert_eq!(wide.usable(), (1 << 20) - 2);
        assert_eq!(
            wide.address(wide.usable() - 1),
            Ipv4Addr::new(10, 111, 255, 254)
        );
        assert!(
            "10.0.0.0/11"
                .parse::<ServiceCidr>()
                .unwrap_err()
                .contains(">= 12")
        );
        assert!("10.0.0.0/31".parse::<ServiceCidr>().is_err());
        assert!(
            "fd00::/108"
                .parse::<ServiceCidr>()
                .unwrap_err()
                .contains("IPv4")
        );
        assert!("10.0.0.0".parse::<ServiceCidr>().is_err());
        assert!("10.0.0.0/x".parse::<ServiceCidr>().is_err());
    }
}
