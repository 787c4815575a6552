//! Shared test helpers: unique state directories and ready-made networks.

use std::path::PathBuf;

use hns::schema::{
    HostComputeEndpoint, HostComputeNetwork, IpConfig, Ipam, NetworkType, Route, Subnet,
};
use hns::{Client, Guid};
use hns_emulator::Emulator;

/// A fresh, empty state directory, tagged for whoever finds one left behind; `.0` is its path.
/// tempfile creates it and removes it on drop.
pub struct TempDir(
    pub PathBuf,
    #[allow(dead_code)] // held for its drop, which removes the directory
    tempfile::TempDir,
);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let dir = tempfile::Builder::new()
            .prefix(&format!("hns-test-{tag}-"))
            .tempdir()
            .unwrap();
        TempDir(dir.path().to_path_buf(), dir)
    }
}

/// A client over a fresh emulator.
pub fn client(dir: &TempDir) -> Client<Emulator> {
    Client::new(Emulator::open(&dir.0).unwrap())
}

/// An L2Bridge-style network document with one subnet and its gateway.
pub fn network_settings(
    name: &str,
    network_type: NetworkType,
    prefix: &str,
    gateway: &str,
) -> HostComputeNetwork {
    HostComputeNetwork {
        name: name.to_owned(),
        network_type,
        ipams: vec![Ipam {
            ipam_type: "Static".to_owned(),
            subnets: vec![Subnet::with_gateway(
                prefix.parse().unwrap(),
                gateway.parse().unwrap(),
            )],
        }],
        ..HostComputeNetwork::default()
    }
}

/// Creates `cbr0` (10.244.1.0/24, gateway .1) and returns its ID.
pub fn bridge(client: &Client<Emulator>) -> Guid {
    client
        .create_network(
            Guid::ZERO,
            &network_settings("cbr0", NetworkType::L2Bridge, "10.244.1.0/24", "10.244.1.1"),
        )
        .unwrap()
        .id()
}

/// An endpoint document with one IP.
pub fn endpoint_settings(name: &str, ip: &str) -> HostComputeEndpoint {
    HostComputeEndpoint {
        name: name.to_owned(),
        ip_configurations: vec![IpConfig {
            ip_address: ip.parse().unwrap(),
            prefix_length: None,
        }],
        routes: vec![Route::default_via("10.244.1.2".parse().unwrap())],
        ..HostComputeEndpoint::default()
    }
}

/// The HRESULT of a failed call.
pub fn code(error: &hns::HnsError) -> hns::HResult {
    error
        .hresult()
        .unwrap_or_else(|| panic!("no HRESULT in {error}"))
}

/// One `HNSCall`: the reply envelope as JSON, or the HRESULT when the call itself failed.
pub fn hns_call(
    client: &Client<Emulator>,
    method: &str,
    path: &str,
    body: &str,
) -> Result<serde_json::Value, hns::HResult> {
    use hns::RawHcn;
    client
        .raw()
        .hns_call(method, path, body)
        .map(|text| serde_json::from_str(&text).unwrap())
        .map_err(|raw| raw.hresult)
}

/// A document a node component sends, from `tests/data`: flanneld's and kube-proxy's exact
/// requests, written as those programs marshal them.
pub fn document(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim_end()
        .to_owned()
}
