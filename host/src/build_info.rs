//! What this binary is: its version and the commit it was built from (`--version`, the
//! `build_info` metrics of `serve` and `sync`, the image's labels).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The crate's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit the binary was built from (12 hex digits), or `unknown` (host/build.rs).
pub const COMMIT: &str = env!("MCS_POLICY_COMMIT");

/// `--version`: `0.1.0 (commit 0123456789ab)`.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("MCS_POLICY_COMMIT"),
    ")"
);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
    commit: &'static str,
}

/// Registers `<prefix>_build_info{version, commit} 1`.
pub fn register(registry: &mut Registry) {
    let info = Family::<BuildLabels, Gauge>::default();
    info.get_or_create(&BuildLabels {
        version: VERSION,
        commit: COMMIT,
    })
    .set(1);
    registry.register(
        "build_info",
        "The version and commit of this binary (always 1)",
        info,
    );
}
