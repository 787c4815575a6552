//! The win-bridge pod that the lane's `win-bridge.*` cases (a slow or hung host, the exit
//! status, the attachment lock, Flannel-native mode) start from.

use cni_win_conformance::hns::L2BRIDGE_NETWORK;
use serde_json::{Value, json};

use crate::lane::Bench;

/// What the win-bridge cases on a slow or hung host share: the network `cbr0` and a namespace
/// made by Linux hnsctl, and the side's win-bridge config for `cbr0` (host-local under the
/// bench's state) with `key` set to `value`. Returns the namespace, the IPAM dir and the config.
pub fn cbr0_pod_setup(
    bench: &Bench<'_>,
    key: &str,
    value: Value,
) -> Result<(String, std::path::PathBuf, Value), String> {
    let mut create = vec!["network", "create"];
    create.extend(L2BRIDGE_NETWORK.split_whitespace());
    bench.linux_hnsctl(&create)?.ok()?;
    let netns = bench.linux_hnsctl(&["namespace", "create"])?.ok()?;
    let ipam = bench.state().join("ipam");
    let mut config = json!({
        "cniVersion": "1.0.0", "name": "cbr0", "type": "win-bridge",
        "ipam": {"type": "host-local", "subnet": "10.244.1.0/24", "dataDir": bench.side_path(&ipam)}
    });
    config[key] = value;
    Ok((netns.trim().to_owned(), ipam, config))
}
